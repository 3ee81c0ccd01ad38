package bench

import (
	"context"
	"testing"

	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

// The same paths with a seeded policy: no per-call seed from the system's
// random source (the engine seeds each call's generator when none is given).
func BenchmarkMulligan_TwoFailuresSeeded(b *testing.B) {
	p, err := mulligan.NewPolicy(mulligan.WithBaseDelay(0), mulligan.WithMaxAttempts(3), mulligan.WithSeed(1))
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

func BenchmarkMulligan_BreakerSeeded(b *testing.B) {
	br, _ := mulligan.NewCircuitBreaker()
	p, err := mulligan.NewPolicy(mulligan.WithBreaker(br), mulligan.WithMaxAttempts(1), mulligan.WithSeed(1))
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
