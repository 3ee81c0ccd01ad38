/* hedging.c — retry budgets (mulligan_budget.h) and hedged calls
 * (mulligan_hedging.h) for the N-API addon of bindings/node. (Added in 0.6.)
 *
 * Thin, like calls.c: every function forwards to the engine and returns its
 * status, numbers or text. The JS loop (bindings/node/lib/hedge.js) starts
 * the copies the engine admits, records their outcomes, aborts the copies it
 * names and sets the one timer it asks for; no decision is taken here.
 * The step functions read the pipeline's clock themselves (one crossing per
 * step, as bindings/go/hedge.go's cgo helpers do) and write their answers
 * into the scratch Float64Array (addon.c), so a step allocates no JS object.
 * Thread-safety: JS thread only.
 */
#include <math.h>
#include <string.h>

#include <mulligan.h>
#include <node_api.h>

#include "handles.h"
#include "napi_args.h"
#include "options.h"

/* Reads an optional string argument into buf ("" for undefined or null). */
static int get_opt_string(napi_env env, napi_value v, const char *what, char *buf, size_t size) {
  napi_valuetype t;
  size_t len = 0;
  buf[0] = '\0';
  if (napi_typeof(env, v, &t) != napi_ok) return -1;
  if (t == napi_undefined || t == napi_null) return 0;
  if (t != napi_string) return throw_type(env, what, "a string");
  napi_get_value_string_utf8(env, v, NULL, 0, &len);
  if (len + 1 > size) return throw_type(env, what, "a shorter string");
  napi_get_value_string_utf8(env, v, buf, size, &len);
  return 0;
}

/* ---- retry budgets -------------------------------------------------------- */

/* Reads the JS budget options (kind as its pinned number 0..2: lib/budget.js
 * maps the names; maxTokens, tokenRatio, capacity, ...). */
static int apply_budget_options(napi_env env, napi_value obj, mulligan_budget_options *o) {
  double d = 0;
  int r;
  if ((r = opt_int(env, obj, "kind", &o->kind)) < 0) return -1;
  if ((r = opt_number(env, obj, "maxTokens", &o->max_tokens)) < 0) return -1;
  if ((r = opt_number(env, obj, "tokenRatio", &o->token_ratio)) < 0) return -1;
  const char *const ints[] = {"capacity", "retryCost", "timeoutCost", "throttlingCost",
                              "noRetryIncrement"};
  int64_t *const fields[] = {&o->capacity, &o->retry_cost, &o->timeout_cost,
                             &o->throttling_cost, &o->no_retry_increment};
  for (size_t i = 0; i < sizeof ints / sizeof ints[0]; ++i) {
    if ((r = opt_number(env, obj, ints[i], &d)) < 0) return -1;
    if (r > 0) {
      if (!(fabs(d) <= 9007199254740991.0) || d != floor(d))
        return throw_type(env, ints[i], "a safe integer");
      *fields[i] = (int64_t)d;
    }
  }
  if ((r = opt_number(env, obj, "ttlMs", &o->ttl_ms)) < 0) return -1;
  if ((r = opt_number(env, obj, "percent", &o->percent)) < 0) return -1;
  if ((r = opt_number(env, obj, "minRetriesPerSecond", &o->min_retries_per_second)) < 0) return -1;
  return 0;
}

/* budgetCreate(options, name|null, clock|null, shared): a budget handle.
 * A value the engine refuses: RangeError with the engine's text, which
 * names the budget ("budget 'x': ...", "budget: ..." when unnamed). */
static napi_value budget_create(napi_env env, napi_callback_info info) {
  ARGS(4);
  char name[256];
  int ok = 1;
  bool shared = false;
  napi_valuetype t;
  mulligan_budget_options o = MULLIGAN_BUDGET_OPTIONS_INIT;
  napi_typeof(env, argv[0], &t);
  if (t != napi_object) {
    throw_type(env, "options", "an object");
    return NULL;
  }
  if (apply_budget_options(env, argv[0], &o) != 0 ||
      get_opt_string(env, argv[1], "name", name, sizeof name) != 0)
    return NULL;
  box *clock = box_get_optional(env, argv[2], BOX_CLOCK, "clock", &ok);
  if (!ok) return NULL;
  napi_get_value_bool(env, argv[3], &shared);
  const mulligan_clock *c = clock != NULL ? (const mulligan_clock *)clock->ptr : NULL;
  mulligan_budget *b = NULL;
  int rc = shared ? mulligan_budget_shared(&b, name, &o, c) : mulligan_budget_create(&b, name, &o, c);
  if (rc != MULLIGAN_OK) {
    /* The engine's text already names the budget ("budget 'x': ..."). */
    napi_throw_range_error(env, NULL, mulligan_last_error());
    return NULL;
  }
  box *bx = box_new(BOX_BUDGET, b, NULL, 0);
  return bx != NULL ? box_wrap(env, bx) : NULL;
}

/* budgetOnFailure(budget, kind, nowMs): the status; a bad kind or nowMs is
 * a RangeError. */
static napi_value budget_on_failure(napi_env env, napi_callback_info info) {
  ARGS(3);
  double kind = 0, now = 0;
  box *b = box_get(env, argv[0], BOX_BUDGET, "budget");
  if (b == NULL || get_number(env, argv[1], "kind", &kind) != 0 ||
      get_number(env, argv[2], "nowMs", &now) != 0)
    return NULL;
  int rc = mulligan_budget_on_failure((mulligan_budget *)b->ptr, (int)kind, now);
  if (rc != MULLIGAN_OK) throw_range(env, "kind");
  return num(env, rc);
}

/* budgetInfo(budget, what, nowMs): 0 refused, 1 allowed, 2 tokens at nowMs,
 * 3 kind. */
static napi_value budget_info(napi_env env, napi_callback_info info) {
  ARGS(3);
  double what = 0, now = 0, tokens = 0;
  box *b = box_get(env, argv[0], BOX_BUDGET, "budget");
  if (b == NULL || get_number(env, argv[1], "what", &what) != 0) return NULL;
  mulligan_budget *bu = (mulligan_budget *)b->ptr;
  if (what == 0) return num(env, (double)mulligan_budget_refused(bu));
  if (what == 1) return num(env, (double)mulligan_budget_allowed(bu));
  if (what == 3) return num(env, mulligan_budget_kind_of(bu));
  if (get_number(env, argv[2], "nowMs", &now) != 0) return NULL;
  if (mulligan_budget_tokens(bu, now, &tokens) != MULLIGAN_OK) {
    throw_range(env, "nowMs");
    return NULL;
  }
  return num(env, tokens);
}

/* ---- hedging policies ----------------------------------------------------- */

/* hedgingPolicyCreate(options): a policy handle. Options by their JS names:
 * maxAttempts, delayMs, delayQuantile, quantileWindow, quantileMinSamples.
 * A wrong type: TypeError naming the option; a value the engine refuses:
 * RangeError "HedgingPolicy: hedging: max_attempts must be >= 2 ...". */
static napi_value hedging_policy_create(napi_env env, napi_callback_info info) {
  ARGS(1);
  napi_valuetype t;
  mulligan_hedging_options o = MULLIGAN_HEDGING_OPTIONS_INIT;
  napi_typeof(env, argv[0], &t);
  if (t != napi_object) {
    throw_type(env, "options", "an object");
    return NULL;
  }
  if (opt_int(env, argv[0], "maxAttempts", &o.max_attempts) < 0 ||
      opt_number(env, argv[0], "delayMs", &o.hedging_delay_ms) < 0 ||
      opt_number(env, argv[0], "delayQuantile", &o.delay_quantile) < 0 ||
      opt_int(env, argv[0], "quantileWindow", &o.quantile_window) < 0 ||
      opt_int(env, argv[0], "quantileMinSamples", &o.quantile_min_samples) < 0)
    return NULL;
  mulligan_hedging_policy *p = NULL;
  if (mulligan_hedging_policy_create(&p, &o) != MULLIGAN_OK) {
    throw_range(env, "HedgingPolicy");
    return NULL;
  }
  box *b = box_new(BOX_HEDGING, p, NULL, 0);
  return b != NULL ? box_wrap(env, b) : NULL;
}

/* hedgingPolicyDelay(policy): the delay, ms, a copy started now would wait. */
static napi_value hedging_policy_delay(napi_env env, napi_callback_info info) {
  ARGS(1);
  box *b = box_get(env, argv[0], BOX_HEDGING, "hedging policy");
  if (b == NULL) return NULL;
  return num(env, mulligan_hedging_policy_current_delay_ms((mulligan_hedging_policy *)b->ptr));
}

/* ---- hedged calls --------------------------------------------------------- */

/* The pipeline a hedged call borrows (its deps[1]). */
static const mulligan_pipeline *call_pipeline(const box *b) {
  return (const mulligan_pipeline *)b->deps[1]->ptr;
}

/* hedgedCallBegin(policy, pipeline, key|null, replaySafe, attemptTimeoutMs):
 * a hedged call begun now on the pipeline's clock (FULL accounting). */
static napi_value hedged_call_begin(napi_env env, napi_callback_info info) {
  ARGS(5);
  char key[2048];
  double timeout = -1;
  bool safe = true;
  napi_valuetype t;
  box *deps[2];
  deps[0] = box_get(env, argv[0], BOX_HEDGING, "hedging policy");
  if (deps[0] == NULL) return NULL;
  deps[1] = box_get(env, argv[1], BOX_PIPELINE, "pipeline");
  if (deps[1] == NULL || get_opt_string(env, argv[2], "key", key, sizeof key) != 0) return NULL;
  mulligan_call_options o = MULLIGAN_CALL_OPTIONS_INIT;
  if (key[0] != '\0') o.key = key;
  napi_get_value_bool(env, argv[3], &safe);
  napi_typeof(env, argv[4], &t);
  if (t == napi_number) napi_get_value_double(env, argv[4], &timeout);
  o.replay_safe = safe ? 1 : 0;
  o.attempt_timeout_ms = timeout;
  const mulligan_pipeline *p = (const mulligan_pipeline *)deps[1]->ptr;
  mulligan_hedged_call *c = NULL;
  if (mulligan_hedged_call_begin(&c, (const mulligan_hedging_policy *)deps[0]->ptr, p,
                                 mulligan_pipeline_now_ms(p), &o,
                                 MULLIGAN_HEDGE_ACCOUNTING_FULL) != MULLIGAN_OK) {
    throw_range(env, "hedge");
    return NULL;
  }
  box *b = box_new(BOX_HEDGED_CALL, c, deps, 2);
  return b != NULL ? box_wrap(env, b) : NULL;
}

/* hedgedCallAdmit(call): the status (0, or 7 when the breaker refused the
 * first copy: its text is lastError()); scratch = [action, copy, timeout_ms,
 * next_start_ms, reason, retry_in_ms, now_ms]. */
static napi_value hedged_call_admit(napi_env env, napi_callback_info info) {
  ARGS(1);
  double *s = addon_scratch(env);
  box *b = box_get(env, argv[0], BOX_HEDGED_CALL, "hedged call");
  if (b == NULL || s == NULL) return NULL;
  mulligan_hedge_admission a = MULLIGAN_HEDGE_ADMISSION_INIT;
  double now = mulligan_pipeline_now_ms(call_pipeline(b));
  int rc = mulligan_hedged_call_admit((mulligan_hedged_call *)b->ptr, now, &a);
  s[0] = a.action;
  s[1] = a.copy;
  s[2] = a.timeout_ms;
  s[3] = a.next_start_ms;
  s[4] = a.reason;
  s[5] = a.retry_in_ms;
  s[6] = now;
  return num(env, rc);
}

/* hedgedCallRecord(call, copy, errorKind, httpStatus, retryAfterMs,
 * requestSent): the status, recorded now on the pipeline's clock; scratch =
 * [finished, winner, reason, classification, cancel mask (bit k-1 set: cancel
 * copy k)]. An invalid copy or outcome field: RangeError. */
static napi_value hedged_call_record(napi_env env, napi_callback_info info) {
  ARGS(6);
  double copy = 0, kind = 0, status = 0, ra = -1, sent = -1;
  double *s = addon_scratch(env);
  box *b = box_get(env, argv[0], BOX_HEDGED_CALL, "hedged call");
  if (b == NULL || s == NULL || get_number(env, argv[1], "copy", &copy) != 0 ||
      get_number(env, argv[2], "errorKind", &kind) != 0 ||
      get_number(env, argv[3], "httpStatus", &status) != 0 ||
      get_number(env, argv[4], "retryAfterMs", &ra) != 0 ||
      get_number(env, argv[5], "requestSent", &sent) != 0)
    return NULL;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_hedge_decision d = MULLIGAN_HEDGE_DECISION_INIT;
  o.error_kind = (int)kind;
  o.http_status = (int)status;
  o.retry_after_ms = ra;
  o.request_sent = (int)sent;
  int rc = mulligan_hedged_call_record((mulligan_hedged_call *)b->ptr, (int)copy, &o,
                                       mulligan_pipeline_now_ms(call_pipeline(b)), &d);
  if (rc != MULLIGAN_OK) {
    throw_range(env, "outcome");
    return NULL;
  }
  int mask = 0;
  for (int i = 0; i < d.cancel_count && i < MULLIGAN_MAX_HEDGED_ATTEMPTS; ++i) {
    if (d.cancel[i] >= 1 && d.cancel[i] <= MULLIGAN_MAX_HEDGED_ATTEMPTS) mask |= 1 << (d.cancel[i] - 1);
  }
  s[0] = d.finished;
  s[1] = d.winner;
  s[2] = d.reason;
  s[3] = d.classification;
  s[4] = mask;
  return num(env, rc);
}

/* hedgedCallEnd(call, cancel): ends an unfinished call now: cancel true is
 * mulligan_hedged_call_cancel (the caller's AbortSignal: counted cancelled),
 * false mulligan_hedged_call_abandon (a failure of the caller's: counted
 * failed). */
static napi_value hedged_call_end(napi_env env, napi_callback_info info) {
  ARGS(2);
  bool cancel = false;
  box *b = box_get(env, argv[0], BOX_HEDGED_CALL, "hedged call");
  if (b == NULL) return NULL;
  napi_get_value_bool(env, argv[1], &cancel);
  mulligan_hedged_call *c = (mulligan_hedged_call *)b->ptr;
  double now = mulligan_pipeline_now_ms(call_pipeline(b));
  return num(env, cancel ? mulligan_hedged_call_cancel(c, now) : mulligan_hedged_call_abandon(c, now));
}

/* hedgedCallInfo(call, what): 0 started, 1 running, 2 cancelled, 3 winner,
 * 4 finished (1 or 0). */
static napi_value hedged_call_info(napi_env env, napi_callback_info info) {
  ARGS(2);
  double what = 0;
  box *b = box_get(env, argv[0], BOX_HEDGED_CALL, "hedged call");
  if (b == NULL || get_number(env, argv[1], "what", &what) != 0) return NULL;
  const mulligan_hedged_call *c = (const mulligan_hedged_call *)b->ptr;
  switch ((int)what) {
    case 0: return num(env, mulligan_hedged_call_started(c));
    case 1: return num(env, mulligan_hedged_call_running(c));
    case 2: return num(env, mulligan_hedged_call_cancelled(c));
    case 3: return num(env, mulligan_hedged_call_winner(c));
    default: return num(env, mulligan_hedged_call_finished(c));
  }
}

/* Adds this file's functions to the addon's exports. */
void hedging_define(napi_env env, napi_value exports) {
  napi_property_descriptor props[] = {
#define FN(NAME, CB) {NAME, NULL, CB, NULL, NULL, NULL, napi_default, NULL}
      FN("budgetCreate", budget_create),
      FN("budgetOnFailure", budget_on_failure),
      FN("budgetInfo", budget_info),
      FN("hedgingPolicyCreate", hedging_policy_create),
      FN("hedgingPolicyDelay", hedging_policy_delay),
      FN("hedgedCallBegin", hedged_call_begin),
      FN("hedgedCallAdmit", hedged_call_admit),
      FN("hedgedCallRecord", hedged_call_record),
      FN("hedgedCallEnd", hedged_call_end),
      FN("hedgedCallInfo", hedged_call_info),
#undef FN
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
}
