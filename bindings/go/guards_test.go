package mulligan_test

import (
	"context"
	"errors"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

// The shared retry budget and throttle scripts of tests/vectors/budget.json
// (made by tests/core/gen_budget_vectors.py; C++, C and Python run them too).
func TestBudgetVectors(t *testing.T) {
	var f struct {
		Budgets []struct {
			Name, Kind string
			Start      float64
			Options    map[string]float64
			Steps      []struct {
				T       float64
				Op      string
				Kind    string
				Allowed bool
				Cost    *int64
				Count   uint64
				Repeat  int
				Tokens  float64
			}
		}
	}
	loadVectors(t, "budget.json", &f)
	kinds := map[string]mulligan.BudgetKind{"token_bucket": mulligan.BudgetTokenBucket,
		"quota": mulligan.BudgetQuota, "ratio": mulligan.BudgetRatio}
	failures := map[string]mulligan.BudgetFailure{"": mulligan.FailureOther, "other": mulligan.FailureOther,
		"timeout": mulligan.FailureTimeout, "throttling": mulligan.FailureThrottling}
	steps := 0
	for _, c := range f.Budgets {
		clk, err := mulligan.NewFakeClock()
		if err != nil {
			t.Fatal(err)
		}
		if err := clk.Advance(secs(c.Start)); err != nil {
			t.Fatal(err)
		}
		o := mulligan.DefaultBudgetOptions()
		o.Name, o.Kind, o.Clock = c.Name, kinds[c.Kind], clk
		for k, v := range c.Options {
			switch k {
			case "max_tokens":
				o.MaxTokens = v
			case "token_ratio":
				o.TokenRatio = v
			case "capacity":
				o.Capacity = int64(v)
			case "retry_cost":
				o.RetryCost = int64(v)
			case "timeout_cost":
				o.TimeoutCost = int64(v)
			case "throttling_cost":
				o.ThrottlingCost = int64(v)
			case "no_retry_increment":
				o.NoRetryIncrement = int64(v)
			case "ttl":
				o.TTL = secs(v)
			case "percent":
				o.Percent = v
			case "min_retries_per_second":
				o.MinRetriesPerSecond = v
			default:
				t.Fatalf("%s: unknown option %s", c.Name, k)
			}
		}
		b, err := mulligan.NewRetryBudget(o)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for i, s := range c.Steps {
			at := secs(s.T)
			switch s.Op {
			case "failure":
				err = b.OnFailure(failures[s.Kind], at)
			case "retry":
				n := s.Repeat
				if n == 0 {
					n = 1
				}
				for r := 0; r < n; r++ {
					cost, rerr := b.TryRetry(failures[s.Kind], at)
					if (rerr == nil) != s.Allowed || (rerr != nil && !errors.Is(rerr, mulligan.ErrBudgetExhausted)) {
						t.Errorf("%s step %d: retry %v, want allowed %v", c.Name, i, rerr, s.Allowed)
					}
					if s.Cost != nil && cost != *s.Cost {
						t.Errorf("%s step %d: cost %d, want %d", c.Name, i, cost, *s.Cost)
					}
				}
			case "success":
				n := s.Count
				if n == 0 {
					n = 1
				}
				err = b.AddSuccesses(n)
			case "retried_success":
				err = b.OnRetriedSuccess(*s.Cost)
			case "call":
				err = b.OnCallStarted(at)
			default:
				t.Fatalf("unknown op %s", s.Op)
			}
			if err != nil {
				t.Fatalf("%s step %d: %v", c.Name, i, err)
			}
			tokens, err := b.Tokens(at)
			if err != nil || math.Abs(tokens-s.Tokens) > 1e-9 {
				t.Errorf("%s step %d (%s): tokens %v (%v), want %v", c.Name, i, s.Op, tokens, err, s.Tokens)
			}
			steps++
		}
	}
	if steps < 100 {
		t.Fatalf("only %d budget steps ran", steps)
	}
}

func TestThrottleVectors(t *testing.T) {
	var f struct {
		Throttles []struct {
			Name    string
			Options struct {
				Window, K float64
				Seed      uint64
			}
			Steps []struct {
				T        float64
				Op       string
				P        float64
				Admitted bool
				Outcome  string
			}
		}
	}
	loadVectors(t, "budget.json", &f)
	for _, c := range f.Throttles {
		seed := c.Options.Seed
		th, err := mulligan.NewThrottle(mulligan.ThrottleOptions{Window: secs(c.Options.Window), K: c.Options.K, Seed: &seed})
		if err != nil {
			t.Fatal(err)
		}
		rejected := uint64(0)
		for i, s := range c.Steps {
			at := secs(s.T)
			if s.Op == "admit" {
				p, err := th.Probability(at)
				if err != nil || math.Abs(p-s.P) > 1e-12 {
					t.Errorf("%s step %d: p %v (%v), want %v", c.Name, i, p, err, s.P)
				}
				aerr := th.Admit(at)
				if (aerr == nil) != s.Admitted {
					t.Errorf("%s step %d: admit %v, want %v", c.Name, i, aerr, s.Admitted)
				}
				if aerr != nil {
					rejected++
					if !errors.Is(aerr, mulligan.ErrThrottled) {
						t.Errorf("%s step %d: %v is not ErrThrottled", c.Name, i, aerr)
					}
				}
				continue
			}
			o := mulligan.SuccessOutcome()
			if s.Outcome != "accept" {
				o.HTTPStatus = 503
			}
			if err := th.Record(o); err != nil {
				t.Fatal(err)
			}
		}
		if th.Rejected() != rejected || rejected == 0 {
			t.Errorf("%s: rejected %d, counted %d", c.Name, th.Rejected(), rejected)
		}
	}
}

// The shared GCRA scripts of tests/vectors/rate_limiter_gcra.json, up to a
// case's first Retry-After penalty (which reaches a limiter through a
// pipeline's outcomes only; C++ and Python run the rest).
func TestRateLimiterVectors(t *testing.T) {
	var f struct {
		Cases []struct {
			Name        string
			Rate, Burst float64
			Steps       []struct {
				At            float64
				Key           string
				MaxWait       *float64 `json:"max_wait"`
				PenalizeUntil *float64 `json:"penalize_until"`
				Expect        struct {
					Admitted  bool
					WaitNs    int64 `json:"wait_ns"`
					RetryInNs int64 `json:"retry_in_ns"`
				}
			}
		}
	}
	loadVectors(t, "rate_limiter_gcra.json", &f)
	t0 := 1000 * time.Second
	ran := 0
	for _, c := range f.Cases {
		l, err := mulligan.NewRateLimiter(mulligan.RateLimiterOptions{Name: "vector", Rate: c.Rate, Burst: c.Burst, MaxWait: -1})
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range c.Steps {
			if s.PenalizeUntil != nil {
				break
			}
			mw := time.Duration(-1)
			if s.MaxWait != nil {
				mw = secs(*s.MaxWait)
			}
			wait, err := l.Acquire(s.Key, t0+secs(s.At), mw)
			if (err == nil) != s.Expect.Admitted {
				t.Fatalf("%s step %d: %v, want admitted %v", c.Name, i, err, s.Expect.Admitted)
			}
			var retryIn time.Duration
			if err != nil {
				var e *mulligan.Error
				if !errors.As(err, &e) || !errors.Is(err, mulligan.ErrRateLimited) {
					t.Fatalf("%s step %d: %v", c.Name, i, err)
				}
				retryIn = e.RetryIn
			}
			if d := wait - time.Duration(s.Expect.WaitNs); d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("%s step %d: wait %v, want %dns", c.Name, i, wait, s.Expect.WaitNs)
			}
			if d := retryIn - time.Duration(s.Expect.RetryInNs); d < -time.Microsecond || d > time.Microsecond {
				t.Errorf("%s step %d: retry in %v, want %dns", c.Name, i, retryIn, s.Expect.RetryInNs)
			}
			ran++
		}
	}
	if ran < 10 {
		t.Fatalf("only %d limiter steps ran", ran)
	}
}

func TestGuardOptionsAreValidated(t *testing.T) {
	bad := mulligan.DefaultBudgetOptions()
	bad.TokenRatio = -1
	if _, err := mulligan.NewRetryBudget(bad); !errors.Is(err, mulligan.ErrInvalidArgument) || !errHas(err, "token_ratio") {
		t.Errorf("token_ratio: %v", err)
	}
	bad = mulligan.DefaultBudgetOptions()
	bad.Kind, bad.Percent = mulligan.BudgetRatio, 1.5
	if _, err := mulligan.NewRetryBudget(bad); !errHas(err, "percent") {
		t.Errorf("percent: %v", err)
	}
	if _, err := mulligan.NewRetryBudget(mulligan.BudgetOptions{}); !errHas(err, "max_tokens") {
		t.Errorf("zero options: %v", err)
	}
	to := mulligan.DefaultThrottleOptions()
	to.K = 0.5
	if _, err := mulligan.NewThrottle(to); !errHas(err, "k ") && !errHas(err, "k must") {
		t.Errorf("k: %v", err)
	}
	if _, err := mulligan.NewBulkhead("db", 0, 0, -1); !errHas(err, "max_concurrent") {
		t.Errorf("max_concurrent: %v", err)
	}
	if _, err := mulligan.NewRateLimiter(mulligan.RateLimiterOptions{Rate: -1, Burst: 1}); !errHas(err, "rate") {
		t.Errorf("rate: %v", err)
	}
	if _, err := mulligan.NewPolicy(mulligan.WithBudget(nil)); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Errorf("nil budget: %v", err)
	}
	var nb *mulligan.RetryBudget
	if _, err := nb.Tokens(0); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Errorf("nil budget handle: %v", err)
	}
}

func errHas(err error, s string) bool { return err != nil && contains(err.Error(), s) }

// An A6 bucket of 10 tokens under a 10-attempt policy of always-failing
// calls: failures take 10 -> 9, 8, 7, 6 (retries allowed, tokens > 5) and
// the 5th failure leaves 5: refused. 5 attempts, Reason StopBudget, the
// last error kept.
func TestDoStopsOnTheBudget(t *testing.T) {
	clk, _ := mulligan.NewFakeClock()
	o := mulligan.DefaultBudgetOptions()
	o.MaxTokens, o.TokenRatio, o.Clock = 10, 0.1, clk
	b, err := mulligan.NewRetryBudget(o)
	if err != nil {
		t.Fatal(err)
	}
	p, err := mulligan.NewPolicy(mulligan.WithMaxAttempts(10), mulligan.WithBaseDelay(0), mulligan.WithClock(clk), mulligan.WithBudget(b))
	if err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	calls := 0
	err = mulligan.Do(context.Background(), p, func(context.Context) error { calls++; return boom })
	var e *mulligan.Error
	if !errors.As(err, &e) || e.Reason != mulligan.StopBudget || !errors.Is(err, boom) || calls != 5 {
		t.Fatalf("err %v, calls %d; want StopBudget after 5", err, calls)
	}
	if b.Refused() != 1 || b.Allowed() != 4 {
		t.Errorf("refused %d allowed %d, want 1 and 4", b.Refused(), b.Allowed())
	}
	// A first-attempt success skips the engine but feeds the bucket: 5 + 0.1.
	if err := mulligan.Do(context.Background(), p, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if tokens, _ := b.Tokens(clk.Now()); math.Abs(tokens-5.1) > 1e-9 {
		t.Errorf("tokens %v, want 5.1", tokens)
	}
}

// 1000 overload answers and no accept: p = 1000/1001; the policy's first
// attempt is then rejected locally (seed 7: its draw is below p).
func TestDoIsThrottled(t *testing.T) {
	seed := uint64(7)
	th, err := mulligan.NewThrottle(mulligan.ThrottleOptions{Window: time.Minute, K: 2, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	now := mulligan.SteadyNow()
	busy := mulligan.SuccessOutcome()
	busy.HTTPStatus = 503
	for i := 0; i < 1000; i++ {
		if th.Admit(now) == nil {
			_ = th.Record(busy)
		}
	}
	if r, a, _ := th.Counts(now); r != 1000 || a != 0 {
		t.Fatalf("counts %d %d, want 1000 0", r, a)
	}
	p, _ := mulligan.NewPolicy(mulligan.WithThrottle(th))
	ran := false
	err = mulligan.Do(context.Background(), p, func(context.Context) error { ran = true; return nil })
	var e *mulligan.Error
	if !errors.Is(err, mulligan.ErrThrottled) || !errors.As(err, &e) || e.Reason != mulligan.StopThrottled || ran {
		t.Fatalf("err %v ran %v, want ErrThrottled before any attempt", err, ran)
	}
}

// A bulkhead of 2 with a queue: 8 goroutines, never more than 2 inside fn,
// every call served.
func TestDoBulkheadExactlyNInFlight(t *testing.T) {
	b, err := mulligan.NewBulkhead("go-bulkhead", 2, 16, -1)
	if err != nil {
		t.Fatal(err)
	}
	p, err := mulligan.NewPolicy(mulligan.WithBulkhead(b, false))
	if err != nil {
		t.Fatal(err)
	}
	var inside, peak, done int32
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				err := mulligan.Do(context.Background(), p, func(context.Context) error {
					n := atomic.AddInt32(&inside, 1)
					for {
						m := atomic.LoadInt32(&peak)
						if n <= m || atomic.CompareAndSwapInt32(&peak, m, n) {
							break
						}
					}
					time.Sleep(100 * time.Microsecond)
					atomic.AddInt32(&inside, -1)
					return nil
				})
				if err != nil {
					t.Error(err)
					return
				}
				atomic.AddInt32(&done, 1)
			}
		}()
	}
	wg.Wait()
	if peak != 2 || done != 160 || b.InFlight() != 0 || b.Queued() != 0 {
		t.Fatalf("peak %d done %d in flight %d queued %d; want 2 160 0 0", peak, done, b.InFlight(), b.Queued())
	}
}

func TestDoBulkheadFullAndRateLimited(t *testing.T) {
	b, _ := mulligan.NewBulkhead("go-full", 1, 0, -1)
	p, _ := mulligan.NewPolicy(mulligan.WithBulkhead(b, false))
	if !b.TryAcquire() {
		t.Fatal("the slot should be free")
	}
	err := mulligan.Do(context.Background(), p, func(context.Context) error { return nil })
	if !errors.Is(err, mulligan.ErrBulkheadFull) {
		t.Fatalf("%v, want ErrBulkheadFull", err)
	}
	b.Release()

	// Rate 1/s, burst 1, no waiting: the first call passes, the second is
	// refused with the slot about 1 s away.
	l, _ := mulligan.NewRateLimiter(mulligan.RateLimiterOptions{Name: "go-limited", Rate: 1, Burst: 1, MaxWait: 0})
	p2, _ := mulligan.NewPolicy(mulligan.WithRateLimiter(l, false))
	if err := mulligan.Do(context.Background(), p2, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	err = mulligan.Do(context.Background(), p2, func(context.Context) error { return nil })
	var e *mulligan.Error
	if !errors.Is(err, mulligan.ErrRateLimited) || !errors.As(err, &e) || e.RetryIn <= 0 || e.RetryIn > time.Second {
		t.Fatalf("%v, want ErrRateLimited with RetryIn in (0, 1s]", err)
	}
}

// A limiter's wait ends with the context: rate 1/s, the second call would
// wait ~1 s; a cancelled context ends it at once.
func TestDoRateLimiterWaitEndsWithContext(t *testing.T) {
	l, _ := mulligan.NewRateLimiter(mulligan.RateLimiterOptions{Rate: 1, Burst: 1, MaxWait: -1})
	p, _ := mulligan.NewPolicy(mulligan.WithRateLimiter(l, false))
	_ = mulligan.Do(context.Background(), p, func(context.Context) error { return nil })
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := mulligan.Do(ctx, p, func(context.Context) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("%v, want context.Canceled", err)
	}
}

// A call queued on a full bulkhead leaves the queue when its context ends.
func TestDoBulkheadQueueWaitEndsWithContext(t *testing.T) {
	b, _ := mulligan.NewBulkhead("go-queue", 1, 4, -1)
	p, _ := mulligan.NewPolicy(mulligan.WithBulkhead(b, false))
	if !b.TryAcquire() {
		t.Fatal("the slot should be free")
	}
	defer b.Release()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	ran := false
	err := mulligan.Do(ctx, p, func(context.Context) error { ran = true; return nil })
	if !errors.Is(err, context.DeadlineExceeded) || ran {
		t.Fatalf("%v (ran %v), want the context's deadline before any attempt", err, ran)
	}
	if b.Queued() != 0 || b.InFlight() != 1 {
		t.Fatalf("queued %d in flight %d, want 0 and 1", b.Queued(), b.InFlight())
	}
}
