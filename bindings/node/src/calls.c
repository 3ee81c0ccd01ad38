/* calls.c — pipelines and the step-by-step call (mulligan_pipeline.h) for
 * the N-API addon. The JS loop (bindings/node/lib/retry.js) asks, runs the
 * attempt, records, and waits the delay the engine decided.
 * Thread-safety: JS thread only.
 */
#include <string.h>

#include <mulligan.h>
#include <node_api.h>

#include "handles.h"
#include "napi_args.h"
#include "options.h"

/* Reads the pipeline-level options and the handles they name; fills deps
 * (clock, breaker, registry, budget). Returns 0 or -1 (exception pending). */
static int apply_pipeline_options(napi_env env, napi_value obj, mulligan_pipeline_options *po,
                                  box **deps) {
  char name[256];
  int ok = 1, flag = 0, r;
  napi_value v;
  r = opt_string(env, obj, "name", name, sizeof name);
  if (r < 0) return -1;
  if (r > 0) mulligan_pipeline_options_set_name(po, name);
  r = opt_bool(env, obj, "breakerPerAttempt", &flag);
  if (r < 0) return -1;
  if (r > 0) mulligan_pipeline_options_set_breaker_per_attempt(po, flag);
  r = opt_bool(env, obj, "reportMetrics", &flag);
  if (r < 0) return -1;
  if (r > 0) mulligan_pipeline_options_set_report_metrics(po, flag);
  if (opt_get(env, obj, "clock", &v) > 0) {
    deps[0] = box_get_optional(env, v, BOX_CLOCK, "clock", &ok);
    if (!ok) return -1;
    if (deps[0] != NULL) mulligan_pipeline_options_set_clock(po, (mulligan_clock *)deps[0]->ptr);
  }
  if (opt_get(env, obj, "breaker", &v) > 0) {
    deps[1] = box_get_optional(env, v, BOX_BREAKER, "breaker", &ok);
    if (!ok) return -1;
    if (deps[1] != NULL) mulligan_pipeline_options_set_breaker(po, (mulligan_breaker *)deps[1]->ptr);
  }
  if (opt_get(env, obj, "breakers", &v) > 0) {
    deps[2] = box_get_optional(env, v, BOX_REGISTRY, "breakers", &ok);
    if (!ok) return -1;
    if (deps[2] != NULL)
      mulligan_pipeline_options_set_breaker_registry(po, (mulligan_breaker_registry *)deps[2]->ptr);
  }
  if (opt_get(env, obj, "budget", &v) > 0) {
    deps[3] = box_get_optional(env, v, BOX_BUDGET, "budget", &ok);
    if (!ok) return -1;
    if (deps[3] != NULL) mulligan_pipeline_options_set_budget(po, (mulligan_budget *)deps[3]->ptr);
  }
  return 0;
}

/* pipelineCreate(options): a pipeline handle. */
napi_value pipeline_create(napi_env env, napi_callback_info info) {
  ARGS(1);
  napi_valuetype t;
  box *deps[4] = {NULL, NULL, NULL, NULL};
  napi_typeof(env, argv[0], &t);
  if (t != napi_object) {
    throw_type(env, "options", "an object");
    return NULL;
  }
  mulligan_retry_options *ro = NULL;
  mulligan_pipeline_options *po = NULL;
  mulligan_pipeline *p = NULL;
  if (mulligan_retry_options_create(&ro) != MULLIGAN_OK ||
      mulligan_pipeline_options_create(&po) != MULLIGAN_OK) {
    mulligan_retry_options_destroy(ro);
    napi_throw_error(env, "ERR_MULLIGAN", mulligan_last_error());
    return NULL;
  }
  int failed = apply_retry_options(env, argv[0], ro) != 0 ||
               apply_pipeline_options(env, argv[0], po, deps) != 0;
  if (!failed) {
    mulligan_pipeline_options_set_retry(po, ro);
    if (mulligan_pipeline_create(&p, po) != MULLIGAN_OK) {
      throw_range(env, "options");
      failed = 1;
    }
  }
  mulligan_retry_options_destroy(ro);
  mulligan_pipeline_options_destroy(po);
  if (failed) return NULL;
  box *b = box_new(BOX_PIPELINE, p, deps, 4);
  return b != NULL ? box_wrap(env, b) : NULL;
}

napi_value pipeline_now(napi_env env, napi_callback_info info) {
  ARGS(1);
  box *b = box_get(env, argv[0], BOX_PIPELINE, "pipeline");
  return b != NULL ? num(env, mulligan_pipeline_now_ms((mulligan_pipeline *)b->ptr)) : NULL;
}

/* callBegin(pipeline, nowMs, key|null, replaySafe, attemptTimeoutMs,
 * fallback): a call handle. Bad arguments: RangeError naming the field. */
napi_value call_begin(napi_env env, napi_callback_info info) {
  ARGS(6);
  char key[2048];
  size_t len = 0;
  double now = 0, timeout = -1;
  bool safe = true, fallback = false;
  napi_valuetype t;
  box *pb = box_get(env, argv[0], BOX_PIPELINE, "pipeline");
  if (pb == NULL || get_number(env, argv[1], "nowMs", &now) != 0) return NULL;
  mulligan_call_options o = MULLIGAN_CALL_OPTIONS_INIT;
  napi_typeof(env, argv[2], &t);
  if (t == napi_string) {
    napi_get_value_string_utf8(env, argv[2], NULL, 0, &len);
    if (len + 1 > sizeof key) {
      throw_type(env, "key", "a key shorter than 2048 bytes");
      return NULL;
    }
    napi_get_value_string_utf8(env, argv[2], key, sizeof key, &len);
    o.key = key;
  }
  napi_get_value_bool(env, argv[3], &safe);
  napi_typeof(env, argv[4], &t);
  if (t == napi_number) napi_get_value_double(env, argv[4], &timeout);
  napi_get_value_bool(env, argv[5], &fallback);
  o.replay_safe = safe ? 1 : 0;
  o.attempt_timeout_ms = timeout;
  o.fallback = fallback ? 1 : 0;
  mulligan_call *c = NULL;
  if (mulligan_call_begin(&c, (mulligan_pipeline *)pb->ptr, now, &o) != MULLIGAN_OK) {
    throw_range(env, "call");
    return NULL;
  }
  box *b = box_new(BOX_CALL, c, &pb, 1);
  return b != NULL ? box_wrap(env, b) : NULL;
}

/* callAdmit(call, nowMs): the status (0 go or wait, 7 refused, 1 invalid);
 * scratch = [action, attempt, timeout_ms, delay_ms, reason, retry_in_ms,
 * use_fallback]. A refusal's text is lastError(). */
napi_value call_admit(napi_env env, napi_callback_info info) {
  ARGS(2);
  double now = 0;
  double *s = addon_scratch(env);
  box *b = box_get(env, argv[0], BOX_CALL, "call");
  if (b == NULL || s == NULL || get_number(env, argv[1], "nowMs", &now) != 0) return NULL;
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  int rc = mulligan_call_admit((mulligan_call *)b->ptr, now, &a);
  s[0] = a.action;
  s[1] = a.attempt;
  s[2] = a.timeout_ms;
  s[3] = a.delay_ms;
  s[4] = a.reason;
  s[5] = a.retry_in_ms;
  s[6] = a.use_fallback;
  return num(env, rc);
}

/* callRecord(call, nowMs, errorKind, httpStatus, retryAfterMs, requestSent):
 * the status; scratch = [action, delay_ms, reason, classification, attempt,
 * from_retry_after, use_fallback]. An invalid outcome field: RangeError. */
napi_value call_record(napi_env env, napi_callback_info info) {
  ARGS(6);
  double now = 0, kind = 0, status = 0, ra = -1, sent = -1;
  double *s = addon_scratch(env);
  box *b = box_get(env, argv[0], BOX_CALL, "call");
  if (b == NULL || s == NULL || get_number(env, argv[1], "nowMs", &now) != 0 ||
      get_number(env, argv[2], "errorKind", &kind) != 0 ||
      get_number(env, argv[3], "httpStatus", &status) != 0 ||
      get_number(env, argv[4], "retryAfterMs", &ra) != 0 ||
      get_number(env, argv[5], "requestSent", &sent) != 0)
    return NULL;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  mulligan_call *c = (mulligan_call *)b->ptr;
  o.error_kind = (int)kind;
  o.http_status = (int)status;
  o.retry_after_ms = ra;
  o.request_sent = (int)sent;
  int rc = mulligan_call_record(c, &o, now, &d);
  if (rc != MULLIGAN_OK) {
    throw_range(env, "outcome");
    return NULL;
  }
  s[0] = d.action;
  s[1] = d.delay_ms;
  s[2] = d.reason;
  s[3] = d.classification;
  s[4] = d.attempt;
  s[5] = d.from_retry_after;
  s[6] = mulligan_call_use_fallback(c);
  return num(env, rc);
}

/* callAbandon(call, nowMs, attemptsInFlight), then the call is destroyed. */
/* Reads (call, nowMs, attemptsInFlight) and ends the call early with `end`
 * (mulligan_call_abandon or mulligan_call_cancel). */
static napi_value end_early(napi_env env, napi_callback_info info,
                            int (*end)(mulligan_call *, double, int)) {
  ARGS(3);
  double now = 0, inflight = 0;
  box *b = box_get(env, argv[0], BOX_CALL, "call");
  if (b == NULL || get_number(env, argv[1], "nowMs", &now) != 0 ||
      get_number(env, argv[2], "attemptsInFlight", &inflight) != 0)
    return NULL;
  end((mulligan_call *)b->ptr, now, (int)inflight);
  return NULL;
}

napi_value call_abandon(napi_env env, napi_callback_info info) {
  return end_early(env, info, mulligan_call_abandon);
}

/* callCancel(call, nowMs, attemptsInFlight): as callAbandon, for a call its
 * caller cancelled (an AbortSignal fired): counted cancelled, not failed
 * (mulligan_call_cancel). (Added in 0.6.) */
napi_value call_cancel(napi_env env, napi_callback_info info) {
  return end_early(env, info, mulligan_call_cancel);
}

napi_value call_attempts(napi_env env, napi_callback_info info) {
  ARGS(1);
  box *b = box_get(env, argv[0], BOX_CALL, "call");
  return b != NULL ? num(env, mulligan_call_attempts((mulligan_call *)b->ptr)) : NULL;
}
