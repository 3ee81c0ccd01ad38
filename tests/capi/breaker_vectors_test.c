/* tests/capi/breaker_vectors_test.c — the shared circuit breaker scripts of
 * tests/vectors/breaker.json (via the generated capi_breaker_vectors.h), run
 * through the C ABI with a fake clock, as the C++ and Python suites run them. */
#include <stdio.h>
#include <string.h>

#include "capi_breaker_vectors.h"
#include "capi_check.h"
#include "mulligan.h"

static mulligan_breaker *create(const breaker_vector *v, mulligan_clock *clock) {
  mulligan_breaker_options *o = NULL;
  mulligan_breaker *b = NULL;
  CHECK_OK(mulligan_breaker_options_create(&o));
  CHECK_OK(mulligan_breaker_options_set_name(o, "vector"));
  CHECK_OK(mulligan_breaker_options_set_clock(o, clock));
  if (v->failure_threshold >= 0)
    CHECK_OK(mulligan_breaker_options_set_failure_threshold(o, v->failure_threshold));
  if (v->window >= 0) CHECK_OK(mulligan_breaker_options_set_window(o, v->window));
  if (v->window_size >= 0) CHECK_OK(mulligan_breaker_options_set_window_size(o, v->window_size));
  if (v->window_duration_ms >= 0)
    CHECK_OK(mulligan_breaker_options_set_window_duration_ms(o, v->window_duration_ms));
  if (v->window_buckets >= 0)
    CHECK_OK(mulligan_breaker_options_set_window_buckets(o, v->window_buckets));
  if (v->failure_rate_threshold >= 0)
    CHECK_OK(mulligan_breaker_options_set_failure_rate_threshold(o, v->failure_rate_threshold));
  if (v->minimum_calls >= 0)
    CHECK_OK(mulligan_breaker_options_set_minimum_calls(o, v->minimum_calls));
  if (v->slow_call_duration_ms >= 0)
    CHECK_OK(mulligan_breaker_options_set_slow_call_duration_ms(o, v->slow_call_duration_ms));
  if (v->slow_call_rate_threshold >= 0)
    CHECK_OK(mulligan_breaker_options_set_slow_call_rate_threshold(o,
                                                                   v->slow_call_rate_threshold));
  if (v->reset_timeout_ms >= 0)
    CHECK_OK(mulligan_breaker_options_set_reset_timeout_ms(o, v->reset_timeout_ms));
  if (v->reset_timeout_multiplier >= 0)
    CHECK_OK(mulligan_breaker_options_set_reset_timeout_multiplier(o,
                                                                   v->reset_timeout_multiplier));
  if (v->max_reset_timeout_ms >= 0)
    CHECK_OK(mulligan_breaker_options_set_max_reset_timeout_ms(o, v->max_reset_timeout_ms));
  if (v->half_open_max_calls >= 0)
    CHECK_OK(mulligan_breaker_options_set_half_open_max_calls(o, v->half_open_max_calls));
  if (v->permit_timeout_ms >= 0)
    CHECK_OK(mulligan_breaker_options_set_permit_timeout_ms(o, v->permit_timeout_ms));
  CHECK_OK(mulligan_breaker_create(&b, o));
  mulligan_breaker_options_destroy(o);
  return b;
}

static int run(const breaker_vector *v) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_breaker_permit permits[16];
  double start, now = 0.0;
  size_t i, k;
  int failures_before = check_failures;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  start = mulligan_clock_now_ms(clock);
  b = create(v, clock);
  for (i = 0; i < 16; ++i) {
    mulligan_breaker_permit init = MULLIGAN_BREAKER_PERMIT_INIT;
    permits[i] = init;
  }
  for (i = 0; i < v->step_count && b != NULL; ++i) {
    const breaker_step *s = &v->steps[i];
    mulligan_breaker_counts c = MULLIGAN_BREAKER_COUNTS_INIT;
    long long actual[5];
    int rc = MULLIGAN_OK, before = check_failures;
    double retry_in;
    if (s->at_ms > now) {
      CHECK_OK(mulligan_clock_advance_ms(clock, s->at_ms - now));
      now = s->at_ms;
    }
    switch (s->op) {
      case 0: rc = mulligan_breaker_acquire(b, &permits[s->permit]); break;
      case 1:
        CHECK_OK(mulligan_breaker_record(b, &permits[s->permit], s->result,
                                         s->duration_ms < 0 ? -1.0 : s->duration_ms));
        break;
      case 2: CHECK_OK(mulligan_breaker_force_open(b)); break;
      case 3: CHECK_OK(mulligan_breaker_disable(b)); break;
      case 4: CHECK_OK(mulligan_breaker_metrics_only(b)); break;
      case 5: CHECK_OK(mulligan_breaker_reset(b)); break;
      default: break;
    }
    if (s->op == 0) CHECK(rc == MULLIGAN_OK || rc == MULLIGAN_E_CIRCUIT_OPEN);
    if (s->admitted >= 0) CHECK_INT(permits[s->permit].admitted, s->admitted);
    if (s->state >= 0) {
      CHECK_INT(mulligan_breaker_state_now(b), s->state);
      if (s->op == 0) CHECK_INT(permits[s->permit].state, s->state);
    }
    if (s->retry_in_ms != -1.0) {
      retry_in = s->op == 0 ? permits[s->permit].retry_in_ms
                            : mulligan_breaker_time_until_probe_ms(b);
      if (s->retry_in_ms == -2.0) {
        CHECK(retry_in == MULLIGAN_DURATION_MAX_MS);
      } else {
        CHECK_NEAR(retry_in, s->retry_in_ms, 1e-3);
      }
    }
    CHECK_OK(mulligan_breaker_get_counts(b, &c));
    actual[0] = c.consecutive_failures;
    actual[1] = (long long)c.successes;
    actual[2] = (long long)c.failures;
    actual[3] = (long long)c.ignored;
    actual[4] = (long long)c.rejected;
    for (k = 0; k < 5; ++k) {
      if (s->counters[k] >= 0 && actual[k] != s->counters[k]) {
        ++check_failures;
        fprintf(stderr, "%s: %s == %lld, expected %lld\n", breaker_counter_names[k],
                breaker_counter_names[k], actual[k], s->counters[k]);
      }
    }
    if (check_failures != before) {
      fprintf(stderr, "  in \"%s\", step %zu (at %.3f s)\n", v->name, i, s->at_ms / 1000.0);
    }
  }
  (void)start;
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
  return check_failures == failures_before;
}

int main(void) {
  size_t i, n = sizeof breaker_vectors / sizeof breaker_vectors[0];
  CHECK(n >= 10);
  for (i = 0; i < n; ++i) run(&breaker_vectors[i]);
  return CHECK_REPORT();
}
