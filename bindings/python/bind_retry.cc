// bindings/python/bind_retry.cc — Outcome, RetryPolicy, RetrySession and Decision.
//
// Durations cross as float seconds and `now` as a time.monotonic() reading.
// A RetryPolicy is validated once by the core (RetryPolicy::Create); a bad
// value raises ValueError through ThrowStatus.
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.h"
#include "mulligan/retry/backoff.h"
#include "mulligan/base/outcome.h"
#include "mulligan/retry/policy.h"
#include "mulligan/retry/stop.h"
#include "mulligan/retry/wait.h"

namespace mulligan {
namespace python {
namespace {

std::optional<double> OptionalSeconds(const std::optional<Duration>& d) {
  if (!d) return std::nullopt;
  return DurationToSeconds(*d);
}

RetryPolicy MakePolicy(int attempts, const std::string& backoff, double base_delay,
                       double multiplier, double max_delay, const std::string& jitter,
                       double jitter_fraction, std::optional<double> deadline,
                       std::optional<double> attempt_timeout, double retry_after_max,
                       bool clamp_retry_after, bool respect_retry_after,
                       std::optional<std::vector<int>> retryable_statuses,
                       std::optional<uint64_t> seed, std::optional<WaitExpr> wait,
                       double min_delay, std::optional<StopExpr> stop,
                       std::optional<int> connect_retries, std::optional<int> read_retries,
                       std::optional<int> status_retries, std::optional<int> other_retries) {
  RetryOptions options;
  options.max_attempts = attempts;
  options.backoff.kind = Unwrap(ParseBackoffKind(backoff));
  options.backoff.base = SecondsToDuration(base_delay, "base_delay");
  options.backoff.multiplier = multiplier;
  options.backoff.max_delay = SecondsToDuration(max_delay, "max_delay");
  options.backoff.jitter = Unwrap(ParseJitterKind(jitter));
  options.backoff.jitter_fraction = jitter_fraction;
  if (deadline) options.deadline = SecondsToDuration(*deadline, "deadline");
  if (attempt_timeout) {
    options.attempt_timeout = SecondsToDuration(*attempt_timeout, "attempt_timeout");
  }
  options.retry_after_max = SecondsToDuration(retry_after_max, "retry_after_max");
  options.retry_after_overflow =
      clamp_retry_after ? RetryAfterOverflow::kClamp : RetryAfterOverflow::kStop;
  options.respect_retry_after = respect_retry_after;
  if (retryable_statuses) options.retryable_statuses = *retryable_statuses;
  options.seed = seed;
  options.backoff.wait = std::move(wait);
  options.backoff.min_delay = SecondsToDuration(min_delay, "min_delay");
  options.stop = std::move(stop);
  options.max_kind_retries[static_cast<int>(RetryKind::kConnect)] = connect_retries;
  options.max_kind_retries[static_cast<int>(RetryKind::kRead)] = read_retries;
  options.max_kind_retries[static_cast<int>(RetryKind::kStatus)] = status_retries;
  options.max_kind_retries[static_cast<int>(RetryKind::kOther)] = other_retries;
  return Unwrap(RetryPolicy::Create(options));
}

// A copy of `p` with the options named in `changes` replaced (the keyword
// arguments of RetryPolicy() that a client may override: attempts, backoff,
// base_delay, multiplier, max_delay, jitter, jitter_fraction, deadline and
// attempt_timeout (None clears them), retry_after_max, retryable_statuses,
// and, since 0.4, retryable_grpc_codes (gRPC codes in [1, 16]).
// Every other field, retryable_errors included, is
// kept. Raises ValueError for an unknown name or a bad value.
RetryPolicy ReplacePolicy(const RetryPolicy& p, const py::kwargs& changes) {
  RetryOptions o = p.options();
  for (const auto& item : changes) {
    const std::string key = item.first.cast<std::string>();
    const py::handle v = item.second;
    if (key == "attempts") {
      o.max_attempts = v.cast<int>();
    } else if (key == "backoff") {
      o.backoff.kind = Unwrap(ParseBackoffKind(v.cast<std::string>()));
    } else if (key == "base_delay") {
      o.backoff.base = SecondsToDuration(v.cast<double>(), "base_delay");
    } else if (key == "multiplier") {
      o.backoff.multiplier = v.cast<double>();
    } else if (key == "max_delay") {
      o.backoff.max_delay = SecondsToDuration(v.cast<double>(), "max_delay");
    } else if (key == "jitter") {
      o.backoff.jitter = Unwrap(ParseJitterKind(v.cast<std::string>()));
    } else if (key == "jitter_fraction") {
      o.backoff.jitter_fraction = v.cast<double>();
    } else if (key == "deadline") {
      o.deadline.reset();
      if (!v.is_none()) o.deadline = SecondsToDuration(v.cast<double>(), "deadline");
    } else if (key == "attempt_timeout") {
      o.attempt_timeout.reset();
      if (!v.is_none()) {
        o.attempt_timeout = SecondsToDuration(v.cast<double>(), "attempt_timeout");
      }
    } else if (key == "retry_after_max") {
      o.retry_after_max = SecondsToDuration(v.cast<double>(), "retry_after_max");
    } else if (key == "retryable_statuses") {
      o.retryable_statuses = v.cast<std::vector<int>>();
    } else if (key == "retryable_grpc_codes") {  // since 0.4
      o.retryable_grpc_codes = v.cast<std::vector<int>>();
    } else {
      ThrowStatus(InvalidArgumentError("RetryPolicy.replace: unknown option '" + key + "'"));
    }
  }
  return Unwrap(RetryPolicy::Create(o));
}

}  // namespace

namespace {

void BindOutcome(py::module_& m) {
  py::class_<Outcome>(m, "Outcome", "What one attempt produced (immutable).")
      .def_static("success", &Outcome::Success, "A plain success.")
      .def_static(
          "failure",
          [](bool retryable, std::optional<double> retry_after, uint32_t stop_predicates,
             bool overload) {
            Outcome o = Outcome::Failure(retryable);
            if (retry_after) o.retry_after = SecondsToDuration(*retry_after, "retry_after");
            o.stop_predicates = stop_predicates;
            o.overload = overload;
            return o;
          },
          py::arg("retryable"), py::arg("retry_after") = py::none(),
          py::arg("stop_predicates") = 0, py::arg("overload") = false,
          "A failure the caller has already classified, with an optional delay hint in\n"
          "seconds that replaces the backoff like a Retry-After header (retry_after_max,\n"
          "its clamp mode and the deadline apply to it). stop_predicates: bit i set when\n"
          "the stop condition's predicate i says stop (mulligan.stop.when). overload\n"
          "(0.5): the backend answered that it is overloaded (a 429, say), which adaptive\n"
          "throttling counts as a request it did not accept (Outcome::overload).")
      .def_static(
          "http",
          [](int status, std::optional<double> retry_after) {
            std::optional<Duration> hint;
            if (retry_after) hint = SecondsToDuration(*retry_after, "retry_after");
            return Outcome::Http(status, hint);
          },
          py::arg("status"), py::arg("retry_after") = py::none(),
          "An HTTP response with an optional Retry-After hint in seconds.")
      .def_static("transport", &Outcome::Transport, py::arg("kind"),
                  "A transport failure of `kind`.")
      .def_static(
          "grpc",
          [](int code, std::optional<double> retry_after) {
            if (code < 0 || code > 16) {
              throw py::value_error("grpc: code must be a gRPC status code in [0, 16] (0 = OK), "
                                    "got " + std::to_string(code));
            }
            Outcome o = Outcome::Grpc(code);
            if (retry_after) o.retry_after = SecondsToDuration(*retry_after, "retry_after");
            return o;
          },
          py::arg("code"), py::arg("retry_after") = py::none(),
          "A finished gRPC call with status `code` (0 = OK, 14 = UNAVAILABLE, ...): a\n"
          "success for OK, retryable when the policy's retryable_grpc_codes hold it\n"
          "(UNAVAILABLE by default, as gRFC A6's examples), terminal otherwise.\n"
          "retry_after (seconds, since 0.4): a server's delay hint, e.g. gRFC A6's\n"
          "grpc-retry-pushback-ms, that replaces the backoff like Retry-After\n"
          "(retry_after_max, its clamp mode and the deadline apply to it).\n"
          "ValueError outside [0, 16].")
      .def_property_readonly("grpc_status", [](const Outcome& o) { return o.grpc_status; },
                             "The gRPC status code, or -1 when the outcome is not a gRPC one.")
      .def_property_readonly("error", [](const Outcome& o) { return o.error; })
      .def_property_readonly("http_status", [](const Outcome& o) { return o.http_status; })
      .def_property_readonly("retry_after",
                             [](const Outcome& o) { return OptionalSeconds(o.retry_after); })
      .def_property_readonly("request_sent", [](const Outcome& o) { return o.request_sent; });

}

void BindDecision(py::module_& m) {
  py::class_<Decision>(m, "Decision", "The engine's answer to one outcome.")
      .def_property_readonly("retry", &Decision::retry)
      .def_property_readonly("delay",
                             [](const Decision& d) { return DurationToSeconds(d.delay); })
      .def_property_readonly("reason",
                             [](const Decision& d) { return StopReasonName(d.reason); })
      .def_property_readonly("stop_reason", [](const Decision& d) { return d.reason; })
      .def_property_readonly("classification",
                             [](const Decision& d) { return d.classification; })
      .def_property_readonly("attempt", [](const Decision& d) { return d.attempt; })
      .def_property_readonly("from_retry_after",
                             [](const Decision& d) { return d.from_retry_after; })
      .def_property_readonly("use_fallback", [](const Decision& d) { return d.use_fallback; })
      .def("__repr__", [](const Decision& d) {
        return "<Decision retry=" + std::string(d.retry() ? "True" : "False") +
               " delay=" + std::to_string(DurationToSeconds(d.delay)) +
               " reason=" + StopReasonName(d.reason) + " attempt=" + std::to_string(d.attempt) +
               ">";
      });

}

void BindRetrySession(py::module_& m) {
  py::class_<RetrySession>(m, "RetrySession",
                           "The state of one logical call. Not thread-safe.")
      .def(
          "on_outcome",
          [](RetrySession& s, const Outcome& outcome, double now) {
            return s.OnOutcome(outcome, MonotonicToTimePoint(now));
          },
          py::arg("outcome"), py::arg("now"))
      .def(
          "attempt_timeout",
          [](const RetrySession& s, double now) {
            return OptionalSeconds(s.AttemptTimeout(MonotonicToTimePoint(now)));
          },
          py::arg("now"))
      .def(
          "time_left",
          [](const RetrySession& s, double now) {
            return OptionalSeconds(s.TimeLeft(MonotonicToTimePoint(now)));
          },
          py::arg("now"))
      .def_property_readonly("attempts", &RetrySession::attempts)
      .def_property_readonly("finished", &RetrySession::finished)
      .def_property_readonly(
          "start", [](const RetrySession& s) { return TimePointToMonotonic(s.start()); });

}

void BindRetryPolicy(py::module_& m) {
  py::class_<RetryPolicy>(m, "RetryPolicy", "A validated, immutable retry policy.")
      .def(py::init(&MakePolicy), py::kw_only(), py::arg("attempts") = 3,
           py::arg("backoff") = "exponential", py::arg("base_delay") = 0.2,
           py::arg("multiplier") = 2.0, py::arg("max_delay") = 10.0,
           py::arg("jitter") = "full", py::arg("jitter_fraction") = 0.2,
           py::arg("deadline") = py::none(), py::arg("attempt_timeout") = py::none(),
           py::arg("retry_after_max") = 60.0, py::arg("clamp_retry_after") = false,
           py::arg("respect_retry_after") = true,
           py::arg("retryable_statuses") = py::none(), py::arg("seed") = py::none(),
           py::arg("wait") = py::none(), py::arg("min_delay") = 0.0, py::arg("stop") = py::none(),
           py::arg("connect_retries") = py::none(), py::arg("read_retries") = py::none(),
           py::arg("status_retries") = py::none(), py::arg("other_retries") = py::none())
      .def(
          "begin",
          [](const RetryPolicy& p, double now, bool replay_safe) {
            return p.Begin(MonotonicToTimePoint(now), replay_safe);
          },
          py::arg("now"), py::arg("replay_safe") = true,
          // The session points at its policy: keep the policy alive.
          py::keep_alive<0, 1>())
      .def("classify", &RetryPolicy::Classify, py::arg("outcome"))
      .def("replace", &ReplacePolicy,
           "A copy with the given options replaced and every other field kept\n"
           "(retryable errors included; retryable_grpc_codes may be replaced since\n"
           "0.4). ValueError for a bad one.")
      .def_property_readonly("attempts",
                             [](const RetryPolicy& p) { return p.options().max_attempts; })
      .def_property_readonly(
          "backoff", [](const RetryPolicy& p) { return BackoffKindName(p.options().backoff.kind); })
      .def_property_readonly(
          "jitter", [](const RetryPolicy& p) { return JitterKindName(p.options().backoff.jitter); })
      .def_property_readonly("base_delay",
                             [](const RetryPolicy& p) {
                               return DurationToSeconds(p.options().backoff.base);
                             })
      .def_property_readonly("multiplier",
                             [](const RetryPolicy& p) { return p.options().backoff.multiplier; })
      .def_property_readonly("max_delay",
                             [](const RetryPolicy& p) {
                               return DurationToSeconds(p.options().backoff.max_delay);
                             })
      .def_property_readonly(
          "deadline", [](const RetryPolicy& p) { return OptionalSeconds(p.effective_deadline()); })
      .def_property_readonly("min_delay",
                             [](const RetryPolicy& p) {
                               return DurationToSeconds(p.options().backoff.min_delay);
                             })
      .def_property_readonly("wait",
                             [](const RetryPolicy& p) { return p.options().backoff.wait; })
      .def_property_readonly("stop", [](const RetryPolicy& p) { return p.options().stop; })
      .def_property_readonly("kind_retries",
                             [](const RetryPolicy& p) {
                               py::dict d;
                               for (int k = 0; k < 4; ++k) {
                                 const std::optional<int>& n = p.options().max_kind_retries[k];
                                 d[RetryKindName(static_cast<RetryKind>(k))] =
                                     n ? py::object(py::int_(*n)) : py::object(py::none());
                               }
                               return d;
                             })
      .def_property_readonly("attempt_timeout",
                             [](const RetryPolicy& p) {
                               return OptionalSeconds(p.options().attempt_timeout);
                             })
      .def_property_readonly("retry_after_max",
                             [](const RetryPolicy& p) {
                               return DurationToSeconds(p.options().retry_after_max);
                             })
      .def_property_readonly("retryable_statuses",
                             [](const RetryPolicy& p) { return p.options().retryable_statuses; })
      .def_property_readonly(
          "retryable_grpc_codes",
          [](const RetryPolicy& p) { return p.options().retryable_grpc_codes; },
          "The gRPC status codes retried (ints; UNAVAILABLE = 14 by default).")
      .def_property_readonly("seed", [](const RetryPolicy& p) { return p.options().seed; });
}

}  // namespace

void BindRetry(py::module_& m) {
  BindOutcome(m);
  BindDecision(m);
  BindRetrySession(m);
  BindRetryPolicy(m);
}

}  // namespace python
}  // namespace mulligan
