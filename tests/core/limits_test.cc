// Bulkhead and rate limiter (core/include/mulligan/limits/), alone and as
// strategy 2 of the pipeline through RetryCall. Fake clock; expected values
// worked by hand (comments) or generated independently
// (tests/core/gen_limits_vectors.py -> tests/vectors/rate_limiter_gcra.json,
// which the C and Python suites run too).
#include <gtest/gtest.h>

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#endif

#include <atomic>
#include <boost/json.hpp>
#include <cmath>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/retry/call.h"

namespace mulligan {
namespace {

namespace json = boost::json;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::shared_ptr<Bulkhead> MakeBulkhead(int n, int queue = 0,
                                       std::optional<Duration> max_wait = std::nullopt) {
  BulkheadOptions o;
  o.name = "db";
  o.max_concurrent = n;
  o.max_queue = queue;
  o.max_wait = max_wait;
  auto b = Bulkhead::Create(o);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return std::move(b).value();
}

TEST(BulkheadTest, BadOptionsNameTheField) {
  BulkheadOptions o;
  EXPECT_NE(Bulkhead::Create(o).status().message().find("max_concurrent"), std::string::npos);
  o.max_concurrent = 1;
  o.max_queue = -1;
  EXPECT_NE(Bulkhead::Create(o).status().message().find("max_queue"), std::string::npos);
  o.max_queue = 0;
  o.max_wait = Duration(-1);
  EXPECT_NE(Bulkhead::Create(o).status().message().find("max_wait"), std::string::npos);
}

TEST(BulkheadTest, AStrayReleaseChangesNothing) {
  auto b = MakeBulkhead(2, 0);
  EXPECT_FALSE(b->Release());  // nothing held: the count stays at 0
  EXPECT_EQ(b->in_flight(), 0);
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_FALSE(b->TryAcquire());  // still 2 at most, not 3
  EXPECT_TRUE(b->Release());
  EXPECT_TRUE(b->Release());
  EXPECT_FALSE(b->Release());
  EXPECT_EQ(b->in_flight(), 0);
}

TEST(BulkheadTest, AtMostNThenFifoHandOff) {
  auto b = MakeBulkhead(2, 2);
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_FALSE(b->TryAcquire());
  auto first = b->Enqueue();
  auto second = b->Enqueue();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(b->Enqueue(), nullptr);  // queue full
  EXPECT_EQ(b->rejected_full(), 1u);
  EXPECT_EQ(b->queued(), 2);
  // A newcomer cannot overtake the queue, even when a slot is being freed.
  b->Release();
  EXPECT_TRUE(first->granted());
  EXPECT_FALSE(second->granted());
  EXPECT_FALSE(b->TryAcquire());
  EXPECT_EQ(b->in_flight(), 2);
  b->Release();
  EXPECT_TRUE(second->granted());
  b->Release();
  b->Release();
  EXPECT_EQ(b->in_flight(), 0);
  EXPECT_EQ(b->queued(), 0);
  EXPECT_EQ(b->waits(), 2u);
}

TEST(BulkheadTest, CancelledWaiterFreesItsPlaceAndAGrantedOneHandsOn) {
  auto b = MakeBulkhead(1, 2);
  ASSERT_TRUE(b->TryAcquire());
  auto a = b->Enqueue();
  auto c = b->Enqueue();
  a->Cancel();  // still waiting: its place frees
  EXPECT_EQ(b->queued(), 1);
  auto d = b->Enqueue();  // room again
  ASSERT_TRUE(d);
  b->Release();
  EXPECT_TRUE(c->granted());
  // c gives up at the moment the slot reached it: the slot goes to d.
  c->Cancel();
  EXPECT_EQ(c->state(), BulkheadTicket::State::kCancelled);
  EXPECT_TRUE(d->granted());
  EXPECT_EQ(b->in_flight(), 1);
  b->Release();
  EXPECT_EQ(b->in_flight(), 0);
}

TEST(BulkheadTest, GrantCallbackRunsOnceOnTheReleasingThread) {
  auto b = MakeBulkhead(1, 1);
  ASSERT_TRUE(b->TryAcquire());
  auto t = b->Enqueue();
  int calls = 0;
  t->SetOnGrant([&] { ++calls; });
  EXPECT_EQ(calls, 0);
  b->Release();
  EXPECT_EQ(calls, 1);
  int late = 0;
  t->SetOnGrant([&] { ++late; });  // already granted: at once
  EXPECT_EQ(late, 1);
  b->Release();
}

// Exactly N in flight under 8 threads: the most observed at once is N, and N
// is reached (every thread holds its slot until N are in).
TEST(BulkheadTest, ExactlyNInFlightUnderEightThreads) {
  constexpr int kN = 3;
  auto b = MakeBulkhead(kN, 8);
  std::atomic<int> inside{0}, max_seen{0}, done{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      for (int round = 0; round < 200; ++round) {
        if (!b->TryAcquire()) {
          auto ticket = b->Enqueue();
          while (!ticket) {
            std::this_thread::yield();
            if (b->TryAcquire()) break;
            ticket = b->Enqueue();
          }
          if (ticket) {
            ASSERT_TRUE(ticket->WaitFor(seconds(60)));
          }
        }
        const int now = inside.fetch_add(1) + 1;
        int seen = max_seen.load();
        while (now > seen && !max_seen.compare_exchange_weak(seen, now)) {
        }
        if (round == 0) {
          // Hold the first slot until N are in (proves N is reached).
          while (max_seen.load() < kN) std::this_thread::yield();
        }
        inside.fetch_sub(1);
        b->Release();
      }
      done.fetch_add(1);
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(max_seen.load(), kN);
  EXPECT_EQ(b->in_flight(), 0);
  EXPECT_EQ(b->queued(), 0);
}

// A bound of 1 under 8 threads, half spinning on TryAcquire (refused at once:
// no queue for them) and half queueing when refused: the bound is never
// passed, no queued caller is stranded (each is granted within the minute),
// and the count returns to 0.
TEST(BulkheadTest, BoundOfOneHoldsWithSpinningAndQueuedCallers) {
  auto b = MakeBulkhead(1, 8);
  std::atomic<int> inside{0}, max_seen{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 500; ++round) {
        if (i % 2 == 0) {
          while (!b->TryAcquire()) std::this_thread::yield();
        } else if (!b->TryAcquire()) {
          std::shared_ptr<BulkheadTicket> ticket = b->Enqueue();
          ASSERT_NE(ticket, nullptr);  // 4 queue at most, the queue holds 8
          ASSERT_TRUE(ticket->WaitFor(seconds(60)));
        }
        const int now = inside.fetch_add(1) + 1;
        int seen = max_seen.load();
        while (now > seen && !max_seen.compare_exchange_weak(seen, now)) {
        }
        inside.fetch_sub(1);
        ASSERT_TRUE(b->Release());
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(max_seen.load(), 1);
  EXPECT_EQ(b->in_flight(), 0);
  EXPECT_EQ(b->queued(), 0);
  // Nothing held: a release changes nothing, and the next acquire is the only one.
  EXPECT_FALSE(b->Release());
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_FALSE(b->TryAcquire());
  EXPECT_EQ(b->in_flight(), 1);
  EXPECT_TRUE(b->Release());
}

// The bulkhead's spare permits sit on per-CPU shards (0.6). These tests pin
// the main thread to one CPU and OnAnotherThread's thread to another, so
// that the two use different shards and the cross-shard paths (stealing a
// spare, releasing a slot taken on another shard) run. With one CPU allowed
// they share a shard; the expectations hold either way.
// The first two CPUs this process may run on, read once (before any pin).
const std::vector<int>& AllowedCpus() {
  static const std::vector<int> allowed = [] {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE && cpus.size() < 2; ++cpu) {
      if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
    }
  }
#endif
  return cpus;
  }();
  return allowed;
}

// Pins the calling thread to `which` (0 or 1) of AllowedCpus() for its
// lifetime, then restores the thread's affinity.
class PinnedToCpu {
 public:
  explicit PinnedToCpu(size_t which) {
#if defined(__linux__)
    const std::vector<int>& cpus = AllowedCpus();
    if (cpus.size() > which && pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_) == 0) {
      cpu_set_t one;
      CPU_ZERO(&one);
      CPU_SET(cpus[which], &one);
      pinned_ = pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0;
    }
#else
    (void)which;
#endif
  }
  ~PinnedToCpu() {
#if defined(__linux__)
    if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
#endif
  }
  PinnedToCpu(const PinnedToCpu&) = delete;
  PinnedToCpu& operator=(const PinnedToCpu&) = delete;

 private:
#if defined(__linux__)
  cpu_set_t saved_{};
#endif
  bool pinned_ = false;
};

// Runs `body` on a new thread pinned to the second allowed CPU and waits.
template <typename Body>
void OnAnotherThread(Body body) {
  std::thread t([&] {
    PinnedToCpu pin(1);
    body();
  });
  t.join();
}

// Spares cached on another thread's shard are used before a refusal: a
// caller alone refuses only when all max_concurrent slots are in use. (0.6)
TEST(BulkheadTest, SparesOfAnotherThreadAreUsedBeforeARefusal) {
  PinnedToCpu pin(0);
  auto b = MakeBulkhead(5, 0);
  OnAnotherThread([&] {
    for (int i = 0; i < 5; ++i) EXPECT_TRUE(b->TryAcquire());
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(b->Release());  // 3 spares, 2 held
  });
  EXPECT_EQ(b->in_flight(), 2);
  EXPECT_TRUE(b->TryAcquire());  // the other shard's spares
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_EQ(b->in_flight(), 5);
  EXPECT_FALSE(b->TryAcquire());  // exactly 5 in use: refused
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(b->Release());
  EXPECT_FALSE(b->Release());  // nothing held
  EXPECT_EQ(b->in_flight(), 0);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(b->TryAcquire());
  EXPECT_FALSE(b->TryAcquire());
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(b->Release());
}

// A stray release cannot turn a spare into a slot: with a spare cached on
// another thread's shard and nothing held, it returns false, and the bound
// stays 1. (0.6)
TEST(BulkheadTest, AStrayReleaseCannotMakeASpareOutOfNothing) {
  PinnedToCpu pin(0);
  auto b = MakeBulkhead(1, 0);
  OnAnotherThread([&] {
    EXPECT_TRUE(b->TryAcquire());
    EXPECT_TRUE(b->Release());  // the permit stays there as a spare
    EXPECT_FALSE(b->Release());
  });
  EXPECT_EQ(b->in_flight(), 0);
  EXPECT_FALSE(b->Release());
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_FALSE(b->TryAcquire());  // 1 at most, not 2
  EXPECT_FALSE(b->TryAcquire());
  OnAnotherThread([&] { EXPECT_FALSE(b->TryAcquire()); });
  EXPECT_EQ(b->in_flight(), 1);
  EXPECT_TRUE(b->Release());
  EXPECT_FALSE(b->Release());
  EXPECT_EQ(b->in_flight(), 0);
}

// A slot taken on one thread may be released on another (a pipeline or an
// event loop moving between threads): each release frees one slot, and no
// more than were taken. (0.6)
TEST(BulkheadTest, ASlotTakenOnOneThreadIsReleasedOnAnother) {
  PinnedToCpu pin(0);
  auto b = MakeBulkhead(2, 1);
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_TRUE(b->TryAcquire());
  OnAnotherThread([&] {
    EXPECT_TRUE(b->Release());  // slots held through the other shard
    EXPECT_TRUE(b->Release());
    EXPECT_FALSE(b->Release());
    EXPECT_FALSE(b->TryAcquire() && b->TryAcquire() && b->TryAcquire());  // 2 at most
    EXPECT_TRUE(b->Release());
    EXPECT_TRUE(b->Release());
    EXPECT_FALSE(b->Release());
  });
  EXPECT_EQ(b->in_flight(), 0);
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_FALSE(b->TryAcquire());
  // A waiter still gets the slot that another thread releases, FIFO.
  auto ticket = b->Enqueue();
  ASSERT_TRUE(ticket);
  EXPECT_FALSE(ticket->granted());
  OnAnotherThread([&] { EXPECT_TRUE(b->Release()); });
  EXPECT_TRUE(ticket->granted());
  EXPECT_EQ(b->in_flight(), 2);
  EXPECT_TRUE(b->Release());
  EXPECT_TRUE(b->Release());
  EXPECT_FALSE(b->Release());
  EXPECT_EQ(b->in_flight(), 0);
  EXPECT_EQ(b->queued(), 0);
}

// The spares are revoked (here by a stray release, which can only be told
// apart on the global count) and, after 64 releases on the global count with
// at most half the slots in use, the shards reopen; the bound, refusals and
// stray releases are exact in every phase, across 10 such cycles. (0.6)
TEST(BulkheadTest, ExactAcrossRevocationsAndReopenings) {
  PinnedToCpu pin(0);
  auto b = MakeBulkhead(3, 0);
  for (int cycle = 0; cycle < 10; ++cycle) {
    EXPECT_FALSE(b->Release()) << cycle;  // revokes; nothing held
    for (int round = 0; round < 70; ++round) {
      EXPECT_TRUE(b->TryAcquire());
      EXPECT_TRUE(b->TryAcquire());
      EXPECT_TRUE(b->TryAcquire());
      EXPECT_FALSE(b->TryAcquire());
      EXPECT_EQ(b->in_flight(), 3);
      OnAnotherThread([&] { EXPECT_TRUE(b->Release()); });
      EXPECT_TRUE(b->Release());
      EXPECT_TRUE(b->Release());
      EXPECT_FALSE(b->Release());
      EXPECT_EQ(b->in_flight(), 0);
    }
  }
}

// A bulkhead too large for the shards' 20-bit counts (2^20 slots or more)
// runs on the global count alone, with the same semantics. (0.6)
TEST(BulkheadTest, AHugeBulkheadKeepsTheGlobalCount) {
  auto b = MakeBulkhead(1 << 20, 0);
  EXPECT_FALSE(b->Release());
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_TRUE(b->TryAcquire());
  EXPECT_EQ(b->in_flight(), 2);
  EXPECT_TRUE(b->Release());
  EXPECT_TRUE(b->Release());
  EXPECT_FALSE(b->Release());
  EXPECT_EQ(b->in_flight(), 0);
}

// 8 threads hammer a bound of 4, and a slot is released by whichever thread
// picks its token, often not the one that took it: the most inside at once,
// counted by an independent atomic, is 4, every release of a held slot
// succeeds, and afterwards exactly 4 slots can be taken. (0.6)
TEST(BulkheadTest, BoundHoldsWhenSlotsAreReleasedOnOtherThreads) {
  constexpr int kN = 4;
  auto b = MakeBulkhead(kN, 0);
  std::atomic<int> inside{0}, max_seen{0}, failed_releases{0};
  std::mutex tokens_mu;
  int tokens = 0;  // slots taken and not yet released, guarded by tokens_mu
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&, i] {
      for (int round = 0; round < 20000; ++round) {
        if (b->TryAcquire()) {
          const int now = inside.fetch_add(1) + 1;
          int seen = max_seen.load();
          while (now > seen && !max_seen.compare_exchange_weak(seen, now)) {
          }
          std::lock_guard<std::mutex> lock(tokens_mu);
          ++tokens;
        }
        // Release some slot, most likely one another thread took.
        if ((round + i) % 2 == 0) {
          bool have = false;
          {
            std::lock_guard<std::mutex> lock(tokens_mu);
            if (tokens > 0) {
              --tokens;
              have = true;
            }
          }
          if (have) {
            inside.fetch_sub(1);
            if (!b->Release()) failed_releases.fetch_add(1);
          }
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (; tokens > 0; --tokens) {
    inside.fetch_sub(1);
    if (!b->Release()) failed_releases.fetch_add(1);
  }
  EXPECT_LE(max_seen.load(), kN);
  EXPECT_EQ(failed_releases.load(), 0);
  EXPECT_EQ(b->in_flight(), 0);
  EXPECT_FALSE(b->Release());
  for (int i = 0; i < kN; ++i) EXPECT_TRUE(b->TryAcquire());
  EXPECT_FALSE(b->TryAcquire());
  for (int i = 0; i < kN; ++i) EXPECT_TRUE(b->Release());
}

RateLimiterOptions LimiterOptions(double rate, double burst) {
  RateLimiterOptions o;
  o.name = "api";
  o.rate = rate;
  o.burst = burst;
  return o;
}

TEST(RateLimiterTest, BadOptionsNameTheField) {
  EXPECT_NE(RateLimiter::Create(LimiterOptions(-1, 1)).status().message().find("rate"),
            std::string::npos);
  EXPECT_NE(RateLimiter::Create(LimiterOptions(0, 1)).status().message().find("rate"),
            std::string::npos);
  EXPECT_NE(RateLimiter::Create(LimiterOptions(1, 0.5)).status().message().find("burst"),
            std::string::npos);
  RateLimiterOptions o = LimiterOptions(1, 1);
  o.max_wait = Duration(-1);
  EXPECT_NE(RateLimiter::Create(o).status().message().find("max_wait"), std::string::npos);
}

json::value Load(const std::string& name) {
  std::ifstream in(std::string(MULLIGAN_VECTORS_DIR) + "/" + name);
  EXPECT_TRUE(in.good()) << name;
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

Duration Ns(double seconds_value) { return Duration(std::llround(seconds_value * 1e9)); }

TEST(RateLimiterTest, SharedGcraVectors) {
  const json::value doc = Load("rate_limiter_gcra.json");
  const TimePoint t0 = TimePoint() + seconds(1000);
  for (const json::value& item : doc.at("cases").as_array()) {
    const json::object& c = item.as_object();
    const std::string name = json::value_to<std::string>(c.at("name"));
    auto limiter = RateLimiter::Create(
        LimiterOptions(json::value_to<double>(c.at("rate")), json::value_to<double>(c.at("burst"))));
    ASSERT_TRUE(limiter.ok()) << name;
    RateLimiter& l = **limiter;
    EXPECT_EQ(l.interval().count(), c.at("interval_ns").to_number<int64_t>()) << name;
    EXPECT_EQ(l.tolerance().count(), c.at("tolerance_ns").to_number<int64_t>()) << name;
    int i = 0;
    for (const json::value& sv : c.at("steps").as_array()) {
      const json::object& s = sv.as_object();
      const TimePoint at = t0 + Ns(s.at("at").to_number<double>());
      const std::string key = json::value_to<std::string>(s.at("key"));
      if (s.contains("penalize_until")) {
        l.Penalize(key, t0 + Ns(s.at("penalize_until").to_number<double>()));
        continue;
      }
      const Duration bound =
          s.at("max_wait").is_null() ? Duration::max() : Ns(s.at("max_wait").to_number<double>());
      const RateDecision d = l.Acquire(key, at, bound);
      const json::object& e = s.at("expect").as_object();
      EXPECT_EQ(d.admitted, e.at("admitted").as_bool()) << name << " step " << i;
      EXPECT_EQ(d.wait.count(), e.at("wait_ns").to_number<int64_t>()) << name << " step " << i;
      EXPECT_EQ(d.retry_in.count(), e.at("retry_in_ns").to_number<int64_t>())
          << name << " step " << i;
      ++i;
    }
  }
}

// Through RetryCall on a fake clock: a rate 2/s, burst 1 limiter spaces
// calls 0.5 s apart, exactly; RetryCall sleeps the wait through the clock.
TEST(LimitsPipelineTest, RetryCallWaitsTheLimitersExactDelay) {
  FakeClock clock;
  auto limiter = std::move(RateLimiter::Create(LimiterOptions(2, 1))).value();
  auto policy = std::move(RetryPolicy::Create(RetryOptions{})).value();
  RetryCallOptions options;
  options.clock = &clock;
  options.rate_limiter = limiter.get();
  std::vector<Duration> starts;
  const TimePoint t0 = clock.Now();
  for (int i = 0; i < 3; ++i) {
    Status s = RetryCall(policy, [&] {
      starts.push_back(clock.Now() - t0);
      return OkStatus();
    }, options);
    EXPECT_TRUE(s.ok());
  }
  ASSERT_EQ(starts.size(), 3u);
  EXPECT_EQ(starts[0], Duration::zero());
  EXPECT_EQ(starts[1], milliseconds(500));
  EXPECT_EQ(starts[2], milliseconds(1000));
}

TEST(LimitsPipelineTest, LimiterRefusesPastMaxWaitAndIsNotRetried) {
  FakeClock clock;
  RateLimiterOptions lo = LimiterOptions(1, 1);
  lo.max_wait = milliseconds(200);
  auto limiter = std::move(RateLimiter::Create(lo)).value();
  auto policy = std::move(RetryPolicy::Create(RetryOptions{})).value();
  RetryCallInfo info;
  RetryCallOptions options;
  options.clock = &clock;
  options.rate_limiter = limiter.get();
  options.info = &info;
  int runs = 0;
  EXPECT_TRUE(RetryCall(policy, [&] { ++runs; return OkStatus(); }, options).ok());
  Status s = RetryCall(policy, [&] { ++runs; return OkStatus(); }, options);
  EXPECT_EQ(s.code(), StatusCode::kRateLimited);
  EXPECT_NE(s.message().find("next slot in 1.000 s"), std::string::npos) << s.message();
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(info.stop_reason, StopReason::kRateLimited);
  EXPECT_EQ(info.retry_in, seconds(1));
  EXPECT_FALSE(info.circuit_open);
}

// The deadline bounds the limiter's wait: a wait that would start the
// attempt at or after the deadline is refused.
TEST(LimitsPipelineTest, DeadlineBoundsTheLimitersWait) {
  FakeClock clock;
  auto limiter = std::move(RateLimiter::Create(LimiterOptions(1, 1))).value();
  RetryOptions ro;
  ro.deadline = seconds(1);
  auto policy = std::move(RetryPolicy::Create(ro)).value();
  RetryCallOptions options;
  options.clock = &clock;
  options.rate_limiter = limiter.get();
  EXPECT_TRUE(RetryCall(policy, [] { return OkStatus(); }, options).ok());
  // Next slot in exactly 1 s = the deadline: refused.
  EXPECT_EQ(RetryCall(policy, [] { return OkStatus(); }, options).code(),
            StatusCode::kRateLimited);
  clock.Advance(milliseconds(1));  // next slot in 0.999 s: waits it
  const TimePoint before = clock.Now();
  EXPECT_TRUE(RetryCall(policy, [] { return OkStatus(); }, options).ok());
  EXPECT_EQ(clock.Now() - before, milliseconds(999));
}

// The slot is held for the whole call, retries included, by default.
TEST(LimitsPipelineTest, BulkheadSlotIsHeldAcrossRetries) {
  FakeClock clock;
  auto bulkhead = MakeBulkhead(1);
  RetryOptions ro;
  ro.max_attempts = 3;
  ro.backoff.jitter = JitterKind::kNone;
  auto policy = std::move(RetryPolicy::Create(ro)).value();
  RetryCallOptions options;
  options.clock = &clock;
  options.bulkhead = bulkhead.get();
  int attempts = 0;
  Status s = RetryCall(policy, [&] {
    ++attempts;
    EXPECT_EQ(bulkhead->in_flight(), 1);
    EXPECT_FALSE(bulkhead->TryAcquire());  // held between attempts too
    return UnavailableError("down");
  }, options);
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(attempts, 3);
  EXPECT_EQ(bulkhead->in_flight(), 0);
}

TEST(LimitsPipelineTest, FullBulkheadRefusesOrTimesOutInTheQueue) {
  FakeClock clock;
  auto bulkhead = MakeBulkhead(1, 1, milliseconds(250));
  auto policy = std::move(RetryPolicy::Create(RetryOptions{})).value();
  RetryCallInfo info;
  RetryCallOptions options;
  options.clock = &clock;
  options.bulkhead = bulkhead.get();
  options.info = &info;
  ASSERT_TRUE(bulkhead->TryAcquire());  // someone else holds the only slot
  const TimePoint before = clock.Now();
  int runs = 0;
  Status s = RetryCall(policy, [&] { ++runs; return OkStatus(); }, options);
  EXPECT_EQ(s.code(), StatusCode::kBulkheadFull);
  EXPECT_EQ(runs, 0);
  EXPECT_EQ(info.stop_reason, StopReason::kBulkheadFull);
  EXPECT_EQ(clock.Now() - before, milliseconds(250));  // waited max_wait, in fake time
  EXPECT_EQ(bulkhead->queued(), 0);                     // its place freed
  EXPECT_EQ(bulkhead->rejected_timeout(), 1u);
  bulkhead->Release();
  EXPECT_TRUE(RetryCall(policy, [&] { ++runs; return OkStatus(); }, options).ok());
  EXPECT_EQ(bulkhead->in_flight(), 0);
}

TEST(LimitsPipelineTest, QueuedCallRunsWhenTheSlotIsHandedOver) {
  FakeClock clock;
  auto bulkhead = MakeBulkhead(1, 1);
  PipelineOptions po;
  po.bulkhead = bulkhead;
  po.report_metrics = false;
  auto pipeline = std::move(Pipeline::Create(po)).value();
  Call holder = pipeline->Begin(clock.Now());
  ASSERT_TRUE(holder.Admit(clock.Now()).go());
  Call waiter = pipeline->Begin(clock.Now());
  AttemptAdmission a = waiter.Admit(clock.Now());
  ASSERT_TRUE(a.wait());
  ASSERT_TRUE(a.ticket);
  // No max_wait and no deadline: only a grant ends the wait.
  EXPECT_GE(a.delay, std::chrono::hours(24 * 365));
  EXPECT_FALSE(a.ticket->granted());
  (void)holder.Record(Outcome::Success(), clock.Now());  // hands the slot over
  EXPECT_TRUE(a.ticket->granted());
  EXPECT_TRUE(waiter.Admit(clock.Now()).go());
  EXPECT_EQ(bulkhead->in_flight(), 1);
  // An abandoned (cancelled) call frees the slot.
  waiter.Abandon(clock.Now(), 1);
  EXPECT_EQ(bulkhead->in_flight(), 0);
}

TEST(LimitsPipelineTest, AbandonedWaiterLeavesTheQueue) {
  FakeClock clock;
  auto bulkhead = MakeBulkhead(1, 1);
  PipelineOptions po;
  po.bulkhead = bulkhead;
  po.report_metrics = false;
  auto pipeline = std::move(Pipeline::Create(po)).value();
  ASSERT_TRUE(bulkhead->TryAcquire());
  {
    Call waiter = pipeline->Begin(clock.Now());
    ASSERT_TRUE(waiter.Admit(clock.Now()).wait());
    EXPECT_EQ(bulkhead->queued(), 1);
  }  // destroyed unfinished: abandoned
  EXPECT_EQ(bulkhead->queued(), 0);
  bulkhead->Release();
  EXPECT_EQ(bulkhead->in_flight(), 0);
}

}  // namespace
}  // namespace mulligan
