// The Go quick start of the README: retries with a policy, a breaker, a
// Retry-After hint, and the engine's errors.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

var errFlaky = errors.New("flaky dependency")

func main() {
	// Validated once; bad input is an error wrapping mulligan's code.
	if _, err := mulligan.NewPolicy(mulligan.WithMaxAttempts(0)); errors.Is(err, mulligan.ErrInvalidArgument) {
		fmt.Println("rejected:", err)
	}

	breaker, err := mulligan.NewCircuitBreaker(mulligan.BreakerName("db"), mulligan.FailureThreshold(5))
	if err != nil {
		log.Fatal(err)
	}
	defer breaker.Close()
	policy, err := mulligan.NewPolicy(
		mulligan.WithMaxAttempts(4),
		mulligan.WithBaseDelay(10*time.Millisecond), // exponential, full jitter, capped at 10s
		mulligan.WithBreaker(breaker),
		mulligan.WithName("quickstart"), // metrics name
	)
	if err != nil {
		log.Fatal(err)
	}
	defer policy.Close()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	// Two failures, then a value: DoValue returns it.
	n := 0
	v, err := mulligan.DoValue(ctx, policy, func(ctx context.Context) (string, error) {
		n++
		if n < 3 {
			return "", errFlaky
		}
		return "hello", nil
	})
	fmt.Printf("%q after %d attempts, err=%v\n", v, n, err)

	// Always failing: the engine gives up; your error is still there.
	err = mulligan.Do(ctx, policy, func(ctx context.Context) error { return errFlaky })
	var me *mulligan.Error
	if errors.As(err, &me) {
		fmt.Println(errors.Is(err, mulligan.ErrRetriesExhausted), errors.Is(err, errFlaky), me.Attempts, me.Reason)
	}

	// A server's Retry-After replaces the backoff delay (the engine decides).
	hint, _ := mulligan.ParseRetryAfter("1", time.Now())
	err = mulligan.Do(ctx, policy, func(ctx context.Context) error {
		return mulligan.Permanent(mulligan.RetryAfter(errFlaky, hint)) // Permanent: not retried
	})
	fmt.Println("permanent:", errors.Is(err, mulligan.ErrUnavailable), "breaker:", breaker.State())

	m, _ := mulligan.Metrics("quickstart")
	fmt.Printf("calls=%d attempts=%d successes=%d failures=%d\n", m.Calls, m.Attempts, m.Successes, m.Failures)
}
