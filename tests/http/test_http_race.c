/*
 * test_http_race.c - 32 racing "complete" callbacks on one claimed execution: exactly one
 * wins (200), every other one gets 409 conflict, and the poll shows the winner's result.
 */
#include "check.h"
#include "fixture.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define RACERS 32
#define ROUNDS 5

static struct fx F;
static pthread_barrier_t start_line;

struct racer {
	const struct claim *c;
	int n;
	struct http_resp r;
};

static void *
race(void *arg)
{
	struct racer *me = arg;
	char body[64];

	snprintf(body, sizeof body, "{\"result\":{\"n\":%d}}", me->n);
	pthread_barrier_wait(&start_line);
	fx_callback(F.bkey, me->c->id, "complete", me->c->token, body, &me->r);
	return NULL;
}

/* Runs the racers; returns the n of the single winner, or -1. */
static int
run_race(const struct claim *c)
{
	struct racer rs[RACERS];
	pthread_t th[RACERS];
	int i, wins = 0, conflicts = 0, winner = -1;

	pthread_barrier_init(&start_line, NULL, RACERS);
	for (i = 0; i < RACERS; i++) {
		rs[i] = (struct racer){ .c = c, .n = i };
		if (pthread_create(&th[i], NULL, race, &rs[i]) != 0) {
			fprintf(stderr, "FATAL: pthread_create failed\n");
			exit(1);
		}
	}
	for (i = 0; i < RACERS; i++)
		pthread_join(th[i], NULL);
	pthread_barrier_destroy(&start_line);
	for (i = 0; i < RACERS; i++) {
		if (rs[i].r.status == 200) {
			wins++;
			winner = i;
		} else if (expect_conflict(&rs[i].r, "completed")) {
			conflicts++;
		}
		http_resp_free(&rs[i].r);
	}
	CHECK_EQ_INT(wins, 1);
	CHECK_EQ_INT(conflicts, RACERS - 1);
	return wins == 1 ? winner : -1;
}

static void
check_winner_result(const struct sub *s, int winner)
{
	struct http_resp r;
	struct json_object *o;
	int64_t n = -1;

	fx_poll(&F, F.ckey, s->cid, s->token, NULL, &r);
	CHECK(expect_json(&r, 200));
	o = json_body(&r);
	CHECK_EQ_STR(jstr(o, "status"), "completed");
	CHECK(jint(o, "result.n", &n));
	CHECK_EQ_INT(n, winner);
	json_object_put(o);
	http_resp_free(&r);
}

int
main(void)
{
	struct sub s;
	struct claim c;
	int round, winner;

	http_test_init();
	fx_setup(&F, "race");
	for (round = 0; round < ROUNDS; round++) {
		char body[64];

		snprintf(body, sizeof body, "{\"round\":%d}", round);
		CHECK(fx_submit_claim(&F, body, &s, &c));
		winner = run_race(&c);
		if (winner >= 0)
			check_winner_result(&s, winner);
	}
	fx_free(&F);
	return check_done("http_race");
}
