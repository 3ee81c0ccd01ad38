/* tests/capi/pipeline_errors_test.c — bad input to the step-by-step
 * pipeline API of mulligan_pipeline.h: NULL handles and pointers, struct
 * sizes, NaN, infinite and backwards now_ms, invalid call options and
 * outcomes (which leave the call unchanged), exclusive options, and the NULL
 * answers of getters. Each failure returns MULLIGAN_E_INVALID_ARGUMENT with a
 * last error naming the argument, and resets its OUT parameter. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "mulligan_pipeline.h"

/* Pipeline options and pipelines: NULL handles, exclusive breakers. */
static void test_options(void) {
  mulligan_clock *clock = NULL;
  mulligan_pipeline_options *po = NULL;
  mulligan_pipeline *p = NULL;
  mulligan_breaker *b = NULL;
  mulligan_breaker_registry *r = NULL;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK_FAILS(mulligan_pipeline_options_create(NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "out must not be NULL");
  CHECK_FAILS(mulligan_pipeline_options_set_name(NULL, "x"), MULLIGAN_E_INVALID_ARGUMENT,
              "mulligan_pipeline_options_set_name: opts must not be NULL");
  CHECK_FAILS(mulligan_pipeline_options_set_retry(NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "opts must not be NULL");
  CHECK_FAILS(mulligan_pipeline_options_set_breaker(NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "opts must not be NULL");
  CHECK_FAILS(mulligan_pipeline_options_set_breaker_registry(NULL, NULL),
              MULLIGAN_E_INVALID_ARGUMENT, "opts must not be NULL");
  CHECK_FAILS(mulligan_pipeline_options_set_breaker_per_attempt(NULL, 1),
              MULLIGAN_E_INVALID_ARGUMENT, "opts must not be NULL");
  CHECK_FAILS(mulligan_pipeline_options_set_report_metrics(NULL, 1), MULLIGAN_E_INVALID_ARGUMENT,
              "opts must not be NULL");
  CHECK_FAILS(mulligan_pipeline_options_set_clock(NULL, clock), MULLIGAN_E_INVALID_ARGUMENT,
              "opts must not be NULL");
  CHECK_FAILS(mulligan_pipeline_create(NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "out must not be NULL");
  /* A breaker and a registry are exclusive: refused at create. */
  CHECK_OK(mulligan_breaker_create(&b, NULL));
  CHECK_OK(mulligan_breaker_registry_create(&r, NULL, 0));
  CHECK_OK(mulligan_pipeline_options_create(&po));
  CHECK_OK(mulligan_pipeline_options_set_breaker(po, b));
  CHECK_OK(mulligan_pipeline_options_set_breaker_registry(po, r));
  CHECK_OK(mulligan_pipeline_create(&p, NULL));
  {
    mulligan_pipeline *kept = p; /* a failed create must set p to NULL */
    CHECK_FAILS(mulligan_pipeline_create(&p, po), MULLIGAN_E_INVALID_ARGUMENT,
                "breaker and breakers are exclusive");
    CHECK(p == NULL);
    mulligan_pipeline_destroy(kept);
  }
  /* Removing one of them makes the options valid again. */
  CHECK_OK(mulligan_pipeline_options_set_breaker_registry(po, NULL));
  CHECK_OK(mulligan_pipeline_create(&p, po));
  mulligan_pipeline_destroy(p);
  mulligan_pipeline_options_destroy(po);
  mulligan_breaker_registry_destroy(r);
  mulligan_breaker_destroy(b);
  CHECK_NEAR(mulligan_pipeline_now_ms(NULL), 0.0, 0.0);
  CHECK_STR(mulligan_last_error(), "mulligan_pipeline_now_ms: pipeline must not be NULL");
  mulligan_pipeline_options_destroy(NULL);
  mulligan_pipeline_destroy(NULL);
  mulligan_clock_destroy(clock);
}

/* NULL options: every default, and the system steady clock. */
static void test_default_clock(void) {
  mulligan_clock *fake = NULL;
  mulligan_pipeline *p = NULL;
  CHECK_OK(mulligan_clock_create_fake(&fake));
  /* Its reading moves with the steady clock's; a fake clock's would stand
   * still at its start. */
  CHECK_OK(mulligan_pipeline_create(&p, NULL));
  {
    const double t1 = mulligan_pipeline_now_ms(p);
    const double t2 = mulligan_clock_now_ms(NULL);
    const double t3 = mulligan_pipeline_now_ms(p);
    CHECK(t1 <= t2 && t2 <= t3);
    CHECK(t1 != mulligan_clock_now_ms(fake));
  }
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(fake);
}

/* Begin: NULL pointers, bad now_ms, bad call options; *out is NULL after. */
static void test_begin(mulligan_pipeline *p, double now) {
  mulligan_call *call = NULL;
  mulligan_call_options co = MULLIGAN_CALL_OPTIONS_INIT;
  CHECK_FAILS(mulligan_call_begin(NULL, p, now, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "out must not be NULL");
  CHECK_OK(mulligan_call_begin(&call, p, now, NULL));
  {
    mulligan_call *kept = call; /* a failed begin must set call to NULL */
    CHECK_FAILS(mulligan_call_begin(&call, NULL, now, NULL), MULLIGAN_E_INVALID_ARGUMENT,
                "pipeline must not be NULL");
    CHECK(call == NULL);
    mulligan_call_destroy(kept);
  }
  CHECK_FAILS(mulligan_call_begin(&call, p, NAN, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "now_ms must be a finite number");
  CHECK_FAILS(mulligan_call_begin(&call, p, INFINITY, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "now_ms must be a finite number");
  co.struct_size = 4;
  CHECK_FAILS(mulligan_call_begin(&call, p, now, &co), MULLIGAN_E_INVALID_ARGUMENT,
              "opts->struct_size must be at least");
  co = (mulligan_call_options)MULLIGAN_CALL_OPTIONS_INIT;
  co.attempt_timeout_ms = 0.0;
  CHECK_FAILS(mulligan_call_begin(&call, p, now, &co), MULLIGAN_E_INVALID_ARGUMENT,
              "opts->attempt_timeout_ms (negative for none) must be a finite number > 0, got 0");
  co.attempt_timeout_ms = NAN;
  CHECK_FAILS(mulligan_call_begin(&call, p, now, &co), MULLIGAN_E_INVALID_ARGUMENT,
              "attempt_timeout_ms");
  co.attempt_timeout_ms = -1.0;
  co.max_attempts = -1;
  CHECK_FAILS(mulligan_call_begin(&call, p, now, &co), MULLIGAN_E_INVALID_ARGUMENT,
              "opts->max_attempts must be >= 0");
  CHECK(call == NULL);
  co.max_attempts = 0;
  CHECK_OK(mulligan_call_begin(&call, p, now, &co));
  mulligan_call_destroy(call);
}

/* Admit, record and abandon: each bad argument fails and changes nothing. */
static void test_steps(mulligan_pipeline *p, double now) {
  mulligan_call *call = NULL;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  CHECK_OK(mulligan_call_begin(&call, p, now, NULL));
  /* Admit: a failure resets *out to "refuse". */
  a.action = MULLIGAN_ADMISSION_GO;
  a.attempt = 7;
  CHECK_FAILS(mulligan_call_admit(NULL, now, &a), MULLIGAN_E_INVALID_ARGUMENT,
              "call must not be NULL");
  CHECK_INT(a.action, MULLIGAN_ADMISSION_REFUSE);
  CHECK_INT(a.attempt, 0);
  CHECK_FAILS(mulligan_call_admit(call, now, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "out must not be NULL");
  a.struct_size = 8;
  CHECK_FAILS(mulligan_call_admit(call, now, &a), MULLIGAN_E_INVALID_ARGUMENT,
              "out->struct_size must be at least");
  a = (mulligan_admission)MULLIGAN_ADMISSION_INIT;
  CHECK_FAILS(mulligan_call_admit(call, now - 1.0, &a), MULLIGAN_E_INVALID_ARGUMENT,
              "now_ms must not be before the call began");
  CHECK_FAILS(mulligan_call_admit(call, NAN, &a), MULLIGAN_E_INVALID_ARGUMENT, "now_ms");

  /* Record: a failure resets *out to "stop"; a bad outcome leaves the call
   * as it was. */
  d.action = MULLIGAN_ACTION_RETRY;
  d.delay_ms = 5.0;
  CHECK_FAILS(mulligan_call_record(NULL, &o, now, &d), MULLIGAN_E_INVALID_ARGUMENT,
              "call must not be NULL");
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_NEAR(d.delay_ms, 0.0, 0.0);
  CHECK_FAILS(mulligan_call_record(call, NULL, now, &d), MULLIGAN_E_INVALID_ARGUMENT,
              "outcome must not be NULL");
  CHECK_FAILS(mulligan_call_record(call, &o, now, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "out must not be NULL");
  d.struct_size = 4;
  CHECK_FAILS(mulligan_call_record(call, &o, now, &d), MULLIGAN_E_INVALID_ARGUMENT,
              "out->struct_size must be at least");
  d = (mulligan_decision)MULLIGAN_DECISION_INIT;
  o.http_status = 42;
  CHECK_FAILS(mulligan_call_record(call, &o, now, &d), MULLIGAN_E_INVALID_ARGUMENT,
              "outcome->http_status must be 0 or in [100, 599], got 42");
  o.http_status = 0;
  o.retry_after_ms = NAN;
  CHECK_FAILS(mulligan_call_record(call, &o, now, &d), MULLIGAN_E_INVALID_ARGUMENT,
              "retry_after_ms");
  o.retry_after_ms = -1.0;
  o.struct_size = 4;
  CHECK_FAILS(mulligan_call_record(call, &o, now, &d), MULLIGAN_E_INVALID_ARGUMENT,
              "outcome->struct_size must be at least");
  o = (mulligan_outcome)MULLIGAN_OUTCOME_INIT;
  CHECK_INT(mulligan_call_attempts(call), 0);
  CHECK_INT(mulligan_call_finished(call), 0);
  CHECK_OK(mulligan_call_record(call, &o, now, &d));
  CHECK_INT(d.reason, MULLIGAN_STOP_SUCCEEDED);
  CHECK_INT(mulligan_call_attempts(call), 1);

  /* Abandon. */
  CHECK_FAILS(mulligan_call_abandon(NULL, now, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "call must not be NULL");
  CHECK_FAILS(mulligan_call_abandon(call, now, -1), MULLIGAN_E_INVALID_ARGUMENT,
              "attempts_in_flight must be >= 0, got -1");
  CHECK_FAILS(mulligan_call_abandon(call, NAN, 0), MULLIGAN_E_INVALID_ARGUMENT, "now_ms");
  /* Cancel (0.6): the same checks. */
  CHECK_FAILS(mulligan_call_cancel(NULL, now, 0), MULLIGAN_E_INVALID_ARGUMENT,
              "call must not be NULL");
  CHECK_FAILS(mulligan_call_cancel(call, now, -1), MULLIGAN_E_INVALID_ARGUMENT,
              "attempts_in_flight must be >= 0, got -1");
  CHECK_FAILS(mulligan_call_cancel(call, NAN, 0), MULLIGAN_E_INVALID_ARGUMENT, "now_ms");
  mulligan_call_destroy(call);

  mulligan_call_destroy(NULL);
}

/* The getters' answers for NULL: 0, with the last error set. */
static void test_getters(void) {
  CHECK_INT(mulligan_call_attempts(NULL), 0);
  CHECK_STR(mulligan_last_error(), "mulligan_call_attempts: call must not be NULL");
  CHECK_NEAR(mulligan_call_total_delay_ms(NULL), 0.0, 0.0);
  CHECK_STR(mulligan_last_error(), "mulligan_call_total_delay_ms: call must not be NULL");
  CHECK_INT(mulligan_call_finished(NULL), 0);
  CHECK_STR(mulligan_last_error(), "mulligan_call_finished: call must not be NULL");
  CHECK_INT(mulligan_call_use_fallback(NULL), 0);
  CHECK_STR(mulligan_last_error(), "mulligan_call_use_fallback: call must not be NULL");

}

int main(void) {
  mulligan_clock *clock = NULL;
  mulligan_pipeline_options *po = NULL;
  mulligan_pipeline *p = NULL;
  double now;
  test_options();
  test_default_clock();
  CHECK_OK(mulligan_clock_create_fake(&clock));
  now = mulligan_clock_now_ms(clock);
  CHECK_OK(mulligan_pipeline_options_create(&po));
  CHECK_OK(mulligan_pipeline_options_set_clock(po, clock));
  CHECK_OK(mulligan_pipeline_create(&p, po));
  mulligan_pipeline_options_destroy(po);
  test_begin(p, now);
  test_steps(p, now);
  test_getters();
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
  return CHECK_REPORT();
}
