// bindings/python/bindings.h — private declarations shared by the _core binding files.
//
// Each bind_<concept>.cc defines one Bind<Concept>(module) called from
// module.cc. convert.cc holds the only two kinds of logic the bindings have:
// unit conversion (float seconds <-> std::chrono) and the one helper that turns
// a non-OK mulligan::Status into a Python exception from mulligan._errors.

#ifndef MULLIGAN_BINDINGS_BINDINGS_H_
#define MULLIGAN_BINDINGS_BINDINGS_H_

#include <pybind11/pybind11.h>

#include <string>
#include <utility>

#include <memory>

#include "mulligan/base/clock.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/http/client.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/base/status.h"
#include "mulligan/state/redis.h"

namespace mulligan {
namespace python {

namespace py = pybind11;

void BindVersion(py::module_& m);
void BindEnums(py::module_& m);
void BindRetry(py::module_& m);
void BindWaits(py::module_& m);
void BindRetryAfter(py::module_& m);
void BindConfig(py::module_& m);
void BindHttp(py::module_& m);
void BindHttpLoop(py::module_& m);
void BindBreaker(py::module_& m);
void BindMetrics(py::module_& m);
void BindIdempotency(py::module_& m);
void BindState(py::module_& m);  // (Added in 0.5.)

// The RedisState a Python `state=` argument holds (a _core.RedisState), or
// null for None; TypeError (pybind11's cast error) for anything else.
// (Added in 0.5.)
std::shared_ptr<RedisState> StateFromPython(const py::handle& state);
void BindPipeline(py::module_& m);
void BindRedact(py::module_& m);
void BindBudget(py::module_& m);  // (Added in 0.3.)
void BindLimits(py::module_& m);  // bind_limits.cc (Added in 0.3.)
void BindAdaptiveRate(py::module_& m);  // bind_adaptive_rate.cc (Added in 0.4.)
void BindAdapter(py::module_& m);
void BindOutbox(py::module_& m);  // bind_outbox.cc (Added in 0.5.)
void BindHedging(py::module_& m);  // bind_hedging.cc (Added in 0.5.)
void BindRedisBreaker(py::module_& m);  // bind_redis_breaker.cc (Added in 0.6.)
void BindSimulate(py::module_& m);  // bind_simulate.cc (Added in 0.6.)
void BindCounter(py::module_& m);  // bind_counter.cc (Added in 0.6.)

// The one Status -> Python exception helper. Builds the exception with
// mulligan._errors._from_status (imported at call time, so _errors never needs
// _core) and raises it: kInvalidArgument becomes ValueError, transport failures
// a mulligan.TransportError subclass carrying `info` (kind, attempts, ...).
// REQUIRES: the GIL is held; `status` is not OK.
[[noreturn]] void ThrowStatus(const Status& status, const HttpCallInfo* info = nullptr);

// The exception ThrowStatus raises, built but not raised (so that a caller
// may set attributes first). REQUIRES: the GIL is held; `status` is not OK.
py::object StatusError(const Status& status, const HttpCallInfo* info = nullptr);
// Raises `exc` (an exception instance) as the pending Python exception.
[[noreturn]] void RaiseError(py::object exc);

// Returns the value of `result` or raises through ThrowStatus.
template <typename T>
T Unwrap(Result<T> result) {
  if (!result.ok()) ThrowStatus(result.status());
  return std::move(result).value();
}

// Converts float seconds from Python into a Duration. NaN, infinities and
// values beyond the clock's range raise ValueError naming `field`; negative
// values are passed through so that the core's validation names them.
Duration SecondsToDuration(double seconds, const char* field);
// Converts a Duration into float seconds.
double DurationToSeconds(Duration duration);
// Converts a time.monotonic() reading into a steady-clock TimePoint. Both count
// seconds from the same origin on Linux (CLOCK_MONOTONIC); all that matters is
// that every `now` given to one session is converted the same way.
TimePoint MonotonicToTimePoint(double now);
double TimePointToMonotonic(TimePoint time);
// Converts a time.time() reading (Unix seconds) into a system-clock WallTime.
WallTime UnixToWallTime(double now_unix);

// Returns the core breaker of a _core.CircuitBreaker object (shared: the
// caller keeps it alive). Raises TypeError for anything else.
std::shared_ptr<CircuitBreaker> BreakerOf(py::handle core_breaker);
// Returns the pipeline of a _core.Pipeline object (the caller keeps the
// object alive). Raises TypeError (pybind11's cast error) for anything else.
// (Added in 0.5.)
const Pipeline& PipelineOf(py::handle core_pipeline);
// Returns the breaker options of a dict holding every keyword argument of
// _core.CircuitBreaker but the name (mulligan.BreakerConfig.breaker_kwargs(),
// durations in seconds; "window" None or "none" for no window). Raises
// ValueError for a missing key or a bad duration; the core validates ranges.
CircuitBreakerOptions BreakerOptionsFromDict(const py::dict& d);

// Decodes bytes received from the network as ISO-8859-1, like http.client:
// never fails, whatever the peer sent.
py::str Latin1(const std::string& bytes);
// Decodes text produced by mulligan (messages, URLs) as UTF-8 with replacement.
py::str Utf8(const std::string& text);

}  // namespace python
}  // namespace mulligan

#endif  // MULLIGAN_BINDINGS_BINDINGS_H_
