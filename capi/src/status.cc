// capi/src/status.cc — the shared part of the C ABI (mulligan_status.h):
// status codes, the thread-local last error, the exception barrier, versions,
// time conversions and clocks; plus the compile-time proof that the C status
// codes equal the core's.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <new>
#include <string>

#include "capi_internal.h"
#include "internal/saturating.h"

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

int CheckStructSize(const char* what, uint32_t size, size_t min, const char* init) {
  if (size >= min) return MULLIGAN_OK;
  return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                  "%s->struct_size must be at least %zu (use %s), got %u", what, min, init,
                  static_cast<unsigned>(size));
}

void CopyTruncated(std::string_view text, char* buf, size_t size) {
  if (buf == nullptr || size == 0) return;
  const size_t n = std::min(text.size(), size - 1);
  std::memcpy(buf, text.data(), n);
  buf[n] = '\0';
}

bool CheckMs(const char* name, double ms, bool positive) {
  if (std::isfinite(ms) && (positive ? ms > 0 : ms >= 0)) return true;
  SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s must be a finite number %s 0, got %g", name,
           positive ? ">" : ">=", ms);
  return false;
}

double DurationToMs(Duration d) {
  if (d == Duration::max()) return MULLIGAN_DURATION_MAX_MS;
  return static_cast<double>(d.count()) / 1e6;
}

double TimePointToMs(TimePoint t) {
  return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count();
}

bool TimePointFromMs(const char* name, double ms, TimePoint* out) {
  // |ms| <= MULLIGAN_DURATION_MAX_MS keeps ms * 1e6 within int64 nanoseconds
  // (the bound itself rounds to 2^63 ns, so it is excluded).
  if (!(std::fabs(ms) < MULLIGAN_DURATION_MAX_MS)) {  // Also NaN.
    SetError(MULLIGAN_E_INVALID_ARGUMENT,
             "%s must be a finite number within +-MULLIGAN_DURATION_MAX_MS, got %g", name, ms);
    return false;
  }
  const Duration magnitude = internal::DurationFromMillis(std::fabs(ms));
  *out = TimePoint(ms < 0 ? -magnitude : magnitude);
  return true;
}

const Clock* ClockOf(const mulligan_clock* clock) {
  if (clock != nullptr) return &clock->impl;
  return SystemClock::Default();
}

}  // namespace capi_internal
}  // namespace mulligan

namespace {

using mulligan::capi_internal::CheckMs;
using mulligan::capi_internal::ClockOf;
using mulligan::capi_internal::TimePointToMs;

// The C status codes are the core's values: the shim converts with a cast.
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
MULLIGAN_SAME(MULLIGAN_E_BUDGET_EXHAUSTED, StatusCode::kBudgetExhausted);
MULLIGAN_SAME(MULLIGAN_E_THROTTLED, StatusCode::kThrottled);
MULLIGAN_SAME(MULLIGAN_E_BULKHEAD_FULL, StatusCode::kBulkheadFull);
MULLIGAN_SAME(MULLIGAN_E_RATE_LIMITED, StatusCode::kRateLimited);
MULLIGAN_SAME(MULLIGAN_E_STATE_UNAVAILABLE, StatusCode::kStateUnavailable);
MULLIGAN_SAME(MULLIGAN_E_OUTBOX, StatusCode::kOutbox);

#undef MULLIGAN_SAME

// The largest Duration in ms, as documented by MULLIGAN_DURATION_MAX_MS.
static_assert(std::numeric_limits<mulligan::Duration::rep>::max() == 9223372036854775807LL,
              "Duration must count int64 nanoseconds");

}  // namespace

extern "C" {

// ---------------------------------------------------------------------------
// Status codes and errors

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
    case MULLIGAN_E_BUDGET_EXHAUSTED: return "budget exhausted";
    case MULLIGAN_E_THROTTLED: return "throttled";
    case MULLIGAN_E_BULKHEAD_FULL: return "bulkhead full";
    case MULLIGAN_E_RATE_LIMITED: return "rate limited";
    case MULLIGAN_E_STATE_UNAVAILABLE: return "state backend unavailable";
    case MULLIGAN_E_OUTBOX: return "outbox error";
    default: return "unknown status";
  }
  MULLIGAN_CAPI_END_RETURN("unknown status")
}

const char* mulligan_last_error(void) {
  MULLIGAN_CAPI_BEGIN
  return mulligan::capi_internal::LastError();
  MULLIGAN_CAPI_END_RETURN("")
}

// ---------------------------------------------------------------------------
// Version

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

// ---------------------------------------------------------------------------
// Clocks

int mulligan_clock_create_fake(mulligan_clock** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  *out = new mulligan_clock();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_clock_advance_ms(mulligan_clock* clock, double ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(clock);
  if (!CheckMs("ms", ms, false)) return MULLIGAN_E_INVALID_ARGUMENT;
  clock->impl.Advance(mulligan::internal::DurationFromMillis(ms));
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

double mulligan_clock_now_ms(const mulligan_clock* clock) {
  MULLIGAN_CAPI_BEGIN
  return TimePointToMs(ClockOf(clock)->Now());
  MULLIGAN_CAPI_END_RETURN(0.0)
}

void mulligan_clock_destroy(mulligan_clock* clock) {
  MULLIGAN_CAPI_BEGIN
  delete clock;
  MULLIGAN_CAPI_END_VOID
}

}  // extern "C"
