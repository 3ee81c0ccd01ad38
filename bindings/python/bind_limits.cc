// bindings/python/bind_limits.cc — the bulkhead and the rate limiter for
// mulligan._core (core/include/mulligan/limits/). (Added in 0.3.)
//
//   b = _core.Bulkhead(name, max_concurrent, max_queue, max_wait)  # max_wait: seconds or None
//   b.try_acquire() -> bool; b.release(); b.enqueue() -> BulkheadTicket | None
//   t.granted; t.wait(timeout) -> bool (releases the GIL); t.cancel(); t.set_on_grant(fn)
//   l = _core.RateLimiter(name, rate, burst, max_wait, penalize_retry_after, max_keys)
//   l.acquire(key, now, max_wait) -> (admitted, wait, retry_in)   # seconds
//   l.penalize(key, until)
//   (0.6) _core.RateLimiter(..., state=_core.RedisState | None, fallback_rate=None):
//   the cells shared in Redis (limits/redis_rate_limiter.h); then every call
//   into the limiter releases the GIL (a round trip), and
//   l.acquire_detail(key, now, max_wait) -> (admitted, wait, retry_in, fallback)
//
// `now` and `until` are time.monotonic() readings (or a FakeClock's), in
// seconds. set_on_grant's function runs on the thread that released the
// slot, with the GIL taken for it; the asyncio front door passes a function
// that calls loop.call_soon_threadsafe, so the event loop is never blocked.
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/limits/redis_rate_limiter.h"
#include "mulligan/state/redis.h"

namespace mulligan {
namespace python {
namespace {

std::optional<Duration> OptionalSeconds(std::optional<double> seconds, const char* field) {
  if (!seconds) return std::nullopt;
  if (std::isnan(*seconds) || *seconds < 0) {
    throw py::value_error(std::string(field) + " must be >= 0 seconds or None");
  }
  if (std::isinf(*seconds)) return std::nullopt;
  return SecondsToDuration(*seconds, field);
}

double Seconds(Duration d) {
  return d >= Duration::max() / 2 ? std::numeric_limits<double>::infinity()
                                  : DurationToSeconds(d);
}

void BindBulkhead(py::module_& m) {
  py::class_<BulkheadTicket, std::shared_ptr<BulkheadTicket>>(
      m, "BulkheadTicket", "A place in a bulkhead's FIFO wait queue (thread-safe).")
      .def_property_readonly("granted", &BulkheadTicket::granted)
      .def_property_readonly("cancelled",
                             [](const BulkheadTicket& t) {
                               return t.state() == BulkheadTicket::State::kCancelled;
                             })
      .def(
          "wait",
          [](BulkheadTicket& t, std::optional<double> timeout) {
            const Duration d = timeout ? SecondsToDuration(std::max(*timeout, 0.0), "timeout")
                                       : Duration::max();
            py::gil_scoped_release release;
            return t.WaitFor(d);
          },
          py::arg("timeout") = py::none(),
          "Blocks (GIL released) until granted or `timeout` seconds pass; returns granted.")
      .def("cancel", &BulkheadTicket::Cancel,
           "Leaves the queue; a slot granted meanwhile goes on to the next waiter.")
      .def(
          "set_on_grant",
          [](BulkheadTicket& t, py::function fn) {
            // Released with the GIL taken: the last copy may die on a thread
            // that released the slot without holding it.
            std::shared_ptr<py::function> holder(new py::function(std::move(fn)),
                                                 [](py::function* f) {
                                                   py::gil_scoped_acquire gil;
                                                   delete f;
                                                 });
            t.SetOnGrant([holder] {
              py::gil_scoped_acquire gil;
              try {
                (*holder)();
              } catch (py::error_already_set& e) {
                e.discard_as_unraisable("mulligan bulkhead grant callback");
              }
            });
          },
          py::arg("fn"), "Calls fn() once when granted (at once if already granted).");

  py::class_<Bulkhead, std::shared_ptr<Bulkhead>>(
      m, "Bulkhead", "At most max_concurrent in flight, with a FIFO wait queue (thread-safe).")
      .def(py::init([](const std::string& name, int max_concurrent, int max_queue,
                       std::optional<double> max_wait) {
             BulkheadOptions o;
             o.name = name;
             o.max_concurrent = max_concurrent;
             o.max_queue = max_queue;
             o.max_wait = OptionalSeconds(max_wait, "max_wait");
             return Unwrap(Bulkhead::Create(o));
           }),
           py::arg("name"), py::arg("max_concurrent"), py::arg("max_queue") = 0,
           py::arg("max_wait") = py::none())
      .def("try_acquire", &Bulkhead::TryAcquire)
      .def("release", &Bulkhead::Release)
      .def("enqueue", &Bulkhead::Enqueue, "A ticket (maybe granted already), or None: queue full.")
      .def("count_full", &Bulkhead::CountFull)
      .def("count_timeout", &Bulkhead::CountTimeout)
      .def_property_readonly("full_message",
                             [](const Bulkhead& b) { return b.FullStatus().message(); })
      .def_property_readonly("name", &Bulkhead::name)
      .def_property_readonly("max_concurrent",
                             [](const Bulkhead& b) { return b.options().max_concurrent; })
      .def_property_readonly("max_queue", [](const Bulkhead& b) { return b.options().max_queue; })
      .def_property_readonly("max_wait",
                             [](const Bulkhead& b) -> std::optional<double> {
                               if (!b.options().max_wait) return std::nullopt;
                               return DurationToSeconds(*b.options().max_wait);
                             })
      .def_property_readonly("in_flight", &Bulkhead::in_flight)
      .def_property_readonly("queued", &Bulkhead::queued)
      .def_property_readonly("rejected_full", &Bulkhead::rejected_full)
      .def_property_readonly("rejected_timeout", &Bulkhead::rejected_timeout)
      .def_property_readonly("waits", &Bulkhead::waits)
      .def_property_readonly("wait_seconds",
                             [](const Bulkhead& b) { return static_cast<double>(b.wait_ns()) / 1e9; });
}

// The bound of one acquire: min(the limiter's max_wait, the call's).
Duration Bound(const RateLimiter& l, std::optional<double> max_wait) {
  Duration bound = l.options().max_wait ? *l.options().max_wait : Duration::max();
  if (max_wait) {
    const Duration own = *max_wait <= 0       ? Duration::zero()
                         : std::isinf(*max_wait) ? Duration::max()
                                                 : SecondsToDuration(*max_wait, "max_wait");
    bound = std::min(bound, own);
  }
  return bound;
}

// A shared limiter makes a Redis round trip: other threads run meanwhile.
// A local one stays a few atomics, where releasing the GIL would cost more
// than the call. (Added in 0.6.)
RateDecision AcquireReleasingGil(RateLimiter& l, const std::string& key, double now,
                                 Duration bound) {
  const TimePoint at = MonotonicToTimePoint(now);
  if (!l.shared()) return l.Acquire(key, at, bound);
  py::gil_scoped_release release;
  return l.Acquire(key, at, bound);
}

void BindRateLimiter(py::module_& m) {
  py::class_<RateLimiter, std::shared_ptr<RateLimiter>>(
      m, "RateLimiter", "GCRA rate limiter per key (thread-safe).")
      .def(py::init([](const std::string& name, double rate, double burst,
                       std::optional<double> max_wait, bool penalize, size_t max_keys,
                       const py::object& state, std::optional<double> fallback_rate) {
             RateLimiterOptions o;
             o.name = name;
             o.rate = rate;
             o.burst = burst;
             o.max_wait = OptionalSeconds(max_wait, "max_wait");
             o.penalize_retry_after = penalize;
             o.max_keys = max_keys;
             o.fallback_rate = fallback_rate;
             if (std::shared_ptr<RedisState> redis = StateFromPython(state)) {
               return Unwrap(CreateRedisRateLimiter(std::move(redis), o));
             }
             return Unwrap(RateLimiter::Create(o));
           }),
           py::arg("name"), py::arg("rate"), py::arg("burst") = 1.0,
           py::arg("max_wait") = py::none(), py::arg("penalize_retry_after") = false,
           py::arg("max_keys") = 10000, py::arg("state") = py::none(),
           py::arg("fallback_rate") = py::none())
      .def(
          "acquire",
          [](RateLimiter& l, const std::string& key, double now, std::optional<double> max_wait) {
            Duration bound = l.options().max_wait ? *l.options().max_wait : Duration::max();
            if (max_wait) {
              const Duration own = *max_wait <= 0 ? Duration::zero()
                                   : std::isinf(*max_wait)
                                       ? Duration::max()
                                       : SecondsToDuration(*max_wait, "max_wait");
              bound = std::min(bound, own);
            }
            const RateDecision d = AcquireReleasingGil(l, key, now, bound);
            return std::make_tuple(d.admitted, DurationToSeconds(d.wait),
                                   DurationToSeconds(d.retry_in));
          },
          py::arg("key"), py::arg("now"), py::arg("max_wait") = py::none(),
          "(admitted, wait, retry_in) in seconds; an admitted wait is reserved.")
      // (Added in 0.6.) acquire, plus whether the call was decided locally
      // because the shared state was unreachable (RateDecision::fallback).
      .def(
          "acquire_detail",
          [](RateLimiter& l, const std::string& key, double now, std::optional<double> max_wait) {
            const RateDecision d = AcquireReleasingGil(l, key, now, Bound(l, max_wait));
            return std::make_tuple(d.admitted, DurationToSeconds(d.wait),
                                   DurationToSeconds(d.retry_in), d.fallback);
          },
          py::arg("key"), py::arg("now"), py::arg("max_wait") = py::none())
      // (Added in 0.5.) The guard's hot path (python/mulligan/_limits): key
      // "", the limiter's own max_wait. Returns None when admitted with no
      // wait (no tuple or float is built: the common case costs one call
      // and no allocation), else the (admitted, wait, retry_in) of acquire.
      .def(
          "acquire_now",
          [](RateLimiter& l, double now) -> py::object {
            const RateDecision d = AcquireReleasingGil(
                l, std::string(), now,
                l.options().max_wait ? *l.options().max_wait : Duration::max());
            if (d.admitted && d.wait <= Duration::zero()) return py::none();
            return py::make_tuple(d.admitted, DurationToSeconds(d.wait),
                                  DurationToSeconds(d.retry_in));
          },
          py::arg("now"),
          "None: admitted now; else (admitted, wait, retry_in) in seconds, as acquire.")
      .def(
          "penalize",
          [](RateLimiter& l, const std::string& key, double until) {
            if (!l.shared()) {
              l.Penalize(key, MonotonicToTimePoint(until));
              return;
            }
            py::gil_scoped_release release;
            l.Penalize(key, MonotonicToTimePoint(until));
          },
          py::arg("key"), py::arg("until"))
      .def(
          "limited_message",
          [](const RateLimiter& l, double retry_in) {
            return l.LimitedStatus(SecondsToDuration(std::max(retry_in, 0.0), "retry_in"))
                .message();
          },
          py::arg("retry_in"))
      .def_property_readonly("name", &RateLimiter::name)
      .def_property_readonly("rate", [](const RateLimiter& l) { return l.options().rate; })
      .def_property_readonly("burst", [](const RateLimiter& l) { return l.options().burst; })
      .def_property_readonly("max_wait",
                             [](const RateLimiter& l) -> std::optional<double> {
                               if (!l.options().max_wait) return std::nullopt;
                               return DurationToSeconds(*l.options().max_wait);
                             })
      .def_property_readonly("penalize_retry_after",
                             [](const RateLimiter& l) { return l.options().penalize_retry_after; })
      .def_property_readonly("interval", [](const RateLimiter& l) { return Seconds(l.interval()); })
      .def_property_readonly("admitted", &RateLimiter::admitted)
      .def_property_readonly("waited", &RateLimiter::waited)
      .def_property_readonly("refused", &RateLimiter::refused)
      .def_property_readonly("key_count", &RateLimiter::key_count)
      .def_property_readonly("shared", &RateLimiter::shared)
      .def_property_readonly("fallback_rate",
                             [](const RateLimiter& l) { return l.options().fallback_rate; })
      .def_property_readonly("fallbacks", &RateLimiter::fallbacks);
}

}  // namespace

void BindLimits(py::module_& m) {
  BindBulkhead(m);
  BindRateLimiter(m);
}

}  // namespace python
}  // namespace mulligan
