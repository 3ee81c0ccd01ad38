// mulligan/limits/rate_limiter.h — a rate limiter per key by the Generic
// Cell Rate Algorithm (GCRA; ITU-T I.371 and the ATM Forum's UNI 3.1, in its
// "virtual scheduling" form, as Brandur Leach's throttled and redis-cell use
// it). DESIGN.md sections 2 and 5, "Rate limiter".
//
// Per key the limiter keeps one number, the theoretical arrival time TAT.
// With emission interval T = 1 / rate and tolerance tau = (burst - 1) * T,
// both in nanoseconds rounded to the nearest (halves away from zero):
//
//   tat   = max(TAT, now)
//   allow = tat - tau                   the earliest time this call may go
//   wait  = max(0, allow - now)
//   wait <= the caller's bound: admitted after `wait`; TAT = tat + T
//   else:                       refused, retry_in = wait; TAT unchanged
//
// So `burst` calls go at once from idle, and then one every T. An admitted
// call with a non-zero wait RESERVES its slot (the caller waits exactly
// `wait` and then runs; it does not ask again), so waiting callers are
// served in the order they asked and the spacing is exact.
//
// Retry-After (penalize_retry_after): a 429 or a 503 with Retry-After that a
// call to this key received moves the key's next allowed time to that
// instant (TAT = max(TAT, until + tau)), so that every call to the key waits
// until then, not only the retried one.
//
// Inside a pipeline (PipelineOptions::rate_limiter) this is strategy 2: by
// default the limiter is asked once per logical call (before its first
// attempt; DESIGN.md section 2), or before every attempt with
// rate_limit_per_attempt (as the AWS SDKs' adaptive mode does). A wait is
// AttemptAdmission::Action::kWait with the exact delay, bounded by
// max_wait and by the deadline; a refusal is StopReason::kRateLimited with
// retry_in, never retried.
//
// Cost: a limiter without keys is one atomic load and one compare-and-swap
// per Acquire; keyed buckets add a mutex-guarded hash look-up.
//
// (Added in 0.3.)

#ifndef MULLIGAN_LIMITS_RATE_LIMITER_H_
#define MULLIGAN_LIMITS_RATE_LIMITER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "mulligan/base/clock.h"
#include "mulligan/base/status.h"
#include "mulligan/telemetry/histogram.h"

namespace mulligan {
inline namespace v0 {

// Plain options; validated by RateLimiter::Create. (Added in 0.3.)
struct RateLimiterOptions {
  // The name in metrics and error texts. Printable ASCII, at most 200 bytes.
  std::string name;
  // Calls per second admitted per key, > 0 and finite (REQUIRED: the
  // default 0 is refused). The emission interval is 1 / rate.
  double rate = 0.0;
  // Calls that may go at once from idle, >= 1 and finite. Default 1 (no
  // burst: calls are spaced 1 / rate apart).
  double burst = 1.0;
  // The longest a call waits for its slot, also bounded by the call's
  // deadline; nullopt (the default) means only the deadline bounds it;
  // zero means never wait (refuse instead). Must be >= 0.
  std::optional<Duration> max_wait;
  // A 429 or 503 answer's Retry-After holds every call to that key until
  // then (see Penalize). Default false.
  bool penalize_retry_after = false;
  // Bound on the keys kept; idle keys (whose TAT has passed: they are full
  // again) are evicted when it is reached, and a new key then shares one
  // overflow bucket until room frees. Must be >= 1. Default 10000.
  size_t max_keys = 10000;
};

// The limiter's answer to one Acquire.
struct RateDecision {
  // True: the call may go after `wait` (its slot is reserved).
  bool admitted = false;
  // Admitted: how long to wait first (zero: go now).
  Duration wait = Duration::zero();
  // Refused: the wait the call would have needed.
  Duration retry_in = Duration::zero();
};

// Thread-safety: every method is thread-safe.
class RateLimiter {
 public:
  // Validates `options`; kInvalidArgument names the bad field
  // ("rate must be > 0 and finite, got -1").
  static Result<std::shared_ptr<RateLimiter>> Create(const RateLimiterOptions& options);
  static Status Validate(const RateLimiterOptions& options);

  RateLimiter(const RateLimiter&) = delete;
  RateLimiter& operator=(const RateLimiter&) = delete;
  ~RateLimiter();

  // Asks for one slot for `key` (empty: the limiter's own bucket) at `now`,
  // waiting at most `max_wait` (the pipeline passes min(options.max_wait,
  // time left before the deadline)). See the file comment for the rule.
  RateDecision Acquire(std::string_view key, TimePoint now, Duration max_wait);
  // Acquire bounded by options().max_wait only (Duration::max() without).
  RateDecision Acquire(std::string_view key, TimePoint now);

  // Holds every call to `key` until `until` (a Retry-After's instant): the
  // next slot is at `until` or later. Earlier instants change nothing.
  void Penalize(std::string_view key, TimePoint until);

  // The kRateLimited status of a refusal ("rate limiter 'api': next slot in
  // 0.250 s").
  Status LimitedStatus(Duration retry_in) const;

  const RateLimiterOptions& options() const { return options_; }
  const std::string& name() const { return options_.name; }
  // The emission interval T and the tolerance tau, in nanoseconds.
  Duration interval() const { return Duration(interval_ns_); }
  Duration tolerance() const { return Duration(tau_ns_); }
  // Calls admitted at once, admitted after a wait, and refused; summed waits.
  uint64_t admitted() const { return admitted_.load(std::memory_order_relaxed); }
  uint64_t waited() const { return waited_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  uint64_t wait_ns() const { return wait_ns_.load(std::memory_order_relaxed); }
  // The waits of the calls admitted after a wait, as a histogram in seconds
  // (metrics' mulligan_rate_limiter_wait_seconds). (Added in 0.4.)
  HistogramSnapshot wait_histogram() const { return wait_histogram_.Snapshot(); }
  // Keys kept now.
  size_t key_count() const;

 private:
  explicit RateLimiter(const RateLimiterOptions& options);
  // The TAT cell of `key` (never null).
  std::atomic<int64_t>* CellFor(std::string_view key, int64_t now_ns);

  const RateLimiterOptions options_;
  const int64_t interval_ns_;
  const int64_t tau_ns_;
  // TAT in nanoseconds since the steady clock's epoch; the key-less bucket
  // and the overflow bucket.
  std::atomic<int64_t> own_tat_{INT64_MIN};
  std::atomic<int64_t> overflow_tat_{INT64_MIN};
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::unique_ptr<std::atomic<int64_t>>> keys_;  // mu_
  std::atomic<uint64_t> admitted_{0};
  std::atomic<uint64_t> waited_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> wait_ns_{0};
  SecondsHistogram wait_histogram_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_LIMITS_RATE_LIMITER_H_
