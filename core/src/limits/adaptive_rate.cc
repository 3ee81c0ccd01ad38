// core/src/limits/adaptive_rate.cc — AdaptiveRate (limits/adaptive_rate.h):
// the AWS SDKs' adaptive-mode client rate, CUBIC over a token bucket.

#include "mulligan/limits/adaptive_rate.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "internal/ascii.h"
#include "internal/format.h"

namespace mulligan {
inline namespace v0 {
namespace {

double Seconds(TimePoint t) {
  return static_cast<double>(
             std::chrono::duration_cast<Duration>(t.time_since_epoch()).count()) /
         1e9;
}

Duration FromSeconds(double s) {
  if (!(s > 0)) return Duration::zero();
  if (s > 9.2e9) return Duration::max();
  return Duration(static_cast<Duration::rep>(std::ceil(s * 1e9)));
}

Status Bad(const AdaptiveRateOptions& o, const std::string& field, const std::string& rule,
           double got) {
  return InvalidArgumentError("adaptive rate '" + o.name + "': " + field + " must be " + rule +
                              ", got " + internal::FormatDouble(got));
}

}  // namespace

bool IsThrottlingAnswer(const Outcome& outcome) {
  if (outcome.error != ErrorKind::kNone) return false;
  if (outcome.grpc_status >= 0) return outcome.grpc_status == 8;  // RESOURCE_EXHAUSTED
  if (outcome.http_status == 429) return true;
  return outcome.http_status == 503 && outcome.retry_after.has_value();
}

Status AdaptiveRate::Validate(const AdaptiveRateOptions& o) {
  bool printable = o.name.size() <= 200;
  for (char c : o.name) printable = printable && internal::IsPrintableAscii(c);
  if (!printable) {
    return InvalidArgumentError("adaptive rate name must be printable ASCII of at most 200 bytes");
  }
  if (!(o.beta > 0 && o.beta < 1)) return Bad(o, "beta", "in (0, 1)", o.beta);
  if (!(o.scale_constant > 0) || !std::isfinite(o.scale_constant)) {
    return Bad(o, "scale_constant", "> 0 and finite", o.scale_constant);
  }
  if (!(o.smoothing > 0 && o.smoothing <= 1)) return Bad(o, "smoothing", "in (0, 1]", o.smoothing);
  if (o.bucket <= Duration::zero()) {
    return Bad(o, "bucket", "> 0 (seconds)", std::chrono::duration<double>(o.bucket).count());
  }
  if (!(o.min_fill_rate > 0) || !std::isfinite(o.min_fill_rate)) {
    return Bad(o, "min_fill_rate", "> 0 and finite (requests per second)", o.min_fill_rate);
  }
  if (!(o.max_rate_scale >= 1) || !std::isfinite(o.max_rate_scale)) {
    return Bad(o, "max_rate_scale", ">= 1 and finite", o.max_rate_scale);
  }
  if (o.max_wait && *o.max_wait < Duration::zero()) {
    return Bad(o, "max_wait", ">= 0 (seconds)", std::chrono::duration<double>(*o.max_wait).count());
  }
  return OkStatus();
}

Result<std::shared_ptr<AdaptiveRate>> AdaptiveRate::Create(const AdaptiveRateOptions& options,
                                                           TimePoint now) {
  Status valid = Validate(options);
  if (!valid.ok()) return valid;
  return std::shared_ptr<AdaptiveRate>(new AdaptiveRate(options, now));
}

AdaptiveRate::AdaptiveRate(const AdaptiveRateOptions& options, TimePoint now)
    : options_(options) {
  const double t = Seconds(now);
  last_throttle_ = t;
  last_bucket_ = std::floor(t);  // as botocore: the first bucket starts at a whole second
}

void AdaptiveRate::RefillLocked(double t) {
  if (!has_last_refill_) {
    has_last_refill_ = true;
    last_refill_ = t;
    return;
  }
  const double fill = (t - last_refill_) * fill_rate_;
  capacity_ = std::min(max_capacity_, capacity_ + fill);
  last_refill_ = t;
}

void AdaptiveRate::UpdateMeasuredLocked(double t) {
  const double scale = 1.0 / std::chrono::duration<double>(options_.bucket).count();
  const double bucket = std::floor(t * scale) / scale;
  request_count_ += 1;
  if (bucket > last_bucket_) {
    const double current = request_count_ / (bucket - last_bucket_);
    measured_rate_ = current * options_.smoothing + measured_rate_ * (1 - options_.smoothing);
    request_count_ = 0;
    last_bucket_ = bucket;
  }
}

RateDecision AdaptiveRate::Acquire(TimePoint now) {
  return Acquire(now, options_.max_wait ? *options_.max_wait : Duration::max());
}

RateDecision AdaptiveRate::Acquire(TimePoint now, Duration max_wait) {
  RateDecision decision;
  double wait = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (enabled_) {
      RefillLocked(Seconds(now));
      if (capacity_ < 1) wait = (1 - capacity_) / fill_rate_;
      const Duration need = FromSeconds(wait);
      if (need > std::max(max_wait, Duration::zero())) {
        refused_.fetch_add(1, std::memory_order_relaxed);
        decision.retry_in = need;
        return decision;
      }
      capacity_ -= 1;
    }
  }
  decision.admitted = true;
  decision.wait = FromSeconds(wait);
  if (decision.wait > Duration::zero()) {
    waited_.fetch_add(1, std::memory_order_relaxed);
    wait_histogram_.Record(decision.wait);
  } else {
    admitted_.fetch_add(1, std::memory_order_relaxed);
  }
  return decision;
}

void AdaptiveRate::Record(bool throttled, TimePoint now) {
  const double t = Seconds(now);
  const double beta = options_.beta, scale = options_.scale_constant;
  std::lock_guard<std::mutex> lock(mu_);
  UpdateMeasuredLocked(t);
  double calculated;
  if (throttled) {
    throttles_.fetch_add(1, std::memory_order_relaxed);
    const double rate_to_use = enabled_ ? std::min(measured_rate_, fill_rate_) : measured_rate_;
    last_max_rate_ = rate_to_use;
    time_window_ = std::cbrt(last_max_rate_ * (1 - beta) / scale);
    last_throttle_ = t;
    calculated = rate_to_use * beta;
    enabled_ = true;
  } else {
    time_window_ = std::cbrt(last_max_rate_ * (1 - beta) / scale);
    const double dt = t - last_throttle_ - time_window_;
    calculated = scale * dt * dt * dt + last_max_rate_;
  }
  calculated_rate_ = calculated;
  const double new_rate = std::min(calculated, options_.max_rate_scale * measured_rate_);
  RefillLocked(t);
  fill_rate_ = std::max(new_rate, options_.min_fill_rate);
  max_capacity_ = std::max(new_rate, 1.0);
  capacity_ = std::min(capacity_, max_capacity_);
}

void AdaptiveRate::RecordOutcome(const Outcome& outcome, TimePoint now) {
  if (outcome.error != ErrorKind::kNone && outcome.error != ErrorKind::kRetryable &&
      outcome.error != ErrorKind::kTerminal) {
    return;  // a transport failure or a timeout: no answer to learn from
  }
  Record(IsThrottlingAnswer(outcome), now);
}

AdaptiveRateState AdaptiveRate::State(TimePoint now) const {
  std::lock_guard<std::mutex> lock(mu_);
  AdaptiveRateState s;
  s.enabled = enabled_;
  s.fill_rate = fill_rate_;
  s.max_capacity = max_capacity_;
  s.capacity = capacity_;
  if (has_last_refill_) {
    s.capacity = std::min(max_capacity_, capacity_ + (Seconds(now) - last_refill_) * fill_rate_);
  }
  s.measured_rate = measured_rate_;
  s.last_max_rate = last_max_rate_;
  s.time_window = time_window_;
  s.calculated_rate = calculated_rate_;
  return s;
}

Status AdaptiveRate::LimitedStatus(Duration retry_in) const {
  return RateLimitedError("adaptive rate '" + options_.name + "': next token in " +
                          internal::FormatSeconds(retry_in));
}

}  // namespace v0
}  // namespace mulligan
