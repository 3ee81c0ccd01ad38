/* mulligan_wait.h — composed waits and stop options of the mulligan C ABI:
 * a small immutable wait expression (constant, linear, exponential, uniform,
 * additive jitter, sums and per-retry chains) that replaces a retry policy's
 * backoff strategy and jitter, a minimum delay for every backoff, and
 * unlimited attempts bounded by a deadline, and separate retry counts per
 * kind of failure.
 *
 * The engine evaluates the expression with the policy's seeded generator
 * (core/include/mulligan/retry/wait.h), exactly as the C++ and Python front
 * doors and config files do, so every front door waits the same delays. With
 * n = retries already made (0 before the first retry), in milliseconds:
 *   constant(d)                     d
 *   linear(start, inc, max)         min(start + inc * n, max)
 *   exponential(base, mult, max)    min(base * mult^n, max)   (tenacity's
 *                                   wait_exponential; base 0 or mult 0: 0)
 *   uniform(low, high)              uniform(low, high)        (tenacity's wait_random)
 *   jitter(max)                     uniform(0, max)           (urllib3's backoff_jitter)
 *   sum(w1, w2, ...)                w1 + w2 + ...
 *   chain(w1, ..., wk)              w1 before retry 1, w2 before retry 2, ...,
 *                                   wk before every later one (tenacity's wait_chain)
 * The policy clamps the value to [min_delay, max_delay] after every jitter
 * term; all arithmetic saturates.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_WAIT_H_
#define MULLIGAN_WAIT_H_

#include "mulligan_status.h"
#include "mulligan_retry.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Wait expressions                                                           */
/* ========================================================================== */

/**
 * An immutable wait expression. Created by the mulligan_wait_* functions
 * below, released with mulligan_wait_destroy(). A wait is copied into
 * whatever uses it (a sum, a chain, retry options), so it may be destroyed
 * right after.
 * Thread-safety: immutable; may be read from many threads.
 * @since 0.2
 */
typedef struct mulligan_wait mulligan_wait;

/** Pass as max_ms to linear and exponential waits for "no cap of its own".
 *  @since 0.2 */
#define MULLIGAN_WAIT_NO_MAX (-1.0)

/**
 * Creates a constant wait of delay_ms before every retry.
 * @param out  OUT: the new wait; NULL on failure.
 * @param delay_ms  finite, >= 0.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT or MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_wait_constant(mulligan_wait **out, double delay_ms);

/**
 * Creates a linear wait: start_ms + increment_ms * n, at most max_ms
 * (tenacity's wait_incrementing).
 * @param out  OUT: the new wait; NULL on failure.
 * @param start_ms  finite, >= 0.
 * @param increment_ms  finite, >= 0.
 * @param max_ms  finite and >= 0, or MULLIGAN_WAIT_NO_MAX (any negative value).
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT or MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_wait_linear(mulligan_wait **out, double start_ms, double increment_ms,
                                      double max_ms);

/**
 * Creates an exponential wait: base_ms * multiplier^n, at most max_ms.
 * @param out  OUT: the new wait; NULL on failure.
 * @param base_ms  finite, >= 0 (0: no wait at every n).
 * @param multiplier  finite, >= 0 (0: no wait at every n).
 * @param max_ms  finite and >= 0, or MULLIGAN_WAIT_NO_MAX (any negative value).
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT or MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_wait_exponential(mulligan_wait **out, double base_ms, double multiplier,
                                           double max_ms);

/**
 * Creates a uniform random wait in [low_ms, high_ms), drawn before each retry
 * from the policy's generator.
 * @param out  OUT: the new wait; NULL on failure.
 * @param low_ms  finite, >= 0.
 * @param high_ms  finite, >= low_ms.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT or MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_wait_uniform(mulligan_wait **out, double low_ms, double high_ms);

/**
 * Creates an additive random jitter: uniform(0, max_ms), meant to be summed
 * with another wait (urllib3's backoff_jitter).
 * @param out  OUT: the new wait; NULL on failure.
 * @param max_ms  finite, >= 0.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT or MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_wait_jitter(mulligan_wait **out, double max_ms);

/**
 * Creates the sum of `count` waits (copied; draws happen in array order).
 * @param out  OUT: the new wait; NULL on failure.
 * @param waits  `count` non-NULL waits.
 * @param count  1 to 64.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT or MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_wait_sum(mulligan_wait **out, const mulligan_wait *const *waits,
                                   size_t count);

/**
 * Creates a chain: waits[0] before retry 1, waits[1] before retry 2, ...,
 * waits[count - 1] before every later retry (copied).
 * @param out  OUT: the new wait; NULL on failure.
 * @param waits  `count` non-NULL waits.
 * @param count  1 to 64.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT or MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_wait_chain(mulligan_wait **out, const mulligan_wait *const *waits,
                                     size_t count);

/**
 * Destroys a wait. No-op on NULL.
 * @since 0.2
 */
MULLIGAN_API void mulligan_wait_destroy(mulligan_wait *wait);

/* ========================================================================== */
/* Retry options that use them                                                */
/* ========================================================================== */

/**
 * Replaces the backoff strategy and jitter of `opts` with a copy of `wait`
 * (set_backoff, set_base_delay_ms, set_multiplier, set_jitter and
 * set_jitter_fraction no longer apply); max_delay and min_delay still clamp it.
 * NULL `wait` clears it (the strategy applies again).
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (NULL opts) or MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_retry_options_set_wait(mulligan_retry_options *opts,
                                                 const mulligan_wait *wait);

/**
 * Sets the least delay of every backoff (default 0), applied after jitter
 * with max_delay (tenacity's wait_exponential min); Retry-After hints are
 * not raised. mulligan_retry_policy_create() refuses min_delay > max_delay.
 * @param min_delay_ms  finite, >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.2
 */
MULLIGAN_API int mulligan_retry_options_set_min_delay_ms(mulligan_retry_options *opts,
                                                         double min_delay_ms);

/**
 * With unlimited = 1, attempts are unlimited (tenacity's stop_never;
 * max_attempts no longer applies): mulligan_retry_policy_create() then
 * refuses options without a deadline (mulligan_retry_options_set_deadline_ms)
 * with MULLIGAN_E_INVALID_ARGUMENT. 0 (the default) restores max_attempts.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.2
 */
MULLIGAN_API int mulligan_retry_options_set_unlimited_attempts(mulligan_retry_options *opts,
                                                               int unlimited);

/**
 * The kind of a retryable failure, for separate retry counts (urllib3's
 * Retry(connect=, read=, status=, other=)). Values are pinned (they equal
 * mulligan::RetryKind).
 * @since 0.2
 */
typedef enum mulligan_retry_kind {
  /** A transport failure before any byte was sent (refused, DNS, connect timeout). */
  MULLIGAN_RETRY_KIND_CONNECT = 0,
  /** A transport failure after the request was sent (reset, timeout, truncated). */
  MULLIGAN_RETRY_KIND_READ = 1,
  /** A retryable HTTP status or gRPC code. */
  MULLIGAN_RETRY_KIND_STATUS = 2,
  /** Anything else (MULLIGAN_ERROR_RETRYABLE: a failure the caller classified). */
  MULLIGAN_RETRY_KIND_OTHER = 3
} mulligan_retry_kind;

/**
 * Bounds the retries of one kind of failure on their own, inside
 * max_attempts: a failure whose kind has used `max_retries` retries stops the
 * call (MULLIGAN_STOP_ATTEMPTS_EXHAUSTED). 0 never retries that kind; a
 * negative value removes the bound (the default).
 * @param kind  a mulligan_retry_kind value.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts, unknown kind).
 * @since 0.2
 */
MULLIGAN_API int mulligan_retry_options_set_kind_retries(mulligan_retry_options *opts, int kind,
                                                         int max_retries);

#ifdef __cplusplus
}
#endif

#endif /* MULLIGAN_WAIT_H_ */
