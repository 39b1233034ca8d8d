/*
 * dash_sql_tool - prints the dashboard's statements (src/repo/repo_dash.c)
 * and those of GET /metrics (src/repo/repo_metrics.c) as
 * "name<TAB>parameter kinds<TAB>SQL" lines, for test_dash_explain.py.
 */
#include <stdio.h>

#include "repo.h"
#include "repo_dash.h"

int
main(void)
{
	const char	*sql, *name, *params;
	unsigned	 i, j;

	for (i = 0; (sql = repo_dash_sql(i, &name, &params)) != NULL; i++)
		printf("%s\t%s\t%s\n", name, params, sql);
	for (j = 0; (sql = repo_metrics_sql(j, &name, &params)) != NULL; j++)
		printf("%s\t%s\t%s\n", name, params, sql);
	return i > 0 && j > 0 ? 0 : 1;
}
