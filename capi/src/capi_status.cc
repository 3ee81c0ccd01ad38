// capi/src/capi_status.cc — status codes, the thread-local last error, the
// exception barrier, versions and enum names of the C ABI; plus the
// compile-time proof that every C enum equals its core counterpart.

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <new>

#include "capi_internal.h"
#include "mulligan/retry/backoff.h"
#include "mulligan/base/outcome.h"

namespace mulligan {
namespace capi_internal {
namespace {

// A fixed buffer, not a std::string: recording "out of memory" must not
// allocate, and a thread_local with a trivial type needs no TLS destructor.
constexpr size_t kLastErrorSize = 1024;
thread_local char g_last_error[kLastErrorSize];

}  // namespace

const char* LastError() { return g_last_error; }

int SetError(int code, const char* format, ...) {
  va_list args;
  va_start(args, format);
  std::vsnprintf(g_last_error, kLastErrorSize, format, args);
  va_end(args);
  return code;
}

int SetError(const Status& status) {
  int code = static_cast<int>(status.code());
  if (code == MULLIGAN_OK) {  // Never report OK as a failure.
    code = MULLIGAN_E_INTERNAL;
  }
  const std::string& message = status.message();
  return SetError(code, "%s", message.empty() ? StatusCodeName(status.code()) : message.c_str());
}

int TranslateException() noexcept {
  try {
    throw;
  } catch (const std::bad_alloc&) {
    return SetError(MULLIGAN_E_NO_MEMORY, "out of memory");
  } catch (const std::exception& e) {
    return SetError(MULLIGAN_E_INTERNAL, "internal error: %s", e.what());
  } catch (...) {
    return SetError(MULLIGAN_E_INTERNAL, "internal error: unknown exception");
  }
}

bool CheckMs(const char* name, double ms, bool positive) {
  if (std::isfinite(ms) && (positive ? ms > 0 : ms >= 0)) return true;
  SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s must be a finite number %s 0, got %g", name,
           positive ? ">" : ">=", ms);
  return false;
}

Duration MsToDuration(double ms) {
  if (!(ms > 0)) return Duration::zero();  // Callers validated; NaN is defensive.
  const double ns = ms * 1e6;
  // 2^63 as a double; every double below it converts to int64 exactly.
  constexpr double kLimit = 9223372036854775808.0;
  if (!(ns < kLimit)) return Duration::max();  // Also +inf.
  return Duration(static_cast<Duration::rep>(std::llround(ns)));
}

double DurationToMs(Duration d) {
  if (d == Duration::max()) return MULLIGAN_DURATION_MAX_MS;
  return static_cast<double>(d.count()) / 1e6;
}

}  // namespace capi_internal
}  // namespace mulligan

namespace {

// The C enums are the core's values: the shim converts with a cast.
#define MULLIGAN_SAME(c_value, cxx_value) \
  static_assert(static_cast<int>(c_value) == static_cast<int>(cxx_value), #c_value)

using mulligan::StatusCode;
MULLIGAN_SAME(MULLIGAN_OK, StatusCode::kOk);
MULLIGAN_SAME(MULLIGAN_E_INVALID_ARGUMENT, StatusCode::kInvalidArgument);
MULLIGAN_SAME(MULLIGAN_E_NO_MEMORY, StatusCode::kNoMemory);
MULLIGAN_SAME(MULLIGAN_E_INTERNAL, StatusCode::kInternal);
MULLIGAN_SAME(MULLIGAN_E_CALLBACK, StatusCode::kCallback);
MULLIGAN_SAME(MULLIGAN_E_RETRIES_EXHAUSTED, StatusCode::kRetriesExhausted);
MULLIGAN_SAME(MULLIGAN_E_DEADLINE_EXCEEDED, StatusCode::kDeadlineExceeded);
MULLIGAN_SAME(MULLIGAN_E_CIRCUIT_OPEN, StatusCode::kCircuitOpen);
MULLIGAN_SAME(MULLIGAN_E_UNAVAILABLE, StatusCode::kUnavailable);
MULLIGAN_SAME(MULLIGAN_E_TRANSPORT, StatusCode::kTransport);
MULLIGAN_SAME(MULLIGAN_E_TIMEOUT, StatusCode::kTimeout);

using mulligan::BackoffKind;
MULLIGAN_SAME(MULLIGAN_BACKOFF_CONSTANT, BackoffKind::kConstant);
MULLIGAN_SAME(MULLIGAN_BACKOFF_LINEAR, BackoffKind::kLinear);
MULLIGAN_SAME(MULLIGAN_BACKOFF_EXPONENTIAL, BackoffKind::kExponential);
MULLIGAN_SAME(MULLIGAN_BACKOFF_DECORRELATED, BackoffKind::kDecorrelated);

using mulligan::JitterKind;
MULLIGAN_SAME(MULLIGAN_JITTER_NONE, JitterKind::kNone);
MULLIGAN_SAME(MULLIGAN_JITTER_FULL, JitterKind::kFull);
MULLIGAN_SAME(MULLIGAN_JITTER_EQUAL, JitterKind::kEqual);
MULLIGAN_SAME(MULLIGAN_JITTER_PROPORTIONAL, JitterKind::kProportional);

using mulligan::ErrorKind;
MULLIGAN_SAME(MULLIGAN_ERROR_NONE, ErrorKind::kNone);
MULLIGAN_SAME(MULLIGAN_ERROR_CONNECTION_REFUSED, ErrorKind::kConnectionRefused);
MULLIGAN_SAME(MULLIGAN_ERROR_CONNECTION_RESET, ErrorKind::kConnectionReset);
MULLIGAN_SAME(MULLIGAN_ERROR_DNS_FAILURE, ErrorKind::kDnsFailure);
MULLIGAN_SAME(MULLIGAN_ERROR_CONNECT_TIMEOUT, ErrorKind::kConnectTimeout);
MULLIGAN_SAME(MULLIGAN_ERROR_TIMEOUT, ErrorKind::kTimeout);
MULLIGAN_SAME(MULLIGAN_ERROR_TLS, ErrorKind::kTlsError);
MULLIGAN_SAME(MULLIGAN_ERROR_INVALID_URL, ErrorKind::kInvalidUrl);
MULLIGAN_SAME(MULLIGAN_ERROR_TRANSPORT, ErrorKind::kTransport);
MULLIGAN_SAME(MULLIGAN_ERROR_RETRYABLE, ErrorKind::kRetryable);
MULLIGAN_SAME(MULLIGAN_ERROR_TERMINAL, ErrorKind::kTerminal);

using mulligan::StopReason;
MULLIGAN_SAME(MULLIGAN_STOP_NONE, StopReason::kNone);
MULLIGAN_SAME(MULLIGAN_STOP_SUCCEEDED, StopReason::kSucceeded);
MULLIGAN_SAME(MULLIGAN_STOP_TERMINAL, StopReason::kTerminal);
MULLIGAN_SAME(MULLIGAN_STOP_ATTEMPTS_EXHAUSTED, StopReason::kAttemptsExhausted);
MULLIGAN_SAME(MULLIGAN_STOP_DEADLINE, StopReason::kDeadline);
MULLIGAN_SAME(MULLIGAN_STOP_RETRY_AFTER_TOO_LONG, StopReason::kRetryAfterTooLong);
MULLIGAN_SAME(MULLIGAN_STOP_NOT_REPLAY_SAFE, StopReason::kNotReplaySafe);

using Action = mulligan::Decision::Action;
MULLIGAN_SAME(MULLIGAN_ACTION_RETRY, Action::kRetry);
MULLIGAN_SAME(MULLIGAN_ACTION_STOP, Action::kStop);

using mulligan::Classification;
MULLIGAN_SAME(MULLIGAN_CLASSIFICATION_SUCCESS, Classification::kSuccess);
MULLIGAN_SAME(MULLIGAN_CLASSIFICATION_RETRYABLE, Classification::kRetryable);
MULLIGAN_SAME(MULLIGAN_CLASSIFICATION_TERMINAL, Classification::kTerminal);

#undef MULLIGAN_SAME

// The largest Duration in ms, as documented by MULLIGAN_DURATION_MAX_MS.
static_assert(std::numeric_limits<mulligan::Duration::rep>::max() == 9223372036854775807LL,
              "Duration must count int64 nanoseconds");

}  // namespace

extern "C" {

const char* mulligan_status_str(int status) {
  MULLIGAN_CAPI_BEGIN
  // Kept here rather than forwarded to StatusCodeName so that the text of a
  // shipped code is part of the ABI and cannot drift.
  switch (status) {
    case MULLIGAN_OK: return "ok";
    case MULLIGAN_E_INVALID_ARGUMENT: return "invalid argument";
    case MULLIGAN_E_NO_MEMORY: return "out of memory";
    case MULLIGAN_E_INTERNAL: return "internal error";
    case MULLIGAN_E_CALLBACK: return "aborted by callback";
    case MULLIGAN_E_RETRIES_EXHAUSTED: return "retries exhausted";
    case MULLIGAN_E_DEADLINE_EXCEEDED: return "deadline exceeded";
    case MULLIGAN_E_CIRCUIT_OPEN: return "circuit open";
    case MULLIGAN_E_UNAVAILABLE: return "unavailable";
    case MULLIGAN_E_TRANSPORT: return "transport error";
    case MULLIGAN_E_TIMEOUT: return "timeout";
    default: return "unknown status";
  }
  MULLIGAN_CAPI_END_RETURN("unknown status")
}

const char* mulligan_last_error(void) {
  MULLIGAN_CAPI_BEGIN
  return mulligan::capi_internal::LastError();
  MULLIGAN_CAPI_END_RETURN("")
}

int mulligan_version_number(void) {
  MULLIGAN_CAPI_BEGIN
  return MULLIGAN_VERSION_NUMBER;
  MULLIGAN_CAPI_END_RETURN(0)
}

const char* mulligan_version_string(void) {
  MULLIGAN_CAPI_BEGIN
  return MULLIGAN_VERSION_STRING;
  MULLIGAN_CAPI_END_RETURN("")
}

const char* mulligan_error_kind_str(int kind) {
  MULLIGAN_CAPI_BEGIN
  if (kind < MULLIGAN_ERROR_NONE || kind > MULLIGAN_ERROR_TERMINAL) return "unknown";
  return mulligan::ErrorKindName(static_cast<mulligan::ErrorKind>(kind));
  MULLIGAN_CAPI_END_RETURN("unknown")
}

const char* mulligan_stop_reason_str(int reason) {
  MULLIGAN_CAPI_BEGIN
  if (reason < MULLIGAN_STOP_NONE || reason > MULLIGAN_STOP_NOT_REPLAY_SAFE) return "unknown";
  return mulligan::StopReasonName(static_cast<mulligan::StopReason>(reason));
  MULLIGAN_CAPI_END_RETURN("unknown")
}

}  // extern "C"
