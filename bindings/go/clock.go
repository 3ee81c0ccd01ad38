package mulligan

/*
#include <mulligan.h>
*/
import "C"

import (
	"runtime"
	"sync"
	"time"
)

// FakeClock is the engine's fake monotonic clock (mulligan_clock_create_fake):
// it moves only when advanced. Give the same FakeClock to a Policy
// (WithClock) and to its CircuitBreaker (BreakerClock): Do then advances it
// instead of sleeping, so a test of waits and breaker timeouts runs at once.
//
// Thread-safety: safe for concurrent use (the C clock's reads and advances
// are atomic). It must outlive every Policy and breaker using it: they keep
// a reference, so only an explicit Close can end it early.
type FakeClock struct {
	mu  sync.Mutex
	ptr *C.mulligan_clock
	// changed is closed (and cleared) by the next Advance; guarded by mu.
	changed chan struct{}
}

// NewFakeClock creates a fake clock.
func NewFakeClock() (*FakeClock, error) {
	defer lockThread()()
	var p *C.mulligan_clock
	if err := cerr("NewFakeClock", C.mulligan_clock_create_fake(&p)); err != nil {
		return nil, err
	}
	c := &FakeClock{ptr: p}
	runtime.SetFinalizer(c, func(c *FakeClock) { C.mulligan_clock_destroy(c.ptr) })
	return c, nil
}

func (c *FakeClock) raw() *C.mulligan_clock {
	if c == nil {
		return nil
	}
	return c.ptr
}

// Advance moves the clock forward by d (>= 0).
func (c *FakeClock) Advance(d time.Duration) error {
	if c == nil {
		return invalid("FakeClock.Advance", "nil clock")
	}
	if d < 0 {
		return invalid("FakeClock.Advance", "negative duration")
	}
	rc := C.mulligan_clock_advance_ms(c.ptr, msOf(d))
	runtime.KeepAlive(c)
	if rc != C.MULLIGAN_OK {
		return &Error{Code: Code(rc), Op: "FakeClock.Advance"}
	}
	c.mu.Lock()
	if c.changed != nil {
		close(c.changed) // wakes a Hedge waiting for the next copy's time
		c.changed = nil
	}
	c.mu.Unlock()
	return nil
}

// advanced returns a channel closed by the next Advance (Hedge waits on it
// instead of a timer).
func (c *FakeClock) advanced() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.changed == nil {
		c.changed = make(chan struct{})
	}
	return c.changed
}

// Now returns the clock's reading since its arbitrary epoch (only
// differences between readings mean anything). A nil clock reads the
// system steady clock.
func (c *FakeClock) Now() time.Duration {
	v := C.mulligan_clock_now_ms(c.raw())
	runtime.KeepAlive(c)
	return durOf(v)
}
