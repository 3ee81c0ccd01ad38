/* tests/capi/hedging_test.c — hedged calls through the C ABI
 * (mulligan_hedging.h) on the pipeline's fake clock: the exact start times of
 * the copies, a retryable failure starting the next copy at once, never more
 * than max_attempts (5 at most), an open breaker or an empty budget stopping
 * new copies, losers cancelled and counted as cancelled copies (never as
 * failures), a call its caller cancelled counted cancelled, and bad input
 * refused with its message. No sleeps; every expected value is worked out by
 * hand from gRPC A6's hedgingPolicy rules in the comments. */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan_budget.h"
#include "mulligan_hedging.h"
#include "mulligan_metrics.h"

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

/* A pipeline named `name` (its metrics name) with the default retry options
 * (a 503 is retryable, a 404 terminal), `breaker` and `budget` (either may be
 * NULL; the pipeline shares them), reading `clock`. */
static mulligan_pipeline *make_pipeline(const char *name, const mulligan_breaker *breaker,
                                        const mulligan_budget *budget, mulligan_clock *clock) {
  mulligan_pipeline_options *o = NULL;
  mulligan_pipeline *p = NULL;
  CHECK_OK(mulligan_pipeline_options_create(&o));
  CHECK_OK(mulligan_pipeline_options_set_name(o, name));
  CHECK_OK(mulligan_pipeline_options_set_breaker(o, breaker));
  CHECK_OK(mulligan_pipeline_options_set_budget(o, budget));
  CHECK_OK(mulligan_pipeline_options_set_clock(o, clock));
  CHECK_OK(mulligan_pipeline_create(&p, o));
  mulligan_pipeline_options_destroy(o);
  return p;
}

static mulligan_hedging_policy *make_hedging(int max_attempts, double delay_ms) {
  mulligan_hedging_options o = MULLIGAN_HEDGING_OPTIONS_INIT;
  mulligan_hedging_policy *h = NULL;
  o.max_attempts = max_attempts;
  o.hedging_delay_ms = delay_ms;
  CHECK_OK(mulligan_hedging_policy_create(&h, &o));
  return h;
}

static mulligan_hedged_call *begin(mulligan_hedging_policy *h, mulligan_pipeline *p,
                                   mulligan_clock *clock) {
  mulligan_hedged_call *call = NULL;
  CHECK_OK(mulligan_hedged_call_begin(&call, h, p, mulligan_clock_now_ms(clock), NULL,
                                      MULLIGAN_HEDGE_ACCOUNTING_FULL));
  return call;
}

/* Admits at the clock's now. */
static mulligan_hedge_admission admit(mulligan_hedged_call *call, mulligan_clock *clock) {
  mulligan_hedge_admission a = MULLIGAN_HEDGE_ADMISSION_INIT;
  CHECK_OK(mulligan_hedged_call_admit(call, mulligan_clock_now_ms(clock), &a));
  return a;
}

/* Admits at the clock's now and expects copy `copy` to start. */
static void admit_start(mulligan_hedged_call *call, mulligan_clock *clock, int copy) {
  mulligan_hedge_admission a = admit(call, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_START);
  CHECK_INT(a.copy, copy);
}

/* Records an HTTP status of copy `copy` (0: a plain success) at the clock's now. */
static mulligan_hedge_decision record_http(mulligan_hedged_call *call, mulligan_clock *clock,
                                           int copy, int status) {
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_hedge_decision d = MULLIGAN_HEDGE_DECISION_INIT;
  o.http_status = status;
  CHECK_OK(mulligan_hedged_call_record(call, copy, &o, mulligan_clock_now_ms(clock), &d));
  return d;
}

static mulligan_metrics_snapshot metrics_of(const char *name) {
  mulligan_metrics_snapshot s = MULLIGAN_METRICS_SNAPSHOT_INIT;
  CHECK_OK(mulligan_metrics_get(name, &s));
  return s;
}

/* Delay 50 ms, 3 copies: copy 1 at 0, copy 2 at 50 ms (a WAIT before says
 * so), copy 3 no earlier than 100 ms; copy 2 wins at 70 ms, copies 1 and 3
 * are cancelled. */
static void test_start_times_and_losers(void) {
  mulligan_clock *clock = NULL;
  mulligan_pipeline *p;
  mulligan_hedging_policy *h;
  mulligan_hedged_call *call;
  mulligan_hedge_admission a;
  mulligan_hedge_decision d;
  mulligan_metrics_snapshot s;
  double t0;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  t0 = mulligan_clock_now_ms(clock);
  p = make_pipeline("hedge-times", NULL, NULL, clock);
  h = make_hedging(3, 50.0);
  CHECK_NEAR(mulligan_hedging_policy_current_delay_ms(h), 50.0, 0.0);
  call = begin(h, p, clock);

  a = admit(call, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_START);
  CHECK_INT(a.copy, 1);
  CHECK_NEAR(a.timeout_ms, -1.0, 0.0); /* no attempt timeout, no deadline */
  CHECK_OK(mulligan_clock_advance_ms(clock, 20.0));
  a = admit(call, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_WAIT);
  CHECK_INT(a.copy, 0);
  CHECK_NEAR(a.next_start_ms, t0 + 50.0, 1e-6);
  CHECK_OK(mulligan_clock_advance_ms(clock, 30.0)); /* 50 ms */
  admit_start(call, clock, 2);
  CHECK_OK(mulligan_clock_advance_ms(clock, 10.0)); /* 60 ms */
  a = admit(call, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_WAIT);
  CHECK_NEAR(a.next_start_ms, t0 + 100.0, 1e-6);
  CHECK_INT(mulligan_hedged_call_started(call), 2);
  CHECK_INT(mulligan_hedged_call_running(call), 2);

  CHECK_OK(mulligan_clock_advance_ms(clock, 10.0)); /* 70 ms: copy 2 wins */
  d = record_http(call, clock, 2, 200);
  CHECK_INT(d.finished, 1);
  CHECK_INT(d.winner, 2);
  CHECK_INT(d.reason, MULLIGAN_STOP_SUCCEEDED);
  CHECK_INT(d.classification, MULLIGAN_CLASSIFICATION_SUCCESS);
  CHECK_INT(d.cancel_count, 1);
  CHECK_INT(d.cancel[0], 1);
  CHECK_INT(mulligan_hedged_call_winner(call), 2);
  CHECK_INT(mulligan_hedged_call_cancelled(call), 1);
  CHECK_INT(mulligan_hedged_call_running(call), 0);
  CHECK_INT(mulligan_hedged_call_finished(call), 1);
  /* The loser reporting late changes nothing. */
  d = record_http(call, clock, 1, 503);
  CHECK_INT(d.finished, 1);
  CHECK_INT(d.winner, 2);
  CHECK_INT(d.cancel_count, 0);
  /* Nothing starts after the win. */
  a = admit(call, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_NO_MORE);
  CHECK_INT(a.reason, MULLIGAN_STOP_SUCCEEDED);
  mulligan_hedged_call_destroy(call);
  /* The winner's latency (20 ms) is in the window, but a fixed delay stays. */
  CHECK_NEAR(mulligan_hedging_policy_current_delay_ms(h), 50.0, 0.0);

  /* 1 call of 2 attempts (the copies), 1 success, 0 failures; 1 hedge started
   * and won, 1 copy cancelled; the call itself was not cancelled. */
  s = metrics_of("hedge-times");
  CHECK_INT(s.calls, 1);
  CHECK_INT(s.attempts, 2);
  CHECK_INT(s.successes, 1);
  CHECK_INT(s.failures, 0);
  CHECK_INT(s.cancelled, 0);
  CHECK_INT(s.hedges, 1);
  CHECK_INT(s.hedges_won, 1);
  CHECK_INT(s.hedge_cancelled, 1);
  CHECK_INT(s.in_flight, 0);
  mulligan_hedging_policy_destroy(h);
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

/* A 503 (retryable, A6 non-fatal) starts the next copy at once despite a
 * 1000 ms delay; three 503s end the call (attempts exhausted). Then a policy
 * of 7 is capped at 5 copies, and a call that is not replay-safe runs one. */
static void test_retryable_failure_and_cap(void) {
  mulligan_clock *clock = NULL;
  mulligan_pipeline *p;
  mulligan_hedging_policy *h;
  mulligan_hedged_call *call = NULL;
  mulligan_hedge_admission a;
  mulligan_hedge_decision d;
  mulligan_call_options co = MULLIGAN_CALL_OPTIONS_INIT;
  mulligan_metrics_snapshot s;
  int i;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  p = make_pipeline("hedge-retryable", NULL, NULL, clock);
  h = make_hedging(3, 1000.0);
  call = begin(h, p, clock);
  admit_start(call, clock, 1);
  CHECK_OK(mulligan_clock_advance_ms(clock, 10.0));
  d = record_http(call, clock, 1, 503);
  CHECK_INT(d.finished, 0);
  CHECK_INT(d.reason, MULLIGAN_STOP_NONE);
  CHECK_INT(d.classification, MULLIGAN_CLASSIFICATION_RETRYABLE);
  admit_start(call, clock, 2); /* at 10 ms, not 1000 ms */
  CHECK_OK(mulligan_clock_advance_ms(clock, 10.0));
  d = record_http(call, clock, 2, 503);
  admit_start(call, clock, 3); /* at 20 ms */
  CHECK_OK(mulligan_clock_advance_ms(clock, 10.0));
  d = record_http(call, clock, 3, 503);
  CHECK_INT(d.finished, 1);
  CHECK_INT(d.winner, 0);
  CHECK_INT(d.reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  CHECK_INT(d.cancel_count, 0);
  a = admit(call, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_NO_MORE);
  CHECK_INT(mulligan_hedged_call_started(call), 3);
  mulligan_hedged_call_destroy(call);
  mulligan_hedging_policy_destroy(h);
  s = metrics_of("hedge-retryable");
  CHECK_INT(s.calls, 1);
  CHECK_INT(s.attempts, 3);
  CHECK_INT(s.failures, 1);
  CHECK_INT(s.hedges, 2);
  CHECK_INT(s.hedges_won, 0);

  /* max_attempts 7 is treated as 5 (A6): delay 0 starts 5 copies at once. */
  h = make_hedging(7, 0.0);
  call = begin(h, p, clock);
  for (i = 1; i <= 5; ++i) admit_start(call, clock, i);
  a = admit(call, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_NO_MORE);
  CHECK_INT(a.reason, MULLIGAN_STOP_NONE);
  CHECK_INT(mulligan_hedged_call_started(call), 5);
  /* Copy 3 wins: the 4 others are cancelled, all in the caller's array. */
  d = record_http(call, clock, 3, 200);
  CHECK_INT(d.cancel_count, 4);
  CHECK_INT(d.cancel[0], 1);
  CHECK_INT(d.cancel[1], 2);
  CHECK_INT(d.cancel[2], 4);
  CHECK_INT(d.cancel[3], 5);
  mulligan_hedged_call_destroy(call);

  /* Not replay-safe (a POST without a key): one copy only. */
  co.replay_safe = 0;
  CHECK_OK(mulligan_hedged_call_begin(&call, h, p, mulligan_clock_now_ms(clock), &co,
                                      MULLIGAN_HEDGE_ACCOUNTING_FULL));
  admit_start(call, clock, 1);
  a = admit(call, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_NO_MORE);
  CHECK_INT(a.reason, MULLIGAN_STOP_NONE);
  mulligan_hedged_call_destroy(call); /* abandoned: counted failed */
  mulligan_hedging_policy_destroy(h);
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

/* Breaker threshold 1, reset 1000 ms. Call A's copy 1 starts at 0; call B's
 * copy 1 fails (503) at 10 ms and opens the breaker; at 50 ms neither may
 * start copy 2 (CIRCUIT_OPEN, next probe in 1000 - 40 = 960 ms), B has
 * nothing running and ends, A's running copy goes on and wins. A third call's
 * first copy is refused: an error, with the breaker's text. */
static void test_open_breaker_stops_new_copies(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_pipeline *p;
  mulligan_hedging_policy *h;
  mulligan_hedged_call *ca, *cb, *cc = NULL;
  mulligan_hedge_admission a = MULLIGAN_HEDGE_ADMISSION_INIT;
  mulligan_hedge_decision d;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  b = make_breaker(clock, "hedge-db", 1, 1000.0);
  p = make_pipeline("hedge-breaker", b, NULL, clock);
  h = make_hedging(2, 50.0);
  ca = begin(h, p, clock);
  cb = begin(h, p, clock);
  admit_start(ca, clock, 1);
  admit_start(cb, clock, 1);
  CHECK_OK(mulligan_clock_advance_ms(clock, 10.0));
  d = record_http(cb, clock, 1, 503);
  CHECK_INT(d.finished, 0);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_OPEN);
  CHECK_OK(mulligan_clock_advance_ms(clock, 40.0)); /* 50 ms */
  a = admit(ca, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_NO_MORE);
  CHECK_INT(a.reason, MULLIGAN_STOP_CIRCUIT_OPEN);
  CHECK_NEAR(a.retry_in_ms, 960.0, 1e-6);
  CHECK_INT(mulligan_hedged_call_finished(ca), 0); /* copy 1 still runs */
  a = admit(cb, clock);
  CHECK_INT(a.reason, MULLIGAN_STOP_CIRCUIT_OPEN);
  CHECK_INT(mulligan_hedged_call_finished(cb), 1); /* nothing left running */
  a = admit(cb, clock); /* a finished call answers its reason again */
  CHECK_INT(a.action, MULLIGAN_HEDGE_NO_MORE);
  CHECK_INT(a.reason, MULLIGAN_STOP_CIRCUIT_OPEN);
  CHECK_NEAR(a.retry_in_ms, 960.0, 1e-6);
  CHECK_OK(mulligan_clock_advance_ms(clock, 10.0));
  d = record_http(ca, clock, 1, 200);
  CHECK_INT(d.finished, 1);
  CHECK_INT(d.winner, 1);
  CHECK_INT(mulligan_hedged_call_started(ca), 1);

  cc = begin(h, p, clock);
  CHECK_FAILS(mulligan_hedged_call_admit(cc, mulligan_clock_now_ms(clock), &a),
              MULLIGAN_E_CIRCUIT_OPEN, "circuit breaker 'hedge-db' is open");
  CHECK_INT(a.action, MULLIGAN_HEDGE_NO_MORE);
  CHECK_INT(a.reason, MULLIGAN_STOP_CIRCUIT_OPEN);
  CHECK_INT(mulligan_hedged_call_finished(cc), 1);
  CHECK_INT(mulligan_hedged_call_started(cc), 0);
  mulligan_hedged_call_destroy(ca);
  mulligan_hedged_call_destroy(cb);
  mulligan_hedged_call_destroy(cc);
  mulligan_hedging_policy_destroy(h);
  mulligan_pipeline_destroy(p);
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

/* A6 token bucket of 2 tokens, ratio 0.5: a retry (a hedge) needs more than
 * 2 / 2 = 1 token; one failure beforehand leaves 1, so copy 2 is refused. */
static void test_empty_budget_stops_new_copies(void) {
  mulligan_clock *clock = NULL;
  mulligan_budget_options bo = MULLIGAN_BUDGET_OPTIONS_INIT;
  mulligan_budget *budget = NULL;
  mulligan_pipeline *p;
  mulligan_hedging_policy *h;
  mulligan_hedged_call *call;
  mulligan_hedge_admission a;
  mulligan_hedge_decision d;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  bo.max_tokens = 2.0;
  bo.token_ratio = 0.5;
  CHECK_OK(mulligan_budget_create(&budget, "hedge-budget", &bo, clock));
  CHECK_OK(mulligan_budget_on_failure(budget, MULLIGAN_BUDGET_FAILURE_OTHER,
                                      mulligan_clock_now_ms(clock)));
  p = make_pipeline("hedge-budget", NULL, budget, clock);
  h = make_hedging(3, 100.0);
  call = begin(h, p, clock);
  admit_start(call, clock, 1);
  CHECK_OK(mulligan_clock_advance_ms(clock, 100.0));
  a = admit(call, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_NO_MORE);
  CHECK_INT(a.reason, MULLIGAN_STOP_BUDGET);
  CHECK_INT(mulligan_budget_refused(budget), 1);
  CHECK_INT(mulligan_budget_allowed(budget), 0);
  d = record_http(call, clock, 1, 200);
  CHECK_INT(d.winner, 1);
  CHECK_INT(mulligan_hedged_call_started(call), 1);
  CHECK_INT(metrics_of("hedge-budget").hedges, 0);
  mulligan_hedged_call_destroy(call);
  mulligan_hedging_policy_destroy(h);
  mulligan_pipeline_destroy(p);
  mulligan_budget_destroy(budget);
  mulligan_clock_destroy(clock);
}

/* Two copies running (threshold-1 breaker) when the caller cancels at 70 ms:
 * both released unjudged, the breaker stays closed, the call counts
 * cancelled (never failed) with 2 attempts, 2 cancelled copies. An abandon
 * of another call, for contrast, counts failed. */
static void test_cancel(void) {
  mulligan_clock *clock = NULL;
  mulligan_breaker *b;
  mulligan_pipeline *p;
  mulligan_hedging_policy *h;
  mulligan_hedged_call *call;
  mulligan_hedge_admission a;
  mulligan_hedge_decision d;
  mulligan_metrics_snapshot s;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  b = make_breaker(clock, "hedge-cancel-db", 1, 1000.0);
  p = make_pipeline("hedge-cancel", b, NULL, clock);
  h = make_hedging(3, 50.0);
  call = begin(h, p, clock);
  admit_start(call, clock, 1);
  CHECK_OK(mulligan_clock_advance_ms(clock, 50.0));
  admit_start(call, clock, 2);
  CHECK_OK(mulligan_clock_advance_ms(clock, 20.0));
  CHECK_OK(mulligan_hedged_call_cancel(call, mulligan_clock_now_ms(clock)));
  CHECK_INT(mulligan_hedged_call_finished(call), 1);
  CHECK_INT(mulligan_hedged_call_cancelled(call), 2);
  CHECK_INT(mulligan_hedged_call_running(call), 0);
  CHECK_INT(mulligan_hedged_call_winner(call), 0);
  CHECK_OK(mulligan_hedged_call_cancel(call, mulligan_clock_now_ms(clock)));  /* once only */
  CHECK_OK(mulligan_hedged_call_abandon(call, mulligan_clock_now_ms(clock))); /* no-op */
  a = admit(call, clock);
  CHECK_INT(a.action, MULLIGAN_HEDGE_NO_MORE);
  d = record_http(call, clock, 1, 503); /* a late outcome changes nothing */
  CHECK_INT(d.finished, 1);
  CHECK_INT(d.cancel_count, 0);
  mulligan_hedged_call_destroy(call);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);
  s = metrics_of("hedge-cancel");
  CHECK_INT(s.calls, 1);
  CHECK_INT(s.attempts, 2);
  CHECK_INT(s.successes, 0);
  CHECK_INT(s.failures, 0);
  CHECK_INT(s.cancelled, 1);
  CHECK_INT(s.hedges, 1);
  CHECK_INT(s.hedge_cancelled, 2);
  CHECK_INT(s.in_flight, 0);

  call = begin(h, p, clock);
  admit_start(call, clock, 1);
  CHECK_OK(mulligan_hedged_call_abandon(call, mulligan_clock_now_ms(clock)));
  mulligan_hedged_call_destroy(call);
  CHECK_INT(mulligan_breaker_state_now(b), MULLIGAN_BREAKER_CLOSED);
  s = metrics_of("hedge-cancel");
  CHECK_INT(s.calls, 2);
  CHECK_INT(s.failures, 1);
  CHECK_INT(s.cancelled, 1);
  CHECK_INT(s.hedge_cancelled, 3);
  mulligan_hedging_policy_destroy(h);
  mulligan_pipeline_destroy(p);
  mulligan_breaker_destroy(b);
  mulligan_clock_destroy(clock);
}

/* Bad options are refused at creation, naming the field; bad step input is
 * refused and changes nothing. */
static void test_bad_input(void) {
  mulligan_clock *clock = NULL;
  mulligan_pipeline *p;
  mulligan_hedging_policy *h = NULL;
  mulligan_hedged_call *call = NULL;
  mulligan_hedging_options o = MULLIGAN_HEDGING_OPTIONS_INIT;
  mulligan_hedge_admission a = MULLIGAN_HEDGE_ADMISSION_INIT;
  mulligan_hedge_decision d = MULLIGAN_HEDGE_DECISION_INIT;
  mulligan_outcome out = MULLIGAN_OUTCOME_INIT;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  p = make_pipeline("hedge-bad", NULL, NULL, clock);

  o.max_attempts = 1;
  CHECK_FAILS(mulligan_hedging_policy_create(&h, &o), MULLIGAN_E_INVALID_ARGUMENT,
              "hedging: max_attempts must be >= 2 (gRPC A6), got 1");
  CHECK(h == NULL);
  o.max_attempts = 2;
  o.hedging_delay_ms = -5.0;
  CHECK_FAILS(mulligan_hedging_policy_create(&h, &o), MULLIGAN_E_INVALID_ARGUMENT,
              "hedging: hedging_delay_ms must be a finite number >= 0, got -5");
  o.hedging_delay_ms = NAN;
  CHECK_FAILS(mulligan_hedging_policy_create(&h, &o), MULLIGAN_E_INVALID_ARGUMENT,
              "hedging_delay_ms must be a finite number >= 0, got nan");
  o.hedging_delay_ms = 10.0;
  o.delay_quantile = 1.5;
  CHECK_FAILS(mulligan_hedging_policy_create(&h, &o), MULLIGAN_E_INVALID_ARGUMENT,
              "hedging: delay_quantile must be in (0, 1], got 1.5");
  o.delay_quantile = -0.5;
  CHECK_FAILS(mulligan_hedging_policy_create(&h, &o), MULLIGAN_E_INVALID_ARGUMENT,
              "hedging: delay_quantile must be in (0, 1], got -0.5");
  o.delay_quantile = 0.95;
  o.quantile_window = 0;
  CHECK_FAILS(mulligan_hedging_policy_create(&h, &o), MULLIGAN_E_INVALID_ARGUMENT,
              "hedging: quantile_window must be in [1, 100000], got 0");
  o.quantile_window = 10;
  o.quantile_min_samples = 20;
  CHECK_FAILS(mulligan_hedging_policy_create(&h, &o), MULLIGAN_E_INVALID_ARGUMENT,
              "hedging: quantile_min_samples must be in [1, quantile_window = 10], got 20");
  o.struct_size = 4;
  CHECK_FAILS(mulligan_hedging_policy_create(&h, &o), MULLIGAN_E_INVALID_ARGUMENT,
              "opts->struct_size must be at least");
  CHECK(h == NULL);
  CHECK_FAILS(mulligan_hedging_policy_create(NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "out must not be NULL");
  /* A valid quantile policy: the fixed delay until 20 winners are known. */
  o.struct_size = (uint32_t)sizeof o;
  o.quantile_min_samples = 5;
  CHECK_OK(mulligan_hedging_policy_create(&h, &o));
  CHECK_NEAR(mulligan_hedging_policy_current_delay_ms(h), 10.0, 0.0);

  CHECK_FAILS(mulligan_hedged_call_begin(&call, h, p, mulligan_clock_now_ms(clock), NULL, 7),
              MULLIGAN_E_INVALID_ARGUMENT, "accounting must be");
  CHECK(call == NULL);
  CHECK_FAILS(mulligan_hedged_call_begin(&call, NULL, p, 0.0, NULL, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "policy must not be NULL");
  CHECK_FAILS(mulligan_hedged_call_begin(&call, h, p, NAN, NULL, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "now_ms must be a finite number");
  call = begin(h, p, clock);
  CHECK_FAILS(mulligan_hedged_call_admit(call, mulligan_clock_now_ms(clock) - 1.0, &a),
              MULLIGAN_E_INVALID_ARGUMENT, "now_ms must not be before the call began");
  CHECK_INT(mulligan_hedged_call_started(call), 0);
  admit_start(call, clock, 1);
  CHECK_FAILS(mulligan_hedged_call_record(call, 0, &out, mulligan_clock_now_ms(clock), &d),
              MULLIGAN_E_INVALID_ARGUMENT, "copy must be in [1, 5], got 0");
  out.http_status = 42;
  CHECK_FAILS(mulligan_hedged_call_record(call, 1, &out, mulligan_clock_now_ms(clock), &d),
              MULLIGAN_E_INVALID_ARGUMENT, "outcome->http_status");
  CHECK_INT(mulligan_hedged_call_running(call), 1); /* unchanged */
  d.struct_size = 0;
  CHECK_FAILS(mulligan_hedged_call_record(call, 1, &out, mulligan_clock_now_ms(clock), &d),
              MULLIGAN_E_INVALID_ARGUMENT, "out->struct_size must be at least");
  CHECK_FAILS(mulligan_hedged_call_cancel(NULL, 0.0), MULLIGAN_E_INVALID_ARGUMENT,
              "call must not be NULL");
  CHECK_INT(mulligan_hedged_call_started(NULL), 0);
  mulligan_hedged_call_destroy(call);
  mulligan_hedged_call_destroy(NULL);
  mulligan_hedging_policy_destroy(h);
  mulligan_hedging_policy_destroy(NULL);
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

int main(void) {
  test_start_times_and_losers();
  test_retryable_failure_and_cap();
  test_open_breaker_stops_new_copies();
  test_empty_budget_stops_new_copies();
  test_cancel();
  test_bad_input();
  return CHECK_REPORT();
}
