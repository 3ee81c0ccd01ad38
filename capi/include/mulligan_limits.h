/* mulligan_limits.h — bulkheads and rate limiters of the mulligan C ABI
 * (DESIGN.md sections 2 and 5; core/include/mulligan/limits/).
 *
 * A bulkhead allows at most max_concurrent calls in flight, with an optional
 * FIFO wait queue; a rate limiter admits `rate` calls per second per key,
 * with bursts of `burst`, by the Generic Cell Rate Algorithm (ITU-T I.371).
 * Attached to a pipeline (mulligan_pipeline_options_set_bulkhead /
 * _set_rate_limiter) they are its strategy 2: mulligan_call_admit() then
 * answers MULLIGAN_ADMISSION_WAIT (delay_ms: the limiter's exact wait, or the
 * longest a queued call may wait) or REFUSE with MULLIGAN_STOP_BULKHEAD_FULL
 * / MULLIGAN_STOP_RATE_LIMITED (status MULLIGAN_E_BULKHEAD_FULL /
 * MULLIGAN_E_RATE_LIMITED; never retried). After a WAIT, the caller waits
 * (mulligan_call_wait() blocks on a bulkhead's queue until the slot is
 * handed over, or sleeps the limiter's delay) and calls mulligan_call_admit()
 * again.
 *
 * Thread-safety: mulligan_bulkhead and mulligan_rate_limiter handles are
 * thread-safe (share one between any threads); their options handles are not.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. Compiles as C99 and as C++. (Added in 0.3.)
 */
#ifndef MULLIGAN_LIMITS_H_
#define MULLIGAN_LIMITS_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_pipeline.h"
#include "mulligan_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A bulkhead (mulligan::Bulkhead). Thread-safe. @since 0.3 */
typedef struct mulligan_bulkhead mulligan_bulkhead;
/** A GCRA rate limiter per key (mulligan::RateLimiter). Thread-safe. @since 0.3 */
typedef struct mulligan_rate_limiter mulligan_rate_limiter;

/**
 * Creates a bulkhead: at most `max_concurrent` (>= 1) in flight; at most
 * `max_queue` (>= 0; 0: none) callers waiting in FIFO order, each for at most
 * `max_wait_ms` milliseconds (< 0: no bound but the call's deadline).
 * @param name  printable ASCII (<= 200 bytes) or NULL.
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT naming the bad field
 *         (mulligan_last_error()), MULLIGAN_E_NO_MEMORY.
 * @since 0.3
 */
MULLIGAN_API int mulligan_bulkhead_create(mulligan_bulkhead **out, const char *name,
                                          int max_concurrent, int max_queue, double max_wait_ms);
/** Destroys a bulkhead (NULL: no-op). Pipelines that use it keep it alive. @since 0.3 */
MULLIGAN_API void mulligan_bulkhead_destroy(mulligan_bulkhead *bulkhead);
/** Takes a slot if one is free and nobody waits: 1 (release it later with
 *  mulligan_bulkhead_release), else 0. @since 0.3 */
MULLIGAN_API int mulligan_bulkhead_try_acquire(mulligan_bulkhead *bulkhead);
/** Frees a slot the caller holds; the oldest waiter gets it. A release
 *  while no slot is held does nothing (since 0.4: the count never goes below
 *  zero). @since 0.3 */
MULLIGAN_API void mulligan_bulkhead_release(mulligan_bulkhead *bulkhead);
/** Slots held now (0 for NULL). @since 0.3 */
MULLIGAN_API int mulligan_bulkhead_in_flight(const mulligan_bulkhead *bulkhead);
/** Callers waiting now (0 for NULL). @since 0.3 */
MULLIGAN_API int mulligan_bulkhead_queued(const mulligan_bulkhead *bulkhead);

/**
 * Creates a rate limiter: `rate` calls per second per key (> 0, finite),
 * bursts of `burst` (>= 1, finite); a call waits at most `max_wait_ms`
 * milliseconds for its slot (< 0: no bound but the deadline; 0: never
 * waits); `penalize_retry_after` 1: a 429/503 Retry-After holds every call
 * to that key until then.
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT naming the bad field,
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.3
 */
MULLIGAN_API int mulligan_rate_limiter_create(mulligan_rate_limiter **out, const char *name,
                                              double rate, double burst, double max_wait_ms,
                                              int penalize_retry_after);
/** Destroys a rate limiter (NULL: no-op). @since 0.3 */
MULLIGAN_API void mulligan_rate_limiter_destroy(mulligan_rate_limiter *limiter);
/**
 * Asks for one slot for `key` (NULL or "": the limiter's own bucket) at
 * `now_ms` (mulligan_clock_now_ms's time), waiting at most `max_wait_ms`
 * (< 0: the limiter's own bound). On admission, sets *wait_ms to the wait
 * before the slot (0: now; it is reserved) and returns MULLIGAN_OK; else
 * sets *retry_in_ms and returns MULLIGAN_E_RATE_LIMITED.
 * @since 0.3
 */
MULLIGAN_API int mulligan_rate_limiter_acquire(mulligan_rate_limiter *limiter, const char *key,
                                               double now_ms, double max_wait_ms,
                                               double *wait_ms, double *retry_in_ms);

/** Guards every call of the pipeline with `bulkhead` (NULL: none). The slot
 *  is held for the whole logical call unless `per_attempt` is 1. @since 0.3 */
MULLIGAN_API int mulligan_pipeline_options_set_bulkhead(mulligan_pipeline_options *opts,
                                                        const mulligan_bulkhead *bulkhead,
                                                        int per_attempt);
/** Guards every call of the pipeline with `limiter` (NULL: none), one bucket
 *  per call key; asked once per call unless `per_attempt` is 1. @since 0.3 */
MULLIGAN_API int mulligan_pipeline_options_set_rate_limiter(mulligan_pipeline_options *opts,
                                                            const mulligan_rate_limiter *limiter,
                                                            int per_attempt);
/**
 * After mulligan_call_admit() answered WAIT: blocks the calling thread until
 * a bulkhead's queue hands the call its slot or `max_ms` milliseconds pass
 * (real time); a limiter's wait (no queue) returns at once: sleep its
 * delay_ms yourself. Then call mulligan_call_admit() again, which refuses
 * when the wait ran out. Never blocks an event loop: such callers set a
 * timer of delay_ms instead.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (NULL call).
 * @since 0.3
 */
MULLIGAN_API int mulligan_call_wait(mulligan_call *call, double max_ms);

#ifdef __cplusplus
}
#endif

#endif /* MULLIGAN_LIMITS_H_ */
