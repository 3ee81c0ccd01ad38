/* tests/capi/pipeline_test.c — the step-by-step pipeline API of
 * mulligan_pipeline.h from C: admit / record / abandon with exact delays,
 * timeouts, breaker refusals (their text and retry_in), fallbacks, the
 * testing switches and metrics (bad input: pipeline_errors_test.c). A fake
 * clock; no sleeps. Every expected value is worked out by hand in the
 * comments. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan_pipeline.h" /* this part's header alone is enough... */
#include "mulligan_metrics.h"  /* ...plus the metrics checked below */

/* Retry options without jitter, so that every delay is exact. */
static mulligan_retry_options *retry_options(int max_attempts, int backoff, double base_ms) {
  mulligan_retry_options *o = NULL;
  CHECK_OK(mulligan_retry_options_create(&o));
  CHECK_OK(mulligan_retry_options_set_max_attempts(o, max_attempts));
  CHECK_OK(mulligan_retry_options_set_backoff(o, (mulligan_backoff_kind)backoff));
  CHECK_OK(mulligan_retry_options_set_base_delay_ms(o, base_ms));
  CHECK_OK(mulligan_retry_options_set_jitter(o, MULLIGAN_JITTER_NONE));
  return o;
}

static mulligan_breaker *make_breaker(mulligan_clock *clock, const char *name, int threshold,
                                      double reset_ms) {
  mulligan_breaker_options *o = NULL;
  mulligan_breaker *b = NULL;
  CHECK_OK(mulligan_breaker_options_create(&o));
  CHECK_OK(mulligan_breaker_options_set_name(o, name));
  CHECK_OK(mulligan_breaker_options_set_failure_threshold(o, threshold));
  CHECK_OK(mulligan_breaker_options_set_reset_timeout_ms(o, reset_ms));
  CHECK_OK(mulligan_breaker_options_set_clock(o, clock));
  CHECK_OK(mulligan_breaker_create(&b, o));
  mulligan_breaker_options_destroy(o);
  return b;
}

/* A pipeline named `name` over `retry` (destroyed here) and `breaker` (may be
 * NULL; the pipeline shares it), reading `clock`. */
static mulligan_pipeline *make_pipeline(const char *name, mulligan_retry_options *retry,
                                        const mulligan_breaker *breaker, int per_attempt,
                                        mulligan_clock *clock) {
  mulligan_pipeline_options *o = NULL;
  mulligan_pipeline *p = NULL;
  CHECK_OK(mulligan_pipeline_options_create(&o));
  CHECK_OK(mulligan_pipeline_options_set_name(o, name));
  CHECK_OK(mulligan_pipeline_options_set_retry(o, retry));
  CHECK_OK(mulligan_pipeline_options_set_breaker(o, breaker));
  CHECK_OK(mulligan_pipeline_options_set_breaker_per_attempt(o, per_attempt));
  CHECK_OK(mulligan_pipeline_options_set_clock(o, clock));
  CHECK_OK(mulligan_pipeline_create(&p, o));
  mulligan_pipeline_options_destroy(o);
  mulligan_retry_options_destroy(retry);
  return p;
}

/* Admits at the clock's now and expects a go for `attempt`. */
static void admit_go(mulligan_call *call, mulligan_clock *clock, int attempt) {
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  CHECK_OK(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a));
  CHECK_INT(a.action, MULLIGAN_ADMISSION_GO);
  CHECK_INT(a.attempt, attempt);
}

/* Records an HTTP status (0: a plain success) at the clock's now. */
static mulligan_decision record_http(mulligan_call *call, mulligan_clock *clock, int status) {
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  o.http_status = status;
  CHECK_OK(mulligan_call_record(call, &o, mulligan_clock_now_ms(clock), &d));
  return d;
}

static mulligan_metrics_snapshot metrics_of(const char *name) {
  mulligan_metrics_snapshot s = MULLIGAN_METRICS_SNAPSHOT_INIT;
  CHECK_OK(mulligan_metrics_get(name, &s));
  return s;
}

/* Three attempts with exponential backoff (100 ms, then a Retry-After hint
 * of 250 ms replacing the 200 ms backoff) inside a 1000 ms deadline: each
 * attempt's timeout is the time left (1000, 900, 650 ms). */
static void test_steps(void) {
  mulligan_clock *clock = NULL;
  mulligan_retry_options *retry;
  mulligan_pipeline *p;
  mulligan_call *call = NULL;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  mulligan_metrics_snapshot s;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  retry = retry_options(4, MULLIGAN_BACKOFF_EXPONENTIAL, 100.0);
  CHECK_OK(mulligan_retry_options_set_deadline_ms(retry, 1000.0));
  p = make_pipeline("pipe-steps", retry, NULL, 0, clock);
  CHECK(mulligan_pipeline_now_ms(p) == mulligan_clock_now_ms(clock));

  CHECK_OK(mulligan_call_begin(&call, p, mulligan_pipeline_now_ms(p), NULL));
  CHECK_OK(mulligan_call_admit(call, mulligan_pipeline_now_ms(p), &a));
  CHECK_INT(a.action, MULLIGAN_ADMISSION_GO);
  CHECK_INT(a.attempt, 1);
  CHECK_NEAR(a.timeout_ms, 1000.0, 1e-9);
  CHECK_INT(a.reason, MULLIGAN_STOP_NONE);
  CHECK_NEAR(a.retry_in_ms, 0.0, 0.0);
  CHECK_INT(a.use_fallback, 0);
  d = record_http(call, clock, 503);
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  CHECK_NEAR(d.delay_ms, 100.0, 1e-9);
  CHECK_INT(d.classification, MULLIGAN_CLASSIFICATION_RETRYABLE);
  CHECK_INT(d.attempt, 1);
  CHECK_INT(d.from_retry_after, 0);
  /* While it waits, the call is in flight and waiting to retry. */
  s = metrics_of("pipe-steps");
  CHECK_INT(s.in_flight, 1);
  CHECK_INT(s.waiting_to_retry, 1);
  CHECK_INT(mulligan_call_finished(call), 0);

  CHECK_OK(mulligan_clock_advance_ms(clock, d.delay_ms));
  CHECK_OK(mulligan_call_admit(call, mulligan_pipeline_now_ms(p), &a));
  CHECK_INT(a.attempt, 2);
  CHECK_NEAR(a.timeout_ms, 900.0, 1e-9);
  o.http_status = 503;
  o.retry_after_ms = 250.0;
  CHECK_OK(mulligan_call_record(call, &o, mulligan_pipeline_now_ms(p), &d));
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  CHECK_NEAR(d.delay_ms, 250.0, 1e-9);
  CHECK_INT(d.from_retry_after, 1);

  CHECK_OK(mulligan_clock_advance_ms(clock, d.delay_ms));
  CHECK_OK(mulligan_call_admit(call, mulligan_pipeline_now_ms(p), &a));
  CHECK_INT(a.attempt, 3);
  CHECK_NEAR(a.timeout_ms, 650.0, 1e-9);
  d = record_http(call, clock, 200);
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_SUCCEEDED);
  CHECK_INT(d.classification, MULLIGAN_CLASSIFICATION_SUCCESS);
  CHECK_INT(d.attempt, 3);
  CHECK_NEAR(d.delay_ms, 0.0, 0.0);

  CHECK_INT(mulligan_call_attempts(call), 3);
  CHECK_NEAR(mulligan_call_total_delay_ms(call), 350.0, 1e-9);
  CHECK_INT(mulligan_call_finished(call), 1);
  CHECK_INT(mulligan_call_use_fallback(call), 0);
  mulligan_call_destroy(call);

  s = metrics_of("pipe-steps");
  CHECK_INT(s.calls, 1);
  CHECK_INT(s.attempts, 3);
  CHECK_INT(s.retries, 2);
  CHECK_INT(s.retries_by_reason[MULLIGAN_RETRY_REASON_STATUS], 1);
  CHECK_INT(s.retries_by_reason[MULLIGAN_RETRY_REASON_RETRY_AFTER], 1);
  CHECK_INT(s.successes, 1);
  CHECK_INT(s.failures, 0);
  CHECK_INT(s.in_flight, 0);
  CHECK_INT(s.waiting_to_retry, 0);

  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

/* A breaker with threshold 1 and a 12500 ms reset timeout: a call that gives
 * up opens it; the next call is refused with the breaker's text and 12500 ms
 * to the probe, and a call 2500 ms later with 10000 ms (and its fallback). */
static void test_refusal(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_pipeline *p;
  mulligan_call *call = NULL;
  mulligan_call_options co = MULLIGAN_CALL_OPTIONS_INIT;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  mulligan_decision d;
  mulligan_metrics_snapshot s;
  int i;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  b = make_breaker(clock, "db", 1, 12500.0);
  p = make_pipeline("pipe-refusal", retry_options(3, MULLIGAN_BACKOFF_CONSTANT, 100.0), b, 0,
                    clock);
  mulligan_breaker_destroy(b); /* the pipeline shares it */
  b = NULL;

  /* Three 503s: one failure reaches the breaker (one result per call). */
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  for (i = 1; i <= 3; ++i) {
    admit_go(call, clock, i);
    d = record_http(call, clock, 503);
    if (i < 3) {
      CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
      CHECK_OK(mulligan_clock_advance_ms(clock, d.delay_ms));
    }
  }
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  mulligan_call_destroy(call);

  /* Refused at once: 12.500 s to the probe. */
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  CHECK_FAILS(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a), MULLIGAN_E_CIRCUIT_OPEN,
              "circuit breaker 'db' is open; next probe in 12.500 s");
  CHECK_INT(a.action, MULLIGAN_ADMISSION_REFUSE);
  CHECK_INT(a.reason, MULLIGAN_STOP_CIRCUIT_OPEN);
  CHECK_INT(a.attempt, 1);
  CHECK_NEAR(a.retry_in_ms, 12500.0, 1e-9);
  CHECK_INT(a.use_fallback, 0);
  CHECK_NEAR(a.timeout_ms, -1.0, 0.0);
  CHECK_INT(mulligan_call_finished(call), 1);
  CHECK_INT(mulligan_call_attempts(call), 0);
  CHECK_INT(mulligan_call_use_fallback(call), 0);
  /* Asking again answers the same refusal, text included. */
  memset(&a, 0, sizeof a);
  a.struct_size = sizeof a;
  CHECK_FAILS(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a), MULLIGAN_E_CIRCUIT_OPEN,
              "next probe in 12.500 s");
  CHECK_INT(a.reason, MULLIGAN_STOP_CIRCUIT_OPEN);
  CHECK_NEAR(a.retry_in_ms, 12500.0, 1e-9);
  /* A refused call records nothing. */
  d = (mulligan_decision)MULLIGAN_DECISION_INIT;
  {
    mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
    CHECK_FAILS(mulligan_call_record(call, &o, mulligan_clock_now_ms(clock), &d),
                MULLIGAN_E_INVALID_ARGUMENT, "the call is finished");
    CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  }
  mulligan_call_destroy(call);

  /* 2500 ms later, with a fallback: 10.000 s left, and the fallback answers. */
  CHECK_OK(mulligan_clock_advance_ms(clock, 2500.0));
  co.fallback = 1;
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), &co));
  CHECK_FAILS(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a), MULLIGAN_E_CIRCUIT_OPEN,
              "circuit breaker 'db' is open; next probe in 10.000 s");
  CHECK_NEAR(a.retry_in_ms, 10000.0, 1e-9);
  CHECK_INT(a.use_fallback, 1);
  CHECK_INT(mulligan_call_use_fallback(call), 1);
  mulligan_call_destroy(call);

  s = metrics_of("pipe-refusal");
  CHECK_INT(s.calls, 3);
  CHECK_INT(s.attempts, 3);
  CHECK_INT(s.retries, 2);
  CHECK_INT(s.successes, 0);
  CHECK_INT(s.failures, 3);
  CHECK_INT(s.fallbacks, 1);
  CHECK_INT(s.in_flight, 0);
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

/* A breaker forced open refuses with "no probe until it is reset". */
static void test_forced_open(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_pipeline *p;
  mulligan_call *call = NULL;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  b = make_breaker(clock, "maintenance", 5, 1000.0);
  p = make_pipeline("pipe-forced", retry_options(3, MULLIGAN_BACKOFF_CONSTANT, 100.0), b, 0,
                    clock);
  CHECK_OK(mulligan_breaker_force_open(b));
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  CHECK_FAILS(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a), MULLIGAN_E_CIRCUIT_OPEN,
              "circuit breaker 'maintenance' is forced open; no probe until it is reset");
  CHECK(a.retry_in_ms == MULLIGAN_DURATION_MAX_MS);
  mulligan_call_destroy(call);
  mulligan_pipeline_destroy(p);
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

/* An abandoned half-open probe frees its slot without judging the
 * dependency; a call destroyed unfinished is abandoned (1 attempt in flight
 * when admitted). One attempt per call (max_attempts 1). */
static void test_abandon(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_pipeline *p;
  mulligan_call *call = NULL;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  mulligan_metrics_snapshot s;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  b = make_breaker(clock, "pipe-abandon-breaker", 1, 1000.0);
  p = make_pipeline("pipe-abandon", retry_options(1, MULLIGAN_BACKOFF_CONSTANT, 100.0), b, 0,
                    clock);

  /* 1: a failure opens the breaker. */
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  admit_go(call, clock, 1);
  d = record_http(call, clock, 503);
  CHECK_INT(d.reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  mulligan_call_destroy(call);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);

  /* 2: after the reset timeout, a probe is admitted, then abandoned. */
  CHECK_OK(mulligan_clock_advance_ms(clock, 1000.0));
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  admit_go(call, clock, 1);
  CHECK_OK(mulligan_call_abandon(call, mulligan_clock_now_ms(clock), 1));
  CHECK_INT(mulligan_call_finished(call), 1);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_HALF_OPEN);
  /* Abandon is idempotent; a finished call admits and records nothing, and
   * the outputs say "refuse" / "stop" for a caller that ignores the code. */
  CHECK_OK(mulligan_call_abandon(call, mulligan_clock_now_ms(clock), 1));
  a.action = MULLIGAN_ADMISSION_GO;
  CHECK_FAILS(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a),
              MULLIGAN_E_INVALID_ARGUMENT, "mulligan_call_admit: the call is finished");
  CHECK_INT(a.action, MULLIGAN_ADMISSION_REFUSE);
  d.action = MULLIGAN_ACTION_RETRY;
  CHECK_FAILS(mulligan_call_record(call, &o, mulligan_clock_now_ms(clock), &d),
              MULLIGAN_E_INVALID_ARGUMENT, "mulligan_call_record: the call is finished");
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_NONE);
  mulligan_call_destroy(call);

  /* 3: the freed slot admits the next probe, whose success closes it. */
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  admit_go(call, clock, 1);
  d = record_http(call, clock, 200);
  CHECK_INT(d.reason, MULLIGAN_STOP_SUCCEEDED);
  mulligan_call_destroy(call);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);

  /* 4: admitted, then destroyed without a record. */
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  admit_go(call, clock, 1);
  mulligan_call_destroy(call);

  /* Calls 1, 2, 4 failed; each made one attempt (2 and 4 in flight). */
  s = metrics_of("pipe-abandon");
  CHECK_INT(s.calls, 4);
  CHECK_INT(s.attempts, 4);
  CHECK_INT(s.successes, 1);
  CHECK_INT(s.failures, 3);
  CHECK_INT(s.in_flight, 0);
  mulligan_pipeline_destroy(p);
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

/* mulligan_call_cancel (0.6): a call its caller cancelled counts as
 * cancelled, never as a failure, and charges no breaker: with
 * failure_threshold 1 a single failure counted would open it. */
static void test_cancel(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_pipeline *p;
  mulligan_call *call = NULL;
  mulligan_decision d;
  mulligan_metrics_snapshot s;
  mulligan_metrics_snapshot old = MULLIGAN_METRICS_SNAPSHOT_INIT;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  b = make_breaker(clock, "pipe-cancel-breaker", 1, 1000.0);
  p = make_pipeline("pipe-cancel", retry_options(3, MULLIGAN_BACKOFF_CONSTANT, 100.0), b, 0,
                    clock);

  /* 1: attempt 1 fails (503), the call waits 100 ms to retry, and is
   * cancelled in that wait: 0 attempts in flight. */
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  admit_go(call, clock, 1);
  d = record_http(call, clock, 503);
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  CHECK_OK(mulligan_clock_advance_ms(clock, 50.0));
  CHECK_OK(mulligan_call_cancel(call, mulligan_clock_now_ms(clock), 0));
  CHECK_INT(mulligan_call_finished(call), 1);
  CHECK_OK(mulligan_call_cancel(call, mulligan_clock_now_ms(clock), 0));  /* once only */
  CHECK_OK(mulligan_call_abandon(call, mulligan_clock_now_ms(clock), 0)); /* no-op after */
  mulligan_call_destroy(call);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);

  /* 2: admitted, then cancelled mid-attempt (1 in flight). */
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  admit_go(call, clock, 1);
  CHECK_OK(mulligan_call_cancel(call, mulligan_clock_now_ms(clock), 1));
  mulligan_call_destroy(call);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);

  /* 2 calls, 2 attempts (one recorded, one in flight), none succeeded or
   * failed, 2 cancelled, none left in flight or waiting. */
  s = metrics_of("pipe-cancel");
  CHECK_INT(s.calls, 2);
  CHECK_INT(s.attempts, 2);
  CHECK_INT(s.successes, 0);
  CHECK_INT(s.failures, 0);
  CHECK_INT(s.cancelled, 2);
  CHECK_INT(s.in_flight, 0);
  CHECK_INT(s.waiting_to_retry, 0);
  /* A caller compiled against 0.1's struct (no `cancelled`) gets the rest
   * and nothing is written past its struct_size. */
  old.struct_size = (uint32_t)offsetof(mulligan_metrics_snapshot, cancelled);
  old.cancelled = 77;
  CHECK_OK(mulligan_metrics_get("pipe-cancel", &old));
  CHECK_INT(old.calls, 2);
  CHECK_INT(old.failures, 0);
  CHECK_INT(old.cancelled, 77);
  mulligan_pipeline_destroy(p);
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

/* The testing switches: a cap on attempts, and no waits. */
static void test_testing_switches(void) {
  mulligan_clock *clock = NULL;
  mulligan_pipeline *p, *two;
  mulligan_call *call = NULL;
  mulligan_call_options co = MULLIGAN_CALL_OPTIONS_INIT;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  p = make_pipeline("pipe-testing", retry_options(5, MULLIGAN_BACKOFF_CONSTANT, 100.0), NULL, 0,
                    clock);

  /* max_attempts 2 stops a 5-attempt policy after the 2nd attempt. */
  co.max_attempts = 2;
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), &co));
  d = record_http(call, clock, 503);
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  CHECK_NEAR(d.delay_ms, 100.0, 1e-9);
  d = record_http(call, clock, 503);
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  CHECK_INT(d.attempt, 2);
  mulligan_call_destroy(call);

  /* no_wait: every retry waits 0, even one a Retry-After hint set. */
  co.max_attempts = 0;
  co.no_wait = 1;
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), &co));
  d = record_http(call, clock, 503);
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  CHECK_NEAR(d.delay_ms, 0.0, 0.0);
  o.http_status = 429;
  o.retry_after_ms = 3000.0;
  CHECK_OK(mulligan_call_record(call, &o, mulligan_clock_now_ms(clock), &d));
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  CHECK_NEAR(d.delay_ms, 0.0, 0.0);
  d = record_http(call, clock, 200);
  CHECK_INT(d.reason, MULLIGAN_STOP_SUCCEEDED);
  CHECK_INT(mulligan_call_attempts(call), 3);
  CHECK_NEAR(mulligan_call_total_delay_ms(call), 0.0, 0.0);
  mulligan_call_destroy(call);

  /* A policy with fewer attempts than the cap keeps its own (2 < 5). */
  two = make_pipeline("pipe-testing", retry_options(2, MULLIGAN_BACKOFF_CONSTANT, 100.0), NULL,
                      0, clock);
  co.max_attempts = 5;
  co.no_wait = 0;
  CHECK_OK(mulligan_call_begin(&call, two, mulligan_clock_now_ms(clock), &co));
  record_http(call, clock, 503);
  d = record_http(call, clock, 503);
  CHECK_INT(d.reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  CHECK_INT(d.attempt, 2);
  mulligan_call_destroy(call);

  mulligan_pipeline_destroy(two);
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

/* Attempt timeouts: the call's default when the policy has none; the
 * policy's own otherwise, trimmed to the deadline; -1 without any. And
 * replay_safe 0: a 503 after sending stops, a refused connection retries. */
static void test_timeouts_and_replay_safety(void) {
  mulligan_clock *clock = NULL;
  mulligan_retry_options *retry;
  mulligan_pipeline *p, *bounded;
  mulligan_call *call = NULL;
  mulligan_call_options co = MULLIGAN_CALL_OPTIONS_INIT;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  p = make_pipeline("pipe-timeouts", retry_options(3, MULLIGAN_BACKOFF_CONSTANT, 100.0), NULL, 0,
                    clock);
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  CHECK_OK(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a));
  CHECK_NEAR(a.timeout_ms, -1.0, 0.0);
  mulligan_call_destroy(call);
  co.attempt_timeout_ms = 250.0;
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), &co));
  CHECK_OK(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a));
  CHECK_NEAR(a.timeout_ms, 250.0, 1e-9);
  mulligan_call_destroy(call);

  retry = retry_options(3, MULLIGAN_BACKOFF_CONSTANT, 100.0);
  CHECK_OK(mulligan_retry_options_set_attempt_timeout_ms(retry, 400.0));
  CHECK_OK(mulligan_retry_options_set_deadline_ms(retry, 1000.0));
  bounded = make_pipeline("pipe-timeouts", retry, NULL, 0, clock);
  CHECK_OK(mulligan_call_begin(&call, bounded, mulligan_clock_now_ms(clock), &co));
  CHECK_OK(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a));
  CHECK_NEAR(a.timeout_ms, 400.0, 1e-9); /* the policy's own, not the call's 250 */
  record_http(call, clock, 503);
  CHECK_OK(mulligan_clock_advance_ms(clock, 800.0));
  CHECK_OK(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a));
  CHECK_NEAR(a.timeout_ms, 200.0, 1e-9); /* 1000 - 800 left */
  mulligan_call_destroy(call);

  co = (mulligan_call_options)MULLIGAN_CALL_OPTIONS_INIT;
  co.replay_safe = 0;
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), &co));
  o.error_kind = MULLIGAN_ERROR_CONNECTION_REFUSED; /* nothing was sent */
  CHECK_OK(mulligan_call_record(call, &o, mulligan_clock_now_ms(clock), &d));
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  o = (mulligan_outcome)MULLIGAN_OUTCOME_INIT;
  o.http_status = 503;
  CHECK_OK(mulligan_call_record(call, &o, mulligan_clock_now_ms(clock), &d));
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_NOT_REPLAY_SAFE);
  mulligan_call_destroy(call);

  mulligan_pipeline_destroy(bounded);
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

/* breaker_per_attempt: with threshold 2, the 2nd failed attempt of one call
 * opens the breaker and the call's retry is refused; per call (the default)
 * the same call makes its 5 attempts and records one failure. */
static void test_breaker_per_attempt(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_pipeline *p;
  mulligan_call *call = NULL;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  mulligan_decision d;
  mulligan_breaker_counts c = MULLIGAN_BREAKER_COUNTS_INIT;
  int per_attempt, i;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  for (per_attempt = 1; per_attempt >= 0; --per_attempt) {
    b = make_breaker(clock, "pipe-per-attempt", 2, 30000.0);
    p = make_pipeline(NULL, retry_options(5, MULLIGAN_BACKOFF_CONSTANT, 100.0), b, per_attempt,
                      clock);
    CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
    for (i = 1; i <= 5; ++i) {
      if (mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a) != MULLIGAN_OK) break;
      d = record_http(call, clock, 503);
      CHECK_OK(mulligan_clock_advance_ms(clock, d.delay_ms));
    }
    CHECK_OK(mulligan_breaker_get_counts(b, &c));
    if (per_attempt) {
      CHECK_INT(i, 3); /* the 3rd admit was refused */
      CHECK_INT(a.reason, MULLIGAN_STOP_CIRCUIT_OPEN);
      CHECK_NEAR(a.retry_in_ms, 29900.0, 1e-9); /* opened 100 ms earlier */
      CHECK_INT(mulligan_call_attempts(call), 2);
      CHECK_INT((int)c.failures, 2);
      CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
    } else {
      CHECK_INT(mulligan_call_attempts(call), 5);
      CHECK_INT((int)c.failures, 1);
      CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);
    }
    mulligan_call_destroy(call);
    mulligan_pipeline_destroy(p);
    mulligan_breaker_destroy(b);
  }
  mulligan_clock_destroy(clock);
}

/* A registry: each key its own breaker (and, without a pipeline name, its
 * own metrics); the registry handle may go before the pipeline. */
static void test_registry(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker_options *bo = NULL;
  mulligan_breaker_registry *r = NULL;
  mulligan_pipeline_options *po = NULL;
  mulligan_retry_options *retry = retry_options(1, MULLIGAN_BACKOFF_CONSTANT, 100.0);
  mulligan_pipeline *p = NULL;
  mulligan_call *call = NULL;
  mulligan_call_options co = MULLIGAN_CALL_OPTIONS_INIT;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  mulligan_metrics_snapshot s;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK_OK(mulligan_breaker_options_create(&bo));
  CHECK_OK(mulligan_breaker_options_set_failure_threshold(bo, 1));
  CHECK_OK(mulligan_breaker_options_set_clock(bo, clock));
  CHECK_OK(mulligan_breaker_registry_create(&r, bo, 0));
  mulligan_breaker_options_destroy(bo);
  CHECK_OK(mulligan_pipeline_options_create(&po));
  CHECK_OK(mulligan_pipeline_options_set_retry(po, retry));
  CHECK_OK(mulligan_pipeline_options_set_breaker_registry(po, r));
  CHECK_OK(mulligan_pipeline_options_set_clock(po, clock));
  CHECK_OK(mulligan_pipeline_create(&p, po));
  mulligan_pipeline_options_destroy(po);
  mulligan_retry_options_destroy(retry);

  co.key = "https://a.test:443";
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), &co));
  admit_go(call, clock, 1);
  record_http(call, clock, 503);
  mulligan_call_destroy(call);
  CHECK_INT((int)mulligan_breaker_registry_size(r), 1);
  mulligan_breaker_registry_destroy(r); /* the pipeline shares it */

  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), &co));
  CHECK_FAILS(mulligan_call_admit(call, mulligan_clock_now_ms(clock), &a), MULLIGAN_E_CIRCUIT_OPEN,
              "circuit breaker 'https://a.test:443' is open");
  mulligan_call_destroy(call);
  co.key = "https://b.test:443"; /* another origin, another breaker */
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), &co));
  admit_go(call, clock, 1);
  record_http(call, clock, 200);
  mulligan_call_destroy(call);

  s = metrics_of("https://a.test:443");
  CHECK_INT(s.calls, 2);
  CHECK_INT(s.failures, 2);
  s = metrics_of("https://b.test:443");
  CHECK_INT(s.calls, 1);
  CHECK_INT(s.successes, 1);
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

/* report_metrics 0 reports nothing; a record without an admit counts an
 * attempt that ran unguarded. */
static void test_silent_and_unguarded(void) {
  mulligan_clock *clock = NULL;
  mulligan_pipeline_options *po = NULL;
  mulligan_pipeline *p = NULL;
  mulligan_call *call = NULL;
  mulligan_metrics_snapshot s = MULLIGAN_METRICS_SNAPSHOT_INIT;
  mulligan_decision d;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK_OK(mulligan_pipeline_options_create(&po));
  CHECK_OK(mulligan_pipeline_options_set_name(po, "pipe-silent"));
  CHECK_OK(mulligan_pipeline_options_set_report_metrics(po, 0));
  CHECK_OK(mulligan_pipeline_options_set_clock(po, clock));
  CHECK_OK(mulligan_pipeline_create(&p, po));
  mulligan_pipeline_options_destroy(po);
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), NULL));
  d = record_http(call, clock, 0);
  CHECK_INT(d.reason, MULLIGAN_STOP_SUCCEEDED);
  CHECK_INT(mulligan_call_attempts(call), 1);
  mulligan_call_destroy(call);
  CHECK_FAILS(mulligan_metrics_get("pipe-silent", &s), MULLIGAN_E_INVALID_ARGUMENT,
              "no metrics named 'pipe-silent'");
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

/* A give-up on retryable failures with a fallback: use_fallback; a terminal
 * outcome: never (it is an answer, not an outage). */
static void test_fallback(void) {
  mulligan_clock *clock = NULL;
  mulligan_pipeline *p;
  mulligan_call *call = NULL;
  mulligan_call_options co = MULLIGAN_CALL_OPTIONS_INIT;
  mulligan_decision d;
  mulligan_metrics_snapshot s;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  p = make_pipeline("pipe-fallback", retry_options(2, MULLIGAN_BACKOFF_CONSTANT, 100.0), NULL, 0,
                    clock);
  co.fallback = 1;
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), &co));
  record_http(call, clock, 503);
  CHECK_INT(mulligan_call_use_fallback(call), 0); /* not finished yet */
  d = record_http(call, clock, 503);
  CHECK_INT(d.reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  CHECK_INT(mulligan_call_use_fallback(call), 1);
  mulligan_call_destroy(call);
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_clock_now_ms(clock), &co));
  d = record_http(call, clock, 404);
  CHECK_INT(d.reason, MULLIGAN_STOP_TERMINAL);
  CHECK_INT(mulligan_call_use_fallback(call), 0);
  mulligan_call_destroy(call);
  s = metrics_of("pipe-fallback");
  CHECK_INT(s.failures, 2);
  CHECK_INT(s.fallbacks, 1);
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

int main(void) {
  CHECK_OK(mulligan_metrics_reset());
  test_steps();
  test_refusal();
  test_forced_open();
  test_abandon();
  test_testing_switches();
  test_timeouts_and_replay_safety();
  test_breaker_per_attempt();
  test_registry();
  test_silent_and_unguarded();
  test_fallback();
  test_cancel();
  return CHECK_REPORT();
}
