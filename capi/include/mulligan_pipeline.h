/* mulligan_pipeline.h — the pipeline of the mulligan C ABI: the one
 * composition of strategies (retry, circuit breaker, metrics, fallback) built
 * and validated once, and the step-by-step call through it that a caller
 * drives from its own loop (the Go, Rust and Node bindings, an event loop, a
 * coroutine scheduler). DESIGN.md section 2; the C++ core is
 * mulligan::Pipeline and mulligan::Call.
 *
 * The engine decides, the caller acts. One logical call:
 *
 *   mulligan_call *call = NULL;
 *   mulligan_call_begin(&call, pipeline, mulligan_pipeline_now_ms(pipeline),
 *                       NULL);
 *   for (;;) {
 *     mulligan_admission a = MULLIGAN_ADMISSION_INIT;
 *     mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
 *     mulligan_decision d = MULLIGAN_DECISION_INIT;
 *     if (mulligan_call_admit(call, mulligan_pipeline_now_ms(pipeline), &a)
 *         != MULLIGAN_OK)
 *       break;                  (refused: MULLIGAN_E_CIRCUIT_OPEN, see below)
 *     o.http_status = run_one_attempt(a.timeout_ms);
 *     mulligan_call_record(call, &o, mulligan_pipeline_now_ms(pipeline), &d);
 *     if (d.action == MULLIGAN_ACTION_STOP) break;   (d.reason says why)
 *     wait_ms(d.delay_ms);      (sleep, a timer, an await: the caller's way)
 *   }
 *   mulligan_call_destroy(call);
 *
 * Time. Every step takes `now_ms`, a reading in milliseconds of the
 * pipeline's clock: mulligan_pipeline_now_ms(pipeline), which is
 * mulligan_clock_now_ms() of the clock given to
 * mulligan_pipeline_options_set_clock() (NULL: the system steady clock). The
 * engine reads no clock itself (so a binding may pass its own reading of the
 * same clock), and it compares `now_ms` with the times of the breaker's
 * other callers: every user of a breaker must read the same clock. Within
 * one call, times must not go backwards.
 *
 * Lifetime. A pipeline must outlive every call begun from it (a call keeps a
 * pointer to it); the options, the retry options, breaker and registry
 * handles given to it may be destroyed as soon as the pipeline is created
 * (it shares the breakers it was given), the clock must outlive it.
 *
 * Thread-safety. A pipeline is immutable and may be shared by any number of
 * threads (mulligan_call_begin() from each). A call is not thread-safe: it
 * belongs to one logical call, stepped by one thread (or one coroutine) at a
 * time.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. A program may include just this header (it includes
 * mulligan_retry.h for the outcome, decision and retry options, and
 * mulligan_breaker.h). Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_PIPELINE_H_
#define MULLIGAN_PIPELINE_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_breaker.h"
#include "mulligan_retry.h"
#include "mulligan_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Pipeline options                                                           */
/* ========================================================================== */

/**
 * A mutable bag of pipeline settings, validated once by
 * mulligan_pipeline_create(), which copies them (the options may then be
 * destroyed or reused). Defaults: no name (metrics are reported under each
 * call's key, or not at all for a call without one), the default retry
 * options (see mulligan_retry_options), no circuit breaker, one breaker
 * result per logical call, metrics reported, the system steady clock.
 *
 * Each setter checks its single value and returns MULLIGAN_OK, or
 * MULLIGAN_E_INVALID_ARGUMENT (the options are then unchanged; a NULL
 * handle included). Consistency between fields is checked at create.
 *
 * Thread-safety: not thread-safe; fill in on one thread.
 * @since 0.2
 */
typedef struct mulligan_pipeline_options mulligan_pipeline_options;

/**
 * Creates pipeline options holding every default.
 * @param out  OUT: the new options; NULL on failure. Free with
 *             mulligan_pipeline_options_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_pipeline_options_create(mulligan_pipeline_options **out);

/**
 * Destroys options (releasing the breaker or registry they hold). NULL is a
 * no-op.
 * @param opts  the options, or NULL.
 * @since 0.2
 */
MULLIGAN_API void mulligan_pipeline_options_destroy(mulligan_pipeline_options *opts);

/**
 * Sets the name the pipeline reports its metrics and events under
 * (mulligan_metrics_get()), e.g. "payments". With no name (the default),
 * each call reports under its key (mulligan_call_options.key; an HTTP
 * client's origin), and a call without a key reports nothing.
 * @param opts  the options.
 * @param name  UTF-8, copied; NULL or "" for no name.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.2
 */
MULLIGAN_API int mulligan_pipeline_options_set_name(mulligan_pipeline_options *opts,
                                                    const char *name);

/**
 * Sets the retry strategy: attempts, backoff, jitter, deadline, attempt
 * timeout, Retry-After handling and classification, as for
 * mulligan_retry_policy_create().
 * @param opts  the options.
 * @param retry  the retry options, copied (they may be destroyed or changed
 *               afterwards); NULL restores every default.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.2
 */
MULLIGAN_API int mulligan_pipeline_options_set_retry(mulligan_pipeline_options *opts,
                                                     const mulligan_retry_options *retry);

/**
 * Guards every call of the pipeline with one circuit breaker, asked before
 * every attempt; a refusal ends the call (MULLIGAN_STOP_CIRCUIT_OPEN, never
 * retried). Exclusive with mulligan_pipeline_options_set_breaker_registry():
 * setting both makes mulligan_pipeline_create() fail.
 * @param opts  the options.
 * @param breaker  the breaker, shared: the options and then the pipeline keep
 *                 it alive, so the handle may be destroyed afterwards. NULL
 *                 removes it (the default).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.2
 */
MULLIGAN_API int mulligan_pipeline_options_set_breaker(mulligan_pipeline_options *opts,
                                                       const mulligan_breaker *breaker);

/**
 * Guards each call with the breaker of its key (mulligan_call_options.key)
 * in `registry`, created on first use; a call without a key is unguarded,
 * and so is a call whose key finds the registry full of breakers in use
 * (traffic is never stopped for lack of a breaker). Exclusive with
 * mulligan_pipeline_options_set_breaker().
 * @param opts  the options.
 * @param registry  the registry, shared like a breaker (see above); NULL
 *                  removes it (the default).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.2
 */
MULLIGAN_API int mulligan_pipeline_options_set_breaker_registry(
    mulligan_pipeline_options *opts, const mulligan_breaker_registry *registry);

/**
 * Chooses what the breaker records: 0 (the default) one result per logical
 * call (the last attempt's permit records the call's final classification;
 * a half-open probe records its own attempt at once, so a failed probe
 * reopens the breaker and the call's retry is refused), 1 every attempt's
 * result (each failed attempt counts towards the trip conditions).
 * @param opts  the options.
 * @param breaker_per_attempt  0 or non-zero.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.2
 */
MULLIGAN_API int mulligan_pipeline_options_set_breaker_per_attempt(
    mulligan_pipeline_options *opts, int breaker_per_attempt);

/**
 * Chooses whether calls report calls, attempts, retries by reason,
 * successes, failures, fallbacks and delays into the process-wide metrics,
 * and emit events (mulligan_metrics.h). Default 1.
 * @param opts  the options.
 * @param report_metrics  0 or non-zero.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.2
 */
MULLIGAN_API int mulligan_pipeline_options_set_report_metrics(mulligan_pipeline_options *opts,
                                                              int report_metrics);

/**
 * Sets the clock whose readings the calls' `now_ms` must be
 * (mulligan_pipeline_now_ms()). Default NULL: the system steady clock.
 * @param opts  the options.
 * @param clock  borrowed: it must outlive every pipeline created from opts.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.2
 */
MULLIGAN_API int mulligan_pipeline_options_set_clock(mulligan_pipeline_options *opts,
                                                     const mulligan_clock *clock);

/* ========================================================================== */
/* Pipeline                                                                   */
/* ========================================================================== */

/**
 * A validated, immutable pipeline (mulligan::Pipeline).
 *
 * Thread-safety: immutable; mulligan_call_begin() may be called from many
 * threads at once. It must outlive every call begun from it.
 * @since 0.2
 */
typedef struct mulligan_pipeline mulligan_pipeline;

/**
 * Validates options and creates a pipeline.
 * @param out  OUT: the new pipeline; NULL on failure. Free with
 *             mulligan_pipeline_destroy().
 * @param opts  the options, copied; NULL for every default.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (out is NULL, or the
 *         options are inconsistent: the last error names the field, e.g.
 *         "breaker and breakers are exclusive: ..." when both a breaker and
 *         a registry were set); MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_pipeline_create(mulligan_pipeline **out,
                                          const mulligan_pipeline_options *opts);

/**
 * Destroys a pipeline. NULL is a no-op.
 * REQUIRES: every call begun from it has been destroyed.
 * @param pipeline  the pipeline, or NULL.
 * @since 0.2
 */
MULLIGAN_API void mulligan_pipeline_destroy(mulligan_pipeline *pipeline);

/**
 * Returns the current reading of the pipeline's clock in milliseconds: the
 * `now_ms` the call functions expect.
 * @param pipeline  the pipeline.
 * @return the reading; 0 (and the last error set) for NULL.
 * Thread-safety: thread-safe.
 * @since 0.2
 */
MULLIGAN_API double mulligan_pipeline_now_ms(const mulligan_pipeline *pipeline);

/* ========================================================================== */
/* Calls: one logical call, stepped by its caller                             */
/* ========================================================================== */

/**
 * Per-call choices, given to mulligan_call_begin(). A caller-initialised
 * struct (like mulligan_retry_call_options) rather than a handle, so that
 * beginning a call costs no extra allocation. Initialise with
 * MULLIGAN_CALL_OPTIONS_INIT; the struct only grows at the end and
 * struct_size tells the library which version the caller compiled.
 * @since 0.2
 */
typedef struct mulligan_call_options {
  /** sizeof(mulligan_call_options) as compiled by the caller. */
  uint32_t struct_size;
  /** The call's key: which breaker of the pipeline's registry guards it, and
   *  its metrics name when the pipeline has no name (an HTTP origin,
   *  "https://api.example.com:443"). UTF-8, borrowed only during
   *  mulligan_call_begin(); NULL or "" for none (the default). */
  const char *key;
  /** 0 for a request that must not be repeated once sent (POST or PATCH
   *  without an idempotency key): only failures before any byte was sent
   *  (mulligan_outcome.request_sent) are then retried. Default 1. */
  int replay_safe;
  /** The attempt timeout when the retry options set none (an HTTP client's
   *  default timeout), trimmed to the deadline like the policy's own; see
   *  mulligan_admission.timeout_ms. Finite and > 0, or negative for none
   *  (the default, -1). */
  double attempt_timeout_ms;
  /** 1 when the caller holds a fallback for this call: a give-up on
   *  retryable failures, or a refusal, then says use_fallback (and counts a
   *  fallback in the metrics) instead of failing. A terminal outcome (a 404)
   *  is an answer, never replaced by a fallback. Default 0. */
  int fallback;
  /** Testing mode: when > 0, at most this many attempts whatever the policy
   *  says (a policy with fewer keeps its own); the cap stops with
   *  MULLIGAN_STOP_ATTEMPTS_EXHAUSTED. 0 (the default) keeps the policy's.
   *  Must be >= 0. */
  int max_attempts;
  /** Testing mode: 1 makes every retry wait 0 ms (the decisions are
   *  otherwise the policy's, deadline checks included). Default 0. */
  int no_wait;
} mulligan_call_options;

/** Initialiser for mulligan_call_options: every default. @since 0.2 */
#define MULLIGAN_CALL_OPTIONS_INIT \
  { (uint32_t)sizeof(mulligan_call_options), NULL, 1, -1.0, 0, 0, 0 }

/**
 * What the pipeline answers before an attempt. Values are pinned; append
 * only (they equal mulligan::AttemptAdmission::Action).
 * @since 0.2
 */
typedef enum mulligan_admission_action {
  /** Run the attempt now, bounded by timeout_ms. */
  MULLIGAN_ADMISSION_GO = 0,
  /** Wait delay_ms, then call mulligan_call_admit() again. Reserved for
   *  strategies that queue (a bulkhead, a rate limiter); none does yet. */
  MULLIGAN_ADMISSION_WAIT = 1,
  /** Do not run it: the call is over (reason says why; never retried). */
  MULLIGAN_ADMISSION_REFUSE = 2
} mulligan_admission_action;

/**
 * The pipeline's answer before an attempt, filled in by
 * mulligan_call_admit(). Initialise with MULLIGAN_ADMISSION_INIT (the
 * library checks struct_size); the struct only grows at the end.
 * @since 0.2
 */
typedef struct mulligan_admission {
  /** sizeof(mulligan_admission) as compiled by the caller. */
  uint32_t struct_size;
  /** A mulligan_admission_action. */
  int action;
  /** The attempt this admission is for (1 for the first). */
  int attempt;
  /** GO: the bound on this attempt in ms: the retry options' attempt
   *  timeout, else the call's attempt_timeout_ms, trimmed to the time left
   *  before the deadline; 0 when the deadline has just passed; -1 when
   *  none of them is set. */
  double timeout_ms;
  /** WAIT: how long to wait before asking again, ms; 0 otherwise. */
  double delay_ms;
  /** REFUSE: a mulligan_stop_reason (MULLIGAN_STOP_CIRCUIT_OPEN);
   *  MULLIGAN_STOP_NONE otherwise. */
  int reason;
  /** REFUSE by a breaker: ms from this admit's now_ms until the breaker
   *  admits a probe (MULLIGAN_DURATION_MAX_MS when forced open); 0
   *  otherwise. */
  double retry_in_ms;
  /** REFUSE: 1 when the call has a fallback, which answers it (counted once
   *  in the metrics' fallbacks); 0 otherwise. */
  int use_fallback;
} mulligan_admission;

/** Initialiser for mulligan_admission. Its action is REFUSE, so that a
 *  caller that ignores a failed mulligan_call_admit() runs nothing.
 *  @since 0.2 */
#define MULLIGAN_ADMISSION_INIT                                                      \
  { (uint32_t)sizeof(mulligan_admission), MULLIGAN_ADMISSION_REFUSE, 0, -1.0, 0.0, \
    MULLIGAN_STOP_NONE, 0.0, 0 }

/**
 * One logical call through a pipeline (mulligan::Call): the retry session,
 * the breaker permit of the attempt in flight, the metrics it reports to.
 *
 * Thread-safety: not thread-safe; stepped by one thread or coroutine at a
 * time. REQUIRES: the pipeline outlives the call.
 * @since 0.2
 */
typedef struct mulligan_call mulligan_call;

/**
 * Begins one logical call whose first attempt starts at `now_ms`: resolves
 * its breaker (by key, when the pipeline has a registry) and its metrics,
 * and counts the call as started.
 * @param out  OUT: the new call; NULL on failure. Free with
 *             mulligan_call_destroy().
 * @param pipeline  the pipeline (not NULL). Borrowed: it must outlive the
 *                  call.
 * @param now_ms  a reading of the pipeline's clock (mulligan_pipeline_now_ms()),
 *                finite.
 * @param opts  the call's options (struct_size set, MULLIGAN_CALL_OPTIONS_INIT);
 *              NULL for every default.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (a NULL pointer, now_ms
 *         not finite, opts->struct_size too small, attempt_timeout_ms 0 or
 *         NaN or infinite, max_attempts negative; the last error names the
 *         field); MULLIGAN_E_NO_MEMORY.
 * @since 0.2
 */
MULLIGAN_API int mulligan_call_begin(mulligan_call **out, const mulligan_pipeline *pipeline,
                                     double now_ms, const mulligan_call_options *opts);

/**
 * Asks every strategy, outermost first, whether the next attempt may run at
 * `now_ms`. A breaker's permit is taken here and held until the attempt's
 * mulligan_call_record(). Asking twice without a record in between returns
 * the first admission again (no second permit is taken).
 *
 * A refusal ends the call: the function returns MULLIGAN_E_CIRCUIT_OPEN
 * (the one refusal so far), `out` says REFUSE with its reason, retry_in_ms
 * and use_fallback, and mulligan_last_error() holds the breaker's text,
 * "circuit breaker 'db' is open; next probe in 12.500 s" (or "... is forced
 * open; no probe until it is reset"); the text is the way to get it (like
 * mulligan_breaker_acquire()), and asking again returns the same refusal
 * and text.
 *
 * @param call  the call.
 * @param now_ms  a reading of the pipeline's clock, finite and not before
 *                the call began.
 * @param out  OUT: the admission; struct_size set (MULLIGAN_ADMISSION_INIT).
 *             On every failure other than a refusal its fields are reset to
 *             MULLIGAN_ADMISSION_INIT's (action REFUSE, reason NONE).
 * @return MULLIGAN_OK (GO, or WAIT); MULLIGAN_E_CIRCUIT_OPEN (REFUSE, see
 *         above); MULLIGAN_E_INVALID_ARGUMENT (a NULL pointer, a bad
 *         struct_size or now_ms, or a call already finished by a stop
 *         decision or an abandon: "the call is finished").
 * @since 0.2
 */
MULLIGAN_API int mulligan_call_admit(mulligan_call *call, double now_ms, mulligan_admission *out);

/**
 * Records the outcome of the admitted attempt, which ended at `now_ms`, and
 * says what to do: retry after out->delay_ms, or stop (out->reason;
 * MULLIGAN_STOP_SUCCEEDED for a success). Applies, in the pipeline's order,
 * the retry policy, the testing switches, the breaker's recording rule, the
 * metrics and the fallback flag (mulligan_call_use_fallback()). After a stop
 * the call is finished.
 *
 * A record with no admit before it counts an attempt that ran unguarded: no
 * breaker was asked (for a caller that runs its first attempt before
 * entering the engine, when the pipeline has no breaker).
 *
 * mulligan_decision is reused as is: it is embedded by value at the end of
 * mulligan_retry_call_info, so it does not grow (a field added to it would
 * move anything ever appended to that struct); the fallback flag is read
 * with mulligan_call_use_fallback() instead.
 *
 * @param call  the call.
 * @param outcome  the outcome (MULLIGAN_OUTCOME_INIT, then the fields that
 *                 apply); validated as by mulligan_retry_session_on_outcome().
 * @param now_ms  a reading of the pipeline's clock, finite and not before
 *                the call began.
 * @param out  OUT: the decision; struct_size set (MULLIGAN_DECISION_INIT).
 *             On failure its fields are reset to MULLIGAN_DECISION_INIT's
 *             (action STOP, reason NONE).
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (a NULL pointer, a bad
 *         struct_size, now_ms or outcome field: the call is then unchanged
 *         and may record a valid outcome; or a finished call: "the call is
 *         finished").
 * @since 0.2
 */
MULLIGAN_API int mulligan_call_record(mulligan_call *call, const mulligan_outcome *outcome,
                                      double now_ms, mulligan_decision *out);

/**
 * Ends a call that stopped for a reason of the caller's (a cancelled task,
 * an interrupt, a callback's abort, a transfer torn down): frees what the
 * strategies hold (a half-open probe's slot is freed without judging the
 * dependency) and reports the call as failed (stop reason terminal) with
 * `attempts_in_flight` more attempts than were recorded. Does nothing once
 * the call is finished. A call its caller cancelled, whose end is not a
 * failure, is ended with mulligan_call_cancel() (0.6) instead.
 * @param call  the call.
 * @param now_ms  a reading of the pipeline's clock, finite and not before
 *                the call began.
 * @param attempts_in_flight  attempts running and never to be recorded: 1
 *                            when an admitted attempt was cut off, 0 between
 *                            attempts; >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL call, bad now_ms,
 *         negative attempts_in_flight).
 * @since 0.2
 */
MULLIGAN_API int mulligan_call_abandon(mulligan_call *call, double now_ms,
                                       int attempts_in_flight);

/**
 * Destroys a call. NULL is a no-op. A call destroyed before it finished is
 * abandoned at the time of its last step (with 1 attempt in flight when an
 * admitted attempt was never recorded), as by mulligan_call_abandon().
 * @param call  the call, or NULL.
 * @since 0.2
 */
MULLIGAN_API void mulligan_call_destroy(mulligan_call *call);

/**
 * Returns the number of attempts recorded so far.
 * @param call  the call.
 * @return the count; 0 (and the last error set) for NULL.
 * @since 0.2
 */
MULLIGAN_API int mulligan_call_attempts(const mulligan_call *call);

/**
 * Returns the total of the retry delays decided so far, ms.
 * @param call  the call.
 * @return the total; 0 (and the last error set) for NULL.
 * @since 0.2
 */
MULLIGAN_API double mulligan_call_total_delay_ms(const mulligan_call *call);

/**
 * Returns 1 once the call is finished (a stop decision, a refusal or an
 * abandon), else 0.
 * @param call  the call.
 * @return 1 or 0; 0 (and the last error set) for NULL.
 * @since 0.2
 */
MULLIGAN_API int mulligan_call_finished(const mulligan_call *call);

/**
 * Returns 1 when the call finished on a failure its fallback answers (it
 * was begun with fallback = 1 and gave up on retryable failures, or was
 * refused): the caller then returns its fallback's value instead of the
 * error. 0 otherwise, before the call finished included.
 * @param call  the call.
 * @return 1 or 0; 0 (and the last error set) for NULL.
 * @since 0.2
 */
MULLIGAN_API int mulligan_call_use_fallback(const mulligan_call *call);

/**
 * Ends a call its caller cancelled because its answer is no longer wanted
 * (a cancelled context or task, an AbortSignal, an interrupt). As
 * mulligan_call_abandon(), what the strategies hold is freed (a breaker
 * permit is released unjudged, which frees a half-open probe's slot; the
 * retry budget is not told), but the call is counted as cancelled
 * (mulligan_cancelled_total, the metrics' "cancelled"), neither a success
 * nor a failure, with `attempts_in_flight` more attempts than were
 * recorded; it leaves the in-flight gauge. Use mulligan_call_abandon() when
 * the end is a failure (a callback's abort, a transfer torn down). Does
 * nothing once the call is finished (an abandon or cancel after it
 * included). Rule: DESIGN.md, a caller's cancel is never counted as a
 * failure (as asyncio.CancelledError in Python).
 * Thread-safety: as the other step functions (one thread at a time per
 * call).
 * @param call  the call.
 * @param now_ms  a reading of the pipeline's clock (ms), finite and not
 *                before the call began.
 * @param attempts_in_flight  attempts running and never to be recorded: 1
 *                            when an admitted attempt was cut off, 0 between
 *                            attempts; >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL call, bad now_ms,
 *         negative attempts_in_flight; the call is then unchanged).
 * @since 0.6
 */
MULLIGAN_API int mulligan_call_cancel(mulligan_call *call, double now_ms,
                                      int attempts_in_flight);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_PIPELINE_H_ */
