package mulligan_test

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

// startRedis runs redis-server ($MULLIGAN_REDIS_SERVER, else from PATH) on a
// free loopback port without persistence, stopped by its PID at cleanup. A
// server that cannot start skips the test, unless $MULLIGAN_REDIS_SERVER
// names one (scripts/test.sh sets it): then it fails.
func startRedis(t *testing.T) string {
	t.Helper()
	binary, named := os.LookupEnv("MULLIGAN_REDIS_SERVER")
	if !named || binary == "" {
		binary, named = "redis-server", false
	}
	fail := t.Skipf
	if named {
		fail = t.Fatalf
	}
	for try := 0; try < 5; try++ {
		port := closedPort(t)
		cmd := exec.Command(binary, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "",
			"--appendonly", "no", "--dir", t.TempDir(), "--loglevel", "warning")
		if err := cmd.Start(); err != nil {
			fail("cannot start %s: %v", binary, err)
			return ""
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		for waited := 0; waited < 10000; waited += 20 {
			if c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port)); err == nil {
				_ = c.Close()
				t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
				return "redis://127.0.0.1:" + strconv.Itoa(port) + "/0"
			}
			select {
			case <-exited: // the port was taken: try another
				waited = 10000
			case <-time.After(20 * time.Millisecond):
			}
		}
		_ = cmd.Process.Kill()
		<-exited
	}
	fail("%s did not start", binary)
	return ""
}

func newFakeClock(t *testing.T) *mulligan.FakeClock {
	t.Helper()
	clk, err := mulligan.NewFakeClock()
	if err != nil {
		t.Fatal(err)
	}
	return clk
}

func openState(t *testing.T, url string, clk *mulligan.FakeClock) *mulligan.State {
	t.Helper()
	s, err := mulligan.OpenState(url, mulligan.StateOptions{Prefix: "gotest", Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// waitFor polls cond every 2 ms for at most effectTimeout: the pub/sub
// delivery between two connections is the only thing waited on.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(effectTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// Two states stand for two processes: a trip through one opens the other's
// breaker, which applied exactly one remote transition.
func TestStateSharesABreakerTrip(t *testing.T) {
	url := startRedis(t)
	one, two := openState(t, url, nil), openState(t, url, nil)
	h, err := one.Health()
	if err != nil || !h.Reachable || h.Endpoint != url || h.LastError != "" {
		t.Fatalf("health = %+v, %v", h, err)
	}
	newBreaker := func() *mulligan.CircuitBreaker {
		b, err := mulligan.NewCircuitBreaker(mulligan.BreakerName("payments"), mulligan.FailureThreshold(1),
			mulligan.ResetTimeout(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = b.Close() })
		return b
	}
	a, b := newBreaker(), newBreaker()
	if err := a.Share(one); err != nil {
		t.Fatal(err)
	}
	if err := b.Share(two); err != nil {
		t.Fatal(err)
	}
	if err := b.Share(two); !errors.Is(err, mulligan.ErrInvalidArgument) || !strings.Contains(err.Error(), "already shared") {
		t.Fatalf("second Share = %v", err)
	}
	waitFor(t, "both subscribed", func() bool { return a.Sharing().Subscribed && b.Sharing().Subscribed })

	p, err := a.Acquire()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Record(p, mulligan.ResultFailure, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if a.State() != mulligan.StateOpen {
		t.Fatalf("a = %v", a.State())
	}
	waitFor(t, "b open", func() bool { return b.State() == mulligan.StateOpen })
	waitFor(t, "a published", func() bool { return a.Sharing().Published == 1 })
	if got := b.Sharing(); got.Applied != 1 || got.Published != 0 || !got.Shared {
		t.Fatalf("b sharing = %+v", got)
	}
	if got := a.Sharing(); got.Applied != 0 || got.Epoch != 1 {
		t.Fatalf("a sharing = %+v", got)
	}
}

// Two limiters of one name share one GCRA bucket: rate 1/s, burst 3 admits
// 3 calls between them at one instant; the 4th waits exactly 1 s (T = 1 s,
// tau = 2 s, TAT 3 s: the next slot is at TAT - tau).
func TestStateSharesARateLimiterBucket(t *testing.T) {
	url := startRedis(t)
	clk := newFakeClock(t)
	opts := mulligan.RateLimiterOptions{Name: "search", Rate: 1, Burst: 3}
	a, err := mulligan.NewSharedRateLimiter(openState(t, url, clk), opts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := mulligan.NewSharedRateLimiter(openState(t, url, clk), opts)
	if err != nil {
		t.Fatal(err)
	}
	now := clk.Now()
	for i, l := range []*mulligan.RateLimiter{a, b, a} {
		if w, err := l.Acquire("", now, 0); err != nil || w != 0 {
			t.Fatalf("acquire %d = %v, %v", i+1, w, err)
		}
	}
	_, err = b.Acquire("", now, 0)
	var e *mulligan.Error
	if !errors.As(err, &e) || !errors.Is(err, mulligan.ErrRateLimited) || e.RetryIn != time.Second {
		t.Fatalf("4th acquire = %v (%+v)", err, e)
	}
}

// Two stores on one server share records; a store on a dead server fails
// closed with ErrStateUnavailable and never shows the password.
func TestStateSharesIdempotencyRecords(t *testing.T) {
	url := startRedis(t)
	clk := newFakeClock(t)
	a, err := mulligan.NewSharedIdempotencyStore(openState(t, url, clk))
	if err != nil {
		t.Fatal(err)
	}
	b, err := mulligan.NewSharedIdempotencyStore(openState(t, url, clk))
	if err != nil {
		t.Fatal(err)
	}
	fp := []byte("POST /orders")
	r1, err := a.Reserve("alice", "order-1", fp)
	if err != nil || r1.State != mulligan.IdempotencyReserved {
		t.Fatalf("reserve = %+v, %v", r1, err)
	}
	r2, err := b.Reserve("alice", "order-1", fp)
	if err != nil || r2.State != mulligan.IdempotencyInFlight || r2.RetryAfter != time.Second {
		t.Fatalf("reserve on b = %+v, %v", r2, err)
	}
	if err := r1.Complete(201, map[string][]string{"Content-Type": {"application/json"}}, []byte(`{"id":7}`)); err != nil {
		t.Fatal(err)
	}
	r3, err := b.Reserve("alice", "order-1", fp)
	if err != nil || r3.State != mulligan.IdempotencyReplay || r3.Status != 201 || string(r3.Body) != `{"id":7}` ||
		r3.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("replay = %+v, %v", r3, err)
	}

	dead := "redis://admin:hunter2@127.0.0.1:" + strconv.Itoa(closedPort(t)) + "/0"
	ds, err := mulligan.OpenState(dead, mulligan.StateOptions{ConnectTimeout: 50 * time.Millisecond,
		CommandTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer ds.Close()
	if h, _ := ds.Health(); h.Reachable || strings.Contains(h.Endpoint, "hunter2") || strings.Contains(h.LastError, "hunter2") {
		t.Fatalf("dead health = %+v", h)
	}
	store, err := mulligan.NewSharedIdempotencyStore(ds)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	_, err = store.Reserve("", "k-1", nil)
	if !errors.Is(err, mulligan.ErrStateUnavailable) || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("reserve on a dead server = %v", err)
	}
}

func TestStateBadInput(t *testing.T) {
	url := startRedis(t)
	for _, c := range []struct {
		url  string
		o    mulligan.StateOptions
		want string
	}{
		{"http://u:hunter2@127.0.0.1:6379", mulligan.StateOptions{}, "url"},
		{"rediss://127.0.0.1:6379", mulligan.StateOptions{}, "TLS"},
		{url, mulligan.StateOptions{Prefix: "a:b"}, "prefix"},
		{url, mulligan.StateOptions{CommandTimeout: -time.Second}, "command_timeout_ms"},
		{url, mulligan.StateOptions{ConnectTimeout: 2 * time.Hour}, "connect_timeout_ms"},
	} {
		s, err := mulligan.OpenState(c.url, c.o)
		if s != nil || !errors.Is(err, mulligan.ErrInvalidArgument) || !strings.Contains(err.Error(), c.want) ||
			strings.Contains(err.Error(), "hunter2") {
			t.Errorf("OpenState(%q, %+v) = %v, want an error naming %q", c.url, c.o, err, c.want)
		}
	}
	var nilState *mulligan.State
	if _, err := nilState.Health(); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Errorf("nil Health = %v", err)
	}
	s := openState(t, url, nil)
	if _, err := mulligan.NewSharedRateLimiter(s, mulligan.RateLimiterOptions{Name: "", Rate: 1, Burst: 1}); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Errorf("unnamed shared limiter = %v", err)
	}
	if _, err := mulligan.NewSharedRateLimiter(nilState, mulligan.RateLimiterOptions{Name: "x", Rate: 1, Burst: 1}); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Errorf("limiter on a nil state = %v", err)
	}
	braced, err := mulligan.NewCircuitBreaker(mulligan.BreakerName("pay{ments}"))
	if err != nil {
		t.Fatal(err)
	}
	defer braced.Close()
	if err := braced.Share(s); !errors.Is(err, mulligan.ErrInvalidArgument) || !strings.Contains(err.Error(), "'{'") {
		t.Errorf("braced Share = %v", err)
	}
	fake := newFakeClock(t)
	clocked, err := mulligan.NewCircuitBreaker(mulligan.BreakerName("clocked"), mulligan.BreakerClock(fake))
	if err != nil {
		t.Fatal(err)
	}
	defer clocked.Close()
	if err := clocked.Share(s); !errors.Is(err, mulligan.ErrInvalidArgument) || !strings.Contains(err.Error(), "same clock") {
		t.Errorf("Share across clocks = %v", err)
	}
	_ = s.Close()
	if err := s.Close(); err != nil { // idempotent
		t.Error(err)
	}
	if _, err := s.Health(); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Errorf("closed Health = %v", err)
	}
}
