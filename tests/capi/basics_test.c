/* tests/capi/basics_test.c — version agreement, status text, the last error,
 * NULL handling and argument validation of the C ABI (compiled as C99). */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan.h"

static void test_version(void) {
  char expected[32];
  CHECK_INT(mulligan_version_number(), MULLIGAN_VERSION_NUMBER);
  CHECK_STR(mulligan_version_string(), MULLIGAN_VERSION_STRING);
  CHECK_INT(MULLIGAN_VERSION_NUMBER, MULLIGAN_VERSION_MAJOR * 10000 +
                                         MULLIGAN_VERSION_MINOR * 100 + MULLIGAN_VERSION_PATCH);
  sprintf(expected, "%d.%d.%d", MULLIGAN_VERSION_MAJOR, MULLIGAN_VERSION_MINOR,
          MULLIGAN_VERSION_PATCH);
  CHECK_STR(mulligan_version_string(), expected);
}

static void test_status_text(void) {
  int code;
  CHECK_STR(mulligan_status_str(MULLIGAN_OK), "ok");
  CHECK_STR(mulligan_status_str(MULLIGAN_E_INVALID_ARGUMENT), "invalid argument");
  CHECK_STR(mulligan_status_str(MULLIGAN_E_TRANSPORT), "transport error");
  CHECK_STR(mulligan_status_str(MULLIGAN_E_TIMEOUT), "timeout");
  CHECK_STR(mulligan_status_str(-1), "unknown status");
  CHECK_STR(mulligan_status_str(99), "unknown status");
  /* Appended in 0.3 (issue 14): the budget and throttling codes. */
  CHECK_INT(MULLIGAN_E_BUDGET_EXHAUSTED, 11);
  CHECK_INT(MULLIGAN_E_THROTTLED, 12);
  CHECK_STR(mulligan_status_str(MULLIGAN_E_BUDGET_EXHAUSTED), "budget exhausted");
  CHECK_STR(mulligan_status_str(MULLIGAN_E_THROTTLED), "throttled");
  /* Appended in 0.5 (issue 16): a state backend (Redis) failed closed. */
  CHECK_INT(MULLIGAN_E_STATE_UNAVAILABLE, 15);
  CHECK_STR(mulligan_status_str(MULLIGAN_E_STATE_UNAVAILABLE), "state backend unavailable");
  for (code = MULLIGAN_OK; code <= MULLIGAN_E_TIMEOUT; ++code) {
    CHECK(mulligan_status_str(code) != NULL);
    CHECK(strcmp(mulligan_status_str(code), "unknown status") != 0);
  }
  /* Pinned values: these numbers are the ABI. */
  CHECK_INT(MULLIGAN_E_INVALID_ARGUMENT, 1);
  CHECK_INT(MULLIGAN_E_NO_MEMORY, 2);
  CHECK_INT(MULLIGAN_E_INTERNAL, 3);
  CHECK_INT(MULLIGAN_E_CALLBACK, 4);
  CHECK_INT(MULLIGAN_E_RETRIES_EXHAUSTED, 5);
  CHECK_INT(MULLIGAN_E_DEADLINE_EXCEEDED, 6);
  CHECK_INT(MULLIGAN_E_CIRCUIT_OPEN, 7);
  CHECK_INT(MULLIGAN_E_UNAVAILABLE, 8);
  CHECK_INT(MULLIGAN_E_TRANSPORT, 9);
  CHECK_INT(MULLIGAN_E_TIMEOUT, 10);

  CHECK_STR(mulligan_error_kind_str(MULLIGAN_ERROR_CONNECTION_REFUSED), "connection_refused");
  CHECK_STR(mulligan_error_kind_str(99), "unknown");
  CHECK_INT(MULLIGAN_ERROR_TRUNCATED, 11); /* pinned: appended in 0.2 */
  CHECK_STR(mulligan_error_kind_str(MULLIGAN_ERROR_TRUNCATED), "truncated");
  CHECK_STR(mulligan_error_kind_str(12), "unknown");
  CHECK_STR(mulligan_stop_reason_str(MULLIGAN_STOP_DEADLINE), "deadline");
  CHECK_STR(mulligan_stop_reason_str(-3), "unknown");
  CHECK_STR(mulligan_stop_reason_str(MULLIGAN_STOP_NOT_REPLAY_SAFE), "not_replay_safe");
  CHECK_INT(MULLIGAN_STOP_CIRCUIT_OPEN, 7); /* pinned: appended in 0.2 */
  CHECK_STR(mulligan_stop_reason_str(MULLIGAN_STOP_CIRCUIT_OPEN), "circuit_open");
  CHECK_STR(mulligan_stop_reason_str(99), "unknown");
  /* Appended in 0.3 (issue 14). */
  CHECK_INT(MULLIGAN_STOP_BUDGET, 8);
  CHECK_INT(MULLIGAN_STOP_THROTTLED, 9);
  CHECK_STR(mulligan_stop_reason_str(MULLIGAN_STOP_BUDGET), "budget");
  CHECK_STR(mulligan_stop_reason_str(MULLIGAN_STOP_THROTTLED), "throttled");
  CHECK(mulligan_last_error() != NULL);
}

static void test_null_handling(void) {
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_retry_session *session = NULL;
  mulligan_clock *clock = NULL;
  mulligan_http_response *resp = (mulligan_http_response *)&opts; /* must be reset */
  mulligan_outcome outcome = MULLIGAN_OUTCOME_INIT;
  mulligan_decision decision = MULLIGAN_DECISION_INIT;
  double delay = 0;
  const char *name = "x", *value = "y";

  /* destroy(NULL) is a no-op for every handle. */
  mulligan_retry_options_destroy(NULL);
  mulligan_retry_policy_destroy(NULL);
  mulligan_clock_destroy(NULL);
  mulligan_retry_session_destroy(NULL);
  mulligan_http_client_destroy(NULL);
  mulligan_http_response_destroy(NULL);

  /* NULL out-params. */
  CHECK_FAILS(mulligan_retry_options_create(NULL), MULLIGAN_E_INVALID_ARGUMENT, "out");
  CHECK_FAILS(mulligan_retry_policy_create(NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "must not be NULL");
  CHECK_FAILS(mulligan_clock_create_fake(NULL), MULLIGAN_E_INVALID_ARGUMENT, "NULL");
  CHECK_FAILS(mulligan_http_client_create(NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT, "NULL");
  CHECK_FAILS(mulligan_retry_after_parse("1", 0, NULL), MULLIGAN_E_INVALID_ARGUMENT, "NULL");

  /* NULL handles. */
  CHECK_FAILS(mulligan_retry_options_set_max_attempts(NULL, 3), MULLIGAN_E_INVALID_ARGUMENT,
              "opts must not be NULL");
  CHECK_FAILS(mulligan_retry_options_set_base_delay_ms(NULL, 1), MULLIGAN_E_INVALID_ARGUMENT,
              "opts must not be NULL");
  CHECK_FAILS(mulligan_retry_options_set_retry_after_max_ms(NULL, 1),
              MULLIGAN_E_INVALID_ARGUMENT, "opts must not be NULL");
  CHECK_FAILS(mulligan_retry_options_clear_deadline(NULL), MULLIGAN_E_INVALID_ARGUMENT, "NULL");
  CHECK_FAILS(mulligan_retry_session_begin(&session, NULL, NULL, 1),
              MULLIGAN_E_INVALID_ARGUMENT, "policy must not be NULL");
  CHECK(session == NULL);
  CHECK_FAILS(mulligan_retry_session_on_outcome(NULL, &outcome, &decision),
              MULLIGAN_E_INVALID_ARGUMENT, "session must not be NULL");
  CHECK_FAILS(mulligan_clock_advance_ms(NULL, 1), MULLIGAN_E_INVALID_ARGUMENT, "NULL");
  CHECK_FAILS(mulligan_retry_after_parse(NULL, 0, &delay), MULLIGAN_E_INVALID_ARGUMENT,
              "value must not be NULL");
  CHECK_NEAR(delay, -1.0, 0);
  CHECK_FAILS(mulligan_http_request(NULL, "GET", "http://127.0.0.1/", NULL, 0, NULL, 0, NULL,
                                    &resp),
              MULLIGAN_E_INVALID_ARGUMENT, "client must not be NULL");
  CHECK(resp == NULL);
  CHECK_FAILS(mulligan_http_response_header_at(NULL, 0, &name, &value),
              MULLIGAN_E_INVALID_ARGUMENT, "resp must not be NULL");
  CHECK(name == NULL && value == NULL);

  /* Getters on NULL return a neutral value and set the last error. */
  CHECK_INT(mulligan_retry_session_attempts(NULL), 0);
  CHECK(strstr(mulligan_last_error(), "session must not be NULL") != NULL);
  CHECK_INT(mulligan_http_response_status(NULL), 0);
  CHECK(strstr(mulligan_last_error(), "resp must not be NULL") != NULL);
  CHECK(mulligan_http_response_body(NULL, NULL) == NULL);
  CHECK(mulligan_http_response_header(NULL, "x") == NULL);
  CHECK_INT(mulligan_http_response_header_count(NULL), 0);
  CHECK(mulligan_http_response_idempotency_key(NULL) == NULL);

  /* A NULL clock reads the steady clock. */
  CHECK(mulligan_clock_now_ms(NULL) > 0);
  CHECK_OK(mulligan_clock_create_fake(&clock));
  {
    double t0 = mulligan_clock_now_ms(clock);
    CHECK_OK(mulligan_clock_advance_ms(clock, 1500));
    CHECK_NEAR(mulligan_clock_now_ms(clock) - t0, 1500, 1e-6);
    CHECK_FAILS(mulligan_clock_advance_ms(clock, -1), MULLIGAN_E_INVALID_ARGUMENT,
                "ms must be a finite number >= 0, got -1");
  }
  mulligan_clock_destroy(clock);
  (void)policy;
}

static void test_option_validation(void) {
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  const int good_statuses[] = {429, 503};
  const int bad_statuses[] = {503, 600};
  const int bad_kinds[] = {MULLIGAN_ERROR_NONE};
  CHECK_OK(mulligan_retry_options_create(&opts));
  CHECK(opts != NULL);

  CHECK_FAILS(mulligan_retry_options_set_max_attempts(opts, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "max_attempts must be >= 1, got 0");
  CHECK_FAILS(mulligan_retry_options_set_max_attempts(opts, -3), MULLIGAN_E_INVALID_ARGUMENT,
              "max_attempts must be >= 1, got -3");
  CHECK_OK(mulligan_retry_options_set_max_attempts(opts, 5));

  CHECK_FAILS(mulligan_retry_options_set_base_delay_ms(opts, NAN), MULLIGAN_E_INVALID_ARGUMENT,
              "base_delay_ms must be a finite number >= 0, got nan");
  CHECK_FAILS(mulligan_retry_options_set_base_delay_ms(opts, INFINITY),
              MULLIGAN_E_INVALID_ARGUMENT, "base_delay_ms must be a finite number >= 0, got inf");
  CHECK_FAILS(mulligan_retry_options_set_base_delay_ms(opts, -1.5), MULLIGAN_E_INVALID_ARGUMENT,
              "got -1.5");
  CHECK_OK(mulligan_retry_options_set_base_delay_ms(opts, 0));
  CHECK_OK(mulligan_retry_options_set_base_delay_ms(opts, DBL_MAX)); /* saturates */

  CHECK_FAILS(mulligan_retry_options_set_max_delay_ms(opts, -INFINITY),
              MULLIGAN_E_INVALID_ARGUMENT, "max_delay_ms must be a finite number >= 0, got -inf");
  CHECK_FAILS(mulligan_retry_options_set_multiplier(opts, NAN), MULLIGAN_E_INVALID_ARGUMENT,
              "multiplier must be a finite number >= 0, got nan");
  CHECK_FAILS(mulligan_retry_options_set_multiplier(opts, -2), MULLIGAN_E_INVALID_ARGUMENT,
              "multiplier");
  CHECK_FAILS(mulligan_retry_options_set_jitter_fraction(opts, 1.5), MULLIGAN_E_INVALID_ARGUMENT,
              "jitter_fraction must be in [0, 1], got 1.5");
  CHECK_FAILS(mulligan_retry_options_set_jitter_fraction(opts, NAN), MULLIGAN_E_INVALID_ARGUMENT,
              "jitter_fraction");
  /* Each documented range exactly: the edges accepted, the next double
   * outside refused with the value in full (DESIGN.md section 5). */
  CHECK_FAILS(mulligan_retry_options_set_base_delay_ms(opts, -4.9406564584124654e-324),
              MULLIGAN_E_INVALID_ARGUMENT, "base_delay_ms must be a finite number >= 0, got -4.94066e-324");
  CHECK_OK(mulligan_retry_options_set_max_delay_ms(opts, 0));
  CHECK_OK(mulligan_retry_options_set_max_delay_ms(opts, DBL_MAX)); /* saturates */
  CHECK_FAILS(mulligan_retry_options_set_max_delay_ms(opts, -4.9406564584124654e-324),
              MULLIGAN_E_INVALID_ARGUMENT, "max_delay_ms must be a finite number >= 0, got -4.94066e-324");
  CHECK_OK(mulligan_retry_options_set_multiplier(opts, 0));
  CHECK_OK(mulligan_retry_options_set_multiplier(opts, DBL_MAX));
  CHECK_FAILS(mulligan_retry_options_set_multiplier(opts, -4.9406564584124654e-324),
              MULLIGAN_E_INVALID_ARGUMENT,
              "multiplier must be a finite number >= 0, got -4.9406564584124654e-324");
  CHECK_FAILS(mulligan_retry_options_set_multiplier(opts, INFINITY), MULLIGAN_E_INVALID_ARGUMENT,
              "multiplier must be a finite number >= 0, got inf");
  CHECK_OK(mulligan_retry_options_set_jitter_fraction(opts, 0));
  CHECK_OK(mulligan_retry_options_set_jitter_fraction(opts, 1));
  CHECK_FAILS(mulligan_retry_options_set_jitter_fraction(opts, 1.0000000000000002),
              MULLIGAN_E_INVALID_ARGUMENT, "jitter_fraction must be in [0, 1], got 1.0000000000000002");
  CHECK_FAILS(mulligan_retry_options_set_jitter_fraction(opts, -4.9406564584124654e-324),
              MULLIGAN_E_INVALID_ARGUMENT,
              "jitter_fraction must be in [0, 1], got -4.9406564584124654e-324");
  CHECK_OK(mulligan_retry_options_set_multiplier(opts, 2));
  CHECK_OK(mulligan_retry_options_set_max_delay_ms(opts, 10000));
  CHECK_OK(mulligan_retry_options_set_jitter_fraction(opts, 0.2));
  CHECK_FAILS(mulligan_retry_options_set_backoff(opts, (mulligan_backoff_kind)7),
              MULLIGAN_E_INVALID_ARGUMENT, "backoff must be a mulligan_backoff_kind");
  CHECK_FAILS(mulligan_retry_options_set_jitter(opts, (mulligan_jitter_kind)-1),
              MULLIGAN_E_INVALID_ARGUMENT, "jitter must be a mulligan_jitter_kind");

  CHECK_FAILS(mulligan_retry_options_set_deadline_ms(opts, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "deadline_ms must be a finite number > 0, got 0");
  CHECK_FAILS(mulligan_retry_options_set_deadline_ms(opts, NAN), MULLIGAN_E_INVALID_ARGUMENT,
              "deadline_ms");
  CHECK_FAILS(mulligan_retry_options_set_deadline_ms(opts, -10), MULLIGAN_E_INVALID_ARGUMENT,
              "deadline_ms");
  CHECK_FAILS(mulligan_retry_options_set_deadline_ms(opts, INFINITY), MULLIGAN_E_INVALID_ARGUMENT,
              "deadline_ms");
  CHECK_OK(mulligan_retry_options_set_deadline_ms(opts, 5000));
  CHECK_OK(mulligan_retry_options_clear_deadline(opts));
  CHECK_FAILS(mulligan_retry_options_set_attempt_timeout_ms(opts, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "attempt_timeout_ms");
  CHECK_OK(mulligan_retry_options_set_attempt_timeout_ms(opts, 250));
  CHECK_OK(mulligan_retry_options_clear_attempt_timeout(opts));
  CHECK_FAILS(mulligan_retry_options_set_retry_after_max_ms(opts, NAN),
              MULLIGAN_E_INVALID_ARGUMENT, "retry_after_max_ms must be a finite number >= 0");
  CHECK_FAILS(mulligan_retry_options_set_retry_after_clamp(opts, 2), MULLIGAN_E_INVALID_ARGUMENT,
              "retry_after_clamp must be 0 or 1");
  CHECK_FAILS(mulligan_retry_options_set_respect_retry_after(opts, -1),
              MULLIGAN_E_INVALID_ARGUMENT, "respect_retry_after");

  CHECK_FAILS(mulligan_retry_options_set_retryable_statuses(opts, bad_statuses, 2),
              MULLIGAN_E_INVALID_ARGUMENT, "retryable_statuses[1] must be in [100, 599], got 600");
  CHECK_FAILS(mulligan_retry_options_set_retryable_statuses(opts, NULL, 2),
              MULLIGAN_E_INVALID_ARGUMENT, "NULL");
  CHECK_OK(mulligan_retry_options_set_retryable_statuses(opts, good_statuses, 2));
  CHECK_OK(mulligan_retry_options_set_retryable_statuses(opts, NULL, 0));
  CHECK_FAILS(mulligan_retry_options_set_retryable_errors(opts, bad_kinds, 1),
              MULLIGAN_E_INVALID_ARGUMENT, "retryable_errors[0]");
  CHECK_OK(mulligan_retry_options_set_seed(opts, UINT64_C(0xdeadbeefcafe)));

  /* The whole set validates again in create; these values are all fine. */
  CHECK_OK(mulligan_retry_options_set_base_delay_ms(opts, 100));
  CHECK_OK(mulligan_retry_policy_create(&policy, opts));
  CHECK(policy != NULL);
  mulligan_retry_policy_destroy(policy);
  policy = NULL;
  CHECK_OK(mulligan_retry_policy_create(&policy, NULL)); /* defaults */
  CHECK(policy != NULL);
  mulligan_retry_policy_destroy(policy);
  mulligan_retry_options_destroy(opts);
}

static void test_struct_size(void) {
  mulligan_retry_policy *policy = NULL;
  mulligan_retry_session *session = NULL;
  mulligan_outcome outcome = MULLIGAN_OUTCOME_INIT;
  mulligan_decision decision = MULLIGAN_DECISION_INIT;
  CHECK_OK(mulligan_retry_policy_create(&policy, NULL));
  CHECK_OK(mulligan_retry_session_begin(&session, policy, NULL, 1));

  outcome.struct_size = 4;
  CHECK_FAILS(mulligan_retry_session_on_outcome(session, &outcome, &decision),
              MULLIGAN_E_INVALID_ARGUMENT, "outcome->struct_size must be at least");
  outcome.struct_size = (uint32_t)sizeof outcome;
  decision.struct_size = 0;
  CHECK_FAILS(mulligan_retry_session_on_outcome(session, &outcome, &decision),
              MULLIGAN_E_INVALID_ARGUMENT, "out->struct_size must be at least");
  decision.struct_size = (uint32_t)sizeof decision;
  outcome.error_kind = 42;
  CHECK_FAILS(mulligan_retry_session_on_outcome(session, &outcome, &decision),
              MULLIGAN_E_INVALID_ARGUMENT, "error_kind");
  outcome.error_kind = MULLIGAN_ERROR_NONE;
  outcome.http_status = 1000;
  CHECK_FAILS(mulligan_retry_session_on_outcome(session, &outcome, &decision),
              MULLIGAN_E_INVALID_ARGUMENT, "http_status");
  outcome.http_status = 0;
  outcome.retry_after_ms = NAN;
  CHECK_FAILS(mulligan_retry_session_on_outcome(session, &outcome, &decision),
              MULLIGAN_E_INVALID_ARGUMENT, "retry_after_ms");
  /* Rejected outcomes leave the session untouched. */
  CHECK_INT(mulligan_retry_session_attempts(session), 0);

  outcome.retry_after_ms = -1;
  CHECK_OK(mulligan_retry_session_on_outcome(session, &outcome, &decision));
  CHECK_INT(decision.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(decision.reason, MULLIGAN_STOP_SUCCEEDED);
  CHECK_INT(decision.classification, MULLIGAN_CLASSIFICATION_SUCCESS);
  CHECK_INT(decision.attempt, 1);
  CHECK_INT(mulligan_retry_session_attempts(session), 1);

  mulligan_retry_session_destroy(session);
  mulligan_retry_policy_destroy(policy);
}

int main(void) {
  test_version();
  test_status_text();
  test_null_handling();
  test_option_validation();
  test_struct_size();
  return CHECK_REPORT();
}
