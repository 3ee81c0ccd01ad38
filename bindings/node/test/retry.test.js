'use strict';
// withRetry, RetryPolicy, CircuitBreaker and the errors: behaviour and bad
// input. Expected delays are worked out by hand from the strategy formulas
// (no jitter): constant = base; exponential = base * 2^(n-1), capped.
const test = require('node:test');
const assert = require('node:assert/strict');

const m = require('..');

function failing(times, value = 'ok') {
  let n = 0;
  const fn = async () => {
    n += 1;
    if (n <= times) throw new Error(`failure ${n}`);
    return value;
  };
  fn.count = () => n;
  return fn;
}

async function delaysOf(options, failures) {
  const clock = new m.FakeClock();
  const start = clock.nowMs;
  const delays = [];
  const fn = failing(failures);
  const v = await m.withRetry(fn, { ...options, clock, onRetry: (e) => delays.push(e.delayMs) });
  assert.equal(v, 'ok');
  assert.equal(fn.count(), failures + 1);
  return { delays, now: clock.nowMs - start };
}

test('the four strategies of the Node retry guide', async () => {
  assert.deepEqual(m.strategies, ['immediate', 'fixed', 'exponential', 'exponential-jitter']);
  assert.deepEqual((await delaysOf({ strategy: 'immediate', maxAttempts: 4 }, 3)).delays, [0, 0, 0]);
  assert.deepEqual((await delaysOf({ strategy: 'fixed', baseDelayMs: 250, maxAttempts: 4 }, 3)).delays, [250, 250, 250]);
  const exp = await delaysOf({ strategy: 'exponential', baseDelayMs: 100, maxDelayMs: 300, maxAttempts: 5 }, 4);
  assert.deepEqual(exp.delays, [100, 200, 300, 300]);
  assert.equal(exp.now, 900); // the fake clock moved by the waits only
  const jit = await delaysOf({ strategy: 'exponential-jitter', baseDelayMs: 100, maxAttempts: 5, seed: 7 }, 4);
  // full jitter: each delay in [0, base * 2^(n-1)]
  jit.delays.forEach((d, i) => assert.ok(d >= 0 && d <= 100 * 2 ** i, `delay ${i} = ${d}`));
});

test('the success path returns the value at once and waits nothing', async () => {
  const p = new m.RetryPolicy({ strategy: 'fixed', baseDelayMs: 60000 });
  assert.equal(await m.withRetry(async ({ attempt }) => attempt * 10, p), 10);
  assert.equal(await m.withRetry(() => 'sync', p), 'sync');
});

test('gives up with RetriesExhaustedError carrying the last error as cause', async () => {
  const fn = failing(10);
  const err = await m.withRetry(fn, { strategy: 'immediate', maxAttempts: 3 }).catch((e) => e);
  assert.ok(err instanceof m.RetriesExhaustedError);
  assert.ok(err instanceof m.MulliganError);
  assert.equal(err.code, 'MULLIGAN_E_RETRIES_EXHAUSTED');
  assert.equal(err.status, 5);
  assert.equal(err.reason, 'attempts_exhausted');
  assert.equal(err.attempts, 3);
  assert.equal(err.cause.message, 'failure 3');
  assert.equal(fn.count(), 3);
});

test('isRetryable false and permanent() stop at once with TerminalError', async () => {
  const fn = failing(10);
  let err = await m.withRetry(fn, { strategy: 'immediate', isRetryable: (e) => !e.message.includes('1') }).catch((e) => e);
  assert.ok(err instanceof m.TerminalError);
  assert.equal(err.reason, 'terminal');
  assert.equal(fn.count(), 1);
  err = await m.withRetry(async () => { throw m.permanent(new Error('no')); }, { strategy: 'immediate', isRetryable: () => true })
    .catch((e) => e);
  assert.equal(err.code, 'MULLIGAN_E_UNAVAILABLE');
  assert.equal(err.attempts, 1);
});

test('a Retry-After hint replaces the backoff delay', async () => {
  const clock = new m.FakeClock();
  const events = [];
  let n = 0;
  await m.withRetry(async () => {
    if (n++ === 0) throw m.retryAfter(new Error('busy'), 1500);
    return 1;
  }, { strategy: 'fixed', baseDelayMs: 10, clock, onRetry: (e) => events.push([e.delayMs, e.fromRetryAfter]) });
  assert.deepEqual(events, [[1500, true]]);
});

test('the deadline stops the retries (engine-decided, fake clock)', async () => {
  const clock = new m.FakeClock();
  const err = await m.withRetry(failing(10), { strategy: 'fixed', baseDelayMs: 400, deadlineMs: 1000, maxAttempts: 10, clock })
    .catch((e) => e);
  // attempts at 0, 400, 800; the wait to 1200 would cross the deadline
  assert.ok(err instanceof m.DeadlineExceededError, String(err));
  assert.equal(err.reason, 'deadline');
  assert.equal(err.attempts, 3);
});

test('an AbortSignal ends a wait at once with AbortError', async () => {
  const ac = new AbortController();
  const started = Date.now();
  const p = m.withRetry(failing(10), { strategy: 'fixed', baseDelayMs: 60000, maxAttempts: 5, signal: ac.signal });
  setImmediate(() => ac.abort(new Error('stop')));
  const err = await p.catch((e) => e);
  assert.ok(err instanceof m.AbortError);
  assert.equal(err.abortReason.message, 'stop');
  assert.equal(err.cause.message, 'failure 1');
  assert.ok(Date.now() - started < 60000);
  const err2 = await m.withRetry(() => 1, { signal: AbortSignal.abort() }).catch((e) => e);
  assert.ok(err2 instanceof m.AbortError);
});

test('an aborted call counts as cancelled, never as a failure (0.6)', async () => {
  // failureThreshold 1: a single failure counted would open the breaker.
  const breaker = new m.CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 60000 });
  const ac = new AbortController();
  const fn = failing(10);
  const p = m.withRetry(fn, { strategy: 'fixed', baseDelayMs: 60000, maxAttempts: 5, signal: ac.signal,
    breaker, name: 'node_cancel' });
  setImmediate(() => ac.abort(new Error('stop'))); // attempt 1 failed; the 60 s wait is cut
  assert.ok((await p.catch((e) => e)) instanceof m.AbortError);
  assert.equal(fn.count(), 1);
  assert.equal(breaker.state, 'closed');
  const s = m.metricsFor('node_cancel');
  // 1 call, its 1 attempt, 0 successes, 0 failures, 1 cancelled, none left.
  assert.deepEqual([s.calls, s.attempts, s.successes, s.failures, s.cancelled, s.inFlight, s.waitingToRetry],
    [1, 1, 0, 0, 1, 0, 0]);
});

test('logging of each attempt', async () => {
  const lines = [];
  await m.withRetry(failing(2), { strategy: 'fixed', baseDelayMs: 5, clock: new m.FakeClock(), logger: (l) => lines.push(l) });
  assert.deepEqual(lines, [
    'mulligan: attempt 1 failed (failure 1); retrying in 5 ms',
    'mulligan: attempt 2 failed (failure 2); retrying in 5 ms',
    'mulligan: attempt 3 succeeded',
  ]);
  lines.length = 0;
  await m.withRetry(failing(5), { strategy: 'immediate', maxAttempts: 2, logger: { info: (l) => lines.push(l) } }).catch(() => {});
  assert.deepEqual(lines, [
    'mulligan: attempt 1 failed (failure 1); retrying in 0 ms',
    'mulligan: attempt 2 failed (failure 2); giving up (attempts_exhausted)',
  ]);
});

test('fallback answers a give-up', async () => {
  const v = await m.withRetry(failing(10), { strategy: 'immediate', maxAttempts: 2, fallback: (e) => `fallback after ${e.attempts}` });
  assert.equal(v, 'fallback after 2');
});

test('a breaker refuses with CircuitOpenError once open', async () => {
  const clock = new m.FakeClock();
  const breaker = new m.CircuitBreaker({ failureThreshold: 2, resetTimeoutMs: 10000, clock });
  const p = new m.RetryPolicy({ strategy: 'immediate', maxAttempts: 1, breaker, clock });
  for (let i = 0; i < 2; i++) await m.withRetry(failing(1), p).catch(() => {});
  assert.equal(breaker.state, 'open');
  let called = false;
  const err = await m.withRetry(() => { called = true; }, p).catch((e) => e);
  assert.ok(err instanceof m.CircuitOpenError);
  assert.equal(err.code, 'MULLIGAN_E_CIRCUIT_OPEN');
  assert.equal(err.retryInMs, 10000);
  assert.equal(called, false);
  clock.advance(10000);
  assert.equal(await m.withRetry(() => 'probe', p), 'probe');
  assert.equal(breaker.state, 'closed');
});

test('CircuitBreaker.execute', async () => {
  const b = new m.CircuitBreaker({ failureThreshold: 1, resetTimeoutMs: 5000, clock: new m.FakeClock(), isFailure: (e) => e.message !== 'ignored' });
  assert.equal(await b.execute(() => 3), 3);
  await assert.rejects(b.execute(() => { throw new Error('ignored'); }), /ignored/);
  assert.equal(b.state, 'closed');
  await assert.rejects(b.execute(() => { throw new Error('boom'); }), /boom/);
  assert.equal(b.state, 'open');
  await assert.rejects(b.execute(() => 1), m.CircuitOpenError);
  assert.deepEqual([b.counts().successes, b.counts().failures, b.counts().ignored, b.counts().rejected], [1, 1, 1, 1]);
});

test('CircuitBreaker.execute keeps the permits of concurrent calls apart', async () => {
  // 20 calls in flight at once (more than the first 8 permit slots), settled
  // in reverse order: each records its own result, and slots are reused.
  const clock = new m.FakeClock();
  const b = new m.CircuitBreaker({ failureThreshold: 100, slowCallDurationMs: 50, window: 'count', windowSize: 100, minimumCalls: 100, clock });
  const settle = [];
  const calls = [];
  for (let i = 0; i < 20; i++) {
    calls.push(b.execute(() => new Promise((resolve, reject) => settle.push(() => (i % 4 === 0 ? reject(new Error(`f${i}`)) : resolve(i))))));
  }
  clock.advance(60); // every call lasts 60 ms on the breaker's clock: slow
  for (let i = 19; i >= 0; i--) settle[i]();
  const results = await Promise.allSettled(calls);
  assert.deepEqual(results.map((r) => (r.status === 'fulfilled' ? r.value : r.reason.message)),
    Array.from({ length: 20 }, (_, i) => (i % 4 === 0 ? `f${i}` : i)));
  const c = b.counts();
  assert.deepEqual([c.calls, c.successes, c.failures, c.slow, c.stale], [20, 15, 5, 20, 0]);
  for (let i = 0; i < 30; i++) assert.equal(await b.execute(() => i), i);
  assert.equal(b.counts().successes, 45);
});

test('bad input: TypeError or RangeError naming the option, never a crash', async () => {
  assert.throws(() => new m.RetryPolicy({ maxAttempts: 0 }), (e) => e instanceof RangeError && /^maxAttempts: /.test(e.message));
  assert.throws(() => new m.RetryPolicy({ maxAttempts: 'three' }), (e) => e instanceof TypeError && /^maxAttempts: /.test(e.message));
  assert.throws(() => new m.RetryPolicy({ baseDelayMs: -1 }), (e) => e instanceof RangeError && /baseDelayMs/.test(e.message));
  assert.throws(() => new m.RetryPolicy({ baseDelayMs: NaN }), (e) => e instanceof RangeError && /baseDelayMs/.test(e.message));
  assert.throws(() => new m.RetryPolicy({ strategy: 'fibonacci' }), (e) => e instanceof RangeError && /^strategy: /.test(e.message));
  assert.throws(() => new m.RetryPolicy({ jitterFraction: 2 }), (e) => e instanceof RangeError && /jitterFraction/.test(e.message));
  assert.throws(() => new m.RetryPolicy({ retries: 3 }), (e) => e instanceof TypeError && /^retries: unknown/.test(e.message));
  assert.throws(() => new m.RetryPolicy({ isRetryable: 1 }), (e) => e instanceof TypeError && /isRetryable/.test(e.message));
  assert.throws(() => new m.RetryPolicy({ breaker: {} }), (e) => e instanceof TypeError && /^breaker: /.test(e.message));
  assert.throws(() => new m.CircuitBreaker({ failureThreshold: -1 }), (e) => e instanceof RangeError && /failureThreshold/.test(e.message));
  assert.throws(() => new m.CircuitBreaker({ window: 'sliding' }), (e) => e instanceof RangeError && /^window: /.test(e.message));
  await assert.rejects(m.withRetry(null), (e) => e instanceof TypeError && /^fn: /.test(e.message));
  await assert.rejects(m.withRetry(() => 1, { signal: 'x' }), (e) => e instanceof TypeError && /^signal: /.test(e.message));
  // a callback that throws
  await assert.rejects(m.withRetry(failing(1), { strategy: 'immediate', isRetryable: async () => false }),
    (e) => e instanceof TypeError && /isRetryable must return a boolean, got a Promise/.test(e.message));
  await assert.rejects(m.withRetry(failing(1), { strategy: 'immediate', isRetryable: () => { throw new Error('bug'); } }),
    (e) => e instanceof TypeError && /^isRetryable threw: bug/.test(e.message) && e.cause.message === 'bug');
  await assert.rejects(m.withRetry(failing(1), { strategy: 'immediate', onRetry: () => { throw new Error('bug'); } }),
    (e) => e instanceof TypeError && /^onRetry threw/.test(e.message));
  // a closed handle or a forged one
  const p = new m.RetryPolicy({ strategy: 'immediate' });
  p.close();
  await assert.rejects(m.withRetry(failing(1), p), (e) => e instanceof TypeError && /pipeline is closed/.test(e.message));
  const { native } = require('../lib/native');
  assert.throws(() => native.callBegin(null, 0, null, true, -1, false), TypeError);
  assert.throws(() => native.breakerInfo({}, 0), TypeError);
  const fake = new m.FakeClock();
  assert.throws(() => new m.CircuitBreaker({ failureThreshold: 0 }), (e) => e instanceof RangeError && /failure_threshold/.test(e.message));
  assert.throws(() => fake.advance(-1), RangeError);
  assert.throws(() => m.parseRetryAfter(5), TypeError);
  assert.throws(() => m.permanent(null), TypeError);
});

test('a throwing fallback is a TypeError naming it', async () => {
  await assert.rejects(m.withRetry(failing(5), { strategy: 'immediate', maxAttempts: 1, fallback: () => { throw new Error('fb'); } }),
    (e) => e instanceof TypeError && /^fallback threw: fb/.test(e.message) && e.cause.message === 'fb');
});

test('handles dropped without close() are collected in any order, calls mid-flight included', async () => {
  const v8 = require('node:v8');
  const vm = require('node:vm');
  v8.setFlagsFromString('--expose-gc');
  const gc = vm.runInNewContext('gc');
  const { native } = require('../lib/native');
  // in a function of its own: a suspended async frame would keep the last handles alive
  (function drop() {
    for (let i = 0; i < 200; i++) {
      const clock = new m.FakeClock();
      const breaker = new m.CircuitBreaker({ clock });
      const p = new m.RetryPolicy({ clock, breaker, name: 'node_gc_test' });
      const call = native.callBegin(p._h, p.nowMs(), null, true, -1, false);
      native.callAdmit(call, p.nowMs()); // an admitted attempt, never recorded nor closed
      breaker.acquire();
    }
  })();
  // the engine abandons every call on destruction: none is left in flight
  // (finalizers may run a tick after the collection that found the handles)
  for (let i = 0; i < 20 && m.metricsFor('node_gc_test').inFlight > 0; i++) {
    gc();
    await new Promise((r) => setImmediate(r));
  }
  assert.equal(m.metricsFor('node_gc_test').inFlight, 0);
  assert.equal(m.metricsFor('node_gc_test').calls, 200);
});
