/* mulligan_status.h — what every part of the mulligan C ABI shares: status
 * codes and the thread-local error text, the library version, the largest
 * duration, and clocks (the system's steady clock, or a fake one for tests).
 *
 * Part of the mulligan C ABI: mulligan.h includes every part, and states the
 * conventions all of them follow (handles, status codes, durations in
 * milliseconds, borrowed strings). A program may include just this header.
 * Compiles as C99 and as C++.
 */
#ifndef MULLIGAN_STATUS_H_
#define MULLIGAN_STATUS_H_

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
  /** A circuit breaker refused the call (mulligan_breaker_acquire(),
   *  mulligan_retry_call(), mulligan_call_admit()); never retried. */
  MULLIGAN_E_CIRCUIT_OPEN = 7,
  /** The dependency was unavailable in a way that was not retried. */
  MULLIGAN_E_UNAVAILABLE = 8,
  /** Transport failure: connection refused or reset, DNS failure, TLS error. */
  MULLIGAN_E_TRANSPORT = 9,
  /** An attempt did not finish within its timeout. */
  MULLIGAN_E_TIMEOUT = 10,
  /** A retry budget refused a retry. @since 0.3 */
  MULLIGAN_E_BUDGET_EXHAUSTED = 11,
  /** Adaptive throttling rejected the call locally; not retried. @since 0.3 */
  MULLIGAN_E_THROTTLED = 12,
  /** A bulkhead refused the call: every slot busy, and no room or time to
   *  wait (mulligan_limits.h). Never retried. @since 0.3 */
  MULLIGAN_E_BULKHEAD_FULL = 13,
  /** A rate limiter refused the call: the wait would exceed its max_wait or
   *  the deadline (mulligan_limits.h). Never retried. @since 0.3 */
  MULLIGAN_E_RATE_LIMITED = 14,
  /** A state backend (Redis) could not be reached, timed out or failed a
   *  command, and the operation failed closed: nothing was decided and no
   *  handler may run (HTTP servers answer 503 with Retry-After). Retrying
   *  later may succeed. @since 0.5 */
  MULLIGAN_E_STATE_UNAVAILABLE = 15,
  /* 16 is reserved (hedging). */
  /** The durable outbox could not do what was asked (mulligan_outbox.h): the
   *  database file is read-only, the disk or the outbox's size cap is full,
   *  the file is not an outbox, or a worker's lease was lost. The message
   *  names the file and SQLite's own text; an entry whose enqueue returned
   *  this code was not written. @since 0.6 */
  MULLIGAN_E_OUTBOX = 17
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
 * The text is safe to log: a URL in it shows neither its user name and
 * password nor the values of sensitive query parameters (api_key, token,
 * sig, ...: each replaced by "[redacted]"), and no header value is ever
 * quoted (docs/security.md).
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
/* Durations                                                                  */
/* ========================================================================== */

/**
 * The largest duration the engine represents, in milliseconds (INT64_MAX
 * nanoseconds, about 292 years). Huge durations saturate at this value; they
 * never overflow or turn negative.
 * @since 0.1
 */
#define MULLIGAN_DURATION_MAX_MS 9223372036854.775807

/* ========================================================================== */
/* Clocks                                                                     */
/* ========================================================================== */

/**
 * A source of monotonic time for retry sessions, breakers, idempotency
 * stores and pipelines. Wherever a
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

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MULLIGAN_STATUS_H_ */
