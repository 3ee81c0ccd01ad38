'use strict';
// The shared vectors (tests/vectors) through the Node binding: the same
// delays, Retry-After values, breaker states and pipeline results as the
// C++, C, Python, Go and Rust front doors. The expected values are the
// files' (generated independently: tests/vectors/generate_backoff.py).
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');

const m = require('..');

function load(name) {
  return JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'tests', 'vectors', name), 'utf8'));
}
const ms = (s) => s * 1000;
const ns = (delayMs) => Math.round(delayMs * 1e6);

// A Policy's step API, for the sequences: the engine's call, no fn.
const { native, scratch } = require('../lib/native');
function stepper(policy) {
  const call = native.callBegin(policy._h, policy.nowMs(), null, true, -1, false);
  return {
    record(kind, status = 0, retryAfterMs = -1) {
      native.callRecord(call, policy.nowMs(), kind, status, retryAfterMs, -1);
      return { retry: scratch[0] === 0, delayMs: scratch[1], reason: native.stopReasonStr(scratch[2]), fromRetryAfter: scratch[5] === 1 };
    },
    close() { native.close(call); },
  };
}

test('backoff vectors: the same nanoseconds for a seeded generator', () => {
  const f = load('backoff.json');
  for (const c of f.cases) {
    const p = new m.RetryPolicy({
      backoff: c.backoff, jitter: c.jitter, baseDelayMs: c.base_ns / 1e6, maxDelayMs: c.max_delay_ns / 1e6,
      multiplier: c.multiplier, jitterFraction: c.jitter_fraction, seed: c.seed, maxAttempts: c.count + 1,
    });
    const s = stepper(p);
    for (let n = 0; n < c.count; n++) {
      const d = s.record(9);
      assert.ok(d.retry, `${c.name} retry ${n}`);
      assert.equal(ns(d.delayMs), c.expected_ns[n], `${c.name} retry ${n}`);
    }
    s.close();
    p.close();
  }
  assert.ok(f.cases.length > 10);
});

test('retry_after vectors at a fixed now', () => {
  const f = load('retry_after.json');
  for (const c of f.cases) {
    const got = m.parseRetryAfter(c.value, c.now_unix * 1000);
    if (c.saturated) assert.equal(got, 9223372036854.775807, c.value);
    else if (c.expected_seconds === null) assert.equal(got, null, JSON.stringify(c.value));
    else assert.equal(got, ms(c.expected_seconds), c.value);
  }
});

const breakerKeys = {
  failure_threshold: ['failureThreshold', 1], reset_timeout: ['resetTimeoutMs', 1000],
  half_open_max_calls: ['halfOpenMaxCalls', 1], window: ['window', 0], window_size: ['windowSize', 1],
  window_duration: ['windowDurationMs', 1000], window_buckets: ['windowBuckets', 1],
  failure_rate_threshold: ['failureRateThreshold', 1], minimum_calls: ['minimumCalls', 1],
  slow_call_duration: ['slowCallDurationMs', 1000], slow_call_rate_threshold: ['slowCallRateThreshold', 1],
  reset_timeout_multiplier: ['resetTimeoutMultiplier', 1], max_reset_timeout: ['maxResetTimeoutMs', 1000],
  permit_timeout: ['permitTimeoutMs', 1000],
};
function breakerOptions(clock, o) {
  const out = { clock };
  for (const [k, v] of Object.entries(o)) {
    const [name, scale] = breakerKeys[k] ?? assert.fail(`unknown breaker option ${k}`);
    out[name] = scale === 0 ? v : v * scale;
  }
  return out;
}

test('breaker event scripts: the same states, times and counters', () => {
  const f = load('breaker.json');
  for (const c of f.cases) {
    const clock = new m.FakeClock();
    const b = new m.CircuitBreaker(breakerOptions(clock, c.options));
    const permits = {};
    let now = 0;
    c.steps.forEach((s, i) => {
      if (s.at > now) { clock.advance(ms(s.at - now)); now = s.at; }
      const where = `${c.name} step ${i} (${s.op} at ${s.at} s)`;
      switch (s.op) {
        case 'acquire': permits[s.permit] = b.acquire(); break;
        case 'record': permits[s.permit].record(s.result, s.duration == null ? 0 : ms(s.duration)); break;
        case 'force_open': b.forceOpen(); break;
        case 'disable': b.disable(); break;
        case 'metrics_only': b.metricsOnly(); break;
        case 'reset': b.reset(); break;
        case 'check': break;
        default: assert.fail(`unknown op ${s.op}`);
      }
      const counts = b.counts();
      for (const [k, v] of Object.entries(s.expect ?? {})) {
        switch (k) {
          case 'admitted': assert.equal(permits[s.permit].admitted, v, where); break;
          case 'state':
            assert.equal(b.state, v, where);
            if (s.op === 'acquire') assert.equal(permits[s.permit].state, v, where);
            break;
          case 'retry_in': {
            const r = s.op === 'acquire' ? permits[s.permit].retryInMs : b.timeUntilProbeMs;
            if (v === null) assert.equal(r, 9223372036854.775807, where);
            else assert.ok(Math.abs(r - ms(v)) <= 1e-3, `${where}: retry_in ${r} ms, want ${v} s`);
            break;
          }
          case 'consecutive_failures': assert.equal(counts.consecutiveFailures, v, where); break;
          case 'successes': case 'failures': case 'ignored': case 'rejected':
            assert.equal(counts[k], v, `${where}: ${k}`); break;
          default: assert.fail(`unknown expectation ${k}`);
        }
      }
    });
    b.close();
  }
});

const kinds = { retryable: 9, terminal: 10, connection_refused: 1, connection_reset: 2, tls_error: 6, timeout: 5, dns_failure: 3 };
function policyOptions(clock, o) {
  const out = { clock, jitter: 'none' };
  const scale = { base_delay: 'baseDelayMs', max_delay: 'maxDelayMs', deadline: 'deadlineMs', retry_after_max: 'retryAfterMaxMs' };
  const plain = { max_attempts: 'maxAttempts', backoff: 'backoff', jitter: 'jitter', multiplier: 'multiplier', retry_after_clamp: 'retryAfterClamp' };
  for (const [k, v] of Object.entries(o)) {
    if (k in scale) out[scale[k]] = ms(v);
    else if (k in plain) out[plain[k]] = v;
    else assert.fail(`unknown policy option ${k}`);
  }
  return out;
}

test('deadline vectors: retry session scripts through the step API', () => {
  const f = load('deadline.json');
  for (const c of f.cases) {
    const clock = new m.FakeClock();
    const p = new m.RetryPolicy(policyOptions(clock, c.policy));
    const call = native.callBegin(p._h, p.nowMs(), null, c.replay_safe !== false, -1, false);
    let now = 0;
    c.steps.forEach((s, i) => {
      if (s.at > now) { clock.advance(ms(s.at - now)); now = s.at; }
      const kind = s.outcome.error ? kinds[s.outcome.error] ?? assert.fail(`unknown error ${s.outcome.error}`) : 0;
      const ra = s.outcome.retry_after == null ? -1 : ms(s.outcome.retry_after);
      native.callRecord(call, p.nowMs(), kind, s.outcome.http_status ?? 0, ra, -1);
      const where = `${c.name} step ${i}`;
      assert.equal(scratch[0] === 0 ? 'retry' : 'stop', s.expect.action, where);
      if (s.expect.delay != null) assert.equal(scratch[1], ms(s.expect.delay), where);
      if (s.expect.reason) assert.equal(native.stopReasonStr(scratch[2]), s.expect.reason, where);
      if (s.expect.from_retry_after != null) assert.equal(scratch[5] === 1, s.expect.from_retry_after, where);
    });
    native.close(call);
    p.close();
  }
});

test('pipeline vectors: scripted calls through withRetry on a fake clock', async () => {
  const f = load('pipeline.json');
  m.resetMetrics();
  for (const [ci, c] of f.cases.entries()) {
    const clock = new m.FakeClock();
    const name = `node_pipeline_vector_${ci}`;
    let delays = [];
    const opts = { ...policyOptions(clock, c.policy), name, onRetry: (e) => delays.push(e.delayMs) };
    let b;
    if (c.breaker) {
      b = new m.CircuitBreaker(breakerOptions(clock, c.breaker));
      opts.breaker = b;
    }
    const p = new m.RetryPolicy(opts);
    for (const [k, call] of c.calls.entries()) {
      clock.advance(ms(call.advance ?? 0));
      delays = [];
      let n = 0;
      let reason = 'succeeded';
      let refused = false;
      try {
        await m.withRetry(async () => {
          const step = call.script[n++];
          const outcome = typeof step === 'string' ? step : step.outcome;
          if (outcome === 'success') return 'ok';
          let e = new Error(`${outcome} failure`);
          if (outcome === 'terminal') e = m.permanent(e);
          if (typeof step === 'object' && step.retry_after != null) m.retryAfter(e, ms(step.retry_after));
          throw e;
        }, p);
      } catch (err) {
        assert.ok(err instanceof m.MulliganError, String(err));
        reason = err.reason;
        refused = err instanceof m.CircuitOpenError;
      }
      const where = `${c.name} call ${k}`;
      const ex = call.expect;
      assert.equal(reason, ex.stop_reason, where);
      assert.equal(n, ex.attempts, where);
      assert.equal(refused, ex.refused, where);
      assert.deepEqual(delays, ex.delays.map(ms), where);
      if (ex.breaker_state) assert.equal(b.state, ex.breaker_state, where);
    }
    const got = m.metricsFor(name);
    const keys = { calls: 'calls', attempts: 'attempts', retries: 'retries', successes: 'successes', failures: 'failures',
      short_circuits: 'shortCircuits', circuit_opens: 'circuitOpens', fallbacks: 'fallbacks' };
    for (const [k, v] of Object.entries(c.expect_metrics ?? {})) assert.equal(got[keys[k]], v, `${c.name}: metric ${k}`);
    p.close();
  }
});
