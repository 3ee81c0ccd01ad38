// bindings/python/bind_config.cc — PolicyRegistry (mulligan/config/config.h): named retry
// policies, breaker options and client settings from a configuration file.
//
// Loads release the GIL (they read a file and parse it). Reports, breaker
// options and client settings cross as plain dicts with durations in float
// seconds; policies as the RetryPolicy bound in bind_retry.cc (a copy: the
// Python object is independent of later reloads).
#include <memory>
#include <string>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/base/clock.h"
#include "mulligan/config/config.h"
#include "mulligan/limits/redis_rate_limiter.h"

namespace mulligan {
namespace python {
namespace {

py::dict ReportDict(const LoadReport& report) {
  py::dict d;
  d["source"] = Utf8(report.source);
  d["policies"] = report.policies;
  d["breakers"] = report.breakers;
  d["clients"] = report.clients;
  d["warnings"] = report.warnings;
  d["budgets"] = report.budgets;
  d["throttles"] = report.throttles;
  d["bulkheads"] = report.bulkheads;
  d["rate_limiters"] = report.rate_limiters;
  d["adaptive_rates"] = report.adaptive_rates;  // (Added in 0.5.)
  d["state"] = report.state;                    // (Added in 0.6.)
  d["shared_breakers"] = report.shared_breakers;
  d["shared_rate_limiters"] = report.shared_rate_limiters;
  return d;
}

py::object NameOrNone(const std::string& name) {
  return name.empty() ? py::object(py::none()) : py::object(Utf8(name));
}

// Runs a load with the GIL released, then converts (or raises) with it held.
template <typename F>
py::dict RunLoad(F load) {
  Result<LoadReport> report = [&] {
    py::gil_scoped_release release;
    return load();
  }();
  return ReportDict(Unwrap(std::move(report)));
}

py::object OptionalSeconds(const std::optional<Duration>& d) {
  if (!d) return py::none();
  return py::float_(DurationToSeconds(*d));
}

const char* WindowName(WindowKind kind) {
  switch (kind) {
    case WindowKind::kNone: return "none";
    case WindowKind::kCount: return "count";
    case WindowKind::kTime: return "time";
  }
  return "unknown";
}

py::dict BreakerDict(const CircuitBreakerOptions& o) {
  py::dict d;
  d["name"] = Utf8(o.name);
  d["failure_threshold"] = o.failure_threshold;
  d["window"] = WindowName(o.window);
  d["window_size"] = o.window_size;
  d["window_duration"] = DurationToSeconds(o.window_duration);
  d["window_buckets"] = o.window_buckets;
  d["failure_rate_threshold"] = o.failure_rate_threshold;
  d["minimum_calls"] = o.minimum_calls;
  d["slow_call_duration"] = OptionalSeconds(o.slow_call_duration);
  d["slow_call_rate_threshold"] = o.slow_call_rate_threshold;
  d["reset_timeout"] = DurationToSeconds(o.reset_timeout);
  d["reset_timeout_multiplier"] = o.reset_timeout_multiplier;
  d["max_reset_timeout"] = DurationToSeconds(o.max_reset_timeout);
  d["half_open_max_calls"] = o.half_open_max_calls;
  d["permit_timeout"] = DurationToSeconds(o.permit_timeout);
  d["max_half_open_duration"] = OptionalSeconds(o.max_half_open_duration);
  return d;
}

py::dict ClientDict(const ClientSettings& c) {
  py::dict d;
  d["policy"] = c.policy.empty() ? py::object(py::none()) : py::object(Utf8(c.policy));
  d["breaker"] = c.breaker.empty() ? py::object(py::none()) : py::object(Utf8(c.breaker));
  d["attempt_timeout"] = DurationToSeconds(c.attempt_timeout);
  d["connect_timeout"] = DurationToSeconds(c.connect_timeout);
  d["verify_tls"] = c.verify_tls;
  d["user_agent"] = Utf8(c.user_agent);
  // "origin", "host", "path", or the list of path templates (Client's
  // breaker={"key": ...} spelling).
  switch (c.breaker_key.kind) {
    case BreakerKeyKind::kHost: d["breaker_key"] = "host"; break;
    case BreakerKeyKind::kPath: d["breaker_key"] = "path"; break;
    case BreakerKeyKind::kPathTemplate: {
      py::list templates;
      for (const std::string& t : c.breaker_key.templates) templates.append(Utf8(t));
      d["breaker_key"] = templates;
      break;
    }
    case BreakerKeyKind::kOrigin:
    case BreakerKeyKind::kFunction: d["breaker_key"] = "origin"; break;
  }
  d["method_rule"] = c.method_rule;
  // None: not given; "all": JSON null (every method); else the list.
  if (c.all_methods) {
    d["allowed_methods"] = "all";
  } else if (c.allowed_methods) {
    py::list methods;
    for (const std::string& m : *c.allowed_methods) methods.append(Utf8(m));
    d["allowed_methods"] = methods;
  } else {
    d["allowed_methods"] = py::none();
  }
  // A "budgets" entry, or None; budget_off: the file's null (no budget).
  d["budget"] = NameOrNone(c.budget);
  d["budget_off"] = c.budget_off;
  return d;
}

// The policy fields bind_retry.cc does not expose, as a dict.
py::dict PolicyExtras(const RetryPolicy& p) {
  const RetryOptions& o = p.options();
  py::dict d;
  d["jitter_fraction"] = o.backoff.jitter_fraction;
  d["retry_after_overflow"] =
      o.retry_after_overflow == RetryAfterOverflow::kClamp ? "clamp" : "stop";
  d["respect_retry_after"] = o.respect_retry_after;
  py::list errors;
  for (ErrorKind kind : o.retryable_errors) errors.append(ErrorKindName(kind));
  d["retryable_errors"] = errors;
  py::list codes;
  for (int code : o.retryable_grpc_codes) {
    const char* name = GrpcStatusCodeName(code);
    codes.append(name ? py::str(name) : py::str(std::to_string(code)));
  }
  d["retryable_grpc_codes"] = codes;
  return d;
}

}  // namespace

void BindConfig(py::module_& m) {
  py::class_<PolicyRegistry, std::shared_ptr<PolicyRegistry>>(
      m, "PolicyRegistry",
      "Named retry policies, breaker options and client settings from a configuration\n"
      "file; loads swap everything atomically and a failed load keeps the old one.\n"
      "Thread-safe.")
      .def(py::init([]() { return std::make_shared<PolicyRegistry>(); }))
      .def(
          "load_file",
          [](PolicyRegistry& r, const std::string& path) {
            return RunLoad([&] { return r.LoadFile(path); });
          },
          py::arg("path"))
      .def(
          "load_string",
          [](PolicyRegistry& r, const std::string& text, const std::string& source) {
            return RunLoad([&] { return r.LoadString(text, source); });
          },
          py::arg("text"), py::arg("source") = "<string>")
      .def("load_env", [](PolicyRegistry& r) { return RunLoad([&] { return r.LoadFromEnvironment(); }); })
      .def("reload", [](PolicyRegistry& r) { return RunLoad([&] { return r.Reload(); }); })
      .def("report", [](const PolicyRegistry& r) { return ReportDict(MakeLoadReport(*r.Snapshot())); })
      .def(
          "policy",
          [](const PolicyRegistry& r, const std::string& name) {
            std::shared_ptr<const RetryPolicy> p = Unwrap(r.Policy(name));
            return RetryPolicy(*p);
          },
          py::arg("name"))
      .def(
          "policy_with_extras",
          [](const PolicyRegistry& r, const std::string& name) {
            // One lookup, so both halves come from the same configuration
            // even while another thread reloads.
            std::shared_ptr<const RetryPolicy> p = Unwrap(r.Policy(name));
            return py::make_tuple(RetryPolicy(*p), PolicyExtras(*p));
          },
          py::arg("name"))
      .def(
          "breaker",
          [](const PolicyRegistry& r, const std::string& name) {
            return BreakerDict(Unwrap(r.Breaker(name)));
          },
          py::arg("name"))
      .def(
          "client",
          [](const PolicyRegistry& r, const std::string& name) {
            return ClientDict(Unwrap(r.Client(name)));
          },
          py::arg("name"))
      // (Added in 0.4.) What a policy names, and the shared parts by name
      // (PolicyRegistry::BudgetNamed and the others: one object per name,
      // kept across reloads that leave its options unchanged).
      .def(
          "limits",
          [](const PolicyRegistry& r, const std::string& policy) {
            PolicyLimits l = Unwrap(r.Limits(policy));
            py::dict d;
            d["budget"] = NameOrNone(l.budget);
            d["throttle"] = NameOrNone(l.throttle);
            d["bulkhead"] = NameOrNone(l.bulkhead);
            d["rate_limiter"] = NameOrNone(l.rate_limiter);
            d["adaptive_rate"] = NameOrNone(l.adaptive_rate);  // (Added in 0.5.)
            return d;
          },
          py::arg("policy"))
      .def(
          "hedging",
          [](const PolicyRegistry& r, const std::string& policy) -> py::object {
            // (Added in 0.6.) A gRPC service config's hedgingPolicy of the
            // policy: {"max_attempts": int, "delay": seconds}, or None.
            std::optional<HedgingOptions> h = Unwrap(r.Hedging(policy));
            if (!h) return py::none();
            py::dict d;
            d["max_attempts"] = h->max_attempts;
            d["delay"] = DurationToSeconds(h->hedging_delay);
            return std::move(d);
          },
          py::arg("policy"))
      .def(
          "budget",
          [](const PolicyRegistry& r, const std::string& name, std::optional<double> now) {
            // Dates a ratio budget's creation on the caller's clock
            // (time.monotonic() or a FakeClock's), as RetryBudget.ratio does.
            FakeClock at(now ? MonotonicToTimePoint(*now) : SystemClock::Default()->Now(),
                         WallTime());
            return Unwrap(r.BudgetNamed(name, &at));
          },
          py::arg("name"), py::arg("now") = py::none())
      .def(
          "throttle",
          [](const PolicyRegistry& r, const std::string& name) {
            return Unwrap(r.ThrottleNamed(name));
          },
          py::arg("name"))
      .def(
          "bulkhead",
          [](const PolicyRegistry& r, const std::string& name) {
            return Unwrap(r.BulkheadNamed(name));
          },
          py::arg("name"))
      .def(
          "rate_limiter",
          [](const PolicyRegistry& r, const std::string& name) {
            return Unwrap(r.RateLimiterNamed(name));
          },
          py::arg("name"))
      .def(
          "state",
          // (Added in 0.6.) The "state" section, or None: {"redis": URL (may
          // hold a password: never print it), "prefix", "timeout",
          // "connect_timeout" (seconds or None)}.
          [](const PolicyRegistry& r) -> py::object {
            std::shared_ptr<const ConfigSnapshot> s = r.Snapshot();
            if (!s->state) return py::none();
            py::dict d;
            d["redis"] = Utf8(s->state->redis);
            d["prefix"] = Utf8(s->state->prefix);
            d["timeout"] = DurationToSeconds(s->state->timeout);
            d["connect_timeout"] = OptionalSeconds(s->state->connect_timeout);
            return d;
          })
      .def(
          "set_shared_state",
          // (Added in 0.6.) The _core.RedisState of the shared rate limiters
          // (PolicyRegistry::SetSharedRateLimiterBackend), or None.
          [](PolicyRegistry& r, const py::object& state) {
            std::shared_ptr<RedisState> redis = StateFromPython(state);
            if (redis == nullptr) {
              r.SetSharedRateLimiterBackend(nullptr);
              return;
            }
            r.SetSharedRateLimiterBackend(Unwrap(CreateRedisRateLimiterBackend(std::move(redis))));
          },
          py::arg("state"))
      .def(
          "adaptive_rate",
          [](const PolicyRegistry& r, const std::string& name, std::optional<double> now) {
            // (Added in 0.5.) Dates the rate's start on the caller's clock
            // (time.monotonic() or a FakeClock's), as _core.AdaptiveRate does.
            FakeClock at(now ? MonotonicToTimePoint(*now) : SystemClock::Default()->Now(),
                         WallTime());
            return Unwrap(r.AdaptiveRateNamed(name, &at));
          },
          py::arg("name"), py::arg("now") = py::none());
}

}  // namespace python
}  // namespace mulligan
