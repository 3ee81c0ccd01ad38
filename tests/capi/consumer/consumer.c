/* A consumer of an installed mulligan: the headers and the library agree, and
 * a retry session works (no network). */
#include <stdio.h>

#include <mulligan.h>

int main(void) {
  mulligan_retry_policy *policy = NULL;
  mulligan_retry_session *session = NULL;
  mulligan_outcome outcome = MULLIGAN_OUTCOME_INIT;
  mulligan_decision decision = MULLIGAN_DECISION_INIT;
  if (mulligan_version_number() != MULLIGAN_VERSION_NUMBER) {
    fprintf(stderr, "header %d != library %d\n", MULLIGAN_VERSION_NUMBER,
            mulligan_version_number());
    return 1;
  }
  if (mulligan_retry_policy_create(&policy, NULL) != MULLIGAN_OK ||
      mulligan_retry_session_begin(&session, policy, NULL, 1) != MULLIGAN_OK) {
    fprintf(stderr, "error: %s\n", mulligan_last_error());
    return 1;
  }
  outcome.http_status = 503;
  mulligan_retry_session_on_outcome(session, &outcome, &decision);
  printf("mulligan %s: after a 503, action=%d delay=%.1f ms\n", mulligan_version_string(),
         decision.action, decision.delay_ms);
  mulligan_retry_session_destroy(session);
  mulligan_retry_policy_destroy(policy);
  return decision.action == MULLIGAN_ACTION_RETRY ? 0 : 1;
}
