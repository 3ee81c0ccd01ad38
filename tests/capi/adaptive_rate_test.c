/* The adaptive client rate from C (mulligan_adaptive_rate.h): bad options
 * name the field, and the CUBIC steps of tests/vectors/adaptive_rate.json
 * (made by tests/vectors/gen_adaptive_rate_vectors.py from the AWS spec's
 * pseudo-code; converted to capi_adaptive_rate_vectors.h) match. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "capi_adaptive_rate_vectors.h"
#include "capi_check.h"
#include "mulligan.h"

static void test_bad_options(void) {
  mulligan_adaptive_rate *r = NULL;
  CHECK_FAILS(mulligan_adaptive_rate_create(&r, "aws", 0, 1.5, 0.4, -1),
              MULLIGAN_E_INVALID_ARGUMENT, "beta");
  CHECK_FAILS(mulligan_adaptive_rate_create(&r, "aws", 0, 0.7, 0.0, -1),
              MULLIGAN_E_INVALID_ARGUMENT, "scale_constant");
  CHECK(r == NULL);
}

static double rel(double x) { return 1e-9 * (fabs(x) > 1 ? fabs(x) : 1); }

static void test_vectors(void) {
  int c, i, checked = 0;
  for (c = 0; c < AR_SCENARIO_COUNT; ++c) {
    const ar_scenario *sc = &ar_scenarios[c];
    mulligan_adaptive_rate *r = NULL;
    CHECK_OK(mulligan_adaptive_rate_create(&r, sc->name, sc->start * 1000.0, 0.7, 0.4,
                                           sc->max_wait < 0 ? -1 : sc->max_wait * 1000.0));
    for (i = 0; i < sc->n; ++i) {
      const ar_step *s = &sc->steps[i];
      const double now = s->t * 1000.0;
      if (s->op == 0) {
        double wait_ms = -1, retry_in_ms = -1;
        const int rc = mulligan_adaptive_rate_acquire(r, now, -1, &wait_ms, &retry_in_ms);
        CHECK_INT(rc == MULLIGAN_OK, s->admitted);
        CHECK_NEAR(s->admitted ? wait_ms : retry_in_ms, s->wait * 1000.0, 1e-5);
      } else {
        CHECK_OK(mulligan_adaptive_rate_record(r, s->op == 2, now));
        CHECK_NEAR(mulligan_adaptive_rate_get(r, MULLIGAN_ADAPTIVE_CALCULATED_RATE, now),
                   s->calculated, rel(s->calculated));
        CHECK_NEAR(mulligan_adaptive_rate_get(r, MULLIGAN_ADAPTIVE_MEASURED_RATE, now),
                   s->measured, rel(s->measured));
        CHECK_NEAR(mulligan_adaptive_rate_get(r, MULLIGAN_ADAPTIVE_FILL_RATE, now), s->fill_rate,
                   rel(s->fill_rate));
        CHECK_NEAR(mulligan_adaptive_rate_get(r, MULLIGAN_ADAPTIVE_MAX_CAPACITY, now),
                   s->max_capacity, rel(s->max_capacity));
        CHECK_NEAR(mulligan_adaptive_rate_get(r, MULLIGAN_ADAPTIVE_LAST_MAX_RATE, now),
                   s->last_max_rate, rel(s->last_max_rate));
        CHECK_NEAR(mulligan_adaptive_rate_get(r, MULLIGAN_ADAPTIVE_TIME_WINDOW, now),
                   s->time_window, rel(s->time_window));
        CHECK_INT((int)mulligan_adaptive_rate_get(r, MULLIGAN_ADAPTIVE_ENABLED, now), s->enabled);
      }
      ++checked;
    }
    mulligan_adaptive_rate_destroy(r);
  }
  CHECK(checked > 60);
}

int main(void) {
  test_bad_options();
  test_vectors();
  return CHECK_REPORT();
}
