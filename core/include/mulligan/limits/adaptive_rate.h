// mulligan/limits/adaptive_rate.h — the client-side send rate of the AWS
// SDKs' "adaptive" retry mode: a token bucket whose fill rate a CUBIC
// controller lowers on throttling answers and raises on successes.
// (Added in 0.4.)
//
// The model (the AWS SDKs' retry behavior specification, adaptive mode, as
// botocore's retries/adaptive.py, the Java SDK v2's and aws-sdk-go-v2's
// implement it), all rates in requests per second, times in seconds:
//
//   measured rate  every recorded answer counts one request in the current
//                  0.5 s bucket (floor(t * 2) / 2 of the clock's reading);
//                  when a later bucket starts, rate = count / elapsed buckets'
//                  span, smoothed: measured = 0.8 * rate + 0.2 * measured.
//   on throttling  rate_to_use = measured (first time) or min(measured,
//                  fill rate); last_max_rate = rate_to_use;
//                  K = cbrt(last_max_rate * (1 - beta) / scale);
//                  last_throttle = t; new = rate_to_use * beta; the bucket
//                  is enabled from then on (before the first throttling
//                  answer every request goes at once).
//   on success     K as above; new = scale * (t - last_throttle - K)^3 +
//                  last_max_rate (CUBIC's window growth, RFC 9438 4.2).
//   then           fill rate = max(min(new, 2 * measured), min_fill_rate);
//                  capacity bound = max(min(new, 2 * measured), 1).
//   acquire        refill (capacity += elapsed * fill rate, up to the
//                  bound); a request needs 1 token: wait (1 - capacity) /
//                  fill rate when short.
// Defaults are the spec's: beta 0.7, scale constant 0.4, smoothing 0.8, a
// bucket of 0.5 s, min fill rate 0.5, starting fill rate 1 (capacity 0).
//
// mulligan's one change: Acquire does not sleep. It computes the wait and
// takes the token at once (a reservation, so the capacity may go negative):
// callers that asked earlier go earlier, and at any later instant the
// capacity equals the spec's sleep-then-take (unless the rate changed during
// the wait: a reservation keeps the wait it was given). A wait longer than
// the caller's bound (max_wait, the deadline) is refused and takes nothing.
//
// Throttling answers (IsThrottlingAnswer): HTTP 429, HTTP 503 with a
// Retry-After, gRPC RESOURCE_EXHAUSTED (8); AWS's own list of throttling
// error codes maps onto these in the HTTP front doors. Everything else that
// was answered (any other status, a success) is a success for the rate.
// Transport failures (no answer) are not recorded.
//
// Inside a pipeline (PipelineOptions::adaptive_rate) this is strategy 2 at
// attempt level, as the AWS SDKs do: every attempt acquires a token (a wait
// is AttemptAdmission::Action::kWait, a refusal StopReason::kRateLimited),
// and every answered attempt is recorded.
//
// Thread-safety: every method is thread-safe (one mutex per object, held for
// a few arithmetic operations).

#ifndef MULLIGAN_LIMITS_ADAPTIVE_RATE_H_
#define MULLIGAN_LIMITS_ADAPTIVE_RATE_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/status.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan/telemetry/histogram.h"

namespace mulligan {
inline namespace v0 {

// Plain options; validated by AdaptiveRate::Create. (Added in 0.4.)
struct AdaptiveRateOptions {
  // The name in metrics and error texts. Printable ASCII, at most 200 bytes.
  std::string name;
  // CUBIC's multiplicative decrease, in (0, 1). The spec's 0.7.
  double beta = 0.7;
  // CUBIC's scale constant C, > 0 and finite. The spec's 0.4.
  double scale_constant = 0.4;
  // The measured rate's smoothing weight of the newest bucket, in (0, 1].
  double smoothing = 0.8;
  // The measured rate's bucket, > 0. The spec's 0.5 s.
  Duration bucket = std::chrono::milliseconds(500);
  // The fill rate's floor in requests per second, > 0. The spec's 0.5.
  double min_fill_rate = 0.5;
  // A new rate is at most this times the measured send rate, >= 1. The
  // spec's 2.
  double max_rate_scale = 2.0;
  // The longest a request waits for its token, also bounded by the call's
  // deadline; nullopt: only the deadline bounds it. Must be >= 0.
  std::optional<Duration> max_wait;
};

// True for a throttling answer: HTTP 429, 503 with Retry-After, gRPC 8.
bool IsThrottlingAnswer(const Outcome& outcome);

// A reading of the controller's state (for tests, metrics and debugging).
struct AdaptiveRateState {
  bool enabled = false;          // a throttling answer was seen
  double fill_rate = 0;          // tokens per second
  double max_capacity = 0;       // the bucket's bound
  double capacity = 0;           // tokens now (may be negative: reservations)
  double measured_rate = 0;      // smoothed requests per second
  double last_max_rate = 0;      // CUBIC's W_max
  double time_window = 0;        // CUBIC's K, seconds
  double calculated_rate = 0;    // the last CUBIC output, before the caps
};

class AdaptiveRate {
 public:
  // Validates `options`; kInvalidArgument names the bad field
  // ("adaptive rate 'x': beta must be in (0, 1), got 1.5"). `now` dates the
  // start: the last throttle time and the first measuring bucket.
  static Result<std::shared_ptr<AdaptiveRate>> Create(const AdaptiveRateOptions& options,
                                                      TimePoint now);
  static Status Validate(const AdaptiveRateOptions& options);

  AdaptiveRate(const AdaptiveRate&) = delete;
  AdaptiveRate& operator=(const AdaptiveRate&) = delete;

  // Asks for one token at `now`, waiting at most `max_wait` (the pipeline
  // passes min(options.max_wait, time left)). Admitted with a zero wait
  // until the first throttling answer.
  RateDecision Acquire(TimePoint now, Duration max_wait);
  // Acquire bounded by options().max_wait only.
  RateDecision Acquire(TimePoint now);
  // Records an answer at `now`: throttled (IsThrottlingAnswer) or not.
  void Record(bool throttled, TimePoint now);
  // Records `outcome` unless it is a transport failure (no answer).
  void RecordOutcome(const Outcome& outcome, TimePoint now);

  // The state at `now` (the capacity refilled to `now`, without storing it).
  AdaptiveRateState State(TimePoint now) const;
  // The kRateLimited status of a refusal.
  Status LimitedStatus(Duration retry_in) const;

  const AdaptiveRateOptions& options() const { return options_; }
  const std::string& name() const { return options_.name; }
  // Requests admitted at once, after a wait, refused; throttling answers.
  uint64_t admitted() const { return admitted_.load(std::memory_order_relaxed); }
  uint64_t waited() const { return waited_.load(std::memory_order_relaxed); }
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }
  uint64_t throttles() const { return throttles_.load(std::memory_order_relaxed); }
  HistogramSnapshot wait_histogram() const { return wait_histogram_.Snapshot(); }

 private:
  AdaptiveRate(const AdaptiveRateOptions& options, TimePoint now);
  void RefillLocked(double t);
  void UpdateMeasuredLocked(double t);

  const AdaptiveRateOptions options_;
  mutable std::mutex mu_;
  // Guarded by mu_ (times in seconds since the clock's epoch).
  bool enabled_ = false;
  double fill_rate_ = 1.0;
  double max_capacity_ = 1.0;
  double capacity_ = 0.0;
  bool has_last_refill_ = false;
  double last_refill_ = 0;
  double measured_rate_ = 0;
  double last_bucket_ = 0;
  double request_count_ = 0;
  double last_max_rate_ = 0;
  double last_throttle_ = 0;
  double time_window_ = 0;
  double calculated_rate_ = 0;
  std::atomic<uint64_t> admitted_{0};
  std::atomic<uint64_t> waited_{0};
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> throttles_{0};
  SecondsHistogram wait_histogram_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_LIMITS_ADAPTIVE_RATE_H_
