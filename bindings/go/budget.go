package mulligan

/*
#include <stdlib.h>
#include <mulligan.h>

static mulligan_budget_options go_budget_defaults(void) {
  mulligan_budget_options o = MULLIGAN_BUDGET_OPTIONS_INIT;
  return o;
}
static mulligan_outcome go_outcome(int kind, int status, double ra, int sent) {
  mulligan_outcome o = MULLIGAN_OUTCOME_INIT;
  o.error_kind = kind;
  o.http_status = status;
  o.retry_after_ms = ra;
  o.request_sent = sent;
  return o;
}
static mulligan_throttle_options go_throttle_defaults(void) {
  mulligan_throttle_options o = MULLIGAN_THROTTLE_OPTIONS_INIT;
  return o;
}
*/
import "C"

import (
	"runtime"
	"sync/atomic"
	"time"
)

// BudgetKind chooses a retry budget's arithmetic (mulligan_budget_kind).
type BudgetKind int

// Budget kinds (mulligan_budget.h; pinned values).
const (
	// BudgetTokenBucket is gRPC A6 retryThrottling: a failure takes 1 token,
	// a success adds TokenRatio, retries only while tokens > MaxTokens/2.
	BudgetTokenBucket BudgetKind = 0
	// BudgetQuota is the AWS SDKs' 2020 standard-mode retry quota.
	BudgetQuota BudgetKind = 1
	// BudgetRatio is Finagle's RetryBudget (Envoy's retry_budget).
	BudgetRatio BudgetKind = 2
)

// BudgetFailure says what a failed attempt was, for the quota's costs.
type BudgetFailure int

// Failure kinds (mulligan_budget_failure).
const (
	FailureOther      BudgetFailure = 0
	FailureTimeout    BudgetFailure = 1
	FailureThrottling BudgetFailure = 2
)

// BudgetOptions are a retry budget's options (mulligan_budget_options).
// Start from DefaultBudgetOptions(): a zero value is invalid (MaxTokens 0).
type BudgetOptions struct {
	// Name reports the budget; with Shared, the process-wide name.
	Name string
	// Shared returns the process-wide budget named Name (made with these
	// options on first use; later options are ignored).
	Shared bool
	Kind   BudgetKind
	// Token bucket (A6): 0 < MaxTokens <= 1000 (default 100); TokenRatio > 0
	// (default 0.5).
	MaxTokens, TokenRatio float64
	// Quota (AWS 2020): Capacity > 0 (500); costs >= 0: retry 5, after a
	// timeout 10, after a throttling answer 5; refund of a call with no
	// retry 1.
	Capacity, RetryCost, TimeoutCost, ThrottlingCost, NoRetryIncrement int64
	// Ratio (Finagle): TTL in [1s, 60s] (10s); Percent in [0, 1] (0.2);
	// MinRetriesPerSecond >= 0 (10).
	TTL                 time.Duration
	Percent             float64
	MinRetriesPerSecond float64
	// Clock dates the budget's creation; nil: the system steady clock.
	Clock *FakeClock
}

// DefaultBudgetOptions returns the C ABI's defaults: an A6 token bucket of
// 100 tokens, ratio 0.5 (and each other kind's defaults).
func DefaultBudgetOptions() BudgetOptions {
	d := C.go_budget_defaults()
	return BudgetOptions{Kind: BudgetKind(d.kind), MaxTokens: float64(d.max_tokens),
		TokenRatio: float64(d.token_ratio), Capacity: int64(d.capacity), RetryCost: int64(d.retry_cost),
		TimeoutCost: int64(d.timeout_cost), ThrottlingCost: int64(d.throttling_cost),
		NoRetryIncrement: int64(d.no_retry_increment), TTL: durOf(d.ttl_ms), Percent: float64(d.percent),
		MinRetriesPerSecond: float64(d.min_retries_per_second)}
}

// RetryBudget is a retry budget (mulligan_budget). Safe for concurrent use
// (the C header's promise). Policies using it (WithBudget) keep it alive;
// Close makes this value unusable (ErrInvalidArgument) and the handle is
// freed once nothing references it. Times ("at") are readings of the
// budget's clock: FakeClock.Now(), or SteadyNow() for the system clock.
type RetryBudget struct {
	ptr    *C.mulligan_budget
	closed atomic.Bool
}

// NewRetryBudget validates o and creates (or, with Shared, finds) a budget.
// A bad field gives ErrInvalidArgument naming it ("token_ratio").
func NewRetryBudget(o BudgetOptions) (*RetryBudget, error) {
	defer lockThread()()
	c := C.go_budget_defaults()
	c.kind = C.int(o.Kind)
	c.max_tokens, c.token_ratio = C.double(o.MaxTokens), C.double(o.TokenRatio)
	c.capacity, c.retry_cost = C.int64_t(o.Capacity), C.int64_t(o.RetryCost)
	c.timeout_cost, c.throttling_cost = C.int64_t(o.TimeoutCost), C.int64_t(o.ThrottlingCost)
	c.no_retry_increment = C.int64_t(o.NoRetryIncrement)
	c.ttl_ms, c.percent = msOf(o.TTL), C.double(o.Percent)
	c.min_retries_per_second = C.double(o.MinRetriesPerSecond)
	name, free := cstr(o.Name)
	defer free()
	var ptr *C.mulligan_budget
	var rc C.int
	if o.Shared {
		rc = C.mulligan_budget_shared(&ptr, name, &c, o.Clock.raw())
	} else {
		rc = C.mulligan_budget_create(&ptr, name, &c, o.Clock.raw())
	}
	runtime.KeepAlive(o.Clock)
	if err := cerr("NewRetryBudget", rc); err != nil {
		return nil, err
	}
	b := &RetryBudget{ptr: ptr}
	runtime.SetFinalizer(b, func(b *RetryBudget) { C.mulligan_budget_destroy(b.ptr) })
	return b, nil
}

func (b *RetryBudget) raw(op string) (*C.mulligan_budget, error) {
	if b == nil || b.ptr == nil || b.closed.Load() {
		return nil, invalid("RetryBudget."+op, "nil or closed budget")
	}
	return b.ptr, nil
}

func (b *RetryBudget) step(op string, f func(*C.mulligan_budget) C.int) error {
	p, err := b.raw(op)
	if err != nil {
		return err
	}
	defer lockThread()()
	rc := f(p)
	runtime.KeepAlive(b)
	return cerr("RetryBudget."+op, rc)
}

// Close makes b unusable; policies using the budget keep it. Nil-safe.
func (b *RetryBudget) Close() error {
	if b != nil {
		b.closed.Store(true)
	}
	return nil
}

// OnCallStarted counts a logical call begun at `at` (a ratio budget's deposit).
func (b *RetryBudget) OnCallStarted(at time.Duration) error {
	return b.step("OnCallStarted", func(p *C.mulligan_budget) C.int {
		return C.mulligan_budget_on_call_started(p, msOf(at))
	})
}

// AddSuccesses counts n calls that succeeded without a retry (lazily).
func (b *RetryBudget) AddSuccesses(n uint64) error {
	return b.step("AddSuccesses", func(p *C.mulligan_budget) C.int {
		return C.mulligan_budget_add_successes(p, C.uint64_t(n))
	})
}

// OnRetriedSuccess counts a call that succeeded after its last retry took
// cost (>= 0): the quota refunds it, a token bucket adds TokenRatio.
func (b *RetryBudget) OnRetriedSuccess(cost int64) error {
	return b.step("OnRetriedSuccess", func(p *C.mulligan_budget) C.int {
		return C.mulligan_budget_on_retried_success(p, C.int64_t(cost))
	})
}

// OnFailure counts a retryable failure of kind at `at` (a token bucket
// takes a token).
func (b *RetryBudget) OnFailure(kind BudgetFailure, at time.Duration) error {
	return b.step("OnFailure", func(p *C.mulligan_budget) C.int {
		return C.mulligan_budget_on_failure(p, C.int(kind), msOf(at))
	})
}

// TryRetry asks for one retry after a failure of kind at `at`: the cost
// taken, or -1 and ErrBudgetExhausted when refused.
func (b *RetryBudget) TryRetry(kind BudgetFailure, at time.Duration) (int64, error) {
	var cost C.int64_t = -1
	err := b.step("TryRetry", func(p *C.mulligan_budget) C.int {
		return C.mulligan_budget_try_retry(p, C.int(kind), msOf(at), &cost)
	})
	return int64(cost), err
}

// Tokens returns the room left at `at` in the kind's unit (tokens, quota
// capacity, or the retries a ratio budget allows now): the tokens gauge.
func (b *RetryBudget) Tokens(at time.Duration) (float64, error) {
	var out C.double
	err := b.step("Tokens", func(p *C.mulligan_budget) C.int {
		return C.mulligan_budget_tokens(p, msOf(at), &out)
	})
	return float64(out), err
}

// Refused returns the retries refused so far (0 for nil or closed).
func (b *RetryBudget) Refused() uint64 {
	p, err := b.raw("Refused")
	if err != nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return uint64(C.mulligan_budget_refused(p))
}

// Allowed returns the retries allowed so far (0 for nil or closed).
func (b *RetryBudget) Allowed() uint64 {
	p, err := b.raw("Allowed")
	if err != nil {
		return 0
	}
	defer runtime.KeepAlive(b)
	return uint64(C.mulligan_budget_allowed(p))
}

// ThrottleOptions are an adaptive throttle's options (SRE book ch. 21).
// Start from DefaultThrottleOptions().
type ThrottleOptions struct {
	Name   string
	Shared bool
	// Window over which requests and accepts are counted (>= 1ms; 2 min).
	Window time.Duration
	// K is the SRE multiplier (>= 1; 2).
	K float64
	// Seed, when not nil, makes the rejection draws deterministic.
	Seed *uint64
}

// DefaultThrottleOptions: a 2-minute window, K = 2, a random seed.
func DefaultThrottleOptions() ThrottleOptions {
	d := C.go_throttle_defaults()
	return ThrottleOptions{Window: durOf(d.window_ms), K: float64(d.k)}
}

// Throttle is client-side adaptive throttling (mulligan_throttle): a new
// request is rejected with probability max(0, (requests - K*accepts) /
// (requests + 1)) over the window. Safe for concurrent use. Close and
// times ("at") as RetryBudget's.
type Throttle struct {
	ptr    *C.mulligan_throttle
	closed atomic.Bool
}

// NewThrottle validates o and creates (or, with Shared, finds) a throttle.
func NewThrottle(o ThrottleOptions) (*Throttle, error) {
	defer lockThread()()
	c := C.go_throttle_defaults()
	c.window_ms, c.k = msOf(o.Window), C.double(o.K)
	if o.Seed != nil {
		c.has_seed, c.seed = 1, C.uint64_t(*o.Seed)
	}
	name, free := cstr(o.Name)
	defer free()
	var ptr *C.mulligan_throttle
	var rc C.int
	if o.Shared {
		rc = C.mulligan_throttle_shared(&ptr, name, &c)
	} else {
		rc = C.mulligan_throttle_create(&ptr, name, &c)
	}
	if err := cerr("NewThrottle", rc); err != nil {
		return nil, err
	}
	t := &Throttle{ptr: ptr}
	runtime.SetFinalizer(t, func(t *Throttle) { C.mulligan_throttle_destroy(t.ptr) })
	return t, nil
}

func (t *Throttle) step(op string, f func(*C.mulligan_throttle) C.int) error {
	if t == nil || t.ptr == nil || t.closed.Load() {
		return invalid("Throttle."+op, "nil or closed throttle")
	}
	defer lockThread()()
	rc := f(t.ptr)
	runtime.KeepAlive(t)
	return cerr("Throttle."+op, rc)
}

// Close makes t unusable; policies using the throttle keep it. Nil-safe.
func (t *Throttle) Close() error {
	if t != nil {
		t.closed.Store(true)
	}
	return nil
}

// Admit counts one request at `at`: nil to send it, ErrThrottled when it
// is rejected locally.
func (t *Throttle) Admit(at time.Duration) error {
	return t.step("Admit", func(p *C.mulligan_throttle) C.int { return C.mulligan_throttle_admit(p, msOf(at)) })
}

// Record counts the admitted request's outcome: an accept unless it was
// an overload answer (HTTP 429/503, a refused connection).
func (t *Throttle) Record(o Outcome) error {
	return t.step("Record", func(p *C.mulligan_throttle) C.int {
		ra := C.double(-1)
		if o.RetryAfter >= 0 {
			ra = msOf(o.RetryAfter)
		}
		c := C.go_outcome(C.int(o.Kind), C.int(o.HTTPStatus), ra, C.int(o.RequestSent))
		return C.mulligan_throttle_record(p, &c)
	})
}

// Probability returns the rejection probability at `at`.
func (t *Throttle) Probability(at time.Duration) (float64, error) {
	var out C.double
	err := t.step("Probability", func(p *C.mulligan_throttle) C.int {
		return C.mulligan_throttle_probability(p, msOf(at), &out)
	})
	return float64(out), err
}

// Counts returns the requests and accepts in the window at `at`.
func (t *Throttle) Counts(at time.Duration) (requests, accepts int64, err error) {
	var r, a C.int64_t
	err = t.step("Counts", func(p *C.mulligan_throttle) C.int {
		return C.mulligan_throttle_counts(p, msOf(at), &r, &a)
	})
	return int64(r), int64(a), err
}

// Rejected returns the requests rejected so far (0 for nil or closed).
func (t *Throttle) Rejected() uint64 {
	if t == nil || t.ptr == nil || t.closed.Load() {
		return 0
	}
	defer runtime.KeepAlive(t)
	return uint64(C.mulligan_throttle_rejected(t.ptr))
}

// SteadyNow reads the system steady clock the way the engine does: the
// `at` of budgets, throttles and limiters that use no FakeClock.
func SteadyNow() time.Duration { return durOf(C.mulligan_clock_now_ms(nil)) }
