// tests/core/simulate/hedge_sim_test.cc — hedging modes and the tail model
// in the fleet simulator, and sweeps over client counts: exact numbers on
// tiny scenarios worked out by hand (in the comments), and bad fields.
#include <gtest/gtest.h>

#include <string>

#include "mulligan/simulate/fleet.h"
#include "mulligan/simulate/report.h"
#include "mulligan/simulate/scenario.h"
#include "mulligan/simulate/service_model.h"
#include "sim_test_util.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;

// tail_fraction: one seeded draw per attempt (a stream of its own, so the
// same seed gives the same slow attempts); 0 and 1 are exact.
TEST(SimTailModel, FractionDrawsOncePerAttemptFromItsSeed) {
  TailModelOptions o;
  o.tail_fraction = 0.25;
  o.seed = 42;
  TailModel tail(o);
  Random draws(42);
  int slow = 0;
  for (int n = 0; n < 1000; ++n) {
    const bool expected = draws.NextDouble() < 0.25;
    const ServiceAnswer a = tail.Serve(milliseconds(n), 0);
    EXPECT_EQ(a.done - milliseconds(n), expected ? milliseconds(100) : milliseconds(1)) << n;
    slow += expected ? 1 : 0;
  }
  EXPECT_GT(slow, 150);  // a fixed seed: one fixed count, about 250
  EXPECT_LT(slow, 350);
  o.tail_fraction = 1;
  TailModel all(o);
  EXPECT_EQ(all.Serve(milliseconds(0), 0).done, milliseconds(100));
  o.tail_fraction = 0;
  TailModel none(o);
  EXPECT_EQ(none.Serve(milliseconds(0), 0).done, milliseconds(1));
}

TEST(SimTailModel, EveryNthArrivalIsSlowAndEveryAttemptSucceeds) {
  TailModelOptions o;
  o.latency = milliseconds(1);
  o.tail_latency = milliseconds(100);
  o.tail_every = 3;
  TailModel tail(o);
  const Duration done[] = {milliseconds(11), milliseconds(12), milliseconds(112),
                           milliseconds(14), milliseconds(15), milliseconds(115)};
  for (int n = 0; n < 6; ++n) {
    const ServiceAnswer a = tail.Serve(milliseconds(10 + n), 0);
    EXPECT_EQ(a.outcome.error, ErrorKind::kNone) << n;
    EXPECT_EQ(a.done, done[n]) << n;
    EXPECT_FALSE(a.overloaded);
    EXPECT_FALSE(a.during_outage);
  }
}

// Two clients, both starting at 0, three calls each 1 s apart; the tail
// model answers in 1 ms except its 3rd, 6th, 9th... request (100 ms).
const std::string kTiny = R"({
  "name": "tiny tail",
  "service": {"model": "tail", "latency": "1ms", "tail_latency": "100ms", "tail_every": 3},
  "clients": {"count": 2, "calls": 3, "interval": "1s", "per_process": 2},
  "modes": [
    {"name": "no hedging"},
    {"name": "fixed", "hedging": {"max_attempts": 2, "hedging_delay": "10ms"}},
    {"name": "quantile", "hedging": {"max_attempts": 2, "hedging_delay": "10ms",
     "delay_quantile": 0.5, "quantile_window": 10, "quantile_min_samples": 2}}]})";

// No hedging: client 0 sends requests #1, #3, #5 (at 0, 1, 2 s), client 1
// #2, #4, #6 (client order at the same instant): #3 and #6 are slow, so
// client 0's second call and client 1's third take 100 ms (the last ends at
// 2.100 s); latencies 1, 1, 100, 1, 1, 100 ms.
TEST(SimHedging, NoHedgingPaysTheTail) {
  const SimulationReport r = MustRun(kTiny);
  const ModeReport& m = ModeNamed(r, "no hedging");
  EXPECT_EQ(m.calls, 6);
  EXPECT_EQ(m.attempts, 6);
  EXPECT_EQ(m.hedges, 0);
  EXPECT_EQ(m.hedges_won, 0);
  EXPECT_DOUBLE_EQ(m.p50_ms, 1.0);
  EXPECT_DOUBLE_EQ(m.p99_ms, 100.0);
  EXPECT_DOUBLE_EQ(m.completion_s, 2.100);
  EXPECT_DOUBLE_EQ(m.extra_load_pct, 0.0);
}

// Fixed delay 10 ms:
//   0 s     c0 copy 1 = #1 (1 ms), c1 copy 1 = #2 (1 ms); each hedge's
//           wake-up armed at 10 ms; both win at 1 ms (wake-ups dropped).
//   1 s     c0 #3 (slow, 1.100), c1 #4 (1.001: wins, 1 ms).
//   1.010   c0's hedge starts: copy 2 = #5, answers 1.011 and wins (11 ms);
//           copy 1 cancelled, its answer at 1.100 ignored.
//   2 s     c0 #6 (slow), c1 #7 (1 ms); 2.010 c0's hedge #8 wins at 2.011.
// 8 requests, 2 hedges, both won; latencies 1, 1, 11, 1, 11, 1 ms.
TEST(SimHedging, FixedDelayStartsTheHedgeAtTheDelayAndItWins) {
  const SimulationReport r = MustRun(kTiny);
  const ModeReport& m = ModeNamed(r, "fixed");
  EXPECT_EQ(m.calls, 6);
  EXPECT_EQ(m.successes, 6);
  EXPECT_EQ(m.attempts, 8);
  EXPECT_EQ(m.hedges, 2);
  EXPECT_EQ(m.hedges_won, 2);
  EXPECT_DOUBLE_EQ(m.p50_ms, 1.0);
  EXPECT_DOUBLE_EQ(m.p99_ms, 11.0);
  EXPECT_DOUBLE_EQ(m.completion_s, 2.011);
  EXPECT_NEAR(m.extra_load_pct, 100.0 * 2 / 6, 1e-9);
}

// The quantile delay (p50 of the process's winners, from 2 samples): at 0 s
// the window is empty, so the fixed 10 ms applies; both win at 1 ms (window
// [1, 1]). At 1 s the delay is 1 ms: c0's copy 1 is #3 (slow); at 1.001 c0's
// hedge #5 starts (client 0's wake-up comes before client 1's answer) and
// wins at 1.002 (2 ms), and c1's copy 1 (#4) answers at 1.001, the instant
// its own hedge could start: the answer comes first, so no hedge. Same at
// 2 s with #6 slow and #8 the hedge. Latencies 1, 1, 2, 1, 2, 1 ms.
TEST(SimHedging, QuantileDelayFollowsTheWinnersLatencies) {
  const SimulationReport r = MustRun(kTiny);
  const ModeReport& m = ModeNamed(r, "quantile");
  EXPECT_EQ(m.attempts, 8);
  EXPECT_EQ(m.hedges, 2);
  EXPECT_EQ(m.hedges_won, 2);
  EXPECT_DOUBLE_EQ(m.p50_ms, 1.0);
  EXPECT_DOUBLE_EQ(m.p99_ms, 2.0);
  EXPECT_DOUBLE_EQ(m.completion_s, 2.002);
}

// A hedge that loses: max_attempts 3 and a 50 ms delay, every request slow
// (tail_every 1, 100 ms): copy 1 at 0, copy 2 at 50 ms; copy 3 could start
// at 100 ms, but copy 1's answer at 100 ms comes first and wins: 2 requests,
// the hedge lost (cancelled), latency 100 ms.
TEST(SimHedging, ALosingHedgeIsCountedButNotWon) {
  const SimulationReport r = MustRun(R"({
    "service": {"model": "tail", "latency": "1ms", "tail_latency": "100ms", "tail_every": 1},
    "clients": {"count": 1},
    "modes": [{"name": "three", "hedging": {"max_attempts": 3, "hedging_delay": "50ms"}}]})");
  const ModeReport& m = r.modes.at(0);
  EXPECT_EQ(m.attempts, 2);
  EXPECT_EQ(m.hedges, 1);
  EXPECT_EQ(m.hedges_won, 0);
  EXPECT_DOUBLE_EQ(m.p50_ms, 100.0);
  EXPECT_DOUBLE_EQ(m.completion_s, 0.100);
  EXPECT_DOUBLE_EQ(m.extra_load_pct, 100.0);
}

// Hedges ask the retry budget: an AWS quota of capacity 4 cannot pay a
// retry's 5, so no hedge starts and each call waits for its copy 1 (100 ms).
TEST(SimHedging, AnEmptyBudgetStopsTheHedges) {
  const SimulationReport r = MustRun(R"({
    "service": {"model": "tail", "latency": "1ms", "tail_latency": "100ms", "tail_every": 1},
    "clients": {"count": 1, "calls": 2},
    "modes": [{"name": "gated", "hedging": {"max_attempts": 2, "hedging_delay": "10ms"},
               "budget": {"kind": "quota", "capacity": 4, "retry_cost": 5,
                          "no_retry_increment": 0}}]})");
  const ModeReport& m = r.modes.at(0);
  EXPECT_EQ(m.successes, 2);
  EXPECT_EQ(m.hedges, 0);
  EXPECT_EQ(m.attempts, 2);
  EXPECT_DOUBLE_EQ(m.p99_ms, 100.0);
}

// The tiny OCC run of simulate_test.cc swept over 1 and 3 clients: 1 client
// writes once at 0 (10 ms); 3 clients make 6 attempts (worked out there).
const std::string kSweep = R"({
  "name": "sweep", "seed": 7, "sweep": [1, 3],
  "service": {"model": "occ", "slot": "10ms"},
  "clients": {"count": 2},
  "modes": [{"name": "none", "policy": {"max_attempts": 10, "backoff": "exponential",
             "base_delay": "100ms", "multiplier": 2, "jitter": "none"}}]})";

TEST(SimSweep, OneRowPerClientCountAndMode) {
  const SimulationReport r = MustRun(kSweep);
  ASSERT_EQ(r.modes.size(), 2u);
  EXPECT_EQ(ReportToCsv(r),
            "mode,clients,calls,attempts,amplification,completion_s,p50_ms,p99_ms,successes,"
            "give_ups,budget_stops,throttled,circuit_open,outage_attempts,overloaded,"
            "last_overload_s,hedges,hedges_won,extra_load_pct\n"
            "none,1,1,1,1.0000,0.010,10.000,10.000,1,0,0,0,0,0,0,-1.000,0,0,0.000\n"
            "none,3,3,6,2.0000,0.330,120.000,330.000,3,0,0,0,0,0,0,-1.000,0,0,0.000\n");
  const std::string json = ReportToJson(r);
  EXPECT_NE(json.find("\"sweep\":[1,3]"), std::string::npos) << json;
  EXPECT_EQ(json.find("\"clients\":3,\"modes\""), std::string::npos) << json;
}

TEST(SimSweep, OverridesAndTheirChecks) {
  SimRunOptions sweep;
  sweep.sweep = {3};
  SimulationReport r = MustRun(kSweep, sweep);
  ASSERT_EQ(r.modes.size(), 1u);
  EXPECT_EQ(r.modes[0].clients, 3);
  EXPECT_EQ(r.modes[0].attempts, 6);
  SimRunOptions clients;  // --clients runs that count alone
  clients.clients = 1;
  r = MustRun(kSweep, clients);
  ASSERT_EQ(r.modes.size(), 1u);
  EXPECT_TRUE(r.sweep.empty());
  EXPECT_EQ(r.modes[0].attempts, 1);
  Result<Scenario> s = ParseScenario(kSweep, "sweep.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  SimRunOptions both;
  both.clients = 1;
  both.sweep = {1};
  EXPECT_EQ(RunScenario(*s, both).status().message(),
            "clients and sweep cannot be given together");
  SimRunOptions twice;
  twice.sweep = {5, 1, 5};
  EXPECT_EQ(RunScenario(*s, twice).status().message(), "sweep[2]: 5 is listed twice");
  SimRunOptions zero;
  zero.sweep = {0};
  EXPECT_EQ(RunScenario(*s, zero).status().message(),
            "sweep[0]: must be in [1, 1000000], got 0");
}

TEST(SimScenario, RefusesBadHedgingTailAndSweepFields) {
  const std::string occ = R"("service": {"model": "occ"}, )";
  const std::string tail = R"("service": {"model": "tail", "tail_every": 3}, )";
  auto mode = [](const std::string& fields) {
    return R"("modes": [{"name": "h", )" + fields + "}]";
  };
  ExpectRefused("{" + occ + mode(R"("hedging": {"max_attempts": 1})") + "}",
                "modes[0].hedging.max_attempts");
  ExpectRefused("{" + occ + mode(R"("hedging": {"delay_quantile": 1.5})") + "}",
                "modes[0].hedging.delay_quantile");
  ExpectRefused("{" + occ + mode(R"("hedging": {"hedging_delay": "-1ms"})") + "}",
                "modes[0].hedging.hedging_delay");
  ExpectRefused("{" + occ + mode(R"("hedging": {"hedging_dealy": "1ms"})") + "}",
                "modes[0].hedging.hedging_dealy: unknown field, did you mean \"hedging_delay\"?");
  ExpectRefused(
      "{" + occ + mode(R"("hedging": {"quantile_window": 10, "quantile_min_samples": 20})") + "}",
      "modes[0].hedging.quantile_min_samples must be in [1, quantile_window = 10], got 20");
  ExpectRefused("{" + occ + mode(R"("hedging": [])") + "}", "modes[0].hedging");
  ExpectRefused("{" + occ + mode(R"("hedging": {}, "throttle": {})") + "}",
                "modes[0].throttle: not allowed with \"hedging\"");
  EXPECT_TRUE(ParseScenario("{" + tail + R"("modes": [{"name": "a"}]})", "ok.json").ok());
  ExpectRefused(R"({"service": {"model": "tail", "tail_every": 0}, "modes": [{"name": "a"}]})",
                "service.tail_every");
  ExpectRefused(R"({"service": {"model": "tail"}, "modes": [{"name": "a"}]})",
                "a tail model needs exactly one of tail_every and tail_fraction");
  ExpectRefused(R"({"service": {"model": "tail", "tail_every": 2, "tail_fraction": 0.5},
                    "modes": [{"name": "a"}]})",
                "a tail model needs exactly one of tail_every and tail_fraction");
  ExpectRefused(R"({"service": {"model": "tail", "tail_fraction": 1.5}, "modes": [{"name": "a"}]})",
                "service.tail_fraction");
  ExpectRefused(R"({"service": {"model": "tail", "slot": "1ms"}, "modes": [{"name": "a"}]})",
                "service.slot: only for model \"occ\"");
  ExpectRefused(R"({"service": {"model": "occ", "tail_latency": "1s"}, "modes": [{"name": "a"}]})",
                "service.tail_latency: only for model \"tail\"");
  ExpectRefused(R"({"service": {"model": "tial"}, "modes": [{"name": "a"}]})", "service.model");
  ExpectRefused("{" + occ + R"("sweep": [], "modes": [{"name": "a"}]})",
                "sweep: expected at least one client count");
  ExpectRefused("{" + occ + R"("sweep": [10, 0], "modes": [{"name": "a"}]})", "sweep[1]");
  ExpectRefused("{" + occ + R"("sweep": [10, 10], "modes": [{"name": "a"}]})",
                "sweep[1]: 10 is listed twice");
  ExpectRefused("{" + occ + R"("sweep": 10, "modes": [{"name": "a"}]})", "sweep");
}

}  // namespace
}  // namespace mulligan
