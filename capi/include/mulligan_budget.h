/* mulligan_budget.h — retry budgets and adaptive throttling of the mulligan
 * C ABI (DESIGN.md section 5, "Retry budget"; core/include/mulligan/budget/).
 *
 * A retry budget bounds how many retries the calls that share it may make;
 * the first attempt of a call is never refused by it. Three kinds, each a
 * peer's arithmetic:
 *   MULLIGAN_BUDGET_TOKEN_BUCKET  gRPC A6 retryThrottling
 *       (grpc/proposal A6-client-retries.md): tokens start at max_tokens; a
 *       failed attempt takes 1, a success adds token_ratio; a retry is
 *       allowed only while tokens > max_tokens / 2.
 *   MULLIGAN_BUDGET_QUOTA  the AWS SDKs' 2020 "standard" retry quota:
 *       capacity 500; a retry takes retry_cost 5 (timeout_cost 10 after a
 *       timeout, throttling_cost 5 after a throttling answer); a success
 *       refunds its last retry's cost, or no_retry_increment 1.
 *   MULLIGAN_BUDGET_RATIO  Finagle's RetryBudget (Envoy's retry_budget):
 *       retries at most `percent` of the calls seen over `ttl_ms`, plus a
 *       floor of min_retries_per_second.
 * Attached to a pipeline (mulligan_pipeline_options_set_budget) every retry
 * asks it; a refused retry ends the call with the last failure kept and
 * MULLIGAN_STOP_BUDGET (mulligan_call_record's decision; status
 * MULLIGAN_E_BUDGET_EXHAUSTED from mulligan_budget_try_retry).
 *
 * Adaptive throttling (Google SRE book, chapter 21 "Handling Overload",
 * "Client-Side Throttling"): over a sliding window the throttle counts the
 * requests meant to be sent and the accepts (answers that were not overload
 * answers: HTTP 429/503, gRPC RESOURCE_EXHAUSTED/UNAVAILABLE, a refused
 * connection) and rejects a new attempt locally with probability
 *   p = max(0, (requests - k * accepts) / (requests + 1)).
 * Attached to a pipeline (mulligan_pipeline_options_set_throttle) it is
 * asked before every attempt: mulligan_call_admit() then answers REFUSE with
 * MULLIGAN_STOP_THROTTLED (status MULLIGAN_E_THROTTLED; never retried).
 *
 * Time: every `now_ms` is a reading of the clock the budget or throttle was
 * made with (mulligan_clock_now_ms() of a fake clock, or
 * mulligan_pipeline_now_ms() of a pipeline on the system clock).
 *
 * Thread-safety: mulligan_budget and mulligan_throttle handles are
 * thread-safe (share one between any threads; token-bucket and quota
 * budgets are lock-free). The options structs are plain caller memory.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. Compiles as C99 and as C++. (Added in 0.4.)
 */
#ifndef MULLIGAN_BUDGET_H_
#define MULLIGAN_BUDGET_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_pipeline.h"
#include "mulligan_retry.h"
#include "mulligan_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A retry budget (mulligan::RetryBudget). Thread-safe. @since 0.4 */
typedef struct mulligan_budget mulligan_budget;
/** An adaptive throttle (mulligan::AdaptiveThrottle). Thread-safe. @since 0.4 */
typedef struct mulligan_throttle mulligan_throttle;

/** Which arithmetic a budget follows. Values pinned (mulligan::BudgetKind).
 *  @since 0.4 */
typedef enum mulligan_budget_kind {
  /** gRPC A6 token bucket (the HTTP clients' default). */
  MULLIGAN_BUDGET_TOKEN_BUCKET = 0,
  /** AWS standard-mode retry quota (2020). */
  MULLIGAN_BUDGET_QUOTA = 1,
  /** Finagle ratio budget. */
  MULLIGAN_BUDGET_RATIO = 2
} mulligan_budget_kind;

/** What a failed attempt was, for the quota's costs. Values pinned
 *  (mulligan::BudgetFailure). @since 0.4 */
typedef enum mulligan_budget_failure {
  /** Any other retryable failure (a 500, a refused connection). */
  MULLIGAN_BUDGET_FAILURE_OTHER = 0,
  /** The attempt timed out. */
  MULLIGAN_BUDGET_FAILURE_TIMEOUT = 1,
  /** An overload answer: HTTP 429 or 503, gRPC RESOURCE_EXHAUSTED. */
  MULLIGAN_BUDGET_FAILURE_THROTTLING = 2
} mulligan_budget_failure;

/**
 * A budget's options. Initialise with MULLIGAN_BUDGET_OPTIONS_INIT (every
 * default), then set `kind` and the fields of that kind; the fields of the
 * other kinds are ignored but must keep valid values. The struct only
 * grows at the end; struct_size tells the library which version the caller
 * compiled. Validated by mulligan_budget_create (errors name the field).
 * @since 0.4
 */
typedef struct mulligan_budget_options {
  /** sizeof(mulligan_budget_options) as compiled by the caller. */
  uint32_t struct_size;
  /** A mulligan_budget_kind. Default MULLIGAN_BUDGET_TOKEN_BUCKET. */
  int kind;
  /** Token bucket: 0 < max_tokens <= 1000 (A6's bound). Default 100. */
  double max_tokens;
  /** Token bucket: > 0, 3 decimals kept (A6). Default 0.5. */
  double token_ratio;
  /** Quota: > 0. Default 500. */
  int64_t capacity;
  /** Quota: the cost of a retry, >= 0. Default 5. */
  int64_t retry_cost;
  /** Quota: the cost of a retry after a timeout, >= 0. Default 10. */
  int64_t timeout_cost;
  /** Quota: the cost of a retry after a throttling answer, >= 0. Default 5. */
  int64_t throttling_cost;
  /** Quota: refunded by a call that needed no retry, >= 0. Default 1. */
  int64_t no_retry_increment;
  /** Ratio: the window deposits live for, ms, in [1000, 60000] (Finagle's
   *  bounds). Default 10000. */
  double ttl_ms;
  /** Ratio: retries per call, in [0, 1]. Default 0.2. */
  double percent;
  /** Ratio: retries always allowed per second, >= 0. Default 10. */
  double min_retries_per_second;
} mulligan_budget_options;

/** Initialiser for mulligan_budget_options: a gRPC A6 token bucket of 100
 *  tokens, ratio 0.5, and the other kinds' defaults. @since 0.4 */
#define MULLIGAN_BUDGET_OPTIONS_INIT                                                   \
  { (uint32_t)sizeof(mulligan_budget_options), MULLIGAN_BUDGET_TOKEN_BUCKET, 100.0, 0.5, \
    500, 5, 10, 5, 1, 10000.0, 0.2, 10.0 }

/**
 * Creates a private budget.
 * @param name   printable, the name it is reported under; NULL or "" for none.
 * @param opts   NULL: every default.
 * @param clock  dates the creation (a ratio budget's first fold); NULL: the
 *               system steady clock. Borrowed only during the call.
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT naming the bad field
 *         ("budget 'x': token_bucket.token_ratio must be > 0, got -1"; see
 *         mulligan_last_error()), MULLIGAN_E_NO_MEMORY. *out is NULL on failure.
 * @since 0.4
 */
MULLIGAN_API int mulligan_budget_create(mulligan_budget **out, const char *name,
                                        const mulligan_budget_options *opts,
                                        const mulligan_clock *clock);
/**
 * Returns a new handle to the process-wide budget named `name` (not NULL or
 * empty), made with `opts` on first use; later calls share it and ignore
 * their options (mulligan::RetryBudget::Shared). Destroy each handle.
 * @return as mulligan_budget_create.
 * @since 0.4
 */
MULLIGAN_API int mulligan_budget_shared(mulligan_budget **out, const char *name,
                                        const mulligan_budget_options *opts,
                                        const mulligan_clock *clock);
/** Destroys a handle (NULL: no-op). Pipelines using the budget keep it
 *  alive. @since 0.4 */
MULLIGAN_API void mulligan_budget_destroy(mulligan_budget *budget);

/** A logical call began at `now_ms` (a ratio budget's deposit; the other
 *  kinds ignore it). @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT
 *  (NULL, a non-finite now_ms). @since 0.4 */
MULLIGAN_API int mulligan_budget_on_call_started(mulligan_budget *budget, double now_ms);
/** Counts `n` calls that succeeded with no retry (lazily: one relaxed
 *  increment; a ratio budget also takes each as a call's deposit). A
 *  binding whose success path skips the engine calls this instead.
 *  @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL). @since 0.4 */
MULLIGAN_API int mulligan_budget_add_successes(mulligan_budget *budget, uint64_t n);
/** A call succeeded after its last retry took `cost` (>= 0; the quota
 *  refunds it, a token bucket adds token_ratio). @since 0.4 */
MULLIGAN_API int mulligan_budget_on_retried_success(mulligan_budget *budget, int64_t cost);
/** An attempt failed retryably with a mulligan_budget_failure `kind` (a
 *  token bucket takes 1 token; the others charge at the retry).
 *  @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL, kind out of
 *  range, now_ms not finite). @since 0.4 */
MULLIGAN_API int mulligan_budget_on_failure(mulligan_budget *budget, int kind, double now_ms);
/**
 * Asks for one retry after a failure of `kind` at `now_ms`.
 * @param cost  OUT (may be NULL): what the retry took (milli-tokens for a
 *              token bucket and a ratio budget, quota units), -1 if refused.
 * @return MULLIGAN_OK when allowed; MULLIGAN_E_BUDGET_EXHAUSTED when refused
 *         (counted in refused); MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.4
 */
MULLIGAN_API int mulligan_budget_try_retry(mulligan_budget *budget, int kind, double now_ms,
                                           int64_t *cost);
/**
 * The room left at `now_ms`, in the kind's unit (tokens with 3 decimals,
 * quota capacity, or the retries a ratio budget allows now): the tokens
 * gauge. Folds the pending successes first.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL budget or out).
 * @since 0.4
 */
MULLIGAN_API int mulligan_budget_tokens(mulligan_budget *budget, double now_ms, double *out);
/** Retries refused so far (0 for NULL). @since 0.4 */
MULLIGAN_API uint64_t mulligan_budget_refused(const mulligan_budget *budget);
/** Retries allowed so far (0 for NULL). @since 0.4 */
MULLIGAN_API uint64_t mulligan_budget_allowed(const mulligan_budget *budget);
/** The budget's mulligan_budget_kind (-1 for NULL). @since 0.4 */
MULLIGAN_API int mulligan_budget_kind_of(const mulligan_budget *budget);

/**
 * A throttle's options. Initialise with MULLIGAN_THROTTLE_OPTIONS_INIT; the
 * struct only grows at the end. @since 0.4
 */
typedef struct mulligan_throttle_options {
  /** sizeof(mulligan_throttle_options) as compiled by the caller. */
  uint32_t struct_size;
  /** The window requests and accepts are counted over, ms (10 slices);
   *  >= 1. Default 120000 (the SRE book's 2 minutes). */
  double window_ms;
  /** The SRE book's multiplier K, >= 1 and finite. Default 2. */
  double k;
  /** 1: the rejection draws are seeded with `seed` (deterministic for one
   *  thread); 0 (default): seeded from the OS's entropy. */
  int has_seed;
  /** The seed when has_seed is 1. */
  uint64_t seed;
} mulligan_throttle_options;

/** Initialiser for mulligan_throttle_options: a 2-minute window, K = 2,
 *  random seed. @since 0.4 */
#define MULLIGAN_THROTTLE_OPTIONS_INIT \
  { (uint32_t)sizeof(mulligan_throttle_options), 120000.0, 2.0, 0, 0 }

/**
 * Creates a private throttle.
 * @param name  the name it is reported under; NULL or "" for none.
 * @param opts  NULL: every default.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT naming the field
 *         ("k must be >= 1"), MULLIGAN_E_NO_MEMORY.
 * @since 0.4
 */
MULLIGAN_API int mulligan_throttle_create(mulligan_throttle **out, const char *name,
                                          const mulligan_throttle_options *opts);
/** A new handle to the process-wide throttle named `name` (not NULL or
 *  empty), made with `opts` on first use. @since 0.4 */
MULLIGAN_API int mulligan_throttle_shared(mulligan_throttle **out, const char *name,
                                          const mulligan_throttle_options *opts);
/** Destroys a handle (NULL: no-op). @since 0.4 */
MULLIGAN_API void mulligan_throttle_destroy(mulligan_throttle *throttle);
/**
 * Counts one request at `now_ms` and decides it, with the probability of
 * the window before it.
 * @return MULLIGAN_OK to send it; MULLIGAN_E_THROTTLED when rejected
 *         locally; MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.4
 */
MULLIGAN_API int mulligan_throttle_admit(mulligan_throttle *throttle, double now_ms);
/** The admitted attempt ended with `outcome` (validated as
 *  mulligan_call_record's): counts an accept unless it was an overload
 *  answer. @since 0.4 */
MULLIGAN_API int mulligan_throttle_record(mulligan_throttle *throttle,
                                          const mulligan_outcome *outcome);
/** Counts `n` accepts lazily (successes a binding kept out of the engine).
 *  @since 0.4 */
MULLIGAN_API int mulligan_throttle_add_accepts(mulligan_throttle *throttle, uint64_t n);
/** The rejection probability at `now_ms`, in [0, 1).
 *  @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT. @since 0.4 */
MULLIGAN_API int mulligan_throttle_probability(mulligan_throttle *throttle, double now_ms,
                                               double *out);
/** Requests and accepts in the window at `now_ms` (either OUT may be NULL).
 *  @since 0.4 */
MULLIGAN_API int mulligan_throttle_counts(mulligan_throttle *throttle, double now_ms,
                                          int64_t *requests, int64_t *accepts);
/** Attempts rejected so far (0 for NULL). @since 0.4 */
MULLIGAN_API uint64_t mulligan_throttle_rejected(const mulligan_throttle *throttle);

/** Gates every retry of the pipeline with `budget` (NULL: none; the
 *  pipeline then holds the budget). @since 0.4 */
MULLIGAN_API int mulligan_pipeline_options_set_budget(mulligan_pipeline_options *opts,
                                                      const mulligan_budget *budget);
/** Asks `throttle` before every attempt of the pipeline (NULL: none).
 *  @since 0.4 */
MULLIGAN_API int mulligan_pipeline_options_set_throttle(mulligan_pipeline_options *opts,
                                                        const mulligan_throttle *throttle);

#ifdef __cplusplus
}
#endif

#endif /* MULLIGAN_BUDGET_H_ */
