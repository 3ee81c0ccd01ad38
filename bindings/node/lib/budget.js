'use strict';
// budget.js — RetryBudget over the engine's retry budget (mulligan_budget.h).
// A policy given one as `budget` asks it before every retry and before every
// hedged copy after the first; every count and refusal is the engine's.
// (Added in 0.6.)
const { native } = require('./native');
const { FakeClock, clockHandle } = require('./breaker');

const KINDS = { tokenBucket: 0, quota: 1, ratio: 2 };
const FAILURES = { other: 0, timeout: 1, throttling: 2 };
const KEYS = ['kind', 'maxTokens', 'tokenRatio', 'capacity', 'retryCost', 'timeoutCost',
  'throttlingCost', 'noRetryIncrement', 'ttlMs', 'percent', 'minRetriesPerSecond', 'name',
  'shared', 'clock'];

/** A pipeline on the system steady clock, for the readings of a budget without a FakeClock. */
let steady;
function steadyNowMs() {
  if (steady === undefined) steady = native.pipelineCreate({ reportMetrics: false });
  return native.pipelineNow(steady);
}

function pick(table, what, value) {
  if (!(value in table)) {
    throw new RangeError(`${what}: expected one of ${Object.keys(table).join(', ')}; got ${String(value)}`);
  }
  return table[value];
}

/**
 * A retry budget: bounds the retries (and hedged copies) of every policy
 * that shares it; a call's first attempt is never refused by it. Options
 * (all optional; the C ABI's defaults):
 *   kind: 'tokenBucket' (gRPC A6 retryThrottling, the default: maxTokens
 *     100, tokenRatio 0.5; a failure takes 1 token, a success adds
 *     tokenRatio, a retry needs tokens > maxTokens / 2) | 'quota' (the AWS
 *     SDKs' standard retry quota: capacity 500, retryCost 5, timeoutCost
 *     10, throttlingCost 5, noRetryIncrement 1) | 'ratio' (Finagle's
 *     RetryBudget: percent 0.2 of the calls over ttlMs 10000 ms, plus
 *     minRetriesPerSecond 10);
 *   name (reported under it), shared (true: the process-wide budget of that
 *   name, made with these options on first use), clock (a FakeClock).
 * A wrong type or an unknown option throws TypeError, a value the engine
 * rejects RangeError with its text ("budget 'x': token_bucket.token_ratio
 * must be >= 0.001 (gRPC A6 keeps 3 decimal places), got -1"). The
 * engine's budget is thread-safe;
 * this object belongs to one JS thread.
 */
class RetryBudget {
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError('options: expected an object');
    for (const k of Object.keys(options)) {
      if (!KEYS.includes(k)) throw new TypeError(`${k}: unknown option`);
    }
    const { name, shared, clock, kind, ...rest } = options;
    if (name !== undefined && typeof name !== 'string') throw new TypeError('name: expected a string');
    if (shared !== undefined && typeof shared !== 'boolean') throw new TypeError('shared: expected a boolean');
    if (shared && !name) throw new TypeError('name: a shared budget needs a name');
    const o = { ...rest };
    if (kind !== undefined) o.kind = pick(KINDS, 'kind', kind);
    this._clock = clock instanceof FakeClock ? clock : undefined;
    this._h = native.budgetCreate(o, name ?? null, clockHandle(clock, 'clock'), shared === true);
  }
  /** Now on the budget's clock, ms (the FakeClock, else the steady clock). */
  _now() { return this._clock !== undefined ? this._clock.nowMs : steadyNowMs(); }
  /**
   * Counts a retryable failure: 'other' (the default), 'timeout' or
   * 'throttling' (for the quota's costs; a token bucket takes 1 token).
   */
  onFailure(kind = 'other') { native.budgetOnFailure(this._h, pick(FAILURES, 'kind', kind), this._now()); }
  /** The room left now: tokens (3 decimals), quota capacity, or the retries a ratio budget allows. */
  tokens() { return native.budgetInfo(this._h, 2, this._now()); }
  /** Retries (and hedged copies) refused so far. */
  get refused() { return native.budgetInfo(this._h, 0, 0); }
  /** Retries (and hedged copies) allowed so far. */
  get allowed() { return native.budgetInfo(this._h, 1, 0); }
  /** 'tokenBucket', 'quota' or 'ratio'. */
  get kind() { return Object.keys(KINDS)[native.budgetInfo(this._h, 3, 0)]; }
  /** Releases this handle (policies using the budget keep it alive). */
  close() { native.close(this._h); }
}

module.exports = { RetryBudget };
