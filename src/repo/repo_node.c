/*
 * repo_node.c - which database node this process writes to, its
 * Galera replication state (for /readyz), and what the error of a
 * failed statement or connect means for the operator.
 */
#include <stdio.h>
#include <string.h>

#include <mysqld_error.h>

#include "config.h"
#include "db.h"
#include "repo.h"

/* Keeps a server's state word printable in JSON and logs: letters,
 * digits, '/', '-' and blanks; anything else becomes '?'. */
static void
clean(char *s)
{
	for (; *s != '\0'; s++)
		if (!((*s >= 'A' && *s <= 'Z') || (*s >= 'a' && *s <= 'z') ||
		    (*s >= '0' && *s <= '9') || *s == '/' || *s == '-' ||
		    *s == ' '))
			*s = '?';
}

/*
 * Fills n with the node of db's connection (connecting first): its
 * db_hosts position and address (cluster set when db_hosts is), and
 * whether it runs Galera and is then Synced in the Primary component.
 * REPO_OK, or REPO_ERR when the database cannot be reached.
 */
enum repo_rc
repo_node_state(struct db *db, struct repo_node *n)
{
	const struct config	*c = db_config(db);
	struct db_node		 st;

	memset(n, 0, sizeof(*n));
	if (db_ready(db) == -1 || db_node_state(db, &st) == -1)
		return REPO_ERR;
	n->cluster = c->db_nhosts > 0;
	n->node = db_node(db) + 1;
	if (n->cluster && n->node > 0)
		snprintf(n->addr, sizeof(n->addr), "%s:%u",
		    c->db_hosts[n->node - 1].host, c->db_hosts[n->node - 1].port);
	n->wsrep = st.wsrep;
	n->ready = !st.wsrep || (st.synced && st.primary);
	memcpy(n->state, st.state, sizeof(n->state));
	memcpy(n->status, st.status, sizeof(n->status));
	clean(n->state);
	clean(n->status);
	return REPO_OK;
}

/*
 * What the error of db's last failed statement or connect means for the
 * operator: CAUSE_SCHEMA for a missing table or column (1146, 1054),
 * CAUSE_DENIED for a privilege the user lacks (1142, 1143, and 1044 on
 * a statement), CAUSE_LOGIN for a refused connect (1045; 1044 and 1049
 * there: no rights on db_name, or no such database), else CAUSE_OTHER.
 */
enum repo_cause
repo_cause(const struct db *db)
{
	switch (db_errno(db)) {
	case ER_NO_SUCH_TABLE:
	case ER_BAD_FIELD_ERROR:
		return CAUSE_SCHEMA;
	case ER_TABLEACCESS_DENIED_ERROR:
	case ER_COLUMNACCESS_DENIED_ERROR:
		return CAUSE_DENIED;
	case ER_DBACCESS_DENIED_ERROR:
		return db_connected(db) ? CAUSE_DENIED : CAUSE_LOGIN;
	case ER_ACCESS_DENIED_ERROR:
	case ER_BAD_DB_ERROR:
		return CAUSE_LOGIN;
	}
	return CAUSE_OTHER;
}
