package mulligan

/*
#include <stdlib.h>
#include <stdint.h>
#include <mulligan.h>

extern int goBreakerTransition(mulligan_breaker_transition *t, void *user_data);
extern int goBreakerCall(mulligan_breaker_call_event *e, void *user_data);
extern void goFreeHandle(void *user_data);

static int go_trans_cb(const mulligan_breaker_transition *t, void *u) {
  return goBreakerTransition((mulligan_breaker_transition *)t, u);
}
static int go_call_cb(const mulligan_breaker_call_event *e, void *u) {
  return goBreakerCall((mulligan_breaker_call_event *)e, u);
}
static int go_add_transition_listener(mulligan_breaker *b, uintptr_t h, uint64_t *id) {
  return mulligan_breaker_add_listener(b, go_trans_cb, (void *)h, goFreeHandle, id);
}
static int go_add_call_listener(mulligan_breaker *b, uintptr_t h, uint64_t *id) {
  return mulligan_breaker_add_call_listener(b, go_call_cb, (void *)h, goFreeHandle, id);
}
static mulligan_breaker_permit go_acquire(mulligan_breaker *b, int *rc) {
  mulligan_breaker_permit p = MULLIGAN_BREAKER_PERMIT_INIT;
  *rc = mulligan_breaker_acquire(b, &p);
  return p;
}
static mulligan_breaker_counts go_counts(const mulligan_breaker *b, int *rc) {
  mulligan_breaker_counts c = MULLIGAN_BREAKER_COUNTS_INIT;
  *rc = mulligan_breaker_get_counts(b, &c);
  return c;
}
*/
import "C"

import (
	"runtime"
	"runtime/cgo"
	"sync"
	"time"
	"unsafe"
)

// BreakerState is a circuit breaker's state (mulligan_breaker_state).
type BreakerState int

// Breaker states (mulligan_breaker.h).
const (
	StateClosed      BreakerState = 0
	StateOpen        BreakerState = 1
	StateHalfOpen    BreakerState = 2
	StateForcedOpen  BreakerState = 3
	StateDisabled    BreakerState = 4
	StateMetricsOnly BreakerState = 5
)

// String is the engine's name ("closed", "half_open", ...).
func (s BreakerState) String() string { return C.GoString(C.mulligan_breaker_state_str(C.int(s))) }

// Window is the sliding window kind of rate-based tripping.
type Window int

// Windows: none (consecutive failures only), the last N calls, a time span.
const (
	WindowNone  Window = 0
	WindowCount Window = 1
	WindowTime  Window = 2
)

// BreakerOption configures a CircuitBreaker (NewCircuitBreaker); each
// value is checked by the engine at once.
type BreakerOption func(*breakerConfig) error

type breakerConfig struct {
	o     *C.mulligan_breaker_options
	clock *FakeClock
}

func bOpt(op string, rc C.int) error { return cerr("NewCircuitBreaker: "+op, rc) }

// BreakerName names the breaker (errors, events, metrics).
func BreakerName(name string) BreakerOption {
	return func(c *breakerConfig) error {
		cs := C.CString(name)
		defer C.free(unsafe.Pointer(cs))
		return bOpt("name", C.mulligan_breaker_options_set_name(c.o, cs))
	}
}

// FailureThreshold sets the consecutive failures that trip it (default 5;
// 0 disables the condition, a window is then required).
func FailureThreshold(n int) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("failure threshold", C.mulligan_breaker_options_set_failure_threshold(c.o, C.int(n)))
	}
}

// ResetTimeout sets how long it stays open after a trip (default 30s).
func ResetTimeout(d time.Duration) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("reset timeout", C.mulligan_breaker_options_set_reset_timeout_ms(c.o, msOf(d)))
	}
}

// ResetTimeoutMultiplier grows the open period on consecutive trips (>= 1).
func ResetTimeoutMultiplier(m float64) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("reset timeout multiplier", C.mulligan_breaker_options_set_reset_timeout_multiplier(c.o, C.double(m)))
	}
}

// MaxResetTimeout caps the grown open period (default 5m).
func MaxResetTimeout(d time.Duration) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("max reset timeout", C.mulligan_breaker_options_set_max_reset_timeout_ms(c.o, msOf(d)))
	}
}

// HalfOpenMaxCalls sets the probes admitted at once when half-open (default 1).
func HalfOpenMaxCalls(n int) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("half open max calls", C.mulligan_breaker_options_set_half_open_max_calls(c.o, C.int(n)))
	}
}

// WithWindow chooses the sliding window (default WindowNone).
func WithWindow(w Window) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("window", C.mulligan_breaker_options_set_window(c.o, C.int(w)))
	}
}

// WindowSize sets the calls a count window keeps (default 100).
func WindowSize(n int) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("window size", C.mulligan_breaker_options_set_window_size(c.o, C.int(n)))
	}
}

// WindowDuration sets the span of a time window (default 60s).
func WindowDuration(d time.Duration) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("window duration", C.mulligan_breaker_options_set_window_duration_ms(c.o, msOf(d)))
	}
}

// WindowBuckets sets the buckets of a time window (default 10).
func WindowBuckets(n int) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("window buckets", C.mulligan_breaker_options_set_window_buckets(c.o, C.int(n)))
	}
}

// FailureRateThreshold sets the window failure rate, percent, that trips.
func FailureRateThreshold(pct float64) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("failure rate threshold", C.mulligan_breaker_options_set_failure_rate_threshold(c.o, C.double(pct)))
	}
}

// MinimumCalls sets the calls needed in the window before a rate counts.
func MinimumCalls(n int) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("minimum calls", C.mulligan_breaker_options_set_minimum_calls(c.o, C.int(n)))
	}
}

// SlowCallDuration makes calls lasting at least d slow (requires a window).
func SlowCallDuration(d time.Duration) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("slow call duration", C.mulligan_breaker_options_set_slow_call_duration_ms(c.o, msOf(d)))
	}
}

// SlowCallRateThreshold sets the window slow-call rate, percent, that trips.
func SlowCallRateThreshold(pct float64) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("slow call rate threshold", C.mulligan_breaker_options_set_slow_call_rate_threshold(c.o, C.double(pct)))
	}
}

// PermitTimeout sets how long an unrecorded probe permit holds its slot.
func PermitTimeout(d time.Duration) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("permit timeout", C.mulligan_breaker_options_set_permit_timeout_ms(c.o, msOf(d)))
	}
}

// MaxHalfOpenDuration reopens a breaker still half-open after d.
func MaxHalfOpenDuration(d time.Duration) BreakerOption {
	return func(c *breakerConfig) error {
		return bOpt("max half open duration", C.mulligan_breaker_options_set_max_half_open_duration_ms(c.o, msOf(d)))
	}
}

// BreakerClock makes the breaker read a fake clock (tests); use the same
// one for the Policy it guards (WithClock).
func BreakerClock(clk *FakeClock) BreakerOption {
	return func(c *breakerConfig) error {
		if clk == nil || clk.raw() == nil {
			return invalid("NewCircuitBreaker: clock", "nil clock")
		}
		c.clock = clk
		return bOpt("clock", C.mulligan_breaker_options_set_clock(c.o, clk.raw()))
	}
}

type breakerHandle struct {
	mu  sync.Mutex
	ptr *C.mulligan_breaker
}

func (h *breakerHandle) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ptr != nil {
		C.mulligan_breaker_destroy(h.ptr)
		h.ptr = nil
	}
}

// CircuitBreaker is the engine's circuit breaker (DESIGN.md section 5):
// closed -> open after FailureThreshold consecutive failures (or a window's
// rate), open -> half-open after ResetTimeout, half-open probes close or
// reopen it. Safe for concurrent use (the C header's promise). A Policy
// that uses it shares it (the engine keeps it alive). Close releases the
// handle; the garbage collector does too. Methods of a nil or closed
// breaker return ErrInvalidArgument or zero values.
//
// Close must not race with other methods of the same breaker.
type CircuitBreaker struct {
	h     *breakerHandle
	clock *FakeClock
}

// NewCircuitBreaker validates the options and creates a closed breaker.
// Defaults: failure threshold 5, reset timeout 30s, one half-open probe.
func NewCircuitBreaker(opts ...BreakerOption) (*CircuitBreaker, error) {
	defer lockThread()()
	c := &breakerConfig{}
	if err := cerr("NewCircuitBreaker", C.mulligan_breaker_options_create(&c.o)); err != nil {
		return nil, err
	}
	defer C.mulligan_breaker_options_destroy(c.o)
	for _, o := range opts {
		if o == nil {
			return nil, invalid("NewCircuitBreaker", "nil option")
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	var ptr *C.mulligan_breaker
	if err := cerr("NewCircuitBreaker", C.mulligan_breaker_create(&ptr, c.o)); err != nil {
		return nil, err
	}
	h := &breakerHandle{ptr: ptr}
	b := &CircuitBreaker{h: h, clock: c.clock}
	runtime.SetFinalizer(b, func(b *CircuitBreaker) { b.h.close() })
	return b, nil
}

func (b *CircuitBreaker) raw() *C.mulligan_breaker {
	if b == nil || b.h == nil {
		return nil
	}
	return b.h.ptr
}

// Close releases the breaker handle (policies using it keep the breaker).
func (b *CircuitBreaker) Close() error {
	if b != nil && b.h != nil {
		b.h.close()
	}
	return nil
}

// Name returns the breaker's name.
func (b *CircuitBreaker) Name() string {
	p := b.raw()
	if p == nil {
		return ""
	}
	s := C.GoString(C.mulligan_breaker_name(p))
	runtime.KeepAlive(b)
	return s
}

// State returns the state now (an open breaker whose period ended reads
// half-open).
func (b *CircuitBreaker) State() BreakerState {
	p := b.raw()
	if p == nil {
		return StateClosed
	}
	s := BreakerState(C.mulligan_breaker_state_now(p))
	runtime.KeepAlive(b)
	return s
}

// TimeUntilProbe returns the time until a call may be admitted: 0 when now,
// the largest Duration when forced open.
func (b *CircuitBreaker) TimeUntilProbe() time.Duration {
	p := b.raw()
	if p == nil {
		return 0
	}
	d := durOf(C.mulligan_breaker_time_until_probe_ms(p))
	runtime.KeepAlive(b)
	return d
}

// Permit is a permission to make one call (Acquire), handed back to Record.
// A value type: copying it is fine.
type Permit struct {
	// Admitted is true when the call may proceed.
	Admitted bool
	// State is the state the breaker answered in.
	State BreakerState
	// RetryIn is, when refused, the time until a call may be admitted.
	RetryIn time.Duration
	// Probe is true for a half-open probe permit.
	Probe bool
	raw   C.mulligan_breaker_permit
}

// CallResult is a call's result as the breaker sees it.
type CallResult int

// Call results: success, failure (unhealthy), ignored (says nothing; frees a
// probe slot).
const (
	ResultSuccess CallResult = 0
	ResultFailure CallResult = 1
	ResultIgnored CallResult = 2
)

// Acquire asks to make one call now. A refusal returns the permit (Admitted
// false, RetryIn set) and an *Error with CodeCircuitOpen.
func (b *CircuitBreaker) Acquire() (Permit, error) {
	p := b.raw()
	if p == nil {
		return Permit{}, invalid("CircuitBreaker.Acquire", "nil or closed breaker")
	}
	defer lockThread()()
	var rc C.int
	raw := C.go_acquire(p, &rc)
	runtime.KeepAlive(b)
	pm := Permit{Admitted: raw.admitted != 0, State: BreakerState(raw.state), RetryIn: durOf(raw.retry_in_ms),
		Probe: raw.probe != 0, raw: raw}
	if rc != C.MULLIGAN_OK {
		e := cerr("CircuitBreaker.Acquire", rc).(*Error)
		e.RetryIn = pm.RetryIn
		return pm, e
	}
	return pm, nil
}

// Record records the result of the call made under permit; duration is how
// long it took (negative: from the acquire until now).
func (b *CircuitBreaker) Record(permit Permit, result CallResult, duration time.Duration) error {
	p := b.raw()
	if p == nil {
		return invalid("CircuitBreaker.Record", "nil or closed breaker")
	}
	ms := C.double(-1)
	if duration >= 0 {
		ms = msOf(duration)
	}
	defer lockThread()()
	raw := permit.raw
	rc := C.mulligan_breaker_record(p, &raw, C.int(result), ms)
	runtime.KeepAlive(b)
	return cerr("CircuitBreaker.Record", rc)
}

func (b *CircuitBreaker) manual(op string, f func(*C.mulligan_breaker) C.int) error {
	p := b.raw()
	if p == nil {
		return invalid("CircuitBreaker."+op, "nil or closed breaker")
	}
	defer lockThread()()
	rc := f(p)
	runtime.KeepAlive(b)
	return cerr("CircuitBreaker."+op, rc)
}

// ForceOpen refuses every call until Reset.
func (b *CircuitBreaker) ForceOpen() error {
	return b.manual("ForceOpen", func(p *C.mulligan_breaker) C.int { return C.mulligan_breaker_force_open(p) })
}

// ForceOpenFor opens the breaker for d; it then probes as after a trip.
func (b *CircuitBreaker) ForceOpenFor(d time.Duration) error {
	return b.manual("ForceOpenFor", func(p *C.mulligan_breaker) C.int { return C.mulligan_breaker_force_open_for_ms(p, msOf(d)) })
}

// Disable admits and counts every call; it never trips.
func (b *CircuitBreaker) Disable() error {
	return b.manual("Disable", func(p *C.mulligan_breaker) C.int { return C.mulligan_breaker_disable(p) })
}

// MetricsOnly admits everything; listeners hear of would-be trips.
func (b *CircuitBreaker) MetricsOnly() error {
	return b.manual("MetricsOnly", func(p *C.mulligan_breaker) C.int { return C.mulligan_breaker_metrics_only(p) })
}

// HalfOpen switches the breaker to half-open at once.
func (b *CircuitBreaker) HalfOpen() error {
	return b.manual("HalfOpen", func(p *C.mulligan_breaker) C.int { return C.mulligan_breaker_half_open(p) })
}

// Reset returns the breaker to closed and clears its counters.
func (b *CircuitBreaker) Reset() error {
	return b.manual("Reset", func(p *C.mulligan_breaker) C.int { return C.mulligan_breaker_reset(p) })
}

// BreakerCounts are a breaker's counters (mulligan_breaker_counts).
type BreakerCounts struct {
	Calls, Successes, Failures, Ignored, Slow, Rejected uint64
	ConsecutiveFailures                                 int
	WindowCalls                                         uint64
	WindowFailureRate, WindowSlowRate                   float64 // percent
	Stale                                               uint64
}

// Counts returns the counters now.
func (b *CircuitBreaker) Counts() (BreakerCounts, error) {
	p := b.raw()
	if p == nil {
		return BreakerCounts{}, invalid("CircuitBreaker.Counts", "nil or closed breaker")
	}
	var rc C.int
	c := C.go_counts(p, &rc)
	runtime.KeepAlive(b)
	if rc != C.MULLIGAN_OK {
		return BreakerCounts{}, &Error{Code: Code(rc), Op: "CircuitBreaker.Counts"}
	}
	return BreakerCounts{uint64(c.calls), uint64(c.successes), uint64(c.failures), uint64(c.ignored),
		uint64(c.slow), uint64(c.rejected), int(c.consecutive_failures), uint64(c.window_calls),
		float64(c.window_failure_rate), float64(c.window_slow_rate), uint64(c.stale)}, nil
}

// Transition is a breaker's state change, for OnTransition listeners.
type Transition struct {
	Name     string
	From, To BreakerState
	// Reason is the engine's text ("failure_threshold", "probe_failed", ...).
	Reason string
	// At is the breaker clock's reading of the call that made it.
	At time.Duration
}

// BreakerCallEvent is one recorded result or refused acquire, for
// OnCall listeners.
type BreakerCallEvent struct {
	Name     string
	Kind     int // 0 success, 1 failure, 2 ignored, 3 rejected
	State    BreakerState
	Duration time.Duration
	Stale    bool
	At       time.Duration
}

// OnTransition adds a listener of state changes. fn runs on the goroutine
// whose breaker call made the transition, after the breaker's lock is
// released; it may call back into the breaker. A panic in fn is recovered
// and dropped (it cannot cross the C library). Returns a function that
// removes the listener.
func (b *CircuitBreaker) OnTransition(fn func(Transition)) (remove func(), err error) {
	if fn == nil {
		return nil, invalid("CircuitBreaker.OnTransition", "nil listener")
	}
	return b.addListener("OnTransition", fn, true)
}

// OnCall adds a listener of every recorded result and refused acquire (see
// OnTransition for the calling rules).
func (b *CircuitBreaker) OnCall(fn func(BreakerCallEvent)) (remove func(), err error) {
	if fn == nil {
		return nil, invalid("CircuitBreaker.OnCall", "nil listener")
	}
	return b.addListener("OnCall", fn, false)
}

func (b *CircuitBreaker) addListener(op string, fn any, transition bool) (func(), error) {
	p := b.raw()
	if p == nil || fn == nil {
		return nil, invalid("CircuitBreaker."+op, "nil breaker or listener")
	}
	defer lockThread()()
	h := cgo.NewHandle(fn)
	var id C.uint64_t
	var rc C.int
	if transition {
		rc = C.go_add_transition_listener(p, C.uintptr_t(h), &id)
	} else {
		rc = C.go_add_call_listener(p, C.uintptr_t(h), &id)
	}
	runtime.KeepAlive(b)
	if rc != C.MULLIGAN_OK {
		h.Delete()
		return nil, cerr("CircuitBreaker."+op, rc)
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if q := b.raw(); q != nil {
				if transition {
					C.mulligan_breaker_remove_listener(q, id)
				} else {
					C.mulligan_breaker_remove_call_listener(q, id)
				}
				runtime.KeepAlive(b)
			}
		})
	}, nil
}
