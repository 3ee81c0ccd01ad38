/* mulligan_breaker.h — circuit breakers of the mulligan C ABI: options, a
 * breaker (acquire a permit, record the result), manual states, transition
 * listeners, and a registry of breakers by key.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. A program may include just this header (it includes
 * mulligan_status.h). Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_BREAKER_H_
#define MULLIGAN_BREAKER_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Circuit breakers                                                           */
/* ========================================================================== */

/*
 * A per-dependency circuit breaker (DESIGN.md section 4): closed -> open after
 * failure_threshold consecutive failures (or a failure/slow-call rate over a
 * sliding window); open -> half-open after reset_timeout; half-open admits at
 * most half_open_max_calls probes, which close or reopen it. Like the retry
 * engine it never sleeps and starts no thread: state is derived from the
 * clock at each call. The primitive is acquire/record:
 *
 *   mulligan_breaker_permit permit = MULLIGAN_BREAKER_PERMIT_INIT;
 *   if (mulligan_breaker_acquire(b, &permit) == MULLIGAN_E_CIRCUIT_OPEN)
 *     return fail_fast(permit.retry_in_ms);
 *   rc = call_dependency();                              (no lock is held)
 *   mulligan_breaker_record(b, &permit, rc == 0 ? MULLIGAN_CALL_SUCCESS
 *                                               : MULLIGAN_CALL_FAILURE, -1);
 */

/**
 * The state of a breaker. Values are pinned; append only.
 * @since 0.1
 */
typedef enum mulligan_breaker_state {
  /** Calls are admitted and counted; trips on the configured conditions. */
  MULLIGAN_BREAKER_CLOSED = 0,
  /** Calls are refused until the reset timeout has elapsed. */
  MULLIGAN_BREAKER_OPEN = 1,
  /** At most half_open_max_calls probes are admitted at a time. */
  MULLIGAN_BREAKER_HALF_OPEN = 2,
  /** Manual: every call is refused until reset. */
  MULLIGAN_BREAKER_FORCED_OPEN = 3,
  /** Manual: every call is admitted and counted; never trips. */
  MULLIGAN_BREAKER_DISABLED = 4,
  /** Manual: admits everything; listeners hear of the trips it would make. */
  MULLIGAN_BREAKER_METRICS_ONLY = 5
} mulligan_breaker_state;

/**
 * The kind of sliding window used for rate-based tripping.
 * @since 0.1
 */
typedef enum mulligan_breaker_window {
  /** No window: only consecutive failures trip the breaker (the default). */
  MULLIGAN_WINDOW_NONE = 0,
  /** The last window_size recorded calls. */
  MULLIGAN_WINDOW_COUNT = 1,
  /** The calls of the last window_duration, in window_buckets buckets. */
  MULLIGAN_WINDOW_TIME = 2
} mulligan_breaker_window;

/**
 * The result of one call, as far as a breaker is concerned.
 * @since 0.1
 */
typedef enum mulligan_call_result {
  /** The call succeeded. */
  MULLIGAN_CALL_SUCCESS = 0,
  /** The dependency looks unhealthy: a retryable error, a timeout, a 5xx. */
  MULLIGAN_CALL_FAILURE = 1,
  /** Says nothing about its health (a 404, a cancellation); frees a probe slot. */
  MULLIGAN_CALL_IGNORED = 2
} mulligan_call_result;

/**
 * Returns "closed", "open", "half_open", "forced_open", "disabled" or
 * "metrics_only".
 * @param state  any int; unknown values give "unknown".
 * @return never NULL; static storage.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_breaker_state_str(int state);

/**
 * A mutable bag of breaker settings, validated by mulligan_breaker_create()
 * and mulligan_breaker_registry_create(). Defaults: name "", failure_threshold
 * 5, no window (window_size 100, window_duration 60000 ms, window_buckets 10,
 * failure_rate_threshold 50 %, minimum_calls 10), no slow-call detection
 * (slow_call_rate_threshold 100 %), reset_timeout 30000 ms, no growth
 * (multiplier 1, max_reset_timeout 300000 ms), half_open_max_calls 1,
 * permit_timeout 60000 ms, the system steady clock.
 *
 * Each setter checks its single value (NaN, infinite and negative durations
 * and out-of-range counts give MULLIGAN_E_INVALID_ARGUMENT and leave the
 * options unchanged); consistency between fields is checked at create.
 *
 * Thread-safety: not thread-safe. The options may be destroyed once the
 * breaker or registry is created.
 * @since 0.1
 */
typedef struct mulligan_breaker_options mulligan_breaker_options;

/**
 * Creates breaker options holding every default.
 * @param out  OUT: the options; NULL on failure. Free with
 *             mulligan_breaker_options_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_create(mulligan_breaker_options **out);

/**
 * Destroys options. NULL is a no-op.
 * @param opts  the options, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_breaker_options_destroy(mulligan_breaker_options *opts);

/**
 * Sets the breaker's name (used in errors, listener events and metrics).
 * @param opts  the options.
 * @param name  UTF-8, copied; not NULL. A name holding a control character
 *              (bytes 0x01-0x1f, 0x7f) is refused when the breaker is made
 *              (mulligan_breaker_create: MULLIGAN_E_INVALID_ARGUMENT), the
 *              rule of CircuitBreakerOptions::name.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_name(mulligan_breaker_options *opts,
                                                   const char *name);

/**
 * Sets the consecutive failures that trip a closed breaker (default 5).
 * @param opts  the options.
 * @param threshold  in [0, 1000000]; 0 disables the condition (a window is
 *                   then required).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_failure_threshold(mulligan_breaker_options *opts,
                                                                int threshold);

/**
 * Chooses the sliding window (default MULLIGAN_WINDOW_NONE).
 * @param opts  the options.
 * @param window  a mulligan_breaker_window value.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_window(mulligan_breaker_options *opts, int window);

/**
 * Sets the number of calls a count window keeps (default 100).
 * @param opts  the options.
 * @param size  in [1, 1000000].
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_window_size(mulligan_breaker_options *opts,
                                                          int size);

/**
 * Sets the span of a time window (default 60000 ms).
 * @param opts  the options.
 * @param duration_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_window_duration_ms(mulligan_breaker_options *opts,
                                                                 double duration_ms);

/**
 * Sets the number of buckets of a time window (default 10).
 * @param opts  the options.
 * @param buckets  in [1, 3600].
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_window_buckets(mulligan_breaker_options *opts,
                                                             int buckets);

/**
 * Sets the window failure rate, in percent, that trips (default 50).
 * @param opts  the options.
 * @param percent  in (0, 100].
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_failure_rate_threshold(
    mulligan_breaker_options *opts, double percent);

/**
 * Sets the calls that must be in the window before a rate is evaluated
 * (default 10).
 * @param opts  the options.
 * @param calls  >= 1 (and <= window_size for a count window, checked at create).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_minimum_calls(mulligan_breaker_options *opts,
                                                            int calls);

/**
 * Makes calls lasting at least `duration_ms` slow (default: no slow calls).
 * Requires a window.
 * @param opts  the options.
 * @param duration_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_slow_call_duration_ms(
    mulligan_breaker_options *opts, double duration_ms);

/**
 * Sets the window slow-call rate, in percent, that trips (default 100).
 * @param opts  the options.
 * @param percent  in (0, 100].
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_slow_call_rate_threshold(
    mulligan_breaker_options *opts, double percent);

/**
 * Sets how long the breaker stays open after a trip (default 30000 ms).
 * @param opts  the options.
 * @param timeout_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_reset_timeout_ms(mulligan_breaker_options *opts,
                                                               double timeout_ms);

/**
 * Sets the growth of the open period on consecutive trips (default 1: none).
 * @param opts  the options.
 * @param multiplier  finite, >= 1.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_reset_timeout_multiplier(
    mulligan_breaker_options *opts, double multiplier);

/**
 * Sets the cap of the grown open period (default 300000 ms; must be >=
 * reset_timeout, checked at create).
 * @param opts  the options.
 * @param timeout_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_max_reset_timeout_ms(
    mulligan_breaker_options *opts, double timeout_ms);

/**
 * Sets the probes admitted at once when half-open, which is also the number
 * of probe successes that close the breaker (default 1).
 * @param opts  the options.
 * @param calls  in [1, 65535].
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_half_open_max_calls(mulligan_breaker_options *opts,
                                                                  int calls);

/**
 * Sets how long an unrecorded probe permit holds its slot (default 60000 ms).
 * @param opts  the options.
 * @param timeout_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_permit_timeout_ms(mulligan_breaker_options *opts,
                                                                double timeout_ms);

/**
 * Bounds the half-open state: a breaker that has not closed `duration_ms`
 * after it became half-open reopens (reason "half_open_timeout"), its open
 * period starting at that instant (resilience4j's
 * maxWaitDurationInHalfOpenState). Default: no limit.
 * @param opts  the options.
 * @param duration_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.2
 */
MULLIGAN_API int mulligan_breaker_options_set_max_half_open_duration_ms(
    mulligan_breaker_options *opts, double duration_ms);

/**
 * Sets the clock breakers read `now` from (default NULL: the system steady
 * clock). A fake clock makes every state change reproducible in tests.
 * @param opts  the options.
 * @param clock  borrowed: it must outlive every breaker created from opts.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL opts).
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_options_set_clock(mulligan_breaker_options *opts,
                                                    const mulligan_clock *clock);

/**
 * A circuit breaker.
 *
 * Thread-safety: every function taking a breaker may be called from many
 * threads at once; no lock is held between acquire and record.
 * @since 0.1
 */
typedef struct mulligan_breaker mulligan_breaker;

/**
 * A permission to make one call, filled in by mulligan_breaker_acquire() and
 * handed back to mulligan_breaker_record().
 *
 * A public struct rather than an opaque handle (STYLE.md 3.1) on purpose: it
 * is acquired on every guarded call, and a handle would cost a heap
 * allocation per call where this costs nothing (it lives on the caller's
 * stack, like mulligan_outcome). It starts with struct_size and only grows
 * at the end (STYLE.md 3.6). The `opaque_` words are the library's: copy the
 * struct freely, never change them.
 * @since 0.1
 */
typedef struct mulligan_breaker_permit {
  /** sizeof(mulligan_breaker_permit) as compiled by the caller. */
  uint32_t struct_size;
  /** OUT: 1 when the call may proceed, 0 when the breaker refused. */
  int admitted;
  /** OUT: the mulligan_breaker_state the breaker answered in. */
  int state;
  /** OUT: when refused, ms until a call may be admitted again (from the
   *  acquire; MULLIGAN_DURATION_MAX_MS when forced open); 0 when admitted. */
  double retry_in_ms;
  /** OUT: 1 for a half-open probe permit. */
  int probe;
  /** Private to the library. */
  uint64_t opaque_[4];
} mulligan_breaker_permit;

/** Initialiser for mulligan_breaker_permit. @since 0.1 */
#define MULLIGAN_BREAKER_PERMIT_INIT \
  { (uint32_t)sizeof(mulligan_breaker_permit), 0, 0, 0.0, 0, { 0, 0, 0, 0 } }

/**
 * Counters of a breaker, for metrics (mulligan_breaker_get_counts()).
 * Cumulative counters cover results recorded since creation or the last
 * reset. A result recorded with a stale permit (issued before a state
 * change, or a probe recorded after its permit timeout) changes no state and
 * is counted in `stale` only.
 * @since 0.1 (`stale` since 0.2: a caller compiled against 0.1 passes the
 *        smaller struct_size and gets every field but it)
 */
typedef struct mulligan_breaker_counts {
  /** sizeof(mulligan_breaker_counts) as compiled by the caller. */
  uint32_t struct_size;
  /** successes + failures + ignored. */
  uint64_t calls;
  uint64_t successes;
  uint64_t failures;
  uint64_t ignored;
  /** Recorded calls that lasted at least slow_call_duration. */
  uint64_t slow;
  /** Refused acquires. */
  uint64_t rejected;
  /** The current run of consecutive failures (closed / metrics-only). */
  int consecutive_failures;
  /** Calls in the sliding window (0 without one). */
  uint64_t window_calls;
  /** Window failure and slow-call rates in percent. */
  double window_failure_rate;
  double window_slow_rate;
  /** Results recorded with a stale permit; not in `calls`. @since 0.2 */
  uint64_t stale;
} mulligan_breaker_counts;

/** Initialiser for mulligan_breaker_counts. @since 0.1 */
#define MULLIGAN_BREAKER_COUNTS_INIT \
  { (uint32_t)sizeof(mulligan_breaker_counts), 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0, 0 }

/**
 * The figures of a breaker's last opening (mulligan_breaker_get_last_trip()):
 * the consecutive-failure run and the sliding window as they were just
 * before the transition cleared them, so an operator can see why it opened.
 * @since 0.2
 */
typedef struct mulligan_breaker_trip {
  /** sizeof(mulligan_breaker_trip) as compiled by the caller. */
  uint32_t struct_size;
  /** OUT: 1 when the breaker opened since creation or the last reset (the
   *  fields below are then set), 0 otherwise (they are zeroed). */
  int tripped;
  /** OUT: the mulligan_breaker_state it opened from (CLOSED for a trip,
   *  HALF_OPEN for a failed probe, METRICS_ONLY for a would-be trip). */
  int from;
  /** OUT: static text, as mulligan_breaker_transition.reason; "" when not
   *  tripped. */
  const char *reason;
  /** OUT: the breaker clock's reading (ms) of the call that opened it. */
  double at_ms;
  /** OUT: the run of consecutive failures at the trip. */
  int consecutive_failures;
  /** OUT: calls in the window, and its failure and slow-call rates in
   *  percent (0 without a window). */
  uint64_t window_calls;
  double window_failure_rate;
  double window_slow_rate;
} mulligan_breaker_trip;

/** Initialiser for mulligan_breaker_trip. @since 0.2 */
#define MULLIGAN_BREAKER_TRIP_INIT \
  { (uint32_t)sizeof(mulligan_breaker_trip), 0, 0, "", 0.0, 0, 0, 0.0, 0.0 }

/**
 * What one call did, for call listeners (resilience4j's onSuccess, onError,
 * onIgnoredError and onCallNotPermitted events). Values are pinned.
 * @since 0.2
 */
typedef enum mulligan_breaker_call_kind {
  /** A result recorded as MULLIGAN_CALL_SUCCESS. */
  MULLIGAN_BREAKER_CALL_SUCCESS = 0,
  /** A result recorded as MULLIGAN_CALL_FAILURE. */
  MULLIGAN_BREAKER_CALL_FAILURE = 1,
  /** A result recorded as MULLIGAN_CALL_IGNORED. */
  MULLIGAN_BREAKER_CALL_IGNORED = 2,
  /** A refused acquire. */
  MULLIGAN_BREAKER_CALL_REJECTED = 3
} mulligan_breaker_call_kind;

/**
 * One call's event, passed to call listeners. Valid only during the callback.
 * @since 0.2
 */
typedef struct mulligan_breaker_call_event {
  /** sizeof(mulligan_breaker_call_event) as compiled by the library. */
  uint32_t struct_size;
  /** The breaker's name (NUL-terminated; borrowed for the callback). */
  const char *name;
  /** A mulligan_breaker_call_kind. */
  int kind;
  /** The mulligan_breaker_state the breaker answered in (acquire) or was in
   *  when the result arrived (record, before any change it caused). */
  int state;
  /** Results: the call's duration in ms as recorded; 0 for a refusal. */
  double duration_ms;
  /** Results: 1 when the permit was stale (the result changed nothing). */
  int stale;
  /** The breaker clock's reading (ms) of the acquire or record. */
  double at_ms;
} mulligan_breaker_call_event;

/**
 * Receives call events, on the thread of the acquire or record, after the
 * breaker's lock is released and after the transition listeners of the same
 * call. Return 0; other values are reserved and ignored. Must not longjmp or
 * throw. With several threads, events may arrive out of order.
 * @since 0.2
 */
typedef int (*mulligan_breaker_call_listener)(const mulligan_breaker_call_event *event,
                                              void *user_data);

/**
 * A state change, passed to listeners. Valid only during the callback.
 * @since 0.1
 */
typedef struct mulligan_breaker_transition {
  /** sizeof(mulligan_breaker_transition) as compiled by the library. */
  uint32_t struct_size;
  /** The breaker's name (NUL-terminated; borrowed for the callback). */
  const char *name;
  /** The mulligan_breaker_state before and after. */
  int from;
  int to;
  /** Static text: "failure_threshold", "failure_rate", "slow_call_rate",
   *  "reset_timeout_elapsed", "probe_succeeded", "probe_failed",
   *  "forced_open", "disabled", "metrics_only", "reset", and since 0.2
   *  "half_open_timeout", "forced_open_until", "half_open", or
   *  "metrics_only:<condition>". */
  const char *reason;
  /** The breaker clock's reading (as mulligan_clock_now_ms()) of the call
   *  that made the transition. */
  double at_ms;
} mulligan_breaker_transition;

/**
 * Receives transitions. Called on the thread whose acquire/record/manual
 * call made the transition, after the breaker's lock is released; it may call
 * back into the breaker. Return 0; other values are reserved (a transition
 * cannot be aborted, so they are ignored today). Must not longjmp or throw.
 * @since 0.1
 */
typedef int (*mulligan_breaker_listener)(const mulligan_breaker_transition *transition,
                                         void *user_data);

/**
 * Validates options and creates a closed breaker.
 * @param out  OUT: the breaker; NULL on failure. Free with
 *             mulligan_breaker_destroy().
 * @param opts  the options, copied (the clock is borrowed); NULL for defaults.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (the last error names the
 *         inconsistent field), MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_create(mulligan_breaker **out,
                                         const mulligan_breaker_options *opts);

/**
 * Releases a breaker handle. NULL is a no-op. A breaker obtained from a
 * registry stays in the registry; the handle only stops keeping it alive.
 * Listeners registered through this handle's breaker stay attached to the
 * breaker (their free_user_data runs when the breaker itself goes away).
 * REQUIRES: no call on this handle is in progress.
 * @param breaker  the handle, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_breaker_destroy(mulligan_breaker *breaker);

/**
 * Asks to make one call now (read from the breaker's clock). The clock is
 * read only when the answer depends on it: a closed, disabled or
 * metrics-only breaker with no slow_call_duration and no call listener
 * admits without a reading (0.6; a steady-clock read is most of the cost of
 * an acquire on a virtual machine).
 * @param breaker  the breaker.
 * @param permit  IN/OUT: struct_size set (MULLIGAN_BREAKER_PERMIT_INIT);
 *                filled in with the answer.
 * @return MULLIGAN_OK when admitted; MULLIGAN_E_CIRCUIT_OPEN when refused
 *         (permit->retry_in_ms and the last error, "circuit breaker 'db' is
 *         open; next probe in 12.500 s", say for how long);
 *         MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_acquire(mulligan_breaker *breaker,
                                          mulligan_breaker_permit *permit);

/**
 * Records the result of the call made under `permit`. A permit from before
 * a state change (or a refused one) changes nothing; a half-open probe's
 * result always frees its slot.
 * @param breaker  the breaker that issued the permit.
 * @param permit  the permit.
 * @param result  a mulligan_call_result.
 * @param duration_ms  how long the call took, for slow-call detection; a
 *                     negative value means "from the acquire until now".
 *                     NaN and infinity are rejected. The clock is read only
 *                     when the breaker uses the time: a failure, a probe, a
 *                     window, slow_call_duration or a call listener (0.6; a
 *                     success of a consecutive-failures breaker is a counter
 *                     increment).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_record(mulligan_breaker *breaker,
                                         const mulligan_breaker_permit *permit, int result,
                                         double duration_ms);

/**
 * Runs `fn(user_data)` under the breaker: acquires, runs it with no lock
 * held, records the result. fn returns 0 for success; any other value is
 * recorded as a failure. (For a result that is neither, use acquire/record.)
 * @param breaker  the breaker.
 * @param fn  the call (not NULL).
 * @param user_data  passed to fn.
 * @param fn_result  OUT, may be NULL: fn's return value (untouched when
 *                   refused).
 * @return MULLIGAN_OK; MULLIGAN_E_CIRCUIT_OPEN when refused (fn not called);
 *         MULLIGAN_E_CALLBACK when fn returned non-zero;
 *         MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_execute(mulligan_breaker *breaker, int (*fn)(void *user_data),
                                          void *user_data, int *fn_result);

/**
 * Returns the state now. An open breaker whose open period has ended reads
 * MULLIGAN_BREAKER_HALF_OPEN even before an acquire made the switch.
 * @param breaker  the breaker.
 * @return a mulligan_breaker_state; 0 (and the last error) for NULL.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_state_now(const mulligan_breaker *breaker);

/**
 * Returns the time until a call may be admitted, in ms: 0 when one would be
 * now; MULLIGAN_DURATION_MAX_MS when forced open.
 * @param breaker  the breaker.
 * @return the time; 0 (and the last error) for NULL.
 * @since 0.1
 */
MULLIGAN_API double mulligan_breaker_time_until_probe_ms(const mulligan_breaker *breaker);

/**
 * Returns the counters now.
 * @param breaker  the breaker.
 * @param out  OUT: struct_size set (MULLIGAN_BREAKER_COUNTS_INIT).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_get_counts(const mulligan_breaker *breaker,
                                             mulligan_breaker_counts *out);

/**
 * Returns the breaker's name.
 * @param breaker  the breaker.
 * @return borrowed: valid while the handle lives; "" for NULL.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_breaker_name(const mulligan_breaker *breaker);

/**
 * Manual states: forced open (refuses everything), disabled (admits and
 * counts, never trips), metrics-only (admits; listeners hear of would-be
 * trips), and reset (back to closed, every counter cleared). Each starts a
 * new generation (outstanding permits become stale) and notifies listeners.
 * @param breaker  the breaker.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_force_open(mulligan_breaker *breaker);
/** See mulligan_breaker_force_open(). @since 0.1 */
MULLIGAN_API int mulligan_breaker_disable(mulligan_breaker *breaker);
/** See mulligan_breaker_force_open(). @since 0.1 */
MULLIGAN_API int mulligan_breaker_metrics_only(mulligan_breaker *breaker);
/** See mulligan_breaker_force_open(). @since 0.1 */
MULLIGAN_API int mulligan_breaker_reset(mulligan_breaker *breaker);

/**
 * Opens the breaker for `duration_ms` from now (mulligan_breaker_force_open_for_ms)
 * or until the breaker clock reads `until_ms` (..._until_ms), whatever its
 * state. Unlike mulligan_breaker_force_open() the state is
 * MULLIGAN_BREAKER_OPEN: when the period ends the breaker turns half-open and
 * probes as after a trip. Starts a new generation (outstanding permits
 * become stale), restarts the reset-timeout growth, and notifies listeners
 * with reason "forced_open_until".
 * @param breaker  the breaker.
 * @param duration_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL, a bad number, or
 *         an end not after now; nothing changes then).
 * Thread-safety: thread-safe.
 * @since 0.2
 */
MULLIGAN_API int mulligan_breaker_force_open_for_ms(mulligan_breaker *breaker,
                                                    double duration_ms);
/**
 * See mulligan_breaker_force_open_for_ms().
 * @param breaker  the breaker.
 * @param until_ms  an instant on the breaker's clock (as mulligan_clock_now_ms()),
 *                  after now.
 * @since 0.2
 */
MULLIGAN_API int mulligan_breaker_force_open_until_ms(mulligan_breaker *breaker,
                                                      double until_ms);

/**
 * Switches the breaker to half-open at once, from any state (resilience4j's
 * transitionToHalfOpenState): a new generation with every probe slot free;
 * listeners hear reason "half_open". No-op when already half-open.
 * @param breaker  the breaker.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL).
 * Thread-safety: thread-safe.
 * @since 0.2
 */
MULLIGAN_API int mulligan_breaker_half_open(mulligan_breaker *breaker);

/**
 * Adds a transition listener to the breaker.
 * @param breaker  the breaker.
 * @param listener  the callback (not NULL).
 * @param user_data  passed to it.
 * @param free_user_data  may be NULL; called once with user_data when the
 *                        listener is removed and no notification still uses
 *                        it, or when the breaker is destroyed.
 * @param out_id  OUT, may be NULL: the listener's id (never 0), for
 *                mulligan_breaker_remove_listener().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY (then
 *         free_user_data is not called).
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_add_listener(mulligan_breaker *breaker,
                                               mulligan_breaker_listener listener,
                                               void *user_data,
                                               void (*free_user_data)(void *user_data),
                                               uint64_t *out_id);

/**
 * Removes a listener.
 * @param breaker  the breaker.
 * @param id  from mulligan_breaker_add_listener().
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT (no such listener).
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_remove_listener(mulligan_breaker *breaker, uint64_t id);

/**
 * Returns the name of a call kind.
 * @param kind  a mulligan_breaker_call_kind.
 * @return static text: "success", "failure", "ignored", "rejected", or
 *         "unknown" for any other value.
 * @since 0.2
 */
MULLIGAN_API const char *mulligan_breaker_call_kind_str(int kind);

/**
 * Reads the figures of the breaker's last opening.
 * @param breaker  the breaker.
 * @param out  OUT: struct_size set (MULLIGAN_BREAKER_TRIP_INIT); out->tripped
 *             says whether it ever opened since creation or the last reset.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL, or a struct_size
 *         below the 0.2 size).
 * Thread-safety: thread-safe.
 * @since 0.2
 */
MULLIGAN_API int mulligan_breaker_get_last_trip(const mulligan_breaker *breaker,
                                                mulligan_breaker_trip *out);

/**
 * Returns the name the breaker's metrics are reported under in
 * mulligan_metrics_json() and mulligan_metrics_prometheus(): its metrics
 * name (or name), or "<name>#2", "<name>#3", ... when another live breaker
 * already reports under it, so one metrics name never mixes two breakers.
 * @param breaker  the breaker.
 * @return borrowed: valid while the handle lives; "" when the breaker
 *         reports no metrics, and for NULL (with the last error set).
 * @since 0.2
 */
MULLIGAN_API const char *mulligan_breaker_reported_name(const mulligan_breaker *breaker);

/**
 * Adds a call listener: one event per result recorded (success, failure,
 * ignored; stale ones flagged) and per refused acquire. Without call
 * listeners a call pays one atomic load for this feature.
 * @param breaker  the breaker.
 * @param listener  the callback (not NULL).
 * @param user_data  passed to it.
 * @param free_user_data  may be NULL; called once with user_data when the
 *                        listener is removed and no notification still uses
 *                        it, or when the breaker is destroyed.
 * @param out_id  OUT, may be NULL: the listener's id (never 0), for
 *                mulligan_breaker_remove_call_listener().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY (then
 *         free_user_data is not called).
 * Thread-safety: thread-safe.
 * @since 0.2
 */
MULLIGAN_API int mulligan_breaker_add_call_listener(mulligan_breaker *breaker,
                                                    mulligan_breaker_call_listener listener,
                                                    void *user_data,
                                                    void (*free_user_data)(void *user_data),
                                                    uint64_t *out_id);

/**
 * Removes a call listener.
 * @param breaker  the breaker.
 * @param id  from mulligan_breaker_add_call_listener().
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT (no such call listener).
 * @since 0.2
 */
MULLIGAN_API int mulligan_breaker_remove_call_listener(mulligan_breaker *breaker, uint64_t id);

/**
 * Breakers by key with one shared configuration (the key becomes the name).
 * A lookup never resets a live breaker; when full, the least recently used
 * idle closed breaker no handle refers to is evicted.
 *
 * Thread-safety: thread-safe.
 * @since 0.1
 */
typedef struct mulligan_breaker_registry mulligan_breaker_registry;

/**
 * Creates a registry.
 * @param out  OUT: the registry; NULL on failure.
 * @param opts  the options of every breaker (copied; clock borrowed); NULL
 *              for defaults.
 * @param max_breakers  the bound, >= 1 (0 means the default, 10000).
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_registry_create(mulligan_breaker_registry **out,
                                                  const mulligan_breaker_options *opts,
                                                  size_t max_breakers);

/**
 * Destroys a registry. NULL is a no-op. Breaker handles obtained from it stay
 * valid (each keeps its breaker alive).
 * @param registry  the registry, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_breaker_registry_destroy(mulligan_breaker_registry *registry);

/**
 * Returns the breaker for `key`, creating it when there is none.
 * @param registry  the registry.
 * @param key  non-empty UTF-8.
 * @param out  OUT: a new handle on the breaker (free it with
 *             mulligan_breaker_destroy(); while it lives the breaker is never
 *             evicted); NULL on failure.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (empty key),
 *         MULLIGAN_E_UNAVAILABLE (full of breakers in use),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_registry_get(mulligan_breaker_registry *registry,
                                               const char *key, mulligan_breaker **out);

/**
 * Calls `fn` for every breaker, most recently used first, on a snapshot (fn
 * may call into the registry). The breaker handle is borrowed for the call.
 * @param registry  the registry.
 * @param fn  returns 0 to go on; non-zero stops the walk.
 * @param user_data  passed to fn.
 * @return MULLIGAN_OK, MULLIGAN_E_CALLBACK (fn returned non-zero),
 *         MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_breaker_registry_foreach(mulligan_breaker_registry *registry,
                                                   int (*fn)(mulligan_breaker *breaker,
                                                             void *user_data),
                                                   void *user_data);

/**
 * Returns the number of breakers held.
 * @param registry  the registry.
 * @return the count; 0 for NULL.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_breaker_registry_size(const mulligan_breaker_registry *registry);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_BREAKER_H_ */
