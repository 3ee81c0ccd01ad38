package mulligan

/*
#include <stdlib.h>
#include <mulligan.h>
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// Option configures a Policy (NewPolicy). Each option's value is checked by
// the engine at once: a bad value makes NewPolicy return an *Error with
// CodeInvalidArgument naming the field.
type Option func(*policyConfig) error

type policyConfig struct {
	retry    *C.mulligan_retry_options
	pipe     *C.mulligan_pipeline_options
	clock    *FakeClock
	breaker  *CircuitBreaker
	name     string
	deadline bool
	timeout  bool
	metrics  *bool
	retryIf  func(error) bool
	onRetry  func(RetryEvent)
	budget   *RetryBudget
	throttle *Throttle
	bulkhead *Bulkhead
	limiter  *RateLimiter
}

func rcOpt(op string, rc C.int) error { return cerr("NewPolicy: "+op, rc) }

// WithMaxAttempts sets the total attempts, the first included (>= 1; default 3).
func WithMaxAttempts(n int) Option {
	return func(c *policyConfig) error {
		return rcOpt("max attempts", C.mulligan_retry_options_set_max_attempts(c.retry, C.int(n)))
	}
}

// WithBackoff sets the backoff strategy (default BackoffExponential).
func WithBackoff(b Backoff) Option {
	return func(c *policyConfig) error {
		return rcOpt("backoff", C.mulligan_retry_options_set_backoff(c.retry, C.mulligan_backoff_kind(b)))
	}
}

// WithBaseDelay sets the base delay (>= 0; default 200ms; 0 means no wait).
func WithBaseDelay(d time.Duration) Option {
	return func(c *policyConfig) error {
		return rcOpt("base delay", C.mulligan_retry_options_set_base_delay_ms(c.retry, msOf(d)))
	}
}

// WithMultiplier sets the exponential growth factor (>= 0; default 2).
func WithMultiplier(m float64) Option {
	return func(c *policyConfig) error {
		return rcOpt("multiplier", C.mulligan_retry_options_set_multiplier(c.retry, C.double(m)))
	}
}

// WithMaxDelay sets the cap of every delay, applied after jitter (>= 0;
// default 10s).
func WithMaxDelay(d time.Duration) Option {
	return func(c *policyConfig) error {
		return rcOpt("max delay", C.mulligan_retry_options_set_max_delay_ms(c.retry, msOf(d)))
	}
}

// WithJitter sets the jitter kind (default JitterFull).
func WithJitter(j Jitter) Option {
	return func(c *policyConfig) error {
		return rcOpt("jitter", C.mulligan_retry_options_set_jitter(c.retry, C.mulligan_jitter_kind(j)))
	}
}

// WithJitterFraction sets f of JitterProportional (in [0, 1]; default 0.2).
func WithJitterFraction(f float64) Option {
	return func(c *policyConfig) error {
		return rcOpt("jitter fraction", C.mulligan_retry_options_set_jitter_fraction(c.retry, C.double(f)))
	}
}

// WithDeadline sets the engine's time budget of one logical call, from the
// start of its first attempt (> 0; default none). A context deadline is the
// other way to bound a call; both apply. With a deadline every call enters
// the engine before its first attempt (its timeout is trimmed to it).
func WithDeadline(d time.Duration) Option {
	return func(c *policyConfig) error {
		c.deadline = true
		return rcOpt("deadline", C.mulligan_retry_options_set_deadline_ms(c.retry, msOf(d)))
	}
}

// WithAttemptTimeout bounds each attempt (> 0; default none): fn's context
// then carries that deadline, trimmed to the policy's deadline.
func WithAttemptTimeout(d time.Duration) Option {
	return func(c *policyConfig) error {
		c.timeout = true
		return rcOpt("attempt timeout", C.mulligan_retry_options_set_attempt_timeout_ms(c.retry, msOf(d)))
	}
}

// WithRetryAfterMax sets the longest Retry-After hint honoured (>= 0;
// default 60s); a longer one stops the retries (StopRetryAfterTooLong)
// unless WithRetryAfterClamp(true).
func WithRetryAfterMax(d time.Duration) Option {
	return func(c *policyConfig) error {
		return rcOpt("retry after max", C.mulligan_retry_options_set_retry_after_max_ms(c.retry, msOf(d)))
	}
}

// WithRetryAfterClamp makes a hint longer than RetryAfterMax wait the
// maximum instead of stopping (default false).
func WithRetryAfterClamp(clamp bool) Option {
	return func(c *policyConfig) error {
		return rcOpt("retry after clamp", C.mulligan_retry_options_set_retry_after_clamp(c.retry, cbool(clamp)))
	}
}

// WithRespectRetryAfter chooses whether a hint replaces the backoff delay
// (default true).
func WithRespectRetryAfter(respect bool) Option {
	return func(c *policyConfig) error {
		return rcOpt("respect retry after", C.mulligan_retry_options_set_respect_retry_after(c.retry, cbool(respect)))
	}
}

// WithRetryableStatuses replaces the retryable HTTP statuses (default 408
// 429 500 502 503 504), for attempts that return an *HTTPStatusError.
func WithRetryableStatuses(statuses ...int) Option {
	return func(c *policyConfig) error {
		if len(statuses) == 0 {
			return rcOpt("retryable statuses", C.mulligan_retry_options_set_retryable_statuses(c.retry, nil, 0))
		}
		buf := (*C.int)(C.malloc(C.size_t(len(statuses)) * C.size_t(unsafe.Sizeof(C.int(0)))))
		defer C.free(unsafe.Pointer(buf))
		s := unsafe.Slice(buf, len(statuses))
		for i, v := range statuses {
			s[i] = C.int(v)
		}
		return rcOpt("retryable statuses", C.mulligan_retry_options_set_retryable_statuses(c.retry, buf, C.size_t(len(statuses))))
	}
}

// WithSeed seeds the jitter generator: every call then draws the same
// delays (default: a fresh random seed per call).
func WithSeed(seed uint64) Option {
	return func(c *policyConfig) error {
		return rcOpt("seed", C.mulligan_retry_options_set_seed(c.retry, C.uint64_t(seed)))
	}
}

// WithName sets the name the policy reports metrics and events under
// (Metrics(name)). With a name every call enters the engine (to be counted),
// so a first-attempt success costs two cgo calls instead of none.
func WithName(name string) Option {
	return func(c *policyConfig) error {
		cs := C.CString(name)
		defer C.free(unsafe.Pointer(cs))
		c.name = name
		return rcOpt("name", C.mulligan_pipeline_options_set_name(c.pipe, cs))
	}
}

// WithReportMetrics chooses whether calls report into the process-wide
// metrics and emit events (mulligan_pipeline_options_set_report_metrics).
// Default: on when the policy has a name (WithName), off without one: an
// unnamed policy has nothing to report under through Do, and the engine's
// reporting costs even then. Turn it on for calls begun with a key
// (BeginWith(CallOptions{Key: ...})) on an unnamed policy.
func WithReportMetrics(on bool) Option {
	return func(c *policyConfig) error { c.metrics = &on; return nil }
}

// WithBreaker guards every attempt with b, asked before each attempt; a
// refusal ends the call with ErrCircuitOpen (never retried). b must read the
// policy's clock (the same FakeClock, or both the system clock).
func WithBreaker(b *CircuitBreaker) Option {
	return func(c *policyConfig) error {
		if b == nil || b.raw() == nil {
			return invalid("NewPolicy: breaker", "nil or closed breaker")
		}
		c.breaker = b
		rc := C.mulligan_pipeline_options_set_breaker(c.pipe, b.raw())
		runtime.KeepAlive(b)
		return rcOpt("breaker", rc)
	}
}

// WithBreakerPerAttempt makes the breaker record every attempt's result
// instead of one result per logical call (default false).
func WithBreakerPerAttempt(on bool) Option {
	return func(c *policyConfig) error {
		return rcOpt("breaker per attempt", C.mulligan_pipeline_options_set_breaker_per_attempt(c.pipe, cbool(on)))
	}
}

// WithClock makes the policy read clk and wait by advancing it (tests).
func WithClock(clk *FakeClock) Option {
	return func(c *policyConfig) error {
		if clk == nil || clk.raw() == nil {
			return invalid("NewPolicy: clock", "nil clock")
		}
		c.clock = clk
		return rcOpt("clock", C.mulligan_pipeline_options_set_clock(c.pipe, clk.raw()))
	}
}

// WithRetryIf sets a predicate on fn's errors: false makes the error
// terminal (not retried). Errors wrapped by Permanent, HTTPStatusError and
// ErrorKindOf are classified by the engine without asking it. The
// predicate runs only after a failure.
func WithRetryIf(pred func(error) bool) Option {
	return func(c *policyConfig) error { c.retryIf = pred; return nil }
}

// RetryEvent describes a retry the engine decided, before its wait.
type RetryEvent struct {
	// Attempt is the attempt that failed (1 for the first).
	Attempt int
	// Delay is the wait the engine decided before the next attempt.
	Delay time.Duration
	// FromRetryAfter is true when Delay came from a Retry-After hint.
	FromRetryAfter bool
	// Err is the attempt's error.
	Err error
}

// WithOnRetry calls fn before each wait (logging, tests), on the goroutine
// running Do. It must not panic: a panic abandons the call like fn's does.
func WithOnRetry(fn func(RetryEvent)) Option {
	return func(c *policyConfig) error { c.onRetry = fn; return nil }
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// pipeHandle owns the C pipeline; it is destroyed once, by Close or by the
// Policy's cleanup, after every call through it has ended.
type pipeHandle struct {
	mu     sync.Mutex
	ptr    *C.mulligan_pipeline
	refs   int
	closed bool
}

func (h *pipeHandle) acquire() *C.mulligan_pipeline {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.ptr == nil {
		return nil
	}
	h.refs++
	return h.ptr
}

func (h *pipeHandle) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.refs--
	if h.closed && h.refs == 0 && h.ptr != nil {
		C.mulligan_pipeline_destroy(h.ptr)
		h.ptr = nil
	}
}

func (h *pipeHandle) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.refs == 0 && h.ptr != nil {
		C.mulligan_pipeline_destroy(h.ptr)
		h.ptr = nil
	}
}

// Policy is a validated, immutable pipeline (mulligan_pipeline): retry,
// optional breaker, metrics. Build it once and share it: it is safe for
// concurrent use by any number of goroutines (the C header's promise).
// Close frees it (calls in progress finish first); a Policy that is
// garbage-collected is freed as well. A nil or closed Policy makes Do return
// ErrInvalidArgument.
type Policy struct {
	h       *pipeHandle
	fast    bool
	clock   *FakeClock
	breaker *CircuitBreaker
	retryIf func(error) bool
	onRetry func(RetryEvent)
	// The overload guards (kept alive with the policy; the pipeline shares
	// them too). queue: the bulkhead has a wait queue.
	budget   *RetryBudget
	throttle *Throttle
	bulkhead *Bulkhead
	limiter  *RateLimiter
	queue    bool
}

// NewPolicy validates the options and builds a policy. Defaults (DESIGN.md
// section 5): 3 attempts, exponential backoff from 200ms, multiplier 2,
// full jitter, capped at 10s, no deadline, no breaker, no metrics name.
func NewPolicy(opts ...Option) (*Policy, error) {
	defer lockThread()()
	c := &policyConfig{}
	if err := cerr("NewPolicy", C.mulligan_retry_options_create(&c.retry)); err != nil {
		return nil, err
	}
	defer C.mulligan_retry_options_destroy(c.retry)
	if err := cerr("NewPolicy", C.mulligan_pipeline_options_create(&c.pipe)); err != nil {
		return nil, err
	}
	defer C.mulligan_pipeline_options_destroy(c.pipe)
	for _, o := range opts {
		if o == nil {
			return nil, invalid("NewPolicy", "nil option")
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.breaker != nil && c.breaker.clock != c.clock {
		return nil, invalid("NewPolicy", "the breaker and the policy must read the same clock (WithClock and BreakerClock)")
	}
	report := c.name != ""
	if c.metrics != nil {
		report = *c.metrics
	}
	if err := rcOpt("report metrics", C.mulligan_pipeline_options_set_report_metrics(c.pipe, cbool(report))); err != nil {
		return nil, err
	}
	if err := rcOpt("retry", C.mulligan_pipeline_options_set_retry(c.pipe, c.retry)); err != nil {
		return nil, err
	}
	var ptr *C.mulligan_pipeline
	if err := cerr("NewPolicy", C.mulligan_pipeline_create(&ptr, c.pipe)); err != nil {
		return nil, err
	}
	h := &pipeHandle{ptr: ptr}
	p := &Policy{
		h: h,
		fast: c.breaker == nil && c.name == "" && !c.deadline && !c.timeout &&
			c.throttle == nil && c.bulkhead == nil && c.limiter == nil,
		clock:    c.clock,
		breaker:  c.breaker,
		retryIf:  c.retryIf,
		onRetry:  c.onRetry,
		budget:   c.budget,
		throttle: c.throttle,
		bulkhead: c.bulkhead,
		limiter:  c.limiter,
		queue:    c.bulkhead != nil && c.bulkhead.maxQueue > 0,
	}
	runtime.SetFinalizer(p, func(p *Policy) { p.h.close() })
	return p, nil
}

// Close frees the policy. Calls in progress keep it alive until they end;
// later calls fail with ErrInvalidArgument. Safe to call twice; nil-safe.
func (p *Policy) Close() error {
	if p == nil || p.h == nil {
		return nil
	}
	p.h.close()
	return nil
}
