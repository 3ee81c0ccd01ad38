'use strict';
// errors.js — the Error subclasses of the Node binding. Each carries
// mulligan's status code (mulligan_status.h) as `code` (its C name, e.g.
// 'MULLIGAN_E_CIRCUIT_OPEN') and `status` (its number), the engine's stop
// reason (mulligan_stop_reason_str: 'attempts_exhausted', ...) as `reason`,
// the attempts made, and the user's last error (or last Response) as `cause`.

/** Status numbers of the C ABI (mulligan_status.h), pinned. */
const Status = Object.freeze({
  OK: 0, INVALID_ARGUMENT: 1, NO_MEMORY: 2, INTERNAL: 3, CALLBACK: 4, RETRIES_EXHAUSTED: 5,
  DEADLINE_EXCEEDED: 6, CIRCUIT_OPEN: 7, UNAVAILABLE: 8, TRANSPORT: 9, TIMEOUT: 10,
  BUDGET_EXHAUSTED: 11, THROTTLED: 12, BULKHEAD_FULL: 13, RATE_LIMITED: 14,
  STATE_UNAVAILABLE: 15, OUTBOX: 17,  // 16 is reserved (hedging)
});

const codeNames = Object.fromEntries(Object.entries(Status).map(([k, v]) => [v, k === 'OK' ? 'MULLIGAN_OK' : `MULLIGAN_E_${k}`]));

/**
 * The base class: every failure the engine decided.
 * Fields: code (string), status (number), reason (stop reason string or ''),
 * attempts (number), cause (the last error of the user's function, or the
 * last Response of a client call; undefined when none).
 */
class MulliganError extends Error {
  constructor(status, message, { reason = '', attempts = 0, cause } = {}) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'MulliganError';
    this.status = status;
    this.code = codeNames[status] || `MULLIGAN_E_${status}`;
    this.reason = reason;
    this.attempts = attempts;
  }
}

/** Every attempt failed retryably (attempts used up, a Retry-After too long). */
class RetriesExhaustedError extends MulliganError {
  constructor(message, extra) { super(Status.RETRIES_EXHAUSTED, message, extra); this.name = 'RetriesExhaustedError'; }
}
/** The policy's deadline ended the call. */
class DeadlineExceededError extends MulliganError {
  constructor(message, extra) { super(Status.DEADLINE_EXCEEDED, message, extra); this.name = 'DeadlineExceededError'; }
}
/** An attempt failed terminally (isRetryable false, permanent(), a 4xx): not retried. */
class TerminalError extends MulliganError {
  constructor(message, extra) { super(Status.UNAVAILABLE, message, extra); this.name = 'TerminalError'; }
}
/** A circuit breaker refused the call; retryInMs says when it admits a probe. */
class CircuitOpenError extends MulliganError {
  constructor(message, extra = {}) {
    super(Status.CIRCUIT_OPEN, message, { reason: 'circuit_open', ...extra });
    this.name = 'CircuitOpenError';
    this.retryInMs = extra.retryInMs ?? 0;
  }
}
/** A transport failure of the resilient client (refused, reset, DNS, TLS). */
class TransportError extends MulliganError {
  constructor(message, extra) { super(Status.TRANSPORT, message, extra); this.name = 'TransportError'; }
}
/** An attempt timeout of the resilient client ended the last attempt. */
class TimeoutError extends MulliganError {
  constructor(message, extra) { super(Status.TIMEOUT, message, extra); this.name = 'TimeoutError'; }
}
/** The caller's AbortSignal ended the call; `abortReason` is the signal's reason. */
class AbortError extends MulliganError {
  constructor(message, extra = {}) {
    super(Status.CALLBACK, message, { reason: 'terminal', ...extra });
    this.name = 'AbortError';
    this.abortReason = extra.abortReason;
  }
}

const kPermanent = Symbol('mulligan.permanent');
const kRetryAfter = Symbol('mulligan.retryAfterMs');

/**
 * Marks an error as terminal: withRetry does not retry it (the engine
 * classifies it MULLIGAN_ERROR_TERMINAL). Returns the same error.
 * @param {Error} err
 */
function permanent(err) {
  if (err === null || (typeof err !== 'object' && typeof err !== 'function')) {
    throw new TypeError('permanent: expected an Error object');
  }
  err[kPermanent] = true;
  return err;
}

/**
 * Attaches a Retry-After hint (ms) to an error: the engine may wait this
 * long instead of its backoff delay (up to retryAfterMaxMs). Returns err.
 * @param {Error} err
 * @param {number} ms  >= 0
 */
function retryAfter(err, ms) {
  if (err === null || (typeof err !== 'object' && typeof err !== 'function')) {
    throw new TypeError('retryAfter: expected an Error object');
  }
  if (typeof ms !== 'number' || !(ms >= 0)) throw new RangeError('retryAfter: ms must be a number >= 0');
  err[kRetryAfter] = ms;
  return err;
}

module.exports = {
  Status, MulliganError, RetriesExhaustedError, DeadlineExceededError, TerminalError,
  CircuitOpenError, TransportError, TimeoutError, AbortError, permanent, retryAfter,
  kPermanent, kRetryAfter,
};
