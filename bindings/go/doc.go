// Package mulligan is the Go binding of mulligan, a resilience engine
// (retries with backoff and jitter, Retry-After, circuit breakers,
// idempotency keys, metrics) written once in C++ and reached here through
// its C ABI with cgo (pkg-config package "mulligan"; after
// `eval "$(scripts/install_capi.sh)"` in the repository).
//
// The engine decides, the caller acts (DESIGN.md sections 1 and 2): Do runs
// your function and asks the engine, through the step API of
// mulligan_pipeline.h (begin, admit, record, abandon), whether and when to
// try again; the wait itself is Go's (a time.Timer, cut short by the
// context). No delay, classification, breaker state or Retry-After value is
// computed in Go. A call that succeeds at once, on a policy with no breaker,
// no metrics name and no deadline, never enters C.
//
// Hedge (0.6) runs copies of an idempotent function under a HedgingPolicy
// through the step API of mulligan_hedging.h: the engine says when each copy
// may start and which copies lost; Go runs each copy in a goroutine with its
// own context and cancels the losers' contexts.
//
// Units: every duration is a time.Duration (the C ABI's milliseconds are
// converted, rounding to the nanosecond and saturating at the largest
// Duration). Thread-safety follows the C headers: Policy, CircuitBreaker,
// HTTPClient, IdempotencyStore and FakeClock are safe for concurrent use;
// a Call belongs to one goroutine at a time.
//
// Errors: every error is an *Error carrying the C status Code; match it with
// the sentinels (errors.Is(err, ErrCircuitOpen)), reach it with errors.As,
// and reach your own last error through it (errors.Is(err, yourErr)).
//
// Handles: each has Close (idempotent, nil-safe) and is also freed by the
// garbage collector. Callbacks from C (breaker listeners) recover their
// panics, since no Go panic may unwind through C; a panic in the function
// given to Do abandons the call and continues to Do's caller. A ctx
// cancelled during Do cancels the call (counted cancelled, not failed).
package mulligan
