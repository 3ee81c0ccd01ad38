// Type-checked only (npm run typecheck): the declarations of lib/index.d.ts
// accept the README's quick start and reject misuse (@ts-expect-error lines
// fail the check if the declarations ever accept them).
import * as http from 'node:http';
import {
  withRetry, RetryPolicy, CircuitBreaker, ResilientClient, FakeClock, metricsHandler,
  parseRetryAfter, MulliganError, CircuitOpenError, permanent, hedge, HedgingPolicy, RetryBudget,
  metricsFor,
} from '../lib';

async function main(): Promise<void> {
  const n: number = await withRetry(async ({ attempt }) => attempt * 2, {
    strategy: 'exponential-jitter', maxAttempts: 5, baseDelayMs: 100,
    isRetryable: (e) => !(e instanceof TypeError),
    onRetry: (e) => console.log(e.attempt, e.delayMs),
    signal: AbortSignal.timeout(1000),
  });
  const p = new RetryPolicy<string>({ strategy: 'fixed', baseDelayMs: 5, clock: new FakeClock() });
  const s: string = await withRetry(() => 'x', p);
  const b = new CircuitBreaker({ failureThreshold: 3, window: 'count', windowSize: 10 });
  const v: number = await b.execute(async () => 1);
  const c = new ResilientClient({ retry: { maxAttempts: 3 }, breakerScope: 'url', fallback: () => null });
  const r = await c.fetch('http://127.0.0.1/ok');
  const ms: number | null = parseRetryAfter('120');
  http.createServer(metricsHandler());
  try { await withRetry(() => { throw permanent(new Error('x')); }); } catch (e) {
    if (e instanceof CircuitOpenError) console.log(e.retryInMs);
    if (e instanceof MulliganError) console.log(e.code, e.reason, e.attempts, e.cause);
  }
  const hp = new HedgingPolicy({ maxAttempts: 3, delayMs: 50, delayQuantile: 0.95 });
  const budget = new RetryBudget({ kind: 'tokenBucket', maxTokens: 10, tokenRatio: 0.1 });
  const hpol = new RetryPolicy({ name: 'reads', budget, breaker: b });
  const h: string = await hedge(async ({ copy, signal }) => `${copy}${signal.aborted}`,
    { hedging: hp, policy: hpol, signal: AbortSignal.timeout(1000) });
  const h2: number = await hedge(() => 2, hp);
  const d: number = hp.currentDelayMs + budget.refused + (metricsFor('reads')?.hedgesWon ?? 0);
  // @ts-expect-error: not a budget kind
  new RetryBudget({ kind: 'leaky' });
  // @ts-expect-error: the copy's context has no attempt
  await hedge(({ attempt }) => attempt);
  console.log(h, h2, d);
  // @ts-expect-error: not a strategy
  await withRetry(() => 1, { strategy: 'fibonacci' });
  // @ts-expect-error: not a breaker window
  new CircuitBreaker({ window: 'sliding' });
  console.log(n, s, v, r, ms);
}
void main;
