// Package bench compares the mulligan Go binding with cenkalti/backoff/v4
// and failsafe-go on three paths (issue 17): a first-attempt success, two
// failures then a success with zero wait, and a breaker guarding a success.
// Run: go test -bench . -benchmem (after eval "$(scripts/install_capi.sh)").
package bench

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/circuitbreaker"
	"github.com/failsafe-go/failsafe-go/retrypolicy"
	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

var errFail = errors.New("fail")

func ok() error { return nil }

// flaky fails twice, then succeeds, per logical call.
type flaky struct{ n int }

func (f *flaky) run() error {
	f.n++
	if f.n < 3 {
		return errFail
	}
	return nil
}

func BenchmarkBaseline_Success(b *testing.B) {
	for i := 0; i < b.N; i++ {
		_ = ok()
	}
}

func BenchmarkMulligan_Success(b *testing.B) {
	p, err := mulligan.NewPolicy()
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return ok() }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = mulligan.Do(ctx, p, fn)
	}
}

func BenchmarkCenkalti_Success(b *testing.B) {
	bo := backoff.WithMaxRetries(backoff.NewExponentialBackOff(), 2)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = backoff.Retry(ok, bo)
	}
}

func BenchmarkFailsafe_Success(b *testing.B) {
	ex := failsafe.With[any](retrypolicy.NewBuilder[any]().WithMaxAttempts(3).Build())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = ex.Run(ok)
	}
}

func BenchmarkMulligan_TwoFailures(b *testing.B) {
	p, err := mulligan.NewPolicy(mulligan.WithBaseDelay(0), mulligan.WithMaxAttempts(3))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f := flaky{}
		if err := mulligan.Do(ctx, p, func(context.Context) error { return f.run() }); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCenkalti_TwoFailures(b *testing.B) {
	bo := backoff.WithMaxRetries(&backoff.ZeroBackOff{}, 2)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f := flaky{}
		if err := backoff.Retry(f.run, bo); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkFailsafe_TwoFailures(b *testing.B) {
	ex := failsafe.With[any](retrypolicy.NewBuilder[any]().WithMaxAttempts(3).WithDelay(0).Build())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		f := flaky{}
		if err := ex.Run(f.run); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkMulligan_Breaker(b *testing.B) {
	br, err := mulligan.NewCircuitBreaker()
	if err != nil {
		b.Fatal(err)
	}
	p, err := mulligan.NewPolicy(mulligan.WithBreaker(br), mulligan.WithMaxAttempts(1))
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	fn := func(context.Context) error { return ok() }
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = mulligan.Do(ctx, p, fn)
	}
}

func BenchmarkMulligan_BreakerAcquireRecord(b *testing.B) {
	br, err := mulligan.NewCircuitBreaker()
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		pm, err := br.Acquire()
		if err == nil {
			_ = br.Record(pm, mulligan.ResultSuccess, -1)
		}
	}
}

func BenchmarkFailsafe_Breaker(b *testing.B) {
	ex := failsafe.With[any](circuitbreaker.NewBuilder[any]().WithDelay(30 * time.Second).Build())
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		_ = ex.Run(ok)
	}
}
