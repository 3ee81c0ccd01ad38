// tests/core/redis/redis_limiter_test.cc — the shared GCRA rate limiter
// (limits/redis_rate_limiter.h) against a real redis-server. Times are
// scripted on a FakeClock (wall 2024-01-01T00:00:00Z = 1704067200 s), and
// every expected value is worked out by hand from the GCRA rule
// (T = 1 / rate, tau = (burst - 1) * T).

#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <string>

#include "mulligan/limits/redis_rate_limiter.h"
#include "mulligan/telemetry/metrics.h"
#include "redis/redis_test_base.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

class RedisLimiterTest : public redis_test::RedisTest {
 protected:
  std::shared_ptr<RateLimiter> Limiter(const std::shared_ptr<RedisState>& state, double rate,
                                       double burst, std::string name = "api") {
    RateLimiterOptions o;
    o.name = std::move(name);
    o.rate = rate;
    o.burst = burst;
    Result<std::shared_ptr<RateLimiter>> l = CreateRedisRateLimiter(state, o);
    EXPECT_TRUE(l.ok()) << l.status().ToString();
    return l.ok() ? l.value() : nullptr;
  }
};

TEST_F(RedisLimiterTest, BurstThenOneEveryIntervalAndTheCellInRedis) {
  auto state = Connect(Options());
  // rate 10/s: T = 100 ms; burst 3: tau = 200 ms.
  auto l = Limiter(state, 10, 3);
  ASSERT_TRUE(l->shared());
  const TimePoint t0 = clock_.Now();
  const auto before_writes = std::chrono::steady_clock::now();  // real time, for the PTTL
  for (int i = 0; i < 3; ++i) {
    RateDecision d = l->Acquire("", t0, Duration::zero());
    EXPECT_TRUE(d.admitted) << i;
    EXPECT_EQ(d.wait, Duration::zero());
    EXPECT_FALSE(d.fallback);
  }
  // TAT = t0 + 300 ms; the next slot is at TAT - tau = t0 + 100 ms.
  RateDecision d = l->Acquire("", t0, Duration::zero());
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.retry_in, milliseconds(100));
  // The cell: TAT in Unix microseconds, expiring when it passes.
  const std::string key = RedisRateLimiterKey(*state, "api", "");
  EXPECT_EQ(key, "{test:limiter:api}");
  EXPECT_EQ(state->Command({"GET", key})->str, "1704067200300000");
  // The script sets PX 300 (the TAT, 300 ms ahead); the server counts it down
  // in real time. So the PTTL is 300 less the real time between that SET and
  // this PTTL (at most what passed since before the writes, +1 ms for the
  // server's whole-millisecond clock): a bound from the measured time, not a
  // fixed 50 ms, which a descheduled test or server on a loaded machine can
  // spend between the two.
  const int64_t pttl = state->Command({"PTTL", key})->integer;
  const int64_t since_ms = std::chrono::duration_cast<milliseconds>(
                               std::chrono::steady_clock::now() - before_writes).count();
  EXPECT_GE(pttl, 300 - since_ms - 1) << "since the writes: " << since_ms << " ms";
  EXPECT_LE(pttl, 300);
  d = l->Acquire("", t0 + milliseconds(100), Duration::zero());
  EXPECT_TRUE(d.admitted);
  d = l->Acquire("", t0 + milliseconds(150), Duration::zero());
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.retry_in, milliseconds(50));
  EXPECT_EQ(l->admitted(), 4u);
  EXPECT_EQ(l->refused(), 2u);
  EXPECT_EQ(l->fallbacks(), 0u);
}

TEST_F(RedisLimiterTest, WaitersAreSpacedExactly) {
  auto state = Connect(Options());
  // rate 4/s, burst 1: T = 250 ms, tau = 0; unbounded waits reserve slots.
  auto l = Limiter(state, 4, 1);
  const TimePoint t0 = clock_.Now();
  for (int i = 0; i < 5; ++i) {
    RateDecision d = l->Acquire("", t0, Duration::max());
    EXPECT_TRUE(d.admitted);
    EXPECT_EQ(d.wait, milliseconds(250) * i) << i;
  }
  EXPECT_EQ(l->waited(), 4u);
  EXPECT_EQ(l->wait_ns(), static_cast<uint64_t>(Duration(milliseconds(2500)).count()));
}

TEST_F(RedisLimiterTest, RefusalRetryInIsExactAndTheBoundIsInclusive) {
  auto state = Connect(Options());
  auto l = Limiter(state, 2, 1);  // T = 500 ms
  const TimePoint t0 = clock_.Now();
  ASSERT_TRUE(l->Acquire("", t0, Duration::zero()).admitted);
  RateDecision d = l->Acquire("", t0 + milliseconds(120), milliseconds(379));
  EXPECT_FALSE(d.admitted);
  EXPECT_EQ(d.retry_in, milliseconds(380));
  d = l->Acquire("", t0 + milliseconds(120), milliseconds(380));
  EXPECT_TRUE(d.admitted);
  EXPECT_EQ(d.wait, milliseconds(380));
  EXPECT_EQ(l->LimitedStatus(milliseconds(380)).message(),
            "rate limiter 'api': next slot in 0.380 s");
}

TEST_F(RedisLimiterTest, TwoLimitersOnTwoConnectionsShareOneBudget) {
  auto state_a = Connect(Options());
  auto state_b = Connect(Options());
  auto a = Limiter(state_a, 10, 2);  // T = 100 ms, tau = 100 ms
  auto b = Limiter(state_b, 10, 2);
  const TimePoint t0 = clock_.Now();
  EXPECT_TRUE(a->Acquire("", t0, Duration::zero()).admitted);
  EXPECT_TRUE(b->Acquire("", t0, Duration::zero()).admitted);
  // TAT = t0 + 200 ms: both see the next slot at t0 + 100 ms.
  EXPECT_EQ(a->Acquire("", t0, Duration::zero()).retry_in, milliseconds(100));
  EXPECT_EQ(b->Acquire("", t0 + milliseconds(30), Duration::zero()).retry_in, milliseconds(70));
  EXPECT_TRUE(b->Acquire("", t0 + milliseconds(100), Duration::zero()).admitted);
  EXPECT_EQ(a->Acquire("", t0 + milliseconds(100), Duration::zero()).retry_in, milliseconds(100));
  // 1,000 calls alternating over 10 s of scripted time (one every 10 ms):
  // exactly burst + 10 s x 10/s = 2 + 100 admitted beyond the three above,
  // less the slot taken at t0 + 100 ms: the window t0+100ms..t0+10.1s holds
  // the slots t0+200ms, ..., t0+10.1s = 100 slots.
  int admitted = 0;
  for (int i = 1; i <= 1000; ++i) {
    const TimePoint now = t0 + milliseconds(100) + milliseconds(10) * i;
    RateLimiter& l = i % 2 == 0 ? *a : *b;
    if (l.Acquire("", now, Duration::zero()).admitted) ++admitted;
  }
  EXPECT_EQ(admitted, 100);
  EXPECT_EQ(a->fallbacks() + b->fallbacks(), 0u);
}

TEST_F(RedisLimiterTest, KeysAndNamesNeverCollide) {
  auto state = Connect(Options());
  auto x = Limiter(state, 1, 1, "x");
  auto xy = Limiter(state, 1, 1, "x:y");
  const TimePoint t0 = clock_.Now();
  EXPECT_TRUE(x->Acquire("y", t0, Duration::zero()).admitted);
  EXPECT_TRUE(xy->Acquire("", t0, Duration::zero()).admitted);
  EXPECT_TRUE(x->Acquire("", t0, Duration::zero()).admitted);
  EXPECT_TRUE(x->Acquire("z", t0, Duration::zero()).admitted);
  EXPECT_FALSE(x->Acquire("y", t0, Duration::zero()).admitted);
  EXPECT_EQ(RedisRateLimiterKey(*state, "x", "y"), "{test:limiter:x:y}");
  EXPECT_EQ(RedisRateLimiterKey(*state, "x:y", ""), "{test:limiter:x%253Ay}");
  EXPECT_EQ(RedisRateLimiterKey(*state, "a%", "{k}"), "{test:limiter:a%2525:%7Bk%7D}");
}

TEST_F(RedisLimiterTest, PenalizeHoldsEveryProcess) {
  auto state_a = Connect(Options());
  auto state_b = Connect(Options());
  auto a = Limiter(state_a, 10, 3);  // tau = 200 ms
  auto b = Limiter(state_b, 10, 3);
  const TimePoint t0 = clock_.Now();
  // Retry-After: 2 s seen by A: TAT = t0 + 2 s + tau; B's next slot is t0 + 2 s.
  a->Penalize("", t0 + seconds(2));
  EXPECT_EQ(b->Acquire("", t0, Duration::zero()).retry_in, seconds(2));
  EXPECT_TRUE(b->Acquire("", t0 + seconds(2), Duration::zero()).admitted);
  // An earlier instant changes nothing.
  a->Penalize("", t0 + seconds(1));
  EXPECT_EQ(b->Acquire("", t0 + seconds(2), Duration::zero()).retry_in, milliseconds(100));
}

TEST_F(RedisLimiterTest, RedisKilledFallsBackLocallyThenRecovers) {
  auto state = Connect(Options());
  RateLimiterOptions o;
  o.name = "api";
  o.rate = 10;          // shared: T = 100 ms
  o.burst = 1;
  o.fallback_rate = 1;  // local: T = 1 s
  auto l = CreateRedisRateLimiter(state, o).value();
  const TimePoint t0 = clock_.Now();
  ASSERT_TRUE(l->Acquire("", t0, Duration::zero()).admitted);
  server_.Stop();
  // Decided locally, at 1/s, and said so.
  RateDecision d = l->Acquire("", t0 + milliseconds(100), Duration::zero());
  EXPECT_TRUE(d.admitted);
  EXPECT_TRUE(d.fallback);
  d = l->Acquire("", t0 + milliseconds(200), Duration::zero());
  EXPECT_FALSE(d.admitted);
  EXPECT_TRUE(d.fallback);
  EXPECT_EQ(d.retry_in, milliseconds(900));
  EXPECT_EQ(l->fallbacks(), 2u);
  EXPECT_FALSE(state->Health().reachable);
  // While the state waits out its reconnect backoff (100 ms), no round trip.
  const uint64_t trips = state->Health().round_trips;
  d = l->Acquire("", t0 + milliseconds(1100), Duration::zero());
  EXPECT_TRUE(d.fallback);
  EXPECT_TRUE(d.admitted);
  EXPECT_EQ(state->Health().round_trips, trips);
  // Redis is back (empty); after the backoff the shared cell decides again.
  ASSERT_EQ(server_.Start(), "");
  clock_.Advance(milliseconds(100));
  d = l->Acquire("", clock_.Now(), Duration::zero());
  EXPECT_TRUE(d.admitted);
  EXPECT_FALSE(d.fallback);
  d = l->Acquire("", clock_.Now(), Duration::zero());
  EXPECT_FALSE(d.admitted);
  EXPECT_FALSE(d.fallback);
  EXPECT_EQ(d.retry_in, milliseconds(100));
  EXPECT_EQ(l->fallbacks(), 3u);
  EXPECT_TRUE(state->Health().reachable);
}

TEST_F(RedisLimiterTest, AFallbackPeriodIsInTheMetrics) {
  auto state = Connect(Options());
  MetricsRegistry registry;
  RateLimiterOptions o;
  o.name = "api";
  o.rate = 10;
  o.burst = 1;
  o.fallback_rate = 1;
  auto l = CreateRedisRateLimiter(state, o).value();
  registry.Track(l);
  RateLimiterOptions lo;
  lo.name = "local";
  lo.rate = 1;
  auto local = RateLimiter::Create(lo).value();
  registry.Track(local);  // a local limiter is not a shared part: not listed
  auto shared_states = [&] { return registry.SnapshotLimits(clock_.Now()).shared_states; };
  auto line = [&](const std::string& family) {
    const std::string text = registry.ToPrometheus(clock_.Now());
    const std::string head = family + "{part=\"rate_limiter\",name=\"api\"} ";
    const size_t at = text.find(head);
    return at == std::string::npos ? std::string("absent")
                                   : text.substr(at + head.size(), text.find('\n', at) - at -
                                                                       head.size());
  };
  const TimePoint t0 = clock_.Now();
  ASSERT_TRUE(l->Acquire("", t0, Duration::zero()).admitted);
  ASSERT_EQ(shared_states().size(), 1u);
  EXPECT_EQ(shared_states()[0].part, "rate_limiter");
  EXPECT_FALSE(l->falling_back());
  EXPECT_EQ(line("mulligan_shared_state_fallback"), "0");
  EXPECT_EQ(line("mulligan_shared_state_fallbacks_total"), "0");
  server_.Stop();
  // Two calls decided locally: one fallback period.
  EXPECT_TRUE(l->Acquire("", t0 + milliseconds(100), Duration::zero()).fallback);
  EXPECT_TRUE(l->Acquire("", t0 + milliseconds(200), Duration::zero()).fallback);
  EXPECT_TRUE(l->falling_back());
  EXPECT_EQ(l->fallback_periods(), 1u);
  EXPECT_TRUE(shared_states()[0].fallback);
  EXPECT_EQ(line("mulligan_shared_state_fallback"), "1");
  EXPECT_EQ(line("mulligan_shared_state_fallbacks_total"), "1");
  // metrics_json (0.6) carries the same values.
  const std::string json = registry.ToJson(clock_.Now());
  EXPECT_NE(json.find(R"("shared_states":[{"part":"rate_limiter","name":"api","fallback":true,)"
                      R"("fallback_periods":1}])"),
            std::string::npos)
      << json;
  // Back: the gauge drops to 0, the period count stays.
  ASSERT_EQ(server_.Start(), "");
  clock_.Advance(milliseconds(100));
  EXPECT_FALSE(l->Acquire("", clock_.Now(), Duration::zero()).fallback);
  EXPECT_FALSE(l->falling_back());
  EXPECT_EQ(line("mulligan_shared_state_fallback"), "0");
  EXPECT_EQ(line("mulligan_shared_state_fallbacks_total"), "1");
  // A second outage is a second period.
  server_.Stop();
  clock_.Advance(seconds(1));
  EXPECT_TRUE(l->Acquire("", clock_.Now(), Duration::zero()).fallback);
  EXPECT_EQ(line("mulligan_shared_state_fallbacks_total"), "2");
  EXPECT_EQ(l->fallbacks(), 3u);
  EXPECT_FALSE(local->falling_back());
}

TEST_F(RedisLimiterTest, BadOptionsNameTheField) {
  auto state = Connect(Options());
  RateLimiterOptions o;
  o.rate = 5;
  Result<std::shared_ptr<RateLimiter>> r = CreateRedisRateLimiter(state, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("name must not be empty"), std::string::npos);
  o.name = "api";
  o.fallback_rate = -1;
  r = CreateRedisRateLimiter(state, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("fallback_rate must be > 0"), std::string::npos)
      << r.status().message();
  // fallback_rate without a shared backend would be ignored: refused.
  o.fallback_rate = 2;
  r = RateLimiter::Create(o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "rate limiter fallback_rate needs a shared backend (state): it is the rate while the "
            "shared state is unreachable");
  o.fallback_rate.reset();
  // The shared-name rule (backend.h), the same text as the shared breaker's.
  o.name = "a{b}";
  r = CreateRedisRateLimiter(state, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), ValidateSharedName("a{b}").message());
  EXPECT_EQ(r.status().message(),
            "a shared object's name must be printable ASCII without '{' or '}' (a brace would end "
            "the Redis Cluster hash tag {prefix:kind:name}): byte 1 is 0x7b");
  o.name = "api";
  r = CreateRedisRateLimiter(nullptr, o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "rate limiter state must not be null");
}

}  // namespace
}  // namespace mulligan
