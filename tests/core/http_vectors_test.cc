// tests/core/http_vectors_test.cc — tests/vectors/pipeline.json through the
// HTTP front doors against nginx: HttpClient::Send, HttpClientCall stepped by
// hand, and HttpAsyncEngine. Each scripted attempt is one request to nginx's
// /script location (tests/nginx/script.js): success is a 200, a retryable
// failure a 503 (with Retry-After when the step has a hint), a terminal one
// a 404. The waits go through a FakeClock, so no test sleeps; nginx's access
// log proves how many requests each call really sent.
#include <string>
#include <vector>

#include "http_fixture.h"
#include "pipeline_vectors.h"

namespace mulligan {
namespace http_test {
namespace {

using testing::CallResultSeen;
using testing::PipelineCase;
using testing::ScriptStep;

std::vector<PipelineCase> Cases() { return testing::LoadPipelineCases(MULLIGAN_VECTORS_DIR); }

// The /script URL answering a call's attempts in order.
std::string ScriptPath(const std::vector<ScriptStep>& script, const std::string& id) {
  std::string steps;
  for (const ScriptStep& step : script) {
    if (!steps.empty()) steps += ',';
    switch (step.kind) {
      case ScriptStep::Kind::kSuccess: steps += "200"; break;
      case ScriptStep::Kind::kTerminal: steps += "404"; break;
      case ScriptStep::Kind::kRetryable:
        steps += "503";
        if (step.retry_after_seconds) steps += ":" + std::to_string(*step.retry_after_seconds);
        break;
    }
  }
  return "/script?id=" + id + "&steps=" + steps;
}

HttpClientOptions OptionsFor(const PipelineCase& c, FakeClock* clock, const std::string& name) {
  HttpClientOptions options;
  options.retry = c.retry;
  options.clock = clock;
  options.metrics_name = name;
  if (c.breaker) {
    BreakerRegistryOptions registry;
    registry.breaker = *c.breaker;
    options.breakers = std::shared_ptr<BreakerRegistry>(
        std::move(BreakerRegistry::Create(registry)).value());
  }
  return options;
}

// Reads what a finished call reported; `info` and the result as Send gives them.
CallResultSeen Seen(const Result<HttpResponse>& result, const HttpCallInfo& info,
                    std::vector<double> delays) {
  CallResultSeen seen;
  seen.attempts = info.attempts;
  seen.delays = std::move(delays);
  seen.refused = !result.ok() && result.status().code() == StatusCode::kCircuitOpen;
  seen.stop_reason = seen.refused ? "circuit_open" : StopReasonName(info.stop_reason);
  return seen;
}

void Expect(const PipelineCase& c, size_t i, const CallResultSeen& seen,
            const HttpClientOptions& options, TimePoint now) {
  const testing::CallExpectation& want = c.calls[i].expect;
  SCOPED_TRACE(c.name + ", call " + std::to_string(i + 1));
  EXPECT_EQ(seen.attempts, want.attempts);
  EXPECT_EQ(seen.delays, want.delays);
  EXPECT_EQ(seen.stop_reason, want.stop_reason);
  EXPECT_EQ(seen.refused, want.refused);
  if (want.breaker_state) {
    ASSERT_TRUE(options.breakers);
    std::shared_ptr<CircuitBreaker> b =
        options.breakers->Find("http://127.0.0.1:" + std::to_string(g_server.port));
    ASSERT_TRUE(b);
    EXPECT_EQ(BreakerStateName(b->state(now)), *want.breaker_state);
  }
}

void ExpectMetrics(const PipelineCase& c, const std::string& name) {
  SCOPED_TRACE(c.name + ", metrics");
  const MetricsSnapshot s = MetricsRegistry::Default().Get(name)->Snapshot();
  EXPECT_EQ(s.calls, c.metrics.calls);
  EXPECT_EQ(s.attempts, c.metrics.attempts);
  EXPECT_EQ(s.retries, c.metrics.retries);
  EXPECT_EQ(s.successes, c.metrics.successes);
  EXPECT_EQ(s.failures, c.metrics.failures);
}

// The number of requests nginx logged for /script calls with `id`, once it
// reaches `expected` (nginx writes a line after answering, so the last one
// may land a moment after the client has its response) or after 2 s.
size_t RequestsFor(const std::string& id, size_t expected) {
  const auto give_up = std::chrono::steady_clock::now() + seconds(2);
  for (;;) {
    size_t n = 0;
    for (const LogEntry& e : ReadLog()) {
      if (e.uri.find("id=" + id + "&") != std::string::npos) ++n;
    }
    if (n >= expected || std::chrono::steady_clock::now() >= give_up) return n;
    std::this_thread::sleep_for(milliseconds(5));
  }
}

// A name no earlier test or run used: the ids of nginx's counters and the
// metrics name of a case.
std::string Unique(const std::string& front_door, size_t c, size_t i) {
  static int run = 0;
  return front_door + "-" + std::to_string(++run) + "-" + std::to_string(c) + "-" +
         std::to_string(i);
}

TEST_F(HttpClientTest, PipelineVectorsThroughSend) {
  const std::vector<PipelineCase> cases = Cases();
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const PipelineCase& c = cases[ci];
    FakeClock clock;
    const std::string name = Unique("send", ci, 0);
    const HttpClientOptions options = OptionsFor(c, &clock, name);
    auto client = std::move(HttpClient::Create(options)).value();
    for (size_t i = 0; i < c.calls.size(); ++i) {
      clock.Advance(testing::SecondsToDuration(c.calls[i].advance));
      const std::string id = Unique("send", ci, i);
      HttpRequest request = Get(ScriptPath(c.calls[i].script, id));
      std::vector<double> delays;
      request.on_retry = [&](HttpRetryEvent& e) {
        delays.push_back(testing::DurationToSeconds(e.delay));
      };
      HttpCallInfo info;
      const Result<HttpResponse> result = client->Send(request, &info);
      const CallResultSeen seen = Seen(result, info, delays);
      Expect(c, i, seen, options, clock.Now());
      EXPECT_EQ(RequestsFor(id, static_cast<size_t>(seen.attempts)),
                static_cast<size_t>(seen.attempts)) << c.name;
    }
    ExpectMetrics(c, name);
  }
}

TEST_F(HttpClientTest, PipelineVectorsThroughSteppedCalls) {
  const std::vector<PipelineCase> cases = Cases();
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const PipelineCase& c = cases[ci];
    FakeClock clock;
    const std::string name = Unique("step", ci, 0);
    const HttpClientOptions options = OptionsFor(c, &clock, name);
    auto client = std::move(HttpClient::Create(options)).value();
    for (size_t i = 0; i < c.calls.size(); ++i) {
      clock.Advance(testing::SecondsToDuration(c.calls[i].advance));
      auto call = std::move(client->Begin(Get(ScriptPath(c.calls[i].script, Unique("s", ci, i)))))
                      .value();
      std::vector<double> delays;
      for (Decision d = call->Attempt(); d.retry(); d = call->Attempt()) {
        EXPECT_EQ(call->RetryEvent().delay, d.delay);
        delays.push_back(testing::DurationToSeconds(d.delay));
        clock.Advance(d.delay);  // the caller waits its own way
      }
      HttpCallInfo info;
      const Result<HttpResponse> result = call->Finish(&info);
      Expect(c, i, Seen(result, info, delays), options, clock.Now());
    }
    ExpectMetrics(c, name);
  }
}

TEST_F(HttpClientTest, PipelineVectorsThroughTheAsyncEngine) {
  const std::vector<PipelineCase> cases = Cases();
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const PipelineCase& c = cases[ci];
    FakeClock clock;
    const std::string name = Unique("async", ci, 0);
    const HttpClientOptions options = OptionsFor(c, &clock, name);
    auto engine = std::move(HttpAsyncEngine::Create(options)).value();
    for (size_t i = 0; i < c.calls.size(); ++i) {
      clock.Advance(testing::SecondsToDuration(c.calls[i].advance));
      PollDriver driver(*engine, &clock);
      const uint64_t id =
          std::move(engine->Begin(Get(ScriptPath(c.calls[i].script, Unique("a", ci, i))))).value();
      ASSERT_TRUE(engine->StartAttempt(id).ok());
      driver.Run(1);
      ASSERT_EQ(driver.done.size(), 1u) << c.name;
      std::vector<double> delays;
      for (Duration d : driver.waits[id]) delays.push_back(testing::DurationToSeconds(d));
      const CallResultSeen seen = Seen(driver.done.begin()->second, driver.infos[id], delays);
      Expect(c, i, seen, options, clock.Now());
    }
    ExpectMetrics(c, name);
  }
}

}  // namespace
}  // namespace http_test
}  // namespace mulligan
