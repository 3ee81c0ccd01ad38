package mulligan

/*
#include <stdlib.h>
#include <mulligan.h>

// The hedged call's steps, each reading the pipeline's clock itself (one cgo
// crossing per step) and copying the error text on failure (go_msg.h, as
// call.go's steps do: no OS-thread pinning needed).
#include "go_msg.h"

typedef struct { mulligan_hedged_call *call; int rc; go_msg msg; } go_hbegin_result;

static go_hbegin_result go_hedge_begin(const mulligan_hedging_policy *h,
                                       const mulligan_pipeline *p) {
  go_hbegin_result r;
  r.call = NULL;
  r.rc = mulligan_hedged_call_begin(&r.call, h, p, mulligan_pipeline_now_ms(p), NULL,
                                    MULLIGAN_HEDGE_ACCOUNTING_FULL);
  go_copy_msg(&r.msg, r.rc);
  return r;
}

typedef struct { mulligan_hedge_admission a; double now; int rc; go_msg msg; } go_hadmit_result;

static go_hadmit_result go_hedge_admit(mulligan_hedged_call *c, const mulligan_pipeline *p) {
  go_hadmit_result r;
  mulligan_hedge_admission a = MULLIGAN_HEDGE_ADMISSION_INIT;
  r.now = mulligan_pipeline_now_ms(p);
  r.rc = mulligan_hedged_call_admit(c, r.now, &a);
  r.a = a;
  go_copy_msg(&r.msg, r.rc);
  return r;
}

typedef struct { mulligan_hedge_decision d; int rc; go_msg msg; } go_hrecord_result;

static go_hrecord_result go_hedge_record(mulligan_hedged_call *c, const mulligan_pipeline *p,
                                         int copy, int kind, int status, double ra, int sent) {
  go_hrecord_result r;
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  mulligan_hedge_decision d = MULLIGAN_HEDGE_DECISION_INIT;
  o.error_kind = kind;
  o.http_status = status;
  o.retry_after_ms = ra;
  o.request_sent = sent;
  r.rc = mulligan_hedged_call_record(c, copy, &o, mulligan_pipeline_now_ms(p), &d);
  r.d = d;
  go_copy_msg(&r.msg, r.rc);
  return r;
}

// cancel: 1 for mulligan_hedged_call_cancel, 0 for _abandon.
static int go_hedge_end(mulligan_hedged_call *c, const mulligan_pipeline *p, int cancel) {
  double now = mulligan_pipeline_now_ms(p);
  return cancel ? mulligan_hedged_call_cancel(c, now) : mulligan_hedged_call_abandon(c, now);
}
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// HedgingOptions configure a HedgingPolicy (mulligan_hedging_options; gRPC
// A6 hedgingPolicy). The zero value of a field means its default.
// (Added in 0.6.)
type HedgingOptions struct {
	// MaxAttempts is the number of copies per call, the first included:
	// >= 2 (A6); values above 5 are treated as 5. 0: the default, 2.
	MaxAttempts int
	// Delay is the wait from one copy's start before the next may start
	// (A6 hedgingDelay): >= 0; 0 starts every copy at once (the default).
	Delay time.Duration
	// DelayQuantile, when not 0, in (0, 1] (e.g. 0.95): the delay is that
	// nearest-rank quantile of the latencies of the policy's recent winning
	// copies, once QuantileMinSamples are known ("The Tail at Scale").
	DelayQuantile float64
	// QuantileWindow is how many recent latencies are kept: [1, 100000].
	// 0: the default, 100.
	QuantileWindow int
	// QuantileMinSamples is how many latencies must be known before the
	// quantile replaces Delay: [1, QuantileWindow]. 0: the default, 20.
	QuantileMinSamples int
}

// HedgingPolicy is a validated hedging policy (mulligan_hedging_policy): its
// options and the latency window its calls share. Safe for concurrent use;
// share one between any number of Hedge calls. Close frees it once no Hedge
// uses it (a policy that is garbage-collected is freed as well).
// (Added in 0.6.)
type HedgingPolicy struct {
	h *hedgeHandle
}

// hedgeHandle owns the C policy; destroyed once, after every call with it.
type hedgeHandle struct {
	mu     sync.Mutex
	policy *C.mulligan_hedging_policy
	refs   int
	closed bool
}

// capAttempts keeps a copy count above what a C int holds at the C int's
// maximum, which the engine treats as 5 like any count above 5 (gRPC A6),
// instead of letting the conversion wrap it to a small or negative number.
func capAttempts(n int) int {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return n
}

// hedgingInt converts a hedging count for the C ABI: a value a C int cannot
// hold is an *Error naming the field and the value, never a wrapped number.
func hedgingInt(op, field string, n int) (C.int, error) {
	if n > math.MaxInt32 || n < math.MinInt32 {
		return 0, invalid(op, fmt.Sprintf("hedging: %s must fit a C int, got %d", field, n))
	}
	return C.int(n), nil
}

// NewHedgingPolicy validates o and creates a hedging policy. A bad field is
// an *Error with CodeInvalidArgument naming it ("hedging: max_attempts must
// be >= 2 (gRPC A6), got 1").
func NewHedgingPolicy(o HedgingOptions) (*HedgingPolicy, error) {
	if o.Delay < 0 {
		return nil, invalid("NewHedgingPolicy",
			fmt.Sprintf("hedging: Delay must be >= 0, got %v", o.Delay))
	}
	co := C.mulligan_hedging_options{}
	co.struct_size = C.uint32_t(unsafe.Sizeof(co))
	co.max_attempts, co.hedging_delay_ms = 2, msOf(o.Delay)
	if o.MaxAttempts != 0 {
		n, err := hedgingInt("NewHedgingPolicy", "max_attempts", capAttempts(o.MaxAttempts))
		if err != nil {
			return nil, err
		}
		co.max_attempts = n
	}
	co.delay_quantile = C.double(o.DelayQuantile)
	co.quantile_window, co.quantile_min_samples = 100, 20
	if o.QuantileWindow != 0 {
		n, err := hedgingInt("NewHedgingPolicy", "quantile_window", o.QuantileWindow)
		if err != nil {
			return nil, err
		}
		co.quantile_window = n
	}
	if o.QuantileMinSamples != 0 {
		n, err := hedgingInt("NewHedgingPolicy", "quantile_min_samples", o.QuantileMinSamples)
		if err != nil {
			return nil, err
		}
		co.quantile_min_samples = n
	}
	defer lockThread()()
	var ptr *C.mulligan_hedging_policy
	if err := cerr("NewHedgingPolicy", C.mulligan_hedging_policy_create(&ptr, &co)); err != nil {
		return nil, err
	}
	hh := &hedgeHandle{policy: ptr}
	p := &HedgingPolicy{h: hh}
	runtime.SetFinalizer(p, func(p *HedgingPolicy) { p.Close() })
	return p, nil
}

// Close frees the policy once no Hedge call uses it. Safe to call twice.
func (p *HedgingPolicy) Close() {
	if p == nil || p.h == nil {
		return
	}
	p.h.mu.Lock()
	defer p.h.mu.Unlock()
	p.h.closed = true
	p.h.destroyIfUnused()
}

// CurrentDelay is the delay a copy started now would wait before the next:
// the quantile of recent winners' latencies, or Delay.
func (p *HedgingPolicy) CurrentDelay() time.Duration {
	ptr := p.acquire()
	if ptr == nil {
		return 0
	}
	defer p.release()
	return durOf(C.mulligan_hedging_policy_current_delay_ms(ptr))
}

func (p *HedgingPolicy) acquire() *C.mulligan_hedging_policy {
	if p == nil || p.h == nil {
		return nil
	}
	p.h.mu.Lock()
	defer p.h.mu.Unlock()
	if p.h.closed || p.h.policy == nil {
		return nil
	}
	p.h.refs++
	return p.h.policy
}

func (p *HedgingPolicy) release() {
	p.h.mu.Lock()
	defer p.h.mu.Unlock()
	p.h.refs--
	p.h.destroyIfUnused()
}

// destroyIfUnused frees the C policy once closed and unused (mu held).
func (h *hedgeHandle) destroyIfUnused() {
	if h.closed && h.refs == 0 && h.policy != nil {
		C.mulligan_hedging_policy_destroy(h.policy)
		h.policy = nil
	}
}

// copyResult is what one copy's goroutine reports.
type copyResult struct {
	copy     int
	err      error
	panicked bool
	panicVal any
}

// Hedge runs fn as a hedged call through p (its retry classification,
// deadline and attempt timeout, its breaker, budget and metrics) under h
// (gRPC A6 hedgingPolicy; mulligan_hedging.h): copy 1 at once, copy k+1
// h's delay after copy k started, or at once after a retryable failure, at
// most h's MaxAttempts copies. Each copy runs fn(ctx', copy) in its own
// goroutine, ctx' derived from ctx (with the attempt timeout when p sets
// one). The first copy that returns nil wins: Hedge returns nil and cancels
// the other copies' contexts (counted as cancelled copies, never as
// failures). It does not wait for the cancelled copies to return: fn must
// honour its context, and must be safe to run concurrently with itself.
//
// Errors, as Do's: ErrUnavailable (a copy failed terminally; the others are
// cancelled), ErrRetriesExhausted (every copy failed retryably; Reason
// StopAttemptsExhausted, or StopBudget / StopDeadline when new copies were
// stopped), ErrCircuitOpen (the breaker refused the first copy, or refused
// a later one and the running copies then failed; RetryIn),
// ErrDeadlineExceeded (p's deadline, or ctx's: the call is then abandoned,
// counted failed), ErrCallback for a cancelled ctx (errors.Is
// context.Canceled): every copy's context is cancelled and the call is
// cancelled in the engine (mulligan_hedged_call_cancel: counted cancelled,
// neither success nor failure, breaker and budget not charged),
// ErrInvalidArgument (nil arguments, a closed policy). The last copy error
// is the *Error's Err.
//
// A copy that panics: the other copies are cancelled, the call abandoned
// (counted failed), and the panic value re-panics in Hedge's goroutine.
//
// Time: Hedge reads p's clock. With a FakeClock (WithClock), Hedge never
// advances it: it waits for a copy to end or for the clock to be advanced
// by someone else (a test), then asks again, so copies start at exact fake
// times. With the real clock it waits with a time.Timer.
//
// Only replay-safe (idempotent) work should be hedged. Safe for concurrent
// use with the same policies. (Added in 0.6.)
func Hedge(ctx context.Context, p *Policy, h *HedgingPolicy, fn func(ctx context.Context, copy int) error) error {
	_, err := hedge(ctx, p, h, fn)
	return err
}

// HedgeValue is Hedge for a function that returns a value: the winning
// copy's value, or T's zero value with the error. (Added in 0.6.)
func HedgeValue[T any](ctx context.Context, p *Policy, h *HedgingPolicy,
	fn func(ctx context.Context, copy int) (T, error)) (T, error) {
	var values [C.MULLIGAN_MAX_HEDGED_ATTEMPTS]T
	var zero T
	if fn == nil {
		return zero, invalid("HedgeValue", "nil function")
	}
	winner, err := hedge(ctx, p, h, func(c context.Context, copy int) error {
		v, e := fn(c, copy)
		if e == nil {
			values[copy-1] = v // each copy writes only its own slot
		}
		return e
	})
	if err != nil || winner < 1 {
		return zero, err
	}
	// The winner's write happened before its result was sent on the channel
	// Hedge received from (the channel orders them).
	return values[winner-1], nil
}

// hedge is Hedge's loop; it returns the winning copy (0 on an error).
func hedge(ctx context.Context, p *Policy, h *HedgingPolicy,
	fn func(context.Context, int) error) (winner int, result error) {
	if ctx == nil || p == nil || p.h == nil || h == nil || fn == nil {
		return 0, invalid("Hedge", "nil context, policy, hedging policy or function")
	}
	pipe := p.h.acquire()
	if pipe == nil {
		return 0, invalid("Hedge", "the policy is closed")
	}
	defer p.h.release()
	hp := h.acquire()
	if hp == nil {
		return 0, invalid("Hedge", "the hedging policy is closed")
	}
	defer h.release()
	if err := ctx.Err(); err != nil {
		e := ctxError(err, nil, 0).(*Error) // nothing begun
		e.Op = "Hedge"
		return 0, e
	}
	r := C.go_hedge_begin(hp, pipe)
	if r.rc != C.MULLIGAN_OK {
		return 0, msgErr("Hedge", r.rc, &r.msg)
	}
	s := &hedgeRun{p: p, pipe: pipe, call: r.call, results: make(chan copyResult, C.MULLIGAN_MAX_HEDGED_ATTEMPTS)}
	defer s.close(ctx)
	return s.loop(ctx, fn)
}

// hedgeRun is one Hedge call's state.
type hedgeRun struct {
	p       *Policy
	pipe    *C.mulligan_pipeline
	call    *C.mulligan_hedged_call
	results chan copyResult
	cancels [C.MULLIGAN_MAX_HEDGED_ATTEMPTS]context.CancelFunc
	last    error
	panic   *copyResult
}

func (s *hedgeRun) loop(ctx context.Context, fn func(context.Context, int) error) (int, error) {
	for C.mulligan_hedged_call_finished(s.call) == 0 {
		a := C.go_hedge_admit(s.call, s.pipe)
		if a.rc != C.MULLIGAN_OK {
			e := msgErr("Hedge", a.rc, &a.msg)
			if Code(a.rc) == CodeCircuitOpen {
				e.Reason, e.RetryIn = StopCircuitOpen, durOf(a.a.retry_in_ms)
			}
			return 0, e
		}
		if a.a.action == C.MULLIGAN_HEDGE_START {
			s.start(ctx, fn, int(a.a.copy), a.a.timeout_ms)
			continue
		}
		if a.a.action == C.MULLIGAN_HEDGE_NO_MORE && C.mulligan_hedged_call_running(s.call) == 0 {
			break // nothing to wait for (the engine has finished the call)
		}
		var timer *time.Timer
		var fired <-chan time.Time
		var advanced <-chan struct{}
		if a.a.action == C.MULLIGAN_HEDGE_WAIT {
			if s.p.clock != nil {
				advanced = s.p.clock.advanced()
				// An Advance between the admit and advanced(): ask again.
				if s.p.clock.Now() != durOf(a.now) {
					continue
				}
			} else {
				timer = time.NewTimer(durOf(a.a.next_start_ms - a.now))
				fired = timer.C
			}
		}
		done, err := false, error(nil)
		select {
		case <-ctx.Done():
			done, err = true, s.ctxError(ctx.Err(), s.last)
		case <-fired:
		case <-advanced:
		case res := <-s.results:
			done, err = s.record(ctx, res)
		}
		if timer != nil {
			timer.Stop()
		}
		if done {
			return int(C.mulligan_hedged_call_winner(s.call)), err
		}
	}
	return 0, s.stop()
}

// start runs copy `copy` in a goroutine with its own context.
func (s *hedgeRun) start(ctx context.Context, fn func(context.Context, int) error, copy int, timeoutMs C.double) {
	var cctx context.Context
	var cancel context.CancelFunc
	if timeoutMs >= 0 {
		cctx, cancel = context.WithTimeout(ctx, durOf(timeoutMs))
	} else {
		cctx, cancel = context.WithCancel(ctx)
	}
	s.cancels[copy-1] = cancel
	go func() {
		res := copyResult{copy: copy}
		defer func() {
			if v := recover(); v != nil {
				res.panicked, res.panicVal = true, v
			}
			s.results <- res // buffered for every copy: never blocks
		}()
		res.err = fn(cctx, copy)
	}()
}

// record records one copy's result; done: Hedge returns err.
func (s *hedgeRun) record(ctx context.Context, res copyResult) (bool, error) {
	if res.panicked {
		s.panic = &res
		return true, nil // close abandons, cancels and re-panics
	}
	if res.err != nil && errors.Is(ctx.Err(), context.Canceled) {
		// The caller cancelled ctx: the copy's failure is the cancel's.
		return true, s.ctxError(ctx.Err(), res.err)
	}
	o := SuccessOutcome()
	if res.err != nil {
		s.last = res.err
		o = outcomeOf(res.err, s.p.retryIf)
	}
	ra := C.double(-1)
	if o.RetryAfter >= 0 {
		ra = msOf(o.RetryAfter)
	}
	r := C.go_hedge_record(s.call, s.pipe, C.int(res.copy), C.int(o.Kind), C.int(o.HTTPStatus), ra,
		C.int(o.RequestSent))
	if r.rc != C.MULLIGAN_OK {
		return true, msgErr("Hedge", r.rc, &r.msg)
	}
	for i := 0; i < int(r.d.cancel_count); i++ {
		s.cancelCopy(int(r.d.cancel[i]))
	}
	s.cancelCopy(res.copy) // its context is no longer needed
	if r.d.finished == 0 {
		return false, nil
	}
	if r.d.winner != 0 {
		return true, res.err // nil, or an error the engine judged a success
	}
	return true, s.stop()
}

// stop maps the finished call's stop reason to Hedge's error.
func (s *hedgeRun) stop() error {
	a := C.go_hedge_admit(s.call, s.pipe) // a finished call answers its reason
	if a.msg.text != nil {
		C.free(unsafe.Pointer(a.msg.text))
	}
	reason := StopReason(a.a.reason)
	if reason == StopCircuitOpen {
		return &Error{Code: CodeCircuitOpen, Op: "Hedge", Msg: "the circuit breaker stopped new copies",
			Reason: reason, Attempts: s.started(), RetryIn: durOf(a.a.retry_in_ms), Err: s.last}
	}
	e := stopError(Decision{Reason: reason}, s.last, s.started())
	if ee, ok := e.(*Error); ok {
		ee.Op = "Hedge"
	}
	return e
}

func (s *hedgeRun) cancelCopy(copy int) {
	if copy >= 1 && copy <= len(s.cancels) && s.cancels[copy-1] != nil {
		s.cancels[copy-1]()
		s.cancels[copy-1] = nil
	}
}

// ctxError is Do's error for a context that ended (ErrCallback for a
// cancel, ErrDeadlineExceeded for a deadline), from Hedge.
func (s *hedgeRun) ctxError(err, last error) error {
	e := ctxError(err, last, s.started()).(*Error)
	e.Op = "Hedge"
	return e
}

func (s *hedgeRun) started() int { return int(C.mulligan_hedged_call_started(s.call)) }

// close ends an unfinished call (cancelled for a cancelled ctx, else
// abandoned), cancels every copy still running, frees the C call and
// re-panics a copy's panic.
func (s *hedgeRun) close(ctx context.Context) {
	if C.mulligan_hedged_call_finished(s.call) == 0 {
		cancel := s.panic == nil && errors.Is(ctx.Err(), context.Canceled)
		C.go_hedge_end(s.call, s.pipe, cbool(cancel))
	}
	for i := range s.cancels {
		s.cancelCopy(i + 1)
	}
	C.mulligan_hedged_call_destroy(s.call)
	s.call = nil
	if s.panic != nil {
		panic(s.panic.panicVal)
	}
}
