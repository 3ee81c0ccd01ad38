'use strict';
// breaker.js — FakeClock and CircuitBreaker over the engine's breaker
// (mulligan_breaker.h). Every state change, count and refusal is the
// engine's; this file only calls it.
const { native, scratch } = require('./native');
const { CircuitOpenError, Status } = require('./errors');

const STATES = ['closed', 'open', 'half_open', 'forced_open', 'disabled', 'metrics_only'];
const WINDOWS = { none: 0, count: 1, time: 2 };
const RESULTS = { success: 0, failure: 1, ignored: 2 };
const PERMIT_SIZE = native.PERMIT_SIZE;

/**
 * A manual clock (mulligan_clock_create_fake): starts at an arbitrary fixed
 * reading (nowMs) and moves only when advanced. Give it to a policy, a breaker or a client as `clock`: the
 * engine reads it, and withRetry's waits advance it instead of sleeping.
 * Not for concurrent use from worker threads (one JS thread).
 */
class FakeClock {
  constructor() { this._h = native.clockCreateFake(); }
  /** Moves the clock forward by `ms` (finite, >= 0; RangeError otherwise). */
  advance(ms) { native.clockAdvance(this._h, ms); }
  /** The reading in ms. */
  get nowMs() { return native.clockNow(this._h); }
  /** Releases the handle (policies and breakers using it keep it alive). */
  close() { native.close(this._h); }
}

function clockHandle(clock, what) {
  if (clock === undefined || clock === null) return null;
  if (!(clock instanceof FakeClock)) throw new TypeError(`${what}: expected a FakeClock`);
  return clock._h;
}

/** Converts the JS breaker options (window as a string) for the addon. */
function breakerOptions(options, what) {
  if (options === undefined || options === null) return {};
  if (typeof options !== 'object') throw new TypeError(`${what}: expected an object`);
  const o = { ...options };
  delete o.clock;
  delete o.isFailure;
  if (o.window !== undefined) {
    if (!(o.window in WINDOWS)) throw new RangeError(`window: expected 'none', 'count' or 'time', got ${String(o.window)}`);
    o.window = WINDOWS[o.window];
  }
  return o;
}

/**
 * A permission to make one call (mulligan_breaker_permit), from
 * CircuitBreaker.acquire(). `admitted` false means refused: `retryInMs` says
 * for how long. Record its result exactly once with record().
 */
class Permit {
  constructor(breaker, buf, admitted, state, retryInMs, probe) {
    this._b = breaker;
    this._buf = buf;
    this.admitted = admitted;
    this.state = state;
    this.retryInMs = retryInMs;
    this.probe = probe;
  }
  /**
   * Records the call's result: 'success', 'failure' or 'ignored'.
   * @param {number} [durationMs]  the call's duration in ms; omitted: from
   *   the acquire until now (the breaker's clock).
   */
  record(result, durationMs = -1) {
    if (!(result in RESULTS)) throw new RangeError(`result: expected 'success', 'failure' or 'ignored', got ${String(result)}`);
    native.breakerRecord(this._b._h, this._buf, RESULTS[result], durationMs);
  }
}

/**
 * A circuit breaker (the engine's: consecutive failures, or a count or time
 * window of failure and slow-call rates; open, half-open probes, manual
 * states). Options (all optional; defaults of mulligan_breaker_options):
 *   name (''), failureThreshold (5), window ('none' | 'count' | 'time'),
 *   windowSize (100), windowDurationMs (60000), windowBuckets (10),
 *   failureRateThreshold (50, %), minimumCalls (10), slowCallDurationMs,
 *   slowCallRateThreshold (100, %), resetTimeoutMs (30000),
 *   resetTimeoutMultiplier (1), maxResetTimeoutMs (300000),
 *   halfOpenMaxCalls (1), permitTimeoutMs (60000), clock (FakeClock),
 *   isFailure(err) => boolean (execute(): false records 'ignored').
 * A wrong type throws TypeError, a value the engine rejects RangeError,
 * both naming the option. Thread-safety: the engine's breaker is
 * thread-safe; this object belongs to one JS thread.
 */
class CircuitBreaker {
  constructor(options = {}) {
    const o = breakerOptions(options, 'CircuitBreaker options');
    if (options.isFailure !== undefined && typeof options.isFailure !== 'function') {
      throw new TypeError('isFailure: expected a function');
    }
    this._isFailure = options.isFailure;
    this._h = native.breakerCreate(o, clockHandle(options.clock, 'clock'));
  }
  /** @internal wraps a handle from a registry. */
  static _fromHandle(h) {
    const b = Object.create(CircuitBreaker.prototype);
    b._h = h;
    b._isFailure = undefined;
    return b;
  }
  /** Asks to make one call now; returns a Permit (admitted or refused). */
  acquire() {
    const buf = Buffer.allocUnsafe(PERMIT_SIZE);
    native.breakerAcquire(this._h, buf);
    return new Permit(this, buf, scratch[0] === 1, STATES[scratch[1]], scratch[2], scratch[3] === 1);
  }
  /**
   * Runs fn() under the breaker: refused → rejects with CircuitOpenError
   * (fn not called); fn's value → 'success'; fn throwing → 'failure' (or
   * 'ignored' when isFailure(err) is false) and the error is rethrown.
   */
  async execute(fn) {
    if (typeof fn !== 'function') throw new TypeError('fn: expected a function');
    const h = this._h;
    // The permit stays in a slot of the addon's breaker box: one number
    // crosses instead of a permit buffer (execute always records).
    if (native.breakerExecAcquire(h) !== Status.OK) {
      throw new CircuitOpenError(native.lastError(), { retryInMs: scratch[2] });
    }
    const slot = scratch[4];
    let value;
    try {
      value = await fn();
    } catch (err) {
      let result = RESULTS.failure;
      let thrown = err;
      if (this._isFailure !== undefined) {
        try {
          if (!this._isFailure(err)) result = RESULTS.ignored;
        } catch (cbErr) {
          result = RESULTS.ignored;
          thrown = new TypeError(`isFailure threw: ${cbErr && cbErr.message}`, { cause: cbErr });
        }
      }
      native.breakerExecRecord(h, slot, result);
      throw thrown;
    }
    native.breakerExecRecord(h, slot, RESULTS.success);
    return value;
  }
  /** 'closed', 'open', 'half_open', 'forced_open', 'disabled' or 'metrics_only'. */
  get state() { return STATES[native.breakerInfo(this._h, 0)]; }
  /** ms until a call may be admitted (0 now; about 9.2e12 when forced open). */
  get timeUntilProbeMs() { return native.breakerInfo(this._h, 1); }
  /** The breaker's name. */
  get name() { return native.breakerInfo(this._h, 2); }
  /** The counters: calls, successes, failures, ignored, slow, rejected, consecutiveFailures, ... */
  counts() { return native.breakerCounts(this._h); }
  forceOpen() { this._control(0); }
  disable() { this._control(1); }
  metricsOnly() { this._control(2); }
  reset() { this._control(3); }
  halfOpen() { this._control(4); }
  _control(op) {
    if (native.breakerControl(this._h, op) !== Status.OK) throw new RangeError(native.lastError());
  }
  /** Releases this handle (a pipeline sharing the breaker keeps it alive). */
  close() { native.close(this._h); }
}

module.exports = { FakeClock, CircuitBreaker, Permit, clockHandle, breakerOptions, STATES };
