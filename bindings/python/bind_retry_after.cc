// bindings/python/bind_retry_after.cc — Retry-After parsing (RFC 9110 section 10.2.3).
#include <limits>
#include <optional>
#include <string>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/retry/retry_after.h"

namespace mulligan {
namespace python {

void BindRetryAfter(py::module_& m) {
  m.def(
      "parse_retry_after",
      [](const std::string& value, double now_unix) -> std::optional<double> {
        std::optional<Duration> delay = ParseRetryAfter(value, UnixToWallTime(now_unix));
        if (!delay) return std::nullopt;
        // The core saturates huge hints at Duration::max(); say so in Python.
        if (*delay == Duration::max()) return std::numeric_limits<double>::infinity();
        return DurationToSeconds(*delay);
      },
      py::arg("value"), py::arg("now_unix"),
      "Returns the delay in seconds a Retry-After value asks for at Unix time\n"
      "`now_unix` (inf when it saturates), or None when the value is invalid.");
}

}  // namespace python
}  // namespace mulligan
