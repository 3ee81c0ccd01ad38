package mulligan

/*
#include <stdlib.h>
#include <mulligan.h>

// Steps return their status and, on failure, a copy of the thread's error
// text (go_msg, go_copy_msg).
#include "go_msg.h"

typedef struct { mulligan_call *call; int rc; go_msg msg; } go_begin_result;

// Each step reads the pipeline's clock itself (one cgo crossing per step).
static go_begin_result go_call_begin(const mulligan_pipeline *p, const char *key,
                                     int replay_safe) {
  double now = mulligan_pipeline_now_ms(p);
  go_begin_result r;
  mulligan_call_options o = MULLIGAN_CALL_OPTIONS_INIT;
  o.key = key;
  o.replay_safe = replay_safe;
  r.call = NULL;
  r.rc = mulligan_call_begin(&r.call, p, now, &o);
  go_copy_msg(&r.msg, r.rc);
  return r;
}

static mulligan_admission go_call_admit(mulligan_call *c, double now, int *rc);

typedef struct { mulligan_call *call; int rc; int admit_rc; mulligan_admission a; go_msg msg; }
    go_begin_admit_result;

// Begins a call and admits its first attempt at one clock reading (one cgo
// crossing for both; no time passes between them).
static go_begin_admit_result go_call_begin_admit(const mulligan_pipeline *p, int replay_safe) {
  double now = mulligan_pipeline_now_ms(p);
  go_begin_admit_result r;
  mulligan_call_options o = MULLIGAN_CALL_OPTIONS_INIT;
  o.replay_safe = replay_safe;
  r.call = NULL;
  r.admit_rc = MULLIGAN_OK;
  r.rc = mulligan_call_begin(&r.call, p, now, &o);
  if (r.rc == MULLIGAN_OK) {
    r.a = go_call_admit(r.call, now, &r.admit_rc);
    go_copy_msg(&r.msg, r.admit_rc);
  } else {
    go_copy_msg(&r.msg, r.rc);
  }
  return r;
}

static mulligan_admission go_call_admit(mulligan_call *c, double now, int *rc) {
  mulligan_admission a = MULLIGAN_ADMISSION_INIT;
  *rc = mulligan_call_admit(c, now, &a);
  return a;
}

typedef struct { mulligan_decision d; int rc; go_msg msg; } go_record_result;

static go_record_result go_call_record(mulligan_call *c, const mulligan_pipeline *p, int kind,
                                       int status, double ra, int sent) {
  double now = mulligan_pipeline_now_ms(p);
  go_record_result r;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_decision d = MULLIGAN_DECISION_INIT;
  o.error_kind = kind;
  o.http_status = status;
  o.retry_after_ms = ra;
  o.request_sent = sent;
  r.rc = mulligan_call_record(c, &o, now, &d);
  r.d = d;
  go_copy_msg(&r.msg, r.rc);
  return r;
}

typedef struct { mulligan_admission a; int rc; go_msg msg; } go_admit_result;

static go_admit_result go_call_admit2(mulligan_call *c, const mulligan_pipeline *p) {
  double now = mulligan_pipeline_now_ms(p);
  go_admit_result r;
  r.a = go_call_admit(c, now, &r.rc);
  go_copy_msg(&r.msg, r.rc);
  return r;
}

static go_msg go_call_abandon(mulligan_call *c, const mulligan_pipeline *p, int in_flight,
                              int *rc) {
  double now = mulligan_pipeline_now_ms(p);
  go_msg m;
  *rc = mulligan_call_abandon(c, now, in_flight);
  go_copy_msg(&m, *rc);
  return m;
}

static go_msg go_call_cancel(mulligan_call *c, const mulligan_pipeline *p, int in_flight,
                             int *rc) {
  double now = mulligan_pipeline_now_ms(p);
  go_msg m;
  *rc = mulligan_call_cancel(c, now, in_flight);
  go_copy_msg(&m, *rc);
  return m;
}
*/
import "C"

import (
	"context"
	"time"
	"unsafe"
)

// Call is one logical call through a Policy, stepped by its caller: the
// engine's step API (mulligan_pipeline.h: begin, admit, record, abandon)
// for callers with their own loop (an event loop, a scheduler, tests). Do
// is a loop over it. Each step reads the policy's clock.
//
// Thread-safety: not safe for concurrent use; one goroutine steps it at a
// time. Close it when done (a call closed before it finished is abandoned);
// the Policy stays alive until then. Nil-safe: methods of a nil or closed
// Call return ErrInvalidArgument.
type Call struct {
	p        *Policy
	ptr      *C.mulligan_call
	pipe     *C.mulligan_pipeline
	admitted bool
}

// CallOptions are per-call choices for BeginWith (mulligan_call_options).
type CallOptions struct {
	// Key is the call's key: its metrics name when the policy has none.
	Key string
	// NotReplaySafe marks a request that must not be repeated once sent
	// (POST or PATCH without an idempotency key): only failures before any
	// byte was sent (Outcome.RequestSent) are then retried.
	NotReplaySafe bool
}

// Begin begins a logical call whose first attempt starts now.
func (p *Policy) Begin() (*Call, error) { return p.BeginWith(CallOptions{}) }

// BeginWith begins a logical call with per-call options.
func (p *Policy) BeginWith(o CallOptions) (*Call, error) {
	if p == nil || p.h == nil {
		return nil, invalid("Begin", "nil policy")
	}
	pipe := p.h.acquire()
	if pipe == nil {
		return nil, invalid("Begin", "the policy is closed")
	}
	c, err := p.begin(pipe, o.Key, !o.NotReplaySafe)
	if err != nil {
		p.h.release()
		return nil, err
	}
	return c, nil
}

func (p *Policy) begin(pipe *C.mulligan_pipeline, key string, replaySafe bool) (*Call, error) {
	var ck *C.char
	if key != "" {
		ck = C.CString(key)
		defer C.free(unsafe.Pointer(ck))
	}
	r := C.go_call_begin(pipe, ck, cbool(replaySafe))
	if r.rc != C.MULLIGAN_OK {
		return nil, msgErr("Begin", r.rc, &r.msg)
	}
	return &Call{p: p, ptr: r.call, pipe: pipe}, nil
}

// beginAdmit begins a call of Do and admits its first attempt in one cgo
// crossing: the call (nil on a begin failure) and Admit's results.
func (p *Policy) beginAdmit(pipe *C.mulligan_pipeline) (*Call, Admission, error) {
	r := C.go_call_begin_admit(pipe, 1)
	if r.rc != C.MULLIGAN_OK {
		return nil, Admission{}, msgErr("Begin", r.rc, &r.msg)
	}
	c := &Call{p: p, ptr: r.call, pipe: pipe}
	a, err := c.admission(r.admit_rc, r.a, &r.msg)
	return c, a, err
}

// Admit asks the pipeline whether the next attempt may run now. A breaker's
// refusal returns an *Error with CodeCircuitOpen (errors.Is ErrCircuitOpen)
// and RetryIn, and ends the call.
func (c *Call) Admit() (Admission, error) {
	if c == nil || c.ptr == nil {
		return Admission{}, invalid("Call.Admit", "nil or closed call")
	}
	r := C.go_call_admit2(c.ptr, c.pipe)
	return c.admission(r.rc, r.a, &r.msg)
}

func (c *Call) admission(rc C.int, ca C.mulligan_admission, m *C.go_msg) (Admission, error) {
	r := struct {
		rc C.int
		a  C.mulligan_admission
	}{rc, ca}
	if r.rc != C.MULLIGAN_OK {
		e := msgErr("Call.Admit", r.rc, m)
		if Code(r.rc) == CodeCircuitOpen {
			e.Reason = StopCircuitOpen
			e.RetryIn = durOf(r.a.retry_in_ms)
		} else if r.a.reason != C.MULLIGAN_STOP_NONE {
			// A throttle, bulkhead or limiter refusal (never retried).
			e.Reason = StopReason(r.a.reason)
			e.RetryIn = durOf(r.a.retry_in_ms)
		}
		return Admission{}, e
	}
	c.admitted = true
	a := Admission{Attempt: int(r.a.attempt), Timeout: -1}
	if r.a.action == C.MULLIGAN_ADMISSION_WAIT {
		a.Wait = durOf(r.a.delay_ms)
	}
	if r.a.timeout_ms >= 0 {
		a.Timeout = durOf(r.a.timeout_ms)
	}
	return a, nil
}

// Record records the outcome of the attempt that just ended and returns the
// engine's decision. A Record with no Admit before it counts an attempt that
// ran unguarded (allowed when the policy has no breaker).
func (c *Call) Record(o Outcome) (Decision, error) {
	if c == nil || c.ptr == nil {
		return Decision{}, invalid("Call.Record", "nil or closed call")
	}
	ra := C.double(-1)
	if o.RetryAfter >= 0 {
		ra = msOf(o.RetryAfter)
	}
	r := C.go_call_record(c.ptr, c.pipe, C.int(o.Kind), C.int(o.HTTPStatus), ra, C.int(o.RequestSent))
	if r.rc != C.MULLIGAN_OK {
		return Decision{}, msgErr("Call.Record", r.rc, &r.msg)
	}
	c.admitted = false
	d := r.d
	return Decision{
		Retry:          d.action == C.MULLIGAN_ACTION_RETRY,
		Delay:          durOf(d.delay_ms),
		Reason:         StopReason(d.reason),
		Classification: Classification(d.classification),
		Attempt:        int(d.attempt),
		FromRetryAfter: d.from_retry_after != 0,
	}, nil
}

// Abandon ends the call for a failure of the caller's (a panic, an attempt
// torn down): frees a breaker permit it holds without judging the
// dependency, and reports the call as failed with inFlight attempts that
// never got recorded (1 when an admitted attempt was cut off, else 0).
// No-op once the call finished. A cancelled context is Cancel's.
func (c *Call) Abandon(inFlight int) error {
	if c == nil || c.ptr == nil {
		return invalid("Call.Abandon", "nil or closed call")
	}
	var rc C.int
	m := C.go_call_abandon(c.ptr, c.pipe, C.int(inFlight), &rc)
	if rc != C.MULLIGAN_OK {
		return msgErr("Call.Abandon", rc, &m)
	}
	return nil
}

// Cancel ends the call because its caller cancelled it (a cancelled
// context: context.Canceled): as Abandon it frees a breaker permit unjudged
// and the retry budget is not told, but the metrics count the call as
// cancelled (MetricsSnapshot.Cancelled, mulligan_cancelled_total), not as
// failed, with inFlight attempts that never got recorded (1 when an
// admitted attempt was cut off, else 0). No-op once the call finished
// (mulligan_call_cancel). Errors: ErrInvalidArgument for a nil or closed
// call or inFlight < 0. Not safe for concurrent use (as the Call).
// (Added in 0.6.)
func (c *Call) Cancel(inFlight int) error {
	if c == nil || c.ptr == nil {
		return invalid("Call.Cancel", "nil or closed call")
	}
	var rc C.int
	m := C.go_call_cancel(c.ptr, c.pipe, C.int(inFlight), &rc)
	if rc != C.MULLIGAN_OK {
		return msgErr("Call.Cancel", rc, &m)
	}
	return nil
}

// Wait blocks, after an Admit that answered a Wait, until a bulkhead's
// queue hands this call its slot or max passes (real time; a limiter's wait
// has no queue and returns at once: sleep its Wait yourself). Then Admit
// again. It does not watch a context: Do waits in short slices instead.
func (c *Call) Wait(max time.Duration) error {
	if c == nil || c.ptr == nil {
		return invalid("Call.Wait", "nil or closed call")
	}
	if rc := C.mulligan_call_wait(c.ptr, msOf(max)); rc != C.MULLIGAN_OK {
		return &Error{Code: Code(rc), Op: "Call.Wait"}
	}
	return nil
}

// Attempts returns the attempts recorded so far.
func (c *Call) Attempts() int {
	if c == nil || c.ptr == nil {
		return 0
	}
	return int(C.mulligan_call_attempts(c.ptr))
}

// Finished reports whether the call ended (a stop, a refusal, an abandon).
func (c *Call) Finished() bool {
	if c == nil || c.ptr == nil {
		return true
	}
	return C.mulligan_call_finished(c.ptr) != 0
}

// Close destroys the call (abandoning it if it had not finished) and lets
// the Policy be freed. Safe to call twice; nil-safe.
func (c *Call) Close() {
	if c == nil || c.ptr == nil {
		return
	}
	C.mulligan_call_destroy(c.ptr)
	c.ptr = nil
	c.p.h.release()
}

// wait waits d the caller's way: a time.Timer, or advancing the fake clock.
func (p *Policy) wait(ctx context.Context, d time.Duration) error {
	if p.clock != nil {
		if err := ctx.Err(); err != nil {
			return err
		}
		return p.clock.Advance(d)
	}
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// closeKeep destroys the C call but leaves the policy reference to the
// caller (run releases it itself).
func (c *Call) closeKeep() {
	if c.ptr != nil {
		C.mulligan_call_destroy(c.ptr)
		c.ptr = nil
	}
}

func msgErr(op string, rc C.int, m *C.go_msg) *Error {
	msg := ""
	if m.text != nil {
		msg = C.GoString(m.text)
		C.free(unsafe.Pointer(m.text))
	}
	return &Error{Code: Code(rc), Op: op, Msg: msg}
}
