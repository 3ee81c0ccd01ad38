/* tests/capi/breaker_test.c — circuit breakers and mulligan_retry_call through
 * the C ABI, with a fake clock and exact expected states (no threads). */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan.h"

static mulligan_breaker *make_breaker(mulligan_clock *clock, int threshold, double reset_ms,
                                      int half_open) {
  mulligan_breaker_options *o = NULL;
  mulligan_breaker *b = NULL;
  CHECK_OK(mulligan_breaker_options_create(&o));
  CHECK_OK(mulligan_breaker_options_set_name(o, "db"));
  CHECK_OK(mulligan_breaker_options_set_failure_threshold(o, threshold));
  CHECK_OK(mulligan_breaker_options_set_reset_timeout_ms(o, reset_ms));
  CHECK_OK(mulligan_breaker_options_set_half_open_max_calls(o, half_open));
  CHECK_OK(mulligan_breaker_options_set_clock(o, clock));
  CHECK_OK(mulligan_breaker_create(&b, o));
  mulligan_breaker_options_destroy(o);
  return b;
}

static void fail_once(mulligan_breaker *b) {
  mulligan_breaker_permit p = MULLIGAN_BREAKER_PERMIT_INIT;
  CHECK_OK(mulligan_breaker_acquire(b, &p));
  CHECK_OK(mulligan_breaker_record(b, &p, MULLIGAN_CALL_FAILURE, -1));
}

static void test_options_validation(void) {
  mulligan_breaker_options *o = NULL;
  mulligan_breaker *b = NULL;
  CHECK_OK(mulligan_breaker_options_create(&o));
  CHECK_FAILS(mulligan_breaker_options_set_reset_timeout_ms(o, NAN),
              MULLIGAN_E_INVALID_ARGUMENT, "reset_timeout_ms must be a finite number > 0");
  CHECK_FAILS(mulligan_breaker_options_set_reset_timeout_ms(o, INFINITY),
              MULLIGAN_E_INVALID_ARGUMENT, "reset_timeout_ms");
  CHECK_FAILS(mulligan_breaker_options_set_permit_timeout_ms(o, -1.0),
              MULLIGAN_E_INVALID_ARGUMENT, "permit_timeout_ms");
  CHECK_FAILS(mulligan_breaker_options_set_window_duration_ms(o, 0.0),
              MULLIGAN_E_INVALID_ARGUMENT, "window_duration_ms");
  CHECK_FAILS(mulligan_breaker_options_set_half_open_max_calls(o, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "half_open_max_calls must be in [1, 65535]");
  CHECK_FAILS(mulligan_breaker_options_set_failure_rate_threshold(o, 0.0),
              MULLIGAN_E_INVALID_ARGUMENT, "failure_rate_threshold");
  CHECK_FAILS(mulligan_breaker_options_set_reset_timeout_multiplier(o, 0.5),
              MULLIGAN_E_INVALID_ARGUMENT, "reset_timeout_multiplier");
  CHECK_FAILS(mulligan_breaker_options_set_window(o, 7), MULLIGAN_E_INVALID_ARGUMENT, "window");
  CHECK_FAILS(mulligan_breaker_options_set_name(NULL, "x"), MULLIGAN_E_INVALID_ARGUMENT,
              "opts must not be NULL");
  /* Consistency is checked at create. */
  CHECK_OK(mulligan_breaker_options_set_failure_threshold(o, 0));
  CHECK_FAILS(mulligan_breaker_create(&b, o), MULLIGAN_E_INVALID_ARGUMENT,
              "at least one trip condition");
  CHECK(b == NULL);
  /* The name rule of CircuitBreakerOptions::name: no control character. */
  CHECK_OK(mulligan_breaker_options_set_failure_threshold(o, 5));
  CHECK_OK(mulligan_breaker_options_set_name(o, "a\nb"));
  CHECK_FAILS(mulligan_breaker_create(&b, o), MULLIGAN_E_INVALID_ARGUMENT,
              "name must not contain control characters");
  CHECK(b == NULL);
  mulligan_breaker_options_destroy(o);
  mulligan_breaker_options_destroy(NULL);
  mulligan_breaker_destroy(NULL);
  mulligan_breaker_registry_destroy(NULL);
  CHECK_STR(mulligan_breaker_state_str(MULLIGAN_BREAKER_HALF_OPEN), "half_open");
  CHECK_STR(mulligan_breaker_state_str(42), "unknown");
}

typedef struct transitions {
  int count;
  int from[8], to[8];
  char reason[8][40];
  double at_ms[8];
  int freed;
} transitions;

static int on_transition(const mulligan_breaker_transition *t, void *user_data) {
  transitions *log = (transitions *)user_data;
  if (log->count < 8) {
    log->from[log->count] = t->from;
    log->to[log->count] = t->to;
    snprintf(log->reason[log->count], sizeof log->reason[0], "%s", t->reason);
    log->at_ms[log->count] = t->at_ms;
  }
  log->count++;
  return 0;
}

static void free_log(void *user_data) { ((transitions *)user_data)->freed++; }

static void test_state_script(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker_permit p = MULLIGAN_BREAKER_PERMIT_INIT, q = MULLIGAN_BREAKER_PERMIT_INIT;
  mulligan_breaker_counts c = MULLIGAN_BREAKER_COUNTS_INIT;
  transitions log;
  uint64_t id = 0;
  double t0;
  mulligan_breaker *b;
  memset(&log, 0, sizeof log);
  CHECK_OK(mulligan_clock_create_fake(&clock));
  t0 = mulligan_clock_now_ms(clock);
  b = make_breaker(clock, 3, 10000.0, 1);
  CHECK_STR(mulligan_breaker_name(b), "db");
  CHECK_OK(mulligan_breaker_add_listener(b, on_transition, &log, free_log, &id));
  CHECK(id != 0);

  fail_once(b);
  fail_once(b);
  CHECK_OK(mulligan_breaker_get_counts(b, &c));
  CHECK_INT(c.consecutive_failures, 2);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);
  CHECK_OK(mulligan_clock_advance_ms(clock, 500));
  fail_once(b);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
  CHECK_NEAR(mulligan_breaker_time_until_probe_ms(b), 10000.0, 1e-6);

  CHECK_OK(mulligan_clock_advance_ms(clock, 2500));
  CHECK_FAILS(mulligan_breaker_acquire(b, &p), MULLIGAN_E_CIRCUIT_OPEN,
              "circuit breaker 'db' is open; next probe in 7.500 s");
  CHECK_INT(p.admitted, 0);
  CHECK_INT(p.state, MULLIGAN_BREAKER_OPEN);
  CHECK_NEAR(p.retry_in_ms, 7500.0, 1e-6);
  /* Recording a refused permit changes nothing. */
  CHECK_OK(mulligan_breaker_record(b, &p, MULLIGAN_CALL_SUCCESS, 0));

  CHECK_OK(mulligan_clock_advance_ms(clock, 7500));
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_HALF_OPEN);
  CHECK_OK(mulligan_breaker_acquire(b, &p));
  CHECK_INT(p.probe, 1);
  CHECK_INT(p.state, MULLIGAN_BREAKER_HALF_OPEN);
  CHECK_FAILS(mulligan_breaker_acquire(b, &q), MULLIGAN_E_CIRCUIT_OPEN, "next probe in 60.000 s");
  CHECK_OK(mulligan_breaker_record(b, &p, MULLIGAN_CALL_FAILURE, 5.0)); /* probe failed */
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
  CHECK_OK(mulligan_clock_advance_ms(clock, 10000));
  CHECK_OK(mulligan_breaker_acquire(b, &p));
  CHECK_OK(mulligan_breaker_record(b, &p, MULLIGAN_CALL_SUCCESS, -1));
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);
  CHECK_OK(mulligan_breaker_get_counts(b, &c));
  CHECK_INT(c.failures, 4);
  CHECK_INT(c.successes, 1);
  CHECK_INT(c.rejected, 2);

  CHECK_INT(log.count, 5);
  CHECK_INT(log.to[0], MULLIGAN_BREAKER_OPEN);
  CHECK_STR(log.reason[0], "failure_threshold");
  CHECK_NEAR(log.at_ms[0] - t0, 500.0, 1e-6);
  CHECK_STR(log.reason[1], "reset_timeout_elapsed");
  CHECK_NEAR(log.at_ms[1] - t0, 10500.0, 1e-6);
  CHECK_STR(log.reason[2], "probe_failed");
  CHECK_STR(log.reason[3], "reset_timeout_elapsed");
  CHECK_STR(log.reason[4], "probe_succeeded");
  CHECK_INT(log.from[4], MULLIGAN_BREAKER_HALF_OPEN);

  /* Manual states. */
  CHECK_OK(mulligan_breaker_force_open(b));
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_FORCED_OPEN);
  CHECK(mulligan_breaker_time_until_probe_ms(b) == MULLIGAN_DURATION_MAX_MS);
  CHECK_FAILS(mulligan_breaker_acquire(b, &p), MULLIGAN_E_CIRCUIT_OPEN, "forced open");
  CHECK(p.retry_in_ms == MULLIGAN_DURATION_MAX_MS);
  CHECK_OK(mulligan_breaker_reset(b));
  CHECK_OK(mulligan_breaker_get_counts(b, &c));
  CHECK_INT(c.calls, 0);
  CHECK_INT(c.rejected, 0);
  CHECK_OK(mulligan_breaker_disable(b));
  fail_once(b);
  fail_once(b);
  fail_once(b);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_DISABLED);
  CHECK_OK(mulligan_breaker_metrics_only(b));
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_METRICS_ONLY);
  CHECK_INT(log.count, 9);

  /* Bad arguments. */
  CHECK_FAILS(mulligan_breaker_record(b, &p, 7, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "mulligan_call_result");
  CHECK_FAILS(mulligan_breaker_record(b, &p, MULLIGAN_CALL_SUCCESS, NAN),
              MULLIGAN_E_INVALID_ARGUMENT, "duration_ms must be finite");
  q.struct_size = 4;
  CHECK_FAILS(mulligan_breaker_acquire(b, &q), MULLIGAN_E_INVALID_ARGUMENT, "struct_size");
  CHECK_FAILS(mulligan_breaker_remove_listener(b, 999), MULLIGAN_E_INVALID_ARGUMENT,
              "no listener");

  CHECK_OK(mulligan_breaker_remove_listener(b, id));
  CHECK_INT(log.freed, 1);
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

static void test_permit_from_another_breaker(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *a, *b;
  mulligan_breaker_permit p = MULLIGAN_BREAKER_PERMIT_INIT;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  a = make_breaker(clock, 1, 1000.0, 1);
  b = make_breaker(clock, 1, 1000.0, 1);
  CHECK_OK(mulligan_breaker_acquire(a, &p));
  CHECK_FAILS(mulligan_breaker_record(b, &p, MULLIGAN_CALL_FAILURE, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "another breaker");
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);
  mulligan_breaker_destroy(a);
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

static int succeed(void *user_data) { ++*(int *)user_data; return 0; }
static int fail(void *user_data) { ++*(int *)user_data; return 5; }

static void test_execute(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  int calls = 0, rc = -1;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  b = make_breaker(clock, 2, 1000.0, 1);
  CHECK_OK(mulligan_breaker_execute(b, succeed, &calls, &rc));
  CHECK_INT(rc, 0);
  CHECK_FAILS(mulligan_breaker_execute(b, fail, &calls, &rc), MULLIGAN_E_CALLBACK, "returned 5");
  CHECK_INT(rc, 5);
  CHECK_FAILS(mulligan_breaker_execute(b, fail, &calls, NULL), MULLIGAN_E_CALLBACK, "returned 5");
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
  CHECK_FAILS(mulligan_breaker_execute(b, succeed, &calls, &rc), MULLIGAN_E_CIRCUIT_OPEN,
              "is open");
  CHECK_INT(calls, 3);
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

static int count_breaker(mulligan_breaker *breaker, void *user_data) {
  (void)breaker;
  ++*(int *)user_data;
  return 0;
}
static int stop_walk(mulligan_breaker *breaker, void *user_data) {
  (void)breaker;
  (void)user_data;
  return 1;
}

static void test_registry(void) {
  mulligan_breaker_registry *r = NULL;
  mulligan_breaker *a = NULL, *a2 = NULL, *x = NULL;
  mulligan_breaker_options *o = NULL;
  int seen = 0, i;
  char key[32];
  CHECK_OK(mulligan_breaker_options_create(&o));
  CHECK_OK(mulligan_breaker_options_set_failure_threshold(o, 1));
  CHECK_OK(mulligan_breaker_registry_create(&r, o, 50));
  mulligan_breaker_options_destroy(o);
  CHECK_OK(mulligan_breaker_registry_get(r, "https://a:443", &a));
  fail_once(a);
  CHECK_OK(mulligan_breaker_registry_get(r, "https://a:443", &a2));
  CHECK_INT(mulligan_breaker_state_now(a2), MULLIGAN_BREAKER_OPEN); /* never reset */
  CHECK_STR(mulligan_breaker_name(a2), "https://a:443");
  CHECK_FAILS(mulligan_breaker_registry_get(r, "", &x), MULLIGAN_E_INVALID_ARGUMENT, "key");
  CHECK(x == NULL);
  for (i = 0; i < 1000; ++i) {
    snprintf(key, sizeof key, "user-%d", i);
    CHECK_OK(mulligan_breaker_registry_get(r, key, &x));
    mulligan_breaker_destroy(x); /* idle: evictable */
  }
  CHECK(mulligan_breaker_registry_size(r) <= 50);
  CHECK_OK(mulligan_breaker_registry_foreach(r, count_breaker, &seen));
  CHECK_INT(seen, (int)mulligan_breaker_registry_size(r));
  CHECK_FAILS(mulligan_breaker_registry_foreach(r, stop_walk, NULL), MULLIGAN_E_CALLBACK,
              "returned 1");
  /* The open breaker held by handles survived the churn. */
  CHECK_OK(mulligan_breaker_registry_get(r, "https://a:443", &x));
  CHECK_INT(mulligan_breaker_state_now(x), MULLIGAN_BREAKER_OPEN);
  mulligan_breaker_destroy(x);
  mulligan_breaker_destroy(a);
  mulligan_breaker_destroy(a2);
  mulligan_breaker_registry_destroy(r);
}

typedef struct attempt_log {
  int calls;
  int fail_until; /* attempts < fail_until fail with 503 */
  int abort_at;
  int status; /* the failing status; 0 means 503 */
} attempt_log;

static int run_attempt(int attempt_number, mulligan_outcome *out, void *user_data) {
  attempt_log *log = (attempt_log *)user_data;
  log->calls++;
  CHECK_INT(attempt_number, log->calls);
  if (attempt_number == log->abort_at) return -3;
  if (attempt_number < log->fail_until) out->http_status = log->status ? log->status : 503;
  return 0;
}

static mulligan_retry_policy *policy_with(int attempts) {
  mulligan_retry_options *o = NULL;
  mulligan_retry_policy *p = NULL;
  CHECK_OK(mulligan_retry_options_create(&o));
  CHECK_OK(mulligan_retry_options_set_max_attempts(o, attempts));
  CHECK_OK(mulligan_retry_options_set_jitter(o, MULLIGAN_JITTER_NONE));
  CHECK_OK(mulligan_retry_policy_create(&p, o));
  mulligan_retry_options_destroy(o);
  return p;
}

/* Sets the "record every attempt in the breaker" switch under its one name,
 * breaker_per_attempt, or under its deprecated 0.1 spelling, which must
 * keep working (STYLE.md 3.8: deprecated, never removed before 1.0). */
static void set_per_attempt(mulligan_retry_call_options *opts, int old_spelling, int value) {
  if (old_spelling) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    opts->breaker_record_each_attempt = value;
#pragma GCC diagnostic pop
  } else {
    opts->breaker_per_attempt = value;
  }
}

/* Runs with either spelling of the per-attempt switch (old_spelling 1: the
 * deprecated breaker_record_each_attempt). */
static void test_retry_call(int old_spelling) {
  mulligan_clock *clock = NULL;
  mulligan_retry_policy *policy = policy_with(5);
  mulligan_retry_call_options opts = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  mulligan_retry_call_info info = MULLIGAN_RETRY_CALL_INFO_INIT;
  attempt_log log;
  mulligan_breaker *b;
  mulligan_breaker_counts c = MULLIGAN_BREAKER_COUNTS_INIT;
  double t0;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  opts.clock = clock;

  /* Success on the 3rd attempt after waits of 200 and 400 ms (fake clock). */
  memset(&log, 0, sizeof log);
  log.fail_until = 3;
  t0 = mulligan_clock_now_ms(clock);
  CHECK_OK(mulligan_retry_call(policy, run_attempt, &log, &opts, &info));
  CHECK_INT(info.attempts, 3);
  CHECK_INT(info.stop_reason, MULLIGAN_STOP_SUCCEEDED);
  CHECK_NEAR(info.total_delay_ms, 600.0, 1e-6);
  CHECK_NEAR(mulligan_clock_now_ms(clock) - t0, 600.0, 1e-6);
  CHECK_INT(info.last_decision.attempt, 3);

  /* Always failing: exhausted. */
  memset(&log, 0, sizeof log);
  log.fail_until = 100;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &log, &opts, &info),
              MULLIGAN_E_RETRIES_EXHAUSTED, "attempts_exhausted");
  CHECK_INT(log.calls, 5);
  CHECK_INT(info.stop_reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);

  /* A non-zero callback return aborts. */
  memset(&log, 0, sizeof log);
  log.fail_until = 100;
  log.abort_at = 2;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &log, &opts, &info), MULLIGAN_E_CALLBACK,
              "returned -3");
  CHECK_INT(log.calls, 2);

  /* The case: 5 attempts around a threshold-3 breaker, per attempt. */
  b = make_breaker(clock, 3, 30000.0, 1);
  opts.breaker = b;
  set_per_attempt(&opts, old_spelling, 1);
  memset(&log, 0, sizeof log);
  log.fail_until = 100;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &log, &opts, &info),
              MULLIGAN_E_CIRCUIT_OPEN, "circuit breaker 'db' is open; next probe in 29.200 s");
  CHECK_INT(log.calls, 3);
  CHECK_INT(info.attempts, 3);
  CHECK_INT(info.circuit_open, 1);
  CHECK_NEAR(info.retry_in_ms, 29200.0, 1e-6);
  CHECK_INT(info.stop_reason, MULLIGAN_STOP_NONE);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
  mulligan_breaker_destroy(b);

  /* Per call (the default): one failure per logical call. */
  b = make_breaker(clock, 3, 30000.0, 1);
  opts.breaker = b;
  set_per_attempt(&opts, old_spelling, 0);
  memset(&log, 0, sizeof log);
  log.fail_until = 100;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &log, &opts, &info),
              MULLIGAN_E_RETRIES_EXHAUSTED, "gave up");
  CHECK_INT(log.calls, 5);
  CHECK_OK(mulligan_breaker_get_counts(b, &c));
  CHECK_INT(c.failures, 1);
  CHECK_INT(c.calls, 1);
  CHECK_INT(c.consecutive_failures, 1);
  mulligan_breaker_destroy(b);

  /* A terminal outcome is ignored by the breaker and reported UNAVAILABLE. */
  b = make_breaker(clock, 1, 30000.0, 1);
  opts.breaker = b;
  memset(&log, 0, sizeof log);
  log.fail_until = 100;
  log.status = 404;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &log, &opts, &info),
              MULLIGAN_E_UNAVAILABLE, "terminal");
  CHECK_INT(log.calls, 1);
  CHECK_INT(info.stop_reason, MULLIGAN_STOP_TERMINAL);
  CHECK_OK(mulligan_breaker_get_counts(b, &c));
  CHECK_INT(c.ignored, 1);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);
  mulligan_breaker_destroy(b);

  CHECK_FAILS(mulligan_retry_call(NULL, run_attempt, &log, &opts, &info),
              MULLIGAN_E_INVALID_ARGUMENT, "policy must not be NULL");
  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
}

/* A caller compiled against 0.1 headers passes a struct_size that ends before
 * breaker_per_attempt: its old field still turns per-attempt recording on,
 * and whatever lies past its struct is not read. */
static void test_retry_call_old_options_size(void) {
  mulligan_clock *clock = NULL;
  mulligan_retry_policy *policy = policy_with(5);
  mulligan_retry_call_options opts = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  mulligan_retry_call_info info = MULLIGAN_RETRY_CALL_INFO_INIT;
  attempt_log log;
  mulligan_breaker *b;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  opts.clock = clock;
  opts.struct_size = (uint32_t)offsetof(mulligan_retry_call_options, breaker_per_attempt);

  /* The 0.1 field: tripped by the 3rd attempt (threshold 3, per attempt). */
  b = make_breaker(clock, 3, 30000.0, 1);
  opts.breaker = b;
  set_per_attempt(&opts, 1, 1);
  memset(&log, 0, sizeof log);
  log.fail_until = 100;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &log, &opts, &info),
              MULLIGAN_E_CIRCUIT_OPEN, "circuit breaker 'db' is open");
  CHECK_INT(log.calls, 3);
  mulligan_breaker_destroy(b);

  /* breaker_per_attempt lies beyond this caller's struct: not read, so one
   * result per call (all 5 attempts run, one failure recorded). */
  b = make_breaker(clock, 3, 30000.0, 1);
  opts.breaker = b;
  set_per_attempt(&opts, 1, 0);
  opts.breaker_per_attempt = 1;
  memset(&log, 0, sizeof log);
  log.fail_until = 100;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &log, &opts, &info),
              MULLIGAN_E_RETRIES_EXHAUSTED, "gave up after 5 attempt(s)");
  CHECK_INT(log.calls, 5);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);
  mulligan_breaker_destroy(b);

  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
}

int main(void) {
  test_options_validation();
  test_state_script();
  test_permit_from_another_breaker();
  test_execute();
  test_registry();
  test_retry_call(0);
  test_retry_call(1);
  test_retry_call_old_options_size();
  return CHECK_REPORT();
}
