// BreakerRegistry: get-or-create, identity of live keys, bounded size with
// eviction of idle closed breakers, full-registry errors, listeners.
#include "mulligan/breaker/registry.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <thread>
#include <vector>

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

std::unique_ptr<BreakerRegistry> MakeRegistry(size_t max_breakers,
                                              CircuitBreakerOptions breaker = {}) {
  BreakerRegistryOptions options;
  options.max_breakers = max_breakers;
  options.breaker = breaker;
  Result<std::unique_ptr<BreakerRegistry>> registry = BreakerRegistry::Create(options);
  EXPECT_TRUE(registry.ok()) << registry.status().ToString();
  return std::move(registry).value();
}

std::shared_ptr<CircuitBreaker> MustGet(BreakerRegistry& registry, std::string_view key) {
  Result<std::shared_ptr<CircuitBreaker>> b = registry.Get(key);
  EXPECT_TRUE(b.ok()) << b.status().ToString();
  return b.ok() ? *b : nullptr;
}

void Trip(CircuitBreaker& b, TimePoint t) {
  while (b.state(t) == BreakerState::kClosed) {
    Admission a = b.Acquire(t);
    b.Record(a.permit, CallResult::kFailure, milliseconds(1), t);
  }
}

TEST(BreakerRegistryTest, InvalidOptions) {
  BreakerRegistryOptions options;
  options.max_breakers = 0;
  Result<std::unique_ptr<BreakerRegistry>> r = BreakerRegistry::Create(options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("max_breakers"), std::string::npos);
  options.max_breakers = 10;
  options.breaker.half_open_max_calls = 0;
  r = BreakerRegistry::Create(options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("breaker.half_open_max_calls"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(BreakerRegistryOptions{}.max_breakers, 10000u);
}

TEST(BreakerRegistryTest, GetOrCreateNamesByKeyAndKeepsIdentity) {
  FakeClock clock;
  auto registry = MakeRegistry(10);
  std::shared_ptr<CircuitBreaker> a = MustGet(*registry, "https://a.example:443");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->name(), "https://a.example:443");
  Trip(*a, clock.Now());
  // A later lookup never resets or replaces it.
  std::string key = "https://a.example:443";
  std::shared_ptr<CircuitBreaker> again = MustGet(*registry, key);
  EXPECT_EQ(again.get(), a.get());
  EXPECT_EQ(again->state(clock.Now()), BreakerState::kOpen);
  EXPECT_EQ(registry->size(), 1u);
  EXPECT_EQ(registry->Find("https://a.example:443").get(), a.get());
  EXPECT_EQ(registry->Find("nope"), nullptr);
  Result<std::shared_ptr<CircuitBreaker>> empty = registry->Get("");
  EXPECT_EQ(empty.status().code(), StatusCode::kInvalidArgument);
}

TEST(BreakerRegistryTest, HundredThousandKeysStayWithinTheBound) {
  auto registry = MakeRegistry(1000);
  size_t max_size = 0;
  for (int i = 0; i < 100000; ++i) {
    Result<std::shared_ptr<CircuitBreaker>> b = registry->Get("key-" + std::to_string(i));
    ASSERT_TRUE(b.ok()) << i << ": " << b.status().ToString();
    max_size = std::max(max_size, registry->size());
  }
  EXPECT_EQ(max_size, 1000u);
  EXPECT_EQ(registry->size(), 1000u);
  // The most recent 1,000 keys are the ones kept.
  EXPECT_NE(registry->Find("key-99999"), nullptr);
  EXPECT_NE(registry->Find("key-99000"), nullptr);
  EXPECT_EQ(registry->Find("key-98999"), nullptr);
}

TEST(BreakerRegistryTest, HeldAndOpenBreakersAreNeverEvicted) {
  FakeClock clock;
  const TimePoint t = clock.Now();
  auto registry = MakeRegistry(4);
  std::shared_ptr<CircuitBreaker> held = MustGet(*registry, "held");
  CircuitBreaker* open_raw = nullptr;
  {
    std::shared_ptr<CircuitBreaker> open = MustGet(*registry, "open");
    Trip(*open, t);
    open_raw = open.get();
  }  // no outside reference any more, but open
  CircuitBreaker* forced_raw = nullptr;
  {
    std::shared_ptr<CircuitBreaker> forced = MustGet(*registry, "forced");
    forced->ForceOpen(t);
    forced_raw = forced.get();
  }
  // One evictable slot: churn many keys through it.
  for (int i = 0; i < 1000; ++i) {
    ASSERT_TRUE(registry->Get("churn-" + std::to_string(i)).ok()) << i;
    ASSERT_EQ(registry->size(), 4u);
  }
  EXPECT_EQ(MustGet(*registry, "held").get(), held.get());
  EXPECT_EQ(MustGet(*registry, "open").get(), open_raw);
  EXPECT_EQ(MustGet(*registry, "open")->state(t), BreakerState::kOpen);
  EXPECT_EQ(MustGet(*registry, "forced").get(), forced_raw);
  // An open breaker whose period ended is still not closed: kept too.
  for (int i = 0; i < 10; ++i) ASSERT_TRUE(registry->Get("late-" + std::to_string(i)).ok());
  EXPECT_EQ(MustGet(*registry, "open").get(), open_raw);
}

TEST(BreakerRegistryTest, FullOfLiveEntriesIsAnError) {
  auto registry = MakeRegistry(3);
  std::vector<std::shared_ptr<CircuitBreaker>> held;
  for (const char* key : {"a", "b", "c"}) held.push_back(MustGet(*registry, key));
  Result<std::shared_ptr<CircuitBreaker>> full = registry->Get("d");
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(full.status().message().find("full"), std::string::npos);
  EXPECT_NE(full.status().message().find("'d'"), std::string::npos);
  EXPECT_EQ(registry->size(), 3u);
  EXPECT_EQ(registry->Find("d"), nullptr);
  // Existing keys still resolve.
  EXPECT_EQ(MustGet(*registry, "b").get(), held[1].get());
  // Releasing one makes room; the least recently used idle one goes.
  held[0].reset();
  EXPECT_NE(MustGet(*registry, "d"), nullptr);
  EXPECT_EQ(registry->Find("a"), nullptr);
  EXPECT_EQ(registry->size(), 3u);
}

TEST(BreakerRegistryTest, LeastRecentlyUsedIdleIsEvictedFirst) {
  auto registry = MakeRegistry(3);
  for (const char* key : {"a", "b", "c"}) ASSERT_TRUE(registry->Get(key).ok());
  ASSERT_TRUE(registry->Get("a").ok());  // a is now the most recent
  ASSERT_TRUE(registry->Get("d").ok());  // evicts b
  EXPECT_NE(registry->Find("a"), nullptr);
  EXPECT_EQ(registry->Find("b"), nullptr);
  EXPECT_NE(registry->Find("c"), nullptr);
  std::vector<std::string> order;
  registry->ForEach([&](const std::shared_ptr<CircuitBreaker>& b) { order.push_back(b->name()); });
  EXPECT_EQ(order, (std::vector<std::string>{"d", "a", "c"}));
  EXPECT_EQ(registry->Snapshot().size(), 3u);
}

TEST(BreakerRegistryTest, RegistryListenersReachEveryBreaker) {
  FakeClock clock;
  const TimePoint t = clock.Now();
  auto registry = MakeRegistry(10);
  std::shared_ptr<CircuitBreaker> before = MustGet(*registry, "before");
  std::vector<std::string> names;
  const uint64_t id = registry->AddListener([&](const BreakerTransition& tr) {
    names.push_back(std::string(tr.name) + ":" + tr.reason);
  });
  std::shared_ptr<CircuitBreaker> after = MustGet(*registry, "after");
  Trip(*before, t);
  Trip(*after, t);
  EXPECT_EQ(names, (std::vector<std::string>{"before:failure_threshold",
                                             "after:failure_threshold"}));
  EXPECT_TRUE(registry->RemoveListener(id));
  EXPECT_FALSE(registry->RemoveListener(id));
  before->Reset(t);
  EXPECT_EQ(names.size(), 2u);
  // A breaker may outlive its registry; its forwarding listener stays valid.
  registry.reset();
  after->Reset(t);
}

TEST(BreakerRegistryTest, ConcurrentGetsReturnOneBreakerPerKey) {
  auto registry = MakeRegistry(100);
  constexpr int kThreads = 4;
  std::vector<std::vector<CircuitBreaker*>> seen(kThreads);
  std::vector<std::thread> threads;
  std::vector<std::shared_ptr<CircuitBreaker>> keep[kThreads];
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      for (int k = 0; k < 50; ++k) {
        Result<std::shared_ptr<CircuitBreaker>> b = registry->Get("k" + std::to_string(k));
        ASSERT_TRUE(b.ok());
        keep[i].push_back(*b);
        seen[i].push_back(b->get());
      }
    });
  }
  for (std::thread& th : threads) th.join();
  for (int i = 1; i < kThreads; ++i) EXPECT_EQ(seen[i], seen[0]);
  EXPECT_EQ(registry->size(), 50u);
}

}  // namespace
}  // namespace mulligan
