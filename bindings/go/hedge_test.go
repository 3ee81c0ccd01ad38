package mulligan_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

// Hedge on the fake clock: Hedge never advances it, so copies start at the
// exact fake times the test advances to. Every wait for a copy's goroutine
// is a bounded wait for the effect itself (a channel), never a sleep.

const effectTimeout = 30 * time.Second // generous: the CI machine may be loaded

var names sync.Map // base name -> the unique metrics name of this run

// unique gives each run of a test (go test -count N) its own metrics name,
// as the metrics registry is process-wide; metricsOf reads it back.
func unique(base string) string {
	n := fmt.Sprintf("%s_%d", base, nameSeq.Add(1))
	names.Store(base, n)
	return n
}

var nameSeq atomic.Int64

func metricsOf(t *testing.T, base string) mulligan.MetricsSnapshot {
	t.Helper()
	n, _ := names.Load(base)
	m, err := mulligan.Metrics(n.(string))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func hedging(t *testing.T, o mulligan.HedgingOptions) *mulligan.HedgingPolicy {
	t.Helper()
	h, err := mulligan.NewHedgingPolicy(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(h.Close)
	return h
}

func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(effectTimeout):
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

func TestHedgeStartTimesAndLoserCancelled(t *testing.T) {
	p, clk := fakePolicy(t, mulligan.WithName(unique("go_hedge_times")))
	h := hedging(t, mulligan.HedgingOptions{MaxAttempts: 3, Delay: 50 * time.Millisecond})
	t0 := clk.Now()
	var starts [3]atomic.Int64
	started1 := make(chan struct{}, 1)
	loser := make(chan error, 1)
	type result struct {
		v   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		v, err := mulligan.HedgeValue(context.Background(), p, h, func(ctx context.Context, copy int) (int, error) {
			starts[copy-1].Store(int64(clk.Now() - t0))
			if copy == 1 { // a slow replica: runs until cancelled
				started1 <- struct{}{}
				<-ctx.Done()
				loser <- ctx.Err()
				return 0, ctx.Err()
			}
			return copy * 10, nil
		})
		done <- result{v, err}
	}()
	await(t, started1, "copy 1")
	// 20 ms: too early for copy 2; 50 ms: copy 2 starts (and wins at once).
	if err := clk.Advance(20 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if err := clk.Advance(30 * time.Millisecond); err != nil {
		t.Fatal(err)
	}
	r := await(t, done, "Hedge")
	if r.err != nil || r.v != 20 {
		t.Fatalf("HedgeValue = %d, %v; want copy 2's 20", r.v, r.err)
	}
	if got := await(t, loser, "copy 1's cancel"); !errors.Is(got, context.Canceled) {
		t.Fatalf("copy 1's context ended with %v", got)
	}
	if starts[0].Load() != 0 || time.Duration(starts[1].Load()) != 50*time.Millisecond || starts[2].Load() != 0 {
		t.Fatalf("copies started at %v, %v, %v (copy 3 never)", time.Duration(starts[0].Load()),
			time.Duration(starts[1].Load()), time.Duration(starts[2].Load()))
	}
	m := metricsOf(t, "go_hedge_times")
	if m.Calls != 1 || m.Attempts != 2 || m.Successes != 1 || m.Failures != 0 || m.Cancelled != 0 ||
		m.Hedges != 1 || m.HedgesWon != 1 || m.HedgeCancelled != 1 || m.InFlight != 0 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestHedgeRetryableFailureStartsTheNextCopyAtOnce(t *testing.T) {
	p, clk := fakePolicy(t, mulligan.WithName(unique("go_hedge_retryable")))
	h := hedging(t, mulligan.HedgingOptions{MaxAttempts: 3, Delay: time.Second})
	t0 := clk.Now()
	var runs atomic.Int32
	err := mulligan.Hedge(context.Background(), p, h, func(ctx context.Context, copy int) error {
		runs.Add(1)
		if clk.Now() != t0 {
			t.Errorf("copy %d started at %v, want 0 (no 1 s wait after a failure)", copy, clk.Now()-t0)
		}
		if copy < 3 {
			return errBoom // retryable: the next copy starts at once
		}
		return nil
	})
	if err != nil || runs.Load() != 3 {
		t.Fatalf("err %v after %d copies", err, runs.Load())
	}
	m := metricsOf(t, "go_hedge_retryable")
	if m.Calls != 1 || m.Attempts != 3 || m.Successes != 1 || m.Failures != 0 || m.Hedges != 2 ||
		m.HedgesWon != 1 || m.HedgeCancelled != 0 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestHedgeNeverMoreThanFiveCopies(t *testing.T) {
	p, _ := fakePolicy(t, mulligan.WithName(unique("go_hedge_cap")))
	h := hedging(t, mulligan.HedgingOptions{MaxAttempts: 7}) // A6: treated as 5
	var runs atomic.Int32
	err := mulligan.Hedge(context.Background(), p, h, func(context.Context, int) error {
		runs.Add(1)
		return errBoom
	})
	var me *mulligan.Error
	if !errors.As(err, &me) || me.Code != mulligan.CodeRetriesExhausted ||
		me.Reason != mulligan.StopAttemptsExhausted || me.Attempts != 5 || !errors.Is(err, errBoom) {
		t.Fatalf("got %v", err)
	}
	if runs.Load() != 5 {
		t.Fatalf("%d copies ran, want 5", runs.Load())
	}
	m := metricsOf(t, "go_hedge_cap")
	if m.Calls != 1 || m.Attempts != 5 || m.Failures != 1 || m.Hedges != 4 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestHedgeOpenBreakerStopsNewCopies(t *testing.T) {
	clk, _ := mulligan.NewFakeClock()
	b, err := mulligan.NewCircuitBreaker(mulligan.BreakerName("go_hedge_breaker"), mulligan.FailureThreshold(1),
		mulligan.ResetTimeout(10*time.Second), mulligan.BreakerClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := mulligan.NewPolicy(mulligan.WithClock(clk), mulligan.WithBreaker(b), mulligan.WithName(unique("go_hedge_breaker")))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := hedging(t, mulligan.HedgingOptions{MaxAttempts: 3, Delay: 50 * time.Millisecond})
	var runs atomic.Int32
	// Copy 1 fails: the breaker (threshold 1) opens, and refuses copy 2.
	err = mulligan.Hedge(context.Background(), p, h, func(context.Context, int) error {
		runs.Add(1)
		return errBoom
	})
	var me *mulligan.Error
	if !errors.As(err, &me) || me.Code != mulligan.CodeCircuitOpen || me.Reason != mulligan.StopCircuitOpen ||
		me.RetryIn != 10*time.Second || me.Attempts != 1 || !errors.Is(err, errBoom) {
		t.Fatalf("got %#v", err)
	}
	if runs.Load() != 1 {
		t.Fatalf("%d copies ran, want 1", runs.Load())
	}
	// A new call's first copy is refused: nothing runs.
	err = mulligan.Hedge(context.Background(), p, h, func(context.Context, int) error {
		runs.Add(1)
		return nil
	})
	if !errors.Is(err, mulligan.ErrCircuitOpen) || !errors.As(err, &me) || me.RetryIn != 10*time.Second ||
		!strings.Contains(me.Msg, "circuit breaker 'go_hedge_breaker' is open") || runs.Load() != 1 {
		t.Fatalf("got %v after %d copies", err, runs.Load())
	}
}

func TestHedgeEmptyBudgetStopsNewCopies(t *testing.T) {
	o := mulligan.DefaultBudgetOptions()
	o.MaxTokens, o.TokenRatio = 2, 0.5
	budget, err := mulligan.NewRetryBudget(o)
	if err != nil {
		t.Fatal(err)
	}
	defer budget.Close()
	// A6: a retry needs tokens > 2 / 2; one failure leaves 1.
	if err := budget.OnFailure(mulligan.FailureOther, 0); err != nil {
		t.Fatal(err)
	}
	p, _ := fakePolicy(t, mulligan.WithBudget(budget), mulligan.WithName(unique("go_hedge_budget")))
	h := hedging(t, mulligan.HedgingOptions{MaxAttempts: 3}) // delay 0: copy 2 asked at once
	var runs atomic.Int32
	err = mulligan.Hedge(context.Background(), p, h, func(context.Context, int) error {
		runs.Add(1)
		return nil
	})
	if err != nil || runs.Load() != 1 || budget.Refused() != 1 {
		t.Fatalf("err %v, %d copies, %d refused", err, runs.Load(), budget.Refused())
	}
	if m := metricsOf(t, "go_hedge_budget"); m.Hedges != 0 || m.Successes != 1 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestHedgeContextCancelIsNotAFailure(t *testing.T) {
	clk, _ := mulligan.NewFakeClock()
	b, err := mulligan.NewCircuitBreaker(mulligan.BreakerName("go_hedge_cancel"), mulligan.FailureThreshold(1),
		mulligan.BreakerClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := mulligan.NewPolicy(mulligan.WithClock(clk), mulligan.WithBreaker(b), mulligan.WithName(unique("go_hedge_cancel")))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := hedging(t, mulligan.HedgingOptions{MaxAttempts: 2})
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan int, 2)
	ended := make(chan error, 2)
	done := make(chan error, 1)
	go func() {
		done <- mulligan.Hedge(ctx, p, h, func(c context.Context, copy int) error {
			started <- copy
			<-c.Done()
			ended <- c.Err()
			return c.Err()
		})
	}()
	await(t, started, "a first copy")
	await(t, started, "a second copy")
	cancel()
	err = await(t, done, "Hedge")
	if !errors.Is(err, context.Canceled) || !errors.Is(err, mulligan.ErrCallback) {
		t.Fatalf("got %v", err)
	}
	for i := 0; i < 2; i++ {
		if e := await(t, ended, "a copy's cancel"); !errors.Is(e, context.Canceled) {
			t.Fatalf("a copy's context ended with %v", e)
		}
	}
	if b.State() != mulligan.StateClosed {
		t.Fatalf("state %v", b.State())
	}
	m := metricsOf(t, "go_hedge_cancel")
	if m.Calls != 1 || m.Attempts != 2 || m.Successes != 0 || m.Failures != 0 || m.Cancelled != 1 ||
		m.Hedges != 1 || m.HedgeCancelled != 2 || m.InFlight != 0 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestHedgeTerminalFailureCancelsTheOtherCopy(t *testing.T) {
	p, _ := fakePolicy(t, mulligan.WithName(unique("go_hedge_terminal")))
	h := hedging(t, mulligan.HedgingOptions{MaxAttempts: 2})
	started1 := make(chan struct{})
	loser := make(chan error, 1)
	err := mulligan.Hedge(context.Background(), p, h, func(ctx context.Context, copy int) error {
		if copy == 1 {
			close(started1)
			<-ctx.Done()
			loser <- ctx.Err()
			return ctx.Err()
		}
		<-started1
		return mulligan.Permanent(errBoom) // A6 fatal: ends the call
	})
	var me *mulligan.Error
	if !errors.As(err, &me) || me.Code != mulligan.CodeUnavailable || me.Reason != mulligan.StopTerminal ||
		!errors.Is(err, errBoom) {
		t.Fatalf("got %v", err)
	}
	if e := await(t, loser, "copy 1's cancel"); !errors.Is(e, context.Canceled) {
		t.Fatalf("copy 1's context ended with %v", e)
	}
	m := metricsOf(t, "go_hedge_terminal")
	if m.Calls != 1 || m.Failures != 1 || m.HedgeCancelled != 1 || m.Cancelled != 0 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestHedgeCopyPanicReachesTheCaller(t *testing.T) {
	p, _ := fakePolicy(t, mulligan.WithName(unique("go_hedge_panic")))
	h := hedging(t, mulligan.HedgingOptions{MaxAttempts: 2, Delay: time.Second})
	defer func() {
		if v := recover(); v != "copy 1 broke" {
			t.Fatalf("recovered %v", v)
		}
		if m := metricsOf(t, "go_hedge_panic"); m.Calls != 1 || m.Failures != 1 || m.InFlight != 0 {
			t.Fatalf("metrics %+v", m)
		}
	}()
	_ = mulligan.Hedge(context.Background(), p, h, func(context.Context, int) error { panic("copy 1 broke") })
	t.Fatal("Hedge returned")
}

func TestHedgeRealClockStartsTheHedgeAfterItsTimer(t *testing.T) {
	p, err := mulligan.NewPolicy(mulligan.WithName(unique("go_hedge_real")))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	h := hedging(t, mulligan.HedgingOptions{MaxAttempts: 2, Delay: time.Millisecond})
	v, err := mulligan.HedgeValue(context.Background(), p, h, func(ctx context.Context, copy int) (int, error) {
		if copy == 1 {
			<-ctx.Done() // only copy 2, started by the timer, can end the call
			return 0, ctx.Err()
		}
		return 2, nil
	})
	if err != nil || v != 2 {
		t.Fatalf("got %d, %v", v, err)
	}
}

// A count above what a C int holds is a count above 5 (A6): 5 copies, where
// the conversion used to wrap 1<<32+3 to 3 (found by a fresh user); a delay
// of math.MaxInt64 starts no second copy, where the engine's start time used
// to overflow into the past and start every copy at once.
func TestHedgeHugeCountsAndDelays(t *testing.T) {
	p, _ := fakePolicy(t, mulligan.WithName(unique("go_hedge_huge")))
	h := hedging(t, mulligan.HedgingOptions{MaxAttempts: 1<<32 + 3})
	var runs atomic.Int32
	err := mulligan.Hedge(context.Background(), p, h, func(context.Context, int) error {
		runs.Add(1)
		return errBoom
	})
	var me *mulligan.Error
	if !errors.As(err, &me) || me.Attempts != 5 || runs.Load() != 5 {
		t.Fatalf("got %v after %d copies, want 5", err, runs.Load())
	}
	p2, _ := fakePolicy(t, mulligan.WithName(unique("go_hedge_never")))
	never := hedging(t, mulligan.HedgingOptions{MaxAttempts: 3, Delay: math.MaxInt64})
	if err := mulligan.Hedge(context.Background(), p2, never, func(context.Context, int) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if m := metricsOf(t, "go_hedge_never"); m.Attempts != 1 || m.Hedges != 0 || m.Successes != 1 {
		t.Fatalf("metrics %+v, want 1 attempt and no hedge", m)
	}
	c, err := mulligan.NewHTTPClient(mulligan.HTTPHedge(1<<32+3, time.Millisecond))
	if err != nil {
		t.Fatalf("HTTPHedge(1<<32+3): %v, want the cap of 5", err)
	}
	_ = c.Close()
	_, err = mulligan.NewHTTPClient(mulligan.HTTPHedgeQuantile(0.95, 1<<33, 20))
	if !errors.Is(err, mulligan.ErrInvalidArgument) || !strings.Contains(err.Error(), "quantile_window must fit a C int, got 8589934592") {
		t.Fatalf("HTTPHedgeQuantile(window 1<<33) = %v", err)
	}
}

func TestHedgingOptionsAreValidated(t *testing.T) {
	for _, c := range []struct {
		o    mulligan.HedgingOptions
		want string
	}{
		{mulligan.HedgingOptions{MaxAttempts: 1}, "hedging: max_attempts must be >= 2 (gRPC A6), got 1"},
		{mulligan.HedgingOptions{Delay: -time.Millisecond}, "hedging: Delay must be >= 0, got -1ms"},
		{mulligan.HedgingOptions{DelayQuantile: 1.5}, "hedging: delay_quantile must be in (0, 1], got 1.5"},
		{mulligan.HedgingOptions{QuantileWindow: 10}, "quantile_min_samples must be in [1, quantile_window = 10], got 20"},
		// Counts a C int cannot hold are refused with their value, never wrapped.
		{mulligan.HedgingOptions{QuantileWindow: 1 << 32}, "hedging: quantile_window must fit a C int, got 4294967296"},
		{mulligan.HedgingOptions{MaxAttempts: -1 << 40}, "hedging: max_attempts must fit a C int, got -1099511627776"},
	} {
		_, err := mulligan.NewHedgingPolicy(c.o)
		var me *mulligan.Error
		if !errors.As(err, &me) || me.Code != mulligan.CodeInvalidArgument || !strings.Contains(me.Msg, c.want) {
			t.Errorf("%+v: got %v, want %q", c.o, err, c.want)
		}
	}
	h := hedging(t, mulligan.HedgingOptions{Delay: 7 * time.Millisecond, DelayQuantile: 0.95})
	if d := h.CurrentDelay(); d != 7*time.Millisecond {
		t.Fatalf("CurrentDelay %v before any sample, want the fixed 7ms", d)
	}
	if err := mulligan.Hedge(context.Background(), nil, h, nil); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatalf("got %v", err)
	}
}
