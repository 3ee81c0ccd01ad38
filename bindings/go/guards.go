package mulligan

/*
#include <stdlib.h>
#include <mulligan.h>
*/
import "C"

import (
	"runtime"
	"unsafe"
)

// The policy options that attach the overload guards of budget.go and
// limits.go to a Policy (mulligan_pipeline_options_set_budget / _throttle /
// _bulkhead / _rate_limiter). The pipeline shares each guard: it stays
// alive as long as the policy, whatever the guard's own handle does.

// WithBudget gates every retry with b (a retry budget, DESIGN.md section 5):
// the first attempt is never refused; a refused retry ends the call with the
// last failure kept (ErrRetriesExhausted, Reason StopBudget). b must read
// the policy's clock. With only a budget, a first-attempt success still
// skips the engine (one cgo call feeds the budget's lazy success counter).
func WithBudget(b *RetryBudget) Option {
	return func(c *policyConfig) error {
		if b == nil || b.ptr == nil {
			return invalid("NewPolicy: budget", "nil or closed budget")
		}
		c.budget = b
		rc := C.mulligan_pipeline_options_set_budget(c.pipe, b.ptr)
		runtime.KeepAlive(b)
		return rcOpt("budget", rc)
	}
}

// WithThrottle asks t (SRE adaptive throttling) before every attempt; a
// rejection ends the call with ErrThrottled (Reason StopThrottled).
func WithThrottle(t *Throttle) Option {
	return func(c *policyConfig) error {
		if t == nil || t.ptr == nil {
			return invalid("NewPolicy: throttle", "nil or closed throttle")
		}
		c.throttle = t
		rc := C.mulligan_pipeline_options_set_throttle(c.pipe, t.ptr)
		runtime.KeepAlive(t)
		return rcOpt("throttle", rc)
	}
}

// WithBulkhead guards every call with b: at most its MaxConcurrent calls in
// flight; others wait in its queue (Do waits, watching ctx) or end with
// ErrBulkheadFull. The slot is held for the whole logical call (retry waits
// included) unless perAttempt.
func WithBulkhead(b *Bulkhead, perAttempt bool) Option {
	return func(c *policyConfig) error {
		if b == nil || b.ptr == nil {
			return invalid("NewPolicy: bulkhead", "nil or closed bulkhead")
		}
		c.bulkhead = b
		rc := C.mulligan_pipeline_options_set_bulkhead(c.pipe, b.ptr, cbool(perAttempt))
		runtime.KeepAlive(b)
		return rcOpt("bulkhead", rc)
	}
}

// WithRateLimiter guards every call with l, one bucket per call key (Do's
// calls have the empty key): Do waits for the slot (watching ctx) or ends
// with ErrRateLimited (RetryIn). Asked once per call unless perAttempt.
func WithRateLimiter(l *RateLimiter, perAttempt bool) Option {
	return func(c *policyConfig) error {
		if l == nil || l.ptr == nil {
			return invalid("NewPolicy: rate limiter", "nil or closed rate limiter")
		}
		c.limiter = l
		rc := C.mulligan_pipeline_options_set_rate_limiter(c.pipe, l.ptr, cbool(perAttempt))
		runtime.KeepAlive(l)
		return rcOpt("rate limiter", rc)
	}
}

// fastSuccess feeds a first-attempt success that skipped the engine to the
// policy's budget (a relaxed increment in C).
func (p *Policy) fastSuccess() {
	if p.budget != nil && p.budget.ptr != nil {
		C.mulligan_budget_add_successes(p.budget.ptr, 1)
		runtime.KeepAlive(p.budget)
	}
}

func cstr(s string) (*C.char, func()) {
	if s == "" {
		return nil, func() {}
	}
	cs := C.CString(s)
	return cs, func() { C.free(unsafe.Pointer(cs)) }
}
