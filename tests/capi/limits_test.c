/* The bulkhead and rate limiter from C (mulligan_limits.h): bad options,
 * the shared GCRA vectors of tests/vectors/rate_limiter_gcra.json (via the
 * generated capi_limits_vectors.h), and a pipeline that refuses with
 * MULLIGAN_STOP_BULKHEAD_FULL and waits with MULLIGAN_ADMISSION_WAIT. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "capi_limits_vectors.h"
#include "mulligan.h"

static void test_bad_options(void) {
  mulligan_bulkhead *b = NULL;
  mulligan_rate_limiter *l = NULL;
  CHECK_FAILS(mulligan_bulkhead_create(&b, "db", 0, 0, -1), MULLIGAN_E_INVALID_ARGUMENT,
              "max_concurrent");
  CHECK_FAILS(mulligan_rate_limiter_create(&l, "api", -1.0, 1.0, -1, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "rate");
  CHECK_FAILS(mulligan_rate_limiter_create(&l, "api", 1.0, 0.5, -1, 0),
              MULLIGAN_E_INVALID_ARGUMENT, "burst");
  CHECK(b == NULL && l == NULL);
}

static void test_gcra_vectors(void) {
  int c, i;
  const double t0 = 1000000.0; /* ms */
  for (c = 0; c < GCRA_CASE_COUNT; ++c) {
    const gcra_case *gc = &gcra_cases[c];
    mulligan_rate_limiter *l = NULL;
    CHECK_OK(mulligan_rate_limiter_create(&l, "vector", gc->rate, gc->burst, -1, 0));
    for (i = 0; i < gc->n; ++i) {
      const gcra_step *s = &gc->steps[i];
      double wait_ms = -1, retry_in_ms = -1;
      int rc;
      if (s->penalize) {
        /* The C ABI feeds Retry-After through a pipeline's outcomes only;
         * the rest of this case needs the penalty: C++ and Python run it. */
        break;
      }
      rc = mulligan_rate_limiter_acquire(l, s->key, t0 + s->at * 1000.0,
                                         s->max_wait < 0 ? 1e18 : s->max_wait * 1000.0, &wait_ms,
                                         &retry_in_ms);
      CHECK_INT(rc == MULLIGAN_OK, s->admitted);
      CHECK_NEAR(wait_ms, (double)s->wait_ns / 1e6, 1e-5);
      CHECK_NEAR(retry_in_ms, (double)s->retry_in_ns / 1e6, 1e-5);
    }
    mulligan_rate_limiter_destroy(l);
  }
}

static void test_pipeline_bulkhead(void) {
  mulligan_bulkhead *b = NULL;
  mulligan_pipeline_options *opts = NULL;
  mulligan_pipeline *p = NULL;
  mulligan_call *held = NULL, *refused = NULL;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  CHECK_OK(mulligan_bulkhead_create(&b, "db", 1, 0, -1));
  CHECK_OK(mulligan_pipeline_options_create(&opts));
  CHECK_OK(mulligan_pipeline_options_set_bulkhead(opts, b, 0));
  CHECK_OK(mulligan_pipeline_create(&p, opts));
  CHECK_OK(mulligan_call_begin(&held, p, 0.0, NULL));
  CHECK_OK(mulligan_call_admit(held, 0.0, &a));
  CHECK_INT(a.action, MULLIGAN_ADMISSION_GO);
  CHECK_INT(mulligan_bulkhead_in_flight(b), 1);
  CHECK_OK(mulligan_call_begin(&refused, p, 0.0, NULL));
  CHECK_FAILS(mulligan_call_admit(refused, 0.0, &a), MULLIGAN_E_BULKHEAD_FULL, "bulkhead 'db'");
  CHECK_INT(a.reason, MULLIGAN_STOP_BULKHEAD_FULL);
  mulligan_call_destroy(refused);
  mulligan_call_destroy(held); /* abandoned: frees the slot */
  CHECK_INT(mulligan_bulkhead_in_flight(b), 0);
  mulligan_pipeline_destroy(p);
  mulligan_pipeline_options_destroy(opts);
  mulligan_bulkhead_destroy(b);
}

int main(void) {
  test_bad_options();
  test_gcra_vectors();
  test_pipeline_bulkhead();
  return CHECK_REPORT();
}
