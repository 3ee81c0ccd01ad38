// bindings/python/bind_state.cc — RedisState, the Redis state backend
// (mulligan/state/redis.h). (Added in 0.5.)
//
// Construction connects once (bounded by connect_timeout) and every command
// is a network round trip bounded by command_timeout, so the GIL is released
// around both.
#include <memory>
#include <string>

#include "bindings.h"
#include "mulligan/state/redis.h"

namespace mulligan {
namespace python {

std::shared_ptr<RedisState> StateFromPython(const py::handle& state) {
  if (state.is_none()) return nullptr;
  return state.cast<std::shared_ptr<RedisState>>();
}

namespace {

std::shared_ptr<RedisState> MakeRedisState(const std::string& url, const std::string& prefix,
                                           double connect_timeout, double command_timeout) {
  RedisStateOptions options;
  options.url = url;
  options.prefix = prefix;
  // Error texts name the Python keywords (mulligan.RedisState(timeout=...,
  // connect_timeout=...)), not the C++ option names.
  options.connect_timeout_name = "connect_timeout";
  options.command_timeout_name = "timeout";
  options.connect_timeout = SecondsToDuration(connect_timeout, "connect_timeout");
  options.command_timeout = SecondsToDuration(command_timeout, "timeout");
  Result<std::shared_ptr<RedisState>> state = [&] {
    py::gil_scoped_release release;
    return RedisState::Create(options);
  }();
  return Unwrap(std::move(state));
}

}  // namespace

void BindState(py::module_& m) {
  py::class_<RedisState, std::shared_ptr<RedisState>>(
      m, "RedisState", "A connection to Redis holding shared state (thread-safe).")
      .def(py::init(&MakeRedisState), py::arg("url"), py::kw_only(),
           py::arg("prefix") = "mulligan", py::arg("connect_timeout") = 0.25,
           py::arg("command_timeout") = 0.25)
      .def_property_readonly("endpoint", &RedisState::endpoint)
      .def_property_readonly("prefix",
                             [](const RedisState& s) { return s.options().prefix; })
      .def("ping",
           [](RedisState& s) {
             Result<RedisValue> r = [&] {
               py::gil_scoped_release release;
               return s.Command({"PING"});
             }();
             if (!r.ok()) ThrowStatus(r.status());
           })
      .def("health", [](const RedisState& s) {
        StateBackendHealth h = s.Health();
        py::dict d;
        d["reachable"] = h.reachable;
        d["endpoint"] = h.endpoint;
        d["last_error"] = h.last_error;
        d["round_trips"] = h.round_trips;
        d["failures"] = h.failures;
        d["reconnects"] = h.reconnects;
        return d;
      });
}

}  // namespace python
}  // namespace mulligan
