'use strict';
// retry.js — RetryPolicy and withRetry: the retry loop of the Node binding,
// driven through the engine's step API (mulligan_pipeline.h). JS runs the
// attempts and the timers; every delay and every stop is the engine's
// decision (DESIGN.md section 2). The success path does not enter the
// engine when nothing can refuse or count the call (no breaker, no metrics
// name, no deadline, no attempt timeout): the first attempt runs, and the
// engine is asked only if it failed.
const { native, scratch } = require('./native');
const errors = require('./errors');
const { CircuitBreaker, FakeClock, clockHandle } = require('./breaker');
const { attemptSignal, wait } = require('./signals');
const { RetryBudget } = require('./budget');

const { Status, kPermanent, kRetryAfter } = errors;

// mulligan_retry.h enums, pinned.
const BACKOFF = { constant: 0, linear: 1, exponential: 2, decorrelated: 3 };
const JITTER = { none: 0, full: 1, equal: 2, proportional: 3 };
const ERROR_RETRYABLE = 9;
const ERROR_TERMINAL = 10;
const ERROR_TIMEOUT = 5;
const ACTION_STOP = 1;
const ADMISSION_WAIT = 1;
const STOP_SUCCEEDED = 1;
const STOP_TERMINAL = 2;
const STOP_DEADLINE = 4;

/**
 * The four strategies of the Node retry guide, as engine settings:
 *   immediate          constant backoff, base 0 ms, no jitter;
 *   fixed              constant backoff, baseDelayMs (default 200), no jitter;
 *   exponential        base * multiplier^(n-1), capped, no jitter;
 *   exponential-jitter the same with full jitter (AWS "Exponential Backoff
 *                      and Jitter"), the engine's default.
 */
const STRATEGIES = {
  immediate: { backoff: BACKOFF.constant, baseDelayMs: 0, jitter: JITTER.none },
  fixed: { backoff: BACKOFF.constant, jitter: JITTER.none },
  exponential: { backoff: BACKOFF.exponential, jitter: JITTER.none },
  'exponential-jitter': { backoff: BACKOFF.exponential, jitter: JITTER.full },
};

const ENGINE_KEYS = ['maxAttempts', 'baseDelayMs', 'multiplier', 'maxDelayMs', 'minDelayMs',
  'jitterFraction', 'deadlineMs', 'attemptTimeoutMs', 'retryAfterMaxMs', 'retryAfterClamp',
  'respectRetryAfter', 'seed', 'name', 'breakerPerAttempt', 'reportMetrics'];
const JS_KEYS = ['strategy', 'backoff', 'jitter', 'isRetryable', 'onRetry', 'logger', 'signal',
  'breaker', 'clock', 'fallback', 'budget'];

function checkFunction(options, key) {
  const f = options[key];
  if (f !== undefined && typeof f !== 'function') throw new TypeError(`${key}: expected a function`);
  return f;
}

function enumOption(table, key, value) {
  if (value === undefined) return undefined;
  if (!(value in table)) {
    throw new RangeError(`${key}: expected one of ${Object.keys(table).join(', ')}; got ${String(value)}`);
  }
  return table[value];
}

/** Builds the addon's pipeline options from the JS ones (names kept). */
function engineOptions(options) {
  const o = {};
  if (options.strategy !== undefined) Object.assign(o, STRATEGIES[options.strategy] ?? (() => {
    throw new RangeError(`strategy: expected one of ${Object.keys(STRATEGIES).join(', ')}; got ${String(options.strategy)}`);
  })());
  for (const k of ENGINE_KEYS) if (options[k] !== undefined) o[k] = options[k];
  const b = enumOption(BACKOFF, 'backoff', options.backoff);
  if (b !== undefined) o.backoff = b;
  const j = enumOption(JITTER, 'jitter', options.jitter);
  if (j !== undefined) o.jitter = j;
  if (options.breaker !== undefined && options.breaker !== null) {
    if (!(options.breaker instanceof CircuitBreaker)) throw new TypeError('breaker: expected a CircuitBreaker');
    o.breaker = options.breaker._h;
  }
  if (options.budget !== undefined && options.budget !== null) {
    if (!(options.budget instanceof RetryBudget)) throw new TypeError('budget: expected a RetryBudget');
    o.budget = options.budget._h;
  }
  const clock = clockHandle(options.clock, 'clock');
  if (clock !== null) o.clock = clock;
  return o;
}

/**
 * A validated retry policy (a pipeline of the engine), built once and
 * reused by any number of withRetry calls. Options (all optional):
 *   strategy: 'immediate' | 'fixed' | 'exponential' | 'exponential-jitter'
 *   maxAttempts (3, the first included), baseDelayMs (200), multiplier (2),
 *   maxDelayMs (10000), minDelayMs, backoff ('constant' | 'linear' |
 *   'exponential' | 'decorrelated'), jitter ('none' | 'full' | 'equal' |
 *   'proportional'), jitterFraction (0.2), seed (reproducible jitter),
 *   deadlineMs (total budget from the first attempt), attemptTimeoutMs
 *   (each attempt's AbortSignal times out), retryAfterMaxMs (60000),
 *   retryAfterClamp, respectRetryAfter, name (metrics name), breaker (CircuitBreaker),
 *   breakerPerAttempt, reportMetrics, clock (FakeClock), budget (RetryBudget,
 *   asked before every retry; 0.6),
 *   isRetryable(err, attempt) => boolean, onRetry(event), logger
 *   (a function or an object with info()), fallback(err) => value.
 * All times are milliseconds. A wrong type throws TypeError, a value the
 * engine rejects RangeError; both name the option. Immutable; safe to share.
 */
class RetryPolicy {
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError('options: expected an object');
    for (const k of Object.keys(options)) {
      if (!ENGINE_KEYS.includes(k) && !JS_KEYS.includes(k)) throw new TypeError(`${k}: unknown option`);
    }
    this.isRetryable = checkFunction(options, 'isRetryable');
    this.onRetry = checkFunction(options, 'onRetry');
    this.fallback = checkFunction(options, 'fallback');
    const logger = options.logger;
    if (logger !== undefined && typeof logger !== 'function' &&
        (logger === null || typeof logger.info !== 'function')) {
      throw new TypeError('logger: expected a function or an object with info()');
    }
    this.log = logger === undefined ? undefined : (typeof logger === 'function' ? logger : logger.info.bind(logger));
    if (options.signal !== undefined) throw new TypeError('signal: give it to withRetry, not to the policy');
    this.fake = options.clock instanceof FakeClock ? options.clock : undefined;
    const engine = engineOptions(options);
    // An unnamed policy reports under no name: metrics reporting off unless asked.
    if (options.name === undefined && options.reportMetrics === undefined) engine.reportMetrics = false;
    this._h = native.pipelineCreate(engine);
    this.attemptTimeout = options.attemptTimeoutMs !== undefined;
    this.fast = options.breaker == null && options.budget == null && options.name === undefined &&
      options.deadlineMs === undefined &&
      !this.attemptTimeout && this.fake === undefined && this.fallback === undefined;
  }
  /** The engine clock's reading, ms. */
  nowMs() { return native.pipelineNow(this._h); }
  /** Releases the pipeline (calls in progress keep it alive). */
  close() { native.close(this._h); }
}

const policies = new WeakMap();
/** The first attempt's context when there is no signal (shared, frozen). */
const FIRST = Object.freeze({ attempt: 1, signal: undefined });

function policyOf(options) {
  if (options instanceof RetryPolicy) return options;
  if (options === undefined) options = {};
  if (options === null || typeof options !== 'object') throw new TypeError('options: expected an object or a RetryPolicy');
  let p = policies.get(options);
  if (p === undefined) {
    const { signal, ...rest } = options;
    p = new RetryPolicy(rest);
    policies.set(options, p);
  }
  return p;
}

/** The engine outcome of a thrown value: [errorKind, httpStatus, retryAfterMs]. */
function outcomeOf(policy, err, attempt, timedOut) {
  // permanent(err) wins; else isRetryable decides retryable or terminal (a
  // timed-out attempt stays a timeout for the engine's metrics).
  let kind = timedOut ? ERROR_TIMEOUT : ERROR_RETRYABLE;
  if (err !== null && typeof err === 'object' && err[kPermanent]) {
    kind = ERROR_TERMINAL;
  } else if (policy.isRetryable !== undefined) {
    let ok;
    try {
      ok = policy.isRetryable(err, attempt);
    } catch (cbErr) {
      throw new TypeError(`isRetryable threw: ${cbErr && cbErr.message}`, { cause: cbErr });
    }
    if (ok !== null && (typeof ok === 'object' || typeof ok === 'function') && typeof ok.then === 'function') {
      // A Promise (an async predicate) is truthy: refuse it rather than
      // retry every error. isRetryable answers synchronously.
      throw new TypeError('isRetryable must return a boolean, got a Promise (an async function?)');
    }
    if (!ok) kind = ERROR_TERMINAL;
  }
  const ra = err !== null && typeof err === 'object' && typeof err[kRetryAfter] === 'number' ? err[kRetryAfter] : -1;
  return [kind, ra];
}

function stopError(reason, err, attempts) {
  const extra = { reason: native.stopReasonStr(reason), attempts, cause: err };
  const detail = err instanceof Error ? `: ${err.message}` : '';
  if (reason === STOP_TERMINAL) return new errors.TerminalError(`the failure was terminal, not retried${detail}`, extra);
  if (reason === STOP_DEADLINE) return new errors.DeadlineExceededError(`the policy's deadline ended the retries${detail}`, extra);
  return new errors.RetriesExhaustedError(`gave up after ${attempts} attempt(s) (${extra.reason})${detail}`, extra);
}

function abortError(signal, last, attempts) {
  return new errors.AbortError('the call was aborted', { abortReason: signal.reason, cause: last, attempts });
}

function callHook(hook, name, event) {
  if (hook === undefined) return;
  try {
    hook(event);
  } catch (cbErr) {
    throw new TypeError(`${name} threw: ${cbErr && cbErr.message}`, { cause: cbErr });
  }
}

/**
 * Runs fn until it succeeds or the engine stops, waiting the engine's
 * delays between attempts. fn is called as fn({ attempt, signal }) and may
 * return a value or a Promise; its value (of the successful attempt) is the
 * result. Rejects with: RetriesExhaustedError, DeadlineExceededError,
 * TerminalError (isRetryable false, permanent(err)), CircuitOpenError (the
 * policy's breaker refused), AbortError (options.signal aborted; waits end
 * at once): each with the last error as `cause`; with a TypeError when a
 * callback (isRetryable, onRetry, logger) throws, or an option is invalid.
 * With a fallback, a give-up or a refusal resolves to fallback(err) instead.
 * @param {Function} fn
 * @param {object|RetryPolicy} [options]  a RetryPolicy, or its options plus
 *   `signal` (an AbortSignal); an options object is compiled once per object.
 */
async function withRetry(fn, options) {
  if (typeof fn !== 'function') throw new TypeError('fn: expected a function');
  const policy = policyOf(options);
  const signal = options instanceof RetryPolicy || options === undefined ? undefined : options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) throw new TypeError('signal: expected an AbortSignal');
  if (signal !== undefined && signal.aborted) throw abortError(signal, undefined, 0);
  if (policy.fast) {
    let first;
    try {
      const value = await fn(signal === undefined ? FIRST : { attempt: 1, signal });
      if (policy.log !== undefined) log(policy, 1, undefined, undefined);
      return value;
    } catch (err) {
      first = { err };
    }
    return run(policy, fn, signal, first);
  }
  return run(policy, fn, signal, undefined);
}

/** Runs a fallback; its throw (or rejection) becomes a TypeError naming it. */
async function callFallback(fallback, ...args) {
  try {
    return await fallback(...args);
  } catch (cbErr) {
    throw new TypeError(`fallback threw: ${cbErr && cbErr.message}`, { cause: cbErr });
  }
}

/** One line per attempt: d is the delay (ms) before the next, or the stop reason. */
function log(policy, attempt, err, d) {
  if (policy.log === undefined) return;
  let what = 'succeeded';
  if (typeof d === 'number') what = `failed (${err && err.message}); retrying in ${d} ms`;
  else if (typeof d === 'string') what = `failed (${err && err.message}); giving up (${d})`;
  callHook(policy.log, 'logger', `mulligan: attempt ${attempt} ${what}`);
}

async function run(policy, fn, signal, first) {
  const pipe = policy._h;
  const call = native.callBegin(pipe, native.pipelineNow(pipe), null, true, -1, policy.fallback !== undefined);
  let finished = false;
  let inFlight = 0;
  let last;
  try {
    let ran = first !== undefined;
    let err = ran ? first.err : undefined;
    let value;
    for (;;) {
      let timedOut = false;
      if (!ran) {
        if (signal !== undefined && signal.aborted) throw abortError(signal, last, native.callAttempts(call));
        let st = native.callAdmit(call, native.pipelineNow(pipe));
        while (st === Status.OK && scratch[0] === ADMISSION_WAIT) {
          await wait(scratch[3], signal, policy.fake);
          st = native.callAdmit(call, native.pipelineNow(pipe));
        }
        if (st !== Status.OK) {
          finished = true;
          const refusal = new errors.CircuitOpenError(native.lastError(),
            { retryInMs: scratch[5], attempts: native.callAttempts(call), cause: last });
          if (scratch[6] === 1) return await callFallback(policy.fallback, refusal);
          throw refusal;
        }
        const attempt = scratch[1];
        const timeoutMs = scratch[2];
        const as = timeoutMs >= 0 ? attemptSignal(signal, timeoutMs) : undefined;
        inFlight = 1;
        try {
          value = await fn({ attempt, signal: as === undefined ? signal : as.signal });
          err = undefined;
        } catch (e) {
          err = e;
          timedOut = as !== undefined && as.timedOut();
        }
      }
      ran = false;
      if (err !== undefined) last = err;
      if (signal !== undefined && signal.aborted) throw abortError(signal, last, native.callAttempts(call));
      const attempt = native.callAttempts(call) + 1;
      const [kind, ra] = err === undefined ? [0, -1] : outcomeOf(policy, err, attempt, timedOut);
      native.callRecord(call, native.pipelineNow(pipe), kind, 0, ra, -1);
      inFlight = 0;
      if (scratch[0] === ACTION_STOP) {
        finished = true;
        const reason = scratch[2];
        if (reason === STOP_SUCCEEDED) { log(policy, attempt, undefined, undefined); return value; }
        const e = stopError(reason, err, native.callAttempts(call));
        log(policy, attempt, err, e.reason);
        if (scratch[6] === 1) return await callFallback(policy.fallback, e);
        throw e;
      }
      const delayMs = scratch[1];
      const fromRetryAfter = scratch[5] === 1;
      log(policy, attempt, err, delayMs);
      callHook(policy.onRetry, 'onRetry', { attempt, delayMs, fromRetryAfter, error: err });
      try {
        await wait(delayMs, signal, policy.fake);
      } catch (abortReason) {
        throw abortError(signal, last, native.callAttempts(call));
      }
    }
  } finally {
    // An AbortSignal that fired cancels the call (counted cancelled, never
    // failed); anything else that left the loop (a hook threw) abandons it.
    if (!finished) {
      const end = signal !== undefined && signal.aborted ? native.callCancel : native.callAbandon;
      end(call, native.pipelineNow(pipe), inFlight);
    }
    native.close(call);
  }
}

const CLIENT_RETRY_KEYS = ['strategy', 'backoff', 'jitter', 'maxAttempts', 'baseDelayMs', 'multiplier',
  'maxDelayMs', 'minDelayMs', 'jitterFraction', 'deadlineMs', 'attemptTimeoutMs', 'retryAfterMaxMs',
  'retryAfterClamp', 'respectRetryAfter', 'retryableStatuses', 'seed'];

/** The engine options of a ResilientClient's `retry` (ms; names as RetryPolicy's). */
function engineOptionsForClient(retry) {
  if (retry === null || typeof retry !== 'object') throw new TypeError('retry: expected an object');
  for (const k of Object.keys(retry)) {
    if (!CLIENT_RETRY_KEYS.includes(k)) throw new TypeError(`retry.${k}: unknown option`);
  }
  const o = engineOptions(retry);
  if (retry.retryableStatuses !== undefined) o.retryableStatuses = retry.retryableStatuses;
  return o;
}

module.exports = {
  callFallback, engineOptionsForClient, outcomeOf, policyOf, stopError, RetryPolicy, withRetry, STRATEGIES,
  BACKOFF, JITTER,
};
