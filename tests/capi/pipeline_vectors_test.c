/* tests/capi/pipeline_vectors_test.c — the shared logical calls of
 * tests/vectors/pipeline.json (via the generated capi_pipeline_vectors.h),
 * run through both C front doors with a fake clock, as every other front
 * door runs them: the same attempts, waits, stop reasons, refusals, breaker
 * states and metrics.
 *
 * The front doors: the step API of mulligan_pipeline.h (this file's loop is
 * what a Go, Rust or Node binding does), and mulligan_retry_call() (the
 * library's own loop, waiting through the fake clock). Each runs every case
 * with two spellings of its outcomes: classified failures
 * (MULLIGAN_ERROR_RETRYABLE / _TERMINAL, an exception's kind) and HTTP
 * statuses (503 / 404, 200 for a success); a Retry-After hint rides on
 * either. Each run reports under its own metrics name, so the totals are the
 * run's alone. */
#include <stdio.h>
#include <string.h>

#include "capi_check.h"
#include "capi_pipeline_vectors.h"
#include "mulligan.h"

enum { KINDS = 0, HTTP = 1 };
static const char *const flavour_names[] = {"kinds", "http"};
enum { STEPS = 0, RETRY_CALL = 1 };
static const char *const door_names[] = {"steps", "retry_call"};

static mulligan_outcome make_outcome(const pipeline_attempt *step, int flavour) {
  static const int kinds[] = {MULLIGAN_ERROR_NONE, MULLIGAN_ERROR_RETRYABLE,
                              MULLIGAN_ERROR_TERMINAL};
  static const int statuses[] = {200, 503, 404};
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  if (flavour == KINDS) {
    o.error_kind = kinds[step->outcome];
  } else {
    o.http_status = statuses[step->outcome];
  }
  o.retry_after_ms = step->retry_after_ms;
  return o;
}

/* The case's retry options: unset fields keep the defaults. */
static mulligan_retry_options *retry_options_of(const pipeline_vector *v) {
  mulligan_retry_options *r = NULL;
  CHECK_OK(mulligan_retry_options_create(&r));
  if (v->max_attempts >= 0) CHECK_OK(mulligan_retry_options_set_max_attempts(r, v->max_attempts));
  if (v->backoff >= 0)
    CHECK_OK(mulligan_retry_options_set_backoff(r, (mulligan_backoff_kind)v->backoff));
  if (v->base_delay_ms >= 0) CHECK_OK(mulligan_retry_options_set_base_delay_ms(r, v->base_delay_ms));
  if (v->multiplier >= 0) CHECK_OK(mulligan_retry_options_set_multiplier(r, v->multiplier));
  if (v->max_delay_ms >= 0) CHECK_OK(mulligan_retry_options_set_max_delay_ms(r, v->max_delay_ms));
  CHECK_OK(mulligan_retry_options_set_jitter(r, (mulligan_jitter_kind)v->jitter));
  if (v->deadline_ms >= 0) CHECK_OK(mulligan_retry_options_set_deadline_ms(r, v->deadline_ms));
  if (v->retry_after_max_ms >= 0)
    CHECK_OK(mulligan_retry_options_set_retry_after_max_ms(r, v->retry_after_max_ms));
  return r;
}

/* The case's breaker, shared by its calls and named like its metrics; NULL
 * when the case has none. */
static mulligan_breaker *breaker_of(const pipeline_vector *v, const char *name,
                                    mulligan_clock *clock) {
  mulligan_breaker_options *bo = NULL;
  mulligan_breaker *b = NULL;
  if (!v->has_breaker) return NULL;
  CHECK_OK(mulligan_breaker_options_create(&bo));
  CHECK_OK(mulligan_breaker_options_set_name(bo, name));
  CHECK_OK(mulligan_breaker_options_set_clock(bo, clock));
  if (v->failure_threshold >= 0)
    CHECK_OK(mulligan_breaker_options_set_failure_threshold(bo, v->failure_threshold));
  if (v->reset_timeout_ms >= 0)
    CHECK_OK(mulligan_breaker_options_set_reset_timeout_ms(bo, v->reset_timeout_ms));
  if (v->half_open_max_calls >= 0)
    CHECK_OK(mulligan_breaker_options_set_half_open_max_calls(bo, v->half_open_max_calls));
  CHECK_OK(mulligan_breaker_create(&b, bo));
  mulligan_breaker_options_destroy(bo);
  return b;
}

static mulligan_pipeline *pipeline_of(const pipeline_vector *v, const char *name,
                                      mulligan_clock *clock, const mulligan_breaker *breaker) {
  mulligan_retry_options *r = retry_options_of(v);
  mulligan_pipeline_options *po = NULL;
  mulligan_pipeline *p = NULL;
  CHECK_OK(mulligan_pipeline_options_create(&po));
  CHECK_OK(mulligan_pipeline_options_set_name(po, name));
  CHECK_OK(mulligan_pipeline_options_set_retry(po, r));
  CHECK_OK(mulligan_pipeline_options_set_breaker(po, breaker));
  CHECK_OK(mulligan_pipeline_options_set_clock(po, clock));
  CHECK_OK(mulligan_pipeline_create(&p, po));
  mulligan_pipeline_options_destroy(po);
  mulligan_retry_options_destroy(r);
  return p;
}

/* mulligan_retry_call takes a policy and a breaker, not a pipeline. */
static mulligan_retry_policy *policy_of(const pipeline_vector *v) {
  mulligan_retry_options *r = retry_options_of(v);
  mulligan_retry_policy *policy = NULL;
  CHECK_OK(mulligan_retry_policy_create(&policy, r));
  mulligan_retry_options_destroy(r);
  return policy;
}

/* Steps one logical call as a binding's loop would, and checks what it did. */
static void run_call(const pipeline_call_vector *c, int flavour, mulligan_pipeline *p,
                     mulligan_clock *clock, const mulligan_breaker *breaker) {
  mulligan_call *call = NULL;
  double delays[16];
  double total = 0.0;
  size_t delay_count = 0, k;
  int stop_reason = -1, refused = 0, used = 0;
  CHECK_OK(mulligan_clock_advance_ms(clock, c->advance_ms));
  CHECK_OK(mulligan_call_begin(&call, p, mulligan_pipeline_now_ms(p), NULL));
  for (;;) {
    mulligan_admission a = MULLIGAN_ADMISSION_INIT;
    mulligan_decision d = MULLIGAN_DECISION_INIT;
    mulligan_outcome o;
    const int rc = mulligan_call_admit(call, mulligan_pipeline_now_ms(p), &a);
    if (rc == MULLIGAN_E_CIRCUIT_OPEN) {
      refused = 1;
      stop_reason = a.reason;
      CHECK_INT(a.action, MULLIGAN_ADMISSION_REFUSE);
      CHECK(strstr(mulligan_last_error(), "is open; next probe in") != NULL);
      break;
    }
    CHECK_OK(rc);
    CHECK_INT(a.action, MULLIGAN_ADMISSION_GO);
    if ((size_t)used >= c->script_count || delay_count >= 16) {
      CHECK(!"the call wants more attempts than its script holds");
      break;
    }
    o = make_outcome(&c->script[used++], flavour);
    CHECK_OK(mulligan_call_record(call, &o, mulligan_pipeline_now_ms(p), &d));
    CHECK_INT(d.attempt, used);
    if (d.action == MULLIGAN_ACTION_STOP) {
      stop_reason = d.reason;
      break;
    }
    delays[delay_count++] = d.delay_ms;
    total += d.delay_ms;
    CHECK_OK(mulligan_clock_advance_ms(clock, d.delay_ms)); /* attempts take no time */
  }
  CHECK_INT(mulligan_call_finished(call), 1);
  CHECK_INT(mulligan_call_attempts(call), c->attempts);
  CHECK_INT(stop_reason, c->stop_reason);
  CHECK_INT(refused, c->refused);
  CHECK_INT(delay_count, c->delay_count);
  for (k = 0; k < delay_count && k < c->delay_count; ++k) {
    CHECK_NEAR(delays[k], c->delays_ms[k], 1e-6);
  }
  CHECK_NEAR(mulligan_call_total_delay_ms(call), total, 1e-6);
  if (c->breaker_state >= 0) CHECK_INT(mulligan_breaker_state_now(breaker), c->breaker_state);
  mulligan_call_destroy(call);
}

/* What mulligan_retry_call's attempt callback needs, and what it saw. */
typedef struct retry_call_script {
  const pipeline_call_vector *call;
  int flavour;
  mulligan_clock *clock;
  int used;
  double started_ms[16]; /* when each attempt started */
} retry_call_script;

static int scripted_attempt(int attempt_number, mulligan_outcome *out, void *user_data) {
  retry_call_script *s = (retry_call_script *)user_data;
  CHECK_INT(attempt_number, s->used + 1);
  if ((size_t)s->used >= s->call->script_count || s->used >= 16) {
    CHECK(!"the call wants more attempts than its script holds");
    return 1; /* aborts the call */
  }
  s->started_ms[s->used] = mulligan_clock_now_ms(s->clock);
  *out = make_outcome(&s->call->script[s->used++], s->flavour);
  return 0;
}

/* The same logical call through mulligan_retry_call: its waits are seen as
 * the time between attempts (plus, before a refusal, in total_delay_ms). */
static void run_retry_call(const pipeline_call_vector *c, int flavour, const char *name,
                           const mulligan_retry_policy *policy, mulligan_clock *clock,
                           mulligan_breaker *breaker) {
  mulligan_retry_call_options opts = MULLIGAN_RETRY_CALL_OPTIONS_INIT;
  mulligan_retry_call_info info = MULLIGAN_RETRY_CALL_INFO_INIT;
  retry_call_script script;
  double expected_total = 0.0;
  size_t k;
  int rc;
  CHECK_OK(mulligan_clock_advance_ms(clock, c->advance_ms));
  memset(&script, 0, sizeof script);
  script.call = c;
  script.flavour = flavour;
  script.clock = clock;
  opts.clock = clock;
  opts.breaker = breaker;
  opts.metrics_name = name;
  rc = mulligan_retry_call(policy, scripted_attempt, &script, &opts, &info);
  CHECK_INT(info.attempts, c->attempts);
  CHECK_INT(info.circuit_open, c->refused);
  if (c->refused) {
    CHECK_INT(rc, MULLIGAN_E_CIRCUIT_OPEN);
    CHECK_INT(info.stop_reason, MULLIGAN_STOP_NONE); /* the 0.1 contract */
    CHECK_INT(c->stop_reason, MULLIGAN_STOP_CIRCUIT_OPEN);
  } else {
    CHECK_INT(rc == MULLIGAN_OK, c->stop_reason == MULLIGAN_STOP_SUCCEEDED);
    CHECK_INT(info.stop_reason, c->stop_reason);
  }
  for (k = 0; k + 1 < (size_t)script.used && k < c->delay_count; ++k) {
    CHECK_NEAR(script.started_ms[k + 1] - script.started_ms[k], c->delays_ms[k], 1e-6);
  }
  for (k = 0; k < c->delay_count; ++k) expected_total += c->delays_ms[k];
  CHECK_NEAR(info.total_delay_ms, expected_total, 1e-6);
  if (c->breaker_state >= 0) CHECK_INT(mulligan_breaker_state_now(breaker), c->breaker_state);
}

static void run_case(const pipeline_vector *v, size_t index, int door, int flavour) {
  char name[80];
  mulligan_clock *clock = NULL;
  mulligan_breaker *breaker;
  mulligan_pipeline *p = NULL;
  mulligan_retry_policy *policy = NULL;
  mulligan_metrics_snapshot s = MULLIGAN_METRICS_SNAPSHOT_INIT;
  long long actual[5];
  size_t i;
  int before = check_failures;
  snprintf(name, sizeof name, "pipeline.json#%u/%s/%s", (unsigned)index, door_names[door],
           flavour_names[flavour]);
  CHECK_OK(mulligan_clock_create_fake(&clock));
  breaker = breaker_of(v, name, clock);
  if (door == STEPS) {
    p = pipeline_of(v, name, clock, breaker);
  } else {
    policy = policy_of(v);
  }
  for (i = 0; i < v->call_count; ++i) {
    const int call_before = check_failures;
    if (door == STEPS) {
      run_call(&v->calls[i], flavour, p, clock, breaker);
    } else {
      run_retry_call(&v->calls[i], flavour, name, policy, clock, breaker);
    }
    if (check_failures != call_before) fprintf(stderr, "  in call %u\n", (unsigned)i);
  }
  CHECK_OK(mulligan_metrics_get(name, &s));
  actual[0] = (long long)s.calls;
  actual[1] = (long long)s.attempts;
  actual[2] = (long long)s.retries;
  actual[3] = (long long)s.successes;
  actual[4] = (long long)s.failures;
  for (i = 0; i < 5; ++i) {
    ++check_count;
    if (v->metrics[i] >= 0 && actual[i] != v->metrics[i]) {
      ++check_failures;
      fprintf(stderr, "metrics %s == %lld, expected %lld\n", pipeline_metric_names[i], actual[i],
              v->metrics[i]);
    }
  }
  CHECK_INT(s.in_flight, 0);
  CHECK_INT(s.waiting_to_retry, 0);
  if (check_failures != before) fprintf(stderr, "  in \"%s\" (%s)\n", v->name, name);
  mulligan_pipeline_destroy(p);
  mulligan_retry_policy_destroy(policy);
  mulligan_breaker_destroy(breaker);
  mulligan_clock_destroy(clock);
}

int main(void) {
  size_t i, n = sizeof pipeline_vectors / sizeof pipeline_vectors[0];
  int door, flavour;
  CHECK(n >= 9);
  for (i = 0; i < n; ++i) {
    for (door = STEPS; door <= RETRY_CALL; ++door) {
      for (flavour = KINDS; flavour <= HTTP; ++flavour) {
        run_case(&pipeline_vectors[i], i, door, flavour);
      }
    }
  }
  return CHECK_REPORT();
}
