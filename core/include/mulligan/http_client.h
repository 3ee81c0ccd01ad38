// mulligan/http_client.h — a resilient HTTP client on libcurl.
//
// Runs the retry engine around libcurl transfers: per-attempt timeout trimmed
// to the deadline, Retry-After honoured, and the method rules of DESIGN.md
// section 4 (RFC 9110 section 9.2.2): GET, HEAD, OPTIONS, TRACE, PUT and DELETE
// are retried; POST and PATCH only with an Idempotency-Key (sent unchanged on
// every attempt) or when nothing was sent (connection refused).
// Connections are kept alive and reused between attempts and calls.
//
// libcurl is an implementation detail (pimpl): this header never includes it.

#ifndef MULLIGAN_HTTP_CLIENT_H_
#define MULLIGAN_HTTP_CLIENT_H_

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mulligan/clock.h"
#include "mulligan/outcome.h"
#include "mulligan/retry_policy.h"
#include "mulligan/status.h"

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

// Returns a fresh idempotency key: a random (version 4) UUID in its canonical
// 36-character lower-case form (RFC 9562 section 5.4), drawn from the
// operating system's CSPRNG (getrandom(2)).
// Thread-safety: thread-safe.
std::string NewIdempotencyKey();

struct HttpRequest {
  // An HTTP method token ("GET", "POST", ...). Default "GET".
  std::string method = "GET";
  // An absolute http:// or https:// URL.
  std::string url;
  HttpHeaders headers;
  std::string body;
  // When set, sent as the Idempotency-Key header on every attempt and makes a
  // POST or PATCH replay-safe. An Idempotency-Key already in `headers` counts
  // the same. Must be a non-empty printable ASCII string.
  std::optional<std::string> idempotency_key;
  // Overrides the client's retry policy for this request when non-null.
  // REQUIRES: outlives the call.
  const RetryPolicy* policy = nullptr;
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
  // The URL of the final response.
  std::string url;

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
};

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

  // Sends `request`, retrying per the policy, waiting through the clock.
  // Returns the final response, also when the retries gave up on a retryable
  // status such as 503 (see HttpResponse::stop_reason). Errors:
  //   kInvalidArgument  malformed URL, method, header or key (no attempt made)
  //   kTransport        the last attempt failed to connect or exchange
  //   kTimeout          the last attempt timed out
  //   kDeadlineExceeded the deadline ended the chain after a failed attempt
  // `info`, when non-null, is filled in either way.
  Result<HttpResponse> Send(const HttpRequest& request, HttpCallInfo* info = nullptr);

  const RetryPolicy& policy() const;

 private:
  struct Impl;
  explicit HttpClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_CLIENT_H_
