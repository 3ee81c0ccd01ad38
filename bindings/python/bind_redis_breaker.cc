// bindings/python/bind_redis_breaker.cc — _core.RedisSharedBreaker: a core
// breaker shared through a RedisState (mulligan/state/redis_breaker.h).
// (Added in 0.6.)
//
// Thin: it attaches the sharing to the core breaker of a _core.CircuitBreaker,
// so the hot path (BreakerGuard) is unchanged. The sharing's threads are C++
// threads: the on_sharing callable is called on them with the GIL taken, and
// stopping them (close(), or the object's end) releases the GIL while they
// join, since one of them may be waiting for the GIL to run that callable.
#include <Python.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <utility>

#include "bindings.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/state/redis.h"
#include "mulligan/state/redis_breaker.h"

namespace mulligan {
namespace python {
namespace {

// The Python callable of on_sharing; dropped with the GIL held.
struct SharingHook {
  py::object fn;
  ~SharingHook() {
    if (Py_IsInitialized()) {
      py::gil_scoped_acquire gil;
      fn = py::object();
    } else {
      fn.release();  // interpreter gone: leak rather than touch it
    }
  }
};

struct PySharedBreaker {
  std::unique_ptr<RedisSharedBreaker> impl;

  // Stops the threads (without the GIL, see the file comment).
  void Close() {
    std::unique_ptr<RedisSharedBreaker> gone = std::move(impl);
    if (gone == nullptr) return;
    if (PyGILState_Check()) {
      py::gil_scoped_release release;
      gone.reset();
    } else {
      gone.reset();
    }
  }
  ~PySharedBreaker() { Close(); }

  RedisSharedBreaker& Get() const {
    if (impl == nullptr) throw std::runtime_error("the shared breaker is closed");
    return *impl;
  }
};

PySharedBreaker* MakeShared(py::handle state, py::handle core_breaker, double poll_interval,
                            const std::string& writer_id, py::object on_sharing) {
  std::shared_ptr<RedisState> redis = StateFromPython(state);
  if (redis == nullptr) ThrowStatus(InvalidArgumentError("state must be a RedisState"));
  RedisSharedBreakerOptions options;
  options.poll_interval = SecondsToDuration(poll_interval, "poll_interval");
  options.writer_id = writer_id;
  SharingListener listener;
  if (!on_sharing.is_none()) {
    auto hook = std::make_shared<SharingHook>();
    hook->fn = std::move(on_sharing);
    listener = [hook](bool shared, const std::string& cause) {
      if (!Py_IsInitialized()) return;
      py::gil_scoped_acquire gil;
      try {
        hook->fn(shared, Utf8(cause));
      } catch (py::error_already_set& e) {
        e.discard_as_unraisable("mulligan shared breaker on_sharing");
      } catch (const std::exception&) {
      }
    };
  }
  std::shared_ptr<CircuitBreaker> breaker = BreakerOf(core_breaker);
  Result<std::unique_ptr<RedisSharedBreaker>> created = [&] {
    py::gil_scoped_release release;
    return RedisSharedBreaker::Create(std::move(redis), std::move(breaker), options,
                                      std::move(listener));
  }();
  auto out = std::make_unique<PySharedBreaker>();
  out->impl = Unwrap(std::move(created));
  return out.release();
}

}  // namespace

void BindRedisBreaker(py::module_& m) {
  py::class_<PySharedBreaker>(m, "RedisSharedBreaker",
                              "A core breaker shared through Redis (thread-safe).")
      .def(py::init(&MakeShared), py::arg("state"), py::arg("breaker"), py::kw_only(),
           py::arg("poll_interval") = 1.0, py::arg("writer_id") = "",
           py::arg("on_sharing") = py::none())
      .def_property_readonly("key", [](const PySharedBreaker& s) { return s.Get().key(); })
      .def("health",
           [](const PySharedBreaker& s) {
             RedisSharedBreakerHealth h = s.Get().Health();
             py::dict d;
             d["shared"] = h.shared;
             d["subscribed"] = h.subscribed;
             d["epoch"] = h.epoch;
             d["published"] = h.published;
             d["publish_failures"] = h.publish_failures;
             d["dropped"] = h.dropped;
             d["applied"] = h.applied;
             d["reads"] = h.reads;
             d["resubscriptions"] = h.resubscriptions;
             d["last_error"] = Utf8(h.last_error);
             d["writer_id"] = h.writer_id;
             return d;
           })
      .def("close", &PySharedBreaker::Close,
           "Stops sharing (joins the threads); the local breaker keeps serving.");
}

}  // namespace python
}  // namespace mulligan
