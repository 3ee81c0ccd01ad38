// bench/node/bench.mjs — mulligan's Node binding against p-retry, cockatiel
// and opossum, on three paths, every library in the same run:
//   1. retry, first-attempt success;
//   2. two failures then success, zero wait;
//   3. a breaker guarding a success (p-retry has none).
// A plain timing harness: each case runs its calls one after the other
// (awaited) after a warm-up, in ROUNDS interleaved rounds (see timeAll);
// the median round is printed in ns per call. Run: eval "$(scripts/install_capi.sh)"; (cd bindings/node && npm ci);
// cd bench/node && npm ci && node bench.mjs
// MULLIGAN_MODULE=<dir> replaces ../../bindings/node (to swap the columns);
// MULLIGAN_BASELINE=<a bindings/node directory, built> adds its column,
// 'mulligan (baseline)', timed in the same rounds: before and after a change
// in one run (its addon must link a libmulligan of another soname, or the
// process loads one library for both).
import { createRequire } from 'node:module';
import pRetry from 'p-retry';
import { retry, handleAll, ConstantBackoff, circuitBreaker, ConsecutiveBreaker } from 'cockatiel';
import CircuitBreakerOpossum from 'opossum';

const require = createRequire(import.meta.url);
const m = require(process.env.MULLIGAN_MODULE ?? '../../bindings/node');
const baseline = process.env.MULLIGAN_BASELINE ? require(process.env.MULLIGAN_BASELINE) : undefined;

const N = Number(process.env.N ?? 20000);
const ROUNDS = Number(process.env.ROUNDS ?? 9);

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

// Each round times every library of a path in turn (interleaved, so that
// they share the machine's load; the order rotates from round to round), each for up to N calls or about
// BUDGET_MS, whichever ends first (a peer that waits on setTimeout(0) takes
// >= 1 ms a retry); the median round of each library is printed.
const BUDGET_MS = Number(process.env.BUDGET_MS ?? 100);
async function slice(run) {
  const t0 = process.hrtime.bigint();
  const stop = t0 + BigInt(BUDGET_MS) * 1000000n;
  let n = 0;
  let t = t0;
  while (n < N && t < stop) {
    for (let i = 0; i < 50; i++) await run();
    n += 50;
    t = process.hrtime.bigint();
  }
  return Number(t - t0) / n;
}

async function timeAll(impls) {
  const runs = impls.map((make) => make && make());
  const results = runs.map(() => []);
  for (const run of runs) if (run) for (let i = 0; i < 200; i++) await run();
  // Round r starts with library r (mod their number), so that no library
  // always runs first, after the previous round's garbage.
  for (let r = 0; r < ROUNDS; r++) {
    for (let j = 0; j < runs.length; j++) {
      const i = (j + r) % runs.length;
      if (runs[i]) results[i].push(await slice(runs[i]));
    }
  }
  return results.map((xs) => {
    if (xs.length === 0) return null;
    xs.sort((a, b) => a - b);
    return xs[Math.floor(xs.length / 2)];
  });
}

// Each case's mulligan entry takes the module, so the baseline runs the same code.
const cases = {
  'retry, first-attempt success': {
    mulligan: (m) => {
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
    mulligan: (m) => {
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
    mulligan: (m) => {
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
if (baseline !== undefined) libs.splice(1, 0, 'mulligan (baseline)');
// Each mulligan column runs its own copy of the case's code (a fresh function
// literal from a direct eval): closures of one literal share V8's inline
// caches, which two modules' objects would make polymorphic, slowing
// whichever column ran second by up to 40% even for identical code.
const fresh = (make) => eval(`(${make.toString()})`); // eslint-disable-line no-eval
for (const impls of Object.values(cases)) {
  const make = impls.mulligan;
  impls.mulligan = () => fresh(make)(m);
  if (baseline !== undefined) impls['mulligan (baseline)'] = () => fresh(make)(baseline);
}
console.log(`node ${process.version}, rounds of up to ${N} calls or ${BUDGET_MS} ms, median of ${ROUNDS}, ns per call`);
console.log(`| path | ${libs.join(' | ')} |`);
console.log(`| --- | ${libs.map(() => '---').join(' | ')} |`);
for (const [name, impls] of Object.entries(cases)) {
  const ns = await timeAll(libs.map((lib) => impls[lib]));
  const cells = ns.map((x) => (x === null ? '(none)' : `${Math.round(x).toLocaleString('en-US')} ns`));
  console.log(`| ${name} | ${cells.join(' | ')} |`);
}
process.exit(0);
