/* tests/capi/metrics_test.c — metrics and events through the C ABI: exact
 * counters after scripted mulligan_retry_call runs on a fake clock, the
 * Prometheus and JSON exports with their buffer protocol, the status gauges,
 * event listeners (sequence, kinds_mask, free_user_data) and bad input.
 * Single-threaded; the registry is process-wide, so each case resets it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan.h"

/* ---- helpers ------------------------------------------------------------- */

typedef struct script {
  int calls;
  int fail_until;    /* attempts below this fail */
  int error_kind;    /* how they fail: 0 = HTTP 503 */
  int abort_at;      /* return non-zero at this attempt (0 = never) */
  int64_t seen_in_flight;  /* mulligan_metrics_status() read during attempt 1 */
} script;

static int run_attempt(int attempt_number, mulligan_outcome *out, void *user_data) {
  script *s = (script *)user_data;
  s->calls++;
  if (attempt_number == 1) {
    int64_t waiting = -1;
    CHECK_OK(mulligan_metrics_status(&s->seen_in_flight, &waiting));
    CHECK_INT(waiting, 0);
  }
  if (attempt_number == s->abort_at) return -7;
  if (attempt_number < s->fail_until) {
    if (s->error_kind != MULLIGAN_ERROR_NONE) {
      out->error_kind = s->error_kind;
    } else {
      out->http_status = 503;
    }
  }
  return 0;
}

static mulligan_retry_policy *make_policy(int attempts) {
  mulligan_retry_options *o = NULL;
  mulligan_retry_policy *p = NULL;
  CHECK_OK(mulligan_retry_options_create(&o));
  CHECK_OK(mulligan_retry_options_set_max_attempts(o, attempts));
  CHECK_OK(mulligan_retry_options_set_jitter(o, MULLIGAN_JITTER_NONE));
  CHECK_OK(mulligan_retry_policy_create(&p, o));
  mulligan_retry_options_destroy(o);
  return p;
}

/* Returns the Prometheus text in a malloc'ed buffer (free() it). */
static char *prometheus_text(void) {
  size_t needed = 0;
  char *buf;
  CHECK_OK(mulligan_metrics_prometheus(NULL, 0, &needed));
  buf = (char *)malloc(needed);
  CHECK(buf != NULL);
  CHECK_OK(mulligan_metrics_prometheus(buf, needed, &needed));
  return buf;
}

static char *json_text(void) {
  size_t needed = 0;
  char *buf;
  CHECK_OK(mulligan_metrics_json(NULL, 0, &needed));
  buf = (char *)malloc(needed);
  CHECK(buf != NULL);
  CHECK_OK(mulligan_metrics_json(buf, needed, &needed));
  return buf;
}

#define CHECK_CONTAINS(text, fragment)                                              \
  do {                                                                            \
    ++check_count;                                                                \
    if (strstr((text), (fragment)) == NULL) {                                     \
      ++check_failures;                                                           \
      fprintf(stderr, "%s:%d: text does not contain \"%s\"\n", __FILE__, __LINE__, \
              (fragment));                                                        \
    }                                                                             \
  } while (0)

#define CHECK_NOT_CONTAINS(text, fragment)                                          \
  do {                                                                            \
    ++check_count;                                                                \
    if (strstr((text), (fragment)) != NULL) {                                     \
      ++check_failures;                                                           \
      fprintf(stderr, "%s:%d: text contains \"%s\"\n", __FILE__, __LINE__, (fragment)); \
    }                                                                             \
  } while (0)

/* ---- event recorder ------------------------------------------------------ */

#define MAX_EVENTS 64

typedef struct recorded {
  int kind;
  char name[32];
  int attempt;
  double delay_ms;
  int error_kind;
  int http_status;
  int retry_reason;
  int stop_reason;
  int from_state;
  int to_state;
  char transition_reason[32];
  double elapsed_ms;
  int64_t waiting_to_retry; /* mulligan_metrics_status() read in the callback */
} recorded;

typedef struct recorder {
  recorded events[MAX_EVENTS];
  int count;
  int freed;
} recorder;

static int record_event(const mulligan_event *e, void *user_data) {
  recorder *r = (recorder *)user_data;
  recorded *x;
  int64_t in_flight = 0;
  CHECK(e->struct_size >= sizeof(mulligan_event));
  CHECK(e->name != NULL);
  CHECK(e->transition_reason != NULL);
  if (r->count >= MAX_EVENTS) return 0;
  x = &r->events[r->count++];
  x->kind = e->kind;
  strncpy(x->name, e->name, sizeof x->name - 1);
  x->name[sizeof x->name - 1] = '\0';
  x->attempt = e->attempt;
  x->delay_ms = e->delay_ms;
  x->error_kind = e->error_kind;
  x->http_status = e->http_status;
  x->retry_reason = e->retry_reason;
  x->stop_reason = e->stop_reason;
  x->from_state = e->from_state;
  x->to_state = e->to_state;
  strncpy(x->transition_reason, e->transition_reason, sizeof x->transition_reason - 1);
  x->transition_reason[sizeof x->transition_reason - 1] = '\0';
  x->elapsed_ms = e->elapsed_ms;
  /* Listeners may call back into mulligan. */
  CHECK_OK(mulligan_metrics_status(&in_flight, &x->waiting_to_retry));
  return 0;
}

static void free_recorder(void *user_data) { ((recorder *)user_data)->freed++; }

static void check_kinds(const recorder *r, const int *kinds, int n, int line) {
  int i;
  ++check_count;
  if (r->count != n) {
    ++check_failures;
    fprintf(stderr, "metrics_test.c:%d: %d events, expected %d:", line, r->count, n);
    for (i = 0; i < r->count; ++i) fprintf(stderr, " %d", r->events[i].kind);
    fprintf(stderr, "\n");
    return;
  }
  for (i = 0; i < n; ++i) {
    if (r->events[i].kind != kinds[i]) {
      ++check_failures;
      fprintf(stderr, "metrics_test.c:%d: event %d is kind %d, expected %d\n", line, i,
              r->events[i].kind, kinds[i]);
      return;
    }
  }
}

/* ---- cases --------------------------------------------------------------- */

/* The case: a call succeeding on its 3rd attempt counts 1 call, 3
 * attempts, 2 retries, 1 success; a call that gives up counts a failure. */
static void test_counters_and_exports(void) {
  mulligan_clock *clock = NULL;
  mulligan_retry_policy *policy = make_policy(5);
  mulligan_retry_call_options opts = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  mulligan_metrics_snapshot snap = MULLIGAN_METRICS_SNAPSHOT_INIT;
  script s;
  char *text;
  int64_t in_flight = -1, waiting = -1;

  CHECK_OK(mulligan_metrics_reset());
  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK(opts.metrics_name == NULL); /* the INIT macro leaves metrics off */
  opts.clock = clock;
  opts.metrics_name = "c-test";

  memset(&s, 0, sizeof s);
  s.fail_until = 3;
  CHECK_OK(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL));
  CHECK_INT(s.calls, 3);
  CHECK_INT(s.seen_in_flight, 1); /* the call was in flight during its attempt */

  CHECK_OK(mulligan_metrics_get("c-test", &snap));
  CHECK_INT(snap.calls, 1);
  CHECK_INT(snap.attempts, 3);
  CHECK_INT(snap.retries, 2);
  CHECK_INT(snap.retries_by_reason[MULLIGAN_RETRY_REASON_STATUS], 2);
  CHECK_INT(snap.successes, 1);
  CHECK_INT(snap.failures, 0);
  CHECK_INT(snap.fallbacks, 0);
  CHECK_INT(snap.short_circuits, 0);
  CHECK_INT(snap.circuit_opens, 0);
  CHECK_INT(snap.in_flight, 0);
  CHECK_INT(snap.waiting_to_retry, 0);
  CHECK_INT(snap.breaker_state, -1);

  /* Gives up after 5 refused connections: 4 transport retries, 1 failure. */
  memset(&s, 0, sizeof s);
  s.fail_until = 100;
  s.error_kind = MULLIGAN_ERROR_CONNECTION_REFUSED;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL),
              MULLIGAN_E_RETRIES_EXHAUSTED, "attempts_exhausted");
  CHECK_OK(mulligan_metrics_get("c-test", &snap));
  CHECK_INT(snap.calls, 2);
  CHECK_INT(snap.attempts, 8);
  CHECK_INT(snap.retries, 6);
  CHECK_INT(snap.retries_by_reason[MULLIGAN_RETRY_REASON_STATUS], 2);
  CHECK_INT(snap.retries_by_reason[MULLIGAN_RETRY_REASON_TRANSPORT], 4);
  CHECK_INT(snap.retries_by_reason[MULLIGAN_RETRY_REASON_TIMEOUT], 0);
  CHECK_INT(snap.successes, 1);
  CHECK_INT(snap.failures, 1);
  CHECK_INT(snap.in_flight, 0);
  CHECK_INT(snap.waiting_to_retry, 0);

  /* A first-attempt success under another name. */
  memset(&s, 0, sizeof s);
  opts.metrics_name = "c-other";
  CHECK_OK(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL));
  CHECK_OK(mulligan_metrics_get("c-other", &snap));
  CHECK_INT(snap.calls, 1);
  CHECK_INT(snap.successes, 1);

  CHECK_OK(mulligan_metrics_status(&in_flight, &waiting));
  CHECK_INT(in_flight, 0);
  CHECK_INT(waiting, 0);

  text = prometheus_text();
  CHECK_CONTAINS(text, "# TYPE mulligan_calls_total counter\n");
  CHECK_CONTAINS(text, "\nmulligan_calls_total{name=\"c-test\"} 2\n");
  CHECK_CONTAINS(text, "\nmulligan_calls_total{name=\"c-other\"} 1\n");
  CHECK_CONTAINS(text, "\nmulligan_attempts_total{name=\"c-test\"} 8\n");
  CHECK_CONTAINS(text, "\nmulligan_retries_total{name=\"c-test\",reason=\"status\"} 2\n");
  CHECK_CONTAINS(text, "\nmulligan_retries_total{name=\"c-test\",reason=\"transport\"} 4\n");
  CHECK_CONTAINS(text, "\nmulligan_successes_total{name=\"c-test\"} 1\n");
  CHECK_CONTAINS(text, "\nmulligan_failures_total{name=\"c-test\"} 1\n");
  CHECK_CONTAINS(text, "\nmulligan_calls_in_flight{name=\"c-test\"} 0\n");
  CHECK_CONTAINS(text, "# TYPE mulligan_call_duration_seconds histogram\n");
  free(text);

  text = json_text();
  CHECK(text[0] == '{');
  CHECK_CONTAINS(text, "\"totals\"");
  CHECK_CONTAINS(text, "\"name\":\"c-test\"");
  CHECK_CONTAINS(text, "\"calls\":3"); /* totals: 2 + 1 */
  free(text);

  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
}

/* snprintf's protocol: size query with NULL, truncated prefix, exact fit. */
static void test_buffer_protocol(void) {
  mulligan_clock *clock = NULL;
  mulligan_retry_policy *policy = make_policy(2);
  mulligan_retry_call_options opts = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  script s;
  char *full;
  char small[16];
  size_t needed = 0, len;

  CHECK_OK(mulligan_metrics_reset());
  CHECK_OK(mulligan_clock_create_fake(&clock));
  opts.clock = clock;
  opts.metrics_name = "c-buf";
  memset(&s, 0, sizeof s);
  CHECK_OK(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL));

  full = prometheus_text();
  len = strlen(full);
  CHECK(len > sizeof small);

  CHECK_OK(mulligan_metrics_prometheus(NULL, 0, &needed));
  CHECK_INT(needed, len + 1);

  memset(small, 'x', sizeof small);
  needed = 0;
  CHECK_OK(mulligan_metrics_prometheus(small, sizeof small, &needed));
  CHECK_INT(needed, len + 1); /* needed > size: truncated */
  CHECK_INT(strlen(small), sizeof small - 1);
  CHECK(memcmp(small, full, sizeof small - 1) == 0);

  memset(small, 'x', sizeof small);
  CHECK_OK(mulligan_metrics_prometheus(small, 1, NULL)); /* needed may be NULL */
  CHECK_INT(small[0], '\0');
  CHECK_INT(small[1], 'x'); /* nothing beyond size is written */

  {
    char *exact = (char *)malloc(len + 1);
    CHECK_OK(mulligan_metrics_prometheus(exact, len + 1, &needed));
    CHECK_INT(needed, len + 1);
    CHECK_STR(exact, full);
    free(exact);
  }
  free(full);

  needed = 123;
  CHECK_FAILS(mulligan_metrics_prometheus(NULL, 8, &needed), MULLIGAN_E_INVALID_ARGUMENT,
              "buf must not be NULL when size is 8");
  CHECK_INT(needed, 0);
  CHECK_FAILS(mulligan_metrics_json(NULL, 8, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "mulligan_metrics_json: buf must not be NULL");

  full = json_text();
  len = strlen(full);
  CHECK_OK(mulligan_metrics_json(small, sizeof small, &needed));
  CHECK_INT(needed, len + 1);
  CHECK(strncmp(small, full, sizeof small - 1) == 0);
  CHECK_INT(strlen(small), sizeof small - 1);
  free(full);

  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
}

/* The exact event sequence of a scripted call, kinds_mask filtering, and
 * free_user_data on removal. */
static void test_events(void) {
  static const int all_kinds[] = {
      MULLIGAN_EVENT_ATTEMPT_STARTED, MULLIGAN_EVENT_ATTEMPT_FAILED,
      MULLIGAN_EVENT_RETRY_SCHEDULED, MULLIGAN_EVENT_ATTEMPT_STARTED,
      MULLIGAN_EVENT_ATTEMPT_FAILED,  MULLIGAN_EVENT_RETRY_SCHEDULED,
      MULLIGAN_EVENT_ATTEMPT_STARTED, MULLIGAN_EVENT_SUCCEEDED};
  static const int masked_kinds[] = {MULLIGAN_EVENT_RETRY_SCHEDULED,
                                     MULLIGAN_EVENT_RETRY_SCHEDULED, MULLIGAN_EVENT_SUCCEEDED};
  static const int gave_up_kinds[] = {
      MULLIGAN_EVENT_ATTEMPT_STARTED, MULLIGAN_EVENT_ATTEMPT_FAILED,
      MULLIGAN_EVENT_RETRY_SCHEDULED, MULLIGAN_EVENT_ATTEMPT_STARTED,
      MULLIGAN_EVENT_ATTEMPT_FAILED,  MULLIGAN_EVENT_GAVE_UP};
  mulligan_clock *clock = NULL;
  mulligan_retry_policy *policy = make_policy(3);
  mulligan_retry_call_options opts = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  recorder *all = (recorder *)calloc(1, sizeof(recorder));
  recorder *masked = (recorder *)calloc(1, sizeof(recorder));
  uint64_t all_id = 0, masked_id = 0;
  script s;
  const recorded *e;

  CHECK_OK(mulligan_metrics_reset());
  CHECK_OK(mulligan_clock_create_fake(&clock));
  opts.clock = clock;
  opts.metrics_name = "c-events";

  CHECK_OK(mulligan_event_listener_add(record_event, all, free_recorder, 0, &all_id));
  CHECK(all_id != 0);
  CHECK_OK(mulligan_event_listener_add(
      record_event, masked, free_recorder,
      MULLIGAN_EVENT_MASK(MULLIGAN_EVENT_RETRY_SCHEDULED) |
          MULLIGAN_EVENT_MASK(MULLIGAN_EVENT_SUCCEEDED),
      &masked_id));
  CHECK(masked_id != 0 && masked_id != all_id);

  /* Succeeds on the 3rd attempt after 503, 503; waits 200 and 400 ms. */
  memset(&s, 0, sizeof s);
  s.fail_until = 3;
  CHECK_OK(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL));
  check_kinds(all, all_kinds, 8, __LINE__);
  check_kinds(masked, masked_kinds, 3, __LINE__);
  if (all->count == 8) {
    e = &all->events[0];
    CHECK_STR(e->name, "c-events");
    CHECK_INT(e->attempt, 1);
    e = &all->events[1];
    CHECK_INT(e->attempt, 1);
    CHECK_INT(e->http_status, 503);
    CHECK_INT(e->error_kind, MULLIGAN_ERROR_NONE);
    CHECK_INT(e->retry_reason, MULLIGAN_RETRY_REASON_STATUS);
    e = &all->events[2];
    CHECK_INT(e->attempt, 1);
    CHECK_NEAR(e->delay_ms, 200.0, 1e-6);
    CHECK_INT(e->http_status, 503);
    CHECK_INT(e->waiting_to_retry, 1); /* the retry is counted as waiting */
    e = &all->events[5];
    CHECK_INT(e->attempt, 2);
    CHECK_NEAR(e->delay_ms, 400.0, 1e-6);
    CHECK_NEAR(e->elapsed_ms, 200.0, 1e-6);
    e = &all->events[6];
    CHECK_INT(e->attempt, 3);
    CHECK_INT(e->waiting_to_retry, 0); /* the wait is over */
    e = &all->events[7];
    CHECK_STR(e->name, "c-events");
    CHECK_INT(e->attempt, 3);
    CHECK_INT(e->stop_reason, MULLIGAN_STOP_SUCCEEDED);
    CHECK_NEAR(e->elapsed_ms, 600.0, 1e-6);
    CHECK_STR(e->transition_reason, "");
  }

  /* Removal: free_user_data runs once, and no further event arrives. */
  CHECK_OK(mulligan_event_listener_remove(masked_id));
  CHECK_INT(masked->freed, 1);
  CHECK_INT(all->freed, 0);
  CHECK_FAILS(mulligan_event_listener_remove(masked_id), MULLIGAN_E_INVALID_ARGUMENT,
              "no event listener with id");

  all->count = 0;
  memset(&s, 0, sizeof s);
  s.fail_until = 100;
  s.error_kind = MULLIGAN_ERROR_TIMEOUT;
  {
    mulligan_retry_policy *two = make_policy(2);
    CHECK_FAILS(mulligan_retry_call(two, run_attempt, &s, &opts, NULL),
                MULLIGAN_E_RETRIES_EXHAUSTED, "gave up after 2 attempt(s)");
    mulligan_retry_policy_destroy(two);
  }
  check_kinds(all, gave_up_kinds, 6, __LINE__);
  if (all->count == 6) {
    CHECK_INT(all->events[1].error_kind, MULLIGAN_ERROR_TIMEOUT);
    CHECK_INT(all->events[1].retry_reason, MULLIGAN_RETRY_REASON_TIMEOUT);
    CHECK_INT(all->events[4].retry_reason, 0); /* no retry follows the last failure */
    CHECK_INT(all->events[5].attempt, 2);
    CHECK_INT(all->events[5].stop_reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  }
  CHECK_INT(masked->count, 3); /* unchanged since removal */

  CHECK_OK(mulligan_event_listener_remove(all_id));
  CHECK_INT(all->freed, 1);
  CHECK_INT(masked->freed, 1);

  /* A call without metrics_name emits nothing (checked with a new listener). */
  all->count = 0;
  all->freed = 0;
  CHECK_OK(mulligan_event_listener_add(record_event, all, NULL, 0, &all_id));
  opts.metrics_name = NULL;
  memset(&s, 0, sizeof s);
  CHECK_OK(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL));
  CHECK_INT(all->count, 0);
  CHECK_OK(mulligan_event_listener_remove(all_id));
  CHECK_INT(all->freed, 0); /* NULL free_user_data */

  free(all);
  free(masked);
  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
}

/* A breaker named like the call reports its state, transitions and refusals
 * under the same name; a refused call counts as a failure. */
static void test_breaker(void) {
  mulligan_clock *clock = NULL;
  mulligan_retry_policy *policy = make_policy(3);
  mulligan_retry_call_options opts = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  mulligan_metrics_snapshot snap = MULLIGAN_METRICS_SNAPSHOT_INIT;
  mulligan_breaker_options *bo = NULL;
  mulligan_breaker *b = NULL;
  recorder *r = (recorder *)calloc(1, sizeof(recorder));
  uint64_t id = 0;
  script s;
  char *text;

  CHECK_OK(mulligan_metrics_reset());
  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK_OK(mulligan_breaker_options_create(&bo));
  CHECK_OK(mulligan_breaker_options_set_name(bo, "c-brk"));
  CHECK_OK(mulligan_breaker_options_set_failure_threshold(bo, 1));
  CHECK_OK(mulligan_breaker_options_set_clock(bo, clock));
  CHECK_OK(mulligan_breaker_create(&b, bo));
  mulligan_breaker_options_destroy(bo);
  CHECK_OK(mulligan_event_listener_add(
      record_event, r, free_recorder,
      MULLIGAN_EVENT_MASK(MULLIGAN_EVENT_BREAKER_TRANSITION) |
          MULLIGAN_EVENT_MASK(MULLIGAN_EVENT_SHORT_CIRCUITED),
      &id));

  opts.clock = clock;
  opts.breaker = b;
  opts.metrics_name = "c-brk";
  memset(&s, 0, sizeof s);
  s.fail_until = 100;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL),
              MULLIGAN_E_RETRIES_EXHAUSTED, "gave up after 3 attempt(s)");
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
  memset(&s, 0, sizeof s);
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL),
              MULLIGAN_E_CIRCUIT_OPEN, "circuit breaker 'c-brk' is open");
  CHECK_INT(s.calls, 0);

  CHECK_OK(mulligan_metrics_get("c-brk", &snap));
  CHECK_INT(snap.calls, 2);
  CHECK_INT(snap.attempts, 3);
  CHECK_INT(snap.retries, 2);
  CHECK_INT(snap.successes, 0);
  CHECK_INT(snap.failures, 2);
  CHECK_INT(snap.short_circuits, 1);
  CHECK_INT(snap.circuit_opens, 1);
  CHECK_INT(snap.breaker_state, MULLIGAN_BREAKER_OPEN);
  CHECK_INT(snap.in_flight, 0);

  CHECK_INT(r->count, 2);
  if (r->count == 2) {
    CHECK_INT(r->events[0].kind, MULLIGAN_EVENT_BREAKER_TRANSITION);
    CHECK_STR(r->events[0].name, "c-brk");
    CHECK_INT(r->events[0].from_state, MULLIGAN_BREAKER_CLOSED);
    CHECK_INT(r->events[0].to_state, MULLIGAN_BREAKER_OPEN);
    CHECK_STR(r->events[0].transition_reason, "failure_threshold");
    CHECK_INT(r->events[1].kind, MULLIGAN_EVENT_SHORT_CIRCUITED);
  }

  text = prometheus_text();
  CHECK_CONTAINS(text,
                 "\nmulligan_breaker_transitions_total{name=\"c-brk\",from=\"closed\","
                 "to=\"open\"} 1\n");
  CHECK_CONTAINS(text, "\nmulligan_breaker_state{name=\"c-brk\",state=\"open\"} 1\n");
  CHECK_CONTAINS(text, "\nmulligan_short_circuits_total{name=\"c-brk\"} 1\n");
  free(text);

  CHECK_OK(mulligan_event_listener_remove(id));
  CHECK_INT(r->freed, 1);
  free(r);
  mulligan_breaker_destroy(b);
  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
}

/* An aborted call and an invalid outcome end as failures: nothing stays in
 * flight. */
static int invalid_outcome(int attempt_number, mulligan_outcome *out, void *user_data) {
  (void)attempt_number;
  (void)user_data;
  out->http_status = 42;
  return 0;
}

static void test_aborts_finish_the_call(void) {
  mulligan_clock *clock = NULL;
  mulligan_retry_policy *policy = make_policy(5);
  mulligan_retry_call_options opts = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  mulligan_metrics_snapshot snap = MULLIGAN_METRICS_SNAPSHOT_INIT;
  script s;

  CHECK_OK(mulligan_metrics_reset());
  CHECK_OK(mulligan_clock_create_fake(&clock));
  opts.clock = clock;
  opts.metrics_name = "c-abort";
  memset(&s, 0, sizeof s);
  s.fail_until = 100;
  s.abort_at = 2;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL), MULLIGAN_E_CALLBACK,
              "returned -7");
  CHECK_FAILS(mulligan_retry_call(policy, invalid_outcome, NULL, &opts, NULL),
              MULLIGAN_E_INVALID_ARGUMENT, "http_status");
  CHECK_OK(mulligan_metrics_get("c-abort", &snap));
  CHECK_INT(snap.calls, 2);
  CHECK_INT(snap.failures, 2);
  CHECK_INT(snap.successes, 0);
  CHECK_INT(snap.retries, 1);
  CHECK_INT(snap.in_flight, 0);
  CHECK_INT(snap.waiting_to_retry, 0);

  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
}

/* Callers compiled before metrics_name existed pass a smaller struct_size:
 * the field is not read. */
static void test_old_options_size(void) {
  mulligan_clock *clock = NULL;
  mulligan_retry_policy *policy = make_policy(2);
  mulligan_retry_call_options opts = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  mulligan_metrics_snapshot snap = MULLIGAN_METRICS_SNAPSHOT_INIT;
  script s;

  CHECK_OK(mulligan_metrics_reset());
  CHECK_OK(mulligan_clock_create_fake(&clock));
  opts.clock = clock;
  opts.metrics_name = "c-old";
  opts.struct_size = (uint32_t)offsetof(mulligan_retry_call_options, metrics_name);
  memset(&s, 0, sizeof s);
  CHECK_OK(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL));
  CHECK_FAILS(mulligan_metrics_get("c-old", &snap), MULLIGAN_E_INVALID_ARGUMENT,
              "no metrics named 'c-old'");

  opts.struct_size = (uint32_t)offsetof(mulligan_retry_call_options, metrics_name) - 1;
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL),
              MULLIGAN_E_INVALID_ARGUMENT, "opts->struct_size must be at least");

  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
}

static int never_called(const mulligan_event *e, void *user_data) {
  (void)e;
  (void)user_data;
  return 0;
}

static void test_bad_input(void) {
  mulligan_clock *clock = NULL;
  mulligan_retry_policy *policy = make_policy(2);
  mulligan_retry_call_options opts = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  mulligan_metrics_snapshot snap = MULLIGAN_METRICS_SNAPSHOT_INIT;
  recorder *r = (recorder *)calloc(1, sizeof(recorder));
  int64_t n = 0;
  uint64_t id = 99;
  script s;
  char *text;

  CHECK_OK(mulligan_metrics_reset());
  CHECK_OK(mulligan_clock_create_fake(&clock));

  CHECK_FAILS(mulligan_metrics_get("c-test", NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "mulligan_metrics_get: out must not be NULL");
  CHECK_FAILS(mulligan_metrics_get(NULL, &snap), MULLIGAN_E_INVALID_ARGUMENT,
              "mulligan_metrics_get: name must not be NULL");

  /* An unknown name is an error, zeroes out, and is not created. */
  snap.calls = 77;
  snap.breaker_state = 3;
  CHECK_FAILS(mulligan_metrics_get("c-unknown", &snap), MULLIGAN_E_INVALID_ARGUMENT,
              "no metrics named 'c-unknown'");
  CHECK_INT(snap.calls, 0);
  CHECK_INT(snap.breaker_state, -1);
  CHECK_INT(snap.struct_size, sizeof snap);
  text = prometheus_text();
  CHECK_NOT_CONTAINS(text, "c-unknown");
  free(text);

  snap.struct_size = 8;
  CHECK_FAILS(mulligan_metrics_get("c-unknown", &snap), MULLIGAN_E_INVALID_ARGUMENT,
              "out->struct_size must be at least");
  snap.struct_size = sizeof snap;

  CHECK_FAILS(mulligan_metrics_status(NULL, &n), MULLIGAN_E_INVALID_ARGUMENT,
              "in_flight must not be NULL");
  CHECK_FAILS(mulligan_metrics_status(&n, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "waiting_to_retry must not be NULL");

  CHECK_FAILS(mulligan_event_listener_add(NULL, r, free_recorder, 0, &id),
              MULLIGAN_E_INVALID_ARGUMENT, "callback must not be NULL");
  CHECK_INT(id, 0);
  CHECK_INT(r->freed, 0); /* a failed add never frees user_data */
  CHECK_FAILS(mulligan_event_listener_remove(0), MULLIGAN_E_INVALID_ARGUMENT,
              "no event listener with id 0");
  CHECK_FAILS(mulligan_event_listener_remove(UINT64_C(123456789)), MULLIGAN_E_INVALID_ARGUMENT,
              "no event listener with id 123456789");

  /* Bits of unknown kinds are accepted (they never match). */
  CHECK_OK(mulligan_event_listener_add(never_called, NULL, NULL, 1u << 31, &id));
  CHECK_OK(mulligan_event_listener_remove(id));

  /* An empty metrics_name is rejected before any attempt runs. */
  opts.clock = clock;
  opts.metrics_name = "";
  memset(&s, 0, sizeof s);
  CHECK_FAILS(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL),
              MULLIGAN_E_INVALID_ARGUMENT, "metrics_name must not be empty");
  CHECK_INT(s.calls, 0);

  /* Reset forgets every name. */
  opts.metrics_name = "c-reset";
  CHECK_OK(mulligan_retry_call(policy, run_attempt, &s, &opts, NULL));
  CHECK_OK(mulligan_metrics_get("c-reset", &snap));
  CHECK_OK(mulligan_metrics_reset());
  CHECK_FAILS(mulligan_metrics_get("c-reset", &snap), MULLIGAN_E_INVALID_ARGUMENT,
              "no metrics named");
  text = json_text();
  CHECK_NOT_CONTAINS(text, "c-reset");
  CHECK_CONTAINS(text, "\"totals\"");
  free(text);

  free(r);
  mulligan_retry_policy_destroy(policy);
  mulligan_clock_destroy(clock);
}

int main(void) {
  test_counters_and_exports();
  test_buffer_protocol();
  test_events();
  test_breaker();
  test_aborts_finish_the_call();
  test_old_options_size();
  test_bad_input();
  return CHECK_REPORT();
}
