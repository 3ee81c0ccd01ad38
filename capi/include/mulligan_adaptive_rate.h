/* mulligan_adaptive_rate.h — the AWS SDKs' adaptive-mode client send rate
 * of the mulligan C ABI (core/include/mulligan/limits/adaptive_rate.h).
 *
 * A token bucket whose fill rate a CUBIC controller sets (beta 0.7, scale
 * constant 0.4 by default, as the AWS SDKs' retry behavior specification):
 * a throttling answer (HTTP 429, 503 with Retry-After, gRPC
 * RESOURCE_EXHAUSTED) cuts the rate to beta times the measured send rate and
 * enables the bucket; answers that are not throttling grow it back along
 * CUBIC's curve. Until the first throttling answer every request goes at
 * once. Attached to a pipeline (mulligan_pipeline_options_set_adaptive_rate)
 * it is strategy 2 at attempt level: mulligan_call_admit() answers
 * MULLIGAN_ADMISSION_WAIT with the token's exact delay_ms, or REFUSE with
 * MULLIGAN_STOP_RATE_LIMITED (MULLIGAN_E_RATE_LIMITED) past max_wait_ms or
 * the deadline; every answered attempt is recorded into it.
 *
 * Times: now_ms values are mulligan_clock_now_ms readings, in milliseconds;
 * rates are requests per second.
 *
 * Thread-safety: a mulligan_adaptive_rate handle is thread-safe (share one
 * between any threads).
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. Compiles as C99 and as C++. (Added in 0.4.)
 */
#ifndef MULLIGAN_ADAPTIVE_RATE_H_
#define MULLIGAN_ADAPTIVE_RATE_H_

#include "mulligan_pipeline.h"
#include "mulligan_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An adaptive client rate (mulligan::AdaptiveRate). Thread-safe. @since 0.4 */
typedef struct mulligan_adaptive_rate mulligan_adaptive_rate;

/** What mulligan_adaptive_rate_get reads. Values are pinned. @since 0.4 */
typedef enum mulligan_adaptive_field {
  MULLIGAN_ADAPTIVE_ENABLED = 0,         /* 1 once a throttling answer was seen, else 0 */
  MULLIGAN_ADAPTIVE_FILL_RATE = 1,       /* tokens (requests) per second */
  MULLIGAN_ADAPTIVE_MAX_CAPACITY = 2,    /* the bucket's bound, tokens */
  MULLIGAN_ADAPTIVE_CAPACITY = 3,        /* tokens at now_ms (negative: reserved) */
  MULLIGAN_ADAPTIVE_MEASURED_RATE = 4,   /* smoothed requests per second sent */
  MULLIGAN_ADAPTIVE_LAST_MAX_RATE = 5,   /* CUBIC's W_max, requests per second */
  MULLIGAN_ADAPTIVE_TIME_WINDOW = 6,     /* CUBIC's K, seconds */
  MULLIGAN_ADAPTIVE_CALCULATED_RATE = 7  /* the last CUBIC output, before the caps */
} mulligan_adaptive_field;

/**
 * Creates an adaptive rate dated `now_ms`, with CUBIC's `beta` (in (0, 1);
 * 0.7 the spec's) and `scale_constant` (> 0; 0.4 the spec's); a request
 * waits at most `max_wait_ms` for its token (< 0: no bound but the call's
 * deadline). Smoothing 0.8, a 0.5 s measuring bucket, a 0.5/s floor and a
 * 2x-measured cap are the spec's and fixed here.
 * @param name  printable ASCII (<= 200 bytes) or NULL.
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT naming the bad field
 *         (mulligan_last_error()), MULLIGAN_E_NO_MEMORY.
 * @since 0.4
 */
MULLIGAN_API int mulligan_adaptive_rate_create(mulligan_adaptive_rate **out, const char *name,
                                               double now_ms, double beta, double scale_constant,
                                               double max_wait_ms);
/** Destroys an adaptive rate (NULL: no-op). Pipelines using it keep it alive. @since 0.4 */
MULLIGAN_API void mulligan_adaptive_rate_destroy(mulligan_adaptive_rate *rate);
/**
 * Takes one token at `now_ms`, waiting at most `max_wait_ms` (< 0: the
 * rate's own bound). On admission sets *wait_ms (0: now; the token is
 * reserved) and returns MULLIGAN_OK; else sets *retry_in_ms and returns
 * MULLIGAN_E_RATE_LIMITED. Either pointer may be NULL.
 * @since 0.4
 */
MULLIGAN_API int mulligan_adaptive_rate_acquire(mulligan_adaptive_rate *rate, double now_ms,
                                                double max_wait_ms, double *wait_ms,
                                                double *retry_in_ms);
/** Records one answer at `now_ms`: `throttled` 1 for a throttling answer.
 *  @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT. @since 0.4 */
MULLIGAN_API int mulligan_adaptive_rate_record(mulligan_adaptive_rate *rate, int throttled,
                                               double now_ms);
/** Reads `field` at `now_ms` (0 for NULL or an unknown field). @since 0.4 */
MULLIGAN_API double mulligan_adaptive_rate_get(const mulligan_adaptive_rate *rate,
                                               mulligan_adaptive_field field, double now_ms);
/** Paces every attempt of the pipeline with `rate` (NULL: none). @since 0.4 */
MULLIGAN_API int mulligan_pipeline_options_set_adaptive_rate(mulligan_pipeline_options *opts,
                                                             const mulligan_adaptive_rate *rate);

#ifdef __cplusplus
}
#endif

#endif /* MULLIGAN_ADAPTIVE_RATE_H_ */
