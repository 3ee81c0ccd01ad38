'use strict';
// client.js — ResilientClient: fetch does the attempts, the engine's
// pipeline (mulligan_pipeline.h) decides: breakers per origin or per URL
// (a breaker registry keyed by the call's key), retries with Retry-After
// (RFC 9110 section 10.2.3, parsed by the engine), replay safety of unsafe
// methods, fallbacks. Plus metricsHandler, the /metrics JSON endpoint.
const { native, scratch } = require('./native');
const errors = require('./errors');
const { CircuitBreaker, breakerOptions, clockHandle } = require('./breaker');
const { callFallback, engineOptionsForClient } = require('./retry');
const { attemptSignal, wait } = require('./signals');

const { Status } = errors;
const ACTION_STOP = 1;
const ADMISSION_WAIT = 1;
const STOP_SUCCEEDED = 1;
const STOP_TERMINAL = 2;
const STOP_DEADLINE = 4;

// RFC 9110 section 9.2.2: every method but POST and PATCH is idempotent, so
// only those are unsafe to replay; the Idempotency-Key header field
// (draft-ietf-httpapi-idempotency-key-header, section 2) makes them safe.
const NON_IDEMPOTENT = new Set(['POST', 'PATCH']);

// undici's error codes (fetch's TypeError cause) to mulligan_error_kind.
const ERROR_KINDS = {
  ECONNREFUSED: 1, ECONNRESET: 2, EPIPE: 2, UND_ERR_SOCKET: 2, UND_ERR_CLOSED: 2,
  ENOTFOUND: 3, EAI_AGAIN: 3, UND_ERR_CONNECT_TIMEOUT: 4, ETIMEDOUT: 4,
  UND_ERR_HEADERS_TIMEOUT: 5, UND_ERR_BODY_TIMEOUT: 5,
};
const ERROR_TIMEOUT = 5;
const ERROR_TLS = 6;
const ERROR_TRANSPORT = 8;

function errorKind(err, timedOut) {
  if (timedOut) return ERROR_TIMEOUT;
  const code = err && err.cause && err.cause.code;
  if (typeof code === 'string') {
    if (code in ERROR_KINDS) return ERROR_KINDS[code];
    if (code.startsWith('ERR_TLS') || code.includes('CERT') || code.startsWith('ERR_SSL')) return ERROR_TLS;
  }
  return ERROR_TRANSPORT;
}

/**
 * Parses a Retry-After field value (RFC 9110 section 10.2.3: delay-seconds
 * or an HTTP-date, and the lenient forms of mulligan_retry_after_parse)
 * with the engine's parser. Returns the delay in ms (0 for a past date;
 * saturates at about 9.2e12), or null when the value is not valid.
 * @param {string} value
 * @param {number} [nowUnixMs]  the current calendar time, ms since the epoch
 *   (default Date.now()); dates are measured from it.
 */
function parseRetryAfter(value, nowUnixMs = Date.now()) {
  if (typeof value !== 'string') throw new TypeError('value: expected a string');
  if (typeof nowUnixMs !== 'number' || !Number.isFinite(nowUnixMs)) throw new TypeError('nowUnixMs: expected a finite number');
  const ms = native.retryAfterParse(value, nowUnixMs);
  return ms < 0 ? null : ms;
}

/** A fresh Idempotency-Key (a random UUID v4, mulligan_idempotency_key_new). */
function newIdempotencyKey() { return native.idempotencyKeyNew(); }

const CLIENT_KEYS = ['retry', 'breaker', 'breakerScope', 'maxBreakers', 'attemptTimeoutMs', 'fallback',
  'fetch', 'idempotencyKeys', 'name', 'clock', 'onRetry'];

/**
 * A fetch-based client on mulligan's engine. Options (all optional):
 *   retry: the RetryPolicy options that concern retries (maxAttempts,
 *     strategy, baseDelayMs, ..., deadlineMs, retryableStatuses (default
 *     408 429 500 502 503 504), retryAfterMaxMs); times in ms;
 *   breaker: CircuitBreaker options for every key's breaker, or false for
 *     none (default: the engine's defaults);
 *   breakerScope: 'origin' (default: one breaker per scheme://host:port) or
 *     'url' (one per origin + path);
 *   maxBreakers: the registry's bound (default 10000);
 *   attemptTimeoutMs: each attempt's bound when retry sets none (default
 *     30000), trimmed by the engine to the deadline;
 *   fallback(request, error): the answer of a call that gave up on
 *     retryable failures or was refused (a Response or any value);
 *   idempotencyKeys (true): add an Idempotency-Key to POST and PATCH
 *     requests without one, so that they are retried;
 *   name: report metrics under one name (default: under each origin);
 *   fetch: the fetch function (default globalThis.fetch); clock: FakeClock;
 *   onRetry(event): called before each wait with { attempt, delayMs,
 *     fromRetryAfter, status, error, url }.
 * Bad options throw TypeError / RangeError naming the option.
 */
class ResilientClient {
  constructor(options = {}) {
    if (options === null || typeof options !== 'object') throw new TypeError('options: expected an object');
    for (const k of Object.keys(options)) if (!CLIENT_KEYS.includes(k)) throw new TypeError(`${k}: unknown option`);
    const scope = options.breakerScope ?? 'origin';
    if (scope !== 'origin' && scope !== 'url') throw new RangeError(`breakerScope: expected 'origin' or 'url', got ${String(scope)}`);
    this._scope = scope;
    for (const k of ['fallback', 'fetch', 'onRetry']) {
      if (options[k] !== undefined && typeof options[k] !== 'function') throw new TypeError(`${k}: expected a function`);
    }
    this._fallback = options.fallback;
    this._onRetry = options.onRetry;
    this._fetch = options.fetch ?? globalThis.fetch;
    this._keys = options.idempotencyKeys ?? true;
    if (typeof this._keys !== 'boolean') throw new TypeError('idempotencyKeys: expected a boolean');
    const t = options.attemptTimeoutMs ?? 30000;
    if (typeof t !== 'number' || !Number.isFinite(t) || t <= 0) throw new RangeError('attemptTimeoutMs: expected a finite number > 0');
    this._attemptTimeoutMs = t;
    const clock = clockHandle(options.clock, 'clock');
    this._fake = clock !== null ? options.clock : undefined;
    const engine = engineOptionsForClient(options.retry ?? {});
    if (options.name !== undefined) engine.name = options.name;
    if (clock !== null) engine.clock = clock;
    this._registry = null;
    if (options.breaker !== false) {
      const bound = options.maxBreakers ?? 0;
      if (!Number.isInteger(bound) || bound < 0) throw new RangeError('maxBreakers: expected an integer >= 0');
      this._registry = native.breakerCreate(breakerOptions(options.breaker, 'breaker'), clock, bound);
      engine.breakers = this._registry;
    }
    this._pipe = native.pipelineCreate(engine);
  }

  /** The breaker key of a URL: its origin, or origin + path ('url' scope). */
  keyOf(url) {
    const u = url instanceof URL ? url : new URL(String(url));
    const port = u.port || (u.protocol === 'https:' ? '443' : u.protocol === 'http:' ? '80' : '');
    const origin = `${u.protocol}//${u.hostname}${port ? `:${port}` : ''}`;
    return this._scope === 'origin' ? origin : origin + u.pathname;
  }

  /** The CircuitBreaker guarding `url` (created on first use); null with breaker: false. */
  breakerFor(url) {
    if (this._registry === null) return null;
    return CircuitBreaker._fromHandle(native.registryGet(this._registry, this.keyOf(url)));
  }

  /**
   * fetch(input, init) through the engine. Resolves to the final Response
   * (a success, a terminal status such as 404, or the last retryable
   * response once the engine stopped: check response.ok; response.mulligan
   * is { attempts, stopReason }), or to the fallback's value. Rejects with
   * CircuitOpenError (refused), TransportError / TimeoutError (the last
   * attempt failed without a response), AbortError (init.signal aborted),
   * each with the last failure as `cause`; TypeError for a bad URL.
   */
  async fetch(input, init = {}) {
    const request = new Request(input, init);
    const method = request.method.toUpperCase();
    const headers = new Headers(request.headers);
    if (this._keys && NON_IDEMPOTENT.has(method) && !headers.has('Idempotency-Key')) {
      headers.set('Idempotency-Key', native.idempotencyKeyNew());
    }
    const replaySafe = !NON_IDEMPOTENT.has(method) || headers.has('Idempotency-Key');
    const body = request.body === null ? undefined : await request.arrayBuffer();
    const signal = init.signal ?? undefined;
    const pipe = this._pipe;
    const call = native.callBegin(pipe, native.pipelineNow(pipe), this.keyOf(request.url), replaySafe,
      this._attemptTimeoutMs, this._fallback !== undefined);
    const state = { finished: false, inFlight: 0, last: undefined };
    try {
      return await this._loop(call, request, method, headers, body, signal, state);
    } finally {
      if (!state.finished) {
        // init.signal aborted: cancelled (never a failure); else abandoned.
        const end = signal !== undefined && signal.aborted ? native.callCancel : native.callAbandon;
        end(call, native.pipelineNow(pipe), state.inFlight);
      }
      native.close(call);
    }
  }

  async _attempt(request, method, headers, body, signal, timeoutMs) {
    const as = attemptSignal(signal, timeoutMs >= 0 ? timeoutMs : this._attemptTimeoutMs);
    try {
      return { res: await this._fetch(request.url, { method, headers, body, signal: as.signal, redirect: request.redirect }) };
    } catch (err) {
      if (signal !== undefined && signal.aborted) throw err;
      return { err, timedOut: as.timedOut() };
    }
  }

  async _loop(call, request, method, headers, body, signal, state) {
    const pipe = this._pipe;
    for (;;) {
      if (signal !== undefined && signal.aborted) throw this._aborted(signal, state, call);
      let st = native.callAdmit(call, native.pipelineNow(pipe));
      while (st === Status.OK && scratch[0] === ADMISSION_WAIT) {
        await this._wait(scratch[3], signal);
        st = native.callAdmit(call, native.pipelineNow(pipe));
      }
      if (st !== Status.OK) {
        state.finished = true;
        const e = new errors.CircuitOpenError(native.lastError(),
          { retryInMs: scratch[5], attempts: native.callAttempts(call), cause: state.last });
        if (scratch[6] === 1) return callFallback(this._fallback, request, e);
        throw e;
      }
      state.inFlight = 1;
      let r;
      try {
        r = await this._attempt(request, method, headers, body, signal, scratch[2]);
      } catch (err) {
        throw this._aborted(signal, state, call, err);
      }
      let kind = 0;
      let status = 0;
      let ra = -1;
      if (r.res !== undefined) {
        status = r.res.status;
        const h = r.res.headers.get('retry-after');
        if (h !== null) ra = native.retryAfterParse(h, Date.now());
        state.last = r.res;
      } else {
        kind = errorKind(r.err, r.timedOut);
        state.last = r.err;
      }
      native.callRecord(call, native.pipelineNow(pipe), kind, status, ra, -1);
      state.inFlight = 0;
      if (scratch[0] === ACTION_STOP) {
        state.finished = true;
        return this._stop(call, request, scratch[2], scratch[6] === 1, r);
      }
      const delayMs = scratch[1];
      const event = { attempt: scratch[4], delayMs, fromRetryAfter: scratch[5] === 1, status, error: r.err, url: request.url };
      if (r.res !== undefined && r.res.body !== null) await r.res.body.cancel().catch(() => {});
      if (this._onRetry !== undefined) {
        try { this._onRetry(event); } catch (cbErr) {
          throw new TypeError(`onRetry threw: ${cbErr && cbErr.message}`, { cause: cbErr });
        }
      }
      try {
        await this._wait(delayMs, signal);
      } catch (reason) {
        throw this._aborted(signal, state, call);
      }
    }
  }

  _stop(call, request, reason, useFallback, r) {
    const attempts = native.callAttempts(call);
    const stopReason = native.stopReasonStr(reason);
    if (r.res !== undefined && (reason === STOP_SUCCEEDED || reason === STOP_TERMINAL || !useFallback)) {
      r.res.mulligan = { attempts, stopReason };
      return r.res;
    }
    let e;
    if (r.res !== undefined) {
      e = new errors.RetriesExhaustedError(`gave up after ${attempts} attempt(s) (${stopReason}): HTTP ${r.res.status}`,
        { reason: stopReason, attempts, cause: r.res });
    } else if (reason === STOP_DEADLINE) {
      e = new errors.DeadlineExceededError(`the deadline ended the retries: ${r.err.message}`, { reason: stopReason, attempts, cause: r.err });
    } else if (errorKind(r.err, r.timedOut) === ERROR_TIMEOUT) {
      e = new errors.TimeoutError(`the attempt timed out (${stopReason})`, { reason: stopReason, attempts, cause: r.err });
    } else {
      e = new errors.TransportError(`${r.err.message} (${stopReason} after ${attempts} attempt(s))`, { reason: stopReason, attempts, cause: r.err });
    }
    if (useFallback) return callFallback(this._fallback, request, e);
    throw e;
  }

  _aborted(signal, state, call) {
    return new errors.AbortError('the request was aborted',
      { abortReason: signal && signal.reason, cause: state.last, attempts: native.callAttempts(call) });
  }

  _wait(ms, signal) { return wait(ms, signal, this._fake); }

  /** Releases the pipeline and the breakers (calls in progress keep them alive). */
  close() {
    native.close(this._pipe);
    if (this._registry !== null) native.close(this._registry);
  }
}

/** Every name's metrics (mulligan_metrics_json), parsed. */
function metrics() { return JSON.parse(native.metricsJson()); }

/** One name's metrics (calls, attempts, retries, ...), or null when unknown. */
function metricsFor(name) {
  if (typeof name !== 'string') throw new TypeError('name: expected a string');
  return native.metricsGet(name);
}

/** Forgets every name's metrics (for tests; only while no call runs). */
function resetMetrics() { native.metricsReset(); }

/**
 * An http.createServer handler serving the engine's metrics JSON at `path`
 * (default '/metrics', GET or HEAD; 405 otherwise). Other paths go to
 * `next(req, res)` when given, else 404.
 */
function metricsHandler({ path = '/metrics', next } = {}) {
  if (typeof path !== 'string' || !path.startsWith('/')) throw new TypeError("path: expected a string starting with '/'");
  if (next !== undefined && typeof next !== 'function') throw new TypeError('next: expected a function');
  return (req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (url.pathname !== path) {
      if (next !== undefined) return next(req, res);
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      return res.end('not found\n');
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { Allow: 'GET, HEAD' });
      return res.end();
    }
    const body = native.metricsJson();
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    return res.end(req.method === 'HEAD' ? undefined : body);
  };
}

module.exports = { ResilientClient, parseRetryAfter, newIdempotencyKey, metrics, metricsFor, resetMetrics, metricsHandler };
