// tests/fuzz/config_checks.h — the post-conditions of a configuration load
// (mulligan/config/config.h), shared by fuzz_config and fuzz_grpc_config.
//
// A load either fails with a message naming the source, or succeeds with
// every value in its documented range (the field comments of RetryOptions,
// BackoffOptions, CircuitBreakerOptions and ClientSettings). What it built
// must then work: each policy runs a short chain of failed attempts whose
// delays stay in [0, max_delay] and before the deadline, and each breaker
// trips, opens and probes without trouble.

#ifndef MULLIGAN_TESTS_FUZZ_CONFIG_CHECKS_H_
#define MULLIGAN_TESTS_FUZZ_CONFIG_CHECKS_H_

#include <chrono>
#include <cmath>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/status.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/config/config.h"
#include "mulligan/retry/policy.h"

namespace mulligan_fuzz {

using mulligan::Duration;
using mulligan::TimePoint;

// `a + b` for b >= 0, saturating (the harness's own copy: it checks the engine).
inline TimePoint AddSaturating(TimePoint a, Duration b) {
  return b > TimePoint::max() - a ? TimePoint::max() : a + b;
}

// Options in range, and a chain of up to 8 failed attempts that keeps every
// promise of the engine: delays in [0, max_delay], never at or past the
// deadline, at most max_attempts attempts.
inline void CheckPolicy(const std::string& name, const mulligan::RetryPolicy& policy) {
  const mulligan::RetryOptions& o = policy.options();
  const std::string what = "policy " + Printable(name) + ": ";
  FUZZ_CHECK(o.max_attempts >= 1, what + "max_attempts " + std::to_string(o.max_attempts));
  FUZZ_CHECK(o.backoff.base >= Duration::zero(), what + "negative base_delay");
  FUZZ_CHECK(o.backoff.max_delay >= Duration::zero(), what + "negative max_delay");
  FUZZ_CHECK(std::isfinite(o.backoff.multiplier) && o.backoff.multiplier >= 0,
             what + "multiplier " + std::to_string(o.backoff.multiplier));
  FUZZ_CHECK(o.backoff.jitter_fraction >= 0 && o.backoff.jitter_fraction <= 1,
             what + "jitter_fraction " + std::to_string(o.backoff.jitter_fraction));
  FUZZ_CHECK(static_cast<int>(o.backoff.kind) >= 0 && static_cast<int>(o.backoff.kind) <= 3,
             what + "backoff kind");
  FUZZ_CHECK(static_cast<int>(o.backoff.jitter) >= 0 && static_cast<int>(o.backoff.jitter) <= 3,
             what + "jitter kind");
  FUZZ_CHECK(!o.deadline || *o.deadline > Duration::zero(), what + "deadline <= 0");
  FUZZ_CHECK(!o.attempt_timeout || *o.attempt_timeout > Duration::zero(),
             what + "attempt_timeout <= 0");
  FUZZ_CHECK(o.retry_after_max >= Duration::zero(), what + "negative retry_after_max");
  for (int s : o.retryable_statuses) {
    FUZZ_CHECK(s >= 100 && s <= 599, what + "retryable status " + std::to_string(s));
  }
  for (int c : o.retryable_grpc_codes) {
    FUZZ_CHECK(c >= 1 && c <= 16, what + "retryable gRPC code " + std::to_string(c));
  }

  const TimePoint start{std::chrono::seconds(1000)};
  TimePoint now = start;
  mulligan::RetrySession session = policy.Begin(now);
  // A retryable failure whatever the lists hold: Failure(true) is kRetryable.
  const mulligan::Outcome failure = mulligan::Outcome::Failure(true);
  for (int attempt = 1; attempt <= 8; ++attempt) {
    if (std::optional<Duration> timeout = session.AttemptTimeout(now)) {
      FUZZ_CHECK(*timeout >= Duration::zero(), what + "negative attempt timeout");
      if (o.attempt_timeout) FUZZ_CHECK(*timeout <= *o.attempt_timeout, what + "timeout grew");
    }
    const mulligan::Decision d = session.OnOutcome(failure, now);
    FUZZ_CHECK(d.attempt == attempt, what + "decision for attempt " + std::to_string(d.attempt) +
                                         " after attempt " + std::to_string(attempt));
    if (!d.retry()) {
      FUZZ_CHECK(d.delay == Duration::zero(), what + "a stop with a delay");
      break;
    }
    FUZZ_CHECK(attempt < o.max_attempts, what + "a retry after max_attempts");
    FUZZ_CHECK(d.delay >= Duration::zero() && d.delay <= o.backoff.max_delay,
               what + "delay " + std::to_string(d.delay.count()) + " ns outside [0, " +
                   std::to_string(o.backoff.max_delay.count()) + "]");
    now = AddSaturating(now, d.delay);
    if (o.deadline) {
      FUZZ_CHECK(now < AddSaturating(start, *o.deadline), what + "a wait reaching the deadline");
    }
  }
}

// Options in range (CircuitBreaker::Validate agrees), and a breaker built
// from them trips, refuses, probes and closes or reopens.
inline void CheckBreaker(const std::string& name, const mulligan::CircuitBreakerOptions& o) {
  const std::string what = "breaker " + Printable(name) + ": ";
  FUZZ_CHECK(o.name == name, what + "named " + Printable(o.name));
  FUZZ_CHECK(mulligan::CircuitBreaker::Validate(o).ok(), what + "invalid options were loaded");
  FUZZ_CHECK(o.failure_threshold >= 0 && o.failure_threshold <= 1000000, what + "threshold");
  FUZZ_CHECK(o.failure_rate_threshold > 0 && o.failure_rate_threshold <= 100, what + "rate");
  FUZZ_CHECK(o.half_open_max_calls >= 1 && o.half_open_max_calls <= 65535, what + "probes");
  FUZZ_CHECK(o.reset_timeout > Duration::zero(), what + "reset_timeout <= 0");
  FUZZ_CHECK(std::isfinite(o.reset_timeout_multiplier) && o.reset_timeout_multiplier >= 1,
             what + "reset_timeout_multiplier");
  FUZZ_CHECK(o.permit_timeout > Duration::zero(), what + "permit_timeout <= 0");

  mulligan::CircuitBreakerOptions quiet = o;
  quiet.report_metrics = false;  // fuzzed names must not pile up in the registry
  mulligan::Result<std::unique_ptr<mulligan::CircuitBreaker>> breaker =
      mulligan::CircuitBreaker::Create(quiet);
  FUZZ_CHECK(breaker.ok(), what + breaker.status().ToString());
  TimePoint now{std::chrono::seconds(1000)};
  for (int i = 0; i < 24; ++i) {
    const mulligan::Admission a = (*breaker)->Acquire(now);
    if (a.admitted()) {
      FUZZ_CHECK(a.retry_in == Duration::zero(), what + "admitted with a wait");
      (*breaker)->Record(a.permit, i % 5 == 4 ? mulligan::CallResult::kSuccess
                                               : mulligan::CallResult::kFailure,
                         std::chrono::milliseconds(i), now);
      now = AddSaturating(now, std::chrono::milliseconds(1));
    } else {
      FUZZ_CHECK(a.retry_in >= Duration::zero(), what + "a negative retry_in");
      now = AddSaturating(now, a.retry_in);  // straight to the next probe
    }
  }
}

inline void CheckClient(const mulligan::ConfigSnapshot& snapshot, const std::string& name,
                        const mulligan::ClientSettings& c) {
  const std::string what = "client " + Printable(name) + ": ";
  FUZZ_CHECK(c.attempt_timeout > Duration::zero(), what + "attempt_timeout <= 0");
  FUZZ_CHECK(c.connect_timeout > Duration::zero(), what + "connect_timeout <= 0");
  // Names are checked to exist at load time (config.h).
  FUZZ_CHECK(c.policy.empty() || snapshot.policies.count(c.policy) == 1,
             what + "unknown policy " + Printable(c.policy));
  FUZZ_CHECK(c.breaker.empty() || snapshot.breakers.count(c.breaker) == 1,
             what + "unknown breaker " + Printable(c.breaker));
}

// Checks the result of ParseConfig(text, source, ...).
inline void CheckLoad(
    const mulligan::Result<std::shared_ptr<const mulligan::ConfigSnapshot>>& loaded,
    std::string_view source) {
  if (!loaded.ok()) {
    FUZZ_CHECK(loaded.status().code() == mulligan::StatusCode::kInvalidArgument,
               "a failed load gave " + loaded.status().ToString());
    const std::string& message = loaded.status().message();
    // Every line names the source (or the environment variable it came from).
    size_t line_start = 0;
    while (line_start <= message.size()) {
      size_t end = message.find('\n', line_start);
      if (end == std::string::npos) end = message.size();
      const std::string_view line(message.data() + line_start, end - line_start);
      FUZZ_CHECK(line.substr(0, source.size() + 2) == std::string(source) + ": " ||
                     line.substr(0, 13) == "environment: ",
                 "an error line without its source: " + Printable(line));
      line_start = end + 1;
    }
    return;
  }
  const mulligan::ConfigSnapshot& snapshot = **loaded;
  FUZZ_CHECK(snapshot.source == source, "source " + Printable(snapshot.source));
  for (const auto& [name, policy] : snapshot.policies) {
    FUZZ_CHECK(policy != nullptr, "null policy " + Printable(name));
    CheckPolicy(name, *policy);
  }
  for (const auto& [name, breaker] : snapshot.breakers) CheckBreaker(name, breaker);
  for (const auto& [name, client] : snapshot.clients) CheckClient(snapshot, name, client);
  // The report lists the same names.
  const mulligan::LoadReport report = mulligan::MakeLoadReport(snapshot);
  FUZZ_CHECK(report.policies.size() == snapshot.policies.size() &&
                 report.breakers.size() == snapshot.breakers.size() &&
                 report.clients.size() == snapshot.clients.size(),
             "the report disagrees with the snapshot");
}

}  // namespace mulligan_fuzz

#endif  // MULLIGAN_TESTS_FUZZ_CONFIG_CHECKS_H_
