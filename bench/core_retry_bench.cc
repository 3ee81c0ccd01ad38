// bench/core_retry_bench.cc — cost of one C++ RetryCall: the success path and
// the two-failures-then-success path, with and without metrics and a breaker.
//
// A standalone program (no benchmark library). Each figure is the best of
// 7 x 20 runs of calls / 20 logical calls (BestNsPerCall), in ns per call, on the steady system clock
// (what a caller gets by default). The failure path uses a zero base delay,
// so the loop never sleeps (a zero wait makes no system call): it measures
// the engine's decisions, as bench/python_retry_bench.py's failure path does.
//
//   core_retry_bench [calls [case]]     calls: default 2,000,000
//
// The first row is the bare call: the same operation (a function the
// optimiser cannot inline, returning OkStatus()) called without RetryCall;
// the success rows also say how much RetryCall adds to it ("over bare").
//
// With a case name (bare, success, success_metrics, success_breaker,
// two_failures, two_failures_metrics) only that case runs, once: for instruction counts
// under valgrind --tool=callgrind, where the cost of one call is
// (Ir(2N) - Ir(N)) / N, free of start-up.
//
// Build the core_retry_bench target of bench/CMakeLists.txt
// (cmake -DMULLIGAN_BUILD_BENCH=ON).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>

#if __has_include("mulligan/retry/call.h")
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/retry/call.h"
#include "mulligan/telemetry/metrics.h"
#else  // the layout before 0.2 (one folder of headers)
#include "mulligan/circuit_breaker.h"
#include "mulligan/metrics.h"
#include "mulligan/retry.h"
#endif

namespace {

using Clock = std::chrono::steady_clock;
using mulligan::CircuitBreaker;
using mulligan::CircuitBreakerOptions;
using mulligan::MetricsRegistry;
using mulligan::OkStatus;
using mulligan::RetryCall;
using mulligan::RetryCallOptions;
using mulligan::RetryOptions;
using mulligan::RetryPolicy;
using mulligan::Status;
using mulligan::TransportError;

constexpr int kRepeats = 7;

// Keeps the optimiser from deleting the measured work.
volatile int g_sink = 0;

// The best of `repeats` x kSlices runs of calls / kSlices calls each: a
// slice (well under a millisecond for the success cases) usually runs
// within one scheduler time slice, so on a machine shared with other work
// the best slice is the cost without preemption, where the best of a few
// long runs would still include other processes' turns.
constexpr int kSlices = 20;

template <typename Body>
double BestNsPerCall(long calls, int repeats, Body&& body) {
  const long slice = std::max(1L, calls / kSlices);
  double best = 1e300;
  for (int r = 0; r < repeats * kSlices; ++r) {
    const auto start = Clock::now();
    body(slice);
    const auto end = Clock::now();
    best = std::min(best, std::chrono::duration<double, std::nano>(end - start).count() /
                              static_cast<double>(slice));
  }
  return best;
}

struct Case {
  const char* name;
  const char* description;
  void (*run)(long calls);
};

// The policies and options, built once (as a caller keeps them).
struct Fixture {
  RetryPolicy default_policy = RetryPolicy::Default();
  RetryPolicy zero_wait_policy = [] {
    RetryOptions options;
    options.backoff.base = mulligan::Duration::zero();
    return std::move(RetryPolicy::Create(options)).value();
  }();
  std::unique_ptr<CircuitBreaker> breaker = [] {
    CircuitBreakerOptions options;
    options.name = "bench-retry-breaker";
    return std::move(CircuitBreaker::Create(options)).value();
  }();
  RetryCallOptions plain;
  RetryCallOptions with_metrics = [] {
    RetryCallOptions options;
    options.metrics = MetricsRegistry::Default().Get("bench-retry");
    return options;
  }();
  RetryCallOptions with_breaker;

  Fixture() { with_breaker.breaker = breaker.get(); }
};

Fixture& F() {
  static Fixture* const fixture = new Fixture();
  return *fixture;
}

// The operation of the success cases: an out-of-line call, as a real
// operation is, so the bare case measures a call and RetryCall's cost is
// what it adds around one.
__attribute__((noinline)) Status Operation() {
  asm volatile("");
  return OkStatus();
}

void Bare(long calls) {
  for (long i = 0; i < calls; ++i) g_sink += Operation().ok();
}

void Succeed(long calls, const RetryPolicy& policy, const RetryCallOptions& options) {
  auto ok = [] { return Operation(); };
  for (long i = 0; i < calls; ++i) g_sink += RetryCall(policy, ok, options).ok();
}

void TwoFailures(long calls, const RetryPolicy& policy, const RetryCallOptions& options) {
  for (long i = 0; i < calls; ++i) {
    int left = 2;
    auto flaky = [&left]() -> Status {
      if (left > 0) {
        --left;
        return TransportError("flaky");
      }
      return OkStatus();
    };
    g_sink += RetryCall(policy, flaky, options).ok();
  }
}

const Case kCases[] = {
    {"bare", "bare call of the operation (no RetryCall)", [](long n) { Bare(n); }},
    {"success", "RetryCall success, first attempt (no metrics)",
     [](long n) { Succeed(n, F().default_policy, F().plain); }},
    {"success_metrics", "RetryCall success, first attempt, metrics on",
     [](long n) { Succeed(n, F().default_policy, F().with_metrics); }},
    {"success_breaker", "RetryCall success, first attempt, closed breaker",
     [](long n) { Succeed(n, F().default_policy, F().with_breaker); }},
    {"two_failures", "RetryCall two failures then success, zero wait",
     [](long n) { TwoFailures(n, F().zero_wait_policy, F().plain); }},
    {"two_failures_metrics", "RetryCall two failures then success, zero wait, metrics on",
     [](long n) { TwoFailures(n, F().zero_wait_policy, F().with_metrics); }},
};

}  // namespace

int main(int argc, char** argv) {
  long calls = 2'000'000;
  if (argc > 1) {
    char* end = nullptr;
    calls = std::strtol(argv[1], &end, 10);
    if (*end != '\0' || calls <= 0) {
      std::fprintf(stderr, "usage: %s [calls > 0 [case]]\n", argv[0]);
      return 2;
    }
  }
  if (argc > 2) {
    for (const Case& c : kCases) {
      if (std::strcmp(c.name, argv[2]) == 0) {
        F();  // set-up outside the counted work is the same for N and 2N
        c.run(calls);
        return 0;
      }
    }
    std::fprintf(stderr, "unknown case %s\n", argv[2]);
    return 2;
  }
  std::printf("%-62s %10s %10s\n", "measurement (best of 7 x 20 slices)", "ns/call", "over bare");
  double bare = 0;
  for (const Case& c : kCases) {
    // The failure path is about 3 engine decisions per call: a tenth of the calls.
    const bool failures = std::strncmp(c.name, "two_failures", 12) == 0;
    const long n = failures ? calls / 10 : calls;
    const double ns = BestNsPerCall(n, kRepeats, c.run);
    if (std::strcmp(c.name, "bare") == 0) bare = ns;
    if (failures || std::strcmp(c.name, "bare") == 0) {
      std::printf("%-62s %10.1f\n", c.description, ns);
    } else {
      std::printf("%-62s %10.1f %+10.1f\n", c.description, ns, ns - bare);
    }
  }
  return 0;
}
