// core_limits_bench — cost of the bulkhead's and the rate limiter's hot path.
//
// A standalone program (no benchmark library): prints ns per uncontended
// bulkhead TryAcquire+Release and per rate limiter Acquire (its own bucket,
// a rate high enough never to wait), on 1 and 2 threads sharing one object.
// Issue 14's goal: <= 50 ns each on 1 thread, and at most 2x that on 2.
// Each figure is the minimum of kRepeats runs (a shared machine preempts
// some of them; the minimum is the run that was not), and the 2-thread
// rows end with their ratio to the 1-thread row of the same run.
//
// Build the core_limits_bench target of bench/CMakeLists.txt
// (cmake -DMULLIGAN_BUILD_BENCH=ON).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
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

constexpr int kRepeats = 7;

template <typename Body>
double NsPerCallOnce(int threads, long calls_per_thread, Body body) {
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

template <typename Body>
double NsPerCall(int threads, long calls_per_thread, Body body) {
  double best = NsPerCallOnce(threads, calls_per_thread, body);
  for (int i = 1; i < kRepeats; ++i) {
    best = std::min(best, NsPerCallOnce(threads, calls_per_thread, body));
  }
  return best;
}

// Prints one row; a 2-thread row also prints its ratio to `one` (1 thread).
void Row(const char* what, int threads, double ns, double one) {
  std::printf("%s, %d thread(s) %*s %10.1f", what, threads,
              static_cast<int>(40 - std::strlen(what)), "", ns);
  if (threads > 1) std::printf("   %.2fx 1 thread (goal <= 2x)", ns / one);
  std::printf("\n");
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

  std::printf("%-54s %10s\n", "measurement (min of 7 runs)", "ns/op");
  double one = 0;
  for (int threads : {1, 2}) {
    const double b = NsPerCall(threads, kCalls, [&] {
      const bool got = bulkhead->TryAcquire();
      DoNotOptimize(got);
      if (got) bulkhead->Release();
    });
    if (threads == 1) one = b;
    Row("bulkhead TryAcquire+Release", threads, b, one);
  }
  for (int threads : {1, 2}) {
    const double l = NsPerCall(threads, kCalls / 5, [&] {
      const mulligan::RateDecision d = limiter->Acquire("", Clock::now());
      DoNotOptimize(d.admitted);
    });
    if (threads == 1) one = l;
    Row("rate limiter Acquire (+ clock read)", threads, l, one);
  }
  // The clock read alone, to subtract from the limiter's figure.
  const double c = NsPerCall(1, kCalls / 5, [&] { DoNotOptimize(Clock::now()); });
  Row("steady_clock::now() alone", 1, c, c);
  return 0;
}
