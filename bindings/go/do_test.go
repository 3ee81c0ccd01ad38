package mulligan_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

var errBoom = errors.New("boom")

func fakePolicy(t *testing.T, opts ...mulligan.Option) (*mulligan.Policy, *mulligan.FakeClock) {
	t.Helper()
	clk, err := mulligan.NewFakeClock()
	if err != nil {
		t.Fatal(err)
	}
	p, err := mulligan.NewPolicy(append([]mulligan.Option{mulligan.WithClock(clk)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p, clk
}

func TestDoSuccessAndRetry(t *testing.T) {
	p, clk := fakePolicy(t, mulligan.WithMaxAttempts(3), mulligan.WithBackoff(mulligan.BackoffConstant),
		mulligan.WithBaseDelay(time.Second), mulligan.WithJitter(mulligan.JitterNone))
	start := clk.Now()
	n := 0
	err := mulligan.Do(context.Background(), p, func(context.Context) error {
		n++
		if n < 3 {
			return errBoom
		}
		return nil
	})
	if err != nil || n != 3 {
		t.Fatalf("err %v after %d attempts", err, n)
	}
	if waited := clk.Now() - start; waited != 2*time.Second {
		t.Fatalf("the fake clock moved %v, want 2s", waited)
	}
}

func TestDoGiveUpKeepsUserError(t *testing.T) {
	p, _ := fakePolicy(t, mulligan.WithMaxAttempts(2), mulligan.WithBaseDelay(0))
	err := mulligan.Do(context.Background(), p, func(context.Context) error { return errBoom })
	if !errors.Is(err, mulligan.ErrRetriesExhausted) || !errors.Is(err, errBoom) {
		t.Fatalf("got %v", err)
	}
	var me *mulligan.Error
	if !errors.As(err, &me) || me.Code != mulligan.CodeRetriesExhausted || me.Attempts != 2 ||
		me.Reason != mulligan.StopAttemptsExhausted || me.Err != errBoom {
		t.Fatalf("got %#v", me)
	}
	if errors.Is(err, mulligan.ErrCircuitOpen) {
		t.Fatal("must not match another sentinel")
	}
}

func TestDoPermanentAndRetryIf(t *testing.T) {
	p, _ := fakePolicy(t, mulligan.WithBaseDelay(0))
	n := 0
	err := mulligan.Do(context.Background(), p, func(context.Context) error { n++; return mulligan.Permanent(errBoom) })
	if n != 1 || !errors.Is(err, mulligan.ErrUnavailable) || !errors.Is(err, errBoom) {
		t.Fatalf("%d attempts, %v", n, err)
	}
	q, _ := fakePolicy(t, mulligan.WithBaseDelay(0), mulligan.WithRetryIf(func(e error) bool { return !errors.Is(e, errBoom) }))
	n = 0
	err = mulligan.Do(context.Background(), q, func(context.Context) error { n++; return errBoom })
	if n != 1 || !errors.Is(err, mulligan.ErrUnavailable) {
		t.Fatalf("%d attempts, %v", n, err)
	}
	// An HTTP status is classified by the engine: 404 terminal, 503 retryable.
	n = 0
	err = mulligan.Do(context.Background(), q, func(context.Context) error {
		n++
		return &mulligan.HTTPStatusError{Status: 404, RetryAfter: -1}
	})
	if n != 1 || !errors.Is(err, mulligan.ErrUnavailable) {
		t.Fatalf("404: %d attempts, %v", n, err)
	}
	n = 0
	err = mulligan.Do(context.Background(), q, func(context.Context) error {
		n++
		return &mulligan.HTTPStatusError{Status: 503, RetryAfter: -1}
	})
	if n != 3 || !errors.Is(err, mulligan.ErrRetriesExhausted) {
		t.Fatalf("503: %d attempts, %v", n, err)
	}
}

func TestDoValue(t *testing.T) {
	p, _ := fakePolicy(t, mulligan.WithBaseDelay(0))
	n := 0
	v, err := mulligan.DoValue(context.Background(), p, func(context.Context) (string, error) {
		n++
		if n == 1 {
			return "", errBoom
		}
		return "ok", nil
	})
	if err != nil || v != "ok" {
		t.Fatalf("%q %v", v, err)
	}
	v, err = mulligan.DoValue(context.Background(), p, func(context.Context) (string, error) { return "partial", errBoom })
	if err == nil || v != "" {
		t.Fatalf("%q %v", v, err)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	if err := mulligan.Do(ctx, nil, func(context.Context) error { return nil }); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	p, _ := fakePolicy(t)
	if err := mulligan.Do(ctx, p, nil); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	//lint:ignore SA1012 testing a nil context on purpose
	if err := mulligan.Do(nil, p, func(context.Context) error { return nil }); !errors.Is(err, mulligan.ErrInvalidArgument) { //nolint:staticcheck
		t.Fatal(err)
	}
	for _, o := range []mulligan.Option{mulligan.WithMaxAttempts(0), mulligan.WithBaseDelay(-time.Second),
		mulligan.WithJitterFraction(2), mulligan.WithDeadline(0), mulligan.WithBackoff(99), nil,
		mulligan.WithClock(nil), mulligan.WithBreaker(nil), mulligan.WithRetryableStatuses(700)} {
		_, err := mulligan.NewPolicy(o)
		var me *mulligan.Error
		if !errors.Is(err, mulligan.ErrInvalidArgument) || !errors.As(err, &me) || me.Msg == "" && me.Op == "" {
			t.Errorf("option: got %v", err)
		}
	}
	_, err := mulligan.NewPolicy(mulligan.WithMaxAttempts(0))
	t.Logf("example: %v", err)
	if _, err := mulligan.NewCircuitBreaker(mulligan.FailureThreshold(-1)); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	if _, err := mulligan.ParseRetryAfter("soon", time.Now()); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	// nil handles and closed handles
	var nb *mulligan.CircuitBreaker
	if _, err := nb.Acquire(); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	_ = nb.Close()
	if nb.State() != mulligan.StateClosed || nb.Name() != "" {
		t.Fatal("nil breaker")
	}
	var nc *mulligan.Call
	if _, err := nc.Record(mulligan.SuccessOutcome()); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	nc.Close()
	var np *mulligan.Policy
	_ = np.Close()
	if _, err := np.Begin(); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	q, _ := mulligan.NewPolicy()
	_ = q.Close()
	_ = q.Close()
	if err := mulligan.Do(ctx, q, func(context.Context) error { return errBoom }); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	// an invalid outcome is refused by the engine, the call unchanged
	c, _ := p.Begin()
	defer c.Close()
	if _, err := c.Record(mulligan.Outcome{HTTPStatus: 42, RetryAfter: -1, RequestSent: -1}); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	var fc *mulligan.FakeClock
	if err := fc.Advance(time.Second); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
}

func trippedBreaker(t *testing.T, clk *mulligan.FakeClock) *mulligan.CircuitBreaker {
	t.Helper()
	b, err := mulligan.NewCircuitBreaker(mulligan.BreakerName("db"), mulligan.FailureThreshold(1),
		mulligan.ResetTimeout(10*time.Second), mulligan.BreakerClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	p, err := b.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	_ = b.Record(p, mulligan.ResultFailure, 0)
	if b.State() != mulligan.StateOpen {
		t.Fatalf("state %v", b.State())
	}
	return b
}

func TestCircuitOpen(t *testing.T) {
	clk, _ := mulligan.NewFakeClock()
	b := trippedBreaker(t, clk)
	p, _ := mulligan.NewPolicy(mulligan.WithClock(clk), mulligan.WithBreaker(b))
	defer p.Close()
	ran := false
	err := mulligan.Do(context.Background(), p, func(context.Context) error { ran = true; return nil })
	var me *mulligan.Error
	if ran || !errors.Is(err, mulligan.ErrCircuitOpen) || !errors.As(err, &me) || me.RetryIn != 10*time.Second {
		t.Fatalf("ran %v, %v (%#v)", ran, err, me)
	}
	t.Logf("example: %v", err)
	// a breaker on another clock is refused at construction
	other, _ := mulligan.NewCircuitBreaker()
	if _, err := mulligan.NewPolicy(mulligan.WithClock(clk), mulligan.WithBreaker(other)); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
}

// A panicking fn abandons the call: the half-open probe's slot is freed
// (another probe is admitted), and the panic reaches the caller unchanged.
func TestPanicAbandonsAndFreesPermit(t *testing.T) {
	clk, _ := mulligan.NewFakeClock()
	b := trippedBreaker(t, clk)
	_ = clk.Advance(10 * time.Second)
	p, _ := mulligan.NewPolicy(mulligan.WithClock(clk), mulligan.WithBreaker(b), mulligan.WithName("go_panic"))
	defer p.Close()
	func() {
		defer func() {
			if r := recover(); r != "kaboom" {
				t.Fatalf("recovered %v", r)
			}
		}()
		_ = mulligan.Do(context.Background(), p, func(context.Context) error { panic("kaboom") })
	}()
	if b.State() != mulligan.StateHalfOpen {
		t.Fatalf("state %v", b.State())
	}
	pm, err := b.Acquire()
	if err != nil || !pm.Admitted || !pm.Probe {
		t.Fatalf("the probe slot was not freed: %+v %v", pm, err)
	}
	m, _ := mulligan.Metrics("go_panic")
	if m.InFlight != 0 || m.Failures != 1 {
		t.Fatalf("metrics %+v", m)
	}
	// panic on the fast path (no engine entered) just propagates
	q, _ := fakePolicy(t)
	func() {
		defer func() { _ = recover() }()
		_ = mulligan.Do(context.Background(), q, func(context.Context) error { panic("fast") })
	}()
}

func TestContextCancelEndsWait(t *testing.T) {
	p, err := mulligan.NewPolicy(mulligan.WithBackoff(mulligan.BackoffConstant), mulligan.WithBaseDelay(time.Hour),
		mulligan.WithJitter(mulligan.JitterNone), mulligan.WithMaxDelay(time.Hour), mulligan.WithName("go_cancel"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)
	start := time.Now()
	err = mulligan.Do(ctx, p, func(context.Context) error { return errBoom })
	if time.Since(start) > 5*time.Second {
		t.Fatal("the wait was not ended")
	}
	if !errors.Is(err, context.Canceled) || !errors.Is(err, errBoom) || !errors.Is(err, mulligan.ErrCallback) {
		t.Fatalf("got %v", err)
	}
	// A cancelled ctx counts the call cancelled, never failed (0.6): 1
	// call, its 1 attempt, 0 failures, 1 cancelled, none left.
	m, _ := mulligan.Metrics("go_cancel")
	if m.Calls != 1 || m.Attempts != 1 || m.InFlight != 0 || m.WaitingToRetry != 0 || m.Failures != 0 ||
		m.Cancelled != 1 {
		t.Fatalf("metrics %+v", m)
	}
	// a context deadline shorter than the decided wait ends the call at once
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Minute)
	defer cancel2()
	start = time.Now()
	err = mulligan.Do(ctx2, p, func(context.Context) error { return errBoom })
	if time.Since(start) > 5*time.Second || !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, mulligan.ErrDeadlineExceeded) {
		t.Fatalf("got %v", err)
	}
	// an already cancelled context runs nothing
	q, _ := fakePolicy(t)
	ran := false
	err = mulligan.Do(ctx, q, func(context.Context) error { ran = true; return nil })
	if ran || !errors.Is(err, context.Canceled) {
		t.Fatalf("ran %v, %v", ran, err)
	}
}

// A ctx cancelled during an attempt (fn returns the cancel's error) cancels
// the call (0.6): not recorded, so a breaker with FailureThreshold 1 stays
// closed; counted 1 call, 1 attempt (in flight), 0 failures, 1 cancelled.
func TestContextCancelDuringAttemptIsNotAFailure(t *testing.T) {
	clk, _ := mulligan.NewFakeClock()
	b, err := mulligan.NewCircuitBreaker(mulligan.BreakerName("go_cancel_attempt"), mulligan.FailureThreshold(1),
		mulligan.ResetTimeout(10*time.Second), mulligan.BreakerClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := mulligan.NewPolicy(mulligan.WithClock(clk), mulligan.WithBreaker(b), mulligan.WithMaxAttempts(3),
		mulligan.WithName("go_cancel_attempt"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx, cancel := context.WithCancel(context.Background())
	runs := 0
	err = mulligan.Do(ctx, p, func(c context.Context) error {
		runs++
		cancel() // the caller cancels while the attempt runs
		return c.Err()
	})
	if runs != 1 || !errors.Is(err, context.Canceled) || !errors.Is(err, mulligan.ErrCallback) {
		t.Fatalf("runs %d, %v", runs, err)
	}
	if b.State() != mulligan.StateClosed {
		t.Fatalf("state %v", b.State())
	}
	m, _ := mulligan.Metrics("go_cancel_attempt")
	if m.Calls != 1 || m.Attempts != 1 || m.Successes != 0 || m.Failures != 0 || m.Cancelled != 1 ||
		m.InFlight != 0 || m.WaitingToRetry != 0 {
		t.Fatalf("metrics %+v", m)
	}
}

func TestAttemptTimeoutReachesContext(t *testing.T) {
	p, _ := fakePolicy(t, mulligan.WithAttemptTimeout(time.Hour), mulligan.WithMaxAttempts(1))
	err := mulligan.Do(context.Background(), p, func(ctx context.Context) error {
		dl, ok := ctx.Deadline()
		if !ok || time.Until(dl) > time.Hour || time.Until(dl) < 59*time.Minute {
			return errors.New("no attempt deadline")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBreakerListeners(t *testing.T) {
	clk, _ := mulligan.NewFakeClock()
	b, _ := mulligan.NewCircuitBreaker(mulligan.BreakerName("ev"), mulligan.FailureThreshold(2), mulligan.BreakerClock(clk))
	var mu sync.Mutex
	var got []mulligan.Transition
	var calls int
	remove, err := b.OnTransition(func(tr mulligan.Transition) { mu.Lock(); got = append(got, tr); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	_, _ = b.OnCall(func(mulligan.BreakerCallEvent) { mu.Lock(); calls++; mu.Unlock() })
	_, _ = b.OnTransition(func(mulligan.Transition) { panic("a listener panics") })
	for i := 0; i < 2; i++ {
		pm, _ := b.Acquire()
		_ = b.Record(pm, mulligan.ResultFailure, 0)
	}
	_, _ = b.Acquire()
	if len(got) != 1 || got[0].From != mulligan.StateClosed || got[0].To != mulligan.StateOpen ||
		got[0].Reason != "failure_threshold" || got[0].Name != "ev" || calls != 3 {
		t.Fatalf("transitions %+v, %d call events", got, calls)
	}
	remove()
	remove()
	if _, err := b.OnTransition(nil); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
	_ = b.Reset()
	if len(got) != 1 {
		t.Fatal("removed listener still called")
	}
	_ = b.Close()
	_ = b.Close()
}

func TestConcurrentDo(t *testing.T) {
	b, _ := mulligan.NewCircuitBreaker(mulligan.FailureThreshold(1000))
	p, err := mulligan.NewPolicy(mulligan.WithBaseDelay(0), mulligan.WithBreaker(b), mulligan.WithName("go_concurrent"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var ok atomic.Int64
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				n := 0
				if mulligan.Do(context.Background(), p, func(context.Context) error {
					n++
					if n == 1 && i%2 == 0 {
						return errBoom
					}
					return nil
				}) == nil {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if ok.Load() != 1600 {
		t.Fatalf("%d successes", ok.Load())
	}
}

func TestMetricsExport(t *testing.T) {
	p, _ := fakePolicy(t, mulligan.WithName("go_export"), mulligan.WithBaseDelay(0))
	_ = mulligan.Do(context.Background(), p, func(context.Context) error { return nil })
	js, err := mulligan.MetricsJSON()
	if err != nil || !contains(js, `"go_export"`) {
		t.Fatalf("%v %s", err, js)
	}
	prom, err := mulligan.MetricsPrometheus()
	if err != nil || !contains(prom, `mulligan_calls_total{name="go_export"}`) {
		t.Fatalf("%v %s", err, prom)
	}
	if _, err := mulligan.Metrics("no such name"); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
}

func contains(s, sub string) bool {
	return len(s) >= len(sub) && (func() bool { return indexOf(s, sub) >= 0 })()
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// The success path crosses into C zero times and allocates nothing.
func TestFastPathAllocs(t *testing.T) {
	p, err := mulligan.NewPolicy()
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	if a := testing.AllocsPerRun(1000, func() { _ = mulligan.Do(ctx, p, fn) }); a != 0 {
		t.Fatalf("%v allocations per successful Do", a)
	}
}

func BenchmarkDoSuccess(b *testing.B) {
	p, _ := mulligan.NewPolicy()
	defer p.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = mulligan.Do(ctx, p, fn)
	}
}

func BenchmarkDoSuccessNamed(b *testing.B) {
	p, _ := mulligan.NewPolicy(mulligan.WithName("bench_named"))
	defer p.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = mulligan.Do(ctx, p, fn)
	}
}

func BenchmarkDoTwoFailures(b *testing.B) {
	p, _ := mulligan.NewPolicy(mulligan.WithBaseDelay(0))
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		n := 0
		_ = mulligan.Do(ctx, p, func(context.Context) error {
			n++
			if n < 3 {
				return errBoom
			}
			return nil
		})
	}
}

func BenchmarkDoBreaker(b *testing.B) {
	br, _ := mulligan.NewCircuitBreaker()
	p, _ := mulligan.NewPolicy(mulligan.WithBreaker(br))
	defer p.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return nil }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = mulligan.Do(ctx, p, fn)
	}
}
