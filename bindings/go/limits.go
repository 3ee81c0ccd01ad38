package mulligan

/*
#include <stdlib.h>
#include <mulligan.h>
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"time"
)

// Bulkhead allows at most MaxConcurrent calls in flight, with an optional
// bounded FIFO wait queue (mulligan_bulkhead). Safe for concurrent use (the
// C header's promise). Policies using it (WithBulkhead) keep it alive;
// Close makes this value unusable and the handle is freed once nothing
// references it.
type Bulkhead struct {
	ptr      *C.mulligan_bulkhead
	maxQueue int
	closed   atomic.Bool
}

// NewBulkhead creates a bulkhead: maxConcurrent >= 1 in flight; maxQueue
// >= 0 waiters (0: none), each waiting at most maxWait (negative: no bound
// but the call's deadline and context). A bad value gives
// ErrInvalidArgument naming the field ("max_concurrent").
func NewBulkhead(name string, maxConcurrent, maxQueue int, maxWait time.Duration) (*Bulkhead, error) {
	defer lockThread()()
	cs, free := cstr(name)
	defer free()
	wait := C.double(-1)
	if maxWait >= 0 {
		wait = msOf(maxWait)
	}
	var ptr *C.mulligan_bulkhead
	rc := C.mulligan_bulkhead_create(&ptr, cs, C.int(maxConcurrent), C.int(maxQueue), wait)
	if err := cerr("NewBulkhead", rc); err != nil {
		return nil, err
	}
	b := &Bulkhead{ptr: ptr, maxQueue: maxQueue}
	runtime.SetFinalizer(b, func(b *Bulkhead) { C.mulligan_bulkhead_destroy(b.ptr) })
	return b, nil
}

func (b *Bulkhead) live() *C.mulligan_bulkhead {
	if b == nil || b.ptr == nil || b.closed.Load() {
		return nil
	}
	return b.ptr
}

// Close makes b unusable; policies using the bulkhead keep it. Nil-safe.
func (b *Bulkhead) Close() error {
	if b != nil {
		b.closed.Store(true)
	}
	return nil
}

// TryAcquire takes a slot if one is free and nobody waits (release it with
// Release). False for a nil or closed bulkhead.
func (b *Bulkhead) TryAcquire() bool {
	p := b.live()
	defer runtime.KeepAlive(b)
	return p != nil && C.mulligan_bulkhead_try_acquire(p) != 0
}

// Release frees a slot the caller holds; the oldest waiter gets it.
func (b *Bulkhead) Release() {
	if p := b.live(); p != nil {
		C.mulligan_bulkhead_release(p)
	}
	runtime.KeepAlive(b)
}

// InFlight returns the slots held now.
func (b *Bulkhead) InFlight() int {
	p := b.live()
	defer runtime.KeepAlive(b)
	if p == nil {
		return 0
	}
	return int(C.mulligan_bulkhead_in_flight(p))
}

// Queued returns the callers waiting now.
func (b *Bulkhead) Queued() int {
	p := b.live()
	defer runtime.KeepAlive(b)
	if p == nil {
		return 0
	}
	return int(C.mulligan_bulkhead_queued(p))
}

// RateLimiterOptions are a GCRA rate limiter's options.
type RateLimiterOptions struct {
	Name string
	// Rate is the calls per second per key (> 0, finite).
	Rate float64
	// Burst is the calls admitted at once (>= 1, finite).
	Burst float64
	// MaxWait bounds a call's wait for its slot (negative: no bound but the
	// deadline and context; 0: never waits).
	MaxWait time.Duration
	// PenalizeRetryAfter: a 429/503 Retry-After holds every call to that key.
	PenalizeRetryAfter bool
}

// RateLimiter admits Rate calls per second per key with bursts of Burst, by
// the Generic Cell Rate Algorithm (ITU-T I.371; mulligan_rate_limiter).
// Safe for concurrent use. Close as Bulkhead's.
type RateLimiter struct {
	ptr    *C.mulligan_rate_limiter
	closed atomic.Bool
}

// NewRateLimiter validates o and creates a limiter (ErrInvalidArgument
// naming a bad field: "rate", "burst").
func NewRateLimiter(o RateLimiterOptions) (*RateLimiter, error) {
	return newRateLimiter("NewRateLimiter", o, func(out **C.mulligan_rate_limiter, name *C.char, wait C.double) C.int {
		return C.mulligan_rate_limiter_create(out, name, C.double(o.Rate), C.double(o.Burst), wait,
			cbool(o.PenalizeRetryAfter))
	})
}

// newRateLimiter converts o's name and MaxWait (negative: -1, no bound) for
// create, a mulligan_rate_limiter_create* call, and wraps its limiter.
func newRateLimiter(op string, o RateLimiterOptions,
	create func(out **C.mulligan_rate_limiter, name *C.char, wait C.double) C.int) (*RateLimiter, error) {
	defer lockThread()()
	cs, free := cstr(o.Name)
	defer free()
	wait := C.double(-1)
	if o.MaxWait >= 0 {
		wait = msOf(o.MaxWait)
	}
	var ptr *C.mulligan_rate_limiter
	if err := cerr(op, create(&ptr, cs, wait)); err != nil {
		return nil, err
	}
	l := &RateLimiter{ptr: ptr}
	runtime.SetFinalizer(l, func(l *RateLimiter) { C.mulligan_rate_limiter_destroy(l.ptr) })
	return l, nil
}

// Close makes l unusable; policies using the limiter keep it. Nil-safe.
func (l *RateLimiter) Close() error {
	if l != nil {
		l.closed.Store(true)
	}
	return nil
}

// Acquire asks for one slot for key ("": the limiter's own bucket) at `at`
// (a reading of the steady clock: SteadyNow(), or a test's own time line),
// waiting at most maxWait (negative: the limiter's own bound). On admission
// it returns the wait before the slot (0: now; the slot is reserved); else
// an *Error with ErrRateLimited and RetryIn.
func (l *RateLimiter) Acquire(key string, at, maxWait time.Duration) (time.Duration, error) {
	if l == nil || l.ptr == nil || l.closed.Load() {
		return 0, invalid("RateLimiter.Acquire", "nil or closed rate limiter")
	}
	defer lockThread()()
	ck, free := cstr(key)
	defer free()
	bound := C.double(-1)
	if maxWait >= 0 {
		bound = msOf(maxWait)
	}
	var wait, retryIn C.double
	rc := C.mulligan_rate_limiter_acquire(l.ptr, ck, msOf(at), bound, &wait, &retryIn)
	runtime.KeepAlive(l)
	if err := cerr("RateLimiter.Acquire", rc); err != nil {
		e := err.(*Error)
		e.RetryIn = durOf(retryIn)
		if e.Code == CodeRateLimited {
			e.Reason = StopRateLimited
		}
		return 0, e
	}
	return durOf(wait), nil
}
