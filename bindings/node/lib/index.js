'use strict';
// mulligan for Node.js: retries, circuit breakers, a resilient fetch
// client, retry budgets and hedged calls (0.6) on mulligan's engine, through
// its C ABI (an N-API addon). Every decision (delays, stops, refusals, Retry-After) is the engine's; see the
// README's "Quick start: Node.js" and lib/index.d.ts for the types.
const { native } = require('./native');
const errors = require('./errors');
const { RetryPolicy, withRetry, STRATEGIES } = require('./retry');
const { FakeClock, CircuitBreaker, Permit } = require('./breaker');
const client = require('./client');
const { RetryBudget } = require('./budget');
const { HedgingPolicy, hedge } = require('./hedge');

module.exports = {
  withRetry,
  RetryPolicy,
  strategies: Object.freeze(Object.keys(STRATEGIES)),
  CircuitBreaker,
  Permit,
  FakeClock,
  RetryBudget,
  HedgingPolicy,
  hedge,
  ResilientClient: client.ResilientClient,
  parseRetryAfter: client.parseRetryAfter,
  newIdempotencyKey: client.newIdempotencyKey,
  metrics: client.metrics,
  metricsFor: client.metricsFor,
  resetMetrics: client.resetMetrics,
  metricsHandler: client.metricsHandler,
  permanent: errors.permanent,
  retryAfter: errors.retryAfter,
  Status: errors.Status,
  MulliganError: errors.MulliganError,
  RetriesExhaustedError: errors.RetriesExhaustedError,
  DeadlineExceededError: errors.DeadlineExceededError,
  TerminalError: errors.TerminalError,
  CircuitOpenError: errors.CircuitOpenError,
  TransportError: errors.TransportError,
  TimeoutError: errors.TimeoutError,
  AbortError: errors.AbortError,
  /** The engine's version, e.g. '0.5.0'. */
  version: native.version(),
};
