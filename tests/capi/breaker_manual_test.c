/* tests/capi/breaker_manual_test.c — forced open for a duration or until an
 * instant, manual half-open and the half-open time limit through the C ABI.
 * Fake clock, no threads; expected states worked out by hand. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan.h"

typedef struct reasons {
  int count;
  char reason[8][40];
} reasons;

static int on_transition(const mulligan_breaker_transition *t, void *user_data) {
  reasons *log = (reasons *)user_data;
  if (log->count < 8) snprintf(log->reason[log->count], sizeof log->reason[0], "%s", t->reason);
  log->count++;
  return 0;
}

static mulligan_breaker *make(mulligan_clock *clock, double max_half_open_ms) {
  mulligan_breaker_options *o = NULL;
  mulligan_breaker *b = NULL;
  CHECK_OK(mulligan_breaker_options_create(&o));
  CHECK_OK(mulligan_breaker_options_set_name(o, "capi-manual"));
  CHECK_OK(mulligan_breaker_options_set_failure_threshold(o, 1));
  CHECK_OK(mulligan_breaker_options_set_reset_timeout_ms(o, 10000.0));
  if (max_half_open_ms > 0) {
    CHECK_OK(mulligan_breaker_options_set_max_half_open_duration_ms(o, max_half_open_ms));
  }
  CHECK_OK(mulligan_breaker_options_set_clock(o, clock));
  CHECK_OK(mulligan_breaker_create(&b, o));
  mulligan_breaker_options_destroy(o);
  return b;
}

static void test_force_open_for_and_until(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_breaker_permit p = MULLIGAN_BREAKER_PERMIT_INIT;
  reasons log;
  memset(&log, 0, sizeof log);
  CHECK_OK(mulligan_clock_create_fake(&clock));
  b = make(clock, 0);
  CHECK_OK(mulligan_breaker_add_listener(b, on_transition, &log, NULL, NULL));

  CHECK_OK(mulligan_breaker_force_open_for_ms(b, 2000.0));
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
  CHECK_OK(mulligan_clock_advance_ms(clock, 1500.0));
  CHECK_INT(mulligan_breaker_acquire(b, &p), MULLIGAN_E_CIRCUIT_OPEN);
  CHECK_NEAR(p.retry_in_ms, 500.0, 1e-6);
  CHECK_OK(mulligan_clock_advance_ms(clock, 500.0));
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_HALF_OPEN);
  CHECK_OK(mulligan_breaker_acquire(b, &p));
  CHECK_OK(mulligan_breaker_record(b, &p, MULLIGAN_CALL_SUCCESS, 1.0));
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);

  CHECK_OK(mulligan_breaker_force_open_until_ms(b, mulligan_clock_now_ms(clock) + 3000.0));
  CHECK_NEAR(mulligan_breaker_time_until_probe_ms(b), 3000.0, 1e-6);

  CHECK_INT(log.count, 4);
  CHECK_STR(log.reason[0], "forced_open_until");
  CHECK_STR(log.reason[1], "reset_timeout_elapsed");
  CHECK_STR(log.reason[2], "probe_succeeded");
  CHECK_STR(log.reason[3], "forced_open_until");

  /* Bad input changes nothing. */
  CHECK_FAILS(mulligan_breaker_force_open_for_ms(b, 0.0), MULLIGAN_E_INVALID_ARGUMENT,
              "duration_ms");
  CHECK_FAILS(mulligan_breaker_force_open_for_ms(b, NAN), MULLIGAN_E_INVALID_ARGUMENT,
              "duration_ms");
  CHECK_FAILS(mulligan_breaker_force_open_until_ms(b, mulligan_clock_now_ms(clock)),
              MULLIGAN_E_INVALID_ARGUMENT, "must be after now");
  CHECK_FAILS(mulligan_breaker_force_open_until_ms(b, INFINITY), MULLIGAN_E_INVALID_ARGUMENT,
              "until_ms");
  CHECK_FAILS(mulligan_breaker_half_open(NULL), MULLIGAN_E_INVALID_ARGUMENT, "breaker");
  CHECK_INT(log.count, 4);
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

static void test_half_open_and_its_limit(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_breaker_permit lost = MULLIGAN_BREAKER_PERMIT_INIT;
  mulligan_breaker_permit p = MULLIGAN_BREAKER_PERMIT_INIT;
  mulligan_breaker_counts c = MULLIGAN_BREAKER_COUNTS_INIT;
  mulligan_breaker_options *o = NULL;
  reasons log;
  memset(&log, 0, sizeof log);
  CHECK_OK(mulligan_clock_create_fake(&clock));
  b = make(clock, 5000.0);
  CHECK_OK(mulligan_breaker_add_listener(b, on_transition, &log, NULL, NULL));

  CHECK_OK(mulligan_breaker_half_open(b)); /* manual: half-open now, limit in 5 s */
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_HALF_OPEN);
  CHECK_OK(mulligan_breaker_acquire(b, &lost)); /* a probe that never returns */
  CHECK(lost.probe == 1);
  CHECK_OK(mulligan_clock_advance_ms(clock, 4999.0));
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_HALF_OPEN);
  CHECK_OK(mulligan_clock_advance_ms(clock, 1.0));
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
  CHECK_OK(mulligan_clock_advance_ms(clock, 1000.0)); /* 1 s after the limit */
  CHECK_INT(mulligan_breaker_acquire(b, &p), MULLIGAN_E_CIRCUIT_OPEN);
  CHECK_NEAR(p.retry_in_ms, 9000.0, 1e-6); /* reopened at the limit for 10 s */
  CHECK_OK(mulligan_breaker_record(b, &lost, MULLIGAN_CALL_SUCCESS, -1));
  CHECK_OK(mulligan_breaker_get_counts(b, &c));
  CHECK_INT(c.stale, 1);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);

  CHECK_INT(log.count, 2);
  CHECK_STR(log.reason[0], "half_open");
  CHECK_STR(log.reason[1], "half_open_timeout");

  CHECK_OK(mulligan_breaker_options_create(&o));
  CHECK_FAILS(mulligan_breaker_options_set_max_half_open_duration_ms(o, 0.0),
              MULLIGAN_E_INVALID_ARGUMENT, "max_half_open_duration_ms");
  CHECK_FAILS(mulligan_breaker_options_set_max_half_open_duration_ms(o, NAN),
              MULLIGAN_E_INVALID_ARGUMENT, "max_half_open_duration_ms");
  mulligan_breaker_options_destroy(o);
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

int main(void) {
  test_force_open_for_and_until();
  test_half_open_and_its_limit();
  return CHECK_REPORT();
}
