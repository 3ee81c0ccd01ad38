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
)

// ErrStateUnavailable matches a state backend (Redis) that could not answer
// within its bounds: a shared IdempotencyStore's Reserve or Complete fails
// closed with it (answer 503 with Retry-After; do not run the handler).
// (Added in 0.6.)
var ErrStateUnavailable = sentinel(CodeStateUnavailable)

// StateOptions configure OpenState. The zero value is every default.
type StateOptions struct {
	// Prefix is the key namespace the processes of one service share: 1 to
	// 64 bytes of A-Z a-z 0-9 _ . - ("": "mulligan").
	Prefix string
	// ConnectTimeout bounds each connection step (TCP, AUTH, SELECT):
	// 1 ms to 1 h (0: 250 ms).
	ConnectTimeout time.Duration
	// CommandTimeout bounds one command's round trip: 1 ms to 1 h (0: 250 ms).
	CommandTimeout time.Duration
	// Clock is the clock shared limiters and idempotency records are placed
	// on (nil: the system clock); a FakeClock makes them scriptable in
	// tests. A breaker shared through the state must read the same clock.
	Clock *FakeClock
}

// State is a connection to the Redis server that holds a service's shared
// state (mulligan_state.h): pass it to CircuitBreaker.Share,
// NewSharedRateLimiter and NewSharedIdempotencyStore. Safe for concurrent
// use. The parts made on it keep the connection alive, so Close may come
// first; Close is idempotent and nil-safe. (Added in 0.6.)
type State struct {
	mu    sync.RWMutex
	ptr   *C.mulligan_state
	clock *FakeClock
}

// OpenState validates url (redis://[[user]:password@]host[:port][/db]) and
// o, and connects once. A server that cannot be reached is not an error
// here: the parts on the state fall back to local state (breakers,
// limiters) or fail closed (idempotency stores) until a reconnect succeeds.
// Errors (ErrInvalidArgument) name the field and never hold the password;
// rediss:// is refused (the Debian 12 hiredis has no TLS).
func OpenState(url string, o StateOptions) (*State, error) {
	defer lockThread()()
	cu, freeURL := cstr(url)
	defer freeURL()
	opts := C.mulligan_state_options{struct_size: C.uint32_t(C.sizeof_mulligan_state_options)}
	opts.connect_timeout_ms, opts.command_timeout_ms = 250, 250
	if o.Prefix != "" {
		cp, freePrefix := cstr(o.Prefix)
		defer freePrefix()
		opts.prefix = cp
	}
	for _, t := range []struct {
		d   time.Duration
		dst *C.double
	}{{o.ConnectTimeout, &opts.connect_timeout_ms}, {o.CommandTimeout, &opts.command_timeout_ms}} {
		if t.d != 0 {
			*t.dst = msOf(t.d)
		}
	}
	if o.Clock != nil {
		opts.clock = o.Clock.raw()
	}
	var ptr *C.mulligan_state
	if err := cerr("OpenState", C.mulligan_state_open(&ptr, cu, &opts)); err != nil {
		return nil, err
	}
	s := &State{ptr: ptr, clock: o.Clock}
	runtime.SetFinalizer(s, func(s *State) { _ = s.Close() })
	return s, nil
}

// Close releases the handle (the parts made on it keep the connection).
func (s *State) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		C.mulligan_state_destroy(s.ptr)
		s.ptr = nil
	}
	return nil
}

// StateHealth is what a State reports about itself (no secret in any field).
type StateHealth struct {
	// Reachable: the last command or connection attempt succeeded.
	Reachable bool
	// Endpoint is "redis://host:port/db", without credentials.
	Endpoint string
	// LastError is the failure since the last success ("": healthy).
	LastError string
	// RoundTrips sent; Failures refused; Reconnects after the first connection.
	RoundTrips, Failures, Reconnects uint64
}

// Health returns a snapshot of the state's health (ErrInvalidArgument for a
// nil or closed state).
func (s *State) Health() (StateHealth, error) {
	if s == nil {
		return StateHealth{}, invalid("State.Health", "nil state")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ptr == nil {
		return StateHealth{}, invalid("State.Health", "closed state")
	}
	defer lockThread()()
	h := C.mulligan_state_health{struct_size: C.uint32_t(C.sizeof_mulligan_state_health)}
	if err := cerr("State.Health", C.mulligan_state_health_get(s.ptr, &h)); err != nil {
		return StateHealth{}, err
	}
	var buf [512]C.char
	var n C.size_t
	out := StateHealth{Reachable: h.reachable != 0, RoundTrips: uint64(h.round_trips),
		Failures: uint64(h.failures), Reconnects: uint64(h.reconnects)}
	if C.mulligan_state_endpoint(s.ptr, &buf[0], C.size_t(len(buf)), &n) == C.MULLIGAN_OK {
		out.Endpoint = C.GoString(&buf[0])
	}
	if C.mulligan_state_last_error(s.ptr, &buf[0], C.size_t(len(buf)), &n) == C.MULLIGAN_OK {
		out.LastError = C.GoString(&buf[0])
	}
	return out, nil
}

// with runs f on the live handle (ErrInvalidArgument for nil or closed).
func (s *State) with(op string, f func(*C.mulligan_state) error) error {
	if s == nil {
		return invalid(op, "nil state")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ptr == nil {
		return invalid(op, "closed state")
	}
	err := f(s.ptr)
	runtime.KeepAlive(s)
	return err
}

// Share shares the breaker through state under its name (1 to 200 printable
// ASCII bytes without '{' or '}'): its trips, half-opens and closes are
// published, and the other processes' are applied to it, within one round
// trip plus one pub/sub delivery while subscribed (1 s while not). Calls
// still make no Redis round trip. Sharing lasts until the breaker is
// closed. ErrInvalidArgument: a bad name, a breaker already shared, or a
// breaker clock (BreakerClock) that is not the state's (StateOptions.Clock).
func (b *CircuitBreaker) Share(state *State) error {
	p := b.raw()
	if p == nil {
		return invalid("CircuitBreaker.Share", "nil or closed breaker")
	}
	return state.with("CircuitBreaker.Share", func(sp *C.mulligan_state) error {
		defer lockThread()()
		err := cerr("CircuitBreaker.Share", C.mulligan_breaker_share(p, sp))
		runtime.KeepAlive(b)
		return err
	})
}

// BreakerSharing is a shared breaker's report (Sharing).
type BreakerSharing struct {
	// Shared: the subscription is up and the last write worked. False: the
	// breaker serves from its local state alone (or is not shared).
	Shared bool
	// Subscribed: the subscriber holds a live subscription.
	Subscribed bool
	// Epoch is the newest epoch seen on the key (0: none).
	Epoch int64
	// Published transitions, PublishFailures, and remote transitions Applied.
	Published, PublishFailures, Applied uint64
}

// Sharing reports the breaker's sharing (the zero value when not shared).
func (b *CircuitBreaker) Sharing() BreakerSharing {
	p := b.raw()
	if p == nil {
		return BreakerSharing{}
	}
	h := C.mulligan_breaker_sharing{struct_size: C.uint32_t(C.sizeof_mulligan_breaker_sharing)}
	if C.mulligan_breaker_sharing_get(p, &h) != C.MULLIGAN_OK {
		return BreakerSharing{}
	}
	runtime.KeepAlive(b)
	return BreakerSharing{Shared: h.shared != 0, Subscribed: h.subscribed != 0, Epoch: int64(h.epoch),
		Published: uint64(h.published), PublishFailures: uint64(h.publish_failures), Applied: uint64(h.applied)}
}

// NewSharedRateLimiter creates a rate limiter whose bucket lives in state:
// every process using the same prefix and o.Name (1 to 200 printable ASCII
// bytes without '{' or '}') shares one Rate and Burst (GCRA; one round trip
// per Acquire). While Redis cannot answer, Acquire decides locally at the
// limiter's fallback rate. Errors as NewRateLimiter, plus the name rule.
func NewSharedRateLimiter(state *State, o RateLimiterOptions) (*RateLimiter, error) {
	var l *RateLimiter
	err := state.with("NewSharedRateLimiter", func(sp *C.mulligan_state) (err error) {
		l, err = newRateLimiter("NewSharedRateLimiter", o,
			func(out **C.mulligan_rate_limiter, name *C.char, wait C.double) C.int {
				return C.mulligan_rate_limiter_create_shared(out, sp, name, C.double(o.Rate), C.double(o.Burst),
					wait, cbool(o.PenalizeRetryAfter))
			})
		return err
	})
	return l, err
}

// NewSharedIdempotencyStore creates an idempotency store whose records live
// in state, shared by every process on the same prefix (one round trip per
// Reserve and one per Complete, each an atomic Lua script). It reads the
// state's clock and fails closed: while Redis cannot answer, Reserve and
// Complete return ErrStateUnavailable. Of the options, IdempotencyTTL
// applies; IdempotencyMaxEntries bounds a local store only.
func NewSharedIdempotencyStore(state *State, opts ...IdempotencyOption) (*IdempotencyStore, error) {
	var s *IdempotencyStore
	err := state.with("NewSharedIdempotencyStore", func(sp *C.mulligan_state) error {
		defer lockThread()()
		var o *C.mulligan_idempotency_options
		if err := cerr("NewSharedIdempotencyStore", C.mulligan_idempotency_options_create(&o)); err != nil {
			return err
		}
		defer C.mulligan_idempotency_options_destroy(o)
		for _, f := range opts {
			if f == nil {
				return invalid("NewSharedIdempotencyStore", "nil option")
			}
			if err := f(o); err != nil {
				return err
			}
		}
		var p *C.mulligan_idempotency_store
		if err := cerr("NewSharedIdempotencyStore", C.mulligan_idempotency_store_create_shared(o, sp, &p)); err != nil {
			return err
		}
		s = &IdempotencyStore{ptr: p, clock: state.clock}
		runtime.SetFinalizer(s, func(s *IdempotencyStore) { _ = s.Close() })
		return nil
	})
	return s, err
}
