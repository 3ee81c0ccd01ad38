/* mulligan_retry.h — the retry engine of the mulligan C ABI: the enumerations
 * it shares with the core (backoff, jitter, error kinds, stop reasons), retry
 * options and immutable policies, per-call sessions (the engine decides, the
 * caller acts: a session never sleeps; it answers each attempt's outcome with
 * "retry after delay_ms" or "stop"), the Retry-After parser, and
 * mulligan_retry_call(), the blocking loop with a callback.
 *
 * Part of the mulligan C ABI: mulligan.h includes every part and states the
 * conventions. A program may include just this header (it includes
 * mulligan_status.h, and mulligan_breaker.h for mulligan_retry_call()).
 * Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_RETRY_H_
#define MULLIGAN_RETRY_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_status.h"
#include "mulligan_breaker.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Enumerations shared with the engine                                        */
/* ========================================================================== */

/**
 * Backoff strategies; with n = retries already made (0 before the first
 * retry): constant d = base; linear d = base*(n+1); exponential
 * d = base*multiplier^n; decorrelated d = uniform(base, 3*previous).
 * @since 0.1
 */
typedef enum mulligan_backoff_kind {
  MULLIGAN_BACKOFF_CONSTANT = 0,
  MULLIGAN_BACKOFF_LINEAR = 1,
  MULLIGAN_BACKOFF_EXPONENTIAL = 2,
  MULLIGAN_BACKOFF_DECORRELATED = 3
} mulligan_backoff_kind;

/**
 * Jitter applied to a backoff delay d (after capping at max_delay):
 * none d; full uniform(0, d); equal d/2 + uniform(0, d/2); proportional
 * min(d, max_delay/(1+f)) * uniform(1-f, 1+f).
 * @since 0.1
 */
typedef enum mulligan_jitter_kind {
  MULLIGAN_JITTER_NONE = 0,
  MULLIGAN_JITTER_FULL = 1,
  MULLIGAN_JITTER_EQUAL = 2,
  MULLIGAN_JITTER_PROPORTIONAL = 3
} mulligan_jitter_kind;

/**
 * The kind of failure an attempt ended with (MULLIGAN_ERROR_NONE for a result
 * or an HTTP response). Values are pinned; append only.
 * @since 0.1
 */
typedef enum mulligan_error_kind {
  /** No failure: the attempt produced a result or an HTTP response. */
  MULLIGAN_ERROR_NONE = 0,
  /** Nothing listened at the address; nothing was sent. */
  MULLIGAN_ERROR_CONNECTION_REFUSED = 1,
  /** The peer reset or closed the connection mid-exchange. */
  MULLIGAN_ERROR_CONNECTION_RESET = 2,
  /** The host name did not resolve; nothing was sent. */
  MULLIGAN_ERROR_DNS_FAILURE = 3,
  /** No connection within the connect timeout; nothing was sent. */
  MULLIGAN_ERROR_CONNECT_TIMEOUT = 4,
  /** The attempt did not finish within its timeout. */
  MULLIGAN_ERROR_TIMEOUT = 5,
  /** TLS handshake or verification failed (terminal by default). */
  MULLIGAN_ERROR_TLS = 6,
  /** Malformed URL or unsupported scheme (terminal). */
  MULLIGAN_ERROR_INVALID_URL = 7,
  /** Any other transport failure. */
  MULLIGAN_ERROR_TRANSPORT = 8,
  /** A failure the caller already judged retryable. */
  MULLIGAN_ERROR_RETRYABLE = 9,
  /** A failure the caller already judged terminal (never retried). */
  MULLIGAN_ERROR_TERMINAL = 10,
  /** The response ended early: the connection closed inside the header
   *  block, before Content-Length body bytes, or inside a chunked body; or
   *  only an interim (1xx) response came. The request was sent: retried
   *  only when replay-safe. Retryable by default. @since 0.2 */
  MULLIGAN_ERROR_TRUNCATED = 11
} mulligan_error_kind;

/**
 * Why a retry session or a pipeline call stopped. Values are pinned; append
 * only (they equal mulligan::StopReason).
 * @since 0.1
 */
typedef enum mulligan_stop_reason {
  /** Not stopped (the decision is MULLIGAN_ACTION_RETRY). */
  MULLIGAN_STOP_NONE = 0,
  /** The attempt succeeded. */
  MULLIGAN_STOP_SUCCEEDED = 1,
  /** The outcome was terminal (a 404, a TLS error, ...). */
  MULLIGAN_STOP_TERMINAL = 2,
  /** max_attempts attempts were made. */
  MULLIGAN_STOP_ATTEMPTS_EXHAUSTED = 3,
  /** The deadline passed or the next wait would reach it. */
  MULLIGAN_STOP_DEADLINE = 4,
  /** A Retry-After hint exceeded retry_after_max (and clamping is off). */
  MULLIGAN_STOP_RETRY_AFTER_TOO_LONG = 5,
  /** Not replay-safe (POST/PATCH without a key) and bytes had been sent. */
  MULLIGAN_STOP_NOT_REPLAY_SAFE = 6,
  /** A circuit breaker refused an attempt (mulligan_call_admit() of the
   *  pipeline; never retried). mulligan_retry_call() keeps reporting
   *  MULLIGAN_STOP_NONE with circuit_open = 1 for it, as in 0.1.
   *  @since 0.2 */
  MULLIGAN_STOP_CIRCUIT_OPEN = 7,
  /** A retry budget refused the retry; the last failure is kept as the
   *  call's error. @since 0.3 */
  MULLIGAN_STOP_BUDGET = 8,
  /** Adaptive throttling rejected the attempt locally (never retried).
   *  @since 0.3 */
  MULLIGAN_STOP_THROTTLED = 9,
  /** A bulkhead refused the call (mulligan_limits.h; never retried).
   *  @since 0.3 */
  MULLIGAN_STOP_BULKHEAD_FULL = 10,
  /** A rate limiter refused the call (mulligan_limits.h; never retried).
   *  @since 0.3 */
  MULLIGAN_STOP_RATE_LIMITED = 11,
  /** A stop condition's predicate said stop (mulligan::StopExpr::Predicate;
   *  Python's mulligan.stop.when). @since 0.2 */
  MULLIGAN_STOP_STOP_CONDITION = 12
} mulligan_stop_reason;

/**
 * The engine's answer to an outcome.
 * @since 0.1
 */
typedef enum mulligan_action {
  /** Wait delay_ms, then run the next attempt. */
  MULLIGAN_ACTION_RETRY = 0,
  /** Stop; the reason says why. */
  MULLIGAN_ACTION_STOP = 1
} mulligan_action;

/**
 * The policy's verdict on one outcome.
 * @since 0.1
 */
typedef enum mulligan_classification {
  MULLIGAN_CLASSIFICATION_SUCCESS = 0,
  MULLIGAN_CLASSIFICATION_RETRYABLE = 1,
  MULLIGAN_CLASSIFICATION_TERMINAL = 2
} mulligan_classification;

/**
 * Returns a stable snake_case name of an error kind ("connection_refused").
 * @param kind  any int; unknown values give "unknown".
 * @return never NULL; static storage.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_error_kind_str(int kind);

/**
 * Returns a stable snake_case name of a stop reason ("attempts_exhausted",
 * "circuit_open" since 0.2).
 * @param reason  any int; unknown values give "unknown".
 * @return never NULL; static storage.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_stop_reason_str(int reason);

/* ========================================================================== */
/* Retry options                                                              */
/* ========================================================================== */

/**
 * A mutable bag of retry settings, turned into an immutable policy by
 * mulligan_retry_policy_create(). Defaults (DESIGN.md section 4): 3 attempts,
 * exponential backoff, base 200 ms, multiplier 2, full jitter, jitter fraction
 * 0.2, max delay 10000 ms, no deadline, no attempt timeout, Retry-After
 * honoured up to 60000 ms (longer hints stop the retries), retryable statuses
 * 408 429 500 502 503 504, random seed per session.
 *
 * Each setter validates its single value and returns MULLIGAN_OK or
 * MULLIGAN_E_INVALID_ARGUMENT (the options are then unchanged), or
 * MULLIGAN_E_INVALID_ARGUMENT for a NULL handle.
 *
 * Thread-safety: not thread-safe; use one options object from one thread at a
 * time. The options may be destroyed right after a policy is created from them.
 * @since 0.1
 */
typedef struct mulligan_retry_options mulligan_retry_options;

/**
 * Creates retry options holding every default.
 * @param out  OUT: the new options; NULL on failure. Free with
 *             mulligan_retry_options_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_create(mulligan_retry_options **out);

/**
 * Destroys options. NULL is a no-op.
 * @param opts  the options, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_retry_options_destroy(mulligan_retry_options *opts);

/**
 * Sets the total number of attempts, the first one included (default 3).
 * @param opts  the options.
 * @param max_attempts  >= 1.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_max_attempts(mulligan_retry_options *opts,
                                                         int max_attempts);

/**
 * Sets the backoff strategy (default MULLIGAN_BACKOFF_EXPONENTIAL).
 * @param opts  the options.
 * @param kind  a mulligan_backoff_kind value.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (unknown kind).
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_backoff(mulligan_retry_options *opts,
                                                    mulligan_backoff_kind kind);

/**
 * Sets the base delay (default 200 ms). 0 means no wait.
 * @param opts  the options.
 * @param base_delay_ms  finite, >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_base_delay_ms(mulligan_retry_options *opts,
                                                          double base_delay_ms);

/**
 * Sets the growth factor of exponential backoff (default 2). Values below 1
 * shrink the delay; 0 means no wait.
 * @param opts  the options.
 * @param multiplier  finite, >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_multiplier(mulligan_retry_options *opts,
                                                       double multiplier);

/**
 * Sets the cap of every delay, applied after jitter (default 10000 ms).
 * @param opts  the options.
 * @param max_delay_ms  finite, >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_max_delay_ms(mulligan_retry_options *opts,
                                                         double max_delay_ms);

/**
 * Sets the jitter mode (default MULLIGAN_JITTER_FULL). Ignored by
 * MULLIGAN_BACKOFF_DECORRELATED, which carries its own randomness.
 * @param opts  the options.
 * @param kind  a mulligan_jitter_kind value.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (unknown kind).
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_jitter(mulligan_retry_options *opts,
                                                   mulligan_jitter_kind kind);

/**
 * Sets f of MULLIGAN_JITTER_PROPORTIONAL (default 0.2).
 * @param opts  the options.
 * @param fraction  in [0, 1].
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_jitter_fraction(mulligan_retry_options *opts,
                                                            double fraction);

/**
 * Sets the total time budget of one logical call, measured on the monotonic
 * clock from the start of the first attempt (default: none). No attempt
 * starts at or after it. To remove a deadline use
 * mulligan_retry_options_clear_deadline(); 0 is not a synonym for "none".
 * @param opts  the options.
 * @param deadline_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_deadline_ms(mulligan_retry_options *opts,
                                                        double deadline_ms);

/**
 * Removes the deadline (the default).
 * @param opts  the options.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL handle).
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_clear_deadline(mulligan_retry_options *opts);

/**
 * Sets the bound on a single attempt, trimmed to the time left before the
 * deadline (default: none; the HTTP client then uses 30000 ms).
 * @param opts  the options.
 * @param attempt_timeout_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_attempt_timeout_ms(mulligan_retry_options *opts,
                                                               double attempt_timeout_ms);

/**
 * Removes the attempt timeout (the default).
 * @param opts  the options.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL handle).
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_clear_attempt_timeout(mulligan_retry_options *opts);

/**
 * Sets the longest Retry-After hint honoured (default 60000 ms). A longer
 * hint stops the retries (MULLIGAN_STOP_RETRY_AFTER_TOO_LONG) unless
 * mulligan_retry_options_set_retry_after_clamp() asked to wait the maximum.
 * @param opts  the options.
 * @param retry_after_max_ms  finite, >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_retry_after_max_ms(mulligan_retry_options *opts,
                                                               double retry_after_max_ms);

/**
 * Chooses what a Retry-After hint longer than retry_after_max does: 0 (the
 * default) stops the retries, 1 waits retry_after_max instead.
 * @param opts  the options.
 * @param clamp  0 or 1.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_retry_after_clamp(mulligan_retry_options *opts,
                                                              int clamp);

/**
 * Chooses whether a Retry-After hint replaces the backoff delay (default 1).
 * @param opts  the options.
 * @param respect  0 or 1.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_respect_retry_after(mulligan_retry_options *opts,
                                                                int respect);

/**
 * Replaces the list of retryable HTTP statuses (default 408 429 500 502 503
 * 504). Every other status >= 400 is terminal, every status < 400 a success.
 * @param opts  the options.
 * @param statuses  `count` statuses, each in [100, 599]; copied. May be NULL
 *                  when count is 0 (then no status is retryable).
 * @param count  number of entries.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_retryable_statuses(mulligan_retry_options *opts,
                                                               const int *statuses,
                                                               size_t count);

/**
 * Replaces the list of retryable error kinds (default: connection refused and
 * reset, DNS failure, connect timeout, timeout, transport, truncated).
 * MULLIGAN_ERROR_RETRYABLE is always retryable and MULLIGAN_ERROR_TERMINAL
 * never, whatever the list says.
 * @param opts  the options.
 * @param kinds  `count` mulligan_error_kind values (not MULLIGAN_ERROR_NONE);
 *               copied. May be NULL when count is 0.
 * @param count  number of entries.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_retryable_errors(mulligan_retry_options *opts,
                                                             const int *kinds, size_t count);

/**
 * Replaces the gRPC status codes that are retryable (default: 14,
 * UNAVAILABLE), for outcomes that carry a grpc_status (mulligan_outcome).
 * gRPC's own retry design (gRFC A6) lists the retryable codes per method the
 * same way.
 * @param opts  the options.
 * @param codes  `count` gRPC status codes in [1, 16] (0, OK, is always a
 *               success); copied. May be NULL when count is 0.
 * @param count  number of entries.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_retryable_grpc_codes(mulligan_retry_options *opts,
                                                                const int *codes, size_t count);

/**
 * Seeds the jitter generator: every session of the policy then starts from
 * this seed, so its delays are reproducible (default: a fresh random seed per
 * session).
 * @param opts  the options.
 * @param seed  any value.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL handle).
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_options_set_seed(mulligan_retry_options *opts, uint64_t seed);

/* ========================================================================== */
/* Retry policy                                                               */
/* ========================================================================== */

/**
 * A validated, immutable retry policy.
 *
 * Thread-safety: immutable; safe to share between threads and to use from
 * many sessions at once. It must outlive every session begun from it (an
 * HTTP client copies it and does not need it afterwards).
 * @since 0.1
 */
typedef struct mulligan_retry_policy mulligan_retry_policy;

/**
 * Validates options and creates a policy.
 * @param out   OUT: the new policy; NULL on failure. Free with
 *              mulligan_retry_policy_destroy().
 * @param opts  the options, copied; NULL for every default.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL, or the
 *         options are inconsistent; the last error names the field),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_policy_create(mulligan_retry_policy **out,
                                              const mulligan_retry_options *opts);

/**
 * Destroys a policy. NULL is a no-op.
 * REQUIRES: no session created from it is still in use.
 * @param policy  the policy, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_retry_policy_destroy(mulligan_retry_policy *policy);

/* ========================================================================== */
/* Retry sessions: the engine decides, the caller acts                        */
/* ========================================================================== */

/**
 * The state of one logical call (attempt count, previous delay, jitter
 * generator, deadline). Typical loop:
 *
 *   mulligan_retry_session *s;
 *   mulligan_retry_session_begin(&s, policy, NULL, 1);
 *   for (;;) {
 *     mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
 *     mulligan_decision d = MULLIGAN_DECISION_INIT;
 *     o.http_status = run_one_attempt();
 *     mulligan_retry_session_on_outcome(s, &o, &d);
 *     if (d.action == MULLIGAN_ACTION_STOP) break;
 *     sleep_ms(d.delay_ms);
 *   }
 *   mulligan_retry_session_destroy(s);
 *
 * Thread-safety: not thread-safe; one session belongs to one call.
 * @since 0.1
 */
typedef struct mulligan_retry_session mulligan_retry_session;

/**
 * One attempt's outcome, filled in by the caller. Initialise it with
 * MULLIGAN_OUTCOME_INIT, then set the fields that apply. The struct only
 * grows at the end; struct_size tells the library which version it got.
 * @since 0.1
 */
typedef struct mulligan_outcome {
  /** sizeof(mulligan_outcome) as compiled by the caller. */
  uint32_t struct_size;
  /** A mulligan_error_kind; MULLIGAN_ERROR_NONE for a result or a response. */
  int error_kind;
  /** The HTTP status in [100, 599], or 0 when the attempt produced no HTTP
   *  response. An outcome with no error and status 0 is a plain success. */
  int http_status;
  /** A parsed Retry-After hint in ms (see mulligan_retry_after_parse()), or
   *  any negative value for none. +infinity and values of at least
   *  MULLIGAN_DURATION_MAX_MS mean "longer than anything"; NaN is invalid. */
  double retry_after_ms;
  /** 1 if any byte of the request was sent, 0 if not (then even a
   *  non-replay-safe request may be retried), -1 to derive it from
   *  error_kind (refused, DNS failure and connect timeout send nothing). */
  int request_sent;
  /** A gRPC status code in [0, 16] (14 = UNAVAILABLE), or -1 when the attempt
   *  was not a gRPC call. With error_kind MULLIGAN_ERROR_NONE, 0 (OK) is a
   *  success and the codes of mulligan_retry_options_set_retryable_grpc_codes
   *  (default UNAVAILABLE) are retryable; every other code is terminal. Read
   *  only when struct_size covers it. @since 0.1 */
  int grpc_status;
} mulligan_outcome;

/** Initialiser for mulligan_outcome: success, no hint, request_sent derived,
 *  no gRPC status.
 *  @since 0.1 */
#define MULLIGAN_OUTCOME_INIT \
  { (uint32_t)sizeof(mulligan_outcome), MULLIGAN_ERROR_NONE, 0, -1.0, -1, -1 }

/**
 * The engine's decision, filled in by mulligan_retry_session_on_outcome().
 * Initialise it with MULLIGAN_DECISION_INIT (the library checks struct_size).
 * @since 0.1
 */
typedef struct mulligan_decision {
  /** sizeof(mulligan_decision) as compiled by the caller. */
  uint32_t struct_size;
  /** A mulligan_action. */
  int action;
  /** The wait before the next attempt in ms; 0 when stopping. */
  double delay_ms;
  /** A mulligan_stop_reason (MULLIGAN_STOP_NONE when retrying). */
  int reason;
  /** A mulligan_classification of the outcome that led here. */
  int classification;
  /** The attempt this decision answers (1 for the first). */
  int attempt;
  /** 1 when delay_ms came from a Retry-After hint, else 0. */
  int from_retry_after;
} mulligan_decision;

/** Initialiser for mulligan_decision. @since 0.1 */
#define MULLIGAN_DECISION_INIT \
  { (uint32_t)sizeof(mulligan_decision), MULLIGAN_ACTION_STOP, 0.0, MULLIGAN_STOP_NONE, 0, 0, 0 }

/**
 * Starts one logical call whose first attempt starts now (read from `clock`).
 * @param out  OUT: the new session; NULL on failure. Free with
 *             mulligan_retry_session_destroy().
 * @param policy  the policy (not NULL). Borrowed: it must outlive the session.
 * @param clock  where `now` is read, or NULL for the system steady clock.
 *               Borrowed: it must outlive the session.
 * @param replay_safe  0 for a request that must not be repeated once sent
 *                     (POST/PATCH without an idempotency key): only failures
 *                     before any byte was sent are then retried. Else 1.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_session_begin(mulligan_retry_session **out,
                                              const mulligan_retry_policy *policy,
                                              const mulligan_clock *clock, int replay_safe);

/**
 * Records the outcome of the attempt that just finished (now = the session's
 * clock) and says what to do next. After a stop decision the session is
 * finished and further calls return the same stop decision.
 * @param session  the session.
 * @param outcome  the outcome; struct_size must be at least the 0.1 size.
 * @param out  OUT: the decision; struct_size must be at least the 0.1 size.
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT (NULL pointer, bad
 *         struct_size, unknown error_kind, http_status out of range, NaN
 *         retry_after_ms, request_sent not -1/0/1); the session is then
 *         unchanged.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_session_on_outcome(mulligan_retry_session *session,
                                                   const mulligan_outcome *outcome,
                                                   mulligan_decision *out);

/**
 * Returns the timeout for an attempt starting now: the policy's attempt
 * timeout trimmed to the time left before the deadline.
 * @param session  the session.
 * @param out  OUT: the timeout in ms (0 when the deadline has passed), or -1
 *             when the policy has neither an attempt timeout nor a deadline.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_session_attempt_timeout_ms(const mulligan_retry_session *session,
                                                           double *out);

/**
 * Returns the number of attempts whose outcome has been recorded.
 * @param session  the session.
 * @return the count; 0 (and the last error set) for a NULL session.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_session_attempts(const mulligan_retry_session *session);

/**
 * Destroys a session. NULL is a no-op.
 * @param session  the session, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_retry_session_destroy(mulligan_retry_session *session);

/* ========================================================================== */
/* Retry-After                                                                */
/* ========================================================================== */

/**
 * Parses a Retry-After field value (RFC 9110 section 10.2.3): delay-seconds
 * ("120") or an HTTP-date in IMF-fixdate, RFC 850 or asctime form, or in one
 * of the lenient date forms real servers send (urllib3 accepts them too):
 * "UTC", "UT" or "Z" for "GMT" and +hhmm/-hhmm offsets, any letter case, a
 * one-digit day, no day name, no seconds, runs of spaces and tabs,
 * "06-Nov-1994", a two-digit fixdate year. Other zone names (EST...) and
 * dates without a zone (asctime aside, which is GMT) are invalid; the
 * local time zone never matters. The list and its sources:
 * mulligan/retry/retry_after.h (ParseLenientHttpDate), docs/retry-after.md.
 * Leading and trailing spaces and tabs are ignored.
 * @param value  the field value (not NULL).
 * @param now_unix_ms  the current calendar time, in ms since the Unix epoch
 *                     (dates are measured from it).
 * @param out_delay_ms  OUT: the delay in ms; 0 for a date in the past or "0";
 *                      values too large saturate at MULLIGAN_DURATION_MAX_MS
 *                      (never negative or infinite). Set to -1 on failure.
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT when the value is not a
 *         valid Retry-After ("-5", "0.5", "abc", "") or a pointer is NULL;
 *         the caller then keeps its backoff delay.
 * Thread-safety: thread-safe (pure function).
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_after_parse(const char *value, int64_t now_unix_ms,
                                            double *out_delay_ms);

/* ========================================================================== */
/* Retry call: the retry loop with a callback                                 */
/* ========================================================================== */

/**
 * Options of mulligan_retry_call(). A caller-initialised struct with
 * struct_size (libgit2's versioned option structs) rather than another
 * handle: every field is optional and borrowed, nothing needs validating
 * beyond NULL checks. Initialise with MULLIGAN_RETRY_CALL_OPTIONS_INIT.
 * @since 0.1
 */
typedef struct mulligan_retry_call_options {
  /** sizeof(mulligan_retry_call_options) as compiled by the caller. */
  uint32_t struct_size;
  /** The clock `now` is read from and waits go through; NULL for the system
   *  clock (real sleeps). A fake clock is advanced instead of sleeping. */
  mulligan_clock *clock;
  /** A breaker asked before every attempt, or NULL. A refusal ends the call
   *  with MULLIGAN_E_CIRCUIT_OPEN (never retried). By default one result is
   *  recorded per call: the last attempt's permit records the final result,
   *  earlier attempts' permits are dropped, except a half-open probe's,
   *  which records its own result at once (so a failed probe reopens the
   *  breaker and the retry is refused). */
  mulligan_breaker *breaker;
  /** DEPRECATED spelling of breaker_per_attempt (below), kept for callers
   *  of 0.1: non-zero records every attempt's result, as breaker_per_attempt
   *  does. Setting either field turns it on. Default 0. */
  int breaker_record_each_attempt MULLIGAN_DEPRECATED_FIELD("use breaker_per_attempt");
  /** The name the call reports its metrics and events under (see
   *  mulligan_metrics.h), e.g. "payments"; NULL (the default) reports
   *  nothing. Borrowed for the duration of the call; must not be empty.
   *  Read only when struct_size covers it: callers compiled before this
   *  field existed pass a smaller struct_size and report nothing. */
  const char *metrics_name;
  /** 1: record every attempt's result in the breaker instead of one result
   *  per call (so with failure_threshold 3 an always-failing call is cut
   *  off by the breaker after its 3rd attempt). Default 0. The one name of
   *  this switch in every layer (mulligan_pipeline_options_set_breaker_per_
   *  attempt(), mulligan_http_options_set_breaker(), Python's
   *  breaker_per_attempt). Read only when struct_size covers it.
   *  @since 0.2 */
  int breaker_per_attempt;
} mulligan_retry_call_options;

/** Initialiser for mulligan_retry_call_options. @since 0.1 */
#define MULLIGAN_RETRY_CALL_OPTIONS_INIT \
  { (uint32_t)sizeof(mulligan_retry_call_options), NULL, NULL, 0, NULL, 0 }

/**
 * What mulligan_retry_call() did. Initialise with MULLIGAN_RETRY_CALL_INFO_INIT.
 * @since 0.1
 */
typedef struct mulligan_retry_call_info {
  /** sizeof(mulligan_retry_call_info) as compiled by the caller. */
  uint32_t struct_size;
  /** Attempts made (0 when the breaker refused the first). */
  int attempts;
  /** A mulligan_stop_reason (MULLIGAN_STOP_NONE when the breaker refused). */
  int stop_reason;
  /** Total time waited between attempts, ms. */
  double total_delay_ms;
  /** From the start of the first attempt to the end of the last, ms. */
  double elapsed_ms;
  /** 1 when the breaker refused an attempt. */
  int circuit_open;
  /** With circuit_open: ms until the breaker's next probe. */
  double retry_in_ms;
  /** The decision that ended the loop (action STOP), if any attempt ran. */
  mulligan_decision last_decision;
} mulligan_retry_call_info;

/** Initialiser for mulligan_retry_call_info. @since 0.1 */
#define MULLIGAN_RETRY_CALL_INFO_INIT                                          \
  { (uint32_t)sizeof(mulligan_retry_call_info), 0, MULLIGAN_STOP_NONE, 0.0, 0.0, 0, 0.0, \
    MULLIGAN_DECISION_INIT }

/**
 * Runs `attempt` until it succeeds or the policy stops, sleeping between
 * attempts through the clock: a thin loop over the pipeline's call (the
 * same one mulligan_call_admit() / mulligan_call_record() step, see
 * mulligan_pipeline.h), made of `policy` and opts->breaker.
 *
 * Each call of `attempt` gets the attempt number (1 for the first) and an
 * outcome pre-set to MULLIGAN_OUTCOME_INIT (success) to fill in, and returns
 * 0; a non-zero return aborts the loop at once with MULLIGAN_E_CALLBACK (a
 * breaker permit it held is recorded as ignored).
 *
 * With opts->metrics_name set, the call reports into the metrics of that
 * name (mulligan_metrics_get()): one call, its attempts, each retry by
 * reason, and one success or one failure (an aborted call, an invalid
 * outcome and a breaker refusal count as failures), and emits the events
 * attempt_started, attempt_failed, retry_scheduled, succeeded / gave_up to
 * the listeners of mulligan_event_listener_add() (since 0.2, as every front
 * door of the pipeline, attempt_started also precedes an attempt the breaker
 * then refuses). An aborted attempt is not counted among the attempts made.
 * The name is looked up once per call (a hash look-up under a mutex).
 *
 * @param policy  the policy (not NULL).
 * @param attempt  the callback (not NULL).
 * @param user_data  passed to it.
 * @param opts  may be NULL (system clock, no breaker, no metrics).
 * @param info  OUT, may be NULL: what happened.
 * @return MULLIGAN_OK (the last attempt succeeded);
 *         MULLIGAN_E_RETRIES_EXHAUSTED (gave up on a retryable outcome:
 *         attempts exhausted, Retry-After too long, not replay-safe);
 *         MULLIGAN_E_DEADLINE_EXCEEDED; MULLIGAN_E_UNAVAILABLE (a terminal
 *         outcome, not retried); MULLIGAN_E_CIRCUIT_OPEN (the breaker refused;
 *         info->retry_in_ms says for how long); MULLIGAN_E_CALLBACK;
 *         MULLIGAN_E_INVALID_ARGUMENT (including an invalid outcome and an
 *         empty metrics_name).
 * Thread-safety: reentrant; policy and breaker may be shared.
 * @since 0.1
 */
MULLIGAN_API int mulligan_retry_call(const mulligan_retry_policy *policy,
                                     int (*attempt)(int attempt_number, mulligan_outcome *out,
                                                    void *user_data),
                                     void *user_data, const mulligan_retry_call_options *opts,
                                     mulligan_retry_call_info *info);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_RETRY_H_ */
