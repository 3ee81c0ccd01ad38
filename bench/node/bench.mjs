// bench/node/bench.mjs — mulligan's Node binding against p-retry, cockatiel
// and opossum, on three paths, every library in the same run:
//   1. retry, first-attempt success;
//   2. two failures then success, zero wait;
//   3. a breaker guarding a success (p-retry has none).
// A plain timing harness: each case runs N calls (awaited one after the
// other) after a warm-up, the median of ROUNDS rounds is printed in ns per
// call. Run: eval "$(scripts/install_capi.sh)"; (cd bindings/node && npm ci);
// cd bench/node && npm ci && node bench.mjs
import { createRequire } from 'node:module';
import pRetry from 'p-retry';
import { retry, handleAll, ConstantBackoff, circuitBreaker, ConsecutiveBreaker } from 'cockatiel';
import CircuitBreakerOpossum from 'opossum';

const require = createRequire(import.meta.url);
const m = require('../../bindings/node');

const N = Number(process.env.N ?? 20000);
const ROUNDS = Number(process.env.ROUNDS ?? 5);

function flaky(failures) {
  let n = 0;
  return {
    reset() { n = 0; },
    fn: async () => {
      if (n++ < failures) throw new Error('transient');
      return 1;
    },
  };
}

async function time(makeRun) {
  const results = [];
  const run = makeRun();
  for (let i = 0; i < Math.min(N, 2000); i++) await run();
  for (let r = 0; r < ROUNDS; r++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < N; i++) await run();
    results.push(Number(process.hrtime.bigint() - t0) / N);
  }
  results.sort((a, b) => a - b);
  return results[Math.floor(results.length / 2)];
}

const cases = {
  'retry, first-attempt success': {
    mulligan: () => {
      const p = new m.RetryPolicy({ strategy: 'immediate', maxAttempts: 3 });
      const f = async () => 1;
      return () => m.withRetry(f, p);
    },
    'p-retry': () => {
      const f = async () => 1;
      return () => pRetry(f, { retries: 2, minTimeout: 0, maxTimeout: 0, factor: 1 });
    },
    cockatiel: () => {
      const policy = retry(handleAll, { maxAttempts: 2, backoff: new ConstantBackoff(0) });
      const f = async () => 1;
      return () => policy.execute(f);
    },
    opossum: null,
  },
  'two failures then success, zero wait': {
    mulligan: () => {
      const p = new m.RetryPolicy({ strategy: 'immediate', maxAttempts: 3 });
      const f = flaky(2);
      return () => { f.reset(); return m.withRetry(f.fn, p); };
    },
    'p-retry': () => {
      const f = flaky(2);
      return () => { f.reset(); return pRetry(f.fn, { retries: 2, minTimeout: 0, maxTimeout: 0, factor: 1 }); };
    },
    cockatiel: () => {
      const policy = retry(handleAll, { maxAttempts: 2, backoff: new ConstantBackoff(0) });
      const f = flaky(2);
      return () => { f.reset(); return policy.execute(f.fn); };
    },
    opossum: null,
  },
  'breaker guarding a success': {
    mulligan: () => {
      const b = new m.CircuitBreaker({ failureThreshold: 5 });
      const f = async () => 1;
      return () => b.execute(f);
    },
    'p-retry': null,
    cockatiel: () => {
      const b = circuitBreaker(handleAll, { halfOpenAfter: 10000, breaker: new ConsecutiveBreaker(5) });
      const f = async () => 1;
      return () => b.execute(f);
    },
    opossum: () => {
      const b = new CircuitBreakerOpossum(async () => 1, { timeout: false, errorThresholdPercentage: 50, resetTimeout: 10000 });
      return () => b.fire();
    },
  },
};

const libs = ['mulligan', 'p-retry', 'cockatiel', 'opossum'];
console.log(`node ${process.version}, N=${N}, median of ${ROUNDS} rounds, ns per call`);
console.log(`| path | ${libs.join(' | ')} |`);
console.log(`| --- | ${libs.map(() => '---').join(' | ')} |`);
for (const [name, impls] of Object.entries(cases)) {
  const cells = [];
  for (const lib of libs) {
    if (impls[lib] === null) { cells.push('(none)'); continue; }
    const ns = await time(impls[lib]);
    cells.push(`${Math.round(ns).toLocaleString('en-US')} ns`);
  }
  console.log(`| ${name} | ${cells.join(' | ')} |`);
}
process.exit(0);
