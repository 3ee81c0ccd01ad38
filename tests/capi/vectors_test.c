/* tests/capi/vectors_test.c — the shared vectors (tests/vectors/ JSON files, turned
 * into capi_vectors.h by gen_vectors.py) run through the C ABI, so C gets the
 * same semantics as C++ and Python (DESIGN.md section 7). Compiled as C99. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "capi_check.h"
#include "capi_vectors.h"
#include "mulligan.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int64_t ms_to_ns(double ms) { return (int64_t)llround(ms * 1e6); }

static void run_backoff_vectors(void) {
  size_t i, n;
  for (i = 0; i < COUNT(backoff_vectors); ++i) {
    const backoff_vector *v = &backoff_vectors[i];
    mulligan_retry_options *opts = NULL;
    mulligan_retry_policy *policy = NULL;
    mulligan_retry_session *session = NULL;
    CHECK_OK(mulligan_retry_options_create(&opts));
    CHECK_OK(mulligan_retry_options_set_backoff(opts, (mulligan_backoff_kind)v->backoff));
    CHECK_OK(mulligan_retry_options_set_jitter(opts, (mulligan_jitter_kind)v->jitter));
    CHECK_OK(mulligan_retry_options_set_base_delay_ms(opts, (double)v->base_ns / 1e6));
    CHECK_OK(mulligan_retry_options_set_max_delay_ms(opts, (double)v->max_delay_ns / 1e6));
    CHECK_OK(mulligan_retry_options_set_multiplier(opts, v->multiplier));
    CHECK_OK(mulligan_retry_options_set_jitter_fraction(opts, v->jitter_fraction));
    CHECK_OK(mulligan_retry_options_set_seed(opts, v->seed));
    CHECK_OK(mulligan_retry_options_set_max_attempts(opts, (int)v->count + 1));
    CHECK_OK(mulligan_retry_policy_create(&policy, opts));
    CHECK_OK(mulligan_retry_session_begin(&session, policy, NULL, 1));
    for (n = 0; session != NULL && n < v->count; ++n) {
      mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
      mulligan_decision d = MULLIGAN_DECISION_INIT;
      o.error_kind = MULLIGAN_ERROR_RETRYABLE;
      CHECK_OK(mulligan_retry_session_on_outcome(session, &o, &d));
      CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
      if (ms_to_ns(d.delay_ms) != v->expected_ns[n]) {
        fprintf(stderr, "backoff vector \"%s\" retry %u: ", v->name, (unsigned)n);
      }
      CHECK_INT(ms_to_ns(d.delay_ms), v->expected_ns[n]);
    }
    mulligan_retry_session_destroy(session);
    mulligan_retry_policy_destroy(policy);
    mulligan_retry_options_destroy(opts);
  }
  printf("%u backoff vectors\n", (unsigned)COUNT(backoff_vectors));
}

static void run_retry_after_vectors(void) {
  size_t i;
  for (i = 0; i < COUNT(retry_after_vectors); ++i) {
    const retry_after_vector *v = &retry_after_vectors[i];
    double delay = 0;
    int rc = mulligan_retry_after_parse(v->value, v->now_unix * 1000, &delay);
    int ok;
    if (v->saturated) {
      ok = rc == MULLIGAN_OK && delay == MULLIGAN_DURATION_MAX_MS;
    } else if (v->valid) {
      ok = rc == MULLIGAN_OK && delay == (double)v->expected_seconds * 1000.0;
    } else {
      ok = rc == MULLIGAN_E_INVALID_ARGUMENT && delay == -1.0;
    }
    if (!ok) {
      fprintf(stderr, "retry-after vector \"%s\": rc %d delay %.17g ms (%s)\n", v->value, rc,
              delay, mulligan_last_error());
    }
    CHECK(ok);
  }
  printf("%u retry-after vectors\n", (unsigned)COUNT(retry_after_vectors));
}

static mulligan_retry_policy *session_policy(const session_vector *v) {
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  CHECK_OK(mulligan_retry_options_create(&opts));
  if (v->max_attempts >= 0) CHECK_OK(mulligan_retry_options_set_max_attempts(opts, v->max_attempts));
  if (v->backoff >= 0) {
    CHECK_OK(mulligan_retry_options_set_backoff(opts, (mulligan_backoff_kind)v->backoff));
  }
  if (v->base_delay_s >= 0) {
    CHECK_OK(mulligan_retry_options_set_base_delay_ms(opts, v->base_delay_s * 1000));
  }
  if (v->multiplier >= 0) CHECK_OK(mulligan_retry_options_set_multiplier(opts, v->multiplier));
  if (v->max_delay_s >= 0) {
    CHECK_OK(mulligan_retry_options_set_max_delay_ms(opts, v->max_delay_s * 1000));
  }
  if (v->jitter >= 0) {
    CHECK_OK(mulligan_retry_options_set_jitter(opts, (mulligan_jitter_kind)v->jitter));
  }
  if (v->deadline_s >= 0) {
    CHECK_OK(mulligan_retry_options_set_deadline_ms(opts, v->deadline_s * 1000));
  }
  if (v->retry_after_max_s >= 0) {
    CHECK_OK(mulligan_retry_options_set_retry_after_max_ms(opts, v->retry_after_max_s * 1000));
  }
  if (v->retry_after_clamp >= 0) {
    CHECK_OK(mulligan_retry_options_set_retry_after_clamp(opts, v->retry_after_clamp));
  }
  CHECK_OK(mulligan_retry_policy_create(&policy, opts));
  mulligan_retry_options_destroy(opts);
  return policy;
}

static void run_session_vectors(void) {
  size_t i, j;
  for (i = 0; i < COUNT(session_vectors); ++i) {
    const session_vector *v = &session_vectors[i];
    mulligan_retry_policy *policy = session_policy(v);
    mulligan_clock *clock = NULL;
    mulligan_retry_session *session = NULL;
    int64_t now_ns = 0;
    int failures_before = check_failures;
    CHECK_OK(mulligan_clock_create_fake(&clock));
    CHECK_OK(mulligan_retry_session_begin(&session, policy, clock, v->replay_safe));
    for (j = 0; session != NULL && j < v->step_count; ++j) {
      const session_step *s = &v->steps[j];
      mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
      mulligan_decision d = MULLIGAN_DECISION_INIT;
      const int64_t at_ns = (int64_t)llround(s->at_s * 1e9);
      CHECK(at_ns >= now_ns);
      CHECK_OK(mulligan_clock_advance_ms(clock, (double)(at_ns - now_ns) / 1e6));
      now_ns = at_ns;
      o.error_kind = s->error_kind;
      o.http_status = s->http_status;
      o.retry_after_ms = s->retry_after_s >= 0 ? s->retry_after_s * 1000 : -1.0;
      CHECK_OK(mulligan_retry_session_on_outcome(session, &o, &d));
      CHECK_INT(d.action, s->action);
      CHECK_INT(d.attempt, (int)j + 1);
      if (s->delay_s >= 0) CHECK_NEAR(d.delay_ms, s->delay_s * 1000, 1e-6);
      if (s->reason >= 0) CHECK_INT(d.reason, s->reason);
      if (s->action == MULLIGAN_ACTION_RETRY) CHECK_INT(d.reason, MULLIGAN_STOP_NONE);
      if (s->from_retry_after >= 0) CHECK_INT(d.from_retry_after, s->from_retry_after);
    }
    if (check_failures != failures_before) {
      fprintf(stderr, "  in session vector \"%s\"\n", v->name);
    }
    mulligan_retry_session_destroy(session);
    mulligan_clock_destroy(clock);
    mulligan_retry_policy_destroy(policy);
  }
  printf("%u session vectors\n", (unsigned)COUNT(session_vectors));
}

int main(void) {
  run_backoff_vectors();
  run_retry_after_vectors();
  run_session_vectors();
  return CHECK_REPORT();
}
