/* mulligan_metrics.h — metrics and events in the mulligan C ABI: the
 * process-wide registry of metrics by name (Prometheus text, JSON, per-name
 * snapshots, in-flight status) and event listeners.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. A program may include just this header (it includes
 * mulligan_status.h). Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_METRICS_H_
#define MULLIGAN_METRICS_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Metrics and events                                                         */
/* ========================================================================== */

/*
 * Every retry loop, breaker and HTTP client of the process reports into one
 * registry of metrics kept per name (the name of a policy, breaker or client
 * origin): calls, attempts, retries by reason, successes, failures (given
 * up), fallbacks, short-circuits, breaker transitions, and the gauges calls
 * in flight / waiting to retry. The same registry serves C, C++ and Python.
 * mulligan_retry_call() reports when opts->metrics_name is set; a breaker
 * with a name reports its state, transitions and refusals under that name.
 *
 * What counts as what: a call that retries counts once in calls; attempts
 * counts the attempts of finished calls; retries counts attempts after the
 * first; an eventual success is a success, never a failure; a fallback is
 * counted in failures too.
 *
 * The registry holds at most 2000 names; metrics of further names are
 * merged under MULLIGAN_METRICS_OVERFLOW_NAME (as OpenTelemetry's
 * cardinality limit), so an unbounded label cannot exhaust memory.
 *
 * Thread-safety: every function of this section is thread-safe. Recording is
 * lock-free (per-thread shards); reading sums the shards, so each value is
 * exact but values are read one after another while calls may run.
 */

/**
 * The name under which metrics beyond the registry's bound of distinct
 * names are merged.
 * @since 0.1
 */
#define MULLIGAN_METRICS_OVERFLOW_NAME "_overflow"

/**
 * Why a retry was scheduled: the index into
 * mulligan_metrics_snapshot.retries_by_reason and
 * mulligan_event.retry_reason. Values are pinned; append only.
 * @since 0.1
 */
typedef enum mulligan_retry_reason {
  /** A retryable HTTP status (503, 429, ...) without a Retry-After hint. */
  MULLIGAN_RETRY_REASON_STATUS = 0,
  /** A transport failure: refused, reset, DNS, TLS, other. */
  MULLIGAN_RETRY_REASON_TRANSPORT = 1,
  /** An attempt or connect timeout. */
  MULLIGAN_RETRY_REASON_TIMEOUT = 2,
  /** The server's Retry-After hint set the delay. */
  MULLIGAN_RETRY_REASON_RETRY_AFTER = 3,
  /** A failure the caller classified (MULLIGAN_ERROR_RETRYABLE/TERMINAL). */
  MULLIGAN_RETRY_REASON_EXCEPTION = 4
} mulligan_retry_reason;

/** The number of mulligan_retry_reason values. @since 0.1 */
#define MULLIGAN_RETRY_REASON_COUNT 5

/**
 * The values of one name's metrics. Initialise with
 * MULLIGAN_METRICS_SNAPSHOT_INIT. The struct only grows at the end;
 * struct_size tells the library which version the caller compiled.
 * @since 0.1
 */
typedef struct mulligan_metrics_snapshot {
  /** sizeof(mulligan_metrics_snapshot) as compiled by the caller. */
  uint32_t struct_size;
  /** Logical calls started (a call that retries counts once). */
  uint64_t calls;
  /** Attempts made by finished calls. */
  uint64_t attempts;
  /** Attempts after the first (the sum of retries_by_reason). */
  uint64_t retries;
  /** Retries by reason, indexed by mulligan_retry_reason. */
  uint64_t retries_by_reason[MULLIGAN_RETRY_REASON_COUNT];
  /** Calls that finally succeeded (on any attempt). */
  uint64_t successes;
  /** Calls that gave up, were aborted, or were refused by a breaker. */
  uint64_t failures;
  /** Failed calls answered by a fallback (also counted in failures). */
  uint64_t fallbacks;
  /** Attempts refused by an open circuit breaker reporting under this name. */
  uint64_t short_circuits;
  /** Transitions of a breaker reporting under this name into the open state. */
  uint64_t circuit_opens;
  /** Calls started and not yet finished (gauge). */
  int64_t in_flight;
  /** Calls currently waiting before a retry (gauge). */
  int64_t waiting_to_retry;
  /** The last state reported by a breaker under this name (a
   *  mulligan_breaker_state), or -1 when no breaker reports here. */
  int breaker_state;
  /** Calls their caller cancelled (mulligan_call_cancel,
   *  mulligan_hedged_call_cancel, a hedged request's losing copy): neither
   *  successes nor failures; their attempts count in attempts. Filled only
   *  when struct_size covers it. @since 0.6 */
  uint64_t cancelled;
  /** Hedged calls (mulligan_hedging.h): extra copies started (copy 2 or
   *  later; mulligan_hedges_total), calls won by an extra copy
   *  (mulligan_hedges_won_total), and running copies cancelled because
   *  another won, a fatal outcome, an abandon or a cancel
   *  (mulligan_hedge_cancelled_total). Filled only when struct_size covers
   *  them. @since 0.6 */
  uint64_t hedges;
  uint64_t hedges_won;
  uint64_t hedge_cancelled;
} mulligan_metrics_snapshot;

/** Initialiser for mulligan_metrics_snapshot. @since 0.1 (cancelled and the
 *  hedge counts: 0.6) */
#define MULLIGAN_METRICS_SNAPSHOT_INIT                                              \
  { (uint32_t)sizeof(mulligan_metrics_snapshot), 0, 0, 0, {0, 0, 0, 0, 0}, 0, 0, 0, 0, 0, \
    0, 0, -1, 0, 0, 0, 0 }

/**
 * Writes every name's metrics in the Prometheus text exposition format
 * (version 0.0.4): mulligan_calls_total{name="..."},
 * mulligan_retries_total{name="...",reason="..."}, the histograms
 * mulligan_call_duration_seconds, mulligan_attempts_per_call and
 * mulligan_retry_delay_seconds, and the gauges. Serve it as
 * "text/plain; version=0.0.4".
 *
 * Buffer protocol (snprintf's): the text is written into buf, truncated to
 * size - 1 bytes when it does not fit, and always NUL-terminated when
 * size > 0. *needed receives the full length plus 1 (the size that fits the
 * whole text); truncation is not an error: the function returns MULLIGAN_OK
 * and the caller compares *needed with size. Call with buf NULL and size 0
 * to learn the size. The text may grow between two calls (new names, larger
 * numbers): allocate some slack or loop until *needed <= size.
 *
 * @param buf  OUT: caller-owned buffer of `size` bytes; may be NULL only
 *             when size is 0.
 * @param size  the size of buf in bytes.
 * @param needed  OUT, may be NULL: the buffer size the whole text needs,
 *                terminating NUL included.
 * @return MULLIGAN_OK (also when truncated); MULLIGAN_E_INVALID_ARGUMENT
 *         (buf NULL with size > 0); MULLIGAN_E_NO_MEMORY.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_metrics_prometheus(char *buf, size_t size, size_t *needed);

/**
 * Writes every name's metrics as one JSON object:
 * {"metrics": [{"name": ..., "calls": ..., "retries_by_reason": {...}, ...}],
 *  "totals": {"calls": ..., "retries": ..., "circuit_opens": ...,
 *  "fallbacks": ..., "successes": ..., "failures": ...}}.
 * Same buffer protocol as mulligan_metrics_prometheus().
 *
 * @param buf  OUT: caller-owned buffer of `size` bytes; may be NULL only
 *             when size is 0.
 * @param size  the size of buf in bytes.
 * @param needed  OUT, may be NULL: the buffer size the whole text needs,
 *                terminating NUL included.
 * @return MULLIGAN_OK (also when truncated); MULLIGAN_E_INVALID_ARGUMENT
 *         (buf NULL with size > 0); MULLIGAN_E_NO_MEMORY.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_metrics_json(char *buf, size_t size, size_t *needed);

/**
 * Reads the metrics of one name. Never creates the name: an unknown name is
 * an error, so that polling a name does not add it to the exports. Metrics
 * of names beyond the registry's bound are read under
 * MULLIGAN_METRICS_OVERFLOW_NAME.
 *
 * @param name  the name, UTF-8 (not NULL).
 * @param out  IN/OUT: struct_size set (MULLIGAN_METRICS_SNAPSHOT_INIT);
 *             filled in (the fields struct_size covers). On failure the
 *             counters are zeroed and breaker_state is -1.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (NULL name or out,
 *         struct_size too small, or no metrics under that name yet: the
 *         last error says "no metrics named '<name>'"); MULLIGAN_E_NO_MEMORY.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_metrics_get(const char *name, mulligan_metrics_snapshot *out);

/**
 * The retry status for user interfaces (a "Retrying..." banner): how many
 * calls are in flight and how many are waiting before a retry, summed over
 * every name. Per name, see mulligan_metrics_get().
 *
 * @param in_flight  OUT: calls started and not yet finished.
 * @param waiting_to_retry  OUT: calls currently waiting before a retry.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (a NULL pointer; both
 *         are then untouched).
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_metrics_status(int64_t *in_flight, int64_t *waiting_to_retry);

/**
 * Forgets every name's metrics (for tests). Listeners stay registered.
 * Calls running meanwhile finish reporting into the forgotten metrics, which
 * are no longer exported; so reset only while no call is running.
 *
 * @return MULLIGAN_OK.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_metrics_reset(void);

/**
 * What kind of event a listener receives. Values are pinned; append only.
 * @since 0.1
 */
typedef enum mulligan_event_kind {
  /** An attempt is about to run (attempt). */
  MULLIGAN_EVENT_ATTEMPT_STARTED = 0,
  /** An attempt failed (attempt, error_kind, http_status, elapsed_ms;
   *  retry_reason when a retry follows). */
  MULLIGAN_EVENT_ATTEMPT_FAILED = 1,
  /** A retry was scheduled after the failed attempt (as ATTEMPT_FAILED,
   *  plus delay_ms). */
  MULLIGAN_EVENT_RETRY_SCHEDULED = 2,
  /** The call gave up (attempt = attempts made, stop_reason, elapsed_ms). */
  MULLIGAN_EVENT_GAVE_UP = 3,
  /** A breaker changed state (from_state, to_state, transition_reason). */
  MULLIGAN_EVENT_BREAKER_TRANSITION = 4,
  /** A fallback answered a failed call. */
  MULLIGAN_EVENT_FALLBACK_USED = 5,
  /** The call succeeded (attempt = attempts made, elapsed_ms). */
  MULLIGAN_EVENT_SUCCEEDED = 6,
  /** An open breaker refused an attempt. */
  MULLIGAN_EVENT_SHORT_CIRCUITED = 7,
  /** A retry budget, adaptive throttling, a bulkhead or a rate limiter
   *  refused the call (stop_reason says which; emitted before GAVE_UP).
   *  @since 0.4 */
  MULLIGAN_EVENT_REJECTED = 8
} mulligan_event_kind;

/** The kinds_mask bit of one mulligan_event_kind. @since 0.1 */
#define MULLIGAN_EVENT_MASK(kind) (1u << (unsigned)(kind))

/**
 * One event, passed to a listener. Filled in by the library; fields that do
 * not apply to the kind are 0, 0.0 or "". Fields may be added at the end:
 * read only those struct_size covers.
 * @since 0.1
 */
typedef struct mulligan_event {
  /** sizeof(mulligan_event) as compiled into the library. */
  uint32_t struct_size;
  /** A mulligan_event_kind. Kinds added later are delivered to listeners
   *  with kinds_mask 0: ignore kinds you do not know. */
  int kind;
  /** The metrics name that emitted it. Borrowed: valid only during the
   *  callback; copy it to keep it. Never NULL. */
  const char *name;
  /** Attempt number (1 for the first) for attempt and retry events; the
   *  attempts made for SUCCEEDED and GAVE_UP; 0 otherwise. */
  int attempt;
  /** RETRY_SCHEDULED: the wait before the next attempt, ms. */
  double delay_ms;
  /** ATTEMPT_FAILED, RETRY_SCHEDULED: the failed attempt's
   *  mulligan_error_kind (MULLIGAN_ERROR_NONE for an HTTP status). */
  int error_kind;
  /** ATTEMPT_FAILED, RETRY_SCHEDULED: the HTTP status, or 0. */
  int http_status;
  /** ATTEMPT_FAILED (when a retry follows), RETRY_SCHEDULED: a
   *  mulligan_retry_reason; 0 otherwise. */
  int retry_reason;
  /** SUCCEEDED, GAVE_UP: a mulligan_stop_reason; MULLIGAN_STOP_NONE
   *  otherwise. */
  int stop_reason;
  /** BREAKER_TRANSITION: the mulligan_breaker_state left (0 otherwise). */
  int from_state;
  /** BREAKER_TRANSITION: the mulligan_breaker_state entered (0 otherwise). */
  int to_state;
  /** BREAKER_TRANSITION: static text such as "failure_threshold" (see
   *  mulligan_breaker_transition.reason); "" otherwise. Never NULL. */
  const char *transition_reason;
  /** Time since the call's first attempt started, ms (0 for breaker
   *  events). */
  double elapsed_ms;
} mulligan_event;

/**
 * Receives events. Runs synchronously on the thread that caused the event
 * (the thread running the call or the breaker operation), with no mulligan
 * lock held, so it may call back into mulligan (including
 * mulligan_event_listener_remove()). It must be quick: the call it observes
 * waits for it. Return 0; other values are reserved (an event cannot be
 * aborted, so they are ignored today). Must not longjmp or throw.
 * @param event  the event; borrowed, valid only during the callback.
 * @param user_data  as given to mulligan_event_listener_add().
 * @since 0.1
 */
typedef int (*mulligan_event_listener)(const mulligan_event *event, void *user_data);

/**
 * Subscribes to the event stream of every name (C, C++ and Python calls
 * alike). Several listeners may be registered; each receives the events in
 * the order they happen on a given thread.
 *
 * @param callback  the listener (not NULL).
 * @param user_data  passed to it.
 * @param free_user_data  may be NULL; called once with user_data after the
 *                        listener is removed and no notification still uses
 *                        it (possibly on the thread of that notification).
 *                        Never called when the add fails.
 * @param kinds_mask  the kinds to receive: an OR of
 *                    MULLIGAN_EVENT_MASK(kind); 0 means every kind (kinds
 *                    added later included). Bits of unknown kinds are
 *                    accepted and never match.
 * @param out_id  OUT, may be NULL: the listener's id (never 0), for
 *                mulligan_event_listener_remove(); 0 on failure.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (callback NULL);
 *         MULLIGAN_E_NO_MEMORY.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_event_listener_add(mulligan_event_listener callback, void *user_data,
                                             void (*free_user_data)(void *user_data),
                                             uint32_t kinds_mask, uint64_t *out_id);

/**
 * Unsubscribes a listener. Notifications already running on other threads
 * may still finish; free_user_data runs after the last of them.
 *
 * @param id  from mulligan_event_listener_add().
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT (no listener with that
 *         id, e.g. removed already).
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_event_listener_remove(uint64_t id);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_METRICS_H_ */
