/* mulligan_hedging.h — hedged calls through the mulligan C ABI: extra copies
 * of an idempotent call started after a delay, the first acceptable result
 * wins and the other copies are cancelled (DESIGN.md section 5, "Hedging";
 * the C++ core is mulligan::HedgingPolicy and mulligan::HedgedCall,
 * core/include/mulligan/hedging/hedging.h). (Added in 0.6.)
 *
 * The rules are gRPC A6's hedgingPolicy (grpc/proposal A6-client-retries.md,
 * "Hedging Policy"), with the quantile delay of "The Tail at Scale" (Dean and
 * Barroso, CACM 2013):
 *   - at most max_attempts copies, the first included (2..5; above 5 is 5);
 *   - copy k+1 may start hedging_delay_ms after copy k started (0: every copy
 *     at once), or, with delay_quantile, after the p-th quantile of the
 *     latencies of this policy's recent winning copies;
 *   - a copy that fails retryably (as the pipeline's retry options classify
 *     it) lets the next copy start at once (after a Retry-After /
 *     grpc-retry-pushback-ms hint has passed); a terminal outcome ends the
 *     call and cancels the rest;
 *   - the first success wins; the other running copies are cancelled: the
 *     caller must stop them, and they are counted neither as successes nor as
 *     failures (their breaker permits are released unjudged);
 *   - every copy asks the pipeline's circuit breaker, every copy after the
 *     first its retry budget (mulligan_pipeline_options_set_budget): an open
 *     breaker or an empty budget stops new copies (the running ones go on);
 *   - a call that is not replay-safe (mulligan_call_options.replay_safe 0)
 *     runs one copy only.
 *
 * The engine decides, the caller acts: a mulligan_hedged_call never reads a
 * clock, sleeps or runs a copy. A caller (an event loop, goroutines, tasks)
 * loops:
 *
 *   mulligan_hedged_call *call = NULL;
 *   mulligan_hedged_call_begin(&call, policy, pipeline, now_ms(), NULL,
 *                              MULLIGAN_HEDGE_ACCOUNTING_FULL);
 *   while (!mulligan_hedged_call_finished(call)) {
 *     mulligan_hedge_admission a = MULLIGAN_HEDGE_ADMISSION_INIT;
 *     mulligan_hedged_call_admit(call, now_ms(), &a);
 *     if (a.action == MULLIGAN_HEDGE_START) {
 *       start_copy(a.copy, a.timeout_ms);
 *       continue;
 *     }
 *     (wait for a running copy to end, or until a.next_start_ms for WAIT)
 *     if (a copy ended) {
 *       mulligan_hedge_decision d = MULLIGAN_HEDGE_DECISION_INIT;
 *       mulligan_hedged_call_record(call, copy, &outcome, now_ms(), &d);
 *       for (i = 0; i < d.cancel_count; ++i) cancel_copy(d.cancel[i]);
 *     }
 *   }
 *   mulligan_hedged_call_destroy(call);
 *
 * A caller whose own caller gave up (a cancelled context or task) ends the
 * call with mulligan_hedged_call_cancel() (counted cancelled, never failed);
 * one that stops on a failure of its own with mulligan_hedged_call_abandon()
 * (counted failed).
 *
 * Time: every `now_ms` is a reading of the pipeline's clock in milliseconds
 * (mulligan_pipeline_now_ms()); within one call times must not go backwards.
 *
 * Thread-safety: a policy is immutable apart from its latency window, which
 * is thread-safe: share it between any threads. A hedged call is not
 * thread-safe: copies may run on many threads, but the caller steps the call
 * (admit, record, cancel) from one thread at a time.
 *
 * Lifetime: the policy and the pipeline must outlive every call begun with
 * them.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_HEDGING_H_
#define MULLIGAN_HEDGING_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_pipeline.h"
#include "mulligan_retry.h"
#include "mulligan_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** The cap on copies per call (gRPC A6 treats maxAttempts above 5 as 5), and
 *  the capacity of mulligan_hedge_decision.cancel. @since 0.6 */
#define MULLIGAN_MAX_HEDGED_ATTEMPTS 5

/**
 * A hedging policy's options. Initialise with MULLIGAN_HEDGING_OPTIONS_INIT
 * (every default), then set what you need; validated by
 * mulligan_hedging_policy_create() (errors name the field). The struct only
 * grows at the end; struct_size tells the library which version the caller
 * compiled.
 * @since 0.6
 */
typedef struct mulligan_hedging_options {
  /** sizeof(mulligan_hedging_options) as compiled by the caller. */
  uint32_t struct_size;
  /** Copies per call, the first included: >= 2 (A6: "must be greater than
   *  1"); values above 5 are treated as 5. Default 2. */
  int max_attempts;
  /** The wait from one copy's start before the next copy may start (A6
   *  hedgingDelay), ms: finite and >= 0; 0 starts every copy at once; a
   *  delay past the clock's range (about 9.2e12 ms) saturates: no copy
   *  waits that long, so none after the first starts. Also
   *  the delay while delay_quantile has too few samples. Default 0. */
  double hedging_delay_ms;
  /** 0 (the default): the fixed hedging_delay_ms. Else in (0, 1] (e.g.
   *  0.95): the delay is the nearest-rank quantile of the latencies of the
   *  last quantile_window winning copies of this policy, once
   *  quantile_min_samples are known. */
  double delay_quantile;
  /** How many recent latencies the quantile is taken over: in [1, 100000].
   *  Default 100. */
  int quantile_window;
  /** How many latencies must be known before the quantile replaces
   *  hedging_delay_ms: in [1, quantile_window]. Default 20. */
  int quantile_min_samples;
} mulligan_hedging_options;

/** Initialiser for mulligan_hedging_options: every default. @since 0.6 */
#define MULLIGAN_HEDGING_OPTIONS_INIT \
  { (uint32_t)sizeof(mulligan_hedging_options), 2, 0.0, 0.0, 100, 20 }

/**
 * A validated hedging policy (mulligan::HedgingPolicy): its options and the
 * latency window its calls share.
 * Thread-safety: thread-safe (see the file comment).
 * @since 0.6
 */
typedef struct mulligan_hedging_policy mulligan_hedging_policy;

/**
 * Validates options and creates a hedging policy.
 * @param out  OUT: the new policy; NULL on failure. Free with
 *             mulligan_hedging_policy_destroy().
 * @param opts  the options, copied (struct_size set); NULL for every default.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (out NULL, a bad
 *         struct_size, or a bad field: the last error names it, e.g.
 *         "hedging: max_attempts must be >= 2 (gRPC A6), got 1");
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedging_policy_create(mulligan_hedging_policy **out,
                                                const mulligan_hedging_options *opts);

/**
 * Destroys a policy. NULL is a no-op.
 * REQUIRES: every call begun with it has been destroyed.
 * @param policy  the policy, or NULL.
 * @since 0.6
 */
MULLIGAN_API void mulligan_hedging_policy_destroy(mulligan_hedging_policy *policy);

/**
 * Returns the delay, ms, a copy started now would wait before the next copy
 * may start: the quantile of recent winners' latencies, or hedging_delay_ms.
 * @param policy  the policy.
 * @return the delay; 0 (and the last error set) for NULL.
 * Thread-safety: thread-safe.
 * @since 0.6
 */
MULLIGAN_API double mulligan_hedging_policy_current_delay_ms(
    const mulligan_hedging_policy *policy);

/**
 * Who records the copies' outcomes in the budget, the breaker and the
 * metrics. Values pinned (mulligan::HedgeAccounting).
 * @since 0.6
 */
typedef enum mulligan_hedge_accounting {
  /** The hedged call does (the default): the breaker is asked before and told
   *  after every copy, the budget asked before every extra copy and told
   *  after every copy, and the metrics count one call, its attempts (the
   *  copies) and its hedges. */
  MULLIGAN_HEDGE_ACCOUNTING_FULL = 0,
  /** Every copy is a call of its own through a pipeline that records its
   *  outcome (mulligan_call_begin per copy): the hedged call only asks the
   *  budget before each extra copy (and the breaker, releasing its permit
   *  unjudged) and counts only the hedge metrics. */
  MULLIGAN_HEDGE_ACCOUNTING_GATE_ONLY = 1
} mulligan_hedge_accounting;

/**
 * What the hedged call answers before a copy. Values pinned
 * (mulligan::HedgeAdmission::Action).
 * @since 0.6
 */
typedef enum mulligan_hedge_action {
  /** Start copy `copy` now, bounded by timeout_ms. */
  MULLIGAN_HEDGE_START = 0,
  /** No copy may start before next_start_ms: wait for a running copy to end
   *  or until then, then admit again. */
  MULLIGAN_HEDGE_WAIT = 1,
  /** No further copy will start (max_attempts started, the budget or the
   *  breaker refused, the deadline passed, or the call is finished): wait
   *  for the running copies. `reason` says why (NONE: max_attempts). */
  MULLIGAN_HEDGE_NO_MORE = 2
} mulligan_hedge_action;

/**
 * The answer before a copy, filled in by mulligan_hedged_call_admit().
 * Initialise with MULLIGAN_HEDGE_ADMISSION_INIT; the struct only grows at the
 * end.
 * @since 0.6
 */
typedef struct mulligan_hedge_admission {
  /** sizeof(mulligan_hedge_admission) as compiled by the caller. */
  uint32_t struct_size;
  /** A mulligan_hedge_action. */
  int action;
  /** START: the copy's number (1 for the first); 0 otherwise. */
  int copy;
  /** START: the copy's bound in ms: the retry options' attempt timeout, else
   *  the call's attempt_timeout_ms, trimmed to the time left before the
   *  deadline; -1 when none is set. */
  double timeout_ms;
  /** WAIT: when the next copy may start, on the pipeline's clock (ms). */
  double next_start_ms;
  /** NO_MORE: a mulligan_stop_reason: NONE (max_attempts reached),
   *  CIRCUIT_OPEN, BUDGET, DEADLINE, RETRY_AFTER_TOO_LONG; or the call's stop
   *  reason once it is finished. */
  int reason;
  /** NO_MORE because the breaker refused: ms until it admits a probe
   *  (MULLIGAN_DURATION_MAX_MS when forced open); 0 otherwise. */
  double retry_in_ms;
} mulligan_hedge_admission;

/** Initialiser for mulligan_hedge_admission: NO_MORE, so that a caller that
 *  ignores a failed admit starts nothing. @since 0.6 */
#define MULLIGAN_HEDGE_ADMISSION_INIT                                             \
  { (uint32_t)sizeof(mulligan_hedge_admission), MULLIGAN_HEDGE_NO_MORE, 0, -1.0, \
    0.0, MULLIGAN_STOP_NONE, 0.0 }

/**
 * The answer to one copy's outcome, filled in by
 * mulligan_hedged_call_record(). Initialise with MULLIGAN_HEDGE_DECISION_INIT.
 * @since 0.6
 */
typedef struct mulligan_hedge_decision {
  /** sizeof(mulligan_hedge_decision) as compiled by the caller. */
  uint32_t struct_size;
  /** 1 once the call is over (a copy won, or it failed); 0 while it goes on. */
  int finished;
  /** The copy that won (a success), or 0. */
  int winner;
  /** finished: a mulligan_stop_reason: SUCCEEDED, TERMINAL (a fatal
   *  outcome), ATTEMPTS_EXHAUSTED (every copy failed), or why new copies
   *  stopped (CIRCUIT_OPEN, BUDGET, DEADLINE, RETRY_AFTER_TOO_LONG) when the
   *  last running copy failed after that; NONE while the call goes on. */
  int reason;
  /** The policy's verdict on the recorded outcome (mulligan_classification). */
  int classification;
  /** How many copies the caller must cancel now (cancel[0..cancel_count)). */
  int cancel_count;
  /** The copies to cancel now: the running copies other than the winner, or
   *  all running copies after a fatal outcome. They are already released:
   *  recording them later does nothing. */
  int cancel[MULLIGAN_MAX_HEDGED_ATTEMPTS];
} mulligan_hedge_decision;

/** Initialiser for mulligan_hedge_decision. @since 0.6 */
#define MULLIGAN_HEDGE_DECISION_INIT                                              \
  { (uint32_t)sizeof(mulligan_hedge_decision), 0, 0, MULLIGAN_STOP_NONE,         \
    MULLIGAN_CLASSIFICATION_SUCCESS, 0, { 0, 0, 0, 0, 0 } }

/**
 * One hedged logical call (mulligan::HedgedCall).
 * Thread-safety: not thread-safe (see the file comment). REQUIRES: its
 * policy and pipeline outlive it.
 * @since 0.6
 */
typedef struct mulligan_hedged_call mulligan_hedged_call;

/**
 * Begins one hedged call at `now_ms` through `pipeline` (its retry options
 * for classification, deadline and attempt timeout, its breaker, its budget
 * and its metrics). Counts the call as started (FULL accounting).
 * @param out  OUT: the new call; NULL on failure. Free with
 *             mulligan_hedged_call_destroy().
 * @param policy  the hedging policy (not NULL), borrowed: it must outlive the
 *                call.
 * @param pipeline  the pipeline (not NULL), borrowed likewise.
 * @param now_ms  a reading of the pipeline's clock, finite.
 * @param opts  the call's options (MULLIGAN_CALL_OPTIONS_INIT): key (the
 *              breaker of a registry, the metrics name), replay_safe (0: one
 *              copy only), attempt_timeout_ms, max_attempts (> 0 caps the
 *              copies); fallback and no_wait do not apply. NULL: defaults.
 * @param accounting  a mulligan_hedge_accounting.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (a NULL pointer, now_ms not
 *         finite, a bad option as for mulligan_call_begin(), an unknown
 *         accounting; the last error names it); MULLIGAN_E_NO_MEMORY.
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedged_call_begin(mulligan_hedged_call **out,
                                            const mulligan_hedging_policy *policy,
                                            const mulligan_pipeline *pipeline, double now_ms,
                                            const mulligan_call_options *opts,
                                            int accounting);

/**
 * Whether a copy may start at `now_ms`. A START takes the copy's breaker
 * permit, and for copies after the first a retry from the budget, and counts
 * a hedge; the copy is then running until recorded or cancelled. The first
 * copy refused by the breaker ends the call: the function then returns
 * MULLIGAN_E_CIRCUIT_OPEN with the breaker's text in mulligan_last_error()
 * ("circuit breaker 'db' is open; next probe in 12.500 s"), `out` says
 * NO_MORE with reason CIRCUIT_OPEN. A later copy refused (breaker, budget,
 * deadline) is not an error: NO_MORE with its reason.
 * @param call  the call.
 * @param now_ms  a reading of the pipeline's clock, finite, not before the
 *                call began.
 * @param out  OUT: the admission (MULLIGAN_HEDGE_ADMISSION_INIT). On failure
 *             its fields are reset to the INIT values (NO_MORE).
 * @return MULLIGAN_OK; MULLIGAN_E_CIRCUIT_OPEN (see above);
 *         MULLIGAN_E_INVALID_ARGUMENT (a NULL pointer, a bad struct_size or
 *         now_ms).
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedged_call_admit(mulligan_hedged_call *call, double now_ms,
                                            mulligan_hedge_admission *out);

/**
 * Records the outcome of running copy `copy`, which ended at `now_ms`, and
 * says what to do: out->cancel lists the copies to stop now. A copy that is
 * not running (cancelled, already recorded) changes nothing: `out` then has
 * finished set as the call is and no copy to cancel.
 * @param call  the call.
 * @param copy  the copy's number, in [1, MULLIGAN_MAX_HEDGED_ATTEMPTS].
 * @param outcome  the outcome (MULLIGAN_OUTCOME_INIT, then the fields that
 *                 apply); validated as by mulligan_call_record().
 * @param now_ms  a reading of the pipeline's clock, finite, not before the
 *                call began.
 * @param out  OUT: the decision (MULLIGAN_HEDGE_DECISION_INIT). On failure its
 *             fields are reset to the INIT values.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (a NULL pointer, a bad
 *         struct_size, copy out of range, a bad now_ms or outcome field: the
 *         call is then unchanged).
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedged_call_record(mulligan_hedged_call *call, int copy,
                                             const mulligan_outcome *outcome, double now_ms,
                                             mulligan_hedge_decision *out);

/**
 * Ends a call that stopped on a failure of its caller's (a callback's abort,
 * a panic): every running copy is released as cancelled (unjudged), and the
 * call is counted failed (stop reason TERMINAL). The caller stops its
 * running copies itself. Does nothing once the call is finished. A call whose
 * caller cancelled it is ended with mulligan_hedged_call_cancel() instead.
 * @param call  the call.
 * @param now_ms  a reading of the pipeline's clock, finite, not before the
 *                call began.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL call, bad now_ms).
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedged_call_abandon(mulligan_hedged_call *call, double now_ms);

/**
 * Ends a call its caller cancelled because its answer is no longer wanted (a
 * cancelled context or task, an AbortSignal): every running copy is released
 * as cancelled (breaker permit freed unjudged; the budget is not told;
 * counted in hedge_cancelled), and the call is counted cancelled
 * (mulligan_cancelled_total), neither a success nor a failure, with one
 * attempt per copy started, as mulligan_call_cancel() does for a plain call
 * (DESIGN.md: a caller's cancel is never a failure). The caller stops its
 * running copies itself. Does nothing once the call is finished.
 * @param call  the call.
 * @param now_ms  a reading of the pipeline's clock, finite, not before the
 *                call began.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL call, bad now_ms).
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedged_call_cancel(mulligan_hedged_call *call, double now_ms);

/**
 * Destroys a call. NULL is a no-op. A call destroyed before it finished is
 * abandoned at the time of its last step, as by mulligan_hedged_call_abandon().
 * @param call  the call, or NULL.
 * @since 0.6
 */
MULLIGAN_API void mulligan_hedged_call_destroy(mulligan_hedged_call *call);

/**
 * Returns the number of copies started so far.
 * @param call  the call.
 * @return the count; 0 (and the last error set) for NULL.
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedged_call_started(const mulligan_hedged_call *call);

/**
 * Returns the number of copies running (started, neither recorded nor
 * cancelled).
 * @param call  the call.
 * @return the count; 0 (and the last error set) for NULL.
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedged_call_running(const mulligan_hedged_call *call);

/**
 * Returns the number of copies cancelled so far (losers, copies running at a
 * fatal outcome, an abandon or a cancel).
 * @param call  the call.
 * @return the count; 0 (and the last error set) for NULL.
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedged_call_cancelled(const mulligan_hedged_call *call);

/**
 * Returns the winning copy, or 0 before a win (and after a failure or a
 * cancel).
 * @param call  the call.
 * @return the copy; 0 (and the last error set) for NULL.
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedged_call_winner(const mulligan_hedged_call *call);

/**
 * Returns 1 once the call is finished (won, failed, refused, abandoned or
 * cancelled), else 0.
 * @param call  the call.
 * @return 1 or 0; 0 (and the last error set) for NULL.
 * @since 0.6
 */
MULLIGAN_API int mulligan_hedged_call_finished(const mulligan_hedged_call *call);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_HEDGING_H_ */
