/*
 * fake_repo.h - an in-memory stand-in for the repository (src/repo.h),
 * linked into fuzz_request only, instead of repo.c and db.c.
 *
 * fake_repo_reset puts the table back into its seeded state before each
 * fuzz input, so that every input is replayable on its own. The seeded
 * secrets are fixed strings (below): the seed corpus uses them so that
 * fuzzing starts from requests that pass authentication.
 */
#ifndef ASYNCEXEC_FAKE_REPO_H
#define ASYNCEXEC_FAKE_REPO_H

#include <stdint.h>

/* consumer key of tenant-a, which created executions 1..3 */
#define FAKE_KEY_A	"ak_fuzzConsumerKeyA___________________________"
/* consumer key of tenant-b (another tenant: always 404) */
#define FAKE_KEY_B	"ak_fuzzConsumerKeyB___________________________"
/* a revoked consumer key of tenant-a */
#define FAKE_KEY_REVOKED "ak_fuzzRevokedKey_____________________________"
/* backend key that serves prod/billing/charge */
#define FAKE_KEY_BACKEND "bk_fuzzBackendKey_____________________________"
/* backend key that serves nothing */
#define FAKE_KEY_IDLE	"bk_fuzzIdleBackend____________________________"
/* the poll-token secret of executions 1..3 */
#define FAKE_POLL_SECRET "fuzzPollSecret_____________________________"
/* the callback token of execution 1's claim */
#define FAKE_CB_TOKEN	"fuzzCallbackTok____________________________"
/* poll_token_id_key: bytes 0x00..0x0f */
#define FAKE_IDKEY	"\x00\x01\x02\x03\x04\x05\x06\x07" \
			"\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"
/* crypto_id_seal(FAKE_IDKEY, 1) (checked at start-up by the harness) */
#define FAKE_SEALED_1	"ExiaauSrB65wo6q9ML6Z3g"

void	fake_repo_reset(int64_t now);
void	fake_repo_fail_at(unsigned n);
void	fake_repo_clear(void);

#endif
