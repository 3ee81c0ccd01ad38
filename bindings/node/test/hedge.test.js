'use strict';
// hedge(), HedgingPolicy and RetryBudget: hedged calls on the engine's step
// API (mulligan_hedging.h). On a FakeClock a wait advances the clock to the
// engine's next start time, so the copies' start times are exact: copy k+1
// starts delayMs after copy k (gRPC A6 hedgingDelay), at once after a
// retryable failure. Expected counts follow the C header's accounting
// (FULL: one call, one attempt per copy, hedges = copies after the first).
const test = require('node:test');
const assert = require('node:assert/strict');

const m = require('..');

/** A copy that runs until its signal aborts, then rejects with the reason. */
function hanging(aborts, copy) {
  return ({ signal }) => new Promise((_, reject) => {
    signal.addEventListener('abort', () => { aborts.push([copy, signal.reason]); reject(signal.reason); },
      { once: true });
  });
}

function fakePolicy(name, extra = {}) {
  const clock = new m.FakeClock();
  return { clock, policy: new m.RetryPolicy({ clock, name, ...extra }) };
}

test('copies start delayMs apart on the fake clock; the winner resolves, the losers are aborted', async () => {
  const { clock, policy } = fakePolicy('node_hedge_times');
  const hedging = new m.HedgingPolicy({ maxAttempts: 3, delayMs: 50 });
  const t0 = clock.nowMs;
  const starts = [];
  const aborts = [];
  const v = await m.hedge((ctx) => {
    starts.push([ctx.copy, clock.nowMs - t0]);
    return ctx.copy === 3 ? 30 : hanging(aborts, ctx.copy)(ctx);
  }, { hedging, policy });
  assert.equal(v, 30);
  assert.deepEqual(starts, [[1, 0], [2, 50], [3, 100]]);
  assert.equal(clock.nowMs - t0, 100);
  assert.deepEqual(aborts.map(([copy]) => copy).sort(), [1, 2]);
  assert.equal(aborts[0][1].name, 'AbortError');
  assert.deepEqual(m.metricsFor('node_hedge_times'), {
    calls: 1, attempts: 3, retries: 0, successes: 1, failures: 0, fallbacks: 0, shortCircuits: 0,
    circuitOpens: 0, inFlight: 0, waitingToRetry: 0, breakerState: -1 /* no breaker */, cancelled: 0,
    hedges: 2, hedgesWon: 1, hedgeCancelled: 2,
  });
});

test('copy 2 wins at 50 ms and copy 3 never starts', async () => {
  const { clock, policy } = fakePolicy('node_hedge_two');
  const t0 = clock.nowMs;
  const starts = [];
  const aborts = [];
  const v = await m.hedge((ctx) => {
    starts.push(clock.nowMs - t0);
    return ctx.copy === 1 ? hanging(aborts, 1)(ctx) : 'copy 2';
  }, { hedging: { maxAttempts: 3, delayMs: 50 }, policy });
  assert.equal(v, 'copy 2');
  assert.deepEqual(starts, [0, 50]);
  assert.deepEqual(aborts.map(([copy]) => copy), [1]);
  const s = m.metricsFor('node_hedge_two');
  assert.deepEqual([s.calls, s.attempts, s.successes, s.failures, s.hedges, s.hedgesWon, s.hedgeCancelled],
    [1, 2, 1, 0, 1, 1, 1]);
});

test("the quantile delay is learned from the winners' latencies", async () => {
  const { clock, policy } = fakePolicy('node_hedge_quantile');
  // p100 of the last winners once 1 is known; 1000 ms until then.
  const hedging = new m.HedgingPolicy({ maxAttempts: 2, delayMs: 1000, delayQuantile: 1, quantileMinSamples: 1 });
  assert.equal(hedging.currentDelayMs, 1000);
  await m.hedge(() => { clock.advance(30); return 'won in 30 ms'; }, { hedging, policy });
  assert.equal(hedging.currentDelayMs, 30);
  const t0 = clock.nowMs;
  const starts = [];
  const v = await m.hedge((ctx) => {
    starts.push(clock.nowMs - t0);
    return ctx.copy === 1 ? hanging([], 1)(ctx) : 'hedge';
  }, { hedging, policy });
  assert.equal(v, 'hedge');
  assert.deepEqual(starts, [0, 30]);
});

test('a retryable failure starts the next copy at once', async () => {
  const { clock, policy } = fakePolicy('node_hedge_retryable');
  const t0 = clock.nowMs;
  const starts = [];
  const v = await m.hedge(async ({ copy }) => {
    starts.push([copy, clock.nowMs - t0]);
    if (copy < 3) throw new Error(`copy ${copy} failed`);
    return 'third';
  }, { hedging: new m.HedgingPolicy({ maxAttempts: 3, delayMs: 1000 }), policy });
  assert.equal(v, 'third');
  assert.deepEqual(starts, [[1, 0], [2, 0], [3, 0]]); // no 1 s wait after a failure
  const s = m.metricsFor('node_hedge_retryable');
  assert.deepEqual([s.calls, s.attempts, s.successes, s.failures, s.hedges, s.hedgesWon, s.hedgeCancelled],
    [1, 3, 1, 0, 2, 1, 0]);
});

test('never more than 5 copies (maxAttempts 7 is treated as 5)', async () => {
  const { policy } = fakePolicy('node_hedge_cap');
  let runs = 0;
  const err = await m.hedge(async () => { runs += 1; throw new Error(`boom ${runs}`); },
    { hedging: { maxAttempts: 7 }, policy }).catch((e) => e);
  assert.ok(err instanceof m.RetriesExhaustedError, String(err));
  assert.equal(err.reason, 'attempts_exhausted');
  assert.equal(err.attempts, 5);
  assert.equal(err.cause.message, 'boom 5');
  assert.equal(runs, 5);
  const s = m.metricsFor('node_hedge_cap');
  assert.deepEqual([s.calls, s.attempts, s.failures, s.hedges], [1, 5, 1, 4]);
});

test('an open breaker stops new copies, and refuses the next call outright', async () => {
  const clock = new m.FakeClock();
  const breaker = new m.CircuitBreaker({ name: 'node_hedge_breaker', failureThreshold: 1, resetTimeoutMs: 10000, clock });
  const policy = new m.RetryPolicy({ clock, breaker, name: 'node_hedge_breaker' });
  const hedging = new m.HedgingPolicy({ maxAttempts: 3, delayMs: 50 });
  let runs = 0;
  // Copy 1 fails: the breaker (threshold 1) opens and refuses copy 2.
  const err = await m.hedge(async () => { runs += 1; throw new Error('boom'); }, { hedging, policy }).catch((e) => e);
  assert.ok(err instanceof m.CircuitOpenError, String(err));
  assert.equal(err.reason, 'circuit_open');
  assert.equal(err.retryInMs, 10000);
  assert.equal(err.attempts, 1);
  assert.equal(err.cause.message, 'boom');
  assert.equal(runs, 1);
  const again = await m.hedge(() => { runs += 1; return 'ran'; }, { hedging, policy }).catch((e) => e);
  assert.ok(again instanceof m.CircuitOpenError, String(again));
  assert.match(again.message, /circuit breaker 'node_hedge_breaker' is open/);
  assert.equal(again.retryInMs, 10000);
  assert.equal(runs, 1);
});

test('an empty budget stops new copies', async () => {
  const clock = new m.FakeClock();
  // gRPC A6: a retry needs tokens > maxTokens / 2 = 1; one failure leaves 1.
  const budget = new m.RetryBudget({ maxTokens: 2, tokenRatio: 0.5, clock });
  budget.onFailure();
  assert.equal(budget.tokens(), 1);
  const policy = new m.RetryPolicy({ clock, budget, name: 'node_hedge_budget' });
  const hedging = new m.HedgingPolicy({ maxAttempts: 3 }); // delay 0: copy 2 is asked at once
  let runs = 0;
  const v = await m.hedge(async () => { runs += 1; return 'only'; }, { hedging, policy });
  assert.equal(v, 'only');
  assert.equal(runs, 1);
  assert.equal(budget.refused, 1);
  const s = m.metricsFor('node_hedge_budget');
  assert.deepEqual([s.calls, s.attempts, s.successes, s.hedges], [1, 1, 1, 0]);
  // The success added tokenRatio (1.5 tokens); a failure leaves 0.5: the
  // budget refuses copy 2 again, and when copy 1 fails the call stops on it.
  budget.onFailure();
  assert.equal(budget.tokens(), 0.5);
  const err = await m.hedge(async () => { runs += 1; throw new Error('down'); }, { hedging, policy }).catch((e) => e);
  assert.ok(err instanceof m.RetriesExhaustedError, String(err));
  assert.equal(err.reason, 'budget');
  assert.equal(err.cause.message, 'down');
  assert.equal(err.attempts, 1);
  assert.equal(runs, 2);
  assert.equal(budget.refused, 2);
});

test("the caller's signal aborts every copy and counts the call cancelled, not failed", async () => {
  const clock = new m.FakeClock();
  const breaker = new m.CircuitBreaker({ name: 'node_hedge_cancel', failureThreshold: 1, clock });
  const policy = new m.RetryPolicy({ clock, breaker, name: 'node_hedge_cancel' });
  const ac = new AbortController();
  const aborts = [];
  let started = 0;
  const p = m.hedge((ctx) => { started += 1; return hanging(aborts, ctx.copy)(ctx); },
    { hedging: { maxAttempts: 2 }, policy, signal: ac.signal });
  await new Promise((resolve) => setImmediate(resolve));
  assert.equal(started, 2); // delay 0: both copies at once
  ac.abort('caller gave up');
  const err = await p.catch((e) => e);
  assert.ok(err instanceof m.AbortError, String(err));
  assert.equal(err.abortReason, 'caller gave up');
  assert.equal(err.attempts, 2);
  assert.deepEqual(aborts, [[1, 'caller gave up'], [2, 'caller gave up']]);
  assert.equal(breaker.state, 'closed');
  const s = m.metricsFor('node_hedge_cancel');
  assert.deepEqual([s.calls, s.attempts, s.successes, s.failures, s.cancelled, s.hedges, s.hedgeCancelled, s.inFlight],
    [1, 2, 0, 0, 1, 1, 2, 0]);
  // An already aborted signal runs nothing.
  const before = await m.hedge(() => { started += 1; }, { policy, signal: AbortSignal.abort('no') }).catch((e) => e);
  assert.ok(before instanceof m.AbortError);
  assert.equal(before.attempts, 0);
  assert.equal(started, 2);
});

test('a copy that fails terminally ends the call and aborts the others', async () => {
  const { policy } = fakePolicy('node_hedge_terminal');
  const aborts = [];
  const boom = new Error('bad request');
  const err = await m.hedge((ctx) => {
    if (ctx.copy === 1) return hanging(aborts, 1)(ctx);
    throw m.permanent(boom); // thrown synchronously: the same as a rejection
  }, { hedging: { maxAttempts: 2 }, policy }).catch((e) => e);
  assert.ok(err instanceof m.TerminalError, String(err));
  assert.equal(err.reason, 'terminal');
  assert.equal(err.cause, boom);
  assert.deepEqual(aborts.map(([copy]) => copy), [1]);
  const s = m.metricsFor('node_hedge_terminal');
  assert.deepEqual([s.calls, s.successes, s.failures, s.cancelled, s.hedgeCancelled], [1, 0, 1, 0, 1]);
  // isRetryable false is terminal as well.
  const strict = new m.RetryPolicy({ clock: new m.FakeClock(), isRetryable: () => false });
  let runs = 0;
  const e2 = await m.hedge(async () => { runs += 1; throw new Error('no'); },
    { hedging: { maxAttempts: 3, delayMs: 10 }, policy: strict }).catch((e) => e);
  assert.ok(e2 instanceof m.TerminalError, String(e2));
  assert.equal(runs, 1);
});

test('a call that is not replay-safe runs one copy', async () => {
  const { policy } = fakePolicy('node_hedge_unsafe');
  let runs = 0;
  const err = await m.hedge(async () => { runs += 1; throw new Error('once'); },
    { hedging: { maxAttempts: 3 }, policy, replaySafe: false }).catch((e) => e);
  assert.ok(err instanceof m.MulliganError, String(err));
  assert.equal(runs, 1);
  assert.equal(m.metricsFor('node_hedge_unsafe').attempts, 1);
});

test('on the real clock the hedge starts after its timer', async () => {
  const v = await m.hedge((ctx) => (ctx.copy === 1 ? hanging([], 1)(ctx) : 2),
    new m.HedgingPolicy({ maxAttempts: 2, delayMs: 1 }));
  assert.equal(v, 2);
});

test('bad options throw TypeError or RangeError at construction, naming the option', async () => {
  assert.throws(() => new m.HedgingPolicy({ maxAttempts: 1 }),
    { name: 'RangeError', message: 'HedgingPolicy: hedging: max_attempts must be >= 2 (gRPC A6), got 1' });
  assert.throws(() => new m.HedgingPolicy({ delayMs: -1 }), { name: 'RangeError', message: /hedging_delay_ms/ });
  assert.throws(() => new m.HedgingPolicy({ delayMs: Infinity }), { name: 'RangeError' });
  assert.throws(() => new m.HedgingPolicy({ delayQuantile: 1.5 }),
    { name: 'RangeError', message: /delay_quantile must be in \(0, 1\], got 1.5/ });
  assert.throws(() => new m.HedgingPolicy({ quantileWindow: 10 }),
    { name: 'RangeError', message: /quantile_min_samples must be in \[1, quantile_window = 10\], got 20/ });
  assert.throws(() => new m.HedgingPolicy({ maxAttempts: '3' }), { name: 'TypeError', message: 'maxAttempts: expected a number' });
  assert.throws(() => new m.HedgingPolicy({ maxAttempts: 2.5 }), { name: 'TypeError', message: 'maxAttempts: expected an integer' });
  // An integer past a C int is an integer: above 5 is 5 (it was "expected an
  // integer", from an undefined cast); a window past it is refused by name.
  for (const n of [2 ** 31, 2 ** 53, 1e300]) {
    assert.doesNotThrow(() => new m.HedgingPolicy({ maxAttempts: n }).close());
  }
  assert.throws(() => new m.HedgingPolicy({ quantileWindow: 2 ** 31 }),
    { name: 'RangeError', message: /quantile_window must be in \[1, 100000\], got 2147483647/ });
  assert.throws(() => new m.HedgingPolicy({ maxAttempts: Infinity }), { name: 'TypeError', message: 'maxAttempts: expected an integer' });
  assert.throws(() => new m.HedgingPolicy({ delay: 5 }), { name: 'TypeError', message: 'delay: unknown option' });
  assert.throws(() => new m.HedgingPolicy(3), { name: 'TypeError' });
  assert.equal(new m.HedgingPolicy({ delayMs: 7, delayQuantile: 0.95 }).currentDelayMs, 7);
  const fn = () => 1;
  await assert.rejects(m.hedge('x'), { name: 'TypeError', message: 'fn: expected a function' });
  await assert.rejects(m.hedge(fn, { signal: 1 }), { name: 'TypeError', message: 'signal: expected an AbortSignal' });
  await assert.rejects(m.hedge(fn, { policy: 3 }), { name: 'TypeError', message: 'policy: expected a RetryPolicy or its options' });
  await assert.rejects(m.hedge(fn, { hedging: 'fast' }), { name: 'TypeError' });
  await assert.rejects(m.hedge(fn, { hedging: { maxAttempts: 0 } }), { name: 'RangeError' });
  await assert.rejects(m.hedge(fn, { maxAttempts: 3 }), { name: 'TypeError', message: 'maxAttempts: unknown option' });
  await assert.rejects(m.hedge(fn, { replaySafe: 'yes' }), { name: 'TypeError' });
  assert.throws(() => new m.RetryBudget({ maxTokens: -1 }), { name: 'RangeError', message: /max_tokens/ });
  // The engine's text once, naming the budget (it read "budget: budget: ...").
  assert.throws(() => new m.RetryBudget({ tokenRatio: -1 }),
    { name: 'RangeError', message: /^budget: token_bucket\.token_ratio must be >= 0\.001/ });
  assert.throws(() => new m.RetryBudget({ name: 'x', tokenRatio: -1 }),
    { name: 'RangeError', message: /^budget 'x': token_bucket\.token_ratio must be >= 0\.001/ });
  assert.throws(() => new m.RetryBudget({ kind: 'leaky' }), { name: 'RangeError', message: /kind: expected one of tokenBucket, quota, ratio/ });
  assert.throws(() => new m.RetryBudget({ maxTokens: 'x' }), { name: 'TypeError', message: 'maxTokens: expected a number' });
  assert.throws(() => new m.RetryBudget({ tokens: 1 }), { name: 'TypeError', message: 'tokens: unknown option' });
  assert.throws(() => new m.RetryBudget({ shared: true }), { name: 'TypeError' });
  assert.throws(() => new m.RetryPolicy({ budget: {} }), { name: 'TypeError', message: 'budget: expected a RetryBudget' });
  assert.throws(() => new m.RetryBudget().onFailure('slow'), { name: 'RangeError' });
  const quota = new m.RetryBudget({ kind: 'quota', capacity: 20 });
  assert.equal(quota.kind, 'quota');
  assert.equal(quota.tokens(), 20);
});
