/* mulligan.h — the stable C ABI of mulligan: retries with backoff and jitter,
 * Retry-After, deadlines and a resilient HTTP client.
 *
 * This header is the whole public C interface. Anything not declared here (or
 * in mulligan_export.h / mulligan_version.h) is private and may change at any
 * time; the C++ headers of the core are NOT part of the promised ABI.
 *
 * Conventions (shared/STYLE.md section 3):
 *   - Objects are opaque handles with a mulligan_<object>_create() /
 *     mulligan_<object>_destroy() pair; destroy(NULL) is a no-op.
 *   - Every fallible function returns an int holding a mulligan_status:
 *     MULLIGAN_OK (0) or a positive MULLIGAN_E_* code. On failure,
 *     mulligan_last_error() describes what went wrong (thread-local). A lone
 *     out-parameter is named `out` and is set to NULL/0 on failure.
 *   - Getters that cannot fail return their value directly; given a NULL
 *     handle they return 0 / NULL and set the last error.
 *   - Durations are `double` milliseconds (names end in `_ms`). NaN, infinite
 *     and negative durations are rejected with MULLIGAN_E_INVALID_ARGUMENT
 *     unless a function says otherwise; finite values too large for the
 *     engine's clock (about 292 years) saturate at MULLIGAN_DURATION_MAX_MS.
 *   - Booleans are int: 0 is false, any other value true.
 *   - Strings are UTF-8, NUL-terminated. Strings the library returns are
 *     borrowed; each function says how long they stay valid. Nothing returned
 *     by this API must be passed to free().
 *   - No C++ exception ever crosses this interface.
 *   - No global initialisation is required (libcurl is set up once inside).
 *
 * The retry engine decides, the caller acts: a mulligan_retry_session never
 * sleeps; it answers each attempt's outcome with "retry after delay_ms" or
 * "stop". See mulligan_retry_session_on_outcome() for the loop.
 *
 * Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_H_
#define MULLIGAN_H_

#include <stddef.h>
#include <stdint.h>

#include "mulligan_export.h"
#include "mulligan_version.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ========================================================================== */
/* Status codes and errors                                                    */
/* ========================================================================== */

/**
 * The result codes of every fallible function. Values are pinned: they are
 * appended only, never renumbered or reused (they equal mulligan::StatusCode).
 *
 * @since 0.1
 */
typedef enum mulligan_status {
  /** Success. */
  MULLIGAN_OK = 0,
  /** The caller passed a bad value (NULL handle, NaN delay, malformed URL).
   *  Retrying the same call will not help. */
  MULLIGAN_E_INVALID_ARGUMENT = 1,
  /** An allocation failed. */
  MULLIGAN_E_NO_MEMORY = 2,
  /** A bug or an unexpected failure inside mulligan or a library it uses. */
  MULLIGAN_E_INTERNAL = 3,
  /** A user callback returned non-zero and the operation was aborted. */
  MULLIGAN_E_CALLBACK = 4,
  /** Every attempt failed with a retryable error and the policy gave up. */
  MULLIGAN_E_RETRIES_EXHAUSTED = 5,
  /** The call's deadline passed (or the next wait would have crossed it). */
  MULLIGAN_E_DEADLINE_EXCEEDED = 6,
  /** A circuit breaker refused the call (reserved for the breaker API). */
  MULLIGAN_E_CIRCUIT_OPEN = 7,
  /** The dependency was unavailable in a way that was not retried. */
  MULLIGAN_E_UNAVAILABLE = 8,
  /** Transport failure: connection refused or reset, DNS failure, TLS error. */
  MULLIGAN_E_TRANSPORT = 9,
  /** An attempt did not finish within its timeout. */
  MULLIGAN_E_TIMEOUT = 10
} mulligan_status;

/**
 * Returns static text naming a status code ("ok", "invalid argument", ...).
 *
 * @param status  any int; unknown values give "unknown status".
 * @return never NULL; static storage, valid for the life of the process.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_status_str(int status);

/**
 * Returns a description of the most recent failed mulligan call on the
 * calling thread, e.g. "base_delay_ms must be a finite number >= 0, got nan".
 *
 * Read it right after a function returned a non-OK code (or a getter returned
 * its NULL/0 failure value). Successful calls do not clear it.
 *
 * @return never NULL (an empty string before any failure). Owned by the
 *         library, thread-local; valid until the next mulligan call on this
 *         thread.
 * Thread-safety: thread-safe (each thread has its own message).
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_last_error(void);

/* ========================================================================== */
/* Version                                                                    */
/* ========================================================================== */

/**
 * Returns the version of the loaded library as major*10000 + minor*100 +
 * patch; compare with MULLIGAN_VERSION_NUMBER from the headers.
 *
 * @return the version number, e.g. 100 for 0.1.0.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_version_number(void);

/**
 * Returns the version of the loaded library as "major.minor.patch".
 *
 * @return never NULL; static storage.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_version_string(void);

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
  MULLIGAN_ERROR_TERMINAL = 10
} mulligan_error_kind;

/**
 * Why a retry session stopped. Values are pinned; append only.
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
  MULLIGAN_STOP_NOT_REPLAY_SAFE = 6
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
 * Returns a stable snake_case name of a stop reason ("attempts_exhausted").
 * @param reason  any int; unknown values give "unknown".
 * @return never NULL; static storage.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_stop_reason_str(int reason);

/**
 * The largest duration the engine represents, in milliseconds (INT64_MAX
 * nanoseconds, about 292 years). Huge durations saturate at this value; they
 * never overflow or turn negative.
 * @since 0.1
 */
#define MULLIGAN_DURATION_MAX_MS 9223372036854.775807

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
 * reset, DNS failure, connect timeout, timeout, transport).
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
/* Clocks                                                                     */
/* ========================================================================== */

/**
 * A source of monotonic time for retry sessions. Wherever a
 * `const mulligan_clock *` is accepted, NULL means the system's monotonic
 * (steady) clock. The only clock one can create is a fake one, which moves
 * only when advanced: tests of a retry loop then run instantly.
 *
 * Thread-safety: thread-safe (reads and advances are atomic).
 * @since 0.1
 */
typedef struct mulligan_clock mulligan_clock;

/**
 * Creates a fake clock. Its monotonic reading starts at an arbitrary fixed
 * point and its calendar reading at 2024-01-01T00:00:00Z.
 * @param out  OUT: the new clock; NULL on failure. Free with
 *             mulligan_clock_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_clock_create_fake(mulligan_clock **out);

/**
 * Moves a fake clock forward.
 * @param clock  a fake clock (not NULL).
 * @param ms  finite, >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_clock_advance_ms(mulligan_clock *clock, double ms);

/**
 * Returns a clock's monotonic reading in milliseconds since its (arbitrary)
 * epoch; only differences between readings are meaningful.
 * @param clock  a clock, or NULL for the system steady clock.
 * @return the reading.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API double mulligan_clock_now_ms(const mulligan_clock *clock);

/**
 * Destroys a clock. NULL is a no-op.
 * REQUIRES: no session using it is still in use.
 * @param clock  the clock, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_clock_destroy(mulligan_clock *clock);

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
 * ("120") or an HTTP-date in IMF-fixdate, RFC 850 or asctime form. Leading
 * and trailing spaces and tabs are ignored.
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
/* HTTP client                                                                */
/* ========================================================================== */

/**
 * A resilient HTTP client on libcurl: retries per its policy, honours
 * Retry-After, trims each attempt to the deadline, and applies the method
 * rules (GET, HEAD, OPTIONS, TRACE, PUT, DELETE are retried; POST and PATCH
 * only with an idempotency key or when nothing was sent). Connections are
 * kept alive between attempts and calls. Waits are real sleeps.
 *
 * Thread-safety: mulligan_http_request() may be called from many threads at
 * once on one client.
 * @since 0.1
 */
typedef struct mulligan_http_client mulligan_http_client;

/**
 * The result of one mulligan_http_request() call: the last attempt's status,
 * headers and body plus what the retry loop did.
 *
 * Thread-safety: immutable; safe to read from many threads.
 * @since 0.1
 */
typedef struct mulligan_http_response mulligan_http_response;

/**
 * Creates an HTTP client (attempt timeout 30000 ms unless the policy sets
 * one, connect timeout 10000 ms, TLS verification on, User-Agent "mulligan").
 * @param out  OUT: the new client; NULL on failure. Free with
 *             mulligan_http_client_destroy().
 * @param default_policy  the retry policy of every request, copied (it may be
 *                        destroyed afterwards); NULL for the defaults.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY,
 *         MULLIGAN_E_INTERNAL (libcurl could not be initialised).
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_client_create(mulligan_http_client **out,
                                             const mulligan_retry_policy *default_policy);

/**
 * Destroys a client and closes its connections. NULL is a no-op.
 * REQUIRES: no request is running on it. Responses stay valid.
 * @param client  the client, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_http_client_destroy(mulligan_http_client *client);

/**
 * Sends a request, retrying per the client's policy, and blocks until the
 * retry loop stops.
 *
 * A response that arrived counts as success even when its status is an error:
 * after retries give up on a 503 the call returns MULLIGAN_OK with status 503
 * and stop reason MULLIGAN_STOP_ATTEMPTS_EXHAUSTED. When the LAST attempt got
 * no response, the call returns MULLIGAN_E_TRANSPORT, MULLIGAN_E_TIMEOUT or
 * MULLIGAN_E_DEADLINE_EXCEEDED and STILL sets *out to a response with status
 * 0 whose error kind, attempts, elapsed time and stop reason say what
 * happened. *out is NULL only when no attempt ran (invalid arguments, no
 * memory).
 *
 * @param client  the client.
 * @param method  an HTTP method token ("GET", "POST", ...); NULL for "GET".
 * @param url  an absolute http:// or https:// URL (not NULL).
 * @param headers  `header_count` strings "Name: value"; copied. May be NULL
 *                 when header_count is 0.
 * @param header_count  number of headers.
 * @param body  `body_len` bytes sent as the body; copied. May be NULL when
 *              body_len is 0.
 * @param body_len  body length in bytes.
 * @param idempotency_key  sent as Idempotency-Key on every attempt, making a
 *                         POST or PATCH replay-safe; NULL for none. Must be
 *                         non-empty printable ASCII.
 * @param out  OUT: the response (see above); free with
 *             mulligan_http_response_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (bad argument, no attempt
 *         made), MULLIGAN_E_TRANSPORT, MULLIGAN_E_TIMEOUT,
 *         MULLIGAN_E_DEADLINE_EXCEEDED, MULLIGAN_E_NO_MEMORY,
 *         MULLIGAN_E_INTERNAL.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_request(mulligan_http_client *client, const char *method,
                                       const char *url, const char *const *headers,
                                       size_t header_count, const void *body, size_t body_len,
                                       const char *idempotency_key,
                                       mulligan_http_response **out);

/**
 * Returns the final HTTP status (the last attempt's), or 0 when the last
 * attempt got no response (or resp is NULL).
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_response_status(const mulligan_http_response *resp);

/**
 * Returns the body of the last response.
 * @param resp  the response.
 * @param len  OUT, may be NULL: the body length in bytes.
 * @return the bytes, followed by a NUL that len does not count (the body may
 *         itself contain NULs); never NULL for a valid response. Borrowed:
 *         valid until mulligan_http_response_destroy(resp).
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_http_response_body(const mulligan_http_response *resp,
                                                     size_t *len);

/**
 * Returns the value of the first response header named `name`
 * (case-insensitive), or NULL when there is none.
 * @param resp  the response.
 * @param name  the field name.
 * @return borrowed: valid until mulligan_http_response_destroy(resp).
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_http_response_header(const mulligan_http_response *resp,
                                                       const char *name);

/**
 * Returns the number of response header fields.
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_http_response_header_count(const mulligan_http_response *resp);

/**
 * Returns a response header field by position, in received order.
 * @param resp  the response.
 * @param index  in [0, mulligan_http_response_header_count()).
 * @param name  OUT: the field name as received; borrowed like the body.
 * @param value  OUT: the field value; borrowed like the body.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (index out of range or
 *         a NULL pointer; the outputs are then NULL).
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_response_header_at(const mulligan_http_response *resp,
                                                  size_t index, const char **name,
                                                  const char **value);

/**
 * Returns the number of attempts made (1 when the first succeeded).
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_response_attempts(const mulligan_http_response *resp);

/**
 * Returns the time from the start of the first attempt to the end of the
 * last, in ms.
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API double mulligan_http_response_elapsed_ms(const mulligan_http_response *resp);

/**
 * Returns the last attempt's mulligan_error_kind (MULLIGAN_ERROR_NONE when it
 * got a response).
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_response_error_kind(const mulligan_http_response *resp);

/**
 * Returns why the retry loop stopped (a mulligan_stop_reason).
 * @param resp  the response.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_response_stop_reason(const mulligan_http_response *resp);

/**
 * Returns the idempotency key sent with every attempt, or NULL when none was.
 * @param resp  the response.
 * @return borrowed: valid until mulligan_http_response_destroy(resp).
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_http_response_idempotency_key(
    const mulligan_http_response *resp);

/**
 * Destroys a response. NULL is a no-op.
 * @param resp  the response, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_http_response_destroy(mulligan_http_response *resp);

/**
 * The size of a buffer that holds an idempotency key and its NUL (a UUID in
 * canonical form is 36 characters).
 * @since 0.1
 */
#define MULLIGAN_IDEMPOTENCY_KEY_SIZE 37

/**
 * Writes a fresh idempotency key: a random (version 4) UUID in canonical
 * lower-case form, drawn from the operating system's CSPRNG.
 * @param buf  OUT: receives the key and a NUL.
 * @param buf_size  at least MULLIGAN_IDEMPOTENCY_KEY_SIZE.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL or short buffer).
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_key_new(char *buf, size_t buf_size);

/* -------------------------------------------------------------------------- */
/* HTTP client options (mulligan_http_client_create_v2)                       */
/* -------------------------------------------------------------------------- */

/**
 * Settings of an HTTP client beyond its retry policy, set one by one and
 * validated by mulligan_http_client_create_v2(), which copies them (the
 * options may be destroyed or reused afterwards). Defaults: connect timeout
 * 10000 ms, attempt timeout 30000 ms (when the policy sets none), TLS
 * verification on with the system CA bundle, User-Agent "mulligan",
 * redirects not followed (at most 10 when followed), no strict mode, no
 * on_retry callback, no circuit breakers. Proxies always come from the
 * environment (http_proxy, https_proxy, no_proxy), as libcurl reads them.
 *
 * Thread-safety: not thread-safe; fill in on one thread.
 * @since 0.1
 */
typedef struct mulligan_http_options mulligan_http_options;

/**
 * Creates options holding every default.
 * @param out  OUT: the options; free with mulligan_http_options_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_create(mulligan_http_options **out);

/**
 * Destroys options (releasing their on_retry user_data reference). NULL is a
 * no-op.
 * @param opts  the options, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_http_options_destroy(mulligan_http_options *opts);

/**
 * Sets the time allowed to establish a connection, in ms (> 0).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_connect_timeout_ms(mulligan_http_options *opts,
                                                              int64_t ms);

/**
 * Sets the bound on one attempt when the policy sets no attempt timeout, in
 * ms (> 0). Either way it is trimmed to the time left before the deadline.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_attempt_timeout_ms(mulligan_http_options *opts,
                                                              int64_t ms);

/**
 * Turns TLS peer and host name verification on (1, the default) or off (0).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_verify_tls(mulligan_http_options *opts, int verify);

/**
 * Sets a PEM file of CA certificates used instead of the system bundle;
 * NULL restores the default. The path is copied.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_ca_bundle(mulligan_http_options *opts,
                                                     const char *path);

/**
 * Sets the User-Agent sent when a request has none (copied; no CR or LF).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_user_agent(mulligan_http_options *opts,
                                                      const char *user_agent);

/**
 * Follows 3xx redirects (follow = 1) up to max_redirects (0 to 1000; more is
 * a terminal failure, MULLIGAN_ERROR_TERMINAL), or returns them as responses
 * (follow = 0, the default). Only http and https are followed.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_redirects(mulligan_http_options *opts, int follow,
                                                     int max_redirects);

/**
 * Strict mode (1): only GET, HEAD and OPTIONS are replayed once bytes were
 * sent; failures before anything was sent are still retried. Default 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_strict_methods(mulligan_http_options *opts,
                                                          int strict);

/**
 * Guards each origin (scheme://host:port) with a circuit breaker that opens
 * after `failure_threshold` consecutive failures (0 turns breakers off, the
 * default) and admits a probe after `reset_timeout_ms`. The breaker is checked
 * before every attempt; an open one ends the call with
 * MULLIGAN_E_CIRCUIT_OPEN. per_attempt = 0 records one result per call (after
 * its retries), 1 records every attempt.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_breaker(mulligan_http_options *opts,
                                                   int failure_threshold,
                                                   int64_t reset_timeout_ms, int per_attempt);

/**
 * What an on_retry callback is told before each wait. Grows only at the end;
 * read struct_size before any field added after 0.1.
 * @since 0.1
 */
typedef struct mulligan_http_retry_event {
  /** sizeof(mulligan_http_retry_event) of the library that filled it. */
  uint32_t struct_size;
  /** The attempt that just failed (1 for the first). */
  int attempt;
  /** The wait before the next attempt, in ms. */
  double delay_ms;
  /** The failure's mulligan_error_kind, MULLIGAN_ERROR_NONE for a response. */
  int error_kind;
  /** The response's HTTP status, or 0. */
  int http_status;
  /** 1 when the delay came from a Retry-After header. */
  int from_retry_after;
} mulligan_http_retry_event;

/**
 * Called before each wait between attempts, on the requesting thread. Return
 * 0 to go on; any other value stops the retries at once and the request
 * returns MULLIGAN_E_CALLBACK. Must not longjmp or throw.
 * @since 0.1
 */
typedef int (*mulligan_http_retry_fn)(const mulligan_http_retry_event *event, void *user_data);

/**
 * Sets the on_retry callback (NULL removes it). `free_user_data`, when not
 * NULL, is called with `user_data` once neither these options nor any client
 * created from them needs it any more.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_options_set_on_retry(mulligan_http_options *opts,
                                                    mulligan_http_retry_fn fn, void *user_data,
                                                    void (*free_user_data)(void *));

/**
 * Creates an HTTP client like mulligan_http_client_create(), with `opts`.
 * @param out  OUT: the new client; NULL on failure.
 * @param default_policy  the retry policy of every request, copied; NULL for
 *                        the defaults.
 * @param opts  the options, copied; NULL for the defaults.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY,
 *         MULLIGAN_E_INTERNAL.
 * @since 0.1
 */
MULLIGAN_API int mulligan_http_client_create_v2(mulligan_http_client **out,
                                                const mulligan_retry_policy *default_policy,
                                                const mulligan_http_options *opts);

/* ========================================================================== */
/* Idempotency store (server side)                                            */
/* ========================================================================== */

/*
 * The server side of idempotency keys (DESIGN.md section 4, the IETF draft
 * "The Idempotency-Key HTTP Header Field", Stripe's behaviour). For each
 * request carrying a key:
 *
 *   mulligan_idempotency_store_reserve(store, user, key, fp, fp_len, &r);
 *   switch (mulligan_idempotency_reservation_state(r)) {
 *     case MULLIGAN_IDEMPOTENCY_RESERVED:  run the handler, then
 *         mulligan_idempotency_store_complete(store, r, status, ...) on success
 *         or mulligan_idempotency_store_release(store, r) on failure;
 *     case MULLIGAN_IDEMPOTENCY_REPLAY:    send the stored response
 *         (mulligan_idempotency_reservation_status/_header_at/_body);
 *     case MULLIGAN_IDEMPOTENCY_IN_FLIGHT: answer 409 with Retry-After
 *         (mulligan_idempotency_reservation_retry_after_ms);
 *     case MULLIGAN_IDEMPOTENCY_FINGERPRINT_MISMATCH: answer 422;
 *   }
 *   mulligan_idempotency_reservation_destroy(r);
 */

/**
 * What a reservation found. Values are pinned; append only.
 * @since 0.1
 */
typedef enum mulligan_idempotency_state {
  /** The key was free: run the handler, then complete or release. */
  MULLIGAN_IDEMPOTENCY_RESERVED = 0,
  /** A response is stored for this key and fingerprint: send it. */
  MULLIGAN_IDEMPOTENCY_REPLAY = 1,
  /** Another request holds the key and has not finished: answer 409. */
  MULLIGAN_IDEMPOTENCY_IN_FLIGHT = 2,
  /** The key was used with a different request fingerprint: answer 422. */
  MULLIGAN_IDEMPOTENCY_FINGERPRINT_MISMATCH = 3
} mulligan_idempotency_state;

/**
 * Returns "reserved", "replay", "in_flight" or "fingerprint_mismatch".
 * @param state  any int; unknown values give "unknown".
 * @return never NULL; static storage.
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_idempotency_state_str(int state);

/**
 * The longest key accepted by default (Stripe's limit).
 * @since 0.1
 */
#define MULLIGAN_IDEMPOTENCY_MAX_KEY_LENGTH 255

/**
 * Parses an Idempotency-Key header field value into the key: a Structured
 * Fields String (RFC 8941 section 3.3.3: "...", printable ASCII with \" and
 * \\ escapes) or, for Stripe-style clients (mulligan's own client sends a
 * bare UUID), a bare value of printable ASCII without quotes or backslashes.
 * Surrounding spaces are ignored. A server answers 400 when this fails.
 * @param value  the field value, NUL-terminated (not NULL).
 * @param max_length  the longest key accepted; 0 means
 *                    MULLIGAN_IDEMPOTENCY_MAX_KEY_LENGTH.
 * @param buf  OUT: receives the key and a NUL.
 * @param buf_size  strlen(value) + 1 always suffices.
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT (malformed or too long
 *         key, NULL argument, short buffer; mulligan_last_error() says which).
 * Thread-safety: thread-safe.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_key_parse(const char *value, size_t max_length, char *buf,
                                                size_t buf_size);

/**
 * A mutable bag of store settings. Defaults: ttl 86400000 ms (24 h), lease
 * 60000 ms, in-flight Retry-After hint at most 1000 ms, max 100000 entries,
 * max 268435456 bytes (256 MiB), max key length 255, 16 shards.
 *
 * Each setter validates its value and returns MULLIGAN_OK or
 * MULLIGAN_E_INVALID_ARGUMENT (options unchanged).
 * Thread-safety: not thread-safe; use from one thread at a time.
 * @since 0.1
 */
typedef struct mulligan_idempotency_options mulligan_idempotency_options;

/**
 * Creates store options holding every default.
 * @param out  OUT: the new options; NULL on failure. Free with
 *             mulligan_idempotency_options_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_create(mulligan_idempotency_options **out);

/**
 * Destroys options. NULL is a no-op.
 * @param opts  the options, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_idempotency_options_destroy(mulligan_idempotency_options *opts);

/**
 * Sets how long a completed response is replayed (default 86400000 ms).
 * @param opts  the options.
 * @param ttl_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_ttl_ms(mulligan_idempotency_options *opts,
                                                         double ttl_ms);

/**
 * Sets how long a reservation blocks its key before another request may take
 * it over, the handler being presumed dead (default 60000 ms).
 * @param opts  the options.
 * @param lease_ms  finite, > 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_lease_ms(mulligan_idempotency_options *opts,
                                                           double lease_ms);

/**
 * Sets the cap of the Retry-After hint of MULLIGAN_IDEMPOTENCY_IN_FLIGHT (the
 * hint is the lease's remaining time, at most this; default 1000 ms).
 * @param opts  the options.
 * @param retry_after_ms  finite, >= 0.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_in_flight_retry_after_ms(
    mulligan_idempotency_options *opts, double retry_after_ms);

/**
 * Sets the bound on entries, in flight and completed (default 100000).
 * Completed entries are evicted oldest first; in-flight ones never.
 * @param opts  the options.
 * @param max_entries  >= 1.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_max_entries(mulligan_idempotency_options *opts,
                                                              size_t max_entries);

/**
 * Sets the bound on accounted bytes: keys, fingerprints and stored responses
 * plus a fixed per-entry overhead (default 268435456).
 * @param opts  the options.
 * @param max_bytes  >= 1.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_max_bytes(mulligan_idempotency_options *opts,
                                                            size_t max_bytes);

/**
 * Sets the longest key reserve accepts (default 255).
 * @param opts  the options.
 * @param max_key_length  >= 1.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_max_key_length(
    mulligan_idempotency_options *opts, size_t max_key_length);

/**
 * Sets the number of independently locked shards (default 16). Both bounds
 * are split evenly between shards and enforced per shard.
 * @param opts  the options.
 * @param shards  in [1, 1024].
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_options_set_shards(mulligan_idempotency_options *opts,
                                                         int shards);

/**
 * A bounded, internally synchronised record of idempotency keys.
 * Thread-safety: thread-safe; every function may be called from many threads.
 * @since 0.1
 */
typedef struct mulligan_idempotency_store mulligan_idempotency_store;

/**
 * The result of one reservation: its state, and the lease (RESERVED), the
 * stored response (REPLAY) or the Retry-After hint (IN_FLIGHT).
 * Thread-safety: immutable apart from the lease that complete/release
 * consume; do not complete or release one reservation from two threads.
 * @since 0.1
 */
typedef struct mulligan_idempotency_reservation mulligan_idempotency_reservation;

/**
 * Creates a store.
 * @param opts  the options, or NULL for every default. May be destroyed
 *              right after this call.
 * @param clock  the clock the store reads for leases and ttls, or NULL for
 *               the system's monotonic clock. Borrowed: must outlive the store.
 * @param out  OUT: the new store; NULL on failure. Free with
 *             mulligan_idempotency_store_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT, MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_store_create(const mulligan_idempotency_options *opts,
                                                   const mulligan_clock *clock,
                                                   mulligan_idempotency_store **out);

/**
 * Destroys a store and every stored response. NULL is a no-op.
 * Reservations made from it must not be completed or released afterwards
 * (they may still be read and destroyed).
 * @param store  the store, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_idempotency_store_destroy(mulligan_idempotency_store *store);

/**
 * Looks up (scope, key) and reserves it when free.
 * @param store  the store.
 * @param scope  who the key belongs to (e.g. the authenticated principal), so
 *               that one user's key never replays another's response; NULL
 *               means "" (one shared scope).
 * @param key  the parsed key (see mulligan_idempotency_key_parse), not NULL.
 * @param fingerprint  bytes identifying the request (method, path, body
 *                     digest), compared byte for byte; NULL only with len 0.
 * @param fingerprint_len  its length.
 * @param out  OUT: the reservation; NULL on failure. Free with
 *             mulligan_idempotency_reservation_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (bad key or argument),
 *         MULLIGAN_E_UNAVAILABLE (a new key and the store is full of
 *         in-flight entries: answer 503), MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_store_reserve(mulligan_idempotency_store *store,
                                                    const char *scope, const char *key,
                                                    const void *fingerprint,
                                                    size_t fingerprint_len,
                                                    mulligan_idempotency_reservation **out);

/**
 * Stores the handler's response for the reservation's key (ttl from now) and
 * frees the key for replays.
 * @param store  the store that made the reservation.
 * @param reservation  a MULLIGAN_IDEMPOTENCY_RESERVED reservation.
 * @param status  the HTTP status, in [100, 599].
 * @param header_names  `header_count` NUL-terminated names (NULL when 0).
 * @param header_values  `header_count` NUL-terminated values (NULL when 0).
 * @param header_count  number of header fields.
 * @param body  the body bytes (NULL only with body_len 0). Copied.
 * @param body_len  its length.
 * @return MULLIGAN_OK; MULLIGAN_E_INVALID_ARGUMENT when the lease is not held
 *         any more (already completed or released, or expired and taken
 *         over: nothing is stored) or an argument is bad: a status outside
 *         [100, 599], a header name that is not an RFC 9110 token, or a
 *         header value containing CR, LF or NUL (then the lease stays held:
 *         release the reservation, or complete it again with a valid
 *         response); MULLIGAN_E_UNAVAILABLE when the response does not fit the
 *         byte budget (the key is released); MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_store_complete(
    mulligan_idempotency_store *store, mulligan_idempotency_reservation *reservation, int status,
    const char *const *header_names, const char *const *header_values, size_t header_count,
    const void *body, size_t body_len);

/**
 * Frees the reservation's key without storing anything (the handler failed),
 * so that a retry with the same key runs the handler.
 * @param store  the store that made the reservation.
 * @param reservation  a MULLIGAN_IDEMPOTENCY_RESERVED reservation.
 * @return MULLIGAN_OK, or MULLIGAN_E_INVALID_ARGUMENT when the lease is not
 *         held any more.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_store_release(mulligan_idempotency_store *store,
                                                    mulligan_idempotency_reservation *reservation);

/**
 * Removes every expired entry now (the store also sweeps lazily).
 * @param store  the store.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL store).
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_store_sweep(mulligan_idempotency_store *store);

/**
 * Returns the number of entries (in flight and completed); 0 for NULL.
 * @param store  the store.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_idempotency_store_entries(const mulligan_idempotency_store *store);

/**
 * Returns the number of in-flight entries; 0 for NULL.
 * @param store  the store.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_idempotency_store_in_flight(const mulligan_idempotency_store *store);

/**
 * Returns the accounted bytes (never above the max_bytes option); 0 for NULL.
 * @param store  the store.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_idempotency_store_bytes(const mulligan_idempotency_store *store);

/**
 * Returns the reservation's mulligan_idempotency_state, or -1 for NULL.
 * @param reservation  the reservation.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_reservation_state(
    const mulligan_idempotency_reservation *reservation);

/**
 * Returns the Retry-After hint of an IN_FLIGHT reservation in ms (0 for other
 * states and NULL). Round up to whole seconds for the header.
 * @param reservation  the reservation.
 * @since 0.1
 */
MULLIGAN_API double mulligan_idempotency_reservation_retry_after_ms(
    const mulligan_idempotency_reservation *reservation);

/**
 * Returns the stored HTTP status of a REPLAY reservation (0 otherwise).
 * @param reservation  the reservation.
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_reservation_status(
    const mulligan_idempotency_reservation *reservation);

/**
 * Returns the stored body of a REPLAY reservation (NULL otherwise).
 * @param reservation  the reservation.
 * @param len  OUT (may be NULL): the body's length in bytes (0 otherwise).
 * @return borrowed, NUL-terminated (the body may itself hold NULs): valid
 *         until mulligan_idempotency_reservation_destroy(reservation), even
 *         if the entry is evicted meanwhile.
 * @since 0.1
 */
MULLIGAN_API const char *mulligan_idempotency_reservation_body(
    const mulligan_idempotency_reservation *reservation, size_t *len);

/**
 * Returns the number of stored header fields of a REPLAY reservation.
 * @param reservation  the reservation.
 * @since 0.1
 */
MULLIGAN_API size_t mulligan_idempotency_reservation_header_count(
    const mulligan_idempotency_reservation *reservation);

/**
 * Returns a stored header field of a REPLAY reservation by position.
 * @param reservation  the reservation.
 * @param index  < mulligan_idempotency_reservation_header_count().
 * @param name  OUT: the field name (borrowed, like the body).
 * @param value  OUT: the field value (borrowed, like the body).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (NULL argument, index
 *         out of range).
 * @since 0.1
 */
MULLIGAN_API int mulligan_idempotency_reservation_header_at(
    const mulligan_idempotency_reservation *reservation, size_t index, const char **name,
    const char **value);

/**
 * Destroys a reservation. NULL is a no-op. Destroying a RESERVED reservation
 * that was neither completed nor released leaves its key in flight until the
 * lease runs out; release it first.
 * @param reservation  the reservation, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_idempotency_reservation_destroy(
    mulligan_idempotency_reservation *reservation);

/* ========================================================================== */
/* Configuration: named policies from a file                                  */
/* ========================================================================== */

/**
 * A registry of named retry policies, circuit breaker settings and client
 * settings, loaded from a mulligan configuration file (JSON; the format is
 * docs/configuration.md, the editor schema schema/mulligan-config.schema.json)
 * or from a gRPC service config (methodConfig[].retryPolicy, gRFC A6).
 *
 * A load or reload replaces everything at once; a failed one keeps the
 * previous configuration. Policies handed out are independent copies, so a
 * call running on one keeps it across reloads.
 *
 * Environment overrides are applied on every load: MULLIGAN_POLICY_<NAME>_
 * {MAX_ATTEMPTS,BACKOFF,BASE_DELAY,MULTIPLIER,MAX_DELAY,JITTER,DEADLINE,
 * ATTEMPT_TIMEOUT}, MULLIGAN_BREAKER_<NAME>_{FAILURE_THRESHOLD,RESET_TIMEOUT,
 * HALF_OPEN_MAX_CALLS}, MULLIGAN_CLIENT_<NAME>_{ATTEMPT_TIMEOUT,
 * CONNECT_TIMEOUT,VERIFY_TLS,USER_AGENT}; <NAME> is the entry's name upper-
 * cased with every character other than A-Z and 0-9 replaced by '_'.
 *
 * Errors: a failed load returns MULLIGAN_E_INVALID_ARGUMENT and
 * mulligan_last_error() lists the problems, one per line, each naming the
 * file, the JSON path and what was expected, e.g.
 *   payments.json: policies.payments.max_delay: expected a duration such as "10s", got -3
 * (invalid JSON: "<file>: line L, column C: invalid JSON: <reason>"). The last
 * error holds at most 1023 bytes; a longer list is cut.
 *
 * Thread-safety: every function may be called from many threads at once on
 * the same handle; loads and reloads are serialized internally.
 * @since 0.1
 */
typedef struct mulligan_config mulligan_config;

/** Which section a name belongs to (mulligan_config_count/name).
 *  @since 0.1 */
typedef enum mulligan_config_section {
  MULLIGAN_CONFIG_POLICIES = 0,
  MULLIGAN_CONFIG_BREAKERS = 1,
  MULLIGAN_CONFIG_CLIENTS = 2
} mulligan_config_section;

/**
 * Creates an empty registry (no names until a load succeeds).
 * @param out  OUT: the registry; NULL on failure. Free with
 *             mulligan_config_destroy().
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (out is NULL),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_create(mulligan_config **out);

/**
 * Destroys a registry. NULL is a no-op. Policies obtained from it stay valid.
 * @param config  the registry, or NULL.
 * @since 0.1
 */
MULLIGAN_API void mulligan_config_destroy(mulligan_config *config);

/**
 * Loads a configuration file; later reloads read the same path again.
 * @param config  the registry.
 * @param path    the file (UTF-8 path), used as is in messages.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (NULL argument, missing or
 *         unreadable file, invalid JSON, invalid values; see the last error),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_load_file(mulligan_config *config, const char *path);

/**
 * Loads a configuration from JSON text; reloads parse the same text again
 * (re-reading the environment overrides).
 * @param config  the registry.
 * @param json    the text (need not be NUL-terminated); copied.
 * @param len     its length in bytes.
 * @param source  the name used in messages, e.g. "inline.json"; NULL gives
 *                "<string>".
 * @return as mulligan_config_load_file().
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_load_string(mulligan_config *config, const char *json,
                                             size_t len, const char *source);

/**
 * Loads the file named by the MULLIGAN_CONFIG environment variable.
 * @param config  the registry.
 * @return as mulligan_config_load_file(); MULLIGAN_E_INVALID_ARGUMENT with
 *         "MULLIGAN_CONFIG is not set: ..." when it is unset or empty.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_load_env(mulligan_config *config);

/**
 * Loads the last successfully loaded source again, atomically.
 * @param config  the registry.
 * @return as mulligan_config_load_file(); MULLIGAN_E_INVALID_ARGUMENT when
 *         nothing has been loaded yet. On failure the old configuration stays.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_reload(mulligan_config *config);

/**
 * Creates a retry policy from the named entry of the current configuration.
 * @param config  the registry.
 * @param name    the policy's name ("payments", "shop.Payments/Charge").
 * @param out     OUT: a new policy; NULL on failure. The caller owns it and
 *                frees it with mulligan_retry_policy_destroy(); reloads do not
 *                change it.
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (NULL argument, or no
 *         policy of that name: the last error lists the known names),
 *         MULLIGAN_E_NO_MEMORY.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_retry_policy(const mulligan_config *config, const char *name,
                                              mulligan_retry_policy **out);

/**
 * Circuit breaker settings as configured (DESIGN.md section 4 for the
 * meaning of each). Initialise with MULLIGAN_CONFIG_BREAKER_INIT; the struct
 * only grows at the end and struct_size tells the library which version the
 * caller has.
 * @since 0.1
 */
typedef struct mulligan_config_breaker {
  /** sizeof(mulligan_config_breaker) as compiled by the caller. */
  uint32_t struct_size;
  /** Consecutive failures that trip a closed breaker; 0 disables. */
  int failure_threshold;
  /** 0 no window, 1 count-based, 2 time-based. */
  int window;
  int window_size;
  double window_duration_ms;
  int window_buckets;
  /** Percent in (0, 100]. */
  double failure_rate_threshold;
  int minimum_calls;
  /** Negative when unset (no slow calls). */
  double slow_call_duration_ms;
  double slow_call_rate_threshold;
  double reset_timeout_ms;
  double reset_timeout_multiplier;
  double max_reset_timeout_ms;
  int half_open_max_calls;
  double permit_timeout_ms;
} mulligan_config_breaker;

/** Initialiser for mulligan_config_breaker. @since 0.1 */
#define MULLIGAN_CONFIG_BREAKER_INIT \
  { (uint32_t)sizeof(mulligan_config_breaker), 0, 0, 0, 0.0, 0, 0.0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, 0, 0.0 }

/**
 * Copies the named breaker settings of the current configuration.
 * @param config  the registry.
 * @param name    the breaker's name.
 * @param out     OUT: filled in; its struct_size must be set
 *                (MULLIGAN_CONFIG_BREAKER_INIT).
 * @return MULLIGAN_OK, MULLIGAN_E_INVALID_ARGUMENT (NULL argument, bad
 *         struct_size, unknown name).
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_breaker_get(const mulligan_config *config, const char *name,
                                             mulligan_config_breaker *out);

/**
 * Counts the names of one section of the current configuration.
 * @param config   the registry.
 * @param section  a mulligan_config_section.
 * @param out      OUT: the count (0 on failure).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_count(const mulligan_config *config, int section, size_t *out);

/**
 * Copies the index-th name (sorted by byte value) of a section into a
 * caller buffer, snprintf-style: at most size - 1 bytes plus a NUL.
 * A reload between mulligan_config_count() and this call may change the
 * names; an index past the end then fails cleanly.
 * @param config   the registry.
 * @param section  a mulligan_config_section.
 * @param index    0-based.
 * @param buf      the buffer; may be NULL when size is 0.
 * @param size     its size in bytes.
 * @param out_len  OUT (optional, may be NULL): the name's full length in
 *                 bytes, without the NUL; a result >= size means truncated.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (index out of range).
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_name(const mulligan_config *config, int section, size_t index,
                                      char *buf, size_t size, size_t *out_len);

/**
 * Counts the warnings of the current configuration's load (a gRPC
 * maxAttempts above 5 capped at 5, ignored gRPC fields, applied environment
 * overrides).
 * @param config  the registry.
 * @param out     OUT: the count.
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_warning_count(const mulligan_config *config, size_t *out);

/**
 * Copies the index-th warning into a caller buffer (as mulligan_config_name()).
 * @return MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT (index out of range).
 * @since 0.1
 */
MULLIGAN_API int mulligan_config_warning(const mulligan_config *config, size_t index, char *buf,
                                         size_t size, size_t *out_len);

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
 * @param name  UTF-8, copied; not NULL.
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
 * reset; results of stale permits are not counted.
 * @since 0.1
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
} mulligan_breaker_counts;

/** Initialiser for mulligan_breaker_counts. @since 0.1 */
#define MULLIGAN_BREAKER_COUNTS_INIT \
  { (uint32_t)sizeof(mulligan_breaker_counts), 0, 0, 0, 0, 0, 0, 0, 0, 0.0, 0.0 }

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
   *  "forced_open", "disabled", "metrics_only", "reset", or
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
 * Asks to make one call now (read from the breaker's clock).
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
 *                     NaN and infinity are rejected.
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
  /** 1: record every attempt's result instead. Default 0. */
  int breaker_record_each_attempt;
  /** The name the call reports its metrics and events under (see "Metrics
   *  and events" below), e.g. "payments"; NULL (the default) reports
   *  nothing. Borrowed for the duration of the call; must not be empty.
   *  Read only when struct_size covers it: callers compiled before this
   *  field existed pass a smaller struct_size and report nothing. */
  const char *metrics_name;
} mulligan_retry_call_options;

/** Initialiser for mulligan_retry_call_options. @since 0.1 */
#define MULLIGAN_RETRY_CALL_OPTIONS_INIT \
  { (uint32_t)sizeof(mulligan_retry_call_options), NULL, NULL, 0, NULL }

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
 * attempts through the clock: a thin loop over a mulligan_retry_session.
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
 * the listeners of mulligan_event_listener_add(). The name is looked up once
 * per call (a hash look-up under a mutex).
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
} mulligan_metrics_snapshot;

/** Initialiser for mulligan_metrics_snapshot. @since 0.1 */
#define MULLIGAN_METRICS_SNAPSHOT_INIT                                              \
  { (uint32_t)sizeof(mulligan_metrics_snapshot), 0, 0, 0, {0, 0, 0, 0, 0}, 0, 0, 0, 0, 0, \
    0, 0, -1 }

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
  MULLIGAN_EVENT_SHORT_CIRCUITED = 7
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

#endif /* MULLIGAN_H_ */
