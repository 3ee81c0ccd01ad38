/* tests/capi/retry_test.c — the retry engine through the C ABI: backoff
 * sequences, deadlines on a fake clock, Retry-After parsing and hints,
 * replay safety and seeded jitter (compiled as C99; never sleeps). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "capi_check.h"
#include "mulligan.h"

/* Exponential backoff, no jitter, with the given base/cap/attempts. */
static mulligan_retry_policy *make_policy(double base_ms, double max_ms, int attempts,
                                          double deadline_ms) {
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  CHECK_OK(mulligan_retry_options_create(&opts));
  CHECK_OK(mulligan_retry_options_set_backoff(opts, MULLIGAN_BACKOFF_EXPONENTIAL));
  CHECK_OK(mulligan_retry_options_set_base_delay_ms(opts, base_ms));
  CHECK_OK(mulligan_retry_options_set_multiplier(opts, 2));
  CHECK_OK(mulligan_retry_options_set_max_delay_ms(opts, max_ms));
  CHECK_OK(mulligan_retry_options_set_jitter(opts, MULLIGAN_JITTER_NONE));
  CHECK_OK(mulligan_retry_options_set_max_attempts(opts, attempts));
  if (deadline_ms > 0) CHECK_OK(mulligan_retry_options_set_deadline_ms(opts, deadline_ms));
  CHECK_OK(mulligan_retry_policy_create(&policy, opts));
  mulligan_retry_options_destroy(opts);
  return policy;
}

static mulligan_decision feed(mulligan_retry_session *s, int http_status, int error_kind,
                              double retry_after_ms) {
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  o.http_status = http_status;
  o.error_kind = error_kind;
  o.retry_after_ms = retry_after_ms;
  CHECK_OK(mulligan_retry_session_on_outcome(s, &o, &d));
  return d;
}

static void test_exponential_sequence(void) {
  static const double expected[] = {1000, 2000, 4000, 5000, 5000, 5000};
  mulligan_retry_policy *policy = make_policy(1000, 5000, 7, 0);
  mulligan_retry_session *s = NULL;
  mulligan_decision d;
  size_t i;
  CHECK_OK(mulligan_retry_session_begin(&s, policy, NULL, 1));
  for (i = 0; i < sizeof expected / sizeof expected[0]; ++i) {
    d = feed(s, 503, MULLIGAN_ERROR_NONE, -1);
    CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
    CHECK_NEAR(d.delay_ms, expected[i], 1e-9);
    CHECK_INT(d.reason, MULLIGAN_STOP_NONE);
    CHECK_INT(d.classification, MULLIGAN_CLASSIFICATION_RETRYABLE);
    CHECK_INT(d.attempt, (int)i + 1);
    CHECK_INT(d.from_retry_after, 0);
  }
  d = feed(s, 0, MULLIGAN_ERROR_RETRYABLE, -1);
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  CHECK_NEAR(d.delay_ms, 0, 0);
  CHECK_INT(mulligan_retry_session_attempts(s), 7);
  /* A finished session repeats its stop decision. */
  d = feed(s, 200, MULLIGAN_ERROR_NONE, -1);
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  mulligan_retry_session_destroy(s);
  mulligan_retry_policy_destroy(policy);
}

static void test_deadline_on_fake_clock(void) {
  /* Waits 1, 2, 4 s against a 5 s deadline: attempts at t=0, 1, 3; the
   * third failure would wait until t=7 > 5, so the session stops. */
  mulligan_retry_policy *policy = make_policy(1000, 60000, 10, 5000);
  mulligan_clock *clock = NULL;
  mulligan_retry_session *s = NULL;
  mulligan_decision d;
  double timeout = 0;
  int attempts_run = 0;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK_OK(mulligan_retry_session_begin(&s, policy, clock, 1));
  for (;;) {
    ++attempts_run;
    CHECK_OK(mulligan_retry_session_attempt_timeout_ms(s, &timeout));
    d = feed(s, 0, MULLIGAN_ERROR_TIMEOUT, -1);
    if (d.action == MULLIGAN_ACTION_STOP) break;
    CHECK_OK(mulligan_clock_advance_ms(clock, d.delay_ms));
    if (attempts_run > 10) break;
  }
  CHECK_INT(attempts_run, 3);
  CHECK_INT(mulligan_retry_session_attempts(s), 3);
  CHECK_INT(d.reason, MULLIGAN_STOP_DEADLINE);
  CHECK_INT(d.attempt, 3);
  /* The third attempt started at t=3 s: 2 s were left. */
  CHECK_NEAR(timeout, 2000, 1e-6);
  mulligan_retry_session_destroy(s);
  mulligan_clock_destroy(clock);
  mulligan_retry_policy_destroy(policy);
}

static void test_retry_after_parse(void) {
  /* 784111777 = Sun, 06 Nov 1994 08:49:37 GMT. */
  const int64_t date_ms = INT64_C(784111777) * 1000;
  const int64_t now_ms = INT64_C(1700000000000);
  static const char *const invalid[] = {"-5", "abc", "", "0.5", "1m0s", "12 34", "+5"};
  size_t i;
  double delay = 0;

  CHECK_OK(mulligan_retry_after_parse("120", now_ms, &delay));
  CHECK_NEAR(delay, 120000, 0);
  CHECK_OK(mulligan_retry_after_parse(" 7\t", now_ms, &delay));
  CHECK_NEAR(delay, 7000, 0);
  CHECK_OK(mulligan_retry_after_parse("0", now_ms, &delay));
  CHECK_NEAR(delay, 0, 0);
  CHECK_OK(mulligan_retry_after_parse("Sun, 06 Nov 1994 08:49:37 GMT", date_ms - 120000, &delay));
  CHECK_NEAR(delay, 120000, 0);
  CHECK_OK(mulligan_retry_after_parse("Sunday, 06-Nov-94 08:49:37 GMT", date_ms - 1000, &delay));
  CHECK_NEAR(delay, 1000, 0);
  CHECK_OK(mulligan_retry_after_parse("Sun Nov  6 08:49:37 1994", date_ms - 500, &delay));
  CHECK_NEAR(delay, 500, 0);
  /* A date in the past means "retry now". */
  CHECK_OK(mulligan_retry_after_parse("Sun, 06 Nov 1994 08:49:37 GMT", now_ms, &delay));
  CHECK_NEAR(delay, 0, 0);

  for (i = 0; i < sizeof invalid / sizeof invalid[0]; ++i) {
    delay = 123;
    CHECK_FAILS(mulligan_retry_after_parse(invalid[i], now_ms, &delay),
                MULLIGAN_E_INVALID_ARGUMENT, "not a valid Retry-After");
    CHECK_NEAR(delay, -1, 0);
  }

  /* Huge values saturate: huge, never negative, never infinite. */
  CHECK_OK(mulligan_retry_after_parse("99999999999999999999", now_ms, &delay));
  CHECK(isfinite(delay));
  CHECK(delay > 1e12);
  CHECK_NEAR(delay, MULLIGAN_DURATION_MAX_MS, 1e-3);
}

static void test_retry_after_hints(void) {
  mulligan_retry_policy *policy = make_policy(1000, 5000, 5, 0);
  mulligan_retry_session *s = NULL;
  mulligan_decision d;
  double huge = 0;

  CHECK_OK(mulligan_retry_session_begin(&s, policy, NULL, 1));
  d = feed(s, 429, MULLIGAN_ERROR_NONE, 1500);
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  CHECK_NEAR(d.delay_ms, 1500, 1e-9);
  CHECK_INT(d.from_retry_after, 1);
  /* A saturated hint is longer than retry_after_max (60 s): stop at once. */
  CHECK_OK(mulligan_retry_after_parse("99999999999999999999", 0, &huge));
  d = feed(s, 503, MULLIGAN_ERROR_NONE, huge);
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_RETRY_AFTER_TOO_LONG);
  mulligan_retry_session_destroy(s);

  /* +infinity is accepted as "longer than anything". */
  CHECK_OK(mulligan_retry_session_begin(&s, policy, NULL, 1));
  d = feed(s, 503, MULLIGAN_ERROR_NONE, INFINITY);
  CHECK_INT(d.reason, MULLIGAN_STOP_RETRY_AFTER_TOO_LONG);
  mulligan_retry_session_destroy(s);
  mulligan_retry_policy_destroy(policy);
}

static void test_replay_safety(void) {
  mulligan_retry_policy *policy = make_policy(10, 100, 3, 0);
  mulligan_retry_session *s = NULL;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d = MULLIGAN_DECISION_INIT;

  /* Not replay-safe: a refused connection sent nothing, so it is retried... */
  CHECK_OK(mulligan_retry_session_begin(&s, policy, NULL, 0));
  d = feed(s, 0, MULLIGAN_ERROR_CONNECTION_REFUSED, -1);
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  /* ...but a 503 means the request was sent. */
  d = feed(s, 503, MULLIGAN_ERROR_NONE, -1);
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_NOT_REPLAY_SAFE);
  mulligan_retry_session_destroy(s);

  /* An explicit request_sent = 0 overrides the kind. */
  CHECK_OK(mulligan_retry_session_begin(&s, policy, NULL, 0));
  o.error_kind = MULLIGAN_ERROR_CONNECTION_RESET;
  o.request_sent = 0;
  CHECK_OK(mulligan_retry_session_on_outcome(s, &o, &d));
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  o.request_sent = -1; /* derived: a reset happens after sending */
  CHECK_OK(mulligan_retry_session_on_outcome(s, &o, &d));
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_NOT_REPLAY_SAFE);
  o.request_sent = 2;
  CHECK_FAILS(mulligan_retry_session_on_outcome(s, &o, &d), MULLIGAN_E_INVALID_ARGUMENT,
              "request_sent");
  mulligan_retry_session_destroy(s);

  /* Terminal outcomes stop at once. */
  CHECK_OK(mulligan_retry_session_begin(&s, policy, NULL, 1));
  d = feed(s, 404, MULLIGAN_ERROR_NONE, -1);
  CHECK_INT(d.reason, MULLIGAN_STOP_TERMINAL);
  CHECK_INT(d.classification, MULLIGAN_CLASSIFICATION_TERMINAL);
  mulligan_retry_session_destroy(s);
  mulligan_retry_policy_destroy(policy);
}

static void test_seeded_jitter(void) {
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_retry_session *a = NULL, *b = NULL;
  int i;
  CHECK_OK(mulligan_retry_options_create(&opts));
  CHECK_OK(mulligan_retry_options_set_max_attempts(opts, 6));
  CHECK_OK(mulligan_retry_options_set_jitter(opts, MULLIGAN_JITTER_FULL));
  CHECK_OK(mulligan_retry_options_set_seed(opts, 42));
  CHECK_OK(mulligan_retry_policy_create(&policy, opts));
  mulligan_retry_options_destroy(opts); /* the policy keeps its own copy */
  CHECK_OK(mulligan_retry_session_begin(&a, policy, NULL, 1));
  CHECK_OK(mulligan_retry_session_begin(&b, policy, NULL, 1));
  for (i = 0; i < 5; ++i) {
    mulligan_decision da = feed(a, 0, MULLIGAN_ERROR_RETRYABLE, -1);
    mulligan_decision db = feed(b, 0, MULLIGAN_ERROR_RETRYABLE, -1);
    CHECK_INT(da.action, MULLIGAN_ACTION_RETRY);
    CHECK(da.delay_ms >= 0 && da.delay_ms <= 10000);
    CHECK_NEAR(da.delay_ms, db.delay_ms, 0);
  }
  mulligan_retry_session_destroy(a);
  mulligan_retry_session_destroy(b);
  mulligan_retry_policy_destroy(policy);
}

int main(void) {
  test_exponential_sequence();
  test_deadline_on_fake_clock();
  test_retry_after_parse();
  test_retry_after_hints();
  test_replay_safety();
  test_seeded_jitter();
  return CHECK_REPORT();
}
