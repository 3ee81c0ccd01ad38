// bindings/python/convert.cc — units and the one Status -> exception helper.
#include <chrono>
#include <cmath>
#include <string>

#include "bindings.h"
#include "internal/format.h"
#include "mulligan/base/outcome.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
namespace python {
namespace {

// The largest magnitude in seconds a Duration (int64 nanoseconds) can hold,
// kept a little below the limit so the double -> integer cast is defined.
constexpr double kMaxSeconds = 9.2e9;

[[noreturn]] void ThrowInvalid(std::string message) {
  ThrowStatus(InvalidArgumentError(std::move(message)));
}

}  // namespace

[[noreturn]] void ThrowStatus(const Status& status, const HttpCallInfo* info) {
  RaiseError(StatusError(status, info));
}

[[noreturn]] void RaiseError(py::object exc) {
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(exc.ptr())), exc.ptr());
  throw py::error_already_set();
}

py::object StatusError(const Status& status, const HttpCallInfo* info) {
  py::object errors = py::module_::import("mulligan._errors");
  py::object none = py::none();
  py::object exc = errors.attr("_from_status")(
      static_cast<int>(status.code()), Utf8(status.message()),
      info ? py::object(py::str(ErrorKindName(info->last_error))) : none,
      info ? py::object(py::int_(info->attempts)) : none,
      info ? py::object(py::str(StopReasonName(info->stop_reason))) : none,
      info ? py::object(py::float_(DurationToSeconds(info->elapsed))) : none,
      info && !info->idempotency_key.empty() ? py::object(Latin1(info->idempotency_key))
                                             : none);
  return exc;
}

Duration SecondsToDuration(double seconds, const char* field) {
  if (std::isnan(seconds)) {
    ThrowInvalid(std::string(field) + " must be a number of seconds, got nan");
  }
  if (std::isinf(seconds) || std::fabs(seconds) > kMaxSeconds) {
    // The shortest text that reads back as the value: 1e+300 (not
    // std::to_string's 301 digits) and 9200000000.000002 just past the bound.
    ThrowInvalid(std::string(field) + " must be a finite number of seconds below 9.2e9, got " +
                 internal::FormatDouble(seconds));
  }
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
}

double DurationToSeconds(Duration duration) {
  return std::chrono::duration<double>(duration).count();
}

TimePoint MonotonicToTimePoint(double now) {
  return TimePoint(SecondsToDuration(now, "now"));
}

double TimePointToMonotonic(TimePoint time) {
  return DurationToSeconds(time.time_since_epoch());
}

WallTime UnixToWallTime(double now_unix) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(
      SecondsToDuration(now_unix, "now_unix")));
}

py::str Latin1(const std::string& bytes) {
  return py::reinterpret_steal<py::str>(
      PyUnicode_DecodeLatin1(bytes.data(), static_cast<Py_ssize_t>(bytes.size()), nullptr));
}

py::str Utf8(const std::string& text) {
  PyObject* s =
      PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

}  // namespace python
}  // namespace mulligan
