// core_budget_bench — cost of the retry budget's and the adaptive rate's
// hot paths (issue 14).
//
// A standalone program (no benchmark library): ns per budget success (the
// lazy sharded counter, what every success pays), per budget check (a
// failure and TryRetry: the CAS loop a retry pays), per adaptive throttle
// Admit, and per AdaptiveRate Acquire, on 1 and 2 threads sharing one
// object. Goal: <= 50 ns each on 1 thread, at most 2x that on 2.
//
// Build the core_budget_bench target of bench/CMakeLists.txt
// (cmake -DMULLIGAN_BUILD_BENCH=ON).
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"
#include "mulligan/limits/adaptive_rate.h"

namespace {

using Clock = std::chrono::steady_clock;

template <typename T>
void DoNotOptimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

template <typename Body>
double NsPerCall(int threads, long calls_per_thread, Body body) {
  auto run = [&] {
    for (long i = 0; i < calls_per_thread; ++i) body();
  };
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(run);
  run();
  for (std::thread& th : pool) th.join();
  const auto end = Clock::now();
  return std::chrono::duration<double, std::nano>(end - start).count() /
         static_cast<double>(calls_per_thread);
}

}  // namespace

int main() {
  constexpr long kCalls = 5'000'000;
  const mulligan::TimePoint now = Clock::now();
  mulligan::BudgetOptions bo;
  bo.name = "bench";
  auto budget = std::move(mulligan::RetryBudget::Create(bo)).value();
  mulligan::ThrottleOptions to;
  to.name = "bench";
  to.seed = 1;
  auto throttle = std::move(mulligan::AdaptiveThrottle::Create(to)).value();
  mulligan::AdaptiveRateOptions ao;
  ao.name = "bench";
  auto adaptive = std::move(mulligan::AdaptiveRate::Create(ao, now)).value();

  std::printf("%-52s %10s\n", "measurement", "ns/op");
  for (int threads : {1, 2}) {
    const double s = NsPerCall(threads, kCalls, [&] { budget->AddSuccesses(1); });
    std::printf("budget success (lazy), %d thread(s)%*s %10.1f\n", threads, 18, "", s);
  }
  for (int threads : {1, 2}) {
    // A failure then a retry check; the successes keep the bucket above half.
    const double c = NsPerCall(threads, kCalls / 5, [&] {
      budget->OnFailure(mulligan::BudgetFailure::kOther, now);
      const int64_t cost = budget->TryRetry(mulligan::BudgetFailure::kOther, now);
      DoNotOptimize(cost);
      budget->AddSuccesses(4);
    });
    std::printf("budget check (failure + TryRetry), %d thread(s)%*s %10.1f\n", threads, 6, "", c);
  }
  for (int threads : {1, 2}) {
    const double a = NsPerCall(threads, kCalls / 5, [&] {
      const bool ok = throttle->Admit(now);
      DoNotOptimize(ok);
      throttle->AddAccepts(1);
    });
    std::printf("throttle Admit (+ lazy accept), %d thread(s)%*s %10.1f\n", threads, 10, "", a);
  }
  for (int threads : {1, 2}) {
    const double r = NsPerCall(threads, kCalls / 5, [&] {
      const mulligan::RateDecision d = adaptive->Acquire(now);
      DoNotOptimize(d.admitted);
    });
    std::printf("adaptive rate Acquire (not throttled yet), %d thread(s) %10.1f\n", threads, r);
  }
  return 0;
}
