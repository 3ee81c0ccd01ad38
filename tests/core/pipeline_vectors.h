// tests/core/pipeline_vectors.h — tests/vectors/pipeline.json as C++ values,
// for the runners of every C++ front door (the pipeline's Call, RetryCall,
// HttpClient and HttpAsyncEngine).
//
// The file's description says what each field means; the expectations in it
// were worked out by hand, never by running the code under test.

#ifndef MULLIGAN_TESTS_CORE_PIPELINE_VECTORS_H_
#define MULLIGAN_TESTS_CORE_PIPELINE_VECTORS_H_

#include <boost/json.hpp>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
namespace testing {

// One attempt's scripted outcome.
struct ScriptStep {
  enum class Kind { kSuccess, kRetryable, kTerminal };
  Kind kind = Kind::kSuccess;
  std::optional<int> retry_after_seconds;
};

// What one logical call must end with.
struct CallExpectation {
  int attempts = 0;
  std::vector<double> delays;  // seconds
  std::string stop_reason;
  bool refused = false;
  std::optional<std::string> breaker_state;
};

struct ScriptedCall {
  double advance = 0;  // seconds, before the call
  std::vector<ScriptStep> script;
  CallExpectation expect;
};

struct MetricsExpectation {
  uint64_t calls = 0, attempts = 0, retries = 0, successes = 0, failures = 0;
};

struct PipelineCase {
  std::string name;
  RetryOptions retry;
  std::optional<CircuitBreakerOptions> breaker;
  std::vector<ScriptedCall> calls;
  MetricsExpectation metrics;
};

inline Duration SecondsToDuration(double s) {
  return std::chrono::duration_cast<Duration>(std::chrono::duration<double>(s));
}

inline double DurationToSeconds(Duration d) { return std::chrono::duration<double>(d).count(); }

// Reads tests/vectors/pipeline.json from `dir`. Throws std::runtime_error on
// a file the runners do not understand (a test must fail, not skip).
inline std::vector<PipelineCase> LoadPipelineCases(const std::string& dir) {
  namespace json = boost::json;
  std::ifstream in(dir + "/pipeline.json");
  if (!in.good()) throw std::runtime_error("cannot read " + dir + "/pipeline.json");
  std::stringstream text;
  text << in.rdbuf();
  const json::value root = json::parse(text.str());
  auto number = [](const json::value& v) { return v.to_number<double>(); };
  std::vector<PipelineCase> cases;
  for (const json::value& c : root.at("cases").as_array()) {
    PipelineCase pc;
    pc.name = json::value_to<std::string>(c.at("name"));
    pc.retry.backoff.jitter = JitterKind::kNone;
    for (const auto& [key, value] : c.at("policy").as_object()) {
      if (key == "max_attempts") {
        pc.retry.max_attempts = static_cast<int>(number(value));
      } else if (key == "backoff") {
        pc.retry.backoff.kind = ParseBackoffKind(json::value_to<std::string>(value)).value();
      } else if (key == "base_delay") {
        pc.retry.backoff.base = SecondsToDuration(number(value));
      } else if (key == "multiplier") {
        pc.retry.backoff.multiplier = number(value);
      } else if (key == "retry_after_max") {
        pc.retry.retry_after_max = SecondsToDuration(number(value));
      } else if (key == "deadline") {
        pc.retry.deadline = SecondsToDuration(number(value));
      } else {
        throw std::runtime_error("pipeline.json: unknown policy field " + std::string(key));
      }
    }
    if (const json::value* b = c.as_object().if_contains("breaker")) {
      CircuitBreakerOptions options;
      options.name = "vector";
      options.report_metrics = false;
      for (const auto& [key, value] : b->as_object()) {
        if (key == "failure_threshold") {
          options.failure_threshold = static_cast<int>(number(value));
        } else if (key == "reset_timeout") {
          options.reset_timeout = SecondsToDuration(number(value));
        } else if (key == "half_open_max_calls") {
          options.half_open_max_calls = static_cast<int>(number(value));
        } else {
          throw std::runtime_error("pipeline.json: unknown breaker field " + std::string(key));
        }
      }
      pc.breaker = options;
    }
    for (const json::value& call : c.at("calls").as_array()) {
      ScriptedCall sc;
      if (const json::value* a = call.as_object().if_contains("advance")) sc.advance = number(*a);
      for (const json::value& step : call.at("script").as_array()) {
        ScriptStep s;
        const std::string kind = step.is_string()
                                     ? json::value_to<std::string>(step)
                                     : json::value_to<std::string>(step.at("outcome"));
        if (kind == "success") {
          s.kind = ScriptStep::Kind::kSuccess;
        } else if (kind == "retryable") {
          s.kind = ScriptStep::Kind::kRetryable;
        } else if (kind == "terminal") {
          s.kind = ScriptStep::Kind::kTerminal;
        } else {
          throw std::runtime_error("pipeline.json: unknown outcome " + kind);
        }
        if (step.is_object()) {
          if (const json::value* ra = step.as_object().if_contains("retry_after")) {
            s.retry_after_seconds = static_cast<int>(number(*ra));
          }
        }
        sc.script.push_back(s);
      }
      const json::object& e = call.at("expect").as_object();
      sc.expect.attempts = static_cast<int>(number(e.at("attempts")));
      for (const json::value& d : e.at("delays").as_array()) sc.expect.delays.push_back(number(d));
      sc.expect.stop_reason = json::value_to<std::string>(e.at("stop_reason"));
      sc.expect.refused = e.at("refused").as_bool();
      if (const json::value* st = e.if_contains("breaker_state")) {
        sc.expect.breaker_state = json::value_to<std::string>(*st);
      }
      pc.calls.push_back(std::move(sc));
    }
    const json::object& m = c.at("expect_metrics").as_object();
    pc.metrics.calls = m.at("calls").to_number<uint64_t>();
    pc.metrics.attempts = m.at("attempts").to_number<uint64_t>();
    pc.metrics.retries = m.at("retries").to_number<uint64_t>();
    pc.metrics.successes = m.at("successes").to_number<uint64_t>();
    pc.metrics.failures = m.at("failures").to_number<uint64_t>();
    cases.push_back(std::move(pc));
  }
  return cases;
}

// What a front door reported for one call, to compare with CallExpectation.
struct CallResultSeen {
  int attempts = 0;
  std::vector<double> delays;
  std::string stop_reason;
  bool refused = false;
};

}  // namespace testing
}  // namespace mulligan

#endif  // MULLIGAN_TESTS_CORE_PIPELINE_VECTORS_H_
