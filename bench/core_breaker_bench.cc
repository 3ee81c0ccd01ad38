// core_breaker_bench — cost of the circuit breaker's hot path and of the registry.
//
// A standalone program (no benchmark library): prints ns per Acquire+Record
// success on 1 and 2 threads (no window and with a count window), ns per
// registry Get of an existing key, and the memory of one breaker.
//
//   core_breaker_bench [calls case]
//
// With a call count and a case name (acquire_record: Acquire+Record success
// on a closed breaker, no window, one thread) only that case runs, once, for
// instruction counts under valgrind --tool=callgrind (bench/instructions.py):
// the cost of one Acquire+Record is (Ir(2N) - Ir(N)) / N, free of start-up.
//
// Build the core_breaker_bench target of bench/CMakeLists.txt
// (cmake -DMULLIGAN_BUILD_BENCH=ON).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mulligan/breaker/registry.h"
#include "mulligan/breaker/circuit_breaker.h"

namespace {

using mulligan::Admission;
using mulligan::BreakerRegistry;
using mulligan::BreakerRegistryOptions;
using mulligan::CallResult;
using mulligan::CircuitBreaker;
using mulligan::CircuitBreakerOptions;
using mulligan::TimePoint;
using mulligan::WindowKind;
using Clock = std::chrono::steady_clock;

// Keeps the optimizer from dropping a value.
template <typename T>
void DoNotOptimize(const T& value) {
  asm volatile("" : : "r,m"(value) : "memory");
}

double NsPerCall(CircuitBreaker& breaker, int threads, long calls_per_thread) {
  const TimePoint now = Clock::now();
  auto body = [&] {
    for (long i = 0; i < calls_per_thread; ++i) {
      Admission a = breaker.Acquire(now);
      breaker.Record(a.permit, CallResult::kSuccess, std::chrono::microseconds(1), now);
    }
  };
  const auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(body);
  body();
  for (std::thread& th : pool) th.join();
  const auto end = Clock::now();
  // Wall time per call of one thread: the latency each caller sees.
  return std::chrono::duration<double, std::nano>(end - start).count() /
         static_cast<double>(calls_per_thread);
}

// Runs `calls` Acquire+Record successes on a closed breaker (no window) for
// the instruction-count mode. The breaker is built before the loop, so its
// set-up costs the same for N and 2N calls.
void AcquireRecord(long calls) {
  CircuitBreakerOptions options;
  options.window = WindowKind::kNone;
  auto breaker = std::move(CircuitBreaker::Create(options)).value();
  const TimePoint now = Clock::now();
  for (long i = 0; i < calls; ++i) {
    Admission a = breaker->Acquire(now);
    breaker->Record(a.permit, CallResult::kSuccess, std::chrono::microseconds(1), now);
  }
  DoNotOptimize(breaker->HeapBytes());
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1) {
    char* end = nullptr;
    const long calls = std::strtol(argv[1], &end, 10);
    if (*end != '\0' || calls <= 0 || argc != 3 || std::strcmp(argv[2], "acquire_record") != 0) {
      std::fprintf(stderr, "usage: %s [calls > 0 acquire_record]\n", argv[0]);
      return 2;
    }
    AcquireRecord(calls);
    return 0;
  }
  constexpr long kCalls = 5'000'000;
  std::printf("%-44s %10s\n", "measurement", "value");

  struct Case {
    const char* label;
    WindowKind window;
    int threads;
  };
  const Case cases[] = {
      {"acquire+record success, no window, 1 thread", WindowKind::kNone, 1},
      {"acquire+record success, no window, 2 threads", WindowKind::kNone, 2},
      {"acquire+record success, count window, 1 thr", WindowKind::kCount, 1},
      {"acquire+record success, count window, 2 thr", WindowKind::kCount, 2},
  };
  for (const Case& c : cases) {
    CircuitBreakerOptions options;
    options.window = c.window;
    auto breaker = std::move(CircuitBreaker::Create(options)).value();
    double best = 1e300;
    for (int r = 0; r < 5; ++r) best = std::min(best, NsPerCall(*breaker, c.threads, kCalls));
    std::printf("%-44s %7.1f ns\n", c.label, best);
  }

  // Registry lookups of existing keys (origin-like keys, longer than SSO).
  {
    BreakerRegistryOptions options;
    auto registry = std::move(BreakerRegistry::Create(options)).value();
    std::vector<std::string> keys;
    for (int i = 0; i < 1000; ++i) keys.push_back("https://host-" + std::to_string(i) + ".example:443");
    for (const std::string& k : keys) DoNotOptimize(registry->Get(k).ok());
    double best = 1e300;
    for (int r = 0; r < 5; ++r) {
      const auto start = Clock::now();
      constexpr int kLookups = 2'000'000;
      for (int i = 0; i < kLookups; ++i) {
        auto b = registry->Get(keys[static_cast<size_t>(i) % keys.size()]);
        DoNotOptimize(b.ok());
      }
      const auto end = Clock::now();
      best = std::min(best, std::chrono::duration<double, std::nano>(end - start).count() / kLookups);
    }
    std::printf("%-44s %7.1f ns\n", "registry Get, existing key (1,000 keys)", best);
  }

  // Memory.
  {
    CircuitBreakerOptions plain;
    auto a = std::move(CircuitBreaker::Create(plain)).value();
    CircuitBreakerOptions windowed;
    windowed.window = WindowKind::kCount;  // 100 calls
    auto b = std::move(CircuitBreaker::Create(windowed)).value();
    CircuitBreakerOptions timed;
    timed.window = WindowKind::kTime;  // 10 buckets
    auto c = std::move(CircuitBreaker::Create(timed)).value();
    std::printf("%-44s %7zu B\n", "sizeof(CircuitBreaker)", sizeof(CircuitBreaker));
    std::printf("%-44s %7zu B\n", "heap per breaker, no window", a->HeapBytes());
    std::printf("%-44s %7zu B\n", "heap per breaker, count window (100)", b->HeapBytes());
    std::printf("%-44s %7zu B\n", "heap per breaker, time window (10)", c->HeapBytes());
  }
  return 0;
}
