// Type declarations of the mulligan Node binding (lib/index.js). All times
// are milliseconds. Every decision is the engine's (the C ABI, mulligan.h).

/** The four strategies of the Node retry guide. */
export type Strategy = 'immediate' | 'fixed' | 'exponential' | 'exponential-jitter';
export type Backoff = 'constant' | 'linear' | 'exponential' | 'decorrelated';
export type Jitter = 'none' | 'full' | 'equal' | 'proportional';
export type BreakerState = 'closed' | 'open' | 'half_open' | 'forced_open' | 'disabled' | 'metrics_only';
export type StopReason = 'none' | 'succeeded' | 'terminal' | 'attempts_exhausted' | 'deadline'
  | 'retry_after_too_long' | 'not_replay_safe' | 'circuit_open' | 'budget' | 'throttled'
  | 'bulkhead_full' | 'rate_limited' | 'stop_condition';

export declare const strategies: readonly Strategy[];
/** The engine's version, e.g. '0.5.0'. */
export declare const version: string;

/** A manual clock: starts at a fixed reading, moves only when advanced; waits advance it. */
export declare class FakeClock {
  constructor();
  /** @throws RangeError for a negative or non-finite ms. */
  advance(ms: number): void;
  readonly nowMs: number;
  close(): void;
}

/** The retry settings shared by RetryPolicy and ResilientClient's `retry`. */
export interface RetryOptions {
  strategy?: Strategy;
  /** Attempts in all, the first included (default 3). */
  maxAttempts?: number;
  baseDelayMs?: number;
  multiplier?: number;
  maxDelayMs?: number;
  minDelayMs?: number;
  backoff?: Backoff;
  jitter?: Jitter;
  jitterFraction?: number;
  /** Reproducible jitter: a safe non-negative integer. */
  seed?: number;
  /** The total time budget from the first attempt. */
  deadlineMs?: number;
  /** Each attempt's bound (its AbortSignal times out). */
  attemptTimeoutMs?: number;
  retryAfterMaxMs?: number;
  retryAfterClamp?: boolean;
  respectRetryAfter?: boolean;
}

export interface RetryEvent {
  /** The attempt that failed (1 for the first). */
  attempt: number;
  /** The wait before the next attempt, decided by the engine. */
  delayMs: number;
  fromRetryAfter: boolean;
  error: unknown;
}

export interface AttemptContext {
  attempt: number;
  /** The caller's signal, combined with the attempt timeout when one is set. */
  signal: AbortSignal | undefined;
}

export interface RetryPolicyOptions<T = unknown> extends RetryOptions {
  /** Metrics name (metricsFor(name)); also turns off the engine-free success path. */
  name?: string;
  breaker?: CircuitBreaker;
  /** Asked before every retry and every hedged copy after the first. (Added in 0.6.) */
  budget?: RetryBudget;
  breakerPerAttempt?: boolean;
  reportMetrics?: boolean;
  clock?: FakeClock;
  /** false: the error is terminal, not retried (permanent(err) is terminal whatever it says). A throw is a TypeError. */
  isRetryable?: (error: unknown, attempt: number) => boolean;
  onRetry?: (event: RetryEvent) => void;
  /** Gets one line per attempt. */
  logger?: ((line: string) => void) | { info(line: string): void };
  /** Answers a give-up or a refusal instead of rejecting. */
  fallback?: (error: MulliganError) => T | Promise<T>;
}

export interface WithRetryOptions<T = unknown> extends RetryPolicyOptions<T> {
  signal?: AbortSignal;
}

/** A validated policy (an engine pipeline), built once, shared by calls. */
export declare class RetryPolicy<T = unknown> {
  /** @throws TypeError (wrong type, unknown option) or RangeError (engine-rejected value), naming the option. */
  constructor(options?: RetryPolicyOptions<T>);
  nowMs(): number;
  close(): void;
}

/**
 * Runs fn until it succeeds or the engine stops.
 * @throws RetriesExhaustedError | DeadlineExceededError | TerminalError |
 *   CircuitOpenError | AbortError (cause: the last error); TypeError for
 *   bad input or a throwing callback.
 */
export declare function withRetry<T>(fn: (ctx: AttemptContext) => T | Promise<T>,
  options?: WithRetryOptions<T> | RetryPolicy<T>): Promise<T>;

/** Marks an error terminal (not retried); returns it. */
export declare function permanent<E extends object>(error: E): E;
/** Attaches a Retry-After hint in ms; returns the error. */
export declare function retryAfter<E extends object>(error: E, ms: number): E;

export interface BreakerOptions {
  name?: string;
  failureThreshold?: number;
  window?: 'none' | 'count' | 'time';
  windowSize?: number;
  windowDurationMs?: number;
  windowBuckets?: number;
  /** Percent. */
  failureRateThreshold?: number;
  minimumCalls?: number;
  slowCallDurationMs?: number;
  slowCallRateThreshold?: number;
  resetTimeoutMs?: number;
  resetTimeoutMultiplier?: number;
  maxResetTimeoutMs?: number;
  halfOpenMaxCalls?: number;
  permitTimeoutMs?: number;
}

export interface CircuitBreakerOptions extends BreakerOptions {
  clock?: FakeClock;
  /** execute(): false records the error as 'ignored'. */
  isFailure?: (error: unknown) => boolean;
}

export interface BreakerCounts {
  calls: number; successes: number; failures: number; ignored: number; slow: number;
  rejected: number; consecutiveFailures: number; windowCalls: number;
  windowFailureRate: number; windowSlowRate: number; stale: number;
}

export declare class Permit {
  readonly admitted: boolean;
  readonly state: BreakerState;
  readonly retryInMs: number;
  readonly probe: boolean;
  /** durationMs omitted: from the acquire until now. */
  record(result: 'success' | 'failure' | 'ignored', durationMs?: number): void;
}

export declare class CircuitBreaker {
  constructor(options?: CircuitBreakerOptions);
  acquire(): Permit;
  /** @throws CircuitOpenError when refused; fn's own error otherwise. */
  execute<T>(fn: () => T | Promise<T>): Promise<T>;
  readonly state: BreakerState;
  readonly timeUntilProbeMs: number;
  readonly name: string;
  counts(): BreakerCounts;
  forceOpen(): void;
  disable(): void;
  metricsOnly(): void;
  reset(): void;
  halfOpen(): void;
  close(): void;
}

export type BudgetKind = 'tokenBucket' | 'quota' | 'ratio';

/** Retry budget options (mulligan_budget_options); the defaults are the C ABI's. (Added in 0.6.) */
export interface RetryBudgetOptions {
  /** 'tokenBucket' (gRPC A6, the default), 'quota' (AWS standard), 'ratio' (Finagle). */
  kind?: BudgetKind;
  /** Token bucket: (0, 1000], default 100. */
  maxTokens?: number;
  /** Token bucket: > 0, default 0.5. */
  tokenRatio?: number;
  capacity?: number;
  retryCost?: number;
  timeoutCost?: number;
  throttlingCost?: number;
  noRetryIncrement?: number;
  /** Ratio: [1000, 60000] ms, default 10000. */
  ttlMs?: number;
  /** Ratio: [0, 1], default 0.2. */
  percent?: number;
  minRetriesPerSecond?: number;
  name?: string;
  /** The process-wide budget of `name`. */
  shared?: boolean;
  clock?: FakeClock;
}

/** A retry budget shared by policies (`budget`). (Added in 0.6.) */
export declare class RetryBudget {
  /** @throws TypeError (wrong type, unknown option) or RangeError (engine-rejected value). */
  constructor(options?: RetryBudgetOptions);
  onFailure(kind?: 'other' | 'timeout' | 'throttling'): void;
  tokens(): number;
  readonly refused: number;
  readonly allowed: number;
  readonly kind: BudgetKind;
  close(): void;
}

/** Hedging policy options (gRPC A6 hedgingPolicy). All times ms. (Added in 0.6.) */
export interface HedgingOptions {
  /** Copies per call, the first included: >= 2; above 5 is 5. Default 2. */
  maxAttempts?: number;
  /** Wait from one copy's start before the next may start, >= 0. Default 0. */
  delayMs?: number;
  /** 0 (default): delayMs; else (0, 1]: that quantile of recent winners' latencies. */
  delayQuantile?: number;
  /** [1, 100000], default 100. */
  quantileWindow?: number;
  /** [1, quantileWindow], default 20. */
  quantileMinSamples?: number;
}

/** A validated hedging policy; share it between hedge() calls. (Added in 0.6.) */
export declare class HedgingPolicy {
  /** @throws TypeError (wrong type, unknown option) or RangeError (engine-rejected value). */
  constructor(options?: HedgingOptions);
  /** The delay a copy started now would wait before the next, ms. */
  readonly currentDelayMs: number;
  close(): void;
}

export interface CopyContext {
  /** The copy's number, 1 for the first. */
  copy: number;
  /** Aborted when the copy loses, the call ends, or the caller's signal fires. */
  signal: AbortSignal;
}

export interface HedgeOptions {
  hedging?: HedgingPolicy | HedgingOptions;
  /** Classification, breaker, budget, deadline, attempt timeout, metrics name, clock. */
  policy?: RetryPolicy | RetryPolicyOptions;
  /** Aborts every copy; the call counts as cancelled. */
  signal?: AbortSignal;
  /** The call's breaker (of a registry) and metrics key. */
  key?: string;
  /** false: one copy only. Default true. */
  replaySafe?: boolean;
}

/**
 * Runs fn as a hedged call: copies started by the engine's schedule, the
 * first to resolve wins, the others are aborted. (Added in 0.6.)
 * @throws TerminalError | RetriesExhaustedError | DeadlineExceededError |
 *   CircuitOpenError | AbortError (cause: the last copy's error); TypeError
 *   for bad input.
 */
export declare function hedge<T>(fn: (ctx: CopyContext) => T | Promise<T>,
  options?: HedgeOptions | HedgingPolicy): Promise<T>;

export interface ClientRetryOptions extends RetryOptions {
  /** Default 408 429 500 502 503 504. */
  retryableStatuses?: number[];
}

export interface ClientRetryEvent {
  attempt: number;
  delayMs: number;
  fromRetryAfter: boolean;
  /** The response's status, 0 for a transport failure. */
  status: number;
  error: unknown;
  url: string;
}

export interface ResilientClientOptions {
  retry?: ClientRetryOptions;
  breaker?: BreakerOptions | false;
  breakerScope?: 'origin' | 'url';
  maxBreakers?: number;
  attemptTimeoutMs?: number;
  fallback?: (request: Request, error: MulliganError) => unknown;
  idempotencyKeys?: boolean;
  name?: string;
  fetch?: typeof fetch;
  clock?: FakeClock;
  onRetry?: (event: ClientRetryEvent) => void;
}

export interface MulliganResponse extends Response {
  mulligan: { attempts: number; stopReason: StopReason };
}

export declare class ResilientClient {
  constructor(options?: ResilientClientOptions);
  fetch(input: string | URL | Request, init?: RequestInit): Promise<MulliganResponse | any>;
  keyOf(url: string | URL): string;
  breakerFor(url: string | URL): CircuitBreaker | null;
  close(): void;
}

/** ms (0 for a past date; saturates at ~9.2e12), or null when invalid. */
export declare function parseRetryAfter(value: string, nowUnixMs?: number): number | null;
export declare function newIdempotencyKey(): string;

export interface MetricsSnapshot {
  calls: number; attempts: number; retries: number; successes: number; failures: number;
  fallbacks: number; shortCircuits: number; circuitOpens: number; inFlight: number;
  waitingToRetry: number; breakerState: number;
  /** Calls their caller cancelled (an AbortSignal fired): neither successes nor failures. (Added in 0.6.) */
  cancelled: number;
  /** Hedged copies started after the first (gRPC A96 grpc.client.call.hedges). (Added in 0.6.) */
  hedges: number;
  /** Hedged calls won by a copy after the first. (Added in 0.6.) */
  hedgesWon: number;
  /** Running copies cancelled because another won, the call failed or its caller aborted. (Added in 0.6.) */
  hedgeCancelled: number;
}
export declare function metrics(): { metrics: Array<Record<string, unknown>>; totals: Record<string, number> };
export declare function metricsFor(name: string): MetricsSnapshot | null;
export declare function resetMetrics(): void;
export declare function metricsHandler(options?: {
  path?: string;
  next?: (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void;
}): (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void;

export declare const Status: Readonly<Record<'OK' | 'INVALID_ARGUMENT' | 'NO_MEMORY' | 'INTERNAL' | 'CALLBACK'
  | 'RETRIES_EXHAUSTED' | 'DEADLINE_EXCEEDED' | 'CIRCUIT_OPEN' | 'UNAVAILABLE' | 'TRANSPORT' | 'TIMEOUT'
  | 'BUDGET_EXHAUSTED' | 'THROTTLED' | 'BULKHEAD_FULL' | 'RATE_LIMITED'
  | 'STATE_UNAVAILABLE' | 'OUTBOX', number>>;

export declare class MulliganError extends Error {
  /** The C name of the status, e.g. 'MULLIGAN_E_CIRCUIT_OPEN'. */
  readonly code: string;
  /** The status number (mulligan_status.h). */
  readonly status: number;
  readonly reason: StopReason | '';
  readonly attempts: number;
  readonly cause?: unknown;
}
export declare class RetriesExhaustedError extends MulliganError {}
export declare class DeadlineExceededError extends MulliganError {}
export declare class TerminalError extends MulliganError {}
export declare class CircuitOpenError extends MulliganError { readonly retryInMs: number; }
export declare class TransportError extends MulliganError {}
export declare class TimeoutError extends MulliganError {}
export declare class AbortError extends MulliganError { readonly abortReason: unknown; }
