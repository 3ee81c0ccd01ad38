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
// Shared (Added in 0.6.): with RateLimiterOptions::backend set (for Redis:
// CreateRedisRateLimiter, limits/redis_rate_limiter.h) the TAT of every key
// lives in the backend, so the rate and burst hold across every process that
// uses the same backend and name; each Acquire and Penalize is then one call
// to the backend. When the backend fails (kStateUnavailable: Redis down,
// slow, refusing), the call is decided by this object's local cells at
// fallback_rate, with the same burst, and the decision says so
// (RateDecision::fallback, fallbacks()); the next call asks the backend
// again. The local cells and the shared ones are separate: coming back from
// a fallback, or after the backend lost its data (a Redis restart without
// persistence), a key may admit up to `burst` calls more than the rule
// allows, once.
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

class RateLimiterBackend;

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
  // Where the cells live when they are shared across processes (see the
  // file comment); nullptr (the default) keeps them in this object. Not
  // part of the rule: the rule (rate, burst) stays in these options and is
  // passed to the backend on every call. (Added in 0.6.)
  std::shared_ptr<RateLimiterBackend> backend;
  // Calls per second per key that this object admits on its own while the
  // backend is unreachable; nullopt (the default) means `rate`. Must be > 0
  // and finite, and needs a backend (Changed in 0.6: without one it is
  // kInvalidArgument instead of silently ignored). The default keeps each
  // process at the full rate: without the backend a process cannot know how
  // many others run (N), and a guess of N too high throttles a healthy
  // service while Redis is down; the cost is that N processes may admit up
  // to N x rate together until Redis is back. A service that knows its N
  // and must never exceed the rate sets rate / N. (Added in 0.6.)
  std::optional<double> fallback_rate;
};

// The limiter's answer to one Acquire.
struct RateDecision {
  // True: the call may go after `wait` (its slot is reserved).
  bool admitted = false;
  // Admitted: how long to wait first (zero: go now).
  Duration wait = Duration::zero();
  // Refused: the wait the call would have needed.
  Duration retry_in = Duration::zero();
  // True when a limiter with a backend decided this call locally because the
  // backend failed (see the file comment). (Added in 0.6.)
  bool fallback = false;
};

// One request to a backend: the GCRA rule in integer nanoseconds (the
// limiter's interval() and tolerance()) and the caller's bound.
// (Added in 0.6.)
struct RateCellRequest {
  // The limiter's name and the key (empty: the limiter's own bucket).
  std::string_view name;
  std::string_view key;
  // The caller's monotonic time of the decision (one clock per decision: the
  // backend maps it to its own time scale and answers waits relative to it).
  TimePoint now;
  int64_t interval_ns = 0;
  int64_t tolerance_ns = 0;
  // The longest wait the caller accepts, >= 0 (INT64_MAX: unbounded).
  int64_t max_wait_ns = 0;
};

// Where shared GCRA cells live (Added in 0.6). Implementations apply the
// rule of the file comment atomically per key, across processes.
//
// Thread-safety: implementations are thread-safe.
class RateLimiterBackend {
 public:
  virtual ~RateLimiterBackend() = default;
  // Applies one Acquire to the shared cell of (name, key). Returns the
  // decision (its `fallback` false), or kStateUnavailable when the backend
  // cannot decide (the limiter then decides locally). Never throws.
  virtual Result<RateDecision> Acquire(const RateCellRequest& request) = 0;
  // Moves the shared cell's TAT to at least `until` + tolerance_ns (the
  // Penalize rule). kStateUnavailable when the backend cannot be reached.
  virtual Status Penalize(std::string_view name, std::string_view key, TimePoint until,
                          int64_t tolerance_ns) = 0;
  // "redis" (or another backend's kind), for logs and metrics.
  virtual const char* kind() const = 0;
};

// Thread-safety: every method is thread-safe.
class RateLimiter {
 public:
  // Validates `options`; kInvalidArgument names the bad field
  // ("rate must be > 0 and finite, got -1"; "fallback_rate ...").
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
  // Keys kept now (local cells only).
  size_t key_count() const;
  // True when options().backend is set: the cells are shared. (Added in 0.6.)
  bool shared() const { return options_.backend != nullptr; }
  // Acquires and Penalizes decided locally because the backend failed
  // (each is also counted in admitted/waited/refused). (Added in 0.6.)
  uint64_t fallbacks() const { return fallbacks_.load(std::memory_order_relaxed); }
  // True while a shared limiter decides locally: its last backend call (an
  // Acquire or a Penalize) failed; false again after the next one that
  // works. Always false without a backend. (Added in 0.6.)
  bool falling_back() const { return falling_back_.load(std::memory_order_relaxed); }
  // Fallback periods begun: how many times falling_back() turned true
  // (metrics' mulligan_shared_state_fallbacks_total). (Added in 0.6.)
  uint64_t fallback_periods() const { return fallback_periods_.load(std::memory_order_relaxed); }

 private:
  explicit RateLimiter(const RateLimiterOptions& options);
  // The TAT cell of `key` (never null).
  std::atomic<int64_t>* CellFor(std::string_view key, int64_t now_ns);
  // The GCRA step on a local cell with the given interval and tolerance.
  RateDecision AcquireLocal(std::string_view key, int64_t now_ns, int64_t bound_ns,
                            int64_t interval_ns, int64_t tau_ns);
  // Counts an admission or a refusal in the counters above.
  void Count(const RateDecision& decision);
  // Notes whether a backend call worked (falling_back_, fallback_periods_).
  void NoteBackend(bool ok);

  const RateLimiterOptions options_;
  const int64_t interval_ns_;
  const int64_t tau_ns_;
  // The local rule while the backend is unreachable (fallback_rate).
  const int64_t fallback_interval_ns_;
  const int64_t fallback_tau_ns_;
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
  std::atomic<uint64_t> fallbacks_{0};
  std::atomic<bool> falling_back_{false};
  std::atomic<uint64_t> fallback_periods_{0};
  SecondsHistogram wait_histogram_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_LIMITS_RATE_LIMITER_H_
