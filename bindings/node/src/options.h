/* options.h — reading JS option objects for the N-API addon (options.c).
 * Each reader returns 1 when the option is present (and read), 0 when it is
 * absent or undefined, -1 with a pending TypeError naming the option when its
 * type is wrong. The apply_* functions return 0, or -1 with a pending
 * TypeError or RangeError naming the option (a RangeError carries the
 * engine's own text). Called on the JS thread only.
 */
#ifndef MULLIGAN_NODE_OPTIONS_H_
#define MULLIGAN_NODE_OPTIONS_H_

#include <stddef.h>

#include <mulligan.h>
#include <node_api.h>

int opt_get(napi_env env, napi_value obj, const char *name, napi_value *out);
int opt_number(napi_env env, napi_value obj, const char *name, double *out);
int opt_int(napi_env env, napi_value obj, const char *name, int *out);
int opt_bool(napi_env env, napi_value obj, const char *name, int *out);
int opt_string(napi_env env, napi_value obj, const char *name, char *buf, size_t size);
int opt_int_array(napi_env env, napi_value obj, const char *name, int *out, size_t cap,
                  size_t *count);
/* Throws TypeError "<option>: expected <expected>"; returns -1. */
int throw_type(napi_env env, const char *option, const char *expected);
/* Throws RangeError "<option>: <mulligan_last_error()>"; returns -1. */
int throw_range(napi_env env, const char *option);

/* Retry options by their JS names (maxAttempts, backoff, baseDelayMs, ...:
 * bindings/node/lib/retry.js documents them). */
int apply_retry_options(napi_env env, napi_value obj, mulligan_retry_options *o);
/* Breaker options by their JS names (failureThreshold, resetTimeoutMs, ...). */
int apply_breaker_options(napi_env env, napi_value obj, mulligan_breaker_options *o);

#endif /* MULLIGAN_NODE_OPTIONS_H_ */
