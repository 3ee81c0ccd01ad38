/* tests/capi/wait_test.c — composed waits, min delay and unlimited attempts
 * through the C ABI (mulligan_wait.h): the shared vectors of
 * tests/vectors/waits.json (converted by gen_wait_vectors.py) and the
 * argument checks. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "capi_wait_vectors.h"
#include "mulligan.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int64_t ms_to_ns(double ms) { return (int64_t)llround(ms * 1e6); }

/* Builds a vector's wait from its postfix operations. */
static mulligan_wait *build(const wait_vector *v) {
  mulligan_wait *stack[64];
  size_t top = 0, i, k;
  for (i = 0; i < v->op_count; ++i) {
    const wait_op *op = &v->ops[i];
    mulligan_wait *w = NULL;
    switch (op->kind) {
      case 0: CHECK_OK(mulligan_wait_constant(&w, op->a_ms)); break;
      case 1: CHECK_OK(mulligan_wait_linear(&w, op->a_ms, op->b_ms, op->max_ms)); break;
      case 2: CHECK_OK(mulligan_wait_exponential(&w, op->a_ms, op->multiplier, op->max_ms)); break;
      case 3: CHECK_OK(mulligan_wait_uniform(&w, op->a_ms, op->b_ms)); break;
      case 4: CHECK_OK(mulligan_wait_jitter(&w, op->a_ms)); break;
      default: {
        const mulligan_wait *const *terms = (const mulligan_wait *const *)&stack[top - op->terms];
        if (op->kind == 5) {
          CHECK_OK(mulligan_wait_sum(&w, terms, op->terms));
        } else {
          CHECK_OK(mulligan_wait_chain(&w, terms, op->terms));
        }
        for (k = 0; k < op->terms; ++k) mulligan_wait_destroy(stack[--top]);
      }
    }
    stack[top++] = w;
  }
  CHECK_INT((int)top, 1);
  return stack[0];
}

static void run_vectors(void) {
  size_t i, n;
  for (i = 0; i < COUNT(wait_vectors); ++i) {
    const wait_vector *v = &wait_vectors[i];
    mulligan_retry_options *opts = NULL;
    mulligan_retry_policy *policy = NULL;
    mulligan_retry_session *session = NULL;
    mulligan_wait *wait = build(v);
    CHECK_OK(mulligan_retry_options_create(&opts));
    CHECK_OK(mulligan_retry_options_set_wait(opts, wait));
    mulligan_wait_destroy(wait); /* the options hold a copy */
    CHECK_OK(mulligan_retry_options_set_min_delay_ms(opts, v->min_delay_ms));
    CHECK_OK(mulligan_retry_options_set_max_delay_ms(opts, v->max_delay_ms));
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
        fprintf(stderr, "wait vector \"%s\" retry %u: ", v->name, (unsigned)n);
      }
      CHECK_INT(ms_to_ns(d.delay_ms), v->expected_ns[n]);
    }
    mulligan_retry_session_destroy(session);
    mulligan_retry_policy_destroy(policy);
    mulligan_retry_options_destroy(opts);
  }
  printf("%u wait vectors\n", (unsigned)COUNT(wait_vectors));
}

static void bad_arguments(void) {
  mulligan_wait *w = NULL, *sum = NULL;
  const mulligan_wait *terms[2];
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  CHECK_INT(mulligan_wait_constant(&w, -1.0), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(w == NULL);
  CHECK(strstr(mulligan_last_error(), "delay_ms") != NULL);
  CHECK_INT(mulligan_wait_uniform(&w, 3.0, 2.0), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "high_ms must be >= low_ms") != NULL);
  CHECK_INT(mulligan_wait_exponential(&w, 1.0, NAN, MULLIGAN_WAIT_NO_MAX),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK_INT(mulligan_wait_linear(&w, 0.0, INFINITY, MULLIGAN_WAIT_NO_MAX),
            MULLIGAN_E_INVALID_ARGUMENT);
  CHECK_INT(mulligan_wait_jitter(&w, NAN), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK_INT(mulligan_wait_sum(&sum, terms, 0), MULLIGAN_E_INVALID_ARGUMENT);
  terms[0] = NULL;
  CHECK_INT(mulligan_wait_chain(&sum, terms, 1), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "waits[0]") != NULL);
  mulligan_wait_destroy(NULL);

  CHECK_OK(mulligan_retry_options_create(&opts));
  CHECK_INT(mulligan_retry_options_set_min_delay_ms(opts, -5.0), MULLIGAN_E_INVALID_ARGUMENT);
  /* min_delay above max_delay (10 s) is refused by the policy. */
  CHECK_OK(mulligan_retry_options_set_min_delay_ms(opts, 20000.0));
  CHECK_INT(mulligan_retry_policy_create(&policy, opts), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "min_delay") != NULL);
  CHECK_OK(mulligan_retry_options_set_min_delay_ms(opts, 0.0));
  /* Unlimited attempts need a deadline. */
  CHECK_OK(mulligan_retry_options_set_unlimited_attempts(opts, 1));
  CHECK_INT(mulligan_retry_policy_create(&policy, opts), MULLIGAN_E_INVALID_ARGUMENT);
  CHECK(strstr(mulligan_last_error(), "unlimited attempts") != NULL);
  mulligan_retry_options_destroy(opts);
  CHECK_INT(mulligan_retry_options_set_wait(NULL, NULL), MULLIGAN_E_INVALID_ARGUMENT);
}

static void unlimited_attempts_within_a_deadline(void) {
  /* Constant 1 s waits, unlimited attempts, a 5 s deadline: attempts end at
   * 0, 1, 2, 3 s and retry; after the one at 4 s the wait would reach 5 s. */
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_retry_session *session = NULL;
  mulligan_clock *clock = NULL;
  mulligan_wait *w = NULL;
  int i;
  CHECK_OK(mulligan_retry_options_create(&opts));
  CHECK_OK(mulligan_wait_constant(&w, 1000.0));
  CHECK_OK(mulligan_retry_options_set_wait(opts, w));
  mulligan_wait_destroy(w);
  CHECK_OK(mulligan_retry_options_set_max_attempts(opts, 1)); /* ignored when unlimited */
  CHECK_OK(mulligan_retry_options_set_unlimited_attempts(opts, 1));
  CHECK_OK(mulligan_retry_options_set_deadline_ms(opts, 5000.0));
  CHECK_OK(mulligan_retry_policy_create(&policy, opts));
  CHECK_OK(mulligan_clock_create_fake(&clock));
  CHECK_OK(mulligan_retry_session_begin(&session, policy, clock, 1));
  for (i = 0; i < 5; ++i) {
    mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
    mulligan_decision d = MULLIGAN_DECISION_INIT;
    o.error_kind = MULLIGAN_ERROR_RETRYABLE;
    CHECK_OK(mulligan_retry_session_on_outcome(session, &o, &d));
    if (i < 4) {
      CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
      CHECK(d.delay_ms == 1000.0);
      CHECK_OK(mulligan_clock_advance_ms(clock, 1000.0));
    } else {
      CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
      CHECK_INT(d.reason, MULLIGAN_STOP_DEADLINE);
    }
  }
  CHECK(strcmp(mulligan_stop_reason_str(MULLIGAN_STOP_STOP_CONDITION), "stop_condition") == 0);
  mulligan_retry_session_destroy(session);
  mulligan_clock_destroy(clock);
  mulligan_retry_policy_destroy(policy);
  mulligan_retry_options_destroy(opts);
}

static void kind_retries(void) {
  /* At most 1 connect retry inside 5 attempts: refused, refused -> stop. */
  mulligan_retry_options *opts = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_retry_session *session = NULL;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  CHECK_OK(mulligan_retry_options_create(&opts));
  CHECK_OK(mulligan_retry_options_set_max_attempts(opts, 5));
  CHECK_OK(mulligan_retry_options_set_kind_retries(opts, MULLIGAN_RETRY_KIND_CONNECT, 1));
  CHECK_FAILS(mulligan_retry_options_set_kind_retries(opts, 4, 1), MULLIGAN_E_INVALID_ARGUMENT,
              "mulligan_retry_kind");
  CHECK_OK(mulligan_retry_policy_create(&policy, opts));
  CHECK_OK(mulligan_retry_session_begin(&session, policy, NULL, 1));
  o.error_kind = MULLIGAN_ERROR_CONNECTION_REFUSED;
  CHECK_OK(mulligan_retry_session_on_outcome(session, &o, &d));
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  o.error_kind = MULLIGAN_ERROR_NONE;
  o.http_status = 503; /* a status retry: not counted against connect */
  CHECK_OK(mulligan_retry_session_on_outcome(session, &o, &d));
  CHECK_INT(d.action, MULLIGAN_ACTION_RETRY);
  o.http_status = 0;
  o.error_kind = MULLIGAN_ERROR_CONNECTION_REFUSED;
  CHECK_OK(mulligan_retry_session_on_outcome(session, &o, &d));
  CHECK_INT(d.action, MULLIGAN_ACTION_STOP);
  CHECK_INT(d.reason, MULLIGAN_STOP_ATTEMPTS_EXHAUSTED);
  CHECK_INT(d.attempt, 3);
  mulligan_retry_session_destroy(session);
  mulligan_retry_policy_destroy(policy);
  mulligan_retry_options_destroy(opts);
}

int main(void) {
  run_vectors();
  bad_arguments();
  unlimited_attempts_within_a_deadline();
  kind_retries();
  return CHECK_REPORT();
}
