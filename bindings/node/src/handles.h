/* handles.h — reference-counted boxes around the C ABI's handles, for the
 * N-API addon of bindings/node.
 *
 * Every engine handle a JS object holds lives in a Box: the JS External's
 * finalizer (or an explicit close) drops the JS reference, and a Box that
 * another handle borrows (a call borrows its pipeline, a pipeline or a
 * breaker borrows its clock, a pipeline shares its breaker and its budget, a
 * hedged call borrows its hedging policy and its pipeline) is kept alive by
 * that handle's reference, so the garbage collector may finalize them in any
 * order without a use-after-free (mulligan_pipeline.h "Lifetime").
 *
 * Thread-safety: boxes are touched on the JS thread only (every addon
 * function runs there).
 */
#ifndef MULLIGAN_NODE_HANDLES_H_
#define MULLIGAN_NODE_HANDLES_H_

#include <mulligan.h>
#include <node_api.h>

typedef enum box_kind {
  BOX_CLOCK = 1,
  BOX_BREAKER = 2,
  BOX_REGISTRY = 3,
  BOX_PIPELINE = 4,
  BOX_CALL = 5,
  BOX_BUDGET = 6,        /* (0.6) */
  BOX_HEDGING = 7,       /* (0.6) */
  BOX_HEDGED_CALL = 8    /* (0.6) */
} box_kind;

#define BOX_MAX_DEPS 4

typedef struct box {
  box_kind kind;
  void *ptr;                    /* the C handle; NULL once destroyed */
  int refs;                     /* the JS reference (until closed) + borrowers */
  int js_closed;                /* 1 once the JS side let go (close or GC) */
  int ext_alive;                /* 1 while the JS External exists (owns the memory) */
  struct box *deps[BOX_MAX_DEPS];
  /* BOX_BREAKER: the permits of CircuitBreaker.execute() calls in flight
   * (breakerExecAcquire / breakerExecRecord, addon.c), so that a guarded
   * call passes a slot number instead of a permit buffer (0.6). A slot is
   * free when its struct_size is 0 and its number is on free_slots. */
  mulligan_breaker_permit *slots;
  int *free_slots;
  int nslots;
  int nfree;
} box;

/* Creates a box holding `ptr` with one reference (the JS one), borrowing
 * each non-NULL dep (a reference taken on it). NULL when out of memory (the
 * handle is then destroyed). */
box *box_new(box_kind kind, void *ptr, box *const *deps, int ndeps);

/* Takes one reference. */
void box_retain(box *b);

/* Drops one reference; the last one destroys the C handle, then drops the
 * box's references on its deps. */
void box_release(box *b);

/* Wraps a new box in a JS External whose finalizer drops the JS reference.
 * On failure releases the box and returns NULL (an exception is pending). */
napi_value box_wrap(napi_env env, box *b);

/* Reads the box of `value`, of `kind`; NULL with a pending TypeError naming
 * `what` when value is not such a handle or was closed. */
box *box_get(napi_env env, napi_value value, box_kind kind, const char *what);

/* Like box_get, but JS null or undefined gives NULL with no exception
 * (*ok stays 1); a wrong value sets *ok to 0 with a pending TypeError. */
box *box_get_optional(napi_env env, napi_value value, box_kind kind, const char *what, int *ok);

/* Drops the JS reference of `value`'s box (an explicit close); a second
 * close is a no-op. */
void box_close(napi_env env, napi_value value);

#endif /* MULLIGAN_NODE_HANDLES_H_ */
