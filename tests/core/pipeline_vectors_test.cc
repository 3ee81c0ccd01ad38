// tests/vectors/pipeline.json through two C++ front doors: the pipeline's
// Call stepped by hand, and RetryCall. The HTTP clients run the same file
// against nginx (http_client_test.cc); the C, Python and binding suites run
// it too, so every front door makes the same decisions.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "mulligan/pipeline/pipeline.h"
#include "mulligan/retry/call.h"
#include "mulligan/telemetry/metrics.h"
#include "pipeline_vectors.h"

namespace mulligan {
namespace {

using testing::CallResultSeen;
using testing::DurationToSeconds;
using testing::PipelineCase;
using testing::ScriptStep;

std::vector<PipelineCase> Cases() { return testing::LoadPipelineCases(MULLIGAN_VECTORS_DIR); }

Outcome OutcomeOf(const ScriptStep& step) {
  switch (step.kind) {
    case ScriptStep::Kind::kSuccess: return Outcome::Success();
    case ScriptStep::Kind::kTerminal: return Outcome::Failure(/*retryable=*/false);
    case ScriptStep::Kind::kRetryable: break;
  }
  Outcome outcome = Outcome::Failure(/*retryable=*/true);
  if (step.retry_after_seconds) outcome.retry_after = std::chrono::seconds(*step.retry_after_seconds);
  return outcome;
}

// Checks one call's result and, when the case has a breaker, its state.
void ExpectCall(const PipelineCase& c, size_t i, const CallResultSeen& seen,
                const CircuitBreaker* breaker, TimePoint now) {
  const testing::CallExpectation& want = c.calls[i].expect;
  SCOPED_TRACE(c.name + ", call " + std::to_string(i + 1));
  EXPECT_EQ(seen.attempts, want.attempts);
  EXPECT_EQ(seen.delays, want.delays);
  EXPECT_EQ(seen.stop_reason, want.stop_reason);
  EXPECT_EQ(seen.refused, want.refused);
  if (want.breaker_state) {
    ASSERT_NE(breaker, nullptr);
    EXPECT_EQ(BreakerStateName(breaker->state(now)), *want.breaker_state);
  }
}

void ExpectMetrics(const PipelineCase& c, const Metrics& metrics) {
  SCOPED_TRACE(c.name + ", metrics");
  const MetricsSnapshot s = metrics.Snapshot();
  EXPECT_EQ(s.calls, c.metrics.calls);
  EXPECT_EQ(s.attempts, c.metrics.attempts);
  EXPECT_EQ(s.retries, c.metrics.retries);
  EXPECT_EQ(s.successes, c.metrics.successes);
  EXPECT_EQ(s.failures, c.metrics.failures);
}

std::unique_ptr<CircuitBreaker> BreakerFor(const PipelineCase& c) {
  if (!c.breaker) return nullptr;
  return std::move(CircuitBreaker::Create(*c.breaker)).value();
}

TEST(PipelineVectorsTest, TheCallSteppedByHand) {
  for (const PipelineCase& c : Cases()) {
    FakeClock clock;
    MetricsRegistry registry;
    const RetryPolicy policy = std::move(RetryPolicy::Create(c.retry)).value();
    std::unique_ptr<CircuitBreaker> breaker = BreakerFor(c);
    Pipeline::Parts parts;
    parts.policy = &policy;
    parts.breaker = breaker.get();
    parts.metrics = registry.Get(c.name);
    parts.clock = &clock;
    const Pipeline pipeline(parts);
    for (size_t i = 0; i < c.calls.size(); ++i) {
      clock.Advance(testing::SecondsToDuration(c.calls[i].advance));
      Call call = pipeline.Begin(clock.Now());
      CallResultSeen seen;
      for (size_t step = 0;; ++step) {
        const AttemptAdmission admission = call.Admit(clock.Now());
        if (admission.refused()) {
          seen.refused = true;
          seen.stop_reason = StopReasonName(admission.reason);
          break;
        }
        ASSERT_LT(step, c.calls[i].script.size()) << c.name << ": the script ran out";
        const Decision decision = call.Record(OutcomeOf(c.calls[i].script[step]), clock.Now());
        if (!decision.retry()) {
          seen.stop_reason = StopReasonName(decision.reason);
          break;
        }
        seen.delays.push_back(DurationToSeconds(decision.delay));
        clock.Advance(decision.delay);
      }
      seen.attempts = call.attempts();
      EXPECT_TRUE(call.finished());
      ExpectCall(c, i, seen, breaker.get(), clock.Now());
    }
    ExpectMetrics(c, *registry.Get(c.name));
  }
}

TEST(PipelineVectorsTest, RetryCall) {
  for (const PipelineCase& c : Cases()) {
    FakeClock clock;
    MetricsRegistry registry;
    const RetryPolicy policy = std::move(RetryPolicy::Create(c.retry)).value();
    std::unique_ptr<CircuitBreaker> breaker = BreakerFor(c);
    for (size_t i = 0; i < c.calls.size(); ++i) {
      clock.Advance(testing::SecondsToDuration(c.calls[i].advance));
      const std::vector<ScriptStep>& script = c.calls[i].script;
      RetryCallInfo info;
      CallResultSeen seen;
      RetryCallOptions options;
      options.clock = &clock;
      options.info = &info;
      options.breaker = breaker.get();
      options.metrics = registry.Get(c.name);
      options.on_retry = [&](const RetryEvent& e) {
        seen.delays.push_back(DurationToSeconds(e.delay));
      };
      // The hint travels in the Status's message: "retry after <seconds>".
      options.delay_hint = [](const Status& s) -> std::optional<Duration> {
        const std::string& m = s.message();
        if (m.rfind("retry after ", 0) != 0) return std::nullopt;
        return std::chrono::seconds(std::stoi(m.substr(12)));
      };
      const Status status = RetryCall(
          policy,
          [&](int attempt) -> Status {
            const ScriptStep& step = script.at(static_cast<size_t>(attempt - 1));
            switch (step.kind) {
              case ScriptStep::Kind::kSuccess: return OkStatus();
              case ScriptStep::Kind::kTerminal: return InvalidArgumentError("terminal");
              case ScriptStep::Kind::kRetryable: break;
            }
            return UnavailableError(step.retry_after_seconds
                                        ? "retry after " + std::to_string(*step.retry_after_seconds)
                                        : std::string("down"));
          },
          options);
      seen.attempts = info.attempts;
      seen.refused = info.circuit_open;
      seen.stop_reason = info.circuit_open ? "circuit_open" : StopReasonName(info.stop_reason);
      EXPECT_EQ(status.code() == StatusCode::kCircuitOpen, info.circuit_open) << c.name;
      ExpectCall(c, i, seen, breaker.get(), clock.Now());
    }
    ExpectMetrics(c, *registry.Get(c.name));
  }
}

}  // namespace
}  // namespace mulligan
