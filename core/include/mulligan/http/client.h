// mulligan/http/client.h — a resilient HTTP client on libcurl.
//
// A front door of the pipeline (pipeline/pipeline.h): each request is one
// pipeline Call, and libcurl transfers are its attempts, so every decision --
// the per-attempt timeout trimmed to the deadline, Retry-After, the breaker
// per origin, the metrics, the fallback -- is the pipeline's. The client adds
// the method rules of DESIGN.md section 5 (RFC 9110 section 9.2.2): GET, HEAD,
// OPTIONS, TRACE, PUT and DELETE are retried; POST and PATCH only with an
// Idempotency-Key (sent unchanged on every attempt) or when nothing was sent
// (connection refused). The event-loop engine is http/async_engine.h.
// Connections are kept alive and reused between attempts and calls, except
// by requests that must not be replayed (POST/PATCH without a key): those
// always open a new connection, since libcurl would otherwise re-send them
// by itself when a kept-alive connection turns out dead.
//
// libcurl is an implementation detail (pimpl): this header never includes it.

#ifndef MULLIGAN_HTTP_CLIENT_H_
#define MULLIGAN_HTTP_CLIENT_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mulligan/breaker/registry.h"
#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"
#include "mulligan/hedging/hedging.h"
#include "mulligan/http/breaker_key.h"
#include "mulligan/limits/adaptive_rate.h"
#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/retry/policy.h"
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

// Header fields in the order sent or received. Names keep their case;
// look-ups are case-insensitive (RFC 9110 section 5.1).
using HttpHeaders = std::vector<std::pair<std::string, std::string>>;

// Returns the value of the first field named `name` (case-insensitive), or
// nullopt.
std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name);

// Returns true for the methods RFC 9110 section 9.2.2 defines as idempotent:
// GET, HEAD, OPTIONS, TRACE, PUT, DELETE (case-sensitive, as methods are).
bool IsIdempotentMethod(std::string_view method);

// Which requests may be replayed once bytes of them were sent (DESIGN.md
// section 5, "Methods"). A failure before any byte was sent (connection
// refused) is retried whatever the rule. Values are pinned (they cross the C
// ABI as MULLIGAN_HTTP_METHODS_*); append only.
enum class HttpMethodRule : int {
  // RFC 9110's idempotent methods (GET, HEAD, OPTIONS, TRACE, PUT, DELETE),
  // plus any request carrying an Idempotency-Key. The default.
  kIdempotent = 0,
  // GET, HEAD and OPTIONS only, keyed or not (strict_methods).
  kStrict = 1,
  // "Safe by default" (the Angular retry recipe this project began from):
  // GET, HEAD and OPTIONS, plus any request carrying an Idempotency-Key.
  kSafe = 2,
  // Every method (urllib3's Retry(allowed_methods=None)).
  kAll = 3,
  // Exactly HttpClientOptions::allowed_methods (urllib3's
  // Retry(allowed_methods=[...])); a key does not add a method.
  kAllowed = 4,
};

// Returns "idempotent", "strict", "safe", "all" or "allowed" (or "unknown").
const char* HttpMethodRuleName(HttpMethodRule rule);

// Returns whether a `method` request (`keyed`: it carries an
// Idempotency-Key) may be replayed under `rule`; `allowed` is read by
// kAllowed only (exact, case-sensitive names, as methods are).
bool HttpMethodReplaySafe(HttpMethodRule rule, const std::vector<std::string>& allowed,
                          std::string_view method, bool keyed);

// Returns the outcome of an attempt that got a final HTTP response with
// `status`: its Retry-After field value `retry_after` (nullopt when absent)
// parsed against the wall time `now` (an unparsable value is no hint), and
// the idempotency-store rule of DESIGN.md section 5: a 409 carrying
// Retry-After on a `keyed` request (one with an Idempotency-Key) is "the
// first request with this key still runs": a retryable failure after the
// hint, not a conflict. HttpClient, HttpAsyncEngine and the Python adapters
// (mulligan.adapters: requests, httpx, aiohttp) all build their response
// outcomes here. Thread-safety: thread-safe (pure). (Appended in 0.3.)
Outcome HttpResponseOutcome(int status, std::optional<std::string_view> retry_after, bool keyed,
                            WallTime now);

// Returns a fresh idempotency key: a random (version 4) UUID in its canonical
// 36-character lower-case form (RFC 9562 section 5.4), drawn from the
// operating system's CSPRNG (getrandom(2)).
// Thread-safety: thread-safe.
std::string NewIdempotencyKey();

// What an on_retry hook is told before each wait ("Retrying..." indicators).
struct HttpRetryEvent {
  // The attempt that just failed (1 for the first).
  int attempt = 0;
  // The wait before the next attempt.
  Duration delay = Duration::zero();
  // The failed attempt's transport failure, or kNone when it got a response.
  ErrorKind error = ErrorKind::kNone;
  // The failed attempt's HTTP status, or 0 without a response.
  int http_status = 0;
  // True when the delay came from a Retry-After hint.
  bool from_retry_after = false;
  // Set by the hook to stop the retries: the call then ends at once with
  // kCallback (no wait, no further attempt).
  bool cancel = false;
};

// Called on the sending thread before each wait between attempts. Must not
// throw (an exception escaping it is swallowed: the retries go on). Hooks
// written as `void(const HttpRetryEvent&)` fit too.
using HttpRetryHook = std::function<void(HttpRetryEvent&)>;

// Polled while a call runs; returning true ends the call at once with
// kCallback ("aborted"): the transfer in flight is dropped (its connection
// closed) and no further attempt or wait follows. This is how a caller
// interrupts a blocking Send from outside (a Python binding checks for
// Ctrl-C here). It is polled on the sending thread
//   - during each transfer, through libcurl's progress callback
//     (CURLOPT_XFERINFOFUNCTION): at least about once a second, usually much
//     more often while data moves;
//   - before each attempt, and during each wait between attempts, which is
//     slept through the Clock in slices of at most kAbortPollInterval.
// It may be called many times a second, so it should be cheap (rate-limit
// any expensive check inside it). Must not throw (an exception escaping it
// counts as false).
using HttpAbortHook = std::function<bool()>;

// The longest slice of a wait between attempts before the abort hook is
// polled again.
inline constexpr Duration kAbortPollInterval = std::chrono::milliseconds(50);

// The most origins an HTTP client keeps a budget of its own for
// (HttpClientOptions::retry_budget). (Added in 0.4.)
inline constexpr size_t kMaxBudgetOrigins = 1024;

// Header fields the client frames the message with itself; a request that
// sets one of them is rejected with kInvalidArgument (no attempt is made),
// because a value that disagrees with the body actually sent makes the
// server wait for bytes that never come (Content-Length, Transfer-Encoding)
// or switches the connection to another protocol (Upgrade, TE). Compared
// case-insensitively: Content-Length, Transfer-Encoding, TE, Upgrade.
// Host, Connection, Expect and the rest pass through unchanged.
bool IsClientManagedHeader(std::string_view name);

// The most bytes the head of a request may take: the URL, the user agent and
// every header field (name, value and 4 bytes of framing each), the
// idempotency key included. Larger requests are rejected with
// kInvalidArgument before any attempt: libcurl builds the request head in a
// buffer of at most 1 MiB (small bodies go into it too), and servers refuse
// far smaller heads anyway (nginx: 32 KiB by default).
inline constexpr size_t kMaxRequestHeadBytes = 512 * 1024;

// Returns the origin of an absolute http(s) URL, "scheme://host:port" with
// the scheme and host in lower case and the port always present (the default
// port of the scheme when the URL has none), or nullopt for a malformed URL.
// The HTTP client keys its circuit breakers by this.
std::optional<std::string> HttpOrigin(std::string_view url);

struct HttpRequest {
  // An HTTP method token ("GET", "POST", ...). Default "GET".
  std::string method = "GET";
  // When not empty, the key of the breaker that guards this request,
  // instead of what HttpClientOptions::breaker_key gives (the way a front
  // door that cannot be called from the engine's threads, such as Python's,
  // supplies a key function's result). Default empty.
  std::string breaker_key;
  // An absolute http:// or https:// URL.
  std::string url;
  HttpHeaders headers;
  std::string body;
  // When set, sent as the Idempotency-Key header on every attempt and makes a
  // POST or PATCH replay-safe. An Idempotency-Key already in `headers` counts
  // the same. Must be a key mulligan's own server side accepts and reads
  // back unchanged (ParseIdempotencyKey, mulligan/idempotency/store.h): 1 to
  // 255 printable ASCII characters, no quote or backslash, no leading or
  // trailing space; an Idempotency-Key header must parse there too. Else
  // the request fails with kInvalidArgument before anything is sent.
  std::optional<std::string> idempotency_key;
  // Overrides the client's retry policy for this request when non-null.
  // REQUIRES: outlives the call.
  const RetryPolicy* policy = nullptr;
  // Overrides HttpClientOptions::follow_redirects / max_redirects when set.
  std::optional<bool> follow_redirects;
  std::optional<int> max_redirects;
  // Overrides HttpClientOptions::strict_methods when set.
  std::optional<bool> strict_methods;
  // Called before each wait of this request; when set it replaces the
  // client's on_retry for this request.
  HttpRetryHook on_retry;
  // Polled during transfers and waits (see HttpAbortHook); when set it
  // replaces the client's should_abort for this request. HttpAsyncEngine
  // ignores it (its caller owns the loop and calls Cancel).
  HttpAbortHook should_abort;
  // The caller answers a give-up (retries exhausted on a retryable status or
  // a transport error) or a refusal (circuit open) with a fallback of its
  // own: the result then says use_fallback, and the metrics count one
  // fallback (pipeline/call.h, CallOptions::fallback). Default false.
  bool fallback = false;
  // Testing mode (pipeline/call.h, CallOptions): when > 0, at most this
  // many attempts; `no_wait`: every wait between attempts is zero.
  // Defaults: 0 and false (the policy decides).
  int max_attempts = 0;
  bool no_wait = false;
  // The clock of this request (deadlines, elapsed time, waits); null means
  // the client's. A test's FakeClock, for one request. REQUIRES: outlives the
  // call.
  Clock* clock = nullptr;
};

struct HttpResponse {
  // The final HTTP status (the last attempt's).
  int status = 0;
  // The last attempt's response header fields, in order.
  HttpHeaders headers;
  std::string body;
  // Attempts made (1 when the first attempt succeeded).
  int attempts = 0;
  // Time from the start of the first attempt to the end of the last.
  Duration elapsed = Duration::zero();
  // Why the retry loop stopped (kSucceeded, or e.g. kAttemptsExhausted when
  // the last response was still a retryable status such as 503).
  StopReason stop_reason = StopReason::kNone;
  // The idempotency key sent with every attempt, or empty.
  std::string idempotency_key;
  // The URL of the final response, as libcurl sent it: credentials in it
  // are kept (for code that uses it again). Render it through RedactUrl
  // (http/redact.h), as every message of the client does.
  std::string url;
  // The request asked for a fallback (HttpRequest::fallback) and the
  // retries gave up on a retryable status: the caller answers with it.
  bool use_fallback = false;

  // Returns the value of the header `name` (case-insensitive), or nullopt.
  std::optional<std::string> Header(std::string_view name) const {
    return FindHeader(headers, name);
  }
};

// What happened in a call, filled in whether it succeeded or failed.
struct HttpCallInfo {
  int attempts = 0;
  Duration elapsed = Duration::zero();
  // The last attempt's transport failure (kNone when it got a response).
  ErrorKind last_error = ErrorKind::kNone;
  StopReason stop_reason = StopReason::kNone;
  std::string idempotency_key;
  // kCircuitOpen only: the breaker's key (the origin) and the time until it
  // admits a probe.
  std::string breaker_key;
  Duration retry_in = Duration::zero();
  // The last attempt's HTTP status, 0 without a response.
  int last_status = 0;
  // The request asked for a fallback (HttpRequest::fallback) and the call
  // gave up or was refused: the caller answers with its fallback.
  bool use_fallback = false;
};

struct HttpClientOptions {
  // The default retry policy of every request (DESIGN.md defaults).
  RetryOptions retry;
  // Bound on one attempt when the policy sets no attempt_timeout. Default 30 s.
  Duration attempt_timeout = std::chrono::seconds(30);
  // Bound on establishing a connection. Default 10 s.
  Duration connect_timeout = std::chrono::seconds(10);
  // Verify TLS peers and host names. Default true.
  bool verify_tls = true;
  // The User-Agent header sent when the request sets none.
  std::string user_agent = "mulligan";
  // The clock used for deadlines and waits; null means SystemClock::Default().
  // REQUIRES: outlives the client.
  Clock* clock = nullptr;
  // Follow 3xx redirects (at most max_redirects, only to http and https).
  // Default false: a 3xx is the response. max_redirects in [0, 1000],
  // default 10; exceeding it is a terminal failure (ErrorKind::kTerminal).
  bool follow_redirects = false;
  int max_redirects = 10;
  // A PEM file of CA certificates replacing the system bundle; empty means
  // libcurl's default. Create returns kInvalidArgument when the file cannot
  // be read (access(2) R_OK) as the client is made. Proxies come from the usual environment variables
  // (http_proxy, https_proxy, all_proxy, no_proxy, as libcurl reads them):
  // nothing here overrides them. When none is set as the client is created,
  // the client uses no proxy and does not look again (as httpx does);
  // otherwise libcurl reads them on every transfer.
  std::string ca_bundle;
  // Strict mode: only GET, HEAD and OPTIONS are replayed once bytes were
  // sent (PUT, DELETE and keyed POSTs are not). Failures before any byte was
  // sent (connection refused) are still retried. Default false.
  bool strict_methods = false;
  // Which requests are replayed once bytes were sent (HttpMethodRule).
  // strict_methods = true means kStrict whatever this says. Default
  // kIdempotent. (Appended in 0.2.)
  HttpMethodRule method_rule = HttpMethodRule::kIdempotent;
  // The methods kAllowed replays: HTTP tokens (RFC 9110 section 9), at most
  // 64. Create refuses a bad token with kInvalidArgument. (Appended in 0.2.)
  std::vector<std::string> allowed_methods;
  // Called before each wait between attempts (see HttpRetryEvent).
  HttpRetryHook on_retry;
  // Polled during every call's transfers and waits (see HttpAbortHook).
  // Default: none (a call cannot be aborted).
  HttpAbortHook should_abort;
  // Per-origin circuit breakers: when set, each request's origin
  // (HttpOrigin) gets a breaker from this registry. The breaker is checked
  // before every attempt; an open breaker ends the call at once with
  // kCircuitOpen (HttpCallInfo::retry_in says when it admits a probe).
  // A logical call records one result after its retries, unless
  // breaker_per_attempt records every attempt. Default: none.
  std::shared_ptr<BreakerRegistry> breakers;
  bool breaker_per_attempt = false;
  // Which breaker of `breakers` guards a request: by origin (the default),
  // host, path, path template or a function (breaker_key.h). The metrics
  // stay by origin (or metrics_name) whatever the breaker key.
  BreakerKeyOptions breaker_key;
  // Retry budget per origin (issue 14): each origin gets its own RetryBudget
  // built from these options (gRFC A6 token bucket, max 100, ratio 0.5, by
  // default); nullopt turns budgets off. Ignored when shared_budget is set.
  std::optional<BudgetOptions> retry_budget = BudgetOptions{};
  // One budget for every origin of this client (and of any other holder of it);
  // null means per-origin budgets built from retry_budget.
  std::shared_ptr<RetryBudget> shared_budget;
  // (Appended in 0.4.) The per-origin budgets: the origin is HttpOrigin's
  // "scheme://host:port" (the breakers' default key), whatever breaker_key
  // says. Each is made on an origin's first call, named
  // retry_budget->name + " " + origin (the origin alone when the name is
  // empty), dated by `clock`. A client keeps at most kMaxBudgetOrigins of
  // them; the calls to any later origin share one more budget (named
  // "... *"), so a crawler's memory stays bounded. A6 is the default (not
  // AWS's quota or Finagle's ratio) because it is deterministic (no window,
  // no clock), costs one atomic word, and is what gRPC clients already do.
  // A retry the budget refuses ends the call with StopReason::kBudget: the
  // last response (HttpResponse::stop_reason) or the last error stays the
  // result. First attempts are never refused.

  // Adaptive throttling (budget/throttle.h) asked before every attempt of
  // every origin; a rejection ends the call with kThrottled, or, for a
  // retry after a response, returns that response with stop_reason
  // kThrottled (since 0.5). Default none. (Appended in 0.4.)
  std::shared_ptr<AdaptiveThrottle> throttle;
  // A bulkhead shared by every call of the client: at most its
  // max_concurrent calls in flight (held for the whole call, retries and
  // waits included); a full one queues (HttpClient waits on the calling
  // thread, bounded by its max_wait and the deadline) or refuses with
  // kBulkheadFull. Default none. (Appended in 0.4.)
  std::shared_ptr<Bulkhead> bulkhead;
  // A rate limiter with one bucket per origin, asked once per call (before
  // every attempt with rate_limit_per_attempt); HttpClient waits for a
  // reserved slot on the calling thread, bounded by the limiter's max_wait
  // and the deadline, else refuses with kRateLimited. With the limiter's
  // penalize_retry_after, a 429/503's Retry-After holds the origin's bucket
  // for every call. Default none. (Appended in 0.4.)
  std::shared_ptr<RateLimiter> rate_limiter;
  bool rate_limit_per_attempt = false;
  // The AWS SDKs' adaptive send rate (limits/adaptive_rate.h), one per
  // client, shared by every origin (as an SDK client has one per service
  // endpoint; give each origin its own client for per-origin rates): every
  // attempt takes a token (HttpClient waits on the calling thread, bounded by
  // the rate's max_wait and the deadline, else refuses with kRateLimited) and
  // every answer is recorded, throttled for 429 / 503 with Retry-After.
  // Default none. (Appended in 0.4.)
  std::shared_ptr<AdaptiveRate> adaptive_rate;

  // Report every call (calls, attempts, retries by reason, successes,
  // failures, retry delays, durations; metrics.h) to
  // MetricsRegistry::Default(), labelled by the request's origin
  // (scheme://host:port, as the breakers are), or by metrics_name when it is
  // set. A call succeeds when its final response is not an error status
  // (below 400, or not classified terminal or retryable). Default true.
  bool report_metrics = true;

  // At most this many transfers (so connections in use) at once, across
  // every thread (HttpClient) or call (HttpAsyncEngine) of the client. An
  // attempt started beyond it waits, in FIFO order, for one to end (an
  // HttpClient's calling thread blocks on a core Bulkhead's ticket; the
  // engine queues it); its attempt timeout starts when its transfer does
  // (the call's deadline runs meanwhile), so waiting here is never a
  // connect timeout or a failure of the origin. 0: no cap. Default 0. >= 0.
  // (HttpClient honours it since 0.4; it ignored it before.)
  int max_connections = 0;
  std::string metrics_name;

  // Hedged requests (issue 18; hedging/hedging.h, gRPC A6 hedgingPolicy):
  // when set, HttpClient::Send of a replay-safe request (an RFC 9110
  // idempotent method, or one carrying an Idempotency-Key, sent unchanged on
  // every copy) sends up to max_attempts copies, copy k+1 starting
  // hedging_delay (or the delay_quantile of recent winners' latencies) after
  // copy k, or at once after copy k failed retryably, later when the server
  // pushed back (Retry-After). The copies run as transfers of one libcurl
  // multi handle on the calling thread (no thread per copy); each copy is one
  // single-attempt call of the client's pipeline for the origin (its
  // breaker admits and judges it, its metrics count it); the retry budget
  // grants each extra copy; the first acceptable response wins and the other
  // copies are aborted (their connections closed, never reused
  // mid-request), counted cancelled, neither success nor failure, and not
  // charged to the breaker or the budget. Other requests (a POST without a
  // key) are sent as without hedging. HttpClient::Begin
  // (HttpClientCall) and HttpAsyncEngine do not hedge (the engine's caller
  // does: Python's AsyncClient). Create refuses bad options with
  // kInvalidArgument naming the field ("hedging: max_attempts must be >= 2,
  // got 1"). Default: none. (Added in 0.6.)
  std::optional<HedgingOptions> hedging;
};

class HttpClientCall;

// A long-lived client with a pool of kept-alive connections.
//
// Thread-safety: Send() may be called from many threads at once; each call
// uses its own libcurl handle from a pool sharing one connection cache.
// Not copyable or movable: pooled handles point back into it.
class HttpClient {
 public:
  // Validates `options`. kInvalidArgument on a bad value, kInternal when
  // libcurl cannot be initialised.
  static Result<std::unique_ptr<HttpClient>> Create(const HttpClientOptions& options);
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `request`, retrying per the policy, waiting through the clock; with
  // HttpClientOptions::hedging, a replay-safe request is hedged instead (its
  // copies are not retried: a retryable failure lets the next copy start;
  // the response's attempts count the copies started (one the breaker
  // refused sent nothing), its elapsed the whole
  // request's time, and a request no copy won stops with the hedged call's
  // reason: kAttemptsExhausted, kBudget, kDeadline, or the terminal copy's).
  // Hedged copies are capped by max_connections per Send, not across the
  // client's threads (0.6).
  // Returns the final response, also when the retries gave up on a retryable
  // status such as 503 (see HttpResponse::stop_reason). Errors:
  //   kInvalidArgument  malformed URL, method, header or key, a header the
  //                     client manages (IsClientManagedHeader), or a head
  //                     over kMaxRequestHeadBytes (no attempt made)
  //   kTransport        the last attempt failed to connect or exchange
  //   kTimeout          the last attempt timed out
  //   kDeadlineExceeded the deadline ended the chain after a failed attempt
  //   kCircuitOpen      the origin's circuit breaker refused an attempt
  //   kThrottled        the client's AdaptiveThrottle rejected an attempt
  //                     before any response came (since 0.5 a rejected
  //                     retry returns the last response, stop_reason
  //                     kThrottled, as a refused budget does)
  //   kBulkheadFull     the client's bulkhead was full (no queue, or the
  //                     wait ran past its max_wait or the deadline)
  //   kRateLimited      the client's rate limiter's next slot for the origin
  //                     was beyond its max_wait or the deadline
  //                     (HttpCallInfo::retry_in: how far)
  //   kCallback         an on_retry hook set HttpRetryEvent::cancel, or the
  //                     should_abort hook returned true ("aborted")
  // A retry refused by the retry budget is no error of its own: the last
  // response (stop_reason kBudget) or the last attempt's error is returned.
  // Waits for a bulkhead's queue, a rate limiter's slot and a connection
  // (max_connections) block the calling thread, polling should_abort.
  // `info`, when non-null, is filled in either way.
  Result<HttpResponse> Send(const HttpRequest& request, HttpCallInfo* info = nullptr);

  // Begins `request` as a call its caller steps (HttpClientCall), for callers
  // that wait between attempts their own way (Python's driver sleeps with
  // time.sleep, or a FakeClock, and lets Ctrl-C interrupt a wait). Takes the
  // request over (and copies its policy, if any). Errors: kInvalidArgument as
  // Send; kInternal when libcurl cannot make a handle.
  Result<std::unique_ptr<HttpClientCall>> Begin(HttpRequest request);

  const RetryPolicy& policy() const;
  const HttpClientOptions& options() const;

 private:
  friend class HttpClientCall;
  struct Impl;
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// One logical call of an HttpClient, stepped by its caller. Send is exactly
// this loop, with the waits through the clock:
//
//   auto call = client.Begin(request);          // validated here
//   for (Decision d = (*call)->Attempt(); d.retry(); d = (*call)->Attempt()) {
//     report (*call)->RetryEvent(); wait d.delay your own way;
//     (or (*call)->Cancel() to stop here)
//   }
//   Result<HttpResponse> response = (*call)->Finish();
//
// Thread-safety: not thread-safe; one call belongs to one caller (any thread,
// one at a time). REQUIRES: the client outlives the call. Destroying an
// unfinished call cancels it.
class HttpClientCall {
 public:
  ~HttpClientCall();
  HttpClientCall(const HttpClientCall&) = delete;
  HttpClientCall& operator=(const HttpClientCall&) = delete;

  // Runs the next attempt on the calling thread: the pipeline's admission,
  // the transfer (polling the should_abort hooks), the decision. Returns
  // the decision: retry after `delay` (wait, then call Attempt again), or
  // stop (call Finish). Once stopped (or refused), returns the stop again.
  Decision Attempt();
  // The retry just decided, as an on_retry hook would be told (the call's
  // hooks are not called by Attempt: the stepping caller reports retries).
  HttpRetryEvent RetryEvent() const;
  // Replaces every header field named `name` (any case) for the attempts
  // that follow, or adds it: a field that differs per attempt, such as the
  // W3C traceparent carrying each attempt span's context (OpenTelemetry's
  // HTTP conventions: one client span per resend). Call between attempts.
  // Errors: kInvalidArgument as Send for a header (a non-token name, CR/LF/
  // NUL in the value, a client-managed header, a head past
  // kMaxRequestHeadBytes), for Idempotency-Key (one key for every attempt),
  // and once the call stopped; kNoMemory. Unchanged on error.
  // (Added in 0.5.)
  Status SetHeader(const std::string& name, const std::string& value);
  // Ends a call whose caller will not make the retry just decided (a hook
  // cancelled it, the wait was interrupted): Finish then reports kCallback.
  void Cancel();
  // The call's result, as Send returns it. `info`, when non-null, is filled.
  // Call once, after a stop decision or Cancel.
  Result<HttpResponse> Finish(HttpCallInfo* info = nullptr);

 private:
  friend class HttpClient;
  struct Impl;
  explicit HttpClientCall(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_CLIENT_H_
