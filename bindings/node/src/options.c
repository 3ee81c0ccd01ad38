/* options.c — reading JS option objects into the C ABI's option handles.
 *
 * Each option is read by its JS name; a value of the wrong type is a
 * TypeError naming the option, a value the engine's setter rejects a
 * RangeError naming the option with the engine's text (mulligan_last_error).
 * Nothing is validated here beyond types: the ranges are the engine's.
 */
#include "options.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int opt_get(napi_env env, napi_value obj, const char *name, napi_value *out) {
  bool has = false;
  napi_valuetype t;
  *out = NULL;
  if (obj == NULL) return 0;
  if (napi_has_named_property(env, obj, name, &has) != napi_ok || !has) return 0;
  if (napi_get_named_property(env, obj, name, out) != napi_ok) return -1;
  if (napi_typeof(env, *out, &t) != napi_ok) return -1;
  if (t == napi_undefined) {
    *out = NULL;
    return 0;
  }
  return 1;
}

int throw_type(napi_env env, const char *option, const char *expected) {
  char msg[200];
  snprintf(msg, sizeof msg, "%s: expected %s", option, expected);
  napi_throw_type_error(env, "ERR_INVALID_ARG_TYPE", msg);
  return -1;
}

int throw_range(napi_env env, const char *option) {
  char msg[400];
  snprintf(msg, sizeof msg, "%s: %s", option, mulligan_last_error());
  napi_throw_range_error(env, "ERR_OUT_OF_RANGE", msg);
  return -1;
}

int opt_number(napi_env env, napi_value obj, const char *name, double *out) {
  napi_value v;
  napi_valuetype t;
  int r = opt_get(env, obj, name, &v);
  if (r <= 0) return r;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_number) return throw_type(env, name, "a number");
  napi_get_value_double(env, v, out);
  return 1;
}

int opt_int(napi_env env, napi_value obj, const char *name, int *out) {
  double d = 0;
  int r = opt_number(env, obj, name, &d);
  if (r <= 0) return r;
  if (!isfinite(d) || d != floor(d)) return throw_type(env, name, "an integer");
  /* An integer past a C int saturates (a cast would be undefined): the
   * engine then decides, capping a count above its cap (maxAttempts above 5
   * is 5, gRPC A6) or refusing it by name with the saturated value. */
  *out = d > INT_MAX ? INT_MAX : d < INT_MIN ? INT_MIN : (int)d;
  return 1;
}

int opt_bool(napi_env env, napi_value obj, const char *name, int *out) {
  napi_value v;
  napi_valuetype t;
  bool b = false;
  int r = opt_get(env, obj, name, &v);
  if (r <= 0) return r;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_boolean) return throw_type(env, name, "a boolean");
  napi_get_value_bool(env, v, &b);
  *out = b ? 1 : 0;
  return 1;
}

int opt_string(napi_env env, napi_value obj, const char *name, char *buf, size_t size) {
  napi_value v;
  napi_valuetype t;
  size_t len = 0;
  int r = opt_get(env, obj, name, &v);
  if (r <= 0) return r;
  if (napi_typeof(env, v, &t) != napi_ok || t != napi_string) return throw_type(env, name, "a string");
  napi_get_value_string_utf8(env, v, NULL, 0, &len);
  if (len + 1 > size) return throw_type(env, name, "a shorter string");
  napi_get_value_string_utf8(env, v, buf, size, &len);
  return 1;
}

/* Reads an array of integers (at most `cap`), e.g. retryable statuses. */
int opt_int_array(napi_env env, napi_value obj, const char *name, int *out, size_t cap,
                  size_t *count) {
  napi_value v;
  bool is_array = false;
  uint32_t n = 0;
  int r = opt_get(env, obj, name, &v);
  if (r <= 0) return r;
  if (napi_is_array(env, v, &is_array) != napi_ok || !is_array)
    return throw_type(env, name, "an array of integers");
  napi_get_array_length(env, v, &n);
  if (n > cap) return throw_type(env, name, "a shorter array");
  for (uint32_t i = 0; i < n; ++i) {
    napi_value e;
    napi_valuetype t;
    double d = 0;
    napi_get_element(env, v, i, &e);
    if (napi_typeof(env, e, &t) != napi_ok || t != napi_number)
      return throw_type(env, name, "an array of integers");
    napi_get_value_double(env, e, &d);
    if (d != (double)(int)d) return throw_type(env, name, "an array of integers");
    out[i] = (int)d;
  }
  *count = n;
  return 1;
}

/* Applies the number option `name` with `set` (a C setter taking a double). */
#define NUM(NAME, CALL)                                   \
  do {                                                    \
    double v_ = 0;                                        \
    int r_ = opt_number(env, obj, NAME, &v_);             \
    if (r_ < 0) return -1;                                \
    if (r_ > 0 && (CALL) != MULLIGAN_OK) return throw_range(env, NAME); \
  } while (0)
#define INT(NAME, CALL)                                   \
  do {                                                    \
    int v_ = 0;                                           \
    int r_ = opt_int(env, obj, NAME, &v_);                \
    if (r_ < 0) return -1;                                \
    if (r_ > 0 && (CALL) != MULLIGAN_OK) return throw_range(env, NAME); \
  } while (0)
#define BOOL(NAME, CALL)                                  \
  do {                                                    \
    int v_ = 0;                                           \
    int r_ = opt_bool(env, obj, NAME, &v_);               \
    if (r_ < 0) return -1;                                \
    if (r_ > 0 && (CALL) != MULLIGAN_OK) return throw_range(env, NAME); \
  } while (0)

int apply_retry_options(napi_env env, napi_value obj, mulligan_retry_options *o) {
  int list[64];
  size_t n = 0;
  double seed = 0;
  int r;
  INT("maxAttempts", mulligan_retry_options_set_max_attempts(o, v_));
  INT("backoff", mulligan_retry_options_set_backoff(o, (mulligan_backoff_kind)v_));
  NUM("baseDelayMs", mulligan_retry_options_set_base_delay_ms(o, v_));
  NUM("multiplier", mulligan_retry_options_set_multiplier(o, v_));
  NUM("maxDelayMs", mulligan_retry_options_set_max_delay_ms(o, v_));
  NUM("minDelayMs", mulligan_retry_options_set_min_delay_ms(o, v_));
  INT("jitter", mulligan_retry_options_set_jitter(o, (mulligan_jitter_kind)v_));
  NUM("jitterFraction", mulligan_retry_options_set_jitter_fraction(o, v_));
  NUM("deadlineMs", mulligan_retry_options_set_deadline_ms(o, v_));
  NUM("attemptTimeoutMs", mulligan_retry_options_set_attempt_timeout_ms(o, v_));
  NUM("retryAfterMaxMs", mulligan_retry_options_set_retry_after_max_ms(o, v_));
  BOOL("retryAfterClamp", mulligan_retry_options_set_retry_after_clamp(o, v_));
  BOOL("respectRetryAfter", mulligan_retry_options_set_respect_retry_after(o, v_));
  r = opt_int_array(env, obj, "retryableStatuses", list, 64, &n);
  if (r < 0) return -1;
  if (r > 0 && mulligan_retry_options_set_retryable_statuses(o, list, n) != MULLIGAN_OK)
    return throw_range(env, "retryableStatuses");
  r = opt_number(env, obj, "seed", &seed);
  if (r < 0) return -1;
  if (r > 0) {
    if (seed < 0 || seed > 9007199254740991.0 || seed != (double)(uint64_t)seed)
      return throw_type(env, "seed", "a safe non-negative integer");
    mulligan_retry_options_set_seed(o, (uint64_t)seed);
  }
  return 0;
}

int apply_breaker_options(napi_env env, napi_value obj, mulligan_breaker_options *o) {
  char name[256];
  int r = opt_string(env, obj, "name", name, sizeof name);
  if (r < 0) return -1;
  if (r > 0 && mulligan_breaker_options_set_name(o, name) != MULLIGAN_OK)
    return throw_range(env, "name");
  INT("failureThreshold", mulligan_breaker_options_set_failure_threshold(o, v_));
  INT("window", mulligan_breaker_options_set_window(o, v_));
  INT("windowSize", mulligan_breaker_options_set_window_size(o, v_));
  NUM("windowDurationMs", mulligan_breaker_options_set_window_duration_ms(o, v_));
  INT("windowBuckets", mulligan_breaker_options_set_window_buckets(o, v_));
  NUM("failureRateThreshold", mulligan_breaker_options_set_failure_rate_threshold(o, v_));
  INT("minimumCalls", mulligan_breaker_options_set_minimum_calls(o, v_));
  NUM("slowCallDurationMs", mulligan_breaker_options_set_slow_call_duration_ms(o, v_));
  NUM("slowCallRateThreshold", mulligan_breaker_options_set_slow_call_rate_threshold(o, v_));
  NUM("resetTimeoutMs", mulligan_breaker_options_set_reset_timeout_ms(o, v_));
  NUM("resetTimeoutMultiplier", mulligan_breaker_options_set_reset_timeout_multiplier(o, v_));
  NUM("maxResetTimeoutMs", mulligan_breaker_options_set_max_reset_timeout_ms(o, v_));
  INT("halfOpenMaxCalls", mulligan_breaker_options_set_half_open_max_calls(o, v_));
  NUM("permitTimeoutMs", mulligan_breaker_options_set_permit_timeout_ms(o, v_));
  return 0;
}
