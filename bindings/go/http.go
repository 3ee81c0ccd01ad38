package mulligan

/*
#include <stdlib.h>
#include <mulligan.h>

static int go_http_request(mulligan_http_client *c, const char *method, const char *url,
                           char **headers, size_t n, const void *body, size_t len,
                           const char *key, mulligan_http_response **out) {
  return mulligan_http_request(c, method, url, (const char *const *)headers, n, body, len, key, out);
}
*/
import "C"

import (
	"context"
	"net/http"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// HTTPOption configures an HTTPClient (NewHTTPClient).
type HTTPOption func(*httpConfig) error

type httpConfig struct {
	o     *C.mulligan_http_options
	retry []Option
}

// HTTPRetry sets the retry policy of every request (the Option functions of
// NewPolicy that concern retries: attempts, backoff, deadline, statuses...).
func HTTPRetry(opts ...Option) HTTPOption {
	return func(c *httpConfig) error { c.retry = append(c.retry, opts...); return nil }
}

// HTTPConnectTimeout bounds connecting (default 10s).
func HTTPConnectTimeout(d time.Duration) HTTPOption {
	return func(c *httpConfig) error {
		return cerr("NewHTTPClient: connect timeout", C.mulligan_http_options_set_connect_timeout_ms(c.o, C.int64_t(d.Milliseconds())))
	}
}

// HTTPAttemptTimeout bounds each attempt when the policy sets none (default 30s).
func HTTPAttemptTimeout(d time.Duration) HTTPOption {
	return func(c *httpConfig) error {
		return cerr("NewHTTPClient: attempt timeout", C.mulligan_http_options_set_attempt_timeout_ms(c.o, C.int64_t(d.Milliseconds())))
	}
}

// HTTPUserAgent sets the User-Agent (default "mulligan").
func HTTPUserAgent(ua string) HTTPOption {
	return func(c *httpConfig) error {
		cs := C.CString(ua)
		defer C.free(unsafe.Pointer(cs))
		return cerr("NewHTTPClient: user agent", C.mulligan_http_options_set_user_agent(c.o, cs))
	}
}

// HTTPTokenBucketBudget sets the per-origin retry budget: a gRPC A6 token
// bucket of maxTokens (0 < maxTokens <= 1000) and tokenRatio (>= 0.001). By
// default every origin already has one of 100 tokens, ratio 0.5: a failed
// attempt takes a token, a success adds tokenRatio, and retries stop while
// half the tokens or fewer are left (the last failure is then the result,
// with stop reason budget). (Since 0.4.)
func HTTPTokenBucketBudget(maxTokens, tokenRatio float64) HTTPOption {
	return func(c *httpConfig) error {
		return cerr("NewHTTPClient: retry budget",
			C.mulligan_http_options_set_token_bucket_budget(c.o, C.double(maxTokens), C.double(tokenRatio)))
	}
}

// HTTPNoRetryBudget turns the per-origin retry budgets off: every request
// retries as its policy says. (Since 0.4.)
func HTTPNoRetryBudget() HTTPOption {
	return func(c *httpConfig) error {
		return cerr("NewHTTPClient: retry budget", C.mulligan_http_options_disable_retry_budget(c.o))
	}
}

// HTTPHedge hedges the client's replay-safe requests (GET, HEAD, OPTIONS,
// TRACE, PUT, DELETE, or any request with an idempotency key, the same key on
// every copy): up to maxAttempts copies (>= 2; above 5 is 5, gRPC A6), copy
// k+1 starting delay (>= 0, whole milliseconds) after copy k, or at once
// after a retryable failure. The copies run on one libcurl multi handle in
// the request's C call (no thread per copy); the first acceptable response
// wins and the others are aborted, counted cancelled, neither success nor
// failure. A POST without a key is sent once. HTTPResponse.Attempts counts
// the copies started. (Since 0.6; mulligan_http_options_set_hedging.)
func HTTPHedge(maxAttempts int, delay time.Duration) HTTPOption {
	return func(c *httpConfig) error {
		n, err := hedgingInt("NewHTTPClient", "max_attempts", capAttempts(maxAttempts))
		if err != nil {
			return err
		}
		return cerr("NewHTTPClient: hedging",
			C.mulligan_http_options_set_hedging(c.o, n, C.int64_t(delay.Milliseconds())))
	}
}

// HTTPHedgeQuantile makes the hedging delay the quantile q (0 < q <= 1, e.g.
// 0.95) of the latencies of the last window (1 to 100000) winning copies,
// once minSamples (1 to window) are known; the HTTPHedge delay applies until
// then. Turns hedging on (2 copies) if HTTPHedge did not. (Since 0.6;
// mulligan_http_options_set_hedging_quantile.)
func HTTPHedgeQuantile(q float64, window, minSamples int) HTTPOption {
	return func(c *httpConfig) error {
		w, err := hedgingInt("NewHTTPClient", "quantile_window", window)
		if err != nil {
			return err
		}
		m, err := hedgingInt("NewHTTPClient", "quantile_min_samples", minSamples)
		if err != nil {
			return err
		}
		return cerr("NewHTTPClient: hedging", C.mulligan_http_options_set_hedging_quantile(c.o, C.double(q), w, m))
	}
}

// HTTPClient is the engine's libcurl client (mulligan_http.h): idempotent
// methods retried on 408/429/500/502/503/504 and transport errors,
// Retry-After honoured, POST/PATCH retried only with an idempotency key.
//
// Requests block their goroutine inside C until the retry loop stops; ctx
// is checked before the request starts but cannot interrupt it (bound it
// with the policy's deadline and attempt timeout). Close must not run while
// a request does; it waits for requests in flight. Safe for concurrent use
// by many goroutines.
type HTTPClient struct {
	mu  sync.RWMutex
	ptr *C.mulligan_http_client
}

// NewHTTPClient creates a client.
func NewHTTPClient(opts ...HTTPOption) (*HTTPClient, error) {
	defer lockThread()()
	c := &httpConfig{}
	if err := cerr("NewHTTPClient", C.mulligan_http_options_create(&c.o)); err != nil {
		return nil, err
	}
	defer C.mulligan_http_options_destroy(c.o)
	for _, o := range opts {
		if o == nil {
			return nil, invalid("NewHTTPClient", "nil option")
		}
		if err := o(c); err != nil {
			return nil, err
		}
	}
	pc := &policyConfig{}
	if err := cerr("NewHTTPClient", C.mulligan_retry_options_create(&pc.retry)); err != nil {
		return nil, err
	}
	defer C.mulligan_retry_options_destroy(pc.retry)
	if err := cerr("NewHTTPClient", C.mulligan_pipeline_options_create(&pc.pipe)); err != nil {
		return nil, err
	}
	defer C.mulligan_pipeline_options_destroy(pc.pipe)
	for _, o := range c.retry {
		if o == nil {
			return nil, invalid("NewHTTPClient", "nil option")
		}
		if err := o(pc); err != nil {
			return nil, err
		}
	}
	var pol *C.mulligan_retry_policy
	if err := cerr("NewHTTPClient", C.mulligan_retry_policy_create(&pol, pc.retry)); err != nil {
		return nil, err
	}
	defer C.mulligan_retry_policy_destroy(pol)
	var ptr *C.mulligan_http_client
	if err := cerr("NewHTTPClient", C.mulligan_http_client_create_v2(&ptr, pol, c.o)); err != nil {
		return nil, err
	}
	cl := &HTTPClient{ptr: ptr}
	runtime.SetFinalizer(cl, func(cl *HTTPClient) { _ = cl.Close() })
	return cl, nil
}

// Close frees the client after the requests in flight. Nil-safe; idempotent.
func (c *HTTPClient) Close() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ptr != nil {
		C.mulligan_http_client_destroy(c.ptr)
		c.ptr = nil
	}
	return nil
}

// HTTPResponse is the last attempt's response and what the retry loop did.
type HTTPResponse struct {
	// Status is the last attempt's status; 0 when it got no response.
	Status int
	Header http.Header
	Body   []byte
	// Attempts made, and the time from the first attempt's start to the end.
	Attempts int
	Elapsed  time.Duration
	// ErrorKind is the last attempt's failure kind (ErrorNone for a response).
	ErrorKind  ErrorKind
	StopReason StopReason
	// IdempotencyKey is the key sent with every attempt, or "".
	IdempotencyKey string
}

// Request sends a request, retried by the client's policy. A response that
// arrived is not an error whatever its status (a 503 after the retries gave
// up comes back with StopReason StopAttemptsExhausted). When the last
// attempt got no response, the error is an *Error (ErrTransport, ErrTimeout,
// ErrDeadlineExceeded) and the response still says what happened.
func (c *HTTPClient) Request(ctx context.Context, method, url string, header http.Header, body []byte, idempotencyKey string) (*HTTPResponse, error) {
	if c == nil {
		return nil, invalid("HTTPClient.Request", "nil client")
	}
	if ctx == nil {
		return nil, invalid("HTTPClient.Request", "nil context")
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err, nil, 0)
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.ptr == nil {
		return nil, invalid("HTTPClient.Request", "the client is closed")
	}
	var free []unsafe.Pointer
	defer func() {
		for _, p := range free {
			C.free(p)
		}
	}()
	cstr := func(s string) *C.char {
		p := C.CString(s)
		free = append(free, unsafe.Pointer(p))
		return p
	}
	var lines []string
	for k, vs := range header {
		for _, v := range vs {
			lines = append(lines, k+": "+v)
		}
	}
	var hdrs **C.char
	if len(lines) > 0 {
		hdrs = (**C.char)(C.malloc(C.size_t(len(lines)) * C.size_t(unsafe.Sizeof(uintptr(0)))))
		free = append(free, unsafe.Pointer(hdrs))
		hs := unsafe.Slice(hdrs, len(lines))
		for i, l := range lines {
			hs[i] = cstr(l)
		}
	}
	var cbody unsafe.Pointer
	if len(body) > 0 {
		cbody = C.CBytes(body)
		free = append(free, cbody)
	}
	var key *C.char
	if idempotencyKey != "" {
		key = cstr(idempotencyKey)
	}
	defer lockThread()()
	var resp *C.mulligan_http_response
	rc := C.go_http_request(c.ptr, cstr(method), cstr(url), hdrs, C.size_t(len(lines)), cbody, C.size_t(len(body)), key, &resp)
	err := cerr("HTTPClient.Request", rc)
	if resp == nil {
		return nil, err
	}
	defer C.mulligan_http_response_destroy(resp)
	out := &HTTPResponse{
		Status:     int(C.mulligan_http_response_status(resp)),
		Header:     http.Header{},
		Attempts:   int(C.mulligan_http_response_attempts(resp)),
		Elapsed:    durOf(C.mulligan_http_response_elapsed_ms(resp)),
		ErrorKind:  ErrorKind(C.mulligan_http_response_error_kind(resp)),
		StopReason: StopReason(C.mulligan_http_response_stop_reason(resp)),
	}
	var n C.size_t
	if b := C.mulligan_http_response_body(resp, &n); b != nil && n > 0 {
		out.Body = C.GoBytes(unsafe.Pointer(b), C.int(n))
	}
	for i := C.size_t(0); i < C.mulligan_http_response_header_count(resp); i++ {
		var name, value *C.char
		if C.mulligan_http_response_header_at(resp, i, &name, &value) == C.MULLIGAN_OK {
			out.Header.Add(C.GoString(name), C.GoString(value))
		}
	}
	if k := C.mulligan_http_response_idempotency_key(resp); k != nil {
		out.IdempotencyKey = C.GoString(k)
	}
	if e, ok := err.(*Error); ok {
		e.Attempts, e.Reason = out.Attempts, out.StopReason
	}
	return out, err
}
