'use strict';
// hedge.js — HedgingPolicy and hedge(): hedged calls of the Node binding,
// driven through the engine's step API (mulligan_hedging.h; gRPC A6
// hedgingPolicy). The engine decides when each copy starts, which outcome
// wins and which copies to cancel; JS only runs the copies, aborts the ones
// the engine names and sets the one timer the engine asks for.
// (Added in 0.6.)
const { native, scratch } = require('./native');
const errors = require('./errors');
const { outcomeOf, policyOf, stopError, RetryPolicy } = require('./retry');
const { attemptSignal } = require('./signals');

const { Status } = errors;

// mulligan_hedging.h / mulligan_retry.h enums, pinned.
const HEDGE_START = 0;
const HEDGE_WAIT = 1;
const STOP_CIRCUIT_OPEN = 7;
const INFO_STARTED = 0;
const INFO_RUNNING = 1;

const HEDGING_KEYS = ['maxAttempts', 'delayMs', 'delayQuantile', 'quantileWindow', 'quantileMinSamples'];
const HEDGE_KEYS = ['hedging', 'policy', 'signal', 'key', 'replaySafe'];

/**
 * A validated hedging policy (mulligan_hedging_policy): its options and the
 * latency window its calls share. Options (all optional):
 *   maxAttempts   copies per call, the first included: >= 2 (gRPC A6); above
 *                 5 is treated as 5. Default 2.
 *   delayMs       the wait, ms, from one copy's start before the next may
 *                 start (A6 hedgingDelay): finite, >= 0; 0 (the default)
 *                 starts every copy at once.
 *   delayQuantile 0 (the default): the fixed delayMs; else in (0, 1] (e.g.
 *                 0.95): the delay is that nearest-rank quantile of the
 *                 latencies of the policy's recent winning copies ("The Tail
 *                 at Scale", Dean and Barroso 2013), once quantileMinSamples
 *                 are known (delayMs until then).
 *   quantileWindow      recent latencies kept, [1, 100000]; default 100.
 *   quantileMinSamples  [1, quantileWindow]; default 20.
 * A wrong type or an unknown option throws TypeError; a value the engine
 * refuses RangeError with its text ("HedgingPolicy: hedging: max_attempts
 * must be >= 2 (gRPC A6), got 1"). Immutable apart from its latency window
 * (the engine's, thread-safe); share it between any number of hedge() calls.
 */
class HedgingPolicy {
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError('options: expected an object');
    for (const k of Object.keys(options)) {
      if (!HEDGING_KEYS.includes(k)) throw new TypeError(`${k}: unknown option`);
    }
    this._h = native.hedgingPolicyCreate(options);
  }
  /** The delay, ms, a copy started now would wait before the next: the quantile of recent winners, or delayMs. */
  get currentDelayMs() { return native.hedgingPolicyDelay(this._h); }
  /** Releases the policy (calls in progress keep it alive). */
  close() { native.close(this._h); }
}

const inlinePolicies = new WeakMap();

/** The HedgingPolicy of hedge()'s `hedging` option (an options object compiled once per object). */
function hedgingOf(hedging) {
  if (hedging instanceof HedgingPolicy) return hedging;
  if (hedging === undefined) hedging = {};
  if (hedging === null || typeof hedging !== 'object') {
    throw new TypeError('hedging: expected a HedgingPolicy or its options');
  }
  let p = inlinePolicies.get(hedging);
  if (p === undefined) {
    p = new HedgingPolicy(hedging);
    inlinePolicies.set(hedging, p);
  }
  return p;
}

let defaultPolicy;

/** hedge()'s options, checked: [RetryPolicy, HedgingPolicy, signal, key, replaySafe]. */
function parseOptions(options) {
  if (options instanceof HedgingPolicy) options = { hedging: options };
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object') throw new TypeError('options: expected an object or a HedgingPolicy');
  for (const k of Object.keys(options)) {
    if (!HEDGE_KEYS.includes(k)) throw new TypeError(`${k}: unknown option`);
  }
  const { signal, key, replaySafe } = options;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('signal: expected an AbortSignal');
  if (key !== undefined && typeof key !== 'string') throw new TypeError('key: expected a string');
  if (replaySafe !== undefined && typeof replaySafe !== 'boolean') throw new TypeError('replaySafe: expected a boolean');
  let policy;
  if (options.policy === undefined) {
    if (defaultPolicy === undefined) defaultPolicy = new RetryPolicy();
    policy = defaultPolicy;
  } else if (options.policy instanceof RetryPolicy || (options.policy !== null && typeof options.policy === 'object')) {
    policy = policyOf(options.policy);
  } else {
    throw new TypeError('policy: expected a RetryPolicy or its options');
  }
  return [policy, hedgingOf(options.hedging), signal, key, replaySafe !== false];
}

/**
 * Runs fn as a hedged call (gRPC A6 hedgingPolicy; mulligan_hedging.h):
 * copy 1 at once, copy k+1 the policy's delay after copy k started, or at
 * once after a copy fails retryably, at most maxAttempts copies. Each copy is
 * fn({ copy, signal }) with its own AbortSignal (with the attempt timeout
 * when the retry policy sets one), aborted when the copy loses; the first
 * copy that resolves wins and its value resolves hedge(). hedge() does not
 * wait for the aborted copies: fn must honour its signal.
 * Options (all optional):
 *   hedging     a HedgingPolicy, or its options (compiled once per object);
 *   policy      a RetryPolicy, or its options: its isRetryable and
 *               permanent(err) classify each copy's error, its breaker (asked
 *               before and told after every copy), its budget (asked before
 *               every copy after the first), deadlineMs, attemptTimeoutMs,
 *               name (metrics: calls, attempts = copies, hedges, hedgesWon,
 *               hedgeCancelled) and clock are used; its backoff, onRetry,
 *               logger and fallback do not apply;
 *   signal      an AbortSignal: aborting it aborts every copy and rejects
 *               with AbortError; the call counts as cancelled, never failed
 *               (mulligan_hedged_call_cancel);
 *   key         the breaker (of a registry) and metrics key of the call;
 *   replaySafe  false: one copy only (hedge only idempotent work). Default true.
 * Or a HedgingPolicy alone. Rejects with TerminalError (a copy failed
 * terminally: the others are aborted), RetriesExhaustedError (every copy
 * failed retryably; reason 'attempts_exhausted', or 'budget' when the budget
 * stopped new copies), DeadlineExceededError, CircuitOpenError (the breaker
 * refused the first copy, or stopped new copies and the running ones
 * failed; retryInMs), AbortError; each with the last copy's error as cause;
 * a TypeError for bad options or a throwing isRetryable.
 * Time: copies start on the policy's clock. With the real clock one
 * setTimeout waits for the engine's next start time; with a FakeClock the
 * wait advances the clock to it on the next turn of the event loop (after
 * the copies that settled by then are recorded), so copies start at exact
 * fake times. (Added in 0.6.)
 * @template T
 * @param {(ctx: {copy: number, signal: AbortSignal}) => T | Promise<T>} fn
 * @param {object|HedgingPolicy} [options]
 * @returns {Promise<T>}
 */
async function hedge(fn, options) {
  if (typeof fn !== 'function') throw new TypeError('fn: expected a function');
  const [policy, hedging, signal, key, replaySafe] = parseOptions(options);
  if (signal !== undefined && signal.aborted) {
    throw new errors.AbortError('the call was aborted', { abortReason: signal.reason, attempts: 0 });
  }
  const call = native.hedgedCallBegin(hedging._h, policy._h, key ?? null, replaySafe, -1);
  return new Promise((resolve, reject) => new HedgeRun(policy, call, fn, signal, resolve, reject).step());
}

/** One hedge() call's state: the engine's call, the copies, the one timer. */
class HedgeRun {
  constructor(policy, call, fn, signal, resolve, reject) {
    this.policy = policy;
    this.call = call;
    this.fn = fn;
    this.signal = signal;
    this.resolve = resolve;
    this.reject = reject;
    this.copies = [];  // copies[k - 1] = { ac, as } while copy k may still be recorded
    this.timer = undefined;
    this.timerIsImmediate = false;
    this.last = undefined;
    this.done = false;
    if (signal !== undefined) {
      this.onAbort = () => this.aborted();
      signal.addEventListener('abort', this.onAbort, { once: true });
    }
  }

  /** Asks the engine until it says wait (one timer) or no more copies. */
  step() {
    if (this.done) return;
    for (;;) {
      const st = native.hedgedCallAdmit(this.call);
      if (st !== Status.OK) {
        // The breaker refused the first copy: the engine has ended the call.
        this.finish(false, new errors.CircuitOpenError(native.lastError(),
          { retryInMs: scratch[5], attempts: this.started(), cause: this.last }));
        return;
      }
      const action = scratch[0];
      if (action === HEDGE_START) {
        this.startCopy(scratch[1], scratch[2]);
        if (this.done) return;
        continue;
      }
      if (action === HEDGE_WAIT) {
        this.schedule(scratch[3], scratch[3] - scratch[6]);
        return;
      }
      // NO_MORE: wait for the running copies, or answer the call's end.
      if (native.hedgedCallInfo(this.call, INFO_RUNNING) === 0) this.stop(scratch[4], scratch[5]);
      return;
    }
  }

  /** The one timer: until `atMs` on the policy's clock (`inMs` from now). */
  schedule(atMs, inMs) {
    const fake = this.policy.fake;
    this.timerIsImmediate = fake !== undefined;
    if (fake !== undefined) {
      this.timer = setImmediate(() => {
        this.timer = undefined;
        const d = atMs - fake.nowMs;
        if (d > 0) fake.advance(d);
        this.step();
      });
      return;
    }
    this.timer = setTimeout(() => { this.timer = undefined; this.step(); }, Math.max(1, Math.ceil(inMs)));
  }

  clearTimer() {
    if (this.timer === undefined) return;
    if (this.timerIsImmediate) clearImmediate(this.timer); else clearTimeout(this.timer);
    this.timer = undefined;
  }

  startCopy(copy, timeoutMs) {
    const ac = new AbortController();
    const as = timeoutMs >= 0 ? attemptSignal(ac.signal, timeoutMs) : undefined;
    this.copies[copy - 1] = { ac, as };
    let p;
    try {
      p = Promise.resolve(this.fn({ copy, signal: as === undefined ? ac.signal : as.signal }));
    } catch (err) {
      p = Promise.reject(err);
    }
    p.then((value) => this.settled(copy, false, value), (err) => this.settled(copy, true, err));
  }

  /** Records copy `copy`'s outcome and does what the engine says. */
  settled(copy, failed, result) {
    const c = this.copies[copy - 1];
    if (this.done || c === undefined) return;  // over, or a copy the engine cancelled
    this.copies[copy - 1] = undefined;
    let kind = 0;
    let ra = -1;
    if (failed) {
      this.last = result;
      try {
        [kind, ra] = outcomeOf(this.policy, result, copy, c.as !== undefined && c.as.timedOut());
      } catch (cbErr) {
        this.finish(false, cbErr, 'abandon');
        return;
      }
    }
    native.hedgedCallRecord(this.call, copy, kind, 0, ra, -1);
    const finished = scratch[0] === 1;
    const winner = scratch[1];
    this.abortMask(scratch[4]);
    if (!finished) {
      this.clearTimer();
      this.step();
    } else if (winner !== 0) {
      this.finish(true, failed ? undefined : result);
    } else {
      const a = this.admitReason();
      this.stop(a[0], a[1]);
    }
  }

  /** The finished call's stop reason and retry_in_ms (a finished call's admit answers them). */
  admitReason() {
    native.hedgedCallAdmit(this.call);
    return [scratch[4], scratch[5]];
  }

  /** Rejects with the error of the finished call's stop reason. */
  stop(reason, retryInMs) {
    const attempts = this.started();
    if (reason === STOP_CIRCUIT_OPEN) {
      this.finish(false, new errors.CircuitOpenError('the circuit breaker stopped new copies',
        { retryInMs, attempts, cause: this.last }));
      return;
    }
    this.finish(false, stopError(reason, this.last, attempts));
  }

  /** Aborts the copies of a cancel mask (bit k-1: copy k). */
  abortMask(mask) {
    for (let k = 1; mask !== 0; ++k, mask >>= 1) {
      if ((mask & 1) === 0) continue;
      const c = this.copies[k - 1];
      this.copies[k - 1] = undefined;
      if (c !== undefined) c.ac.abort();
    }
  }

  /** The caller's signal fired: every copy aborted, the call cancelled. */
  aborted() {
    if (this.done) return;
    const reason = this.signal.reason;
    this.finish(false, new errors.AbortError('the call was aborted',
      { abortReason: reason, cause: this.last, attempts: this.started() }), 'cancel', reason);
  }

  started() { return native.hedgedCallInfo(this.call, INFO_STARTED); }

  /**
   * Settles hedge(): ends an unfinished call in the engine ('cancel': the
   * caller's signal, counted cancelled; 'abandon': a failure of ours,
   * counted failed), aborts every copy still running and frees the call.
   */
  finish(ok, result, end, abortReason) {
    this.done = true;
    this.clearTimer();
    if (this.signal !== undefined) this.signal.removeEventListener('abort', this.onAbort);
    if (end !== undefined) native.hedgedCallEnd(this.call, end === 'cancel');
    for (let i = 0; i < this.copies.length; ++i) {
      const c = this.copies[i];
      this.copies[i] = undefined;
      if (c !== undefined) c.ac.abort(abortReason);
    }
    native.close(this.call);
    if (ok) this.resolve(result); else this.reject(result);
  }
}

module.exports = { HedgingPolicy, hedge };
