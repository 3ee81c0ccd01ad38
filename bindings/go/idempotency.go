package mulligan

/*
#include <stdlib.h>
#include <mulligan.h>

static int go_complete(mulligan_idempotency_store *s, mulligan_idempotency_reservation *r, int status,
                       char **names, char **values, size_t n, const void *body, size_t len) {
  return mulligan_idempotency_store_complete(s, r, status, (const char *const *)names,
                                             (const char *const *)values, n, body, len);
}
*/
import "C"

import (
	"net/http"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// IdempotencyState is what a reservation found (mulligan_idempotency_state).
type IdempotencyState int

// Reservation states: run the handler; replay the stored response; answer
// 409 (in flight); answer 422 (same key, different request).
const (
	IdempotencyReserved            IdempotencyState = 0
	IdempotencyReplay              IdempotencyState = 1
	IdempotencyInFlight            IdempotencyState = 2
	IdempotencyFingerprintMismatch IdempotencyState = 3
)

// String is the engine's name ("reserved", "replay", ...).
func (s IdempotencyState) String() string {
	return C.GoString(C.mulligan_idempotency_state_str(C.int(s)))
}

// IdempotencyOption configures an IdempotencyStore.
type IdempotencyOption func(*C.mulligan_idempotency_options) error

// IdempotencyTTL sets how long a completed response is replayed (default 24h).
func IdempotencyTTL(d time.Duration) IdempotencyOption {
	return func(o *C.mulligan_idempotency_options) error {
		return cerr("NewIdempotencyStore: ttl", C.mulligan_idempotency_options_set_ttl_ms(o, msOf(d)))
	}
}

// IdempotencyMaxEntries bounds the completed entries kept.
func IdempotencyMaxEntries(n int) IdempotencyOption {
	return func(o *C.mulligan_idempotency_options) error {
		if n < 0 {
			return invalid("NewIdempotencyStore: max entries", "negative")
		}
		return cerr("NewIdempotencyStore: max entries", C.mulligan_idempotency_options_set_max_entries(o, C.size_t(n)))
	}
}

// IdempotencyStore is the server side of Idempotency-Key (DESIGN.md section
// 5, Stripe's behaviour): the first request with a key runs and its response
// is stored; a repeat replays it; a repeat in flight gets 409; the same key
// with another fingerprint gets 422. Safe for concurrent use. Close frees it
// (reservations must not be completed afterwards); nil-safe.
type IdempotencyStore struct {
	mu    sync.RWMutex
	ptr   *C.mulligan_idempotency_store
	clock *FakeClock
}

// NewIdempotencyStore creates a store reading clk (nil: the system clock).
func NewIdempotencyStore(clk *FakeClock, opts ...IdempotencyOption) (*IdempotencyStore, error) {
	defer lockThread()()
	var o *C.mulligan_idempotency_options
	if err := cerr("NewIdempotencyStore", C.mulligan_idempotency_options_create(&o)); err != nil {
		return nil, err
	}
	defer C.mulligan_idempotency_options_destroy(o)
	for _, f := range opts {
		if f == nil {
			return nil, invalid("NewIdempotencyStore", "nil option")
		}
		if err := f(o); err != nil {
			return nil, err
		}
	}
	var p *C.mulligan_idempotency_store
	if err := cerr("NewIdempotencyStore", C.mulligan_idempotency_store_create(o, clk.raw(), &p)); err != nil {
		return nil, err
	}
	s := &IdempotencyStore{ptr: p, clock: clk}
	runtime.SetFinalizer(s, func(s *IdempotencyStore) { _ = s.Close() })
	return s, nil
}

// Close frees the store. Idempotent; nil-safe.
func (s *IdempotencyStore) Close() error {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ptr != nil {
		C.mulligan_idempotency_store_destroy(s.ptr)
		s.ptr = nil
	}
	return nil
}

// Reservation is the result of Reserve. Complete or Release a Reserved one.
type Reservation struct {
	// State is what the reservation found.
	State IdempotencyState
	// RetryAfter is, for IdempotencyInFlight, the hint to send with the 409.
	RetryAfter time.Duration
	// Status, Header and Body are the stored response, for IdempotencyReplay.
	Status int
	Header http.Header
	Body   []byte

	s   *IdempotencyStore
	ptr *C.mulligan_idempotency_reservation
}

// Reserve looks up (scope, key) and reserves it when free; fingerprint
// identifies the request (method, path, a body digest).
func (s *IdempotencyStore) Reserve(scope, key string, fingerprint []byte) (*Reservation, error) {
	if s == nil {
		return nil, invalid("IdempotencyStore.Reserve", "nil store")
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.ptr == nil {
		return nil, invalid("IdempotencyStore.Reserve", "the store is closed")
	}
	cs, ck := C.CString(scope), C.CString(key)
	defer C.free(unsafe.Pointer(cs))
	defer C.free(unsafe.Pointer(ck))
	var fp unsafe.Pointer
	if len(fingerprint) > 0 {
		fp = C.CBytes(fingerprint)
		defer C.free(fp)
	}
	defer lockThread()()
	var r *C.mulligan_idempotency_reservation
	if err := cerr("IdempotencyStore.Reserve", C.mulligan_idempotency_store_reserve(s.ptr, cs, ck, fp, C.size_t(len(fingerprint)), &r)); err != nil {
		return nil, err
	}
	out := &Reservation{State: IdempotencyState(C.mulligan_idempotency_reservation_state(r)), s: s, ptr: r}
	switch out.State {
	case IdempotencyInFlight:
		out.RetryAfter = durOf(C.mulligan_idempotency_reservation_retry_after_ms(r))
	case IdempotencyReplay:
		out.Status = int(C.mulligan_idempotency_reservation_status(r))
		var n C.size_t
		if b := C.mulligan_idempotency_reservation_body(r, &n); b != nil && n > 0 {
			out.Body = C.GoBytes(unsafe.Pointer(b), C.int(n))
		}
		out.Header = http.Header{}
		for i := C.size_t(0); i < C.mulligan_idempotency_reservation_header_count(r); i++ {
			var name, value *C.char
			if C.mulligan_idempotency_reservation_header_at(r, i, &name, &value) == C.MULLIGAN_OK {
				out.Header.Add(C.GoString(name), C.GoString(value))
			}
		}
	}
	if out.State != IdempotencyReserved {
		C.mulligan_idempotency_reservation_destroy(r)
		out.ptr = nil
	} else {
		runtime.SetFinalizer(out, func(r *Reservation) { r.free() })
	}
	return out, nil
}

func (r *Reservation) free() {
	if r.ptr != nil {
		C.mulligan_idempotency_reservation_destroy(r.ptr)
		r.ptr = nil
	}
}

// Complete stores the handler's response for the key (replayed for the
// store's ttl) and ends the reservation.
func (r *Reservation) Complete(status int, header http.Header, body []byte) error {
	if r == nil || r.ptr == nil {
		return invalid("Reservation.Complete", "nil or finished reservation")
	}
	r.s.mu.RLock()
	defer r.s.mu.RUnlock()
	if r.s.ptr == nil {
		return invalid("Reservation.Complete", "the store is closed")
	}
	var free []unsafe.Pointer
	defer func() {
		for _, p := range free {
			C.free(p)
		}
	}()
	n := 0
	for _, vs := range header {
		n += len(vs)
	}
	var names, values **C.char
	if n > 0 {
		sz := C.size_t(n) * C.size_t(unsafe.Sizeof(uintptr(0)))
		names, values = (**C.char)(C.malloc(sz)), (**C.char)(C.malloc(sz))
		free = append(free, unsafe.Pointer(names), unsafe.Pointer(values))
		ns, vs := unsafe.Slice(names, n), unsafe.Slice(values, n)
		i := 0
		for k, vals := range header {
			for _, v := range vals {
				ns[i], vs[i] = C.CString(k), C.CString(v)
				free = append(free, unsafe.Pointer(ns[i]), unsafe.Pointer(vs[i]))
				i++
			}
		}
	}
	var cb unsafe.Pointer
	if len(body) > 0 {
		cb = C.CBytes(body)
		free = append(free, cb)
	}
	defer lockThread()()
	rc := C.go_complete(r.s.ptr, r.ptr, C.int(status), names, values, C.size_t(n), cb, C.size_t(len(body)))
	if err := cerr("Reservation.Complete", rc); err != nil {
		return err
	}
	r.free()
	return nil
}

// Release frees the key without storing anything (the handler failed), so a
// retry with the same key runs the handler again.
func (r *Reservation) Release() error {
	if r == nil || r.ptr == nil {
		return invalid("Reservation.Release", "nil or finished reservation")
	}
	r.s.mu.RLock()
	defer r.s.mu.RUnlock()
	if r.s.ptr == nil {
		return invalid("Reservation.Release", "the store is closed")
	}
	defer lockThread()()
	if err := cerr("Reservation.Release", C.mulligan_idempotency_store_release(r.s.ptr, r.ptr)); err != nil {
		return err
	}
	r.free()
	return nil
}

// NewIdempotencyKey returns a fresh key (a UUID v4) for Idempotency-Key.
func NewIdempotencyKey() (string, error) {
	var buf [C.MULLIGAN_IDEMPOTENCY_KEY_SIZE]C.char
	if rc := C.mulligan_idempotency_key_new(&buf[0], C.size_t(len(buf))); rc != C.MULLIGAN_OK {
		return "", &Error{Code: Code(rc), Op: "NewIdempotencyKey"}
	}
	return C.GoString(&buf[0]), nil
}
