// mulligan/base/status.h — Status and Result<T>, the error model of the C++ API.
//
// Every fallible function in the public C++ API returns a Status or a Result<T>
// instead of throwing (abseil's absl::Status model). StatusCode values are pinned
// and equal to the C ABI's mulligan_status values, so the C shim converts with a
// cast. Codes are appended only, never renumbered or reused.
//
// Thread-safety: Status and Result are values; distinct objects may be used from
// distinct threads freely, one object needs external synchronisation for writes.

#ifndef MULLIGAN_BASE_STATUS_H_
#define MULLIGAN_BASE_STATUS_H_

#include <cassert>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace mulligan {
inline namespace v0 {

// The canonical codes. Values equal MULLIGAN_OK / MULLIGAN_E_* in mulligan.h.
enum class StatusCode : int {
  // Not an error.
  kOk = 0,
  // The caller passed a bad value: a malformed URL, a negative delay, a NaN
  // duration, a NULL handle. Fix the call; retrying it will not help.
  kInvalidArgument = 1,
  // An allocation failed.
  kNoMemory = 2,
  // A bug or an unexpected failure inside mulligan or a library it uses.
  kInternal = 3,
  // A user callback returned non-zero (C ABI) and the operation was aborted.
  kCallback = 4,
  // Every attempt failed with a retryable error and the policy gave up.
  kRetriesExhausted = 5,
  // The call's deadline passed (or the next wait would cross it).
  kDeadlineExceeded = 6,
  // A circuit breaker refused the call (reserved for the breaker issue).
  kCircuitOpen = 7,
  // The dependency was unavailable in a way that was not retried.
  kUnavailable = 8,
  // A transport failure: connection refused or reset, DNS failure, TLS error.
  kTransport = 9,
  // An attempt did not finish within its timeout.
  kTimeout = 10,
  // A retry budget refused a retry (a front door that reports a code for a
  // budget stop; most keep the last failure instead). (Added in 0.3.)
  kBudgetExhausted = 11,
  // Adaptive throttling rejected the call locally; not retried. (Added in 0.3.)
  kThrottled = 12,
  // 11 and 12 are budget exhausted and throttled (the overload issue).
  // A bulkhead refused the call (every slot busy, no room or time to wait).
  // Never retried. (Added in 0.3.)
  kBulkheadFull = 13,
  // A rate limiter refused the call (the wait would exceed its max_wait or
  // the deadline). Never retried. (Added in 0.3.)
  kRateLimited = 14,
  // A state backend (Redis) could not be reached, timed out, or failed a
  // command, and the operation failed closed instead of guessing: nothing was
  // decided and no handler may run. The HTTP middleware answers 503 with
  // Retry-After. Retrying later (after the backend's reconnect backoff) may
  // succeed. (Added in 0.5.)
  kStateUnavailable = 15,
  // 16 is reserved (hedging).
  // The durable outbox could not do what was asked (outbox/outbox.h): the
  // database file is read-only, the disk or the outbox's size cap is full,
  // the file is not an outbox, or a worker's lease was lost. The message
  // names the database file and SQLite's own error text; an entry whose
  // Enqueue returned this status was not written. (Added in 0.5.)
  kOutbox = 17,
};

// Returns static text naming `code` ("ok", "invalid argument", ...). Never null;
// unknown values give "unknown status".
const char* StatusCodeName(StatusCode code);

// A code plus a human-readable message. An OK status has an empty message.
class [[nodiscard]] Status {
 public:
  // Constructs an OK status.
  Status() = default;
  // Constructs a status with `code` and `message`. A kOk code drops the message.
  Status(StatusCode code, std::string message)
      : code_(code), message_(code == StatusCode::kOk ? std::string() : std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  // Returns "<code name>: <message>", or "ok".
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

// Factories, named after the codes (abseil style).
inline Status OkStatus() { return Status(); }
inline Status InvalidArgumentError(std::string message) {
  return Status(StatusCode::kInvalidArgument, std::move(message));
}
inline Status InternalError(std::string message) {
  return Status(StatusCode::kInternal, std::move(message));
}
inline Status TransportError(std::string message) {
  return Status(StatusCode::kTransport, std::move(message));
}
inline Status TimeoutError(std::string message) {
  return Status(StatusCode::kTimeout, std::move(message));
}
inline Status DeadlineExceededError(std::string message) {
  return Status(StatusCode::kDeadlineExceeded, std::move(message));
}
inline Status RetriesExhaustedError(std::string message) {
  return Status(StatusCode::kRetriesExhausted, std::move(message));
}
inline Status CircuitOpenError(std::string message) {
  return Status(StatusCode::kCircuitOpen, std::move(message));
}
inline Status UnavailableError(std::string message) {
  return Status(StatusCode::kUnavailable, std::move(message));
}

// (Added in 0.3.)
inline Status BulkheadFullError(std::string message) {
  return Status(StatusCode::kBulkheadFull, std::move(message));
}
// (Added in 0.3.)
inline Status RateLimitedError(std::string message) {
  return Status(StatusCode::kRateLimited, std::move(message));
}

// (Added in 0.5.)
inline Status OutboxError(std::string message) {
  return Status(StatusCode::kOutbox, std::move(message));
}

// (Added in 0.5.)
inline Status StateUnavailableError(std::string message) {
  return Status(StatusCode::kStateUnavailable, std::move(message));
}

inline bool IsInvalidArgument(const Status& s) { return s.code() == StatusCode::kInvalidArgument; }
inline bool IsTransport(const Status& s) { return s.code() == StatusCode::kTransport; }
inline bool IsTimeout(const Status& s) { return s.code() == StatusCode::kTimeout; }
inline bool IsCircuitOpen(const Status& s) { return s.code() == StatusCode::kCircuitOpen; }
inline bool IsDeadlineExceeded(const Status& s) {
  return s.code() == StatusCode::kDeadlineExceeded;
}
// (Added in 0.5.)
inline bool IsStateUnavailable(const Status& s) {
  return s.code() == StatusCode::kStateUnavailable;
}

// Either a value of type T or a non-OK Status.
//
// REQUIRES: value() only when ok(); status() is always valid (OK when a value
// is held). Constructing a Result from an OK Status is a programming error and
// is turned into kInternal.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : value_(std::move(value)) {}  // NOLINT: implicit by design
  Result(Status status) : status_(std::move(status)) {  // NOLINT: implicit by design
    if (status_.ok()) status_ = InternalError("Result constructed from an OK status");
  }

  bool ok() const { return value_.has_value(); }
  const Status& status() const { return status_; }
  T& value() & {
    assert(ok());
    return *value_;
  }
  const T& value() const& {
    assert(ok());
    return *value_;
  }
  T&& value() && {
    assert(ok());
    return std::move(*value_);
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::optional<T> value_;
  Status status_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_BASE_STATUS_H_
