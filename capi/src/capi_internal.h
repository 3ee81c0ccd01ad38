// capi/src/capi_internal.h — private plumbing of the C ABI shim: the handle
// definitions (one-member wrappers around core objects, leveldb's c.cc
// pattern), the thread-local last error, the exception barrier and the
// millisecond <-> Duration conversions. Never installed.

#ifndef MULLIGAN_CAPI_SRC_CAPI_INTERNAL_H_
#define MULLIGAN_CAPI_SRC_CAPI_INTERNAL_H_

#include <memory>
#include <string>

#include "mulligan.h"
#include "mulligan/base/clock.h"
#include "mulligan/http/client.h"
#include "mulligan/retry/policy.h"
#include "mulligan/base/status.h"

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

struct mulligan_http_client {
  std::unique_ptr<mulligan::HttpClient> impl;
};

struct mulligan_http_response {
  mulligan::HttpResponse impl;
  // The last attempt's transport failure (kNone when it got a response).
  mulligan::ErrorKind error = mulligan::ErrorKind::kNone;
};

namespace mulligan {
namespace capi_internal {

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

// Checks that `ms` is a finite number >= 0 (or > 0 when `positive`); on
// failure records "<name> must be ..., got <ms>" and returns false.
bool CheckMs(const char* name, double ms, bool positive);

// Converts finite, non-negative milliseconds to a Duration, rounding to the
// nearest nanosecond and saturating at Duration::max() (also for +inf).
Duration MsToDuration(double ms);
// Converts a Duration to milliseconds; Duration::max() gives
// MULLIGAN_DURATION_MAX_MS exactly.
double DurationToMs(Duration d);

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
