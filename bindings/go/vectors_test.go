package mulligan_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

func loadVectors(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "tests", "vectors", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatal(err)
	}
}

func secs(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

var backoffs = map[string]mulligan.Backoff{"constant": mulligan.BackoffConstant, "linear": mulligan.BackoffLinear,
	"exponential": mulligan.BackoffExponential, "decorrelated": mulligan.BackoffDecorrelated}
var jitters = map[string]mulligan.Jitter{"none": mulligan.JitterNone, "full": mulligan.JitterFull,
	"equal": mulligan.JitterEqual, "proportional": mulligan.JitterProportional}

// Backoff sequences for a seeded generator: the same nanoseconds as C.
func TestBackoffVectors(t *testing.T) {
	var f struct {
		Cases []struct {
			Name, Backoff, Jitter string
			BaseNs                int64   `json:"base_ns"`
			Multiplier            float64 `json:"multiplier"`
			MaxDelayNs            int64   `json:"max_delay_ns"`
			JitterFraction        float64 `json:"jitter_fraction"`
			Seed                  uint64
			Count                 int
			ExpectedNs            []int64 `json:"expected_ns"`
		}
	}
	loadVectors(t, "backoff.json", &f)
	for _, c := range f.Cases {
		p, err := mulligan.NewPolicy(mulligan.WithBackoff(backoffs[c.Backoff]), mulligan.WithJitter(jitters[c.Jitter]),
			mulligan.WithBaseDelay(time.Duration(c.BaseNs)), mulligan.WithMaxDelay(time.Duration(c.MaxDelayNs)),
			mulligan.WithMultiplier(c.Multiplier), mulligan.WithJitterFraction(c.JitterFraction),
			mulligan.WithSeed(c.Seed), mulligan.WithMaxAttempts(c.Count+1))
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		call, err := p.Begin()
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < c.Count; n++ {
			o := mulligan.SuccessOutcome()
			o.Kind = mulligan.ErrorRetryable
			d, err := call.Record(o)
			if err != nil || !d.Retry {
				t.Fatalf("%s retry %d: %v %+v", c.Name, n, err, d)
			}
			if int64(d.Delay) != c.ExpectedNs[n] {
				t.Errorf("%s retry %d: delay %d ns, want %d", c.Name, n, int64(d.Delay), c.ExpectedNs[n])
			}
		}
		call.Close()
		p.Close()
	}
	t.Logf("%d backoff vectors", len(f.Cases))
}

// Retry-After at a fixed now: the engine's parser through the binding.
func TestRetryAfterVectors(t *testing.T) {
	var f struct {
		Cases []struct {
			Value     string
			NowUnix   int64    `json:"now_unix"`
			Expected  *float64 `json:"expected_seconds"`
			Saturated bool
		}
	}
	loadVectors(t, "retry_after.json", &f)
	for _, c := range f.Cases {
		d, err := mulligan.ParseRetryAfter(c.Value, time.Unix(c.NowUnix, 0))
		switch {
		case c.Saturated:
			if err != nil || d != time.Duration(math.MaxInt64) {
				t.Errorf("%q: got %v, %v; want saturated", c.Value, d, err)
			}
		case c.Expected == nil:
			if err == nil || !errors.Is(err, mulligan.ErrInvalidArgument) {
				t.Errorf("%q: got %v, %v; want invalid", c.Value, d, err)
			}
		default:
			if err != nil || d != secs(*c.Expected) {
				t.Errorf("%q: got %v, %v; want %v s", c.Value, d, err, *c.Expected)
			}
		}
	}
	t.Logf("%d retry-after vectors", len(f.Cases))
}

var states = map[string]mulligan.BreakerState{"closed": mulligan.StateClosed, "open": mulligan.StateOpen,
	"half_open": mulligan.StateHalfOpen, "forced_open": mulligan.StateForcedOpen, "disabled": mulligan.StateDisabled,
	"metrics_only": mulligan.StateMetricsOnly}

func breakerOptions(clk *mulligan.FakeClock, o map[string]any) []mulligan.BreakerOption {
	opts := []mulligan.BreakerOption{mulligan.BreakerClock(clk)}
	for k, v := range o {
		switch k {
		case "failure_threshold":
			opts = append(opts, mulligan.FailureThreshold(int(v.(float64))))
		case "reset_timeout":
			opts = append(opts, mulligan.ResetTimeout(secs(v.(float64))))
		case "half_open_max_calls":
			opts = append(opts, mulligan.HalfOpenMaxCalls(int(v.(float64))))
		case "window":
			w := map[string]mulligan.Window{"none": mulligan.WindowNone, "count": mulligan.WindowCount, "time": mulligan.WindowTime}[v.(string)]
			opts = append(opts, mulligan.WithWindow(w))
		case "window_size":
			opts = append(opts, mulligan.WindowSize(int(v.(float64))))
		case "window_duration":
			opts = append(opts, mulligan.WindowDuration(secs(v.(float64))))
		case "window_buckets":
			opts = append(opts, mulligan.WindowBuckets(int(v.(float64))))
		case "failure_rate_threshold":
			opts = append(opts, mulligan.FailureRateThreshold(v.(float64)))
		case "minimum_calls":
			opts = append(opts, mulligan.MinimumCalls(int(v.(float64))))
		case "slow_call_duration":
			opts = append(opts, mulligan.SlowCallDuration(secs(v.(float64))))
		case "slow_call_rate_threshold":
			opts = append(opts, mulligan.SlowCallRateThreshold(v.(float64)))
		case "reset_timeout_multiplier":
			opts = append(opts, mulligan.ResetTimeoutMultiplier(v.(float64)))
		case "max_reset_timeout":
			opts = append(opts, mulligan.MaxResetTimeout(secs(v.(float64))))
		case "permit_timeout":
			opts = append(opts, mulligan.PermitTimeout(secs(v.(float64))))
		default:
			panic("unknown breaker option " + k)
		}
	}
	return opts
}

// Breaker event scripts: the same states, times and counters as C.
func TestBreakerVectors(t *testing.T) {
	var f struct {
		Cases []struct {
			Name    string
			Options map[string]any
			Steps   []struct {
				At       float64
				Op       string
				Permit   string
				Result   string
				Duration *float64
				Expect   map[string]any
			}
		}
	}
	loadVectors(t, "breaker.json", &f)
	for _, c := range f.Cases {
		clk, _ := mulligan.NewFakeClock()
		b, err := mulligan.NewCircuitBreaker(breakerOptions(clk, c.Options)...)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		permits := map[string]mulligan.Permit{}
		now := 0.0
		for i, s := range c.Steps {
			if s.At > now {
				_ = clk.Advance(secs(s.At - now))
				now = s.At
			}
			switch s.Op {
			case "acquire":
				p, err := b.Acquire()
				if err != nil && !errors.Is(err, mulligan.ErrCircuitOpen) {
					t.Fatalf("%s step %d: %v", c.Name, i, err)
				}
				permits[s.Permit] = p
			case "record":
				res := map[string]mulligan.CallResult{"success": mulligan.ResultSuccess, "failure": mulligan.ResultFailure, "ignored": mulligan.ResultIgnored}[s.Result]
				d := time.Duration(0)
				if s.Duration != nil {
					d = secs(*s.Duration)
				}
				if err := b.Record(permits[s.Permit], res, d); err != nil {
					t.Fatalf("%s step %d: %v", c.Name, i, err)
				}
			case "force_open":
				_ = b.ForceOpen()
			case "disable":
				_ = b.Disable()
			case "metrics_only":
				_ = b.MetricsOnly()
			case "reset":
				_ = b.Reset()
			}
			counts, _ := b.Counts()
			for k, v := range s.Expect {
				var got, want any
				switch k {
				case "admitted":
					got, want = permits[s.Permit].Admitted, v
				case "state":
					got, want = b.State(), states[v.(string)]
					if s.Op == "acquire" && permits[s.Permit].State != states[v.(string)] {
						t.Errorf("%s step %d: permit state %v, want %v", c.Name, i, permits[s.Permit].State, v)
					}
				case "retry_in":
					r := b.TimeUntilProbe()
					if s.Op == "acquire" {
						r = permits[s.Permit].RetryIn
					}
					if v == nil {
						got, want = r, time.Duration(math.MaxInt64)
					} else if math.Abs(float64(r-secs(v.(float64)))) <= 1e3 {
						continue
					} else {
						got, want = r, secs(v.(float64))
					}
				case "consecutive_failures":
					got, want = counts.ConsecutiveFailures, int(v.(float64))
				case "successes":
					got, want = counts.Successes, uint64(v.(float64))
				case "failures":
					got, want = counts.Failures, uint64(v.(float64))
				case "ignored":
					got, want = counts.Ignored, uint64(v.(float64))
				case "rejected":
					got, want = counts.Rejected, uint64(v.(float64))
				default:
					t.Fatalf("unknown expectation %s", k)
				}
				if got != want {
					t.Errorf("%s step %d (%s at %v s): %s = %v, want %v", c.Name, i, s.Op, s.At, k, got, want)
				}
			}
		}
		_ = b.Close()
	}
	t.Logf("%d breaker vectors", len(f.Cases))
}

var reasons = map[string]mulligan.StopReason{"succeeded": mulligan.StopSucceeded, "terminal": mulligan.StopTerminal,
	"attempts_exhausted": mulligan.StopAttemptsExhausted, "deadline": mulligan.StopDeadline,
	"retry_after_too_long": mulligan.StopRetryAfterTooLong, "not_replay_safe": mulligan.StopNotReplaySafe,
	"circuit_open": mulligan.StopCircuitOpen}

func policyOptions(clk *mulligan.FakeClock, o map[string]any) []mulligan.Option {
	opts := []mulligan.Option{mulligan.WithClock(clk), mulligan.WithJitter(mulligan.JitterNone)}
	for k, v := range o {
		switch k {
		case "max_attempts":
			opts = append(opts, mulligan.WithMaxAttempts(int(v.(float64))))
		case "backoff":
			opts = append(opts, mulligan.WithBackoff(backoffs[v.(string)]))
		case "jitter":
			opts = append(opts, mulligan.WithJitter(jitters[v.(string)]))
		case "base_delay":
			opts = append(opts, mulligan.WithBaseDelay(secs(v.(float64))))
		case "multiplier":
			opts = append(opts, mulligan.WithMultiplier(v.(float64)))
		case "max_delay":
			opts = append(opts, mulligan.WithMaxDelay(secs(v.(float64))))
		case "deadline":
			opts = append(opts, mulligan.WithDeadline(secs(v.(float64))))
		case "retry_after_max":
			opts = append(opts, mulligan.WithRetryAfterMax(secs(v.(float64))))
		case "retry_after_clamp":
			opts = append(opts, mulligan.WithRetryAfterClamp(v.(bool)))
		default:
			panic("unknown policy option " + k)
		}
	}
	return opts
}

var kinds = map[string]mulligan.ErrorKind{"retryable": mulligan.ErrorRetryable, "terminal": mulligan.ErrorTerminal,
	"connection_refused": mulligan.ErrorConnectionRefused, "connection_reset": mulligan.ErrorConnectionReset,
	"tls_error": mulligan.ErrorTLS, "timeout": mulligan.ErrorTimeout, "dns_failure": mulligan.ErrorDNSFailure}

// Retry session scripts (deadline.json) through the Go step API.
func TestDeadlineVectors(t *testing.T) {
	var f struct {
		Cases []struct {
			Name       string
			Policy     map[string]any
			ReplaySafe *bool `json:"replay_safe"`
			Steps      []struct {
				At      float64
				Outcome struct {
					Error      string
					HTTPStatus int      `json:"http_status"`
					RetryAfter *float64 `json:"retry_after"`
				}
				Expect struct {
					Action, Reason string
					Delay          *float64
					FromRetryAfter *bool `json:"from_retry_after"`
				}
			}
		}
	}
	loadVectors(t, "deadline.json", &f)
	ran := 0
	for _, c := range f.Cases {
		clk, _ := mulligan.NewFakeClock()
		p, err := mulligan.NewPolicy(policyOptions(clk, c.Policy)...)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		call, err := p.BeginWith(mulligan.CallOptions{NotReplaySafe: c.ReplaySafe != nil && !*c.ReplaySafe})
		if err != nil {
			t.Fatal(err)
		}
		now := 0.0
		for i, s := range c.Steps {
			if s.At > now {
				_ = clk.Advance(secs(s.At - now))
				now = s.At
			}
			o := mulligan.SuccessOutcome()
			if s.Outcome.Error != "" {
				k, ok := kinds[s.Outcome.Error]
				if !ok {
					t.Fatalf("unknown error %s", s.Outcome.Error)
				}
				o.Kind = k
			}
			o.HTTPStatus = s.Outcome.HTTPStatus
			if s.Outcome.RetryAfter != nil {
				o.RetryAfter = secs(*s.Outcome.RetryAfter)
			}
			d, err := call.Record(o)
			if err != nil {
				t.Fatalf("%s step %d: %v", c.Name, i, err)
			}
			if (s.Expect.Action == "retry") != d.Retry {
				t.Errorf("%s step %d: decision %+v, want %s", c.Name, i, d, s.Expect.Action)
			}
			if s.Expect.Delay != nil && d.Delay != secs(*s.Expect.Delay) {
				t.Errorf("%s step %d: delay %v, want %v s", c.Name, i, d.Delay, *s.Expect.Delay)
			}
			if s.Expect.Reason != "" && d.Reason != reasons[s.Expect.Reason] {
				t.Errorf("%s step %d: reason %v, want %s", c.Name, i, d.Reason, s.Expect.Reason)
			}
			if s.Expect.FromRetryAfter != nil && d.FromRetryAfter != *s.Expect.FromRetryAfter {
				t.Errorf("%s step %d: from_retry_after %v", c.Name, i, d.FromRetryAfter)
			}
		}
		call.Close()
		p.Close()
		ran++
	}
	t.Logf("%d deadline vectors", ran)
}

// Scripted logical calls through Do (pipeline.json), on a fake clock.
func TestPipelineVectors(t *testing.T) {
	var f struct {
		Cases []struct {
			Name    string
			Policy  map[string]any
			Breaker map[string]any
			Calls   []struct {
				Advance float64
				Script  []json.RawMessage
				Expect  struct {
					Attempts     int
					Delays       []float64
					StopReason   string `json:"stop_reason"`
					Refused      bool
					BreakerState string `json:"breaker_state"`
				}
			}
			ExpectMetrics map[string]uint64 `json:"expect_metrics"`
		}
	}
	loadVectors(t, "pipeline.json", &f)
	_ = mulligan.ResetMetrics()
	for ci, c := range f.Cases {
		clk, _ := mulligan.NewFakeClock()
		name := "go_pipeline_vector_" + string(rune('a'+ci))
		var delays []time.Duration
		opts := append(policyOptions(clk, c.Policy), mulligan.WithName(name),
			mulligan.WithOnRetry(func(e mulligan.RetryEvent) { delays = append(delays, e.Delay) }))
		var b *mulligan.CircuitBreaker
		if c.Breaker != nil {
			var err error
			b, err = mulligan.NewCircuitBreaker(breakerOptions(clk, c.Breaker)...)
			if err != nil {
				t.Fatal(err)
			}
			opts = append(opts, mulligan.WithBreaker(b))
		}
		p, err := mulligan.NewPolicy(opts...)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		for k, call := range c.Calls {
			_ = clk.Advance(secs(call.Advance))
			delays = nil
			n := 0
			err := mulligan.Do(context.Background(), p, func(context.Context) error {
				var step struct {
					Outcome    string
					RetryAfter *float64 `json:"retry_after"`
				}
				raw := call.Script[n]
				n++
				if json.Unmarshal(raw, &step.Outcome) != nil {
					_ = json.Unmarshal(raw, &step)
				}
				var e error
				switch step.Outcome {
				case "success":
					return nil
				case "retryable":
					e = errors.New("retryable failure")
				case "terminal":
					e = mulligan.Permanent(errors.New("terminal failure"))
				}
				if step.RetryAfter != nil {
					e = mulligan.RetryAfter(e, secs(*step.RetryAfter))
				}
				return e
			})
			ex := call.Expect
			reason := mulligan.StopSucceeded
			var me *mulligan.Error
			if errors.As(err, &me) {
				reason = me.Reason
			} else if err != nil {
				t.Fatalf("%s call %d: %v", c.Name, k, err)
			}
			if reason != reasons[ex.StopReason] {
				t.Errorf("%s call %d: stop %v, want %s (%v)", c.Name, k, reason, ex.StopReason, err)
			}
			if n != ex.Attempts {
				t.Errorf("%s call %d: %d attempts, want %d", c.Name, k, n, ex.Attempts)
			}
			if errors.Is(err, mulligan.ErrCircuitOpen) != ex.Refused {
				t.Errorf("%s call %d: refused %v, want %v", c.Name, k, err, ex.Refused)
			}
			if len(delays) != len(ex.Delays) {
				t.Errorf("%s call %d: delays %v, want %v", c.Name, k, delays, ex.Delays)
			} else {
				for i := range delays {
					if delays[i] != secs(ex.Delays[i]) {
						t.Errorf("%s call %d: delay %d %v, want %v", c.Name, k, i, delays[i], ex.Delays[i])
					}
				}
			}
			if ex.BreakerState != "" && b.State() != states[ex.BreakerState] {
				t.Errorf("%s call %d: breaker %v, want %s", c.Name, k, b.State(), ex.BreakerState)
			}
		}
		m, err := mulligan.Metrics(name)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]uint64{"calls": m.Calls, "attempts": m.Attempts, "retries": m.Retries,
			"successes": m.Successes, "failures": m.Failures, "short_circuits": m.ShortCircuits, "circuit_opens": m.CircuitOpens,
			"fallbacks": m.Fallbacks}
		for k, v := range c.ExpectMetrics {
			if g, ok := got[k]; !ok || g != v {
				t.Errorf("%s: metric %s = %d, want %d", c.Name, k, g, v)
			}
		}
		p.Close()
	}
	t.Logf("%d pipeline vectors", len(f.Cases))
}
