// capi/src/capi_internal.h — private plumbing of the C ABI shims (never
// installed): the handles more than one part uses (one-member wrappers around
// core objects, leveldb's c.cc pattern), the thread-local last error, the
// exception barrier, and the conversions between the C forms (milliseconds,
// mulligan_outcome, mulligan_decision) and the core's.
//
// Each part's own handles live in its file (capi/src/<part>.cc). The generic
// helpers (saturating time, ASCII, formatting) are the core's, in
// core/src/internal/ (CMake target mulligan_internal): the C ABI keeps no copy.

#ifndef MULLIGAN_CAPI_SRC_CAPI_INTERNAL_H_
#define MULLIGAN_CAPI_SRC_CAPI_INTERNAL_H_

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string_view>

#include "mulligan.h"
#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/status.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/breaker/registry.h"
#include "mulligan/config/config.h"
#include "mulligan/idempotency/store.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/retry/policy.h"
#include "mulligan/pipeline/pipeline.h"

struct mulligan_retry_options {
  mulligan::RetryOptions impl;
};

struct mulligan_retry_policy {
  mulligan::RetryPolicy impl;
};

struct mulligan_clock {
  mulligan::FakeClock impl;
};

struct mulligan_retry_session {
  mulligan::RetrySession impl;
  // Borrowed; never null (SystemClock::Default() when the caller passed NULL).
  const mulligan::Clock* clock;
};

// A configuration registry (mulligan_config.h); here so that http.cc can
// build client options from a named client (mulligan_config_http_options).
struct mulligan_config {
  // Shared so that a future C API can hand the registry to other objects;
  // the handle itself is the only owner today.
  std::shared_ptr<mulligan::PolicyRegistry> impl;
};

// Breaker options (mulligan_breaker.h); here so that config.cc can fill
// them from a named breaker (mulligan_config_breaker_options).
struct mulligan_breaker_options {
  mulligan::CircuitBreakerOptions impl;
  // Borrowed; null means the system steady clock.
  const mulligan::Clock* clock = nullptr;
};

// Shared, so that a pipeline (and a registry's handles) keep it alive.
// The pipeline's options and call handles (pipeline.cc; limits.cc attaches
// bulkheads and limiters and waits on a call's queue ticket).
struct mulligan_pipeline_options {
  mulligan::PipelineOptions impl;
  // Borrowed; null means the system steady clock. Kept here rather than in
  // PipelineOptions::clock, which is the clock the core's convenience loops
  // wait through: nothing of the C step API waits, it only tells callers
  // which clock their `now_ms` must come from (mulligan_pipeline_now_ms).
  const mulligan::Clock* clock = nullptr;
};

struct mulligan_call {
  mulligan::Call impl;
};

// A pipeline (pipeline.cc); here so that hedging.cc can begin hedged calls
// through it.
struct mulligan_pipeline {
  std::unique_ptr<mulligan::Pipeline> impl;
  // Borrowed; never null.
  const mulligan::Clock* clock;
};

struct mulligan_breaker {
  std::shared_ptr<mulligan::CircuitBreaker> impl;
  // Borrowed; never null.
  const mulligan::Clock* clock;
  // The RedisSharedBreaker of mulligan_breaker_share (state.cc), type-erased
  // so that this header needs no Redis: sharing lasts as long as the handle.
  // Null: not shared. (Added in 0.6.)
  std::shared_ptr<void> sharing = nullptr;
};

// A rate limiter (limits.cc), local or on Redis (state.cc, 0.6).
struct mulligan_rate_limiter {
  std::shared_ptr<mulligan::RateLimiter> impl;
};

// Idempotency store options (idempotency.cc; state.cc reads them, 0.6).
struct mulligan_idempotency_options {
  mulligan::IdempotencyStoreOptions impl;
};

// An idempotency store (idempotency.cc), local or on Redis (state.cc, 0.6).
struct mulligan_idempotency_store {
  std::unique_ptr<mulligan::IdempotencyStore> impl;
  // Borrowed; never null (SystemClock::Default() when the caller passed NULL;
  // the state's clock for a store on Redis).
  const mulligan::Clock* clock;
};

// Shared, so that a pipeline keeps it alive after the handle is destroyed.
struct mulligan_breaker_registry {
  std::shared_ptr<mulligan::BreakerRegistry> impl;
  // Borrowed; never null.
  const mulligan::Clock* clock;
};

namespace mulligan {
namespace capi_internal {

// ---------------------------------------------------------------------------
// Errors (status.cc)

// Returns the thread-local last error (never null).
const char* LastError();

// Stores the thread-local last error (truncated to a fixed buffer, so that
// recording an out-of-memory failure never allocates) and returns `code`.
int SetError(int code, const char* format, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

// Converts a non-OK core Status into its C code and records its message.
int SetError(const Status& status);

// Called from inside a catch (...) block: classifies the exception in flight,
// records the error and returns the code (ONNX Runtime's pattern).
int TranslateException() noexcept;

// Checks a caller-initialised struct's struct_size: at least `min` (the size
// of its first published version). Records "<what>->struct_size must be at
// least <min> (use <init>), got <size>" and returns MULLIGAN_E_INVALID_ARGUMENT
// otherwise; returns MULLIGAN_OK.
int CheckStructSize(const char* what, uint32_t size, size_t min, const char* init);

// Writes `text` into `buf` the snprintf way: at most size - 1 bytes and a
// NUL; nothing when buf is null or size is 0. The callers' length protocols
// differ (with or without the NUL), so they report the length themselves.
void CopyTruncated(std::string_view text, char* buf, size_t size);

// ---------------------------------------------------------------------------
// Durations and time (status.cc)

// Checks that `ms` is a finite number >= 0 (or > 0 when `positive`); on
// failure records "<name> must be ..., got <ms>" and returns false. Valid
// values convert with internal::DurationFromMillis (core/src/internal/
// saturating.h), which saturates at Duration::max().
bool CheckMs(const char* name, double ms, bool positive);

// Converts a Duration to milliseconds; Duration::max() gives
// MULLIGAN_DURATION_MAX_MS exactly.
double DurationToMs(Duration d);

// Converts a monotonic time to the milliseconds mulligan_clock_now_ms()
// reports (since the clock's epoch).
double TimePointToMs(TimePoint t);

// Converts the `now_ms` of a call step back to a TimePoint, rounded to the
// nearest nanosecond. Returns false (recording "<name> must be a finite
// number within +-MULLIGAN_DURATION_MAX_MS, got <ms>") for NaN, infinities
// and values beyond the clock's range.
bool TimePointFromMs(const char* name, double ms, TimePoint* out);

// The clock of a `const mulligan_clock*` argument: the fake clock, or the
// system steady clock for NULL. Never null.
const Clock* ClockOf(const mulligan_clock* clock);

// ---------------------------------------------------------------------------
// Outcomes and decisions (retry.cc)

// The sizes of the outcome and decision structs as shipped in 0.1: callers
// compiled against 0.1 headers must keep working when the structs grow at
// the end.
constexpr size_t kOutcomeSizeV0_1 = offsetof(mulligan_outcome, request_sent) + sizeof(int);
constexpr size_t kDecisionSizeV0_1 = offsetof(mulligan_decision, from_retry_after) + sizeof(int);

// Validates a caller's outcome (struct_size, error_kind, http_status,
// retry_after_ms, request_sent, grpc_status when struct_size covers it) and
// converts it. On failure records which field is wrong ("outcome->http_status
// must be 0 or in [100, 599], got 42") and returns MULLIGAN_E_INVALID_ARGUMENT.
int OutcomeFromC(const mulligan_outcome* in, Outcome* out);

// Checks a caller's decision struct (NULL, struct_size).
int CheckDecision(const mulligan_decision* out);

// Fills the 0.1 fields of a caller's decision (struct_size already checked).
void DecisionToC(const Decision& d, mulligan_decision* out);

// Resets a caller's struct (struct_size already checked) to its INIT values,
// as far as its size goes: a failed step then says "refuse" / "stop".
template <typename T>
void Reset(T* out, const T& init) {
  T value = init;
  value.struct_size = out->struct_size;
  std::memcpy(out, &value, std::min<size_t>(out->struct_size, sizeof(value)));
}

// ---------------------------------------------------------------------------
// Rate limiters (limits.cc)

// Fills `out` from mulligan_rate_limiter_create's arguments (name NULL: "";
// max_wait_ms < 0: no bound), recording a bad max_wait_ms; the rest is
// checked by RateLimiter::Create. Returns MULLIGAN_OK or
// MULLIGAN_E_INVALID_ARGUMENT.
int RateLimiterOptionsFromC(const char* name, double rate, double burst, double max_wait_ms,
                            int penalize_retry_after, RateLimiterOptions* out);

// ---------------------------------------------------------------------------
// Call options (pipeline.cc)

// Validates and converts the caller's call options (NULL: the defaults;
// struct_size, attempt_timeout_ms, max_attempts), recording which field is
// wrong; returns MULLIGAN_OK or MULLIGAN_E_INVALID_ARGUMENT.
int CallOptionsFromC(const mulligan_call_options* in, CallOptions* out);

}  // namespace capi_internal
}  // namespace mulligan

// Every exported body sits between these: no exception ever crosses the ABI.
// MULLIGAN_CAPI_END is for functions returning an int status;
// MULLIGAN_CAPI_END_RETURN(v) returns `v` instead (pointers, getters);
// MULLIGAN_CAPI_END_VOID is for destroy functions.
#define MULLIGAN_CAPI_BEGIN try {
#define MULLIGAN_CAPI_END                                  \
  }                                                        \
  catch (...) {                                            \
    return ::mulligan::capi_internal::TranslateException(); \
  }
#define MULLIGAN_CAPI_END_RETURN(value)                \
  }                                                    \
  catch (...) {                                        \
    ::mulligan::capi_internal::TranslateException();   \
    return value;                                      \
  }
#define MULLIGAN_CAPI_END_VOID                         \
  }                                                    \
  catch (...) {                                        \
    ::mulligan::capi_internal::TranslateException();   \
  }

// Returns MULLIGAN_E_INVALID_ARGUMENT with "<func>: <what> must not be NULL"
// when `ptr` is null.
#define MULLIGAN_CHECK_NOT_NULL(ptr)                                               \
  do {                                                                             \
    if ((ptr) == nullptr)                                                          \
      return ::mulligan::capi_internal::SetError(MULLIGAN_E_INVALID_ARGUMENT,      \
                                                 "%s: %s must not be NULL", __func__, #ptr); \
  } while (0)

#endif  // MULLIGAN_CAPI_SRC_CAPI_INTERNAL_H_
