// bench/core_metrics_bench.cc — what metrics add to a retried call and to a
// breaker-guarded call in C++, measured in one run (issue: at most 15 ns).
//
// Build: cmake -DMULLIGAN_BUILD_BENCH=ON ... && ninja core_metrics_bench
// Each figure is the best of 7 runs of 2,000,000 calls, in ns per call.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <memory>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/telemetry/metrics.h"
#include "mulligan/retry/call.h"

namespace {

using Clock = std::chrono::steady_clock;

constexpr int kCalls = 2'000'000;
constexpr int kRepeats = 7;

// Keeps the optimiser from deleting the measured work.
volatile int g_sink = 0;

double BestNsPerCall(const std::function<void()>& body) {
  double best = 1e300;
  for (int r = 0; r < kRepeats; ++r) {
    const auto start = Clock::now();
    body();
    const auto end = Clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(end - start).count() / kCalls);
  }
  return best;
}

}  // namespace

int main() {
  using namespace mulligan;
  RetryPolicy policy = RetryPolicy::Default();
  Metrics* metrics = MetricsRegistry::Default().Get("bench");
  FakeClock fake;

  RetryCallOptions off;
  off.clock = &fake;
  RetryCallOptions on = off;
  on.metrics = metrics;
  auto succeed = [] { return OkStatus(); };

  const double retry_off = BestNsPerCall([&] {
    for (int i = 0; i < kCalls; ++i) g_sink += RetryCall(policy, succeed, off).ok();
  });
  const double retry_on = BestNsPerCall([&] {
    for (int i = 0; i < kCalls; ++i) g_sink += RetryCall(policy, succeed, on).ok();
  });

  CircuitBreakerOptions breaker_options;
  breaker_options.name = "bench-breaker";
  std::unique_ptr<CircuitBreaker> breaker = std::move(CircuitBreaker::Create(breaker_options)).value();
  breaker_options.name = "";
  breaker_options.report_metrics = false;
  std::unique_ptr<CircuitBreaker> quiet = std::move(CircuitBreaker::Create(breaker_options)).value();
  const TimePoint now = fake.Now();
  auto guarded = [&](CircuitBreaker& b) {
    for (int i = 0; i < kCalls; ++i) {
      Admission a = b.Acquire(now);
      b.Record(a.permit, CallResult::kSuccess, Duration::zero(), now);
    }
  };
  const double breaker_off = BestNsPerCall([&] { guarded(*quiet); });
  const double breaker_on = BestNsPerCall([&] { guarded(*breaker); });

  RetryCallOptions both_off = off;
  both_off.breaker = quiet.get();
  RetryCallOptions both_on = on;
  both_on.breaker = breaker.get();
  const double composed_off = BestNsPerCall([&] {
    for (int i = 0; i < kCalls; ++i) g_sink += RetryCall(policy, succeed, both_off).ok();
  });
  const double composed_on = BestNsPerCall([&] {
    for (int i = 0; i < kCalls; ++i) g_sink += RetryCall(policy, succeed, both_on).ok();
  });

  const double pair = BestNsPerCall([&] {
    for (int i = 0; i < kCalls; ++i) {
      metrics->CallStarted();
      metrics->CallSucceeded(1, Duration::zero());
    }
  });

  std::printf("| call (success path) | metrics off (ns) | metrics on (ns) | added (ns) |\n");
  std::printf("| --- | ---: | ---: | ---: |\n");
  std::printf("| RetryCall | %.1f | %.1f | %+.1f |\n", retry_off, retry_on, retry_on - retry_off);
  std::printf("| breaker Acquire + Record | %.1f | %.1f | %+.1f |\n", breaker_off, breaker_on,
              breaker_on - breaker_off);
  std::printf("| RetryCall + breaker | %.1f | %.1f | %+.1f |\n", composed_off, composed_on,
              composed_on - composed_off);
  std::printf("| Metrics::CallStarted + CallSucceeded alone | | %.1f | |\n", pair);
  return g_sink == -1;
}
