// tests/core/simulate/simulate_test.cc — the fleet simulator (core/include/
// mulligan/simulate/): exact numbers on tiny scenarios worked out by hand,
// the AWS study's ranking on a mid-size run, budgets against a retry storm,
// and bad scenario fields.
#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

#include "mulligan/pipeline/pipeline.h"
#include "mulligan/simulate/event_queue.h"
#include "mulligan/simulate/fleet.h"
#include "mulligan/simulate/report.h"
#include "mulligan/simulate/scenario.h"
#include "mulligan/simulate/service_model.h"
#include "sim_test_util.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// CallOptions::seed (added in 0.6 for the fleet): it replaces the policy's
// seed, so calls sharing one policy each get their own reproducible delays.
std::vector<Duration> DelaysOf(const Pipeline& pipeline, std::optional<uint64_t> seed) {
  CallOptions options;
  options.seed = seed;
  const TimePoint t0{};
  Call call = pipeline.Begin(t0, options);
  std::vector<Duration> delays;
  for (;;) {
    (void)call.Admit(t0);
    const Decision d = call.Record(Outcome::Failure(true), t0);
    if (!d.retry()) break;
    delays.push_back(d.delay);
  }
  return delays;
}

TEST(SimCallSeed, ReplacesThePolicySeed) {
  RetryOptions o;
  o.max_attempts = 4;
  o.seed = 99;
  RetryPolicy policy = RetryPolicy::Create(o).value();
  Pipeline::Parts parts;
  parts.policy = &policy;
  const Pipeline pipeline(parts);
  // The same sequence as a policy seeded with 5.
  RetryOptions o5 = o;
  o5.seed = 5;
  RetryPolicy policy5 = RetryPolicy::Create(o5).value();
  Pipeline::Parts parts5;
  parts5.policy = &policy5;
  const Pipeline pipeline5(parts5);
  EXPECT_EQ(DelaysOf(pipeline, 5), DelaysOf(pipeline5, std::nullopt));
  EXPECT_EQ(DelaysOf(pipeline, 5), DelaysOf(pipeline, 5));
  EXPECT_NE(DelaysOf(pipeline, 5), DelaysOf(pipeline, 6));
  EXPECT_EQ(DelaysOf(pipeline, std::nullopt), DelaysOf(pipeline, 99));
  EXPECT_EQ(DelaysOf(pipeline, 5).size(), 3u);
}

TEST(SimEventQueue, PopsByTimeThenClientAndAdvancesTheClock) {
  FakeClock clock;
  const TimePoint start = clock.Now();
  EventQueue q(&clock);
  q.Push({milliseconds(5), 2, SimEventKind::kAnswer});
  q.Push({milliseconds(5), 1, SimEventKind::kAttempt});
  q.Push({milliseconds(1), 9, SimEventKind::kStartCall});
  SimEvent e = q.Pop();
  EXPECT_EQ(e.client, 9u);
  EXPECT_EQ(clock.Now() - start, milliseconds(1));
  e = q.Pop();
  EXPECT_EQ(e.client, 1u);
  EXPECT_EQ(clock.Now() - start, milliseconds(5));
  q.Push({milliseconds(2), 4, SimEventKind::kAttempt});  // in the past: now
  e = q.Pop();
  EXPECT_EQ(e.client, 2u);
  e = q.Pop();
  EXPECT_EQ(e.client, 4u);
  EXPECT_EQ(e.time, milliseconds(5));
  EXPECT_TRUE(q.empty());
}

TEST(SimOccModel, FirstArrivalOfASlotWinsAndAnswersAtTheSlotsEnd) {
  OccModel occ(milliseconds(10));
  ServiceAnswer a = occ.Serve(milliseconds(0), 0);
  EXPECT_EQ(a.outcome.error, ErrorKind::kNone);
  EXPECT_EQ(a.done, milliseconds(10));
  a = occ.Serve(milliseconds(9), 1);
  EXPECT_EQ(a.outcome.error, ErrorKind::kRetryable);
  EXPECT_EQ(a.done, milliseconds(10));
  a = occ.Serve(milliseconds(10), 2);  // the next slot
  EXPECT_EQ(a.outcome.error, ErrorKind::kNone);
  EXPECT_EQ(a.done, milliseconds(20));
}

TEST(SimCapacityModel, ServesCapacityPerWindowAndFailsDuringTheOutage) {
  CapacityModelOptions o;
  o.capacity_per_s = 20;  // 2 per 100-ms window
  o.window = milliseconds(100);
  o.latency = milliseconds(5);
  o.outage_start = seconds(1);
  o.outage_duration = seconds(2);
  CapacityModel m(o);
  EXPECT_EQ(m.per_window(), 2);
  EXPECT_EQ(m.Serve(milliseconds(0), 0).outcome.http_status, 0);
  EXPECT_EQ(m.Serve(milliseconds(50), 1).outcome.http_status, 0);
  ServiceAnswer third = m.Serve(milliseconds(99), 2);
  EXPECT_EQ(third.outcome.http_status, 503);
  EXPECT_TRUE(third.overloaded);
  EXPECT_EQ(third.done, milliseconds(104));
  EXPECT_EQ(m.Serve(milliseconds(100), 2).outcome.http_status, 0);
  ServiceAnswer down = m.Serve(milliseconds(1000), 3);
  EXPECT_TRUE(down.during_outage);
  EXPECT_FALSE(down.overloaded);
  EXPECT_EQ(down.outcome.http_status, 503);
  EXPECT_EQ(m.Serve(milliseconds(3000), 3).outcome.http_status, 0);  // recovered
}

// 3 clients start at 0; slot 10 ms; exponential backoff, base 100 ms,
// multiplier 2, no jitter. By hand:
//   t=0      all three arrive in slot 0: client 0 wins; answers at 10 ms.
//   t=110    clients 1 and 2 retry (10 + 100) in slot 11: client 1 wins;
//            answers at 120 ms.
//   t=320    client 2 retries (120 + 200) in slot 32, alone: wins; 330 ms.
// Calls 3 + 2 + 1 = 6; completion 0.330 s; latencies 10, 120, 330 ms.
TEST(SimFleet, TinyOccRunWithoutJitterMatchesTheHandComputation) {
  const SimulationReport r = MustRun(R"({
    "name": "tiny", "seed": 7,
    "service": {"model": "occ", "slot": "10ms"},
    "clients": {"count": 3},
    "modes": [{"name": "none", "policy": {"max_attempts": 10, "backoff": "exponential",
               "base_delay": "100ms", "multiplier": 2, "jitter": "none"}}]})");
  ASSERT_EQ(r.modes.size(), 1u);
  const ModeReport& m = r.modes[0];
  EXPECT_EQ(m.calls, 3);
  EXPECT_EQ(m.attempts, 6);
  EXPECT_DOUBLE_EQ(m.amplification, 2.0);
  EXPECT_DOUBLE_EQ(m.completion_s, 0.330);
  EXPECT_DOUBLE_EQ(m.p50_ms, 120.0);
  EXPECT_DOUBLE_EQ(m.p99_ms, 330.0);
  EXPECT_EQ(m.successes, 3);
  EXPECT_EQ(m.give_ups, 0);
  EXPECT_EQ(ReportToCsv(r),
            "mode,clients,calls,attempts,amplification,completion_s,p50_ms,p99_ms,successes,"
            "give_ups,budget_stops,throttled,circuit_open,outage_attempts,overloaded,"
            "last_overload_s,hedges,hedges_won,extra_load_pct\n"
            "none,3,3,6,2.0000,0.330,120.000,330.000,3,0,0,0,0,0,0,-1.000,0,0,0.000\n");
}

// The same three clients with max_attempts 2: client 2 loses at 0 and at
// 110 ms and gives up at 120 ms (attempts exhausted).
TEST(SimFleet, TinyOccRunGivesUpWhenAttemptsRunOut) {
  const SimulationReport r = MustRun(R"({
    "service": {"model": "occ", "slot": "10ms"},
    "clients": {"count": 3},
    "modes": [{"name": "two", "policy": {"max_attempts": 2, "base_delay": "100ms",
               "jitter": "none"}}]})");
  const ModeReport& m = r.modes[0];
  EXPECT_EQ(m.attempts, 5);
  EXPECT_EQ(m.successes, 2);
  EXPECT_EQ(m.give_ups, 1);
  EXPECT_DOUBLE_EQ(m.completion_s, 0.120);
}

// One client, capacity model, down from 0 to 1 s; latency 10 ms; constant
// backoff 300 ms, no jitter. Attempts at 0, 310, 620 (outage: 503), 930
// (outage), 1240 (served): 5 attempts, 4 during the outage, one call of
// 1250 ms.
TEST(SimFleet, CapacityOutageByHand) {
  const SimulationReport r = MustRun(R"({
    "service": {"model": "capacity", "capacity_per_s": 100, "latency": "10ms",
                "outage_start": 0, "outage_duration": "1s"},
    "clients": {"count": 1},
    "modes": [{"name": "constant", "policy": {"max_attempts": 10, "backoff": "constant",
               "base_delay": "300ms", "jitter": "none"}}]})");
  const ModeReport& m = r.modes[0];
  EXPECT_EQ(m.attempts, 5);
  EXPECT_EQ(m.outage_attempts, 4);
  EXPECT_EQ(m.overloaded, 0);
  EXPECT_EQ(m.successes, 1);
  EXPECT_DOUBLE_EQ(m.p50_ms, 1250.0);
  EXPECT_DOUBLE_EQ(m.completion_s, 1.250);
}

// The study's parameters (Brooker's simulator: base 5 ms, cap 2 s, a network
// delay of about 10 ms, here the slot) in its range of clients (10 to 50).
const char* kRanking = R"({
  "name": "ranking", "seed": 3,
  "service": {"model": "occ", "slot": "10ms"},
  "clients": {"count": 40},
  "modes": [
    {"name": "none", "policy": {"max_attempts": 100000, "base_delay": "5ms",
     "max_delay": "2s", "jitter": "none"}},
    {"name": "full", "policy": {"max_attempts": 100000, "base_delay": "5ms",
     "max_delay": "2s", "jitter": "full"}},
    {"name": "equal", "policy": {"max_attempts": 100000, "base_delay": "5ms",
     "max_delay": "2s", "jitter": "equal"}},
    {"name": "decorrelated", "policy": {"max_attempts": 100000, "backoff": "decorrelated",
     "base_delay": "5ms", "max_delay": "2s", "jitter": "none"}}]})";

// Brooker 2015: no jitter makes the most calls; full and decorrelated
// jitter fewer than equal jitter and no jitter.
TEST(SimFleet, ReproducesTheAwsStudysRanking) {
  const SimulationReport r = MustRun(kRanking);
  const ModeReport& none = ModeNamed(r, "none");
  const ModeReport& full = ModeNamed(r, "full");
  const ModeReport& equal = ModeNamed(r, "equal");
  const ModeReport& decorrelated = ModeNamed(r, "decorrelated");
  for (const ModeReport* m : {&none, &full, &equal, &decorrelated}) {
    EXPECT_EQ(m->successes, 40) << m->mode;
  }
  // Without jitter the 40 writers stay in lockstep: one wins per round, so
  // 40 + 39 + ... + 1 = 820 attempts.
  EXPECT_EQ(none.attempts, 820);
  EXPECT_GT(none.attempts, equal.attempts);
  EXPECT_GT(none.attempts, full.attempts);
  EXPECT_GT(none.attempts, decorrelated.attempts);
  EXPECT_LT(full.attempts, equal.attempts);
  EXPECT_LT(decorrelated.attempts, equal.attempts);
}

TEST(SimFleet, SameSeedSameReportOtherSeedOtherJitter) {
  Result<Scenario> s = ParseScenario(kRanking, "ranking.json");
  ASSERT_TRUE(s.ok());
  const std::string a = ReportToJson(*RunScenario(*s));
  const std::string b = ReportToJson(*RunScenario(*s));
  EXPECT_EQ(a, b);
  SimRunOptions other;
  other.seed = 4;
  EXPECT_NE(a, ReportToJson(*RunScenario(*s, other)));
}

// A retry storm: 2,000 clients, one call a second each, capacity 1.2x the
// offered load; down from 5 s to 15 s. Without a budget every client
// retries through the outage; the gRPC A6 token bucket, one per process of
// 100 clients, stops the retries once half its tokens are gone.
TEST(SimFleet, BudgetCutsTheAttemptsDuringTheOutage) {
  const SimulationReport r = MustRun(R"({
    "seed": 11,
    "service": {"model": "capacity", "headroom": 1.2, "window": "100ms", "latency": "20ms",
                "outage_start": "5s", "outage_duration": "10s"},
    "clients": {"count": 2000, "start_spread": "1s", "calls": 30, "interval": "1s",
                "per_process": 100},
    "modes": [
      {"name": "no budget", "policy": {"max_attempts": 5, "base_delay": "100ms"}},
      {"name": "token bucket", "policy": {"max_attempts": 5, "base_delay": "100ms"},
       "budget": {"kind": "token_bucket", "max_tokens": 10, "token_ratio": 0.1}},
      {"name": "throttle", "policy": {"max_attempts": 5, "base_delay": "100ms"},
       "throttle": {"window": "10s", "k": 2}}]})");
  const ModeReport& none = ModeNamed(r, "no budget");
  const ModeReport& bucket = ModeNamed(r, "token bucket");
  const ModeReport& throttle = ModeNamed(r, "throttle");
  EXPECT_EQ(none.calls, 60000);
  EXPECT_EQ(bucket.calls, 60000);
  EXPECT_GT(none.outage_attempts, 0);
  EXPECT_LT(bucket.outage_attempts * 2, none.outage_attempts);
  EXPECT_GT(bucket.budget_stops, 0);
  EXPECT_EQ(none.budget_stops, 0);
  EXPECT_LT(throttle.outage_attempts, none.outage_attempts);
  EXPECT_GT(throttle.throttled, 0);
}

TEST(SimScenario, RefusesBadFieldsNamingThem) {
  const std::string modes = R"("modes": [{"name": "a"}])";
  ExpectRefused("[]", "(top level)");
  ExpectRefused("{" + modes + "}", "service: required");
  ExpectRefused(R"({"service": {"model": "occ"}})", "modes: required");
  ExpectRefused(R"({"service": {"model": "ooc"}, )" + modes + "}", "service.model");
  ExpectRefused(R"({"service": {"slot": "1ms"}, )" + modes + "}", "service.model: required");
  ExpectRefused(R"({"service": {"model": "occ", "slot": 0}, )" + modes + "}", "service.slot");
  ExpectRefused(R"({"service": {"model": "occ", "latency": "1ms"}, )" + modes + "}",
                "service.latency: only for models \"capacity\" and \"tail\"");
  ExpectRefused(R"({"service": {"model": "capacity"}, )" + modes + "}",
                "exactly one of capacity_per_s and headroom");
  ExpectRefused(R"({"service": {"model": "capacity", "headroom": -1}, )" + modes + "}",
                "service.headroom");
  ExpectRefused(R"({"service": {"model": "occ"}, "clients": {"count": 0}, )" + modes + "}",
                "clients.count");
  ExpectRefused(R"({"service": {"model": "occ"}, "clients": {"cuont": 5}, )" + modes + "}",
                "clients.cuont: unknown field, did you mean \"count\"?");
  ExpectRefused(R"({"service": {"model": "occ"}, "modes": []})", "at least one mode");
  ExpectRefused(R"({"service": {"model": "occ"}, "modes": [{"name": "a"}, {"name": "a"}]})",
                "modes[1].name");
  ExpectRefused(R"({"service": {"model": "occ"}, "modes": [{}]})", "modes[0].name: required");
  ExpectRefused(
      R"({"service": {"model": "occ"}, "modes": [{"name": "a", "policy": {"jitter": "ful"}}]})",
      "modes[0].policy.jitter");
  ExpectRefused(
      R"({"service": {"model": "occ"}, "modes": [{"name": "a", "policy": {"seed": 1}}]})",
      "modes[0].policy.seed: not allowed");
  ExpectRefused(R"({"service": {"model": "occ"},
      "modes": [{"name": "a", "budget": {"kind": "token_bucket", "max_tokens": 0}}]})",
                "modes[0].budget");
  ExpectRefused(R"({"service": {"model": "occ"}, "modes": [{"name": "a", "brekaer": {}}]})",
                "modes[0].brekaer: unknown field, did you mean \"breaker\"?");
  ExpectRefused(R"({"service": {"model": "occ"}, "seed": -1, )" + modes + "}", "seed");
  ExpectRefused(R"({"service": {"model": "occ"}, "service": {"model": "occ"}, )" + modes + "}",
                "duplicate key");
  ExpectRefused("{", "invalid JSON");
}

TEST(SimScenario, RunOverridesAreChecked) {
  Result<Scenario> s =
      ParseScenario(R"({"service": {"model": "occ"}, "modes": [{"name": "a"}]})", "x.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  SimRunOptions o;
  o.clients = 0;
  Result<SimulationReport> r = RunScenario(*s, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("clients must be in [1, 1000000], got 0"),
            std::string::npos);
  Result<Scenario> missing = ParseScenarioFile("/nonexistent/scenario.json");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("cannot read the scenario file"), std::string::npos);
}

}  // namespace
}  // namespace mulligan
