// bindings/python/bind_budget.cc — retry budgets and adaptive throttling for
// mulligan._core (budget/budget.h, budget/throttle.h). (Added in 0.3.)
//
//   _core.RetryBudget.token_bucket(max_tokens, token_ratio, name="")
//   _core.RetryBudget.quota(capacity, retry_cost, timeout_cost, throttling_cost,
//                           no_retry_increment, name="")
//   _core.RetryBudget.ratio(ttl, percent, min_retries_per_second, name="", now=None)
//   _core.AdaptiveThrottle(window, k, seed=None, name="")
//
// `now` values are time.monotonic() readings (or a FakeClock's) in seconds.
// Bad options raise ValueError naming the field. Every method is
// thread-safe (the core objects are) and none blocks.
#include <memory>
#include <optional>
#include <string>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"

namespace mulligan {
namespace python {
namespace {

BudgetFailure FailureOf(const std::string& kind) {
  if (kind == "timeout") return BudgetFailure::kTimeout;
  if (kind == "throttling") return BudgetFailure::kThrottling;
  if (kind == "other") return BudgetFailure::kOther;
  throw py::value_error("budget failure kind must be 'other', 'timeout' or 'throttling', got " +
                        kind);
}

std::shared_ptr<RetryBudget> Make(BudgetOptions options, std::optional<double> now) {
  FakeClock at(now ? MonotonicToTimePoint(*now) : SystemClock::Default()->Now(), WallTime());
  options.clock = &at;
  return Unwrap(RetryBudget::Create(options));
}

void BindRetryBudget(py::module_& m) {
  py::class_<RetryBudget, std::shared_ptr<RetryBudget>>(
      m, "RetryBudget", "A retry budget (thread-safe); see mulligan.RetryBudget.")
      .def_static(
          "token_bucket",
          [](double max_tokens, double token_ratio, const std::string& name) {
            BudgetOptions o;
            o.name = name;
            o.kind = BudgetKind::kTokenBucket;
            o.token_bucket.max_tokens = max_tokens;
            o.token_bucket.token_ratio = token_ratio;
            return Make(o, std::nullopt);
          },
          py::arg("max_tokens"), py::arg("token_ratio"), py::arg("name") = "")
      .def_static(
          "quota",
          [](int64_t capacity, int64_t retry_cost, int64_t timeout_cost, int64_t throttling_cost,
             int64_t no_retry_increment, const std::string& name) {
            BudgetOptions o;
            o.name = name;
            o.kind = BudgetKind::kQuota;
            o.quota = {capacity, retry_cost, timeout_cost, throttling_cost, no_retry_increment};
            return Make(o, std::nullopt);
          },
          py::arg("capacity"), py::arg("retry_cost"), py::arg("timeout_cost"),
          py::arg("throttling_cost"), py::arg("no_retry_increment"), py::arg("name") = "")
      .def_static(
          "ratio",
          [](double ttl, double percent, double min_retries_per_second, const std::string& name,
             std::optional<double> now) {
            BudgetOptions o;
            o.name = name;
            o.kind = BudgetKind::kRatio;
            if (!(ttl >= 1.0 && ttl <= 60.0)) {
              // Checked here too: SecondsToDuration would name another field.
              o.ratio.ttl = Duration::zero();
            } else {
              o.ratio.ttl = SecondsToDuration(ttl, "ratio.ttl");
            }
            o.ratio.percent = percent;
            o.ratio.min_retries_per_second = min_retries_per_second;
            return Make(o, now);
          },
          py::arg("ttl"), py::arg("percent"), py::arg("min_retries_per_second"),
          py::arg("name") = "", py::arg("now") = py::none())
      .def("tokens", [](RetryBudget& b, double now) { return b.Tokens(MonotonicToTimePoint(now)); },
           py::arg("now"), "The room left (tokens, capacity or retries), after folding successes.")
      .def("add_successes", [](RetryBudget& b, uint64_t n) { b.AddSuccesses(n); }, py::arg("n"),
           "Counts n successes that needed no retry (lazy).")
      .def("on_call_started",
           [](RetryBudget& b, double now) { b.OnCallStarted(MonotonicToTimePoint(now)); },
           py::arg("now"))
      .def("on_failure",
           [](RetryBudget& b, const std::string& kind, double now) {
             b.OnFailure(FailureOf(kind), MonotonicToTimePoint(now));
           },
           py::arg("kind"), py::arg("now"))
      .def("on_retried_success", &RetryBudget::OnRetriedSuccess, py::arg("cost"))
      .def("try_retry",
           [](RetryBudget& b, const std::string& kind, double now) {
             return b.TryRetry(FailureOf(kind), MonotonicToTimePoint(now));
           },
           py::arg("kind"), py::arg("now"), "The cost taken, or -1 when refused.")
      .def_property_readonly("kind", [](const RetryBudget& b) { return BudgetKindName(b.kind()); })
      .def_property_readonly("name", [](const RetryBudget& b) { return Utf8(b.name()); })
      .def_property_readonly("refused", &RetryBudget::refused)
      .def_property_readonly("allowed", &RetryBudget::allowed);
}

void BindThrottle(py::module_& m) {
  py::class_<AdaptiveThrottle, std::shared_ptr<AdaptiveThrottle>>(
      m, "AdaptiveThrottle", "SRE client-side adaptive throttling (thread-safe).")
      .def(py::init([](double window, double k, std::optional<uint64_t> seed,
                       const std::string& name) {
             ThrottleOptions o;
             o.name = name;
             o.window = window > 0 ? SecondsToDuration(window, "window") : Duration::zero();
             o.k = k;
             o.seed = seed;
             return Unwrap(AdaptiveThrottle::Create(o));
           }),
           py::arg("window"), py::arg("k"), py::arg("seed") = py::none(), py::arg("name") = "")
      .def("admit",
           [](AdaptiveThrottle& t, double now) { return t.Admit(MonotonicToTimePoint(now)); },
           py::arg("now"))
      .def("record",
           [](AdaptiveThrottle& t, bool accepted) {
             t.Record(accepted ? Outcome::Success() : Outcome::Http(503));
           },
           py::arg("accepted"))
      .def("probability",
           [](AdaptiveThrottle& t, double now) {
             return t.Probability(MonotonicToTimePoint(now));
           },
           py::arg("now"))
      .def("requests",
           [](const AdaptiveThrottle& t, double now) {
             return t.Requests(MonotonicToTimePoint(now));
           },
           py::arg("now"))
      .def("accepts",
           [](AdaptiveThrottle& t, double now) { return t.Accepts(MonotonicToTimePoint(now)); },
           py::arg("now"))
      .def_property_readonly("name", [](const AdaptiveThrottle& t) { return Utf8(t.name()); })
      .def_property_readonly("rejected", &AdaptiveThrottle::rejected);
}

}  // namespace

void BindBudget(py::module_& m) {
  BindRetryBudget(m);
  BindThrottle(m);
}

}  // namespace python
}  // namespace mulligan
