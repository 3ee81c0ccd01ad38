/* tests/capi/breaker_observability_test.c — what an operator sees of a breaker
 * through the C ABI: stale results counted, the last trip's figures, call
 * events, the breaker's own counts in mulligan_metrics_json() and one metrics
 * name per live breaker. Fake clock, no threads; expected values by hand. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan.h"

static mulligan_breaker *make(mulligan_clock *clock, const char *name, int threshold) {
  mulligan_breaker_options *o = NULL;
  mulligan_breaker *b = NULL;
  CHECK_OK(mulligan_breaker_options_create(&o));
  CHECK_OK(mulligan_breaker_options_set_name(o, name));
  CHECK_OK(mulligan_breaker_options_set_failure_threshold(o, threshold));
  CHECK_OK(mulligan_breaker_options_set_reset_timeout_ms(o, 10000.0));
  CHECK_OK(mulligan_breaker_options_set_clock(o, clock));
  CHECK_OK(mulligan_breaker_create(&b, o));
  mulligan_breaker_options_destroy(o);
  return b;
}

static void call(mulligan_breaker *b, int result) {
  mulligan_breaker_permit p = MULLIGAN_BREAKER_PERMIT_INIT;
  CHECK_OK(mulligan_breaker_acquire(b, &p));
  CHECK_OK(mulligan_breaker_record(b, &p, result, 1.0));
}

typedef struct call_log {
  int count;
  char events[16][48];
  double at_ms[16];
  int freed;
} call_log;

static int on_call(const mulligan_breaker_call_event *e, void *user_data) {
  call_log *log = (call_log *)user_data;
  if (log->count < 16) {
    snprintf(log->events[log->count], sizeof log->events[0], "%s/%s%s",
             mulligan_breaker_call_kind_str(e->kind), mulligan_breaker_state_str(e->state),
             e->stale ? "/stale" : "");
    log->at_ms[log->count] = e->at_ms;
  }
  log->count++;
  return 0;
}

static void free_log(void *user_data) { ((call_log *)user_data)->freed++; }

static void test_stale_trip_and_events(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_breaker_permit early = MULLIGAN_BREAKER_PERMIT_INIT;
  mulligan_breaker_permit refused = MULLIGAN_BREAKER_PERMIT_INIT;
  mulligan_breaker_counts c = MULLIGAN_BREAKER_COUNTS_INIT;
  mulligan_breaker_trip trip = MULLIGAN_BREAKER_TRIP_INIT;
  call_log log;
  uint64_t id = 0;
  double t0;
  memset(&log, 0, sizeof log);
  CHECK_OK(mulligan_clock_create_fake(&clock));
  t0 = mulligan_clock_now_ms(clock);
  b = make(clock, "capi-observed", 2);
  CHECK_OK(mulligan_breaker_add_call_listener(b, on_call, &log, free_log, &id));
  CHECK(id != 0);

  CHECK_OK(mulligan_breaker_get_last_trip(b, &trip));
  CHECK_INT(trip.tripped, 0);
  CHECK_STR(trip.reason, "");

  CHECK_OK(mulligan_breaker_acquire(b, &early)); /* before the trip */
  call(b, MULLIGAN_CALL_SUCCESS);
  call(b, MULLIGAN_CALL_FAILURE);
  CHECK_OK(mulligan_clock_advance_ms(clock, 500.0));
  call(b, MULLIGAN_CALL_FAILURE); /* the 2nd consecutive failure: opens */
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
  CHECK_INT(mulligan_breaker_acquire(b, &refused), MULLIGAN_E_CIRCUIT_OPEN);
  /* The early permit's result changes nothing but is counted as stale. */
  CHECK_OK(mulligan_breaker_record(b, &early, MULLIGAN_CALL_SUCCESS, 1.0));
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);

  CHECK_OK(mulligan_breaker_get_counts(b, &c));
  CHECK_INT(c.calls, 3);
  CHECK_INT(c.successes, 1);
  CHECK_INT(c.failures, 2);
  CHECK_INT(c.rejected, 1);
  CHECK_INT(c.stale, 1);

  CHECK_OK(mulligan_breaker_get_last_trip(b, &trip));
  CHECK_INT(trip.tripped, 1);
  CHECK_INT(trip.from, MULLIGAN_BREAKER_CLOSED);
  CHECK_STR(trip.reason, "failure_threshold");
  CHECK_NEAR(trip.at_ms, t0 + 500.0, 1e-6);
  CHECK_INT(trip.consecutive_failures, 2);
  CHECK_INT(trip.window_calls, 0);

  CHECK_INT(log.count, 5);
  CHECK_STR(log.events[0], "success/closed");
  CHECK_STR(log.events[1], "failure/closed");
  CHECK_STR(log.events[2], "failure/closed");
  CHECK_STR(log.events[3], "rejected/open");
  CHECK_STR(log.events[4], "success/open/stale");
  CHECK_NEAR(log.at_ms[3], t0 + 500.0, 1e-6);

  CHECK_OK(mulligan_breaker_remove_call_listener(b, id));
  CHECK_INT(log.freed, 1);
  CHECK_FAILS(mulligan_breaker_remove_call_listener(b, id), MULLIGAN_E_INVALID_ARGUMENT,
              "no call listener");
  CHECK_OK(mulligan_breaker_reset(b));
  CHECK_OK(mulligan_breaker_get_last_trip(b, &trip));
  CHECK_INT(trip.tripped, 0);
  CHECK_OK(mulligan_breaker_get_counts(b, &c));
  CHECK_INT(c.stale, 0);
  call(b, MULLIGAN_CALL_SUCCESS);
  CHECK_INT(log.count, 5); /* removed: no more events */

  /* Bad input. */
  CHECK_FAILS(mulligan_breaker_add_call_listener(b, NULL, NULL, NULL, NULL),
              MULLIGAN_E_INVALID_ARGUMENT, "listener");
  CHECK_FAILS(mulligan_breaker_get_last_trip(NULL, &trip), MULLIGAN_E_INVALID_ARGUMENT,
              "breaker");
  trip.struct_size = 8;
  CHECK_FAILS(mulligan_breaker_get_last_trip(b, &trip), MULLIGAN_E_INVALID_ARGUMENT,
              "MULLIGAN_BREAKER_TRIP_INIT");
  CHECK_STR(mulligan_breaker_call_kind_str(MULLIGAN_BREAKER_CALL_REJECTED), "rejected");
  CHECK_STR(mulligan_breaker_call_kind_str(9), "unknown");
  CHECK_STR(mulligan_breaker_reported_name(NULL), "");
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

/* A 0.1 caller's counts struct ends before `stale`: it is left alone. */
static void test_old_counts_size(void) {
  mulligan_breaker *b = make(NULL, "capi-old-counts", 1);
  struct {
    mulligan_breaker_counts c;
  } wrapped;
  memset(&wrapped, 0xAB, sizeof wrapped);
  wrapped.c.struct_size = (uint32_t)offsetof(mulligan_breaker_counts, stale);
  CHECK_OK(mulligan_breaker_get_counts(b, &wrapped.c));
  CHECK_INT(wrapped.c.calls, 0);
  CHECK(wrapped.c.stale == 0xABABABABABABABABull);
  mulligan_breaker_destroy(b);
}

static void test_metrics_json_and_names(void) {
  mulligan_breaker *first = make(NULL, "capi-metrics-twice", 1);
  mulligan_breaker *second = make(NULL, "capi-metrics-twice", 1);
  static char json[1 << 20];
  size_t needed = 0;
  CHECK_STR(mulligan_breaker_reported_name(first), "capi-metrics-twice");
  CHECK_STR(mulligan_breaker_reported_name(second), "capi-metrics-twice#2");
  call(second, MULLIGAN_CALL_FAILURE);
  CHECK_OK(mulligan_metrics_json(json, sizeof json, &needed));
  CHECK(needed <= sizeof json);
  /* The second breaker's own counts, under its own name. */
  CHECK(strstr(json, "\"name\":\"capi-metrics-twice#2\"") != NULL);
  CHECK(strstr(json, "\"breaker\":{\"calls\":1,\"successes\":0,\"failures\":1,") != NULL);
  CHECK(strstr(json, "\"reason\":\"failure_threshold\"") != NULL);
  mulligan_breaker_destroy(first);
  mulligan_breaker_destroy(second);
}

int main(void) {
  test_stale_trip_and_events();
  test_old_counts_size();
  test_metrics_json_and_names();
  return CHECK_REPORT();
}
