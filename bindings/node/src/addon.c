/* addon.c — the N-API addon of bindings/node: a thin layer over the mulligan
 * C ABI (mulligan.h). It makes no decision: every function forwards to the
 * engine and returns its status code, its numbers or its text; the JS
 * library (bindings/node/lib) turns them into Promises, timers and Errors.
 *
 * Conventions:
 *  - handles are JS Externals over reference-counted boxes (handles.h);
 *  - a wrong argument type or a closed handle throws a TypeError naming the
 *    argument, an option the engine rejects a RangeError naming the option;
 *  - engine outcomes (a refusal, a stop) are returned as status numbers,
 *    never thrown; the step functions write their struct fields into the
 *    per-environment scratch Float64Array given to setScratch(), so the hot
 *    path allocates no JS object.
 * Thread-safety: every function runs on the JS thread of its environment.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mulligan.h>
#include <node_api.h>

#include "handles.h"
#include "napi_args.h"
#include "options.h"

typedef struct instance {
  napi_ref scratch_ref;
  double *scratch; /* 8 doubles */
} instance;

#define SCRATCH_LEN 8

static void instance_free(napi_env env, void *data, void *hint) {
  (void)hint;
  instance *in = (instance *)data;
  if (in->scratch_ref != NULL) napi_delete_reference(env, in->scratch_ref);
  free(in);
}

static double *scratch(napi_env env) {
  instance *in = NULL;
  napi_get_instance_data(env, (void **)&in);
  if (in == NULL || in->scratch == NULL) {
    napi_throw_error(env, "ERR_INVALID_STATE", "mulligan: setScratch() was not called");
    return NULL;
  }
  return in->scratch;
}


static napi_value str(napi_env env, const char *s) {
  napi_value out;
  napi_create_string_utf8(env, s != NULL ? s : "", NAPI_AUTO_LENGTH, &out);
  return out;
}

static int arg_number(napi_env env, napi_value v, const char *what, double *out) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_number)
    return throw_type(env, what, "a number");
  napi_get_value_double(env, v, out);
  return 0;
}

static int arg_int(napi_env env, napi_value v, const char *what, int *out) {
  double d = 0;
  if (arg_number(env, v, what, &d) != 0) return -1;
  if (d != (double)(int)d) return throw_type(env, what, "an integer");
  *out = (int)d;
  return 0;
}

/* ---- scratch, strings, versions ------------------------------------------ */

static napi_value set_scratch(napi_env env, napi_callback_info info) {
  ARGS(1);
  napi_typedarray_type type;
  size_t length = 0;
  void *data = NULL;
  bool is_ta = false;
  napi_is_typedarray(env, argv[0], &is_ta);
  if (!is_ta) {
    throw_type(env, "scratch", "a Float64Array");
    return NULL;
  }
  napi_get_typedarray_info(env, argv[0], &type, &length, &data, NULL, NULL);
  if (type != napi_float64_array || length < SCRATCH_LEN) {
    throw_type(env, "scratch", "a Float64Array of 8 elements");
    return NULL;
  }
  instance *in = NULL;
  napi_get_instance_data(env, (void **)&in);
  if (in->scratch_ref != NULL) napi_delete_reference(env, in->scratch_ref);
  napi_create_reference(env, argv[0], 1, &in->scratch_ref);
  in->scratch = (double *)data;
  return NULL;
}

static napi_value version(napi_env env, napi_callback_info info) {
  (void)info;
  return str(env, mulligan_version_string());
}

static napi_value last_error(napi_env env, napi_callback_info info) {
  (void)info;
  return str(env, mulligan_last_error());
}

static napi_value status_str(napi_env env, napi_callback_info info) {
  ARGS(1);
  int s = 0;
  if (arg_int(env, argv[0], "status", &s) != 0) return NULL;
  return str(env, mulligan_status_str(s));
}

static napi_value stop_reason_str(napi_env env, napi_callback_info info) {
  ARGS(1);
  int s = 0;
  if (arg_int(env, argv[0], "reason", &s) != 0) return NULL;
  return str(env, mulligan_stop_reason_str(s));
}

/* ---- clocks --------------------------------------------------------------- */

static napi_value clock_create_fake(napi_env env, napi_callback_info info) {
  (void)info;
  mulligan_clock *c = NULL;
  if (mulligan_clock_create_fake(&c) != MULLIGAN_OK) {
    napi_throw_error(env, "ERR_MULLIGAN", mulligan_last_error());
    return NULL;
  }
  box *b = box_new(BOX_CLOCK, c, NULL, 0);
  return b != NULL ? box_wrap(env, b) : NULL;
}

static napi_value clock_advance(napi_env env, napi_callback_info info) {
  ARGS(2);
  double ms = 0;
  box *b = box_get(env, argv[0], BOX_CLOCK, "clock");
  if (b == NULL || arg_number(env, argv[1], "ms", &ms) != 0) return NULL;
  if (mulligan_clock_advance_ms((mulligan_clock *)b->ptr, ms) != MULLIGAN_OK) throw_range(env, "ms");
  return NULL;
}

static napi_value clock_now(napi_env env, napi_callback_info info) {
  ARGS(1);
  box *b = box_get(env, argv[0], BOX_CLOCK, "clock");
  return b != NULL ? num(env, mulligan_clock_now_ms((mulligan_clock *)b->ptr)) : NULL;
}

static napi_value close_handle(napi_env env, napi_callback_info info) {
  ARGS(1);
  box_close(env, argv[0]);
  return NULL;
}

/* ---- breakers ------------------------------------------------------------- */

/* breakerCreate(options, clock|null, registryBound): a breaker, or (with a
 * registryBound >= 0) a registry of breakers built from the options. */
static napi_value breaker_create(napi_env env, napi_callback_info info) {
  ARGS(3);
  int ok = 1;
  double bound = -1;
  box *clock = box_get_optional(env, argv[1], BOX_CLOCK, "clock", &ok);
  if (!ok) return NULL;
  napi_valuetype t;
  napi_typeof(env, argv[2], &t);
  if (t == napi_number) napi_get_value_double(env, argv[2], &bound);
  mulligan_breaker_options *o = NULL;
  if (mulligan_breaker_options_create(&o) != MULLIGAN_OK) {
    napi_throw_error(env, "ERR_MULLIGAN", mulligan_last_error());
    return NULL;
  }
  napi_typeof(env, argv[0], &t);
  if ((t == napi_object && apply_breaker_options(env, argv[0], o) != 0) ||
      (t != napi_object && t != napi_undefined && t != napi_null &&
       throw_type(env, "options", "an object") != 0)) {
    mulligan_breaker_options_destroy(o);
    return NULL;
  }
  if (clock != NULL) mulligan_breaker_options_set_clock(o, (mulligan_clock *)clock->ptr);
  void *handle = NULL;
  int rc;
  if (bound >= 0) {
    rc = mulligan_breaker_registry_create((mulligan_breaker_registry **)&handle, o, (size_t)bound);
  } else {
    rc = mulligan_breaker_create((mulligan_breaker **)&handle, o);
  }
  mulligan_breaker_options_destroy(o);
  if (rc != MULLIGAN_OK) {
    throw_range(env, "options");
    return NULL;
  }
  box *b = box_new(bound >= 0 ? BOX_REGISTRY : BOX_BREAKER, handle, &clock, 1);
  return b != NULL ? box_wrap(env, b) : NULL;
}

/* registryGet(registry, key): the breaker of key (a new handle). */
static napi_value registry_get(napi_env env, napi_value *argv) {
  char key[1024];
  size_t len = 0;
  box *r = box_get(env, argv[0], BOX_REGISTRY, "registry");
  if (r == NULL) return NULL;
  if (napi_get_value_string_utf8(env, argv[1], key, sizeof key, &len) != napi_ok) {
    throw_type(env, "key", "a string");
    return NULL;
  }
  mulligan_breaker *br = NULL;
  if (mulligan_breaker_registry_get((mulligan_breaker_registry *)r->ptr, key, &br) != MULLIGAN_OK) {
    throw_range(env, "key");
    return NULL;
  }
  box *b = box_new(BOX_BREAKER, br, r->deps, 1);
  return b != NULL ? box_wrap(env, b) : NULL;
}

static napi_value registry_get_cb(napi_env env, napi_callback_info info) {
  ARGS(2);
  return registry_get(env, argv);
}

/* breakerAcquire(breaker, permit: Uint8Array): status. The permit struct is
 * written into the bytes; scratch = [admitted, state, retry_in_ms, probe]. */
static napi_value breaker_acquire(napi_env env, napi_callback_info info) {
  ARGS(2);
  void *data = NULL;
  size_t len = 0;
  double *s = scratch(env);
  box *b = box_get(env, argv[0], BOX_BREAKER, "breaker");
  if (b == NULL || s == NULL) return NULL;
  if (napi_get_buffer_info(env, argv[1], &data, &len) != napi_ok ||
      len < sizeof(mulligan_breaker_permit)) {
    throw_type(env, "permit", "a permit buffer");
    return NULL;
  }
  mulligan_breaker_permit p = MULLIGAN_BREAKER_PERMIT_INIT;
  int rc = mulligan_breaker_acquire((mulligan_breaker *)b->ptr, &p);
  memcpy(data, &p, sizeof p);
  s[0] = p.admitted;
  s[1] = p.state;
  s[2] = p.retry_in_ms;
  s[3] = p.probe;
  return num(env, rc);
}

/* Takes a free permit slot of breaker box b, growing the slots; -1 when out
 * of memory. */
static int take_slot(box *b) {
  if (b->nfree == 0) {
    int cap = b->nslots < 8 ? 8 : b->nslots * 2;
    mulligan_breaker_permit *slots =
        (mulligan_breaker_permit *)realloc(b->slots, (size_t)cap * sizeof *slots);
    if (slots == NULL) return -1;
    b->slots = slots;
    int *free_slots = (int *)realloc(b->free_slots, (size_t)cap * sizeof *free_slots);
    if (free_slots == NULL) return -1;
    b->free_slots = free_slots;
    for (int i = cap - 1; i >= b->nslots; --i) {
      b->slots[i].struct_size = 0;
      b->free_slots[b->nfree++] = i;
    }
    b->nslots = cap;
  }
  return b->free_slots[--b->nfree];
}

static void give_slot(box *b, int slot) {
  b->slots[slot].struct_size = 0;
  b->free_slots[b->nfree++] = slot;
}

/* breakerExecAcquire(breaker): as breakerAcquire, with the permit kept in a
 * slot of the breaker's box (CircuitBreaker.execute: no permit buffer per
 * call). scratch = [admitted, state, retry_in_ms, probe, slot] (slot -1 when
 * refused). (Added in 0.6.) */
static napi_value breaker_exec_acquire(napi_env env, napi_callback_info info) {
  ARGS(1);
  double *s = scratch(env);
  box *b = box_get(env, argv[0], BOX_BREAKER, "breaker");
  if (b == NULL || s == NULL) return NULL;
  int slot = take_slot(b);
  if (slot < 0) {
    napi_throw_error(env, "ERR_MULLIGAN", "mulligan: out of memory for a breaker permit");
    return NULL;
  }
  mulligan_breaker_permit *p = &b->slots[slot];
  mulligan_breaker_permit init = MULLIGAN_BREAKER_PERMIT_INIT;
  *p = init;
  int rc = mulligan_breaker_acquire((mulligan_breaker *)b->ptr, p);
  s[0] = p->admitted;
  s[1] = p->state;
  s[2] = p->retry_in_ms;
  s[3] = p->probe;
  s[4] = p->admitted ? slot : -1;
  if (!p->admitted) give_slot(b, slot);
  return num(env, rc);
}

/* breakerExecRecord(breaker, slot, result): records the call of a slot from
 * breakerExecAcquire ("from the acquire until now") and frees the slot. A
 * slot that is not in use, or a bad result: RangeError. (Added in 0.6.) */
static napi_value breaker_exec_record(napi_env env, napi_callback_info info) {
  ARGS(3);
  int32_t slot = -1, result = 0;
  box *b = box_get(env, argv[0], BOX_BREAKER, "breaker");
  if (b == NULL) return NULL;
  if (napi_get_value_int32(env, argv[1], &slot) != napi_ok ||
      napi_get_value_int32(env, argv[2], &result) != napi_ok) {
    throw_type(env, "slot", "a number");
    return NULL;
  }
  if (slot < 0 || slot >= b->nslots || b->slots[slot].struct_size == 0) {
    napi_throw_range_error(env, "ERR_OUT_OF_RANGE", "slot: not a permit in use");
    return NULL;
  }
  int rc = mulligan_breaker_record((mulligan_breaker *)b->ptr, &b->slots[slot], result, -1);
  give_slot(b, slot);
  if (rc != MULLIGAN_OK) throw_range(env, "result");
  return NULL;
}

/* breakerRecord(breaker, permit, result, durationMs): status. */
static napi_value breaker_record(napi_env env, napi_callback_info info) {
  ARGS(4);
  void *data = NULL;
  size_t len = 0;
  int result = 0;
  double dur = -1;
  box *b = box_get(env, argv[0], BOX_BREAKER, "breaker");
  if (b == NULL) return NULL;
  if (napi_get_buffer_info(env, argv[1], &data, &len) != napi_ok ||
      len < sizeof(mulligan_breaker_permit)) {
    throw_type(env, "permit", "a permit buffer");
    return NULL;
  }
  if (arg_int(env, argv[2], "result", &result) != 0 ||
      arg_number(env, argv[3], "durationMs", &dur) != 0)
    return NULL;
  mulligan_breaker_permit p;
  memcpy(&p, data, sizeof p);
  int rc = mulligan_breaker_record((mulligan_breaker *)b->ptr, &p, result, dur);
  if (rc != MULLIGAN_OK) throw_range(env, "result");
  return num(env, rc);
}

/* breakerInfo(breaker, what): 0 state, 1 time until probe (ms). */
static napi_value breaker_info(napi_env env, napi_callback_info info) {
  ARGS(2);
  int what = 0;
  box *b = box_get(env, argv[0], BOX_BREAKER, "breaker");
  if (b == NULL || arg_int(env, argv[1], "what", &what) != 0) return NULL;
  mulligan_breaker *br = (mulligan_breaker *)b->ptr;
  if (what == 0) return num(env, mulligan_breaker_state_now(br));
  if (what == 1) return num(env, mulligan_breaker_time_until_probe_ms(br));
  return str(env, mulligan_breaker_name(br));
}

static void set_num(napi_env env, napi_value obj, const char *name, double v) {
  napi_set_named_property(env, obj, name, num(env, v));
}

static napi_value breaker_counts(napi_env env, napi_callback_info info) {
  ARGS(1);
  napi_value out;
  box *b = box_get(env, argv[0], BOX_BREAKER, "breaker");
  if (b == NULL) return NULL;
  mulligan_breaker_counts c = MULLIGAN_BREAKER_COUNTS_INIT;
  mulligan_breaker_get_counts((mulligan_breaker *)b->ptr, &c);
  napi_create_object(env, &out);
  set_num(env, out, "calls", (double)c.calls);
  set_num(env, out, "successes", (double)c.successes);
  set_num(env, out, "failures", (double)c.failures);
  set_num(env, out, "ignored", (double)c.ignored);
  set_num(env, out, "slow", (double)c.slow);
  set_num(env, out, "rejected", (double)c.rejected);
  set_num(env, out, "consecutiveFailures", c.consecutive_failures);
  set_num(env, out, "windowCalls", (double)c.window_calls);
  set_num(env, out, "windowFailureRate", c.window_failure_rate);
  set_num(env, out, "windowSlowRate", c.window_slow_rate);
  set_num(env, out, "stale", (double)c.stale);
  return out;
}

/* breakerControl(breaker, op): 0 force open, 1 disable, 2 metrics only,
 * 3 reset, 4 half open. Returns the status. */
static napi_value breaker_control(napi_env env, napi_callback_info info) {
  ARGS(2);
  int op = 0, rc;
  box *b = box_get(env, argv[0], BOX_BREAKER, "breaker");
  if (b == NULL || arg_int(env, argv[1], "op", &op) != 0) return NULL;
  mulligan_breaker *br = (mulligan_breaker *)b->ptr;
  switch (op) {
    case 0: rc = mulligan_breaker_force_open(br); break;
    case 1: rc = mulligan_breaker_disable(br); break;
    case 2: rc = mulligan_breaker_metrics_only(br); break;
    case 3: rc = mulligan_breaker_reset(br); break;
    default: rc = mulligan_breaker_half_open(br); break;
  }
  return num(env, rc);
}

/* ---- Retry-After, metrics, idempotency keys ------------------------------- */

/* retryAfterParse(value, nowUnixMs): the delay in ms, or -1 when invalid. */
static napi_value retry_after_parse(napi_env env, napi_callback_info info) {
  ARGS(2);
  char buf[512];
  size_t len = 0;
  double now = 0, out = -1;
  napi_valuetype t;
  napi_typeof(env, argv[0], &t);
  if (t != napi_string) {
    throw_type(env, "value", "a string");
    return NULL;
  }
  if (arg_number(env, argv[1], "nowUnixMs", &now) != 0) return NULL;
  napi_get_value_string_utf8(env, argv[0], NULL, 0, &len);
  if (len + 1 > sizeof buf) return num(env, -1);
  napi_get_value_string_utf8(env, argv[0], buf, sizeof buf, &len);
  if (strlen(buf) != len) return num(env, -1); /* an embedded NUL is not a field value */
  if (mulligan_retry_after_parse(buf, (int64_t)now, &out) != MULLIGAN_OK) return num(env, -1);
  return num(env, out);
}

static napi_value metrics_json(napi_env env, napi_callback_info info) {
  (void)info;
  size_t needed = 0;
  mulligan_metrics_json(NULL, 0, &needed);
  for (int tries = 0; tries < 4; ++tries) {
    size_t size = needed + 256;
    char *buf = (char *)malloc(size);
    if (buf == NULL) break;
    mulligan_metrics_json(buf, size, &needed);
    if (needed <= size) {
      napi_value out = str(env, buf);
      free(buf);
      return out;
    }
    free(buf);
  }
  napi_throw_error(env, "ERR_MULLIGAN", "mulligan: out of memory writing the metrics");
  return NULL;
}

static napi_value metrics_get(napi_env env, napi_callback_info info) {
  ARGS(1);
  char name[512];
  size_t len = 0;
  napi_value out, null;
  if (napi_get_value_string_utf8(env, argv[0], name, sizeof name, &len) != napi_ok) {
    throw_type(env, "name", "a string");
    return NULL;
  }
  mulligan_metrics_snapshot m = MULLIGAN_METRICS_SNAPSHOT_INIT;
  if (mulligan_metrics_get(name, &m) != MULLIGAN_OK) {
    napi_get_null(env, &null);
    return null;
  }
  napi_create_object(env, &out);
  set_num(env, out, "calls", (double)m.calls);
  set_num(env, out, "attempts", (double)m.attempts);
  set_num(env, out, "retries", (double)m.retries);
  set_num(env, out, "successes", (double)m.successes);
  set_num(env, out, "failures", (double)m.failures);
  set_num(env, out, "fallbacks", (double)m.fallbacks);
  set_num(env, out, "shortCircuits", (double)m.short_circuits);
  set_num(env, out, "circuitOpens", (double)m.circuit_opens);
  set_num(env, out, "inFlight", (double)m.in_flight);
  set_num(env, out, "waitingToRetry", (double)m.waiting_to_retry);
  set_num(env, out, "breakerState", m.breaker_state);
  set_num(env, out, "cancelled", (double)m.cancelled);
  set_num(env, out, "hedges", (double)m.hedges);
  set_num(env, out, "hedgesWon", (double)m.hedges_won);
  set_num(env, out, "hedgeCancelled", (double)m.hedge_cancelled);
  return out;
}

static napi_value metrics_reset(napi_env env, napi_callback_info info) {
  (void)info;
  return num(env, mulligan_metrics_reset());
}

static napi_value idempotency_key_new(napi_env env, napi_callback_info info) {
  (void)info;
  char buf[MULLIGAN_IDEMPOTENCY_KEY_SIZE];
  if (mulligan_idempotency_key_new(buf, sizeof buf) != MULLIGAN_OK) {
    napi_throw_error(env, "ERR_MULLIGAN", mulligan_last_error());
    return NULL;
  }
  return str(env, buf);
}

/* ---- pipelines and calls (calls.c) ---------------------------------------- */

napi_value pipeline_create(napi_env env, napi_callback_info info);
napi_value pipeline_now(napi_env env, napi_callback_info info);
napi_value call_begin(napi_env env, napi_callback_info info);
napi_value call_admit(napi_env env, napi_callback_info info);
napi_value call_record(napi_env env, napi_callback_info info);
napi_value call_abandon(napi_env env, napi_callback_info info);
napi_value call_cancel(napi_env env, napi_callback_info info);
napi_value call_attempts(napi_env env, napi_callback_info info);

double *addon_scratch(napi_env env) { return scratch(env); }

/* retry budgets and hedged calls (hedging.c, 0.6) */
void hedging_define(napi_env env, napi_value exports);

static napi_value init(napi_env env, napi_value exports) {
  instance *in = (instance *)calloc(1, sizeof(instance));
  if (in == NULL) return NULL;
  napi_set_instance_data(env, in, instance_free, NULL);
  napi_property_descriptor props[] = {
#define FN(NAME, CB) {NAME, NULL, CB, NULL, NULL, NULL, napi_default, NULL}
      FN("setScratch", set_scratch),
      FN("version", version),
      FN("lastError", last_error),
      FN("statusStr", status_str),
      FN("stopReasonStr", stop_reason_str),
      FN("clockCreateFake", clock_create_fake),
      FN("clockAdvance", clock_advance),
      FN("clockNow", clock_now),
      FN("close", close_handle),
      FN("breakerCreate", breaker_create),
      FN("registryGet", registry_get_cb),
      FN("breakerAcquire", breaker_acquire),
      FN("breakerRecord", breaker_record),
      FN("breakerExecAcquire", breaker_exec_acquire),
      FN("breakerExecRecord", breaker_exec_record),
      FN("breakerInfo", breaker_info),
      FN("breakerCounts", breaker_counts),
      FN("breakerControl", breaker_control),
      FN("retryAfterParse", retry_after_parse),
      FN("metricsJson", metrics_json),
      FN("metricsGet", metrics_get),
      FN("metricsReset", metrics_reset),
      FN("idempotencyKeyNew", idempotency_key_new),
      FN("pipelineCreate", pipeline_create),
      FN("pipelineNow", pipeline_now),
      FN("callBegin", call_begin),
      FN("callAdmit", call_admit),
      FN("callRecord", call_record),
      FN("callAbandon", call_abandon),
      FN("callCancel", call_cancel),
      FN("callAttempts", call_attempts),
#undef FN
  };
  napi_define_properties(env, exports, sizeof props / sizeof props[0], props);
  hedging_define(env, exports);
  napi_value size;
  napi_create_uint32(env, (uint32_t)sizeof(mulligan_breaker_permit), &size);
  napi_set_named_property(env, exports, "PERMIT_SIZE", size);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
