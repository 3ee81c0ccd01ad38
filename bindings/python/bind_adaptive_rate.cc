// bindings/python/bind_adaptive_rate.cc — the AWS adaptive-mode client rate
// for mulligan._core (core/include/mulligan/limits/adaptive_rate.h).
// (Added in 0.4.)
//
//   r = _core.AdaptiveRate(name, now, beta, scale_constant, smoothing, bucket,
//                          min_fill_rate, max_rate_scale, max_wait)
//   r.acquire(now, max_wait=None) -> (admitted, wait, retry_in)   # seconds
//   r.record(throttled, now); r.state(now) -> dict
//
// `now` values are time.monotonic() readings (or a FakeClock's) in seconds.
// Bad options raise ValueError naming the field.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/limits/adaptive_rate.h"

namespace mulligan {
namespace python {

void BindAdaptiveRate(py::module_& m) {
  py::class_<AdaptiveRate, std::shared_ptr<AdaptiveRate>>(
      m, "AdaptiveRate", "AWS adaptive-mode client rate: CUBIC over a token bucket (thread-safe).")
      .def(py::init([](const std::string& name, double now, double beta, double scale_constant,
                       double smoothing, double bucket, double min_fill_rate,
                       double max_rate_scale, std::optional<double> max_wait) {
             AdaptiveRateOptions o;
             o.name = name;
             o.beta = beta;
             o.scale_constant = scale_constant;
             o.smoothing = smoothing;
             if (!(bucket > 0) || !std::isfinite(bucket)) {
               throw py::value_error("adaptive rate '" + name +
                                     "': bucket must be > 0 (seconds), got " +
                                     std::to_string(bucket));
             }
             o.bucket = SecondsToDuration(bucket, "bucket");
             o.min_fill_rate = min_fill_rate;
             o.max_rate_scale = max_rate_scale;
             if (max_wait) {
               if (std::isnan(*max_wait) || *max_wait < 0) {
                 throw py::value_error("adaptive rate '" + name +
                                       "': max_wait must be >= 0 seconds or None");
               }
               if (!std::isinf(*max_wait)) o.max_wait = SecondsToDuration(*max_wait, "max_wait");
             }
             return Unwrap(AdaptiveRate::Create(o, MonotonicToTimePoint(now)));
           }),
           py::arg("name"), py::arg("now"), py::arg("beta") = 0.7,
           py::arg("scale_constant") = 0.4, py::arg("smoothing") = 0.8, py::arg("bucket") = 0.5,
           py::arg("min_fill_rate") = 0.5, py::arg("max_rate_scale") = 2.0,
           py::arg("max_wait") = py::none())
      .def(
          "acquire",
          [](AdaptiveRate& r, double now, std::optional<double> max_wait) {
            Duration bound = r.options().max_wait ? *r.options().max_wait : Duration::max();
            if (max_wait) {
              const Duration own = *max_wait <= 0 ? Duration::zero()
                                   : std::isinf(*max_wait)
                                       ? Duration::max()
                                       : SecondsToDuration(*max_wait, "max_wait");
              bound = std::min(bound, own);
            }
            const RateDecision d = r.Acquire(MonotonicToTimePoint(now), bound);
            return std::make_tuple(d.admitted, DurationToSeconds(d.wait),
                                   DurationToSeconds(d.retry_in));
          },
          py::arg("now"), py::arg("max_wait") = py::none(),
          "(admitted, wait, retry_in) in seconds; an admitted wait is reserved.")
      .def(
          "record",
          [](AdaptiveRate& r, bool throttled, double now) {
            r.Record(throttled, MonotonicToTimePoint(now));
          },
          py::arg("throttled"), py::arg("now"))
      .def(
          "state",
          [](const AdaptiveRate& r, double now) {
            const AdaptiveRateState s = r.State(MonotonicToTimePoint(now));
            py::dict d;
            d["enabled"] = s.enabled;
            d["fill_rate"] = s.fill_rate;
            d["max_capacity"] = s.max_capacity;
            d["capacity"] = s.capacity;
            d["measured_rate"] = s.measured_rate;
            d["last_max_rate"] = s.last_max_rate;
            d["time_window"] = s.time_window;
            d["calculated_rate"] = s.calculated_rate;
            return d;
          },
          py::arg("now"))
      .def_property_readonly("name", [](const AdaptiveRate& r) { return r.name(); })
      .def_property_readonly("admitted", &AdaptiveRate::admitted)
      .def_property_readonly("waited", &AdaptiveRate::waited)
      .def_property_readonly("refused", &AdaptiveRate::refused)
      .def_property_readonly("throttles", &AdaptiveRate::throttles);
}

}  // namespace python
}  // namespace mulligan
