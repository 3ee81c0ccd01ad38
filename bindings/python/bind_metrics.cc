// bindings/python/bind_metrics.cc — the engine's metrics registry and event stream.
//
// Python reads snapshots and exports of mulligan::MetricsRegistry::Default()
// (the registry every engine component of this module reports into) and
// reports its own calls through Metrics handles. Event listeners are Python
// callables invoked on the thread that caused the event, with the GIL taken
// for the call; exceptions they raise are reported as unraisable and never
// cross into C++.
#include <pybind11/functional.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "bindings.h"
#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"
#include "mulligan/limits/adaptive_rate.h"
#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
namespace python {
namespace {

py::dict HistogramDict(const MetricsSnapshot::Histogram& h) {
  py::dict d;
  d["upper_bounds"] = h.upper_bounds;
  d["counts"] = h.counts;
  d["count"] = h.count;
  d["sum"] = h.sum;
  return d;
}

py::dict SnapshotDict(const MetricsSnapshot& s) {
  py::dict d;
  d["name"] = s.name;
  d["calls"] = s.calls;
  d["attempts"] = s.attempts;
  d["retries"] = s.retries;
  py::dict by_reason;
  for (int i = 0; i < kRetryReasonCount; ++i) {
    by_reason[RetryReasonName(static_cast<RetryReason>(i))] = s.retries_by_reason[i];
  }
  d["retries_by_reason"] = by_reason;
  d["successes"] = s.successes;
  d["failures"] = s.failures;
  d["fallbacks"] = s.fallbacks;
  d["short_circuits"] = s.short_circuits;
  d["hedges"] = s.hedges;  // (Added in 0.5.)
  d["hedges_won"] = s.hedges_won;
  d["hedge_cancelled"] = s.hedge_cancelled;
  d["cancelled"] = s.cancelled;
  py::dict rejections;
  for (int i = 0; i < kRejectionReasonCount; ++i) {
    rejections[RejectionReasonName(static_cast<RejectionReason>(i))] = s.rejections_by_reason[i];
  }
  d["rejections_by_reason"] = rejections;
  d["circuit_opens"] = s.circuit_opens;
  py::list transitions;
  for (int f = 0; f < 6; ++f) {
    for (int t = 0; t < 6; ++t) {
      if (s.transitions[f][t] == 0) continue;
      transitions.append(py::make_tuple(BreakerStateName(static_cast<BreakerState>(f)),
                                        BreakerStateName(static_cast<BreakerState>(t)),
                                        s.transitions[f][t]));
    }
  }
  d["breaker_transitions"] = transitions;
  d["breaker_state"] = s.breaker_state < 0
                           ? py::object(py::none())
                           : py::object(py::str(BreakerStateName(
                                 static_cast<BreakerState>(s.breaker_state))));
  d["in_flight"] = s.in_flight;
  d["waiting_to_retry"] = s.waiting_to_retry;
  d["call_duration_seconds"] = HistogramDict(s.call_duration_seconds);
  d["attempts_per_call"] = HistogramDict(s.attempts_per_call);
  d["retry_delay_seconds"] = HistogramDict(s.retry_delay_seconds);
  return d;
}

py::dict EventDict(const Event& e) {
  py::dict d;
  d["kind"] = EventKindName(e.kind);
  d["name"] = std::string(e.name);
  d["attempt"] = e.attempt;
  d["delay"] = DurationToSeconds(e.delay);
  d["error_kind"] = ErrorKindName(e.error);
  d["http_status"] = e.http_status;
  d["retry_reason"] = RetryReasonName(e.retry_reason);
  d["stop_reason"] = StopReasonName(e.stop_reason);
  d["elapsed"] = DurationToSeconds(e.elapsed);
  if (e.kind == EventKind::kBreakerTransition) {
    d["from_state"] = BreakerStateName(e.from);
    d["to_state"] = BreakerStateName(e.to);
    d["transition_reason"] = e.transition_reason;
  }
  return d;
}

// The tracked overload primitives (0.4) as plain dicts.
py::dict LimitsDict(const LimitsSnapshot& limits) {
  static constexpr const char* kKinds[] = {"token_bucket", "quota", "ratio"};
  py::list budgets, throttles, bulkheads, limiters, adaptive;
  for (const auto& b : limits.budgets) {
    py::dict d;
    d["name"] = b.name;
    d["kind"] = b.kind >= 0 && b.kind < 3 ? kKinds[b.kind] : "unknown";
    d["tokens"] = b.tokens;
    d["max_tokens"] = b.max_tokens;
    d["retries_allowed"] = b.retries_allowed;
    d["retries_refused"] = b.retries_refused;
    budgets.append(d);
  }
  for (const auto& t : limits.throttles) {
    py::dict d;
    d["name"] = t.name;
    d["requests"] = t.requests;
    d["accepts"] = t.accepts;
    d["probability"] = t.probability;
    d["rejections"] = t.rejections;
    throttles.append(d);
  }
  for (const auto& b : limits.bulkheads) {
    py::dict d;
    d["name"] = b.name;
    d["max_concurrent"] = b.max_concurrent;
    d["max_queue"] = b.max_queue;
    d["in_flight"] = b.in_flight;
    d["queued"] = b.queued;
    d["rejected_full"] = b.rejected_full;
    d["rejected_timeout"] = b.rejected_timeout;
    d["queue_wait_seconds"] = HistogramDict(b.queue_wait_seconds);
    bulkheads.append(d);
  }
  for (const auto& l : limits.rate_limiters) {
    py::dict d;
    d["name"] = l.name;
    d["admitted"] = l.admitted;
    d["waited"] = l.waited;
    d["refused"] = l.refused;
    d["wait_seconds"] = HistogramDict(l.wait_seconds);
    limiters.append(d);
  }
  for (const auto& a : limits.adaptive_rates) {
    py::dict d;
    d["name"] = a.name;
    d["enabled"] = a.enabled;
    d["fill_rate"] = a.fill_rate;
    d["measured_rate"] = a.measured_rate;
    d["admitted"] = a.admitted;
    d["waited"] = a.waited;
    d["refused"] = a.refused;
    d["throttles"] = a.throttles;
    adaptive.append(d);
  }
  py::dict out;
  out["budgets"] = budgets;
  out["throttles"] = throttles;
  out["bulkheads"] = bulkheads;
  out["rate_limiters"] = limiters;
  out["adaptive_rates"] = adaptive;
  py::list outboxes;  // (Added in 0.6.)
  for (const auto& o : limits.outboxes) {
    py::dict d;
    d["name"] = o.name;
    d["pending"] = o.pending;
    d["leased"] = o.leased;
    d["done"] = o.done;
    d["dead"] = o.dead;
    d["depth"] = o.pending + o.leased;
    d["oldest_age_seconds"] = o.oldest_age_seconds;
    py::dict deliveries;
    deliveries["success"] = o.deliveries_success;
    deliveries["failure"] = o.deliveries_failure;
    deliveries["lease_expired"] = o.deliveries_lease_expired;
    d["deliveries"] = deliveries;
    d["dead_letters"] = o.dead_letters;
    outboxes.append(d);
  }
  out["outboxes"] = outboxes;
  py::list shared;  // (Added in 0.6.)
  for (const auto& s : limits.shared_states) {
    py::dict d;
    d["part"] = s.part;
    d["name"] = s.name;
    d["fallback"] = s.fallback;
    d["fallback_periods"] = s.fallback_periods;
    shared.append(d);
  }
  out["shared_states"] = shared;
  return out;
}

TimePoint NowOr(std::optional<double> now) {
  return now ? MonotonicToTimePoint(*now) : SystemClock::Default()->Now();
}

// The wall time outboxes are read at: a fake clock's reading is also the
// Unix seconds of an Outbox driven by it (mulligan.Outbox(clock=...)).
std::optional<WallTime> WallOr(std::optional<double> now) {
  if (!now) return std::nullopt;
  return UnixToWallTime(*now);
}

StopReason ParseStopReason(const std::string& name) {
  for (int i = 0; i <= static_cast<int>(StopReason::kCircuitOpen); ++i) {
    if (name == StopReasonName(static_cast<StopReason>(i))) return static_cast<StopReason>(i);
  }
  for (StopReason r : {StopReason::kStopCondition, StopReason::kBulkheadFull,
                       StopReason::kRateLimited}) {
    if (name == StopReasonName(r)) return r;
  }
  throw py::value_error("unknown stop reason: " + name);
}

}  // namespace

namespace {

void BindMetricsClass(py::module_& m) {
  py::class_<Metrics, std::unique_ptr<Metrics, py::nodelete>>(
      m, "Metrics", "The metrics of one name (owned by the registry; never freed).")
      .def_property_readonly("name", &Metrics::name)
      .def("call_started", &Metrics::CallStarted)
      .def("attempt_failed",
           [](Metrics& self, int attempt, const Outcome& outcome, const Decision& decision,
              double elapsed) {
             self.AttemptFailed(attempt, outcome, decision, SecondsToDuration(elapsed, "elapsed"));
           },
           py::arg("attempt"), py::arg("outcome"), py::arg("decision"), py::arg("elapsed"))
      .def("retry_wait_ended", &Metrics::RetryWaitEnded)
      .def("short_circuited", &Metrics::ShortCircuited, py::arg("attempt"))
      .def("call_succeeded",
           [](Metrics& self, int attempts, double elapsed) {
             self.CallSucceeded(attempts, SecondsToDuration(elapsed, "elapsed"));
           },
           py::arg("attempts"), py::arg("elapsed"))
      .def("untimed_first_attempt_successes", &Metrics::UntimedFirstAttemptSuccesses,
           py::arg("count"),
           "Flushes successes counted on the Python hot path (first attempt, untimed).")
      .def("call_failed",
           [](Metrics& self, int attempts, double elapsed, const std::string& stop_reason) {
             self.CallFailed(attempts, SecondsToDuration(elapsed, "elapsed"),
                             ParseStopReason(stop_reason));
           },
           py::arg("attempts"), py::arg("elapsed"), py::arg("stop_reason"))
      .def("fallback_used", &Metrics::FallbackUsed)
      .def("snapshot", [](const Metrics& self) { return SnapshotDict(self.Snapshot()); });

}

void BindRegistryFunctions(py::module_& m) {
  m.def("metrics", [](const std::string& name) { return MetricsRegistry::Default().Get(name); },
        py::arg("name"), py::return_value_policy::reference,
        "Returns the metrics of `name` in the default registry, creating them.");
  m.def("metrics_snapshot",
        [] {
          py::list out;
          for (const MetricsSnapshot& s : MetricsRegistry::Default().Snapshot()) {
            out.append(SnapshotDict(s));
          }
          return out;
        },
        "Snapshots of every name, sorted by name.");
  m.def("metrics_prometheus",
        [](std::optional<double> now) {
          return MetricsRegistry::Default().ToPrometheus(NowOr(now), WallOr(now));
        },
        py::arg("now") = py::none(),
        "The Prometheus text; windowed gauges read at `now` (monotonic seconds; None: now), "
        "outboxes at `now` as Unix seconds (None: time.time()).");
  m.def("metrics_json",
        [](std::optional<double> now) {
          return MetricsRegistry::Default().ToJson(NowOr(now), WallOr(now));
        },
        py::arg("now") = py::none());
  m.def("metrics_limits_snapshot",
        [](std::optional<double> now) {
          return LimitsDict(MetricsRegistry::Default().SnapshotLimits(NowOr(now), WallOr(now)));
        },
        py::arg("now") = py::none(),
        "The tracked budgets, throttles, bulkheads, rate limiters and adaptive rates (0.4).");
  m.def("metrics_track",
        [](std::shared_ptr<RetryBudget> p) { MetricsRegistry::Default().Track(p); }, py::arg("obj"));
  m.def("metrics_track",
        [](std::shared_ptr<AdaptiveThrottle> p) { MetricsRegistry::Default().Track(p); },
        py::arg("obj"));
  m.def("metrics_track",
        [](std::shared_ptr<Bulkhead> p) { MetricsRegistry::Default().Track(p); }, py::arg("obj"));
  m.def("metrics_track",
        [](std::shared_ptr<RateLimiter> p) { MetricsRegistry::Default().Track(p); }, py::arg("obj"));
  m.def("metrics_track",
        [](std::shared_ptr<AdaptiveRate> p) { MetricsRegistry::Default().Track(p); },
        py::arg("obj"),
        "Exports a budget, throttle, bulkhead, rate limiter or adaptive rate (weakly; 0.4).");
  m.def("metrics_clear", [] { MetricsRegistry::Default().Clear(); });
  m.def(
      "add_event_listener",
      [](py::function listener, std::vector<std::string> kinds) {
        uint32_t mask = 0;
        for (const std::string& kind : kinds) {
          bool known = false;
          for (int i = 0; i <= static_cast<int>(EventKind::kRejected); ++i) {
            if (kind == EventKindName(static_cast<EventKind>(i))) {
              mask |= 1u << i;
              known = true;
            }
          }
          if (!known) throw py::value_error("unknown event kind: " + kind);
        }
        if (kinds.empty()) mask = ~0u;
        // The callable is shared so that the C++ copy can be destroyed with
        // the GIL held (py::function's destructor needs it).
        auto held = std::shared_ptr<py::function>(new py::function(std::move(listener)),
                                                  [](py::function* f) {
                                                    py::gil_scoped_acquire gil;
                                                    delete f;
                                                  });
        return MetricsRegistry::Default().AddListener([held, mask](const Event& e) {
          if (!(mask & (1u << static_cast<int>(e.kind)))) return;
          py::gil_scoped_acquire gil;
          try {
            (*held)(EventDict(e));
          } catch (py::error_already_set& error) {
            error.discard_as_unraisable("mulligan event listener");
          }
        });
      },
      py::arg("listener"), py::arg("kinds"),
      "Subscribes `listener(event: dict)` to the events of `kinds` (all when empty); "
      "returns an id for remove_event_listener.");
  m.def("remove_event_listener",
        [](uint64_t id) { return MetricsRegistry::Default().RemoveListener(id); }, py::arg("id"));
}

}  // namespace

void BindMetrics(py::module_& m) {
  BindMetricsClass(m);
  BindRegistryFunctions(m);
}

}  // namespace python
}  // namespace mulligan
