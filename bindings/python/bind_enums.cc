// bindings/python/bind_enums.cc — the core's enumerations, in Python spelling.
//
// Member names are the core's snake_case names upper-cased
// (ErrorKind.CONNECTION_REFUSED <-> "connection_refused"), so
// `member.name.lower()` is the stable name used in messages and errors.
#include "bindings.h"
#include "mulligan/retry/backoff.h"
#include "mulligan/base/outcome.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
namespace python {

void BindEnums(py::module_& m) {
  py::enum_<BackoffKind>(m, "BackoffKind", "Backoff strategy (DESIGN.md section 4).")
      .value("CONSTANT", BackoffKind::kConstant)
      .value("LINEAR", BackoffKind::kLinear)
      .value("EXPONENTIAL", BackoffKind::kExponential)
      .value("DECORRELATED", BackoffKind::kDecorrelated);

  py::enum_<JitterKind>(m, "JitterKind", "Randomness added to a delay.")
      .value("NONE", JitterKind::kNone)
      .value("FULL", JitterKind::kFull)
      .value("EQUAL", JitterKind::kEqual)
      .value("PROPORTIONAL", JitterKind::kProportional);

  py::enum_<ErrorKind>(m, "ErrorKind", "The kind of failure an attempt ended with.")
      .value("NONE", ErrorKind::kNone)
      .value("CONNECTION_REFUSED", ErrorKind::kConnectionRefused)
      .value("CONNECTION_RESET", ErrorKind::kConnectionReset)
      .value("DNS_FAILURE", ErrorKind::kDnsFailure)
      .value("CONNECT_TIMEOUT", ErrorKind::kConnectTimeout)
      .value("TIMEOUT", ErrorKind::kTimeout)
      .value("TLS_ERROR", ErrorKind::kTlsError)
      .value("INVALID_URL", ErrorKind::kInvalidUrl)
      .value("TRANSPORT", ErrorKind::kTransport)
      .value("RETRYABLE", ErrorKind::kRetryable)
      .value("TERMINAL", ErrorKind::kTerminal)
      .value("TRUNCATED", ErrorKind::kTruncated);

  py::enum_<StopReason>(m, "StopReason", "Why a retry session stopped.")
      .value("NONE", StopReason::kNone)
      .value("SUCCEEDED", StopReason::kSucceeded)
      .value("TERMINAL", StopReason::kTerminal)
      .value("ATTEMPTS_EXHAUSTED", StopReason::kAttemptsExhausted)
      .value("DEADLINE", StopReason::kDeadline)
      .value("RETRY_AFTER_TOO_LONG", StopReason::kRetryAfterTooLong)
      .value("NOT_REPLAY_SAFE", StopReason::kNotReplaySafe)
      .value("CIRCUIT_OPEN", StopReason::kCircuitOpen)
      .value("STOP_CONDITION", StopReason::kStopCondition)
      .value("BUDGET", StopReason::kBudget)          // (Added in 0.3.)
      .value("THROTTLED", StopReason::kThrottled)    // (Added in 0.3.)
      .value("BULKHEAD_FULL", StopReason::kBulkheadFull)  // (Added in 0.3.)
      .value("RATE_LIMITED", StopReason::kRateLimited);   // (Added in 0.3.)

  py::enum_<Classification>(m, "Classification", "A policy's verdict on an outcome.")
      .value("SUCCESS", Classification::kSuccess)
      .value("RETRYABLE", Classification::kRetryable)
      .value("TERMINAL", Classification::kTerminal);
}

}  // namespace python
}  // namespace mulligan
