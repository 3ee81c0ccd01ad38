// mulligan/base/outcome.h — what one attempt produced, and how a policy classifies it.
//
// Failures are named by kind, not by language type: an HTTP client, a C
// callback and a Python exception all reduce to an Outcome, so one policy
// gives the same decision in every language (DESIGN.md section 4).

#ifndef MULLIGAN_BASE_OUTCOME_H_
#define MULLIGAN_BASE_OUTCOME_H_

#include <cstdint>
#include <optional>

#include "mulligan/base/clock.h"

namespace mulligan {
inline namespace v0 {

// The kind of failure an attempt ended with. Values are pinned (they cross the
// C ABI as MULLIGAN_ERROR_*); append only.
enum class ErrorKind : int {
  // No failure: the attempt produced a result or an HTTP response.
  kNone = 0,
  // Nothing listened at the address (ECONNREFUSED). Nothing was sent.
  kConnectionRefused = 1,
  // The peer reset or closed the connection mid-exchange.
  kConnectionReset = 2,
  // The host name did not resolve.
  kDnsFailure = 3,
  // The connection was not established within the connect timeout.
  kConnectTimeout = 4,
  // The attempt (or reading the response) did not finish within its timeout.
  kTimeout = 5,
  // TLS handshake or certificate verification failed. Terminal by default.
  kTlsError = 6,
  // The URL was malformed or used an unsupported scheme. Terminal.
  kInvalidUrl = 7,
  // Any other transport failure (send/receive error, protocol violation).
  kTransport = 8,
  // A failure the caller has already judged retryable (a matching exception).
  kRetryable = 9,
  // A failure the caller has already judged terminal (never retried).
  kTerminal = 10,
  // The response ended early: its header block never ended (the connection
  // closed inside the head), its body was shorter than Content-Length, or its
  // chunked body stopped before the last chunk; or the transfer ended with
  // only an interim (1xx) response. The request was sent, so it is retried
  // only when replay-safe. Retryable by default. (Appended in 0.2.)
  kTruncated = 11,
};

// Returns a stable snake_case name: "none", "connection_refused",
// "connection_reset", "dns_failure", "connect_timeout", "timeout",
// "tls_error", "invalid_url", "transport", "retryable", "terminal",
// "truncated".
const char* ErrorKindName(ErrorKind kind);

// The policy's verdict on an outcome.
enum class Classification : int {
  kSuccess = 0,
  kRetryable = 1,
  kTerminal = 2,
};

// Returns "success", "retryable" or "terminal".
const char* ClassificationName(Classification classification);

// One attempt's outcome.
struct Outcome {
  // kNone for a result or an HTTP response.
  ErrorKind error = ErrorKind::kNone;
  // The HTTP status code, or 0 when the attempt produced no HTTP response.
  int http_status = 0;
  // A Retry-After hint already parsed (see retry_after.h), if the response had one.
  std::optional<Duration> retry_after;
  // False when the failure happened before any byte of the request was sent
  // (connection refused, DNS failure, connect timeout): then even a
  // non-idempotent request may be retried (DESIGN.md "Methods").
  bool request_sent = true;
  // The gRPC status code of the attempt (0 OK .. 16 UNAUTHENTICATED), or -1
  // when the attempt was not a gRPC call. With error kNone and a code >= 0,
  // the code decides the classification (see RetryOptions::retryable_grpc_codes)
  // and http_status is ignored.
  int grpc_status = -1;
  // Bit i set: the caller's stop predicate i says stop after this failure
  // (RetryOptions::stop, StopExpr::Predicate(i); the Python layer evaluates
  // mulligan.stop.when predicates on the failure path and sets these bits,
  // since the engine never calls user code). Default 0. (Appended in 0.2.)
  uint32_t stop_predicates = 0;
  // True when the caller judged this failure an overload answer: the
  // backend refused the request for want of capacity (an exception carrying
  // HTTP 429, or gRPC RESOURCE_EXHAUSTED, as the Python decorator's
  // is_throttling judge decides). An adaptive throttle counts it as a request
  // not accepted (SRE book, "Handling Overload"; see IsOverloadAnswer in
  // budget/throttle.h). Default false: the status fields alone decide.
  // (Appended after 0.4.0.)
  bool overload = false;

  // A plain success (a value was returned).
  static Outcome Success() { return Outcome{}; }
  // A failure already classified by the caller.
  static Outcome Failure(bool retryable) {
    Outcome o;
    o.error = retryable ? ErrorKind::kRetryable : ErrorKind::kTerminal;
    return o;
  }
  // An HTTP response with `status` and an optional Retry-After hint.
  static Outcome Http(int status, std::optional<Duration> retry_after = std::nullopt) {
    Outcome o;
    o.http_status = status;
    o.retry_after = retry_after;
    return o;
  }
  // A finished gRPC call with status `code` (0 = OK).
  static Outcome Grpc(int code) {
    Outcome o;
    o.grpc_status = code;
    return o;
  }
  // A transport failure of `kind`; `request_sent` defaults from the kind
  // (false for refused, DNS failure and connect timeout).
  static Outcome Transport(ErrorKind kind);
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_BASE_OUTCOME_H_
