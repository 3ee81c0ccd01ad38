'use strict';
// signals.js — AbortSignal helpers shared by withRetry and ResilientClient.

/**
 * A signal aborted when `signal` aborts or `timeoutMs` elapses (an attempt
 * timeout). AbortSignal.any where the runtime has it (Node >= 20.3), else
 * an AbortController wired by hand (Node 18). `timedOut()` tells whether the
 * timeout (not the caller) aborted it.
 * @param {AbortSignal|undefined} signal  the caller's signal
 * @param {number} timeoutMs  > 0, rounded up to whole ms
 */
function attemptSignal(signal, timeoutMs) {
  const t = AbortSignal.timeout(Math.max(1, Math.ceil(timeoutMs)));
  if (signal === undefined) return { signal: t, timedOut: () => t.aborted };
  if (typeof AbortSignal.any === 'function') {
    return { signal: AbortSignal.any([signal, t]), timedOut: () => t.aborted && !signal.aborted };
  }
  const ac = new AbortController();
  const onAbort = (s) => () => ac.abort(s.reason);
  signal.addEventListener('abort', onAbort(signal), { once: true });
  t.addEventListener('abort', onAbort(t), { once: true });
  return { signal: ac.signal, timedOut: () => t.aborted && !signal.aborted };
}

/**
 * Waits `ms` on a timer, or advances `fake` (a FakeClock) by ms and yields
 * once to the event loop. Rejects with the signal's reason when it aborts.
 * A wait of 0 ms returns undefined at once (no timer).
 */
function wait(ms, signal, fake) {
  if (ms <= 0) return undefined; // a zero wait starts no timer (setTimeout(0) is >= 1 ms)
  if (fake !== undefined) {
    fake.advance(ms);
    return new Promise((resolve) => setImmediate(resolve));
  }
  return new Promise((resolve, reject) => {
    if (signal === undefined) {
      setTimeout(resolve, ms);
      return;
    }
    const onAbort = () => { clearTimeout(t); reject(signal.reason); };
    const t = setTimeout(() => { signal.removeEventListener('abort', onAbort); resolve(); }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

module.exports = { attemptSignal, wait };
