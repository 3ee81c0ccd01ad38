// core/src/limits/rate_limiter.cc — GCRA per key (see limits/rate_limiter.h
// for the rule). Each key's state is one int64 (TAT, nanoseconds) updated by
// compare-and-swap; the map of keys is guarded by a mutex taken only to find
// a key's cell.

#include "mulligan/limits/rate_limiter.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "internal/ascii.h"
#include "internal/format.h"

namespace mulligan {
inline namespace v0 {
namespace {

int64_t NowNs(TimePoint t) {
  return std::chrono::duration_cast<Duration>(t.time_since_epoch()).count();
}

// a + b, saturating at the int64 range.
int64_t AddSat(int64_t a, int64_t b) {
  if (b > 0 && a > std::numeric_limits<int64_t>::max() - b) {
    return std::numeric_limits<int64_t>::max();
  }
  if (b < 0 && a < std::numeric_limits<int64_t>::min() - b) {
    return std::numeric_limits<int64_t>::min();
  }
  return a + b;
}

int64_t IntervalNs(double rate) {
  if (!(rate > 0) || !std::isfinite(rate)) return 1;
  const double ns = std::round(1e9 / rate);
  if (ns < 1) return 1;
  if (ns > 9.2e18) return std::numeric_limits<int64_t>::max() / 4;
  return static_cast<int64_t>(ns);
}

int64_t ToleranceNs(double burst, int64_t interval_ns) {
  if (!(burst >= 1) || !std::isfinite(burst)) return 0;
  const double ns = std::round((burst - 1.0) * static_cast<double>(interval_ns));
  if (ns > 9.2e18) return std::numeric_limits<int64_t>::max() / 4;
  return static_cast<int64_t>(ns);
}

}  // namespace

Status RateLimiter::Validate(const RateLimiterOptions& options) {
  bool printable = options.name.size() <= 200;
  for (char c : options.name) printable = printable && internal::IsPrintableAscii(c);
  if (!printable) {
    return InvalidArgumentError("rate limiter name must be printable ASCII of at most 200 bytes");
  }
  if (!(options.rate > 0) || !std::isfinite(options.rate)) {
    return InvalidArgumentError("rate limiter rate must be > 0 and finite (calls per second), got " +
                                internal::FormatDouble(options.rate));
  }
  if (!(options.burst >= 1) || !std::isfinite(options.burst)) {
    return InvalidArgumentError("rate limiter burst must be >= 1 and finite, got " +
                                internal::FormatDouble(options.burst));
  }
  if (options.max_wait && *options.max_wait < Duration::zero()) {
    return InvalidArgumentError("rate limiter max_wait must be >= 0");
  }
  if (options.max_keys < 1) {
    return InvalidArgumentError("rate limiter max_keys must be >= 1, got 0");
  }
  if (options.fallback_rate &&
      (!(*options.fallback_rate > 0) || !std::isfinite(*options.fallback_rate))) {
    return InvalidArgumentError(
        "rate limiter fallback_rate must be > 0 and finite (calls per second), got " +
        internal::FormatDouble(*options.fallback_rate));
  }
  if (options.fallback_rate && !options.backend) {
    return InvalidArgumentError(
        "rate limiter fallback_rate needs a shared backend (state): it is the rate while the "
        "shared state is unreachable");
  }
  if (options.backend && options.name.empty()) {
    return InvalidArgumentError(
        "rate limiter name must not be empty when the limiter is shared (it names the shared "
        "cells)");
  }
  return OkStatus();
}

Result<std::shared_ptr<RateLimiter>> RateLimiter::Create(const RateLimiterOptions& options) {
  Status valid = Validate(options);
  if (!valid.ok()) return valid;
  return std::shared_ptr<RateLimiter>(new RateLimiter(options));
}

RateLimiter::RateLimiter(const RateLimiterOptions& options)
    : options_(options),
      interval_ns_(IntervalNs(options.rate)),
      tau_ns_(ToleranceNs(options.burst, interval_ns_)),
      fallback_interval_ns_(IntervalNs(options.fallback_rate.value_or(options.rate))),
      fallback_tau_ns_(ToleranceNs(options.burst, fallback_interval_ns_)) {}

RateLimiter::~RateLimiter() = default;

std::atomic<int64_t>* RateLimiter::CellFor(std::string_view key, int64_t now_ns) {
  if (key.empty()) return &own_tat_;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = keys_.find(std::string(key));
  if (it != keys_.end()) return it->second.get();
  if (keys_.size() >= options_.max_keys) {
    // Idle keys are as good as new ones: forget them.
    for (auto i = keys_.begin(); i != keys_.end();) {
      if (i->second->load(std::memory_order_relaxed) <= now_ns) {
        i = keys_.erase(i);
      } else {
        ++i;
      }
    }
    if (keys_.size() >= options_.max_keys) return &overflow_tat_;
  }
  auto cell = std::make_unique<std::atomic<int64_t>>(std::numeric_limits<int64_t>::min());
  std::atomic<int64_t>* raw = cell.get();
  keys_.emplace(std::string(key), std::move(cell));
  return raw;
}

RateDecision RateLimiter::Acquire(std::string_view key, TimePoint now) {
  return Acquire(key, now, options_.max_wait ? *options_.max_wait : Duration::max());
}

RateDecision RateLimiter::Acquire(std::string_view key, TimePoint now, Duration max_wait) {
  const int64_t now_ns = NowNs(now);
  const int64_t bound = std::max<int64_t>(max_wait.count(), 0);
  RateDecision decision;
  if (options_.backend) {
    RateCellRequest request;
    request.name = options_.name;
    request.key = key;
    request.now = now;
    request.interval_ns = interval_ns_;
    request.tolerance_ns = tau_ns_;
    request.max_wait_ns = bound;
    Result<RateDecision> shared = options_.backend->Acquire(request);
    NoteBackend(shared.ok());
    if (shared.ok()) {
      decision = shared.value();
      decision.fallback = false;
      Count(decision);
      return decision;
    }
    fallbacks_.fetch_add(1, std::memory_order_relaxed);
    decision = AcquireLocal(key, now_ns, bound, fallback_interval_ns_, fallback_tau_ns_);
    decision.fallback = true;
  } else {
    decision = AcquireLocal(key, now_ns, bound, interval_ns_, tau_ns_);
  }
  Count(decision);
  return decision;
}

RateDecision RateLimiter::AcquireLocal(std::string_view key, int64_t now_ns, int64_t bound,
                                       int64_t interval_ns, int64_t tau_ns) {
  std::atomic<int64_t>* cell = CellFor(key, now_ns);
  RateDecision decision;
  int64_t tat = cell->load(std::memory_order_relaxed);
  for (;;) {
    const int64_t start = std::max(tat, now_ns);
    const int64_t allow = AddSat(start, -tau_ns);
    const int64_t wait = std::max<int64_t>(0, allow - now_ns);
    if (wait > bound) {
      decision.retry_in = Duration(wait);
      return decision;
    }
    if (cell->compare_exchange_weak(tat, AddSat(start, interval_ns))) {
      decision.admitted = true;
      decision.wait = Duration(wait);
      return decision;
    }
  }
}

void RateLimiter::Count(const RateDecision& decision) {
  if (!decision.admitted) {
    refused_.fetch_add(1, std::memory_order_relaxed);
  } else if (decision.wait > Duration::zero()) {
    waited_.fetch_add(1, std::memory_order_relaxed);
    wait_ns_.fetch_add(static_cast<uint64_t>(decision.wait.count()), std::memory_order_relaxed);
    wait_histogram_.Record(decision.wait);
  } else {
    admitted_.fetch_add(1, std::memory_order_relaxed);
  }
}

void RateLimiter::NoteBackend(bool ok) {
  // A load first: the common case (no change) writes nothing.
  if (falling_back_.load(std::memory_order_relaxed) == ok) {
    if (ok) {
      falling_back_.store(false, std::memory_order_relaxed);
    } else if (!falling_back_.exchange(true, std::memory_order_relaxed)) {
      fallback_periods_.fetch_add(1, std::memory_order_relaxed);
    }
  }
}

void RateLimiter::Penalize(std::string_view key, TimePoint until) {
  const int64_t until_ns = NowNs(until);
  int64_t tau = tau_ns_;
  if (options_.backend) {
    const bool ok = options_.backend->Penalize(options_.name, key, until, tau_ns_).ok();
    NoteBackend(ok);
    if (ok) return;
    fallbacks_.fetch_add(1, std::memory_order_relaxed);
    tau = fallback_tau_ns_;
  }
  std::atomic<int64_t>* cell = CellFor(key, std::numeric_limits<int64_t>::min());
  const int64_t target = AddSat(until_ns, tau);
  int64_t tat = cell->load(std::memory_order_relaxed);
  while (tat < target && !cell->compare_exchange_weak(tat, target)) {
  }
}

Status RateLimiter::LimitedStatus(Duration retry_in) const {
  return RateLimitedError("rate limiter '" + options_.name + "': next slot in " +
                          internal::FormatSeconds(retry_in));
}

size_t RateLimiter::key_count() const {
  std::lock_guard<std::mutex> lock(mu_);
  return keys_.size();
}

}  // namespace v0
}  // namespace mulligan
