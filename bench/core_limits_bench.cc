// core_limits_bench — cost of the bulkhead's and the rate limiter's hot path.
//
// A standalone program (no benchmark library): prints ns per uncontended
// bulkhead TryAcquire+Release and per rate limiter Acquire (its own bucket,
// a rate high enough never to wait), on 1 and 2 threads sharing one object.
// Issue 14's goal: <= 50 ns each on 1 thread, and at most 2x that on 2.
//
// Build the core_limits_bench target of bench/CMakeLists.txt
// (cmake -DMULLIGAN_BUILD_BENCH=ON).
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"

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
  // Wall time per call of one thread: the latency each caller sees.
  return std::chrono::duration<double, std::nano>(end - start).count() /
         static_cast<double>(calls_per_thread);
}

}  // namespace

int main() {
  constexpr long kCalls = 5'000'000;
  mulligan::BulkheadOptions bo;
  bo.name = "bench";
  bo.max_concurrent = 64;
  auto bulkhead = std::move(mulligan::Bulkhead::Create(bo)).value();
  mulligan::RateLimiterOptions lo;
  lo.name = "bench";
  lo.rate = 1e12;  // never waits: measures the arithmetic and the CAS
  lo.burst = 1e6;
  auto limiter = std::move(mulligan::RateLimiter::Create(lo)).value();

  std::printf("%-48s %10s\n", "measurement", "ns/op");
  for (int threads : {1, 2}) {
    const double b = NsPerCall(threads, kCalls, [&] {
      const bool got = bulkhead->TryAcquire();
      DoNotOptimize(got);
      if (got) bulkhead->Release();
    });
    std::printf("bulkhead TryAcquire+Release, %d thread(s)%*s %10.1f\n", threads, 7, "", b);
  }
  for (int threads : {1, 2}) {
    const double l = NsPerCall(threads, kCalls / 5, [&] {
      const mulligan::RateDecision d = limiter->Acquire("", Clock::now());
      DoNotOptimize(d.admitted);
    });
    std::printf("rate limiter Acquire (+ clock read), %d thread(s) %10.1f\n", threads, l);
  }
  // The clock read alone, to subtract from the limiter's figure.
  const double c = NsPerCall(1, kCalls / 5, [&] { DoNotOptimize(Clock::now()); });
  std::printf("steady_clock::now() alone, 1 thread%*s %10.1f\n", 13, "", c);
  return 0;
}
