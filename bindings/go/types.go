package mulligan

/*
#include <mulligan.h>
*/
import "C"

import "time"

// ErrorKind is the kind of failure an attempt ended with
// (mulligan_error_kind; values pinned by the C ABI).
type ErrorKind int

// Error kinds (mulligan_retry.h).
const (
	ErrorNone              ErrorKind = 0
	ErrorConnectionRefused ErrorKind = 1
	ErrorConnectionReset   ErrorKind = 2
	ErrorDNSFailure        ErrorKind = 3
	ErrorConnectTimeout    ErrorKind = 4
	ErrorTimeout           ErrorKind = 5
	ErrorTLS               ErrorKind = 6
	ErrorInvalidURL        ErrorKind = 7
	ErrorTransport         ErrorKind = 8
	ErrorRetryable         ErrorKind = 9
	ErrorTerminal          ErrorKind = 10
	ErrorTruncated         ErrorKind = 11
)

// String is the engine's snake_case name ("connection_refused").
func (k ErrorKind) String() string { return C.GoString(C.mulligan_error_kind_str(C.int(k))) }

// StopReason says why a call stopped (mulligan_stop_reason; pinned values).
type StopReason int

// Stop reasons (mulligan_retry.h).
const (
	StopNone              StopReason = 0
	StopSucceeded         StopReason = 1
	StopTerminal          StopReason = 2
	StopAttemptsExhausted StopReason = 3
	StopDeadline          StopReason = 4
	StopRetryAfterTooLong StopReason = 5
	StopNotReplaySafe     StopReason = 6
	StopCircuitOpen       StopReason = 7
	// StopBudget: a retry budget refused the retry; the last failure is kept.
	StopBudget StopReason = 8
	// StopThrottled: adaptive throttling rejected an attempt (ErrThrottled).
	StopThrottled StopReason = 9
	// StopBulkheadFull: a bulkhead refused the call (ErrBulkheadFull).
	StopBulkheadFull StopReason = 10
	// StopRateLimited: a rate limiter refused the call (ErrRateLimited).
	StopRateLimited   StopReason = 11
	StopStopCondition StopReason = 12
)

// String is the engine's snake_case name ("attempts_exhausted").
func (r StopReason) String() string { return C.GoString(C.mulligan_stop_reason_str(C.int(r))) }

// Backoff is a backoff strategy (mulligan_backoff_kind). With n the retries
// already made: constant base; linear base*(n+1); exponential
// base*multiplier^n; decorrelated uniform(base, 3*previous).
type Backoff int

// Backoff strategies.
const (
	BackoffConstant     Backoff = 0
	BackoffLinear       Backoff = 1
	BackoffExponential  Backoff = 2
	BackoffDecorrelated Backoff = 3
)

// Jitter is the randomness applied to a delay (mulligan_jitter_kind).
type Jitter int

// Jitter kinds: none d; full uniform(0,d); equal d/2+uniform(0,d/2);
// proportional min(d, max/(1+f))*uniform(1-f,1+f).
const (
	JitterNone         Jitter = 0
	JitterFull         Jitter = 1
	JitterEqual        Jitter = 2
	JitterProportional Jitter = 3
)

// Classification is the policy's verdict on one outcome.
type Classification int

// Classifications (mulligan_classification).
const (
	ClassSuccess   Classification = 0
	ClassRetryable Classification = 1
	ClassTerminal  Classification = 2
)

// Outcome is what one attempt produced, for Call.Record (mulligan_outcome).
// The zero value is not a valid outcome: start from SuccessOutcome() or set
// RetryAfter and RequestSent to -1 for "none"/"derive".
type Outcome struct {
	// Kind is the failure kind; ErrorNone for a result or an HTTP response.
	Kind ErrorKind
	// HTTPStatus is the response status in [100, 599], or 0 for none.
	HTTPStatus int
	// RetryAfter is a Retry-After hint; negative for none.
	RetryAfter time.Duration
	// RequestSent is 1 if any byte of the request was sent, 0 if not, -1 to
	// derive it from Kind.
	RequestSent int
}

// SuccessOutcome is a plain success: no error, no status, no hint.
func SuccessOutcome() Outcome { return Outcome{RetryAfter: -1, RequestSent: -1} }

// Decision is the engine's answer to an outcome (mulligan_decision).
type Decision struct {
	// Retry is true when the caller should wait Delay and run another attempt.
	Retry bool
	// Delay is the wait before the next attempt; 0 when stopping.
	Delay time.Duration
	// Reason says why the call stopped (StopNone when retrying).
	Reason StopReason
	// Classification is the verdict on the outcome that led here.
	Classification Classification
	// Attempt is the attempt this decision answers (1 for the first).
	Attempt int
	// FromRetryAfter is true when Delay came from a Retry-After hint.
	FromRetryAfter bool
}

// Admission is the pipeline's answer before an attempt (mulligan_admission).
type Admission struct {
	// Attempt is the attempt admitted (1 for the first).
	Attempt int
	// Timeout bounds the attempt (the policy's attempt timeout trimmed to the
	// deadline); negative when none applies.
	Timeout time.Duration
	// Wait, when > 0, says: wait this long, then Admit again: a rate
	// limiter's exact wait, or the longest a bulkhead's queued call may wait
	// (Call.Wait blocks until the queue hands over the slot).
	Wait time.Duration
}
