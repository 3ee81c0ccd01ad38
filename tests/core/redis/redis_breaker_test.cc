// tests/core/redis/redis_breaker_test.cc — RedisSharedBreaker against a real
// redis-server: two shared breakers of one name on two RedisState
// connections (two "processes" in one test) share trips and closes, never
// echo, keep serving locally while Redis is down and catch up after it
// restarts. Breaker time is the fixture's FakeClock (exact open periods);
// propagation is awaited in 1 ms steps of real time, bounded.

#include <gtest/gtest.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/state/redis.h"
#include "mulligan/state/redis_breaker.h"
#include "mulligan/telemetry/metrics.h"
#include "redis/redis_test_base.h"

namespace mulligan {
namespace redis_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

// Polls `done` every millisecond for at most `limit` of real time.
bool WaitFor(const std::function<bool()>& done, Duration limit = seconds(5)) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < until) {
    if (done()) return true;
    std::this_thread::sleep_for(milliseconds(1));
  }
  return done();
}

int64_t WallMs(const Clock& clock) {
  return std::chrono::duration_cast<milliseconds>(clock.WallNow().time_since_epoch()).count();
}

// One "process": its own connection, its own local breaker, its sharing.
struct Process {
  std::shared_ptr<RedisState> state;
  std::shared_ptr<CircuitBreaker> breaker;
  std::unique_ptr<RedisSharedBreaker> shared;
  std::mutex mu;
  std::vector<std::string> reasons;  // transition reasons seen by a listener
  std::vector<bool> sharing;         // what on_sharing was told

  // The sharing goes first: its threads call the listeners above, which
  // lock `mu`.
  ~Process() { shared.reset(); }

  std::vector<std::string> Reasons() {
    std::lock_guard<std::mutex> lock(mu);
    return reasons;
  }
};

class RedisBreakerTest : public RedisTest {
 protected:
  std::unique_ptr<Process> Start(const std::string& writer, MetricsRegistry* metrics = nullptr,
                                 bool await_shared = true) {
    auto p = std::make_unique<Process>();
    p->state = Connect(Options());
    CircuitBreakerOptions o;
    o.name = "payments";
    o.failure_threshold = 3;
    o.reset_timeout = seconds(10);
    o.report_metrics = false;
    p->breaker = std::shared_ptr<CircuitBreaker>(CircuitBreaker::Create(o).value());
    Process* raw = p.get();
    p->breaker->AddListener([raw](const BreakerTransition& t) {
      std::lock_guard<std::mutex> lock(raw->mu);
      raw->reasons.push_back(std::string(BreakerStateName(t.to)) + ":" + t.reason);
    });
    RedisSharedBreakerOptions so;
    so.poll_interval = milliseconds(50);
    so.writer_id = writer;
    so.metrics = metrics;
    auto shared = RedisSharedBreaker::Create(p->state, p->breaker, so,
                                             [raw](bool shared, const std::string&) {
                                               std::lock_guard<std::mutex> lock(raw->mu);
                                               raw->sharing.push_back(shared);
                                             });
    EXPECT_TRUE(shared.ok()) << shared.status().ToString();
    p->shared = std::move(shared).value();
    if (await_shared) {
      EXPECT_TRUE(WaitFor([&] { return raw->shared->Health().shared; }));
    }
    return p;
  }

  void Fail(Process& p, int times) {
    for (int i = 0; i < times; ++i) {
      Admission a = p.breaker->Acquire(clock_.Now());
      ASSERT_TRUE(a.admitted());
      p.breaker->Record(a.permit, CallResult::kFailure, milliseconds(1), clock_.Now());
    }
  }

  void Succeed(Process& p) {
    Admission a = p.breaker->Acquire(clock_.Now());
    ASSERT_TRUE(a.admitted());
    p.breaker->Record(a.permit, CallResult::kSuccess, milliseconds(1), clock_.Now());
  }

  // The key's fields, read on a separate connection.
  std::map<std::string, std::string> Key() {
    auto state = Connect(Options());
    Result<RedisValue> r = state->Command({"HGETALL", "{test:breaker:payments}"});
    std::map<std::string, std::string> out;
    if (!r.ok()) return out;
    for (size_t i = 0; i + 1 < r->elements.size(); i += 2) {
      out[r->elements[i].str] = r->elements[i + 1].str;
    }
    return out;
  }
};

TEST_F(RedisBreakerTest, ATripOpensBAndBsCloseClosesA) {
  auto a = Start("proc-a");
  auto b = Start("proc-b");
  EXPECT_EQ(a->shared->key(), "{test:breaker:payments}");
  const int64_t trip_wall_ms = WallMs(clock_);

  // A trips by its failure threshold; B refuses within a bounded wait, open
  // until exactly A's open_until (10 s from the trip on the shared clock).
  Fail(*a, 3);
  EXPECT_EQ(a->breaker->state(clock_.Now()), BreakerState::kOpen);
  ASSERT_TRUE(WaitFor([&] { return b->breaker->state(clock_.Now()) == BreakerState::kOpen; }));
  // A's writer thread counts its write when the script's reply arrives, and
  // B's subscriber counts what it applied after applying it: both can trail
  // the state change B's breaker shows, so they are awaited, not assumed.
  ASSERT_TRUE(WaitFor([&] { return a->shared->Health().published == 1 &&
                                   b->shared->Health().applied == 1; }));
  Admission refused = b->breaker->Acquire(clock_.Now());
  EXPECT_FALSE(refused.admitted());
  EXPECT_EQ(refused.retry_in, seconds(10));
  EXPECT_EQ(b->Reasons(), std::vector<std::string>({"open:shared_open"}));
  EXPECT_EQ(a->Reasons(), std::vector<std::string>({"open:failure_threshold"}));

  std::map<std::string, std::string> key = Key();
  EXPECT_EQ(key["state"], "open");
  EXPECT_EQ(key["open_until"], std::to_string(trip_wall_ms + 10000));
  EXPECT_EQ(key["epoch"], "1");
  EXPECT_EQ(key["writer"], "proc-a");

  // B's open period ends; its probe succeeds: half-open then closed are
  // written (epochs 2 and 3) and A, which never called, closes.
  clock_.Advance(seconds(10));
  Succeed(*b);
  EXPECT_EQ(b->breaker->state(clock_.Now()), BreakerState::kClosed);
  ASSERT_TRUE(WaitFor([&] {
    const RedisSharedBreakerHealth h = a->shared->Health();
    return a->breaker->state(clock_.Now()) == BreakerState::kClosed && h.epoch == 3 &&
           h.applied == 1 && b->shared->Health().published == 2;
  }));
  EXPECT_EQ(a->Reasons(),
            std::vector<std::string>({"open:failure_threshold", "closed:shared_close"}));
  EXPECT_EQ(b->Reasons(), std::vector<std::string>({"open:shared_open",
                                                    "half_open:reset_timeout_elapsed",
                                                    "closed:probe_succeeded"}));
  // Unlike Reset(), a shared close keeps the cumulative counters.
  EXPECT_EQ(a->breaker->counts(clock_.Now()).failures, 3u);
  key = Key();
  EXPECT_EQ(key["state"], "closed");
  EXPECT_EQ(key["open_until"], "0");
  EXPECT_EQ(key["epoch"], "3");
  EXPECT_EQ(key["writer"], "proc-b");

  // Nothing was echoed: each wrote only its own transitions.
  RedisSharedBreakerHealth ha = a->shared->Health();
  RedisSharedBreakerHealth hb = b->shared->Health();
  EXPECT_EQ(ha.published, 1u);
  EXPECT_EQ(hb.published, 2u);
  EXPECT_EQ(ha.applied, 1u);
  EXPECT_EQ(hb.applied, 1u);
  EXPECT_EQ(ha.publish_failures, 0u);
  EXPECT_TRUE(ha.shared);
  EXPECT_EQ(ha.writer_id, "proc-a");

  // Closing the sharing is not a fallback: on_sharing hears nothing of it
  // (the join in reset() waits for the subscriber thread's last word).
  a->shared.reset();
  std::lock_guard<std::mutex> lock(a->mu);
  EXPECT_EQ(a->sharing, std::vector<bool>({true}));
}

TEST_F(RedisBreakerTest, RedisDownBothServeLocallyThenSharingResumes) {
  auto a = Start("proc-a");
  auto b = Start("proc-b");

  server_.Stop();
  ASSERT_TRUE(WaitFor([&] { return !a->shared->Health().shared && !b->shared->Health().shared; }));
  EXPECT_NE(a->shared->Health().last_error.find("redis at redis://127.0.0.1:"), std::string::npos);

  // Alone: A trips by its own calls, B keeps admitting and counting.
  Fail(*a, 3);
  EXPECT_EQ(a->breaker->state(clock_.Now()), BreakerState::kOpen);
  ASSERT_TRUE(WaitFor([&] { return a->shared->Health().publish_failures == 1; }));
  Succeed(*b);
  EXPECT_EQ(b->breaker->state(clock_.Now()), BreakerState::kClosed);
  EXPECT_EQ(b->breaker->counts(clock_.Now()).successes, 1u);

  // Redis comes back (empty: no persistence). The states reconnect on their
  // backoff (fake clock: 2 s covers it), the subscribers resubscribe, and A
  // writes the trip it could not write: B opens until A's open_until,
  // 10 s from the trip, 8 s from now.
  ASSERT_EQ(server_.Start(), "");
  clock_.Advance(seconds(2));
  ASSERT_TRUE(WaitFor([&] { return a->shared->Health().shared && b->shared->Health().shared; }));
  ASSERT_TRUE(WaitFor([&] { return b->breaker->state(clock_.Now()) == BreakerState::kOpen; }));
  Admission refused = b->breaker->Acquire(clock_.Now());
  EXPECT_FALSE(refused.admitted());
  EXPECT_EQ(refused.retry_in, seconds(8));
  EXPECT_EQ(Key()["epoch"], "1");  // the restarted server's first write
  EXPECT_EQ(Key()["writer"], "proc-a");
  EXPECT_GE(a->shared->Health().resubscriptions, 1u);

  // Sharing works both ways again: A's probe closes B.
  clock_.Advance(seconds(8));
  Succeed(*a);
  // The listener and the count run after the state changes: awaited.
  ASSERT_TRUE(WaitFor([&] { return b->breaker->state(clock_.Now()) == BreakerState::kClosed &&
                                   b->shared->Health().applied == 2; }));
  EXPECT_EQ(b->Reasons(), std::vector<std::string>({"open:shared_open", "closed:shared_close"}));
  // on_sharing is told after Health() shows the change: awaited too.
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(a->mu);
    return a->sharing.size() == 3;
  }));
  {
    std::lock_guard<std::mutex> lock(a->mu);
    EXPECT_EQ(a->sharing, std::vector<bool>({true, false, true}));
  }
}

// The value of `family`{part="breaker",name="payments"} in `registry`'s
// Prometheus text, or "absent".
std::string BreakerLine(const MetricsRegistry& registry, const std::string& family) {
  const std::string text = registry.ToPrometheus();
  const std::string head = family + "{part=\"breaker\",name=\"payments\"} ";
  const size_t at = text.find(head);
  if (at == std::string::npos) return "absent";
  return text.substr(at + head.size(), text.find('\n', at) - at - head.size());
}

TEST_F(RedisBreakerTest, FallbackIsInTheMetricsAndOnSharing) {
  MetricsRegistry registry;
  auto a = Start("proc-a", &registry);
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallback"), "0");
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallbacks_total"), "0");
  server_.Stop();
  // on_sharing is told after the metrics: both awaited through it.
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(a->mu);
    return a->sharing.size() == 2;
  }));
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallback"), "1");
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallbacks_total"), "1");
  LimitsSnapshot snap = registry.SnapshotLimits(clock_.Now());
  ASSERT_EQ(snap.shared_states.size(), 1u);
  EXPECT_EQ(snap.shared_states[0].part, "breaker");
  EXPECT_EQ(snap.shared_states[0].name, "payments");
  EXPECT_TRUE(snap.shared_states[0].fallback);
  EXPECT_EQ(snap.shared_states[0].fallback_periods, 1u);
  ASSERT_EQ(server_.Start(), "");
  clock_.Advance(seconds(2));
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(a->mu);
    return a->sharing.size() == 3;
  }));
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallback"), "0");
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallbacks_total"), "1");
  // Tracked weakly: gone with the shared breaker.
  a.reset();
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallback"), "absent");
  EXPECT_TRUE(registry.SnapshotLimits(clock_.Now()).shared_states.empty());
}

TEST_F(RedisBreakerTest, ARedisUnreachableFromTheStartIsReportedOnce) {
  MetricsRegistry registry;
  server_.Stop();
  auto a = Start("proc-a", &registry, /*await_shared=*/false);
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(a->mu);
    return a->sharing.size() == 1;
  }));
  {
    std::lock_guard<std::mutex> lock(a->mu);
    EXPECT_EQ(a->sharing, std::vector<bool>({false}));
  }
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallback"), "1");
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallbacks_total"), "1");
  ASSERT_EQ(server_.Start(), "");
  clock_.Advance(seconds(2));
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(a->mu);
    return a->sharing.size() == 2;
  }));
  {
    std::lock_guard<std::mutex> lock(a->mu);
    EXPECT_EQ(a->sharing, std::vector<bool>({false, true}));
  }
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallback"), "0");
  EXPECT_EQ(BreakerLine(registry, "mulligan_shared_state_fallbacks_total"), "1");
}

TEST_F(RedisBreakerTest, OnlyANewerEpochIsApplied) {
  auto a = Start("proc-a");
  auto b = Start("proc-b");
  Fail(*a, 3);  // epoch 1
  ASSERT_TRUE(WaitFor([&] { return b->shared->Health().epoch == 1; }));
  // A third writer's messages, straight on the channel: epoch 1 again (not
  // newer: dropped), then epoch 2, an open period of 20 s (applied). One
  // channel keeps its order, so once epoch 2 is in, epoch 1 was judged.
  auto other = Connect(Options());
  const std::string until = std::to_string(WallMs(clock_) + 20000);
  ASSERT_TRUE(other->Command({"PUBLISH", b->shared->key(), "closed 0 1 proc-x"}).ok());
  ASSERT_TRUE(other->Command({"PUBLISH", b->shared->key(), "open " + until + " 2 proc-x"}).ok());
  // The epoch is taken before the breaker applies it, and the count after:
  // the count is awaited. Epoch 1's duplicate never counts (checked below).
  ASSERT_TRUE(WaitFor([&] { return b->shared->Health().epoch == 2 &&
                                   b->shared->Health().applied == 2; }));
  EXPECT_EQ(b->Reasons(), std::vector<std::string>({"open:shared_open", "open:shared_open"}));
  EXPECT_EQ(b->breaker->TimeUntilProbe(clock_.Now()), seconds(20));
  EXPECT_EQ(b->shared->Health().applied, 2u);
  // A's own echo (epoch 1) changed nothing there; epoch 2 reopened it.
  ASSERT_TRUE(WaitFor([&] { return a->shared->Health().epoch == 2 &&
                                   a->shared->Health().applied == 1; }));
  EXPECT_EQ(a->Reasons(),
            std::vector<std::string>({"open:failure_threshold", "open:shared_open"}));
}

TEST_F(RedisBreakerTest, ConfigErrorsNameTheField) {
  auto state = Connect(Options());
  CircuitBreakerOptions o;
  o.name = "x";
  o.report_metrics = false;
  std::shared_ptr<CircuitBreaker> breaker(CircuitBreaker::Create(o).value());
  RedisSharedBreakerOptions so;
  so.poll_interval = milliseconds(5);
  auto r = RedisSharedBreaker::Create(state, breaker, so);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "poll_interval must be in [10 ms, 1 h], got 5 ms");
  so = {};
  so.writer_id = "has space";
  r = RedisSharedBreaker::Create(state, breaker, so);
  EXPECT_EQ(r.status().message(), "writer_id must be printable ASCII without space");
  so = {};
  so.queue_limit = 0;
  r = RedisSharedBreaker::Create(state, breaker, so);
  EXPECT_EQ(r.status().message(), "queue_limit must be in [1, 65536], got 0");
  r = RedisSharedBreaker::Create(nullptr, breaker);
  EXPECT_EQ(r.status().message(), "state must not be null");
  o.name = "";
  std::shared_ptr<CircuitBreaker> unnamed(CircuitBreaker::Create(o).value());
  r = RedisSharedBreaker::Create(state, unnamed);
  EXPECT_TRUE(IsInvalidArgument(r.status()));
  EXPECT_EQ(r.status().message(), ValidateSharedName("").message());
  // The shared-name rule (backend.h), the same text as the shared limiter's.
  o.name = "a{b}";
  std::shared_ptr<CircuitBreaker> braced(CircuitBreaker::Create(o).value());
  r = RedisSharedBreaker::Create(state, braced);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(),
            "a shared object's name must be printable ASCII without '{' or '}' (a brace would end "
            "the Redis Cluster hash tag {prefix:kind:name}): byte 1 is 0x7b");
  o.name = std::string(201, 'n');
  std::shared_ptr<CircuitBreaker> longer(CircuitBreaker::Create(o).value());
  r = RedisSharedBreaker::Create(state, longer);
  EXPECT_EQ(r.status().message(), "a shared object's name must be at most 200 bytes, got 201");
}

TEST(CircuitBreakerApplySharedTest, OpensAsATripWithoutGrowthAndClosesKeepingCounts) {
  FakeClock clock;
  CircuitBreakerOptions o;
  o.name = "s";
  o.report_metrics = false;
  o.reset_timeout = seconds(10);
  auto b = CircuitBreaker::Create(o).value();
  const TimePoint t0 = clock.Now();
  EXPECT_TRUE(IsInvalidArgument(b->ApplyShared(BreakerState::kHalfOpen, t0, t0).status()));
  EXPECT_TRUE(IsInvalidArgument(b->ApplyShared(BreakerState::kOpen, t0, t0).status()));
  EXPECT_FALSE(b->ApplyShared(BreakerState::kClosed, TimePoint{}, t0).value());  // closed already
  ASSERT_TRUE(b->ApplyShared(BreakerState::kOpen, t0 + seconds(4), t0).value());
  EXPECT_EQ(b->TimeUntilProbe(t0), seconds(4));
  // A normal open period: it half-opens by itself at its end.
  Admission probe = b->Acquire(t0 + seconds(4));
  EXPECT_TRUE(probe.admitted());
  EXPECT_TRUE(probe.permit.probe);
  b->Record(probe.permit, CallResult::kFailure, milliseconds(1), t0 + seconds(4));
  // Its own reopen uses reset_timeout (no growth counted for the shared open).
  EXPECT_EQ(b->TimeUntilProbe(t0 + seconds(4)), seconds(10));
  ASSERT_TRUE(b->ApplyShared(BreakerState::kClosed, TimePoint{}, t0 + seconds(5)).value());
  EXPECT_EQ(b->state(t0 + seconds(5)), BreakerState::kClosed);
  EXPECT_EQ(b->counts(t0 + seconds(5)).failures, 1u);
  // Manual states are left alone.
  b->Disable(t0 + seconds(6));
  EXPECT_FALSE(b->ApplyShared(BreakerState::kOpen, t0 + seconds(60), t0 + seconds(6)).value());
  EXPECT_EQ(b->state(t0 + seconds(6)), BreakerState::kDisabled);
}

}  // namespace
}  // namespace redis_test
}  // namespace mulligan
