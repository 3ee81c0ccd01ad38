// Stale results racing a transition on the windowed path (DESIGN.md section 5:
// "Permits carry the breaker's generation, so a late result from before a
// transition cannot close or reopen it").
//
// With a sliding window every Record takes the breaker's mutex, and the
// generation is checked twice: once lock-free, once under the lock. A
// sequential test cannot tell the second check from the first (the word's
// generation has already changed when the lock-free check runs), so these
// tests let recorders holding permits of one generation race a transition
// made by the other thread (a trip by its failures, Reset, ForceOpen). A
// recorder that read the old generation before the transition and took the
// lock after it must still be turned away.
//
// What is asserted holds whatever the interleaving: after a transition the
// window was cleared, and every result recorded after it carries an old
// permit, so the window stays empty and no second transition happens. Each
// round is a few hundred records; the whole file runs in well under a second
// (and under ThreadSanitizer, which scripts/test.sh runs it with). With the
// re-check under the lock removed, a run fails within its first rounds.
#include "mulligan/breaker/circuit_breaker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mulligan {
namespace {

using std::chrono::milliseconds;

// Two threads: on the two cores of the test machines both run at once, so
// one is recording while the other makes the transition.
constexpr int kThreads = 2;
// Results each thread keeps recording after it has seen the transition, so
// that records certainly straddle it.
constexpr int kAfter = 50;
// Fresh results recorded before the transition.
constexpr int kBefore = 100;
constexpr int kRounds = 300;

// Spins until every thread has arrived (so the threads start together).
void ArriveAndWait(std::atomic<int>& arrived) {
  arrived.fetch_add(1);
  while (arrived.load() < kThreads) std::this_thread::yield();
}

std::unique_ptr<CircuitBreaker> Make(const CircuitBreakerOptions& options) {
  Result<std::unique_ptr<CircuitBreaker>> breaker = CircuitBreaker::Create(options);
  EXPECT_TRUE(breaker.ok()) << breaker.status().ToString();
  return std::move(breaker).value();
}

// Counts transitions (listeners run on the recording threads).
struct Transitions {
  std::mutex mu;
  std::vector<std::string> reasons;
  BreakerListener Listener() {
    return [this](const BreakerTransition& t) {
      std::lock_guard<std::mutex> lock(mu);
      reasons.push_back(t.reason);
    };
  }
  std::vector<std::string> Get() {
    std::lock_guard<std::mutex> lock(mu);
    return reasons;
  }
};

// A count window that trips on the failure rate: 50% of at least 10 calls.
// failure_threshold 0, so only the window decides.
CircuitBreakerOptions RateWindow() {
  CircuitBreakerOptions o;
  o.failure_threshold = 0;
  o.window = WindowKind::kCount;
  o.window_size = 100;
  o.minimum_calls = 10;
  o.failure_rate_threshold = 50.0;
  o.reset_timeout = std::chrono::seconds(30);
  return o;
}

TEST(BreakerStaleRaceTest, FailuresRacingTheirOwnTripNeverReachTheNewGeneration) {
  // Both threads record failures with one permit of the closed generation.
  // The kBefore-th failure recorded trips the breaker (all failures, >= 50%
  // of minimum_calls = kBefore). A failure that lands after the trip is stale:
  // if one reached the open generation's window the window would not be
  // empty, and kBefore of them would trip it a second time.
  const TimePoint t = FakeClock().Now();
  CircuitBreakerOptions o = RateWindow();
  o.window_size = kBefore;
  o.minimum_calls = kBefore;
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    auto b = Make(o);
    Transitions transitions;
    b->AddListener(transitions.Listener());
    // Every permit is issued in the closed generation, before any thread runs.
    const Permit permit = b->Acquire(t).permit;
    ASSERT_TRUE(permit.valid);
    std::atomic<int> arrived{0};
    std::vector<std::thread> threads;
    for (int i = 0; i < kThreads; ++i) {
      threads.emplace_back([&] {
        ArriveAndWait(arrived);
        int left = kAfter;
        // Bounded, so that a breaker that never trips fails the test below
        // instead of hanging it.
        for (int k = 0; left > 0 && k < 100 * kBefore; ++k) {
          b->Record(permit, CallResult::kFailure, milliseconds(1), t);
          if (b->state(t) != BreakerState::kClosed) --left;
        }
      });
    }
    for (std::thread& th : threads) th.join();
    ASSERT_EQ(b->state(t), BreakerState::kOpen);
    ASSERT_EQ(transitions.Get(), std::vector<std::string>{"failure_rate"});
    const BreakerCounts c = b->counts(t);
    ASSERT_EQ(c.window_calls, 0u);
    // Exactly the failures before the trip were counted.
    ASSERT_EQ(c.failures, static_cast<uint64_t>(kBefore));
  }
}

// One thread records successes with a permit of the first generation and,
// after kBefore of them, changes the generation: Reset (counters zeroed:
// nothing may be counted afterwards) or ForceOpen (the window cleared:
// nothing may reach it). The other thread records successes with the same
// permit throughout. Successes, so that the window's rate never trips it.
void RaceAManualTransition(bool reset) {
  const TimePoint t = FakeClock().Now();
  const CircuitBreakerOptions o = RateWindow();
  for (int round = 0; round < kRounds; ++round) {
    SCOPED_TRACE(std::string(reset ? "Reset" : "ForceOpen") + " round " + std::to_string(round));
    auto b = Make(o);
    Transitions transitions;
    b->AddListener(transitions.Listener());
    const Permit permit = b->Acquire(t).permit;
    ASSERT_TRUE(permit.valid);
    std::atomic<int> arrived{0};
    std::atomic<bool> transitioned{false};
    std::vector<std::thread> threads;
    threads.emplace_back([&] {  // records, then makes the transition
      ArriveAndWait(arrived);
      for (int k = 0; k < kBefore; ++k) b->Record(permit, CallResult::kSuccess, milliseconds(1), t);
      if (reset) {
        b->Reset(t);
      } else {
        b->ForceOpen(t);
      }
      transitioned.store(true);
    });
    threads.emplace_back([&] {  // records until well after the transition
      ArriveAndWait(arrived);
      int left = kAfter;
      int fresh = 0;
      while (left > 0) {
        const bool seen = transitioned.load();
        b->Record(permit, CallResult::kSuccess, milliseconds(1), t);
        if (seen) {
          --left;
        } else if (++fresh % 4 == 0) {
          // A mutex is not fair: without a pause now and then this thread
          // could take the breaker's lock again and again while the other
          // waits for it.
          std::this_thread::yield();
        }
      }
    });
    for (std::thread& th : threads) th.join();
    const BreakerCounts c = b->counts(t);
    ASSERT_EQ(c.window_calls, 0u);
    if (reset) {
      // Reset zeroes the counters; every later result was stale.
      ASSERT_EQ(b->state(t), BreakerState::kClosed);
      ASSERT_EQ(c.calls, 0u);
      // Reset from closed reports no transition.
      ASSERT_TRUE(transitions.Get().empty());
    } else {
      ASSERT_EQ(b->state(t), BreakerState::kForcedOpen);
      ASSERT_EQ(transitions.Get(), std::vector<std::string>{"forced_open"});
    }
  }
}

TEST(BreakerStaleRaceTest, ResultsRacingAResetAreNotCountedAfterIt) { RaceAManualTransition(true); }

TEST(BreakerStaleRaceTest, ResultsRacingAForcedOpenNeverReachTheWindow) {
  RaceAManualTransition(false);
}

}  // namespace
}  // namespace mulligan
