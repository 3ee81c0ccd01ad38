/* napi_args.h — what every N-API function of the addon shares: reading its
 * arguments (ARGS), making a JS number, reading one, and the per-instance
 * scratch buffer (addon.c). Header-only; called on the JS thread only. */
#ifndef MULLIGAN_NODE_NAPI_ARGS_H_
#define MULLIGAN_NODE_NAPI_ARGS_H_

#include <node_api.h>

#include "options.h"

/* The addon instance's scratch doubles (setScratch, addon.c), or NULL with
 * an Error pending. */
double *addon_scratch(napi_env env);

/* Declares argc and argv[N] of the calling N-API function, the arguments
 * not given set to undefined. */
#define ARGS(N)                                                        \
  size_t argc = (N);                                                   \
  napi_value argv[(N) > 0 ? (N) : 1];                                  \
  napi_get_cb_info(env, info, &argc, argv, NULL, NULL);                \
  for (size_t i_ = argc; i_ < (size_t)(N); ++i_) napi_get_undefined(env, &argv[i_])

/* A JS number of `v`. */
static inline napi_value num(napi_env env, double v) {
  napi_value out;
  napi_create_double(env, v, &out);
  return out;
}

/* Reads a JS number into *out: 0, or -1 with a TypeError naming `what`. */
static inline int get_number(napi_env env, napi_value v, const char *what, double *out) {
  napi_valuetype t;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_number) return throw_type(env, what, "a number");
  napi_get_value_double(env, v, out);
  return 0;
}

#endif /* MULLIGAN_NODE_NAPI_ARGS_H_ */
