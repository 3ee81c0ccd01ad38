// mulligan/budget/throttle.h — client-side adaptive throttling (Google SRE
// book, chapter 21 "Handling Overload", section "Client-Side Throttling").
// (Added in 0.3.)
//
// Over a sliding window (default 2 minutes, the book's), the client counts
//   requests  every attempt it meant to send: each Admit, including retries
//             and including the attempts it rejected itself (the book counts
//             every request the application layer attempted; counting the
//             local rejections is what keeps the probability up while the
//             backend is still refusing);
//   accepts   every answer that was not an overload answer: an attempt whose
//             outcome was anything but HTTP 429 / 503, gRPC
//             RESOURCE_EXHAUSTED (8) / UNAVAILABLE (14), or a connection
//             refused (the backend did not accept it). A 404 or a 500 is an
//             accept: the backend took the request and answered.
// and rejects a new attempt locally with probability
//   p = max(0, (requests - K * accepts) / (requests + 1)).
// K (default 2, the book's) must be >= 1: with K < 1 a healthy backend
// (accepts == requests) would be throttled. The book suggests lowering K
// (towards 1.1) to throttle more aggressively.
//
// A throttled attempt ends its call with StopReason::kThrottled
// (StatusCode::kThrottled, Python ThrottledError), never retried.
//
// Randomness: each Admit draws u in [0, 1) from splitmix64 over an atomic
// counter seeded with `seed` (lock-free; deterministic for one thread, so
// tests are exact), and rejects when u < p; no draw is made while p is 0.
// Unset seed: from the OS entropy.
//
// Hot path (DESIGN.md section 2): an accepted success is counted lazily (a
// sharded counter) and folded into the window at the next Admit, dated then.
// Thread-safety: every method may be called from any number of threads.

#ifndef MULLIGAN_BUDGET_THROTTLE_H_
#define MULLIGAN_BUDGET_THROTTLE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/status.h"
#include "mulligan/budget/budget.h"

namespace mulligan {
inline namespace v0 {

// Plain options; validated by AdaptiveThrottle::Create. (Added in 0.3.)
struct ThrottleOptions {
  // The name it is shared and reported under. May be empty.
  std::string name;
  // The window requests and accepts are counted over (10 slices); >= 1 ms.
  Duration window = std::chrono::minutes(2);
  // The SRE book's multiplier; >= 1 and finite.
  double k = 2.0;
  // Seeds the rejection draws; unset: the OS's entropy.
  std::optional<uint64_t> seed;
};

// Validates `options`; kInvalidArgument names the field.
Status ValidateThrottleOptions(const ThrottleOptions& options);

// True when `outcome` is an overload answer (not an accept; see above), or
// the caller marked it one (Outcome::overload).
bool IsOverloadAnswer(const Outcome& outcome);

class AdaptiveThrottle {
 public:
  static Result<std::shared_ptr<AdaptiveThrottle>> Create(const ThrottleOptions& options);
  // The process-wide throttle named options.name (made on first use).
  static Result<std::shared_ptr<AdaptiveThrottle>> Shared(const ThrottleOptions& options);
  static void ClearShared();

  AdaptiveThrottle(const AdaptiveThrottle&) = delete;
  AdaptiveThrottle& operator=(const AdaptiveThrottle&) = delete;

  // Counts one request at `now` and returns true to let it go, false when
  // it is rejected locally (with the probability above, computed from the
  // window before this request).
  bool Admit(TimePoint now);
  // The attempt Admit let go ended with `outcome`: counts an accept unless
  // it was an overload answer.
  void Record(const Outcome& outcome);
  // Counts `n` accepts lazily (successes).
  void AddAccepts(uint64_t n = 1) { pending_.Add(n); }
  // The rejection probability at `now` (folds pending accepts first).
  double Probability(TimePoint now);
  // Requests and accepts in the window at `now`.
  int64_t Requests(TimePoint now) const { return requests_.Sum(now); }
  int64_t Accepts(TimePoint now);
  // Attempts rejected so far.
  uint64_t rejected() const { return rejected_.load(std::memory_order_relaxed); }

  const ThrottleOptions& options() const { return options_; }
  const std::string& name() const { return options_.name; }

 private:
  explicit AdaptiveThrottle(const ThrottleOptions& options, uint64_t seed);
  void Fold(TimePoint now);
  double NextDouble();

  ThrottleOptions options_;
  internal::WindowedCounter requests_;
  internal::WindowedCounter accepts_;
  internal::ShardedCounter pending_;
  alignas(64) std::atomic<uint64_t> rng_;
  std::atomic<uint64_t> rejected_{0};
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_BUDGET_THROTTLE_H_
