package mulligan

import (
	"context"
	"errors"
	"time"
)

// Do runs fn until it succeeds or the policy stops, waiting between attempts
// for the delays the engine decides (a time.Timer, or the policy's
// FakeClock). It returns nil when an attempt succeeded, else an *Error:
//
//   - ErrRetriesExhausted: every attempt failed retryably (attempts used up,
//     a Retry-After hint too long, ...); Reason says which.
//   - ErrUnavailable: an attempt failed terminally (Permanent, a 404, RetryIf
//     false), not retried.
//   - ErrDeadlineExceeded: the policy's deadline, or ctx's deadline, ended
//     the call (for ctx, errors.Is(err, context.DeadlineExceeded) too). A
//     wait that would cross ctx's deadline is not started.
//   - ErrCallback: ctx was cancelled (errors.Is(err, context.Canceled)).
//   - ErrCircuitOpen: the policy's breaker refused an attempt (RetryIn).
//   - ErrThrottled, ErrBulkheadFull, ErrRateLimited (RetryIn): the policy's
//     throttle, bulkhead or rate limiter refused the call; never retried.
//     A rate limiter's wait and a bulkhead's queue end with ctx too.
//   - A retry budget's refusal is ErrRetriesExhausted with Reason
//     StopBudget: the last failure is kept as Err.
//   - ErrInvalidArgument: a nil ctx, policy or fn, or a closed policy.
//
// The last error fn returned is the *Error's Err: errors.Is(err, yours) and
// errors.As work through it. Each attempt gets ctx (with the attempt's
// timeout when the policy sets one).
//
// Success path: when the policy has no breaker, no metrics name, no deadline,
// no attempt timeout, no throttle, bulkhead or rate limiter, fn runs first
// and Do enters the engine only if it failed (DESIGN.md section 2), so a
// first-attempt success costs no cgo call (one, mulligan_budget_add_successes,
// with a retry budget: the budget's lazy success counter).
//
// Panics: if fn (or an OnRetry hook) panics, the call is abandoned in the
// engine (a breaker permit is freed, the call counted as failed) and the
// panic continues, unchanged, to Do's caller. No Go panic crosses C.
//
// Cancellation: when ctx is cancelled (context.Canceled) during a wait or
// an attempt (fn returning an error then), the call is cancelled in the
// engine (mulligan_call_cancel): counted cancelled, neither success nor
// failure, the breaker permit freed unjudged, the retry budget not told.
// A ctx deadline (context.DeadlineExceeded) ends the call as failed.
//
// Do is safe for concurrent use with the same policy.
func Do(ctx context.Context, p *Policy, fn func(context.Context) error) error {
	if ctx == nil || p == nil || fn == nil {
		return invalid("Do", "nil context, policy or function")
	}
	if p.fast {
		if err := ctx.Err(); err != nil {
			return ctxError(err, nil, 0)
		}
		err := fn(ctx)
		if err == nil {
			p.fastSuccess()
			return nil
		}
		return p.run(ctx, fn, err)
	}
	return p.run(ctx, fn, nil)
}

// DoValue is Do for a function that returns a value: the value of the
// successful attempt, or T's zero value with the error.
func DoValue[T any](ctx context.Context, p *Policy, fn func(context.Context) (T, error)) (T, error) {
	var zero T
	if ctx == nil || p == nil || fn == nil {
		return zero, invalid("DoValue", "nil context, policy or function")
	}
	if p.fast {
		if err := ctx.Err(); err != nil {
			return zero, ctxError(err, nil, 0)
		}
		v, err := fn(ctx)
		if err == nil {
			p.fastSuccess()
			return v, nil
		}
		var out T
		err = p.run(ctx, func(c context.Context) error {
			var e error
			out, e = fn(c)
			return e
		}, err)
		if err != nil {
			return zero, err
		}
		return out, nil
	}
	var out T
	err := p.run(ctx, func(c context.Context) error {
		var e error
		out, e = fn(c)
		return e
	}, nil)
	if err != nil {
		return zero, err
	}
	return out, nil
}

func ctxError(err, last error, attempts int) error {
	e := &Error{Code: CodeCallback, Op: "Do", Msg: "the context was cancelled", Reason: StopTerminal,
		Attempts: attempts, Err: last, ctxErr: err}
	if errors.Is(err, context.DeadlineExceeded) {
		e.Code, e.Msg, e.Reason = CodeDeadlineExceeded, "the context's deadline", StopDeadline
	}
	return e
}

// run is the slow path: the loop over the step API. first is the error of
// a first attempt that already ran unguarded (the fast path), or nil.
func (p *Policy) run(ctx context.Context, fn func(context.Context) error, first error) (result error) {
	if p.h == nil {
		return invalid("Do", "nil policy")
	}
	pipe := p.h.acquire()
	if pipe == nil {
		return invalid("Do", "the policy is closed")
	}
	defer p.h.release()
	var c *Call
	var err error
	var a0 Admission // the first attempt's admission, taken with the begin
	var a0err error
	if first == nil {
		if cerr := ctx.Err(); cerr != nil {
			return ctxError(cerr, nil, 0) // nothing begun: no attempt was cut off
		}
		c, a0, a0err = p.beginAdmit(pipe)
		if c == nil {
			return a0err
		}
	} else if c, err = p.begin(pipe, "", true); err != nil {
		return err
	}
	admitted := first == nil
	defer func() {
		// Runs on return and while a panic of fn unwinds (no recover: the
		// panic goes on unchanged). A call its caller cancelled (ctx:
		// context.Canceled) is cancelled, counted neither success nor
		// failure (DESIGN.md: a caller's cancel is never a failure); one
		// ended otherwise (a panic, ctx's deadline) is abandoned, counted
		// failed; either with the admitted attempt in flight.
		if !c.Finished() {
			inFlight := 0
			if c.admitted {
				inFlight = 1
			}
			if errors.Is(ctx.Err(), context.Canceled) {
				_ = c.Cancel(inFlight)
			} else {
				_ = c.Abandon(inFlight)
			}
		}
		c.closeKeep()
	}()
	err = first
	ran := first != nil
	var last error
	for {
		if !ran {
			if cerr := ctx.Err(); cerr != nil {
				return ctxError(cerr, last, c.Attempts())
			}
			a, aerr := a0, a0err
			if !admitted {
				a, aerr = c.Admit()
			}
			admitted = false
			if aerr != nil {
				e := aerr.(*Error)
				e.Op, e.Err, e.Attempts = "Do", last, c.Attempts()
				return e
			}
			queue := p.queue && p.clock == nil
			for a.Wait > 0 {
				if werr := p.admitWait(ctx, c, a.Wait, &queue); werr != nil {
					return ctxError(werr, last, c.Attempts())
				}
				if a, aerr = c.Admit(); aerr != nil {
					e := aerr.(*Error)
					e.Op, e.Err, e.Attempts = "Do", last, c.Attempts()
					return e
				}
			}
			actx := ctx
			var cancel context.CancelFunc
			if a.Timeout >= 0 {
				actx, cancel = context.WithTimeout(ctx, a.Timeout)
			}
			err = fn(actx)
			if cancel != nil {
				cancel()
			}
			if err != nil && errors.Is(ctx.Err(), context.Canceled) {
				// The caller cancelled ctx during the attempt: its failure
				// is the cancel's, not the dependency's; it is not recorded
				// (the deferred Cancel counts it in flight).
				return ctxError(ctx.Err(), err, c.Attempts()+1)
			}
		}
		ran = false
		o := SuccessOutcome()
		if err != nil {
			last = err
			o = outcomeOf(err, p.retryIf)
		}
		d, rerr := c.Record(o)
		if rerr != nil {
			e := rerr.(*Error)
			e.Op, e.Err = "Do", last
			return e
		}
		if !d.Retry {
			return stopError(d, err, c.Attempts())
		}
		if p.onRetry != nil {
			p.onRetry(RetryEvent{Attempt: d.Attempt, Delay: d.Delay, FromRetryAfter: d.FromRetryAfter, Err: err})
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= d.Delay && d.Delay > 0 {
			return ctxError(context.DeadlineExceeded, last, c.Attempts())
		}
		if werr := p.wait(ctx, d.Delay); werr != nil {
			return ctxError(werr, last, c.Attempts())
		}
	}
}

// stopError maps a stop decision to Do's result (as mulligan_retry_call's
// status codes: DESIGN.md section 6).
func stopError(d Decision, err error, attempts int) error {
	var code Code
	msg := ""
	switch d.Reason {
	case StopSucceeded:
		return err // nil, or an error the engine judged a success (HTTP < 400)
	case StopTerminal:
		code, msg = CodeUnavailable, "the outcome was terminal, not retried"
	case StopDeadline:
		code, msg = CodeDeadlineExceeded, "the policy's deadline"
	case StopBudget:
		code, msg = CodeRetriesExhausted, "the retry budget refused the retry (the last failure is kept)"
	case StopRetryAfterTooLong:
		code, msg = CodeRetriesExhausted, "the Retry-After hint exceeds the maximum"
	default:
		code, msg = CodeRetriesExhausted, "gave up"
	}
	return &Error{Code: code, Op: "Do", Msg: msg, Reason: d.Reason, Attempts: attempts, Err: err}
}

// admitWait waits d after an Admit that answered Wait. A policy with a
// bulkhead queue (real clock) waits on the queue in slices of at most
// 10ms, so that ctx is watched; a wait that returns at once had no queue
// ticket (a rate limiter's wait): *queue is then cleared and the next
// rounds sleep instead. Otherwise it sleeps d (or advances the FakeClock).
func (p *Policy) admitWait(ctx context.Context, c *Call, d time.Duration, queue *bool) error {
	if !*queue {
		return p.wait(ctx, d)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	step := d
	if step > 10*time.Millisecond {
		step = 10 * time.Millisecond
	}
	start := time.Now()
	if err := c.Wait(step); err != nil {
		return err
	}
	if time.Since(start) < step/2 {
		*queue = false // granted (the next Admit says go) or a limiter's wait
	}
	return ctx.Err()
}
