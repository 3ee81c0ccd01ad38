package bench

// Overload guards on the success path (issues 14 and 17): a retry policy
// with a retry budget, a bulkhead and a rate limiter attached, against
// failsafe-go's retry budget, bulkhead and rate limiter on the same path,
// and the bare mulligan policy of bench_test.go as the baseline.
// Run: go test -bench Guard -benchmem (after eval "$(scripts/install_capi.sh)").

import (
	"context"
	"testing"
	"time"

	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/budget"
	"github.com/failsafe-go/failsafe-go/bulkhead"
	"github.com/failsafe-go/failsafe-go/ratelimiter"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

func runMulligan(b *testing.B, opts ...mulligan.Option) {
	p, err := mulligan.NewPolicy(opts...)
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return ok() }
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := mulligan.Do(ctx, p, fn); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkGuard_MulliganBudget(b *testing.B) {
	rb, err := mulligan.NewRetryBudget(mulligan.DefaultBudgetOptions())
	if err != nil {
		b.Fatal(err)
	}
	runMulligan(b, mulligan.WithBudget(rb))
}

func BenchmarkGuard_FailsafeBudget(b *testing.B) {
	rp := retrypolicy.NewBuilder[any]().WithMaxAttempts(3).WithBudget(budget.New()).Build()
	ex := failsafe.With[any](rp)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = ex.Run(ok)
	}
}

func BenchmarkGuard_MulliganBulkhead(b *testing.B) {
	bh, err := mulligan.NewBulkhead("bench", 64, 0, -1)
	if err != nil {
		b.Fatal(err)
	}
	runMulligan(b, mulligan.WithBulkhead(bh, false))
}

func BenchmarkGuard_FailsafeBulkhead(b *testing.B) {
	ex := failsafe.With[any](bulkhead.New[any](64))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = ex.Run(ok)
	}
}

func BenchmarkGuard_MulliganRateLimiter(b *testing.B) {
	l, err := mulligan.NewRateLimiter(mulligan.RateLimiterOptions{Rate: 1e9, Burst: 1e6, MaxWait: 0})
	if err != nil {
		b.Fatal(err)
	}
	runMulligan(b, mulligan.WithRateLimiter(l, false))
}

func BenchmarkGuard_FailsafeRateLimiter(b *testing.B) {
	ex := failsafe.With[any](ratelimiter.NewBursty[any](1_000_000_000, time.Second))
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = ex.Run(ok)
	}
}
