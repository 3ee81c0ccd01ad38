/* tests/capi/budget_test.c — retry budgets and adaptive throttling from C
 * (mulligan_budget.h): the shared scripts of tests/vectors/budget.json (via
 * the generated capi_budget_vectors.h; the C++ and Python suites run the
 * same file), bad options naming their field, shared-by-name lookup, and a
 * pipeline stopped by a budget (MULLIGAN_STOP_BUDGET, the last failure kept)
 * and refused by a throttle (MULLIGAN_STOP_THROTTLED). A fake clock; no
 * sleeps. Expected values are worked out by hand in the comments. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "capi_budget_vectors.h"
#include "capi_check.h"
#include "mulligan.h"

static void test_budget_vectors(void) {
  int c, i;
  long long r;
  for (c = 0; c < BUDGET_CASE_COUNT; ++c) {
    const budget_case *bc = &budget_cases[c];
    mulligan_budget_options o = MULLIGAN_BUDGET_OPTIONS_INIT;
    mulligan_clock *clock = NULL;
    mulligan_budget *b = NULL;
    o.kind = bc->kind;
    o.max_tokens = bc->max_tokens;
    o.token_ratio = bc->token_ratio;
    o.capacity = bc->capacity;
    o.retry_cost = bc->retry_cost;
    o.timeout_cost = bc->timeout_cost;
    o.throttling_cost = bc->throttling_cost;
    o.no_retry_increment = bc->no_retry_increment;
    o.ttl_ms = bc->ttl_ms;
    o.percent = bc->percent;
    o.min_retries_per_second = bc->min_retries_per_second;
    CHECK_OK(mulligan_clock_create_fake(&clock));
    CHECK_OK(mulligan_clock_advance_ms(clock, bc->start * 1000.0));
    CHECK_OK(mulligan_budget_create(&b, bc->name, &o, clock));
    CHECK_INT(mulligan_budget_kind_of(b), bc->kind);
    for (i = 0; i < bc->n; ++i) {
      const budget_step *s = &bc->steps[i];
      const double now = s->t * 1000.0;
      double tokens = -1;
      switch (s->op) {
        case 0:
          CHECK_OK(mulligan_budget_on_failure(b, s->kind, now));
          break;
        case 1:
          for (r = 0; r < s->n; ++r) {
            int64_t cost = -3;
            int rc = mulligan_budget_try_retry(b, s->kind, now, &cost);
            CHECK_INT(rc, s->allowed ? MULLIGAN_OK : MULLIGAN_E_BUDGET_EXHAUSTED);
            CHECK_INT(cost >= 0, s->allowed);
            if (s->cost != -2) CHECK_INT(cost, s->cost);
          }
          break;
        case 2:
          CHECK_OK(mulligan_budget_add_successes(b, (uint64_t)s->n));
          break;
        case 3:
          CHECK_OK(mulligan_budget_on_retried_success(b, s->cost));
          break;
        default:
          CHECK_OK(mulligan_budget_on_call_started(b, now));
          break;
      }
      CHECK_OK(mulligan_budget_tokens(b, now, &tokens));
      if (fabs(tokens - s->tokens) > 1e-9) {
        fprintf(stderr, "%s step %d\n", bc->name, i);
      }
      CHECK_NEAR(tokens, s->tokens, 1e-9);
    }
    mulligan_budget_destroy(b);
    mulligan_clock_destroy(clock);
  }
}

static void test_throttle_vectors(void) {
  int c, i;
  for (c = 0; c < THROTTLE_CASE_COUNT; ++c) {
    const throttle_case *tc = &throttle_cases[c];
    mulligan_throttle_options o = MULLIGAN_THROTTLE_OPTIONS_INIT;
    mulligan_throttle *t = NULL;
    int admitted = 0, rejected = 0;
    o.window_ms = tc->window_ms;
    o.k = tc->k;
    o.has_seed = 1;
    o.seed = tc->seed;
    CHECK_OK(mulligan_throttle_create(&t, tc->name, &o));
    for (i = 0; i < tc->n; ++i) {
      const throttle_step *s = &tc->steps[i];
      const double now = s->t * 1000.0;
      if (s->op == 0) {
        double p = -1;
        CHECK_OK(mulligan_throttle_probability(t, now, &p));
        CHECK_NEAR(p, s->p, 1e-12);
        CHECK_INT(mulligan_throttle_admit(t, now) == MULLIGAN_OK, s->admitted);
        if (s->admitted) ++admitted; else ++rejected;
      } else {
        mulligan_outcome out = MULLIGAN_OUTCOME_INIT;
        out.http_status = s->accept ? 0 : 503;
        CHECK_OK(mulligan_throttle_record(t, &out));
      }
    }
    CHECK_INT(mulligan_throttle_rejected(t), rejected);
    CHECK(admitted > 0 && rejected > 0); /* the script exercises both answers */
    mulligan_throttle_destroy(t);
  }
}

static void test_bad_options(void) {
  mulligan_budget_options o = MULLIGAN_BUDGET_OPTIONS_INIT;
  mulligan_throttle_options to = MULLIGAN_THROTTLE_OPTIONS_INIT;
  mulligan_budget *b = NULL;
  mulligan_throttle *t = NULL;
  o.token_ratio = -1;
  CHECK_FAILS(mulligan_budget_create(&b, "x", &o, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "token_ratio");
  o = (mulligan_budget_options)MULLIGAN_BUDGET_OPTIONS_INIT;
  o.max_tokens = 0;
  CHECK_FAILS(mulligan_budget_create(&b, "x", &o, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "max_tokens");
  o = (mulligan_budget_options)MULLIGAN_BUDGET_OPTIONS_INIT;
  o.kind = MULLIGAN_BUDGET_QUOTA;
  o.capacity = 0;
  CHECK_FAILS(mulligan_budget_create(&b, "x", &o, NULL), MULLIGAN_E_INVALID_ARGUMENT, "capacity");
  o = (mulligan_budget_options)MULLIGAN_BUDGET_OPTIONS_INIT;
  o.kind = MULLIGAN_BUDGET_RATIO;
  o.percent = 1.5;
  CHECK_FAILS(mulligan_budget_create(&b, "x", &o, NULL), MULLIGAN_E_INVALID_ARGUMENT, "percent");
  o = (mulligan_budget_options)MULLIGAN_BUDGET_OPTIONS_INIT;
  o.kind = MULLIGAN_BUDGET_RATIO;
  o.ttl_ms = 500;
  CHECK_FAILS(mulligan_budget_create(&b, "x", &o, NULL), MULLIGAN_E_INVALID_ARGUMENT, "ttl_ms");
  o = (mulligan_budget_options)MULLIGAN_BUDGET_OPTIONS_INIT;
  o.kind = 7;
  CHECK_FAILS(mulligan_budget_create(&b, "x", &o, NULL), MULLIGAN_E_INVALID_ARGUMENT, "kind");
  o = (mulligan_budget_options)MULLIGAN_BUDGET_OPTIONS_INIT;
  o.struct_size = 4;
  CHECK_FAILS(mulligan_budget_create(&b, "x", &o, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "struct_size");
  CHECK_FAILS(mulligan_budget_shared(&b, "", NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT, "name");
  CHECK_FAILS(mulligan_budget_create(NULL, "x", NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT, "out");
  to.k = 0.5;
  CHECK_FAILS(mulligan_throttle_create(&t, "x", &to), MULLIGAN_E_INVALID_ARGUMENT, "k");
  to = (mulligan_throttle_options)MULLIGAN_THROTTLE_OPTIONS_INIT;
  to.window_ms = 0;
  CHECK_FAILS(mulligan_throttle_create(&t, "x", &to), MULLIGAN_E_INVALID_ARGUMENT, "window_ms");
  CHECK(b == NULL && t == NULL);
  /* NULL handles: errors or zeros, never a crash. */
  CHECK_FAILS(mulligan_budget_try_retry(NULL, 0, 0.0, NULL), MULLIGAN_E_INVALID_ARGUMENT,
              "budget");
  CHECK_FAILS(mulligan_budget_add_successes(NULL, 1), MULLIGAN_E_INVALID_ARGUMENT, "budget");
  CHECK_FAILS(mulligan_throttle_admit(NULL, 0.0), MULLIGAN_E_INVALID_ARGUMENT, "throttle");
  CHECK_INT(mulligan_budget_refused(NULL), 0);
  CHECK_INT(mulligan_throttle_rejected(NULL), 0);
  CHECK_INT(mulligan_budget_kind_of(NULL), -1);
  mulligan_budget_destroy(NULL);
  mulligan_throttle_destroy(NULL);
}

static void test_shared_by_name(void) {
  mulligan_budget_options o = MULLIGAN_BUDGET_OPTIONS_INIT;
  mulligan_budget *a = NULL, *b = NULL;
  double tokens = 0;
  o.max_tokens = 10;
  CHECK_OK(mulligan_budget_shared(&a, "capi-shared-budget", &o, NULL));
  o.max_tokens = 50; /* ignored: the first options made it */
  CHECK_OK(mulligan_budget_shared(&b, "capi-shared-budget", &o, NULL));
  CHECK_OK(mulligan_budget_on_failure(a, MULLIGAN_BUDGET_FAILURE_OTHER, 0.0));
  /* One bucket of 10 tokens: a's failure left 9, seen through b. */
  CHECK_OK(mulligan_budget_tokens(b, 0.0, &tokens));
  CHECK_NEAR(tokens, 9.0, 1e-12);
  mulligan_budget_destroy(a);
  mulligan_budget_destroy(b);
}

/* A pipeline of 10 attempts, no wait, over an A6 bucket of 10 tokens:
 * failures take 10 -> 9, 8, 7, 6 (each retry allowed: tokens > 5), and the
 * 5th failure leaves 5, not > 5: the retry is refused. 5 attempts, stop
 * reason budget, 4 retries allowed and 1 refused. */
static void test_pipeline_budget(void) {
  mulligan_budget_options bo = MULLIGAN_BUDGET_OPTIONS_INIT;
  mulligan_budget *b = NULL;
  mulligan_clock *clock = NULL;
  mulligan_retry_options *r = NULL;
  mulligan_pipeline_options *po = NULL;
  mulligan_pipeline *p = NULL;
  mulligan_call *call = NULL;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  int attempts = 0;
  bo.max_tokens = 10;
  bo.token_ratio = 0.1;
  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK_OK(mulligan_budget_create(&b, "capi-pipeline", &bo, clock));
  CHECK_OK(mulligan_retry_options_create(&r));
  CHECK_OK(mulligan_retry_options_set_max_attempts(r, 10));
  CHECK_OK(mulligan_retry_options_set_base_delay_ms(r, 0));
  CHECK_OK(mulligan_pipeline_options_create(&po));
  CHECK_OK(mulligan_pipeline_options_set_retry(po, r));
  CHECK_OK(mulligan_pipeline_options_set_clock(po, clock));
  CHECK_OK(mulligan_pipeline_options_set_budget(po, b));
  CHECK_OK(mulligan_pipeline_create(&p, po));
  mulligan_pipeline_options_destroy(po);
  mulligan_retry_options_destroy(r);
  mulligan_budget_destroy(b); /* the pipeline keeps the budget alive */
  CHECK_OK(mulligan_call_begin(&call, p, 0.0, NULL));
  do {
    mulligan_admission a = MULLIGAN_ADMISSION_INIT;
    mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
    CHECK_OK(mulligan_call_admit(call, 0.0, &a));
    CHECK_INT(a.action, MULLIGAN_ADMISSION_GO);
    o.http_status = 500;
    CHECK_OK(mulligan_call_record(call, &o, 0.0, &d));
    ++attempts;
  } while (d.action == MULLIGAN_ACTION_RETRY && attempts < 20);
  CHECK_INT(attempts, 5);
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_BUDGET);
  mulligan_call_destroy(call);
  mulligan_pipeline_destroy(p);
  mulligan_clock_destroy(clock);
}

static void test_budget_counts(void) {
  mulligan_budget_options bo = MULLIGAN_BUDGET_OPTIONS_INIT;
  mulligan_budget *b = NULL;
  int i;
  bo.max_tokens = 10;
  bo.token_ratio = 0.1;
  CHECK_OK(mulligan_budget_create(&b, NULL, &bo, NULL));
  /* The same arithmetic as above, stepped by hand: 4 allowed, 1 refused. */
  for (i = 0; i < 5; ++i) {
    CHECK_OK(mulligan_budget_on_failure(b, MULLIGAN_BUDGET_FAILURE_OTHER, 0.0));
    (void)mulligan_budget_try_retry(b, MULLIGAN_BUDGET_FAILURE_OTHER, 0.0, NULL);
  }
  CHECK_INT(mulligan_budget_allowed(b), 4);
  CHECK_INT(mulligan_budget_refused(b), 1);
  CHECK_FAILS(mulligan_budget_try_retry(b, MULLIGAN_BUDGET_FAILURE_OTHER, 0.0, NULL),
              MULLIGAN_E_BUDGET_EXHAUSTED, "refused");
  CHECK_FAILS(mulligan_budget_on_failure(b, 3, 0.0), MULLIGAN_E_INVALID_ARGUMENT, "kind");
  CHECK_FAILS(mulligan_budget_tokens(b, NAN, &bo.max_tokens), MULLIGAN_E_INVALID_ARGUMENT,
              "now_ms");
  CHECK_NEAR(bo.max_tokens, 0.0, 0.0); /* a lone out is zeroed on failure */
  mulligan_budget_destroy(b);
}

/* SRE throttling: a healthy window (every request accepted) gives p = 0
 * exactly, and no draw; 1000 overload answers and no accept give
 * p = (1000 - 2 * 0) / (1000 + 1). A pipeline over that throttle then
 * refuses with MULLIGAN_STOP_THROTTLED (seed 7: its first draw is below
 * 0.999, as a 1-in-1000 chance otherwise). */
static void test_throttle(void) {
  mulligan_throttle_options o = MULLIGAN_THROTTLE_OPTIONS_INIT;
  mulligan_throttle *t = NULL;
  mulligan_pipeline_options *po = NULL;
  mulligan_pipeline *p = NULL;
  mulligan_call *call = NULL;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  mulligan_outcome busy = MULLIGAN_OUTCOME_INIT;
  mulligan_outcome ok = MULLIGAN_OUTCOME_INIT;
  int64_t requests = -1, accepts = -1;
  double prob = -1;
  int i;
  o.has_seed = 1;
  o.seed = 7;
  CHECK_OK(mulligan_throttle_create(&t, "capi-throttle", &o));
  for (i = 0; i < 10; ++i) {
    CHECK_OK(mulligan_throttle_admit(t, 1000.0));
    CHECK_OK(mulligan_throttle_record(t, &ok));
  }
  CHECK_OK(mulligan_throttle_probability(t, 1000.0, &prob));
  CHECK_NEAR(prob, 0.0, 0.0); /* max(0, (10 - 2 * 10) / 11) */
  mulligan_throttle_destroy(t);
  t = NULL;
  CHECK_OK(mulligan_throttle_create(&t, "capi-throttle", &o)); /* a fresh one */
  busy.http_status = 503;
  for (i = 0; i < 1000; ++i) {
    if (mulligan_throttle_admit(t, 1000.0) == MULLIGAN_OK) {
      CHECK_OK(mulligan_throttle_record(t, &busy));
    }
  }
  CHECK_OK(mulligan_throttle_counts(t, 1000.0, &requests, &accepts));
  CHECK_INT(requests, 1000);
  CHECK_INT(accepts, 0);
  CHECK_OK(mulligan_throttle_probability(t, 1000.0, &prob));
  CHECK_NEAR(prob, 1000.0 / 1001.0, 1e-12);
  CHECK(mulligan_throttle_rejected(t) > 0);
  CHECK_OK(mulligan_pipeline_options_create(&po));
  CHECK_OK(mulligan_pipeline_options_set_throttle(po, t));
  CHECK_OK(mulligan_pipeline_create(&p, po));
  mulligan_pipeline_options_destroy(po);
  CHECK_OK(mulligan_call_begin(&call, p, 1000.0, NULL));
  CHECK_FAILS(mulligan_call_admit(call, 1000.0, &a), MULLIGAN_E_THROTTLED, "throttl");
  CHECK_INT(a.action, MULLIGAN_ADMISSION_REFUSE);
  CHECK_INT(a.reason, MULLIGAN_STOP_THROTTLED);
  mulligan_call_destroy(call);
  mulligan_pipeline_destroy(p);
  mulligan_throttle_destroy(t);
}

int main(void) {
  test_budget_vectors();
  test_throttle_vectors();
  test_bad_options();
  test_shared_by_name();
  test_pipeline_budget();
  test_budget_counts();
  test_throttle();
  return CHECK_REPORT();
}
