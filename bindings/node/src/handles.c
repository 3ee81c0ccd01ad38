/* handles.c — see handles.h. */
#include "handles.h"

#include <stdio.h>
#include <stdlib.h>

#include <mulligan.h>

static void destroy_handle(box *b) {
  switch (b->kind) {
    case BOX_CLOCK: mulligan_clock_destroy((mulligan_clock *)b->ptr); break;
    case BOX_BREAKER: mulligan_breaker_destroy((mulligan_breaker *)b->ptr); break;
    case BOX_REGISTRY: mulligan_breaker_registry_destroy((mulligan_breaker_registry *)b->ptr); break;
    case BOX_PIPELINE: mulligan_pipeline_destroy((mulligan_pipeline *)b->ptr); break;
    case BOX_CALL: mulligan_call_destroy((mulligan_call *)b->ptr); break;
    case BOX_BUDGET: mulligan_budget_destroy((mulligan_budget *)b->ptr); break;
    case BOX_HEDGING: mulligan_hedging_policy_destroy((mulligan_hedging_policy *)b->ptr); break;
    case BOX_HEDGED_CALL: mulligan_hedged_call_destroy((mulligan_hedged_call *)b->ptr); break;
  }
  b->ptr = NULL;
  free(b->slots);
  free(b->free_slots);
  b->slots = NULL;
  b->free_slots = NULL;
  b->nslots = b->nfree = 0;
}

box *box_new(box_kind kind, void *ptr, box *const *deps, int ndeps) {
  box *b = (box *)calloc(1, sizeof(box));
  if (b == NULL) {
    box tmp = {kind, ptr, 1, 0, 0, {NULL, NULL, NULL, NULL}, NULL, NULL, 0, 0};
    destroy_handle(&tmp);
    return NULL;
  }
  b->kind = kind;
  b->ptr = ptr;
  b->refs = 1;
  for (int i = 0, j = 0; i < ndeps && j < BOX_MAX_DEPS; ++i) {
    if (deps[i] != NULL) {
      box_retain(deps[i]);
      b->deps[j++] = deps[i];
    }
  }
  return b;
}

void box_retain(box *b) { ++b->refs; }

void box_release(box *b) {
  if (b == NULL || --b->refs > 0) return;
  destroy_handle(b);
  for (int i = 0; i < BOX_MAX_DEPS; ++i) box_release(b->deps[i]);
  if (!b->ext_alive) free(b);
}

static void drop_js(box *b) {
  if (!b->js_closed) {
    b->js_closed = 1;
    box_release(b);
  }
}

/* The External's finalizer: drops the JS reference if close() did not, and
 * frees the memory once nothing borrows the box either. */
static void finalize(napi_env env, void *data, void *hint) {
  (void)env;
  (void)hint;
  box *b = (box *)data;
  b->ext_alive = 0;
  if (!b->js_closed) {
    drop_js(b);
  } else if (b->refs == 0) {
    free(b);
  }
}

napi_value box_wrap(napi_env env, box *b) {
  napi_value out;
  if (napi_create_external(env, b, finalize, NULL, &out) != napi_ok) {
    box_release(b);
    return NULL;
  }
  b->ext_alive = 1;
  return out;
}

static const char *kind_name(box_kind kind) {
  switch (kind) {
    case BOX_CLOCK: return "clock";
    case BOX_BREAKER: return "breaker";
    case BOX_REGISTRY: return "breaker registry";
    case BOX_PIPELINE: return "pipeline";
    case BOX_CALL: return "call";
    case BOX_BUDGET: return "retry budget";
    case BOX_HEDGING: return "hedging policy";
    case BOX_HEDGED_CALL: return "hedged call";
  }
  return "handle";
}

static box *lookup(napi_env env, napi_value value, box_kind kind, const char *what) {
  char msg[160];
  void *data = NULL;
  /* napi_get_value_external refuses a value that is not an External
   * (napi_invalid_arg), so no napi_typeof first: one call fewer per step. */
  if (napi_get_value_external(env, value, &data) != napi_ok || data == NULL ||
      ((box *)data)->kind != kind) {
    snprintf(msg, sizeof msg, "%s: expected a mulligan %s handle", what, kind_name(kind));
    napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
    return NULL;
  }
  box *b = (box *)data;
  if (b->js_closed || b->ptr == NULL) {
    snprintf(msg, sizeof msg, "%s: the %s is closed", what, kind_name(kind));
    napi_throw_type_error(env, "ERR_INVALID_STATE", msg);
    return NULL;
  }
  return b;
}

box *box_get(napi_env env, napi_value value, box_kind kind, const char *what) {
  return lookup(env, value, kind, what);
}

box *box_get_optional(napi_env env, napi_value value, box_kind kind, const char *what, int *ok) {
  napi_valuetype t;
  *ok = 1;
  if (value == NULL || napi_typeof(env, value, &t) != napi_ok || t == napi_null ||
      t == napi_undefined)
    return NULL;
  box *b = lookup(env, value, kind, what);
  if (b == NULL) *ok = 0;
  return b;
}

void box_close(napi_env env, napi_value value) {
  napi_valuetype t;
  void *data = NULL;
  if (napi_typeof(env, value, &t) != napi_ok || t != napi_external ||
      napi_get_value_external(env, value, &data) != napi_ok || data == NULL)
    return;
  drop_js((box *)data);
}
