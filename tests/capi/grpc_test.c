/* tests/capi/grpc_test.c — gRPC status codes in C outcomes (issue 8). */
#include <stdio.h>
#include <string.h>

#include "mulligan.h"

static int failures = 0;
#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: CHECK failed: %s (%s)\n", __FILE__,     \
              __LINE__, #cond, mulligan_last_error());                \
      ++failures;                                                     \
    }                                                                 \
  } while (0)

static int decide(mulligan_retry_policy *policy, int grpc_status, mulligan_decision *d) {
  mulligan_retry_session *session = NULL;
  mulligan_outcome outcome = MULLIGAN_OUTCOME_INIT;
  int rc;
  outcome.grpc_status = grpc_status;
  rc = mulligan_retry_session_begin(&session, policy, NULL, 1);
  if (rc == MULLIGAN_OK) rc = mulligan_retry_session_on_outcome(session, &outcome, d);
  mulligan_retry_session_destroy(session);
  return rc;
}

int main(void) {
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  const int codes[] = {8, 14}; /* RESOURCE_EXHAUSTED, UNAVAILABLE */
  const int bad[] = {0};

  CHECK(mulligan_retry_options_create(&opts) == MULLIGAN_OK);
  CHECK(mulligan_retry_policy_create(&policy, opts) == MULLIGAN_OK);
  /* Defaults: UNAVAILABLE retries, OK succeeds, NOT_FOUND (5) is terminal. */
  CHECK(decide(policy, 14, &d) == MULLIGAN_OK && d.action == MULLIGAN_ACTION_RETRY);
  CHECK(decide(policy, 0, &d) == MULLIGAN_OK && d.action == MULLIGAN_ACTION_STOP &&
        d.reason == MULLIGAN_STOP_SUCCEEDED);
  CHECK(decide(policy, 5, &d) == MULLIGAN_OK && d.reason == MULLIGAN_STOP_TERMINAL);
  CHECK(decide(policy, 8, &d) == MULLIGAN_OK && d.reason == MULLIGAN_STOP_TERMINAL);
  mulligan_retry_policy_destroy(policy);
  policy = NULL;

  CHECK(mulligan_retry_options_set_retryable_grpc_codes(opts, codes, 2) == MULLIGAN_OK);
  CHECK(mulligan_retry_policy_create(&policy, opts) == MULLIGAN_OK);
  CHECK(decide(policy, 8, &d) == MULLIGAN_OK && d.action == MULLIGAN_ACTION_RETRY);

  /* Bad input: an out-of-range code, a NULL list, a status outside [-1, 16]. */
  CHECK(mulligan_retry_options_set_retryable_grpc_codes(opts, bad, 1) ==
        MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "retryable_grpc_codes[0]") != NULL);
  CHECK(mulligan_retry_options_set_retryable_grpc_codes(opts, NULL, 1) ==
        MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(decide(policy, 17, &d) == MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "grpc_status") != NULL);

  mulligan_retry_policy_destroy(policy);
  mulligan_retry_options_destroy(opts);
  printf("%d passed, %d failed\n", failures == 0 ? 1 : 0, failures);
  return failures == 0 ? 0 : 1;
}
