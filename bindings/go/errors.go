package mulligan

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Code is a mulligan status code (mulligan_status.h: MULLIGAN_OK = 0,
// MULLIGAN_E_*). Values are pinned by the C ABI.
type Code int

// The status codes of the C ABI (mulligan_status.h).
const (
	CodeOK               Code = 0
	CodeInvalidArgument  Code = 1
	CodeNoMemory         Code = 2
	CodeInternal         Code = 3
	CodeCallback         Code = 4
	CodeRetriesExhausted Code = 5
	CodeDeadlineExceeded Code = 6
	CodeCircuitOpen      Code = 7
	CodeUnavailable      Code = 8
	CodeTransport        Code = 9
	CodeTimeout          Code = 10
	// CodeBudgetExhausted: a retry budget refused a retry (Budget.TryRetry).
	// Do keeps the last failure's code with Reason StopBudget instead.
	CodeBudgetExhausted Code = 11
	// CodeThrottled: adaptive throttling rejected the call locally.
	CodeThrottled Code = 12
	// CodeBulkheadFull: a bulkhead refused the call (no slot, no room or
	// time to wait).
	CodeBulkheadFull Code = 13
	// CodeRateLimited: a rate limiter refused the call (the wait would pass
	// its max wait or the deadline); RetryIn says when a slot frees.
	CodeRateLimited Code = 14
	// CodeStateUnavailable: a state backend (Redis) could not be reached or
	// failed, and the operation failed closed. (0.5)
	CodeStateUnavailable Code = 15
	// CodeOutbox: the durable outbox refused an operation (a full or
	// read-only file, a lost lease); nothing was written. 16 is reserved
	// (hedging). (0.6)
	CodeOutbox Code = 17
)

var codeNames = map[Code]string{
	CodeOK: "ok", CodeInvalidArgument: "invalid argument", CodeNoMemory: "no memory",
	CodeInternal: "internal error", CodeCallback: "callback aborted",
	CodeRetriesExhausted: "retries exhausted", CodeDeadlineExceeded: "deadline exceeded",
	CodeCircuitOpen: "circuit open", CodeUnavailable: "unavailable",
	CodeTransport: "transport error", CodeTimeout: "timeout",
	CodeBudgetExhausted: "budget exhausted", CodeThrottled: "throttled",
	CodeBulkheadFull: "bulkhead full", CodeRateLimited: "rate limited",
	CodeStateUnavailable: "state backend unavailable", CodeOutbox: "outbox error",
}

// String names the code as mulligan_status_str() does ("circuit open").
func (c Code) String() string {
	if s, ok := codeNames[c]; ok {
		return s
	}
	return fmt.Sprintf("unknown status %d", int(c))
}

// Error is every error this package returns. Code is the C ABI's status;
// errors.Is(err, ErrCircuitOpen) and the other sentinels match on Code, and
// errors.As(err, &e) reaches it. When a retried call gives up, Err is the
// error the user's function returned last (errors.Is(err, userErr) works);
// when a context ended the call, errors.Is(err, context.Canceled) or
// context.DeadlineExceeded works as well.
//
// Error values are immutable once returned and safe to share.
type Error struct {
	// Code is the mulligan status code.
	Code Code
	// Op names the operation that failed ("NewPolicy: max attempts", "Do").
	Op string
	// Msg is the engine's text (mulligan_last_error()) or the binding's.
	Msg string
	// Reason is why a call stopped (StopNone when not a call's end).
	Reason StopReason
	// Attempts is the number of attempts the call made (0 if not a call).
	Attempts int
	// RetryIn is, for CodeCircuitOpen, the time until the breaker admits a
	// probe (the largest Duration when forced open); for CodeRateLimited,
	// the time until the limiter has a slot.
	RetryIn time.Duration
	// Err is the last error of the user's function, if any.
	Err error

	ctxErr   error // the context's error when a context ended the call
	sentinel bool
}

// Error formats the code, the operation, the engine's text, the attempts
// and stop reason, and the user's last error.
func (e *Error) Error() string {
	if e == nil {
		return "<nil>"
	}
	var b strings.Builder
	b.WriteString("mulligan: ")
	if e.Op != "" {
		b.WriteString(e.Op)
		b.WriteString(": ")
	}
	b.WriteString(e.Code.String())
	if e.Msg != "" {
		b.WriteString(": ")
		b.WriteString(e.Msg)
	}
	if e.Attempts > 0 {
		fmt.Fprintf(&b, " (after %d attempt", e.Attempts)
		if e.Attempts > 1 {
			b.WriteString("s")
		}
		if e.Reason != StopNone {
			b.WriteString(", ")
			b.WriteString(e.Reason.String())
		}
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Is reports whether target is the sentinel of e's Code (ErrCircuitOpen...),
// or matches the context's error when a context ended the call.
func (e *Error) Is(target error) bool {
	if e == nil {
		return false
	}
	if t, ok := target.(*Error); ok && t.sentinel && t.Code == e.Code {
		return true
	}
	return e.ctxErr != nil && errors.Is(e.ctxErr, target)
}

// Unwrap returns the user's last error (nil when there is none).
func (e *Error) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

func sentinel(c Code) *Error { return &Error{Code: c, sentinel: true} }

// Sentinel errors, one per C status code, for errors.Is. They match any
// *Error of the same Code.
var (
	ErrInvalidArgument  = sentinel(CodeInvalidArgument)
	ErrNoMemory         = sentinel(CodeNoMemory)
	ErrInternal         = sentinel(CodeInternal)
	ErrCallback         = sentinel(CodeCallback)
	ErrRetriesExhausted = sentinel(CodeRetriesExhausted)
	ErrDeadlineExceeded = sentinel(CodeDeadlineExceeded)
	ErrCircuitOpen      = sentinel(CodeCircuitOpen)
	ErrUnavailable      = sentinel(CodeUnavailable)
	ErrTransport        = sentinel(CodeTransport)
	ErrTimeout          = sentinel(CodeTimeout)
	// ErrBudgetExhausted matches Budget.TryRetry's refusal. A refusal inside
	// Do keeps the last failure instead (Reason StopBudget).
	ErrBudgetExhausted = sentinel(CodeBudgetExhausted)
	// ErrThrottled: adaptive throttling rejected the call; never retried.
	ErrThrottled = sentinel(CodeThrottled)
	// ErrBulkheadFull: a bulkhead refused the call; never retried.
	ErrBulkheadFull = sentinel(CodeBulkheadFull)
	// ErrRateLimited: a rate limiter refused the call (RetryIn); never retried.
	ErrRateLimited = sentinel(CodeRateLimited)
)

func invalid(op, msg string) error { return &Error{Code: CodeInvalidArgument, Op: op, Msg: msg} }

// permanent marks an error as terminal.
type permanent struct{ err error }

func (p *permanent) Error() string { return p.err.Error() }
func (p *permanent) Unwrap() error { return p.err }

// Permanent wraps err so that Do does not retry it: the attempt's outcome is
// terminal (MULLIGAN_ERROR_TERMINAL) and the call stops with CodeUnavailable,
// reason StopTerminal. errors.Is/As see through the wrapper. Permanent(nil)
// is nil.
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &permanent{err}
}

// retryAfter carries a server's Retry-After hint.
type retryAfter struct {
	err error
	d   time.Duration
}

func (r *retryAfter) Error() string { return r.err.Error() }
func (r *retryAfter) Unwrap() error { return r.err }

// RetryAfter wraps a retryable err with a Retry-After hint d (from
// ParseRetryAfter, or a server's own field). The engine decides what it
// means: the hint replaces the backoff delay, and one longer than the
// policy's RetryAfterMax (or crossing its deadline) stops the retries
// (DESIGN.md section 5). RetryAfter(nil, d) is nil.
func RetryAfter(err error, d time.Duration) error {
	if err == nil {
		return nil
	}
	return &retryAfter{err, d}
}

// HTTPStatusError is an error an attempt may return to report an HTTP
// status: the engine classifies it (408, 429, 500, 502, 503, 504 retryable
// by default; other codes >= 400 terminal), and RetryAfter (when >= 0) is
// the response's Retry-After hint.
type HTTPStatusError struct {
	// Status is the HTTP status code, in [100, 599].
	Status int
	// RetryAfter is the parsed Retry-After hint, or negative for none.
	RetryAfter time.Duration
}

// Error says "HTTP status N".
func (h *HTTPStatusError) Error() string { return fmt.Sprintf("HTTP status %d", h.Status) }

// ErrorKindOf is implemented by errors that name their mulligan error kind
// (a transport error: ErrorConnectionRefused...); the engine classifies it.
type ErrorKindOf interface {
	error
	MulliganErrorKind() ErrorKind
}

// outcomeOf maps an attempt's error to the C outcome, the classification
// being the engine's: a Permanent error is terminal, an HTTPStatusError
// carries its status, an ErrorKindOf its kind, a RetryAfter its hint, and
// every other error is retryable unless the policy's RetryIf says no.
func outcomeOf(err error, retryIf func(error) bool) Outcome {
	o := Outcome{Kind: ErrorRetryable, RetryAfter: -1, RequestSent: -1}
	classified := false
	// Walks the chain by hand (errors.As costs reflection on every failure).
	for e := err; e != nil; {
		switch x := e.(type) {
		case *retryAfter:
			if o.RetryAfter < 0 {
				o.RetryAfter = x.d
			}
		case *permanent:
			if !classified {
				o.Kind, classified = ErrorTerminal, true
			}
		case *HTTPStatusError:
			if !classified {
				o.Kind, o.HTTPStatus, classified = ErrorNone, x.Status, true
				if o.RetryAfter < 0 {
					o.RetryAfter = x.RetryAfter
				}
			}
		case ErrorKindOf:
			if !classified {
				o.Kind, classified = x.MulliganErrorKind(), true
			}
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	if !classified && retryIf != nil && !retryIf(err) {
		o.Kind = ErrorTerminal
	}
	return o
}
