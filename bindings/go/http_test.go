package mulligan_test

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mulligan "github.com/mulligan-dev/mulligan/bindings/go"
)

// startNginx runs tests/nginx/nginx_server.py (the C tests' launcher and
// config) on a free loopback port; it stops when its stdin closes.
func startNginx(t *testing.T) string {
	t.Helper()
	python := os.Getenv("PYTHON")
	if python == "" {
		python = "python3"
	}
	dir := t.TempDir()
	portFile := filepath.Join(dir, "port")
	cmd := exec.Command(python, filepath.Join("..", "..", "tests", "nginx", "nginx_server.py"), "serve",
		"--port-file", portFile, "--workdir", filepath.Join(dir, "work"))
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Skipf("cannot run the nginx launcher: %v", err)
	}
	t.Cleanup(func() { _ = stdin.Close(); _ = cmd.Wait() })
	for waited := 0; waited < 15000; waited += 50 {
		if b, err := os.ReadFile(portFile); err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && p > 0 {
				return "http://127.0.0.1:" + strconv.Itoa(p)
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Skip("nginx did not start within 15 s")
	return ""
}

func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	return p
}

func TestHTTPClientAgainstNginx(t *testing.T) {
	base := startNginx(t)
	c, err := mulligan.NewHTTPClient(mulligan.HTTPRetry(mulligan.WithBaseDelay(0), mulligan.WithMaxAttempts(3)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	r, err := c.Request(ctx, "GET", base+"/ok", nil, nil, "")
	if err != nil || r.Status != 200 || r.Attempts != 1 || string(r.Body) != "ok\n" || r.StopReason != mulligan.StopSucceeded {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = c.Request(ctx, "GET", base+"/down", nil, nil, "")
	if err != nil || r.Status != 503 || r.Attempts != 3 || r.StopReason != mulligan.StopAttemptsExhausted {
		t.Fatalf("%+v %v", r, err)
	}
	// a POST without a key is not retried once sent; with a key it is, the same key each time
	r, err = c.Request(ctx, "POST", base+"/down", nil, []byte("x"), "")
	if err != nil || r.Attempts != 1 {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = c.Request(ctx, "POST", base+"/down", map[string][]string{"Content-Type": {"text/plain"}}, []byte("x"), "key-123")
	if err != nil || r.Attempts != 3 || r.IdempotencyKey != "key-123" {
		t.Fatalf("%+v %v", r, err)
	}
	r, err = c.Request(ctx, "GET", "http://127.0.0.1:"+strconv.Itoa(closedPort(t))+"/", nil, nil, "")
	if !errors.Is(err, mulligan.ErrTransport) || r == nil || r.Status != 0 || r.ErrorKind != mulligan.ErrorConnectionRefused {
		t.Fatalf("%+v %v", r, err)
	}
	if _, err := c.Request(ctx, "GET", "not a url", nil, nil, ""); err == nil {
		t.Fatal("a malformed URL must fail")
	}
	_ = c.Close()
	if _, err := c.Request(ctx, "GET", base+"/ok", nil, nil, ""); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatal(err)
	}
}

// The per-origin A6 budget, worked out by hand: 10 tokens, ratio 0.5, 3
// attempts against /down. Call 1 takes 10 -> 7 (3 attempts); call 2 7 -> 5,
// its second retry refused (5 > 5 is false); call 3 5 -> 4, refused at once.
// Without a budget every call makes 3.
func TestHTTPClientRetryBudget(t *testing.T) {
	base := startNginx(t)
	ctx := context.Background()
	c, err := mulligan.NewHTTPClient(mulligan.HTTPRetry(mulligan.WithBaseDelay(0), mulligan.WithMaxAttempts(3)),
		mulligan.HTTPTokenBucketBudget(10, 0.5))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	want := []int{3, 2, 1}
	budget := mulligan.StopReason(8) // MULLIGAN_STOP_BUDGET
	reasons := []mulligan.StopReason{mulligan.StopAttemptsExhausted, budget, budget}
	for i := range want {
		r, err := c.Request(ctx, "GET", base+"/down", nil, nil, "")
		if err != nil || r.Status != 503 || r.Attempts != want[i] || r.StopReason != reasons[i] {
			t.Fatalf("call %d: %+v %v", i+1, r, err)
		}
	}
	off, err := mulligan.NewHTTPClient(mulligan.HTTPRetry(mulligan.WithBaseDelay(0), mulligan.WithMaxAttempts(3)),
		mulligan.HTTPNoRetryBudget())
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	for i := 0; i < 4; i++ {
		r, err := off.Request(ctx, "GET", base+"/down", nil, nil, "")
		if err != nil || r.Attempts != 3 {
			t.Fatalf("call %d: %+v %v", i+1, r, err)
		}
	}
	if _, err := mulligan.NewHTTPClient(mulligan.HTTPTokenBucketBudget(10, -1)); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatalf("a negative ratio must be refused: %v", err)
	}
}

// TestHTTPClientHedge: nginx's /hedge answers the first request of an id
// after 1 s and the next at once, so the hedge sent 50 ms later wins; a POST
// without a key is sent once; bad hedging options are refused.
func TestHTTPClientHedge(t *testing.T) {
	base := startNginx(t)
	ctx := context.Background()
	c, err := mulligan.NewHTTPClient(mulligan.HTTPHedge(2, 50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := c.Request(ctx, "GET", base+"/hedge?id=go-get&ms=1000", nil, nil, "")
	if err != nil || r.Status != 200 || string(r.Body) != "hedge 1 of go-get\n" || r.Attempts != 2 {
		t.Fatalf("hedged GET: %+v %v", r, err)
	}
	r, err = c.Request(ctx, "POST", base+"/hedge?id=go-post&ms=200", nil, []byte("x"), "")
	if err != nil || string(r.Body) != "hedge 0 of go-post\n" || r.Attempts != 1 {
		t.Fatalf("unkeyed POST: %+v %v", r, err)
	}
	if _, err := mulligan.NewHTTPClient(mulligan.HTTPHedge(1, 0)); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatalf("max_attempts 1 must be refused: %v", err)
	}
	if _, err := mulligan.NewHTTPClient(mulligan.HTTPHedgeQuantile(1.5, 100, 20)); !errors.Is(err, mulligan.ErrInvalidArgument) {
		t.Fatalf("quantile 1.5 must be refused: %v", err)
	}
}
