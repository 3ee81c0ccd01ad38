'use strict';
// ResilientClient against a real nginx on a free loopback port
// (tests/nginx/nginx_server.py, the C and Go tests' launcher), and the
// /metrics handler. Retries wait 0 ms (baseDelayMs 0), except where a
// Retry-After is scripted, which the fake clock absorbs.
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const http = require('node:http');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const m = require('..');

const root = path.join(__dirname, '..', '..', '..');

async function startNginx(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mulligan-node-'));
  const portFile = path.join(dir, 'port');
  const child = spawn(process.env.PYTHON || 'python3', [path.join(root, 'tests', 'nginx', 'nginx_server.py'), 'serve',
    '--port-file', portFile, '--workdir', path.join(dir, 'work')], { stdio: ['pipe', 'ignore', 'inherit'] });
  t.after(() => { child.stdin.end(); });
  for (let waited = 0; waited < 15000; waited += 50) {
    try {
      const port = parseInt(fs.readFileSync(portFile, 'utf8'), 10);
      if (port > 0) return `http://127.0.0.1:${port}`;
    } catch { /* not yet */ }
    if (child.exitCode !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  t.skip('nginx did not start');
  return null;
}

function closedPort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

test('ResilientClient against nginx', async (t) => {
  const base = await startNginx(t);
  if (base === null) return;
  const clock = new m.FakeClock();
  const retries = [];
  const c = new m.ResilientClient({ retry: { strategy: 'immediate', maxAttempts: 3 }, clock,
    breaker: { failureThreshold: 100 }, onRetry: (e) => retries.push([e.status, e.delayMs, e.fromRetryAfter]) });

  let r = await c.fetch(`${base}/ok`);
  assert.equal(r.status, 200);
  assert.equal(await r.text(), 'ok\n');
  assert.deepEqual(r.mulligan, { attempts: 1, stopReason: 'succeeded' });

  r = await c.fetch(`${base}/down`);
  assert.equal(r.status, 503);
  assert.deepEqual(r.mulligan, { attempts: 3, stopReason: 'attempts_exhausted' });

  // Retry-After from the server replaces the backoff: 503:2 then 200
  retries.length = 0;
  const id = `n${process.pid}`;
  r = await c.fetch(`${base}/script?id=${id}&steps=503:2,200`);
  assert.equal(r.status, 200);
  assert.deepEqual(retries, [[503, 2000, true]]);
  assert.equal(r.mulligan.attempts, 2);

  // POST gets an Idempotency-Key, the same on every attempt, and is retried
  r = await c.fetch(`${base}/script?id=${id}p&steps=503,200`, { method: 'POST', body: 'x' });
  assert.equal(r.status, 200);
  assert.equal(r.mulligan.attempts, 2);
  const key = r.headers.get('echo-idempotency-key');
  assert.match(key, /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  r = await c.fetch(`${base}/echo`, { method: 'POST', body: 'hello', headers: { 'Idempotency-Key': 'key-123' } });
  assert.equal(await r.text(), 'method=POST\nidempotency_key=key-123\nbody=hello\n');

  // without keys a POST is not replayed once sent
  const noKeys = new m.ResilientClient({ retry: { strategy: 'immediate' }, idempotencyKeys: false, breaker: false });
  r = await noKeys.fetch(`${base}/down`, { method: 'POST', body: 'x' });
  assert.deepEqual(r.mulligan, { attempts: 1, stopReason: 'not_replay_safe' });
  // a terminal status is the answer
  r = await noKeys.fetch(`${base}/nothing-here`);
  assert.equal(r.status, 404);
  assert.equal(r.mulligan.stopReason, 'terminal');

  // connection refused: TransportError with the fetch error as cause
  const port = await closedPort();
  const err = await noKeys.fetch(`http://127.0.0.1:${port}/`).catch((e) => e);
  assert.ok(err instanceof m.TransportError, String(err));
  assert.equal(err.code, 'MULLIGAN_E_TRANSPORT');
  assert.equal(err.attempts, 3);
  assert.equal(err.cause.cause.code, 'ECONNREFUSED');
  await assert.rejects(noKeys.fetch('not a url'), TypeError);
  noKeys.close();
  c.close();
});

test('breakers per origin and per URL, with a fallback', async (t) => {
  const base = await startNginx(t);
  if (base === null) return;
  const c = new m.ResilientClient({ retry: { strategy: 'immediate', maxAttempts: 1 }, breakerScope: 'url',
    breaker: { failureThreshold: 2, resetTimeoutMs: 60000 }, fallback: (req, e) => `fallback for ${new URL(req.url).pathname}: ${e.code}` });
  assert.equal(await c.fetch(`${base}/down`), 'fallback for /down: MULLIGAN_E_RETRIES_EXHAUSTED');
  assert.equal(await c.fetch(`${base}/down`), 'fallback for /down: MULLIGAN_E_RETRIES_EXHAUSTED');
  assert.equal(c.breakerFor(`${base}/down`).state, 'open');
  assert.equal(await c.fetch(`${base}/down?q=1`), 'fallback for /down: MULLIGAN_E_CIRCUIT_OPEN');
  // another URL of the same origin has its own breaker
  assert.equal(c.breakerFor(`${base}/ok`).state, 'closed');
  assert.equal((await c.fetch(`${base}/ok`)).status, 200);
  c.close();

  const o = new m.ResilientClient({ retry: { strategy: 'immediate', maxAttempts: 1 }, breaker: { failureThreshold: 1 } });
  await o.fetch(`${base}/down`);
  const err = await o.fetch(`${base}/ok`).catch((e) => e);
  assert.ok(err instanceof m.CircuitOpenError, 'one breaker for the whole origin');
  assert.equal(o.keyOf(`${base}/a/b`), base);
  o.close();
});

test('metricsHandler serves the engine metrics JSON', async (t) => {
  const p = new m.RetryPolicy({ name: 'node_metrics_handler', strategy: 'immediate', maxAttempts: 2 });
  let n = 0;
  await m.withRetry(() => { if (n++ === 0) throw new Error('once'); return 1; }, p);
  const server = http.createServer(m.metricsHandler());
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => server.close());
  const url = `http://127.0.0.1:${server.address().port}`;
  const res = await fetch(`${url}/metrics`);
  assert.equal(res.status, 200);
  assert.equal(res.headers.get('content-type'), 'application/json');
  const body = await res.json();
  const mine = body.metrics.find((x) => x.name === 'node_metrics_handler');
  assert.equal(mine.calls, 1);
  assert.equal(mine.retries, 1);
  assert.equal(mine.successes, 1);
  assert.equal((await fetch(`${url}/other`)).status, 404);
  assert.equal((await fetch(`${url}/metrics`, { method: 'POST' })).status, 405);
});

test('client bad input names the option', () => {
  assert.throws(() => new m.ResilientClient({ breakerScope: 'host' }), (e) => e instanceof RangeError && /^breakerScope: /.test(e.message));
  assert.throws(() => new m.ResilientClient({ retry: { maxAttempts: -1 } }), (e) => e instanceof RangeError && /maxAttempts/.test(e.message));
  assert.throws(() => new m.ResilientClient({ retry: { tries: 1 } }), (e) => e instanceof TypeError && /retry\.tries/.test(e.message));
  assert.throws(() => new m.ResilientClient({ attemptTimeoutMs: 0 }), (e) => e instanceof RangeError && /attemptTimeoutMs/.test(e.message));
  assert.throws(() => new m.ResilientClient({ breaker: { resetTimeoutMs: -5 } }), (e) => e instanceof RangeError && /resetTimeoutMs/.test(e.message));
  assert.throws(() => new m.ResilientClient({ fallback: 'x' }), (e) => e instanceof TypeError && /^fallback: /.test(e.message));
});

test('attempt timeouts and AbortSignal against a slow nginx location', async (t) => {
  const base = await startNginx(t);
  if (base === null) return;
  const c = new m.ResilientClient({ retry: { strategy: 'immediate', maxAttempts: 2 }, attemptTimeoutMs: 100, breaker: false });
  const err = await c.fetch(`${base}/slow?s=5`).catch((e) => e);
  assert.ok(err instanceof m.TimeoutError, String(err));
  assert.equal(err.code, 'MULLIGAN_E_TIMEOUT');
  assert.equal(err.attempts, 2);
  const ac = new AbortController();
  setTimeout(() => ac.abort(new Error('user')), 50);
  const c2 = new m.ResilientClient({ breaker: false });
  const aborted = await c2.fetch(`${base}/slow?s=5`, { signal: ac.signal }).catch((e) => e);
  assert.ok(aborted instanceof m.AbortError, String(aborted));
  assert.equal(aborted.abortReason.message, 'user');
  // An aborted fetch counts as cancelled, never as a failure (0.6): with
  // failureThreshold 1 one failure would open the breaker and refuse /ok.
  const ac3 = new AbortController();
  setTimeout(() => ac3.abort(new Error('user')), 50);
  const c3 = new m.ResilientClient({ name: 'node_client_cancel', retry: { maxAttempts: 3 },
    breaker: { failureThreshold: 1, resetTimeoutMs: 60000 } });
  const cut = await c3.fetch(`${base}/slow?s=5`, { signal: ac3.signal }).catch((e) => e);
  assert.ok(cut instanceof m.AbortError, String(cut));
  const s = m.metricsFor('node_client_cancel');
  // 1 call, its 1 attempt (cut in flight), 0 failures, 1 cancelled, none left.
  assert.deepEqual([s.calls, s.attempts, s.successes, s.failures, s.cancelled, s.inFlight],
    [1, 1, 0, 0, 1, 0]);
  assert.equal((await c3.fetch(`${base}/ok`)).status, 200);
  c.close();
  c2.close();
  c3.close();
});
