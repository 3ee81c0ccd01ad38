// The circuit breaker: a lock-free closed fast path, a mutex for everything else.
//
// Concurrency design. The breaker's mode, its generation and the closed-state
// run of consecutive failures live in one 64-bit atomic word:
//
//   bits 63..24  generation (bumped by every transition)
//   bits 23..3   consecutive failures (saturating at failure_threshold)
//   bits  2..0   mode (BreakerState)
//
// Acquire in the closed state is one acquire-load of the word. Record checks
// the permit's generation against the word and updates the count with a CAS
// from the value it read, so a Record racing a transition either lands before
// it (and is then wiped by it) or fails its CAS, sees the new generation and
// gives up: a stale permit can never touch a newer generation's count. Every
// change of mode happens under mu_, which also guards the half-open slots, the
// sliding window and the reset-timeout growth; the mode bits therefore never
// change while mu_ is held, and the thread that wins mu_ after re-checking
// the word performs each transition exactly once.
//
// Listeners are invoked after mu_ is released, from a copy-on-write snapshot.
#include "mulligan/breaker/circuit_breaker.h"

#include "mulligan/telemetry/metrics.h"
#include "internal/format.h"
#include "internal/saturating.h"
#include "breaker/listeners.h"
#include "breaker/window.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string>

namespace mulligan {
inline namespace v0 {

namespace {

constexpr int kModeBits = 3;
constexpr int kCountBits = 21;
constexpr int kGenShift = kModeBits + kCountBits;
constexpr uint64_t kModeMask = (uint64_t{1} << kModeBits) - 1;
constexpr uint64_t kCountMask = (uint64_t{1} << kCountBits) - 1;
constexpr int kMaxFailureThreshold = 1000000;  // fits in kCountBits
static_assert(kMaxFailureThreshold <= static_cast<int>(kCountMask), "count field too narrow");

constexpr uint64_t MakeWord(uint64_t generation, BreakerState mode, uint64_t count) {
  return (generation << kGenShift) | (count << kModeBits) | static_cast<uint64_t>(mode);
}
constexpr BreakerState ModeOf(uint64_t word) { return static_cast<BreakerState>(word & kModeMask); }
constexpr uint64_t CountOf(uint64_t word) { return (word >> kModeBits) & kCountMask; }
constexpr uint64_t GenOf(uint64_t word) { return word >> kGenShift; }

using internal::Nanos;
using internal::SaturatingAdd;
using internal::FormatSeconds;

bool Percent(double p) { return p > 0.0 && p <= 100.0; }  // false for NaN

const char* MetricsOnlyReason(const char* reason) {
  const std::string_view r(reason);
  if (r == "failure_threshold") return "metrics_only:failure_threshold";
  if (r == "failure_rate") return "metrics_only:failure_rate";
  return "metrics_only:slow_call_rate";
}

}  // namespace

const char* BreakerStateName(BreakerState state) {
  switch (state) {
    case BreakerState::kClosed: return "closed";
    case BreakerState::kOpen: return "open";
    case BreakerState::kHalfOpen: return "half_open";
    case BreakerState::kForcedOpen: return "forced_open";
    case BreakerState::kDisabled: return "disabled";
    case BreakerState::kMetricsOnly: return "metrics_only";
  }
  return "unknown";
}

const char* BreakerCallKindName(BreakerCallKind kind) {
  switch (kind) {
    case BreakerCallKind::kSuccess: return "success";
    case BreakerCallKind::kFailure: return "failure";
    case BreakerCallKind::kIgnored: return "ignored";
    case BreakerCallKind::kRejected: return "rejected";
  }
  return "unknown";
}

const char* CallResultName(CallResult result) {
  switch (result) {
    case CallResult::kSuccess: return "success";
    case CallResult::kFailure: return "failure";
    case CallResult::kIgnored: return "ignored";
  }
  return "unknown";
}

CallResult ResultFor(Classification classification) {
  switch (classification) {
    case Classification::kSuccess: return CallResult::kSuccess;
    case Classification::kRetryable: return CallResult::kFailure;
    case Classification::kTerminal: return CallResult::kIgnored;
  }
  return CallResult::kIgnored;
}

Status CircuitBreaker::Validate(const CircuitBreakerOptions& o) {
  // The name lands in errors, log lines and metrics labels: a CR or LF
  // would forge a log line, so no control character is accepted.
  for (char c : o.name) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte == 0x7f) {
      return InvalidArgumentError(
          "name must not contain control characters (CR, LF, TAB, NUL...); found byte " +
          std::to_string(static_cast<int>(byte)));
    }
  }
  if (o.failure_threshold < 0 || o.failure_threshold > kMaxFailureThreshold) {
    return InvalidArgumentError("failure_threshold must be in [0, 1000000], got " +
                                std::to_string(o.failure_threshold));
  }
  if (o.window != WindowKind::kNone && o.window != WindowKind::kCount &&
      o.window != WindowKind::kTime) {
    return InvalidArgumentError("window must be none, count or time, got " +
                                std::to_string(static_cast<int>(o.window)));
  }
  if (o.failure_threshold == 0 && o.window == WindowKind::kNone) {
    return InvalidArgumentError(
        "failure_threshold is 0 and window is none: at least one trip condition must be enabled");
  }
  if (o.window == WindowKind::kCount && (o.window_size < 1 || o.window_size > 1000000)) {
    return InvalidArgumentError("window_size must be in [1, 1000000], got " +
                                std::to_string(o.window_size));
  }
  if (o.window == WindowKind::kTime) {
    if (o.window_duration <= Duration::zero()) {
      return InvalidArgumentError("window_duration must be > 0, got " + FormatSeconds(o.window_duration));
    }
    if (o.window_buckets < 1 || o.window_buckets > 3600) {
      return InvalidArgumentError("window_buckets must be in [1, 3600], got " +
                                  std::to_string(o.window_buckets));
    }
    if (o.window_duration / o.window_buckets < Duration(1)) {
      return InvalidArgumentError("window_duration / window_buckets must be at least 1 ns");
    }
  }
  if (o.window != WindowKind::kNone) {
    if (!Percent(o.failure_rate_threshold)) {
      return InvalidArgumentError("failure_rate_threshold must be in (0, 100], got " +
                                  std::to_string(o.failure_rate_threshold));
    }
    if (o.minimum_calls < 1) {
      return InvalidArgumentError("minimum_calls must be >= 1, got " +
                                  std::to_string(o.minimum_calls));
    }
    if (o.window == WindowKind::kCount && o.minimum_calls > o.window_size) {
      return InvalidArgumentError("minimum_calls must be <= window_size (" +
                                  std::to_string(o.window_size) + "), got " +
                                  std::to_string(o.minimum_calls));
    }
  }
  if (o.slow_call_duration) {
    if (*o.slow_call_duration <= Duration::zero()) {
      return InvalidArgumentError("slow_call_duration must be > 0 when set, got " +
                                  FormatSeconds(*o.slow_call_duration));
    }
    if (o.window == WindowKind::kNone) {
      return InvalidArgumentError("slow_call_duration requires a window (count or time)");
    }
    if (!Percent(o.slow_call_rate_threshold)) {
      return InvalidArgumentError("slow_call_rate_threshold must be in (0, 100], got " +
                                  std::to_string(o.slow_call_rate_threshold));
    }
  }
  if (o.reset_timeout <= Duration::zero()) {
    return InvalidArgumentError("reset_timeout must be > 0, got " + FormatSeconds(o.reset_timeout));
  }
  if (!(o.reset_timeout_multiplier >= 1.0) || !std::isfinite(o.reset_timeout_multiplier)) {
    return InvalidArgumentError("reset_timeout_multiplier must be finite and >= 1, got " +
                                std::to_string(o.reset_timeout_multiplier));
  }
  // Without growth the cap is never reached, so the default 5 min cap must not
  // reject a longer reset_timeout; with growth a cap below the start is a mistake.
  if (o.reset_timeout_multiplier > 1.0 && o.max_reset_timeout < o.reset_timeout) {
    return InvalidArgumentError("max_reset_timeout must be >= reset_timeout (" +
                                FormatSeconds(o.reset_timeout) + "), got " +
                                FormatSeconds(o.max_reset_timeout));
  }
  if (o.half_open_max_calls < 1 || o.half_open_max_calls > 65535) {
    return InvalidArgumentError("half_open_max_calls must be in [1, 65535], got " +
                                std::to_string(o.half_open_max_calls));
  }
  if (o.max_half_open_duration && *o.max_half_open_duration <= Duration::zero()) {
    return InvalidArgumentError("max_half_open_duration must be > 0 when set, got " +
                                FormatSeconds(*o.max_half_open_duration));
  }
  if (o.permit_timeout <= Duration::zero()) {
    return InvalidArgumentError("permit_timeout must be > 0, got " + FormatSeconds(o.permit_timeout));
  }
  return OkStatus();
}

Result<std::unique_ptr<CircuitBreaker>> CircuitBreaker::Create(
    const CircuitBreakerOptions& options) {
  Status status = Validate(options);
  if (!status.ok()) return status;
  return std::unique_ptr<CircuitBreaker>(new CircuitBreaker(options));
}

CircuitBreaker::CircuitBreaker(const CircuitBreakerOptions& options)
    : options_(options),
      word_(MakeWord(1, BreakerState::kClosed, 0)),
      slots_(static_cast<size_t>(options.half_open_max_calls)),
      listeners_(std::make_unique<Listeners>()) {
  if (options.window != WindowKind::kNone) {
    window_ = std::make_unique<internal::BreakerWindow>(options);
  }
  const std::string& label = options.metrics_name.empty() ? options.name : options.metrics_name;
  if (options.report_metrics && !label.empty()) {
    metrics_ = MetricsRegistry::Default().AttachBreaker(label, this, &reported_name_);
    metrics_->SetBreakerState(BreakerState::kClosed);
  }
}

void CircuitBreaker::RejectedOne() {
  rejected_.fetch_add(1, std::memory_order_relaxed);
  if (metrics_ != nullptr) metrics_->ShortCircuited(0);
}

CircuitBreaker::~CircuitBreaker() {
  // Before any member goes: a concurrent metrics snapshot may be reading us.
  if (metrics_ != nullptr) metrics_->DetachBreaker(this);
}

// ---------------------------------------------------------------------------
// Acquire

Admission CircuitBreaker::Acquire(TimePoint now) {
  const uint64_t word = word_.load(std::memory_order_acquire);
  const BreakerState mode = ModeOf(word);
  switch (mode) {
    case BreakerState::kClosed:
    case BreakerState::kDisabled:
    case BreakerState::kMetricsOnly: {
      Admission admission;
      admission.permit.generation = GenOf(word);
      admission.permit.acquired_at = now;
      admission.permit.valid = true;
      admission.state = mode;
      return admission;
    }
    case BreakerState::kForcedOpen: {
      RejectedOne();
      Admission admission;
      admission.retry_in = Duration::max();
      admission.state = mode;
      if (has_call_listeners_.load(std::memory_order_relaxed)) {
        NotifyCall(BreakerCallKind::kRejected, mode, Duration::zero(), false, now);
      }
      return admission;
    }
    case BreakerState::kOpen: {
      // Refusals during an outage stay lock-free too.
      const int64_t until = open_until_ns_.load(std::memory_order_acquire);
      const int64_t t = Nanos(now);
      if (t < until) {
        RejectedOne();
        Admission admission;
        admission.retry_in = Duration(until - t);
        admission.state = mode;
        if (has_call_listeners_.load(std::memory_order_relaxed)) {
          NotifyCall(BreakerCallKind::kRejected, mode, Duration::zero(), false, now);
        }
        return admission;
      }
      return AcquireSlow(now);
    }
    case BreakerState::kHalfOpen:
      return AcquireSlow(now);
  }
  return AcquireSlow(now);
}

Admission CircuitBreaker::Acquire(const Clock& clock) {
  const uint64_t word = word_.load(std::memory_order_acquire);
  const BreakerState mode = ModeOf(word);
  const bool timeless = mode == BreakerState::kClosed || mode == BreakerState::kDisabled ||
                        mode == BreakerState::kMetricsOnly;
  if (!timeless || options_.slow_call_duration ||
      has_call_listeners_.load(std::memory_order_relaxed)) {
    return Acquire(clock.Now());
  }
  Admission admission;
  admission.permit.generation = GenOf(word);
  admission.permit.acquired_at = kTimeNotRead;
  admission.permit.valid = true;
  admission.state = mode;
  return admission;
}

bool CircuitBreaker::RecordNeedsTime(const Permit& permit, CallResult result) const {
  if (!permit.valid) return false;
  return permit.probe || result == CallResult::kFailure || window_ != nullptr ||
         options_.slow_call_duration.has_value() ||
         has_call_listeners_.load(std::memory_order_relaxed);
}

Admission CircuitBreaker::AcquireSlow(TimePoint now) {
  Admission admission;
  Pending pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    uint64_t word = word_.load(std::memory_order_relaxed);
    BreakerState mode = ModeOf(word);
    if (mode == BreakerState::kOpen) {
      const int64_t until = open_until_ns_.load(std::memory_order_relaxed);
      if (Nanos(now) < until) {  // another thread reopened it meanwhile
        RejectedOne();
        admission.retry_in = Duration(until - Nanos(now));
        admission.state = mode;
      } else {
        SwitchLocked(BreakerState::kHalfOpen, "reset_timeout_elapsed", now, &pending);
        word = word_.load(std::memory_order_relaxed);
        mode = BreakerState::kHalfOpen;
      }
    } else if (mode == BreakerState::kHalfOpen && HalfOpenExpiredLocked(now, &pending)) {
      // Reopened at the limit; this call is refused even when that open
      // period is already over (one transition per call): the next probes.
      RejectedOne();
      mode = BreakerState::kOpen;
      const int64_t until = open_until_ns_.load(std::memory_order_relaxed);
      admission.retry_in = Duration(std::max<int64_t>(0, until - Nanos(now)));
    }
    admission.state = mode;
    if (mode == BreakerState::kOpen) {
      // Refused above.
    } else if (mode == BreakerState::kHalfOpen) {
      // Reclaim slots of permits that were never recorded, then take a free one.
      ProbeSlot* free_slot = nullptr;
      Duration earliest_expiry = Duration::max();
      for (ProbeSlot& slot : slots_) {
        if (slot.ticket != 0) {
          const Duration held = now - slot.acquired_at;
          if (held >= options_.permit_timeout) {
            slot.ticket = 0;
          } else {
            earliest_expiry = std::min(earliest_expiry, options_.permit_timeout - held);
          }
        }
        if (slot.ticket == 0 && free_slot == nullptr) free_slot = &slot;
      }
      if (free_slot == nullptr) {
        RejectedOne();
        admission.retry_in = earliest_expiry;
      } else {
        const uint32_t ticket = next_ticket_++;
        if (next_ticket_ == 0) next_ticket_ = 1;  // 0 marks a free slot
        free_slot->ticket = ticket;
        free_slot->acquired_at = now;
        admission.permit.generation = GenOf(word);
        admission.permit.acquired_at = now;
        admission.permit.ticket = ticket;
        admission.permit.slot = static_cast<uint16_t>(free_slot - slots_.data());
        admission.permit.probe = true;
        admission.permit.valid = true;
      }
    } else if (mode == BreakerState::kForcedOpen) {
      RejectedOne();
      admission.retry_in = Duration::max();
    } else {  // closed, disabled or metrics-only: a probe closed it meanwhile
      admission.permit.generation = GenOf(word);
      admission.permit.acquired_at = now;
      admission.permit.valid = true;
    }
  }
  Notify(pending);
  if (!admission.admitted() && has_call_listeners_.load(std::memory_order_relaxed)) {
    NotifyCall(BreakerCallKind::kRejected, admission.state, Duration::zero(), false, now);
  }
  return admission;
}

// ---------------------------------------------------------------------------
// Record

void CircuitBreaker::CountResult(CallResult result, bool slow) {
  switch (result) {
    case CallResult::kSuccess: successes_.fetch_add(1, std::memory_order_relaxed); break;
    case CallResult::kFailure: failures_.fetch_add(1, std::memory_order_relaxed); break;
    case CallResult::kIgnored: ignored_.fetch_add(1, std::memory_order_relaxed); return;
  }
  if (slow) slow_.fetch_add(1, std::memory_order_relaxed);
}

void CircuitBreaker::StaleOne() { stale_.fetch_add(1, std::memory_order_relaxed); }

void CircuitBreaker::Record(const Permit& permit, CallResult result, Duration call_duration,
                            TimePoint now) {
  if (!permit.valid) return;
  if (!has_call_listeners_.load(std::memory_order_relaxed)) {
    RecordImpl(permit, result, call_duration, now);
    return;
  }
  const BreakerState state = ModeOf(word_.load(std::memory_order_acquire));
  const bool fresh = RecordImpl(permit, result, call_duration, now);
  NotifyCall(static_cast<BreakerCallKind>(result), state, call_duration, !fresh, now);
}

bool CircuitBreaker::RecordImpl(const Permit& permit, CallResult result, Duration call_duration,
                                TimePoint now) {
  if (permit.probe) return RecordProbe(permit, result, call_duration, now);
  uint64_t word = word_.load(std::memory_order_acquire);
  if (GenOf(word) != permit.generation) {  // stale: changes nothing
    StaleOne();
    return false;
  }
  const BreakerState mode = ModeOf(word);
  const bool slow = options_.slow_call_duration && call_duration >= *options_.slow_call_duration;
  if (mode == BreakerState::kDisabled) {
    CountResult(result, slow);
    return true;
  }
  // Closed or metrics-only (the only other modes that issue non-probe permits).
  if (window_ == nullptr) {
    if (result == CallResult::kIgnored) {
      CountResult(result, slow);
      return true;
    }
    if (result == CallResult::kSuccess) {
      CountResult(result, slow);
      // The fast path: no write to the word unless a failure run must end.
      while (CountOf(word) != 0) {
        if (word_.compare_exchange_weak(word, MakeWord(permit.generation, mode, 0),
                                        std::memory_order_acq_rel, std::memory_order_acquire)) {
          break;
        }
        if (GenOf(word) != permit.generation) break;  // counted: it landed before the change
      }
      return true;
    }
    // A failure: extend the run, and trip under the lock when it is long enough.
    const uint64_t threshold = static_cast<uint64_t>(options_.failure_threshold);
    uint64_t count;
    for (;;) {
      count = std::min(CountOf(word) + 1, threshold);
      if (word_.compare_exchange_weak(word, MakeWord(permit.generation, mode, count),
                                      std::memory_order_acq_rel, std::memory_order_acquire)) {
        break;
      }
      if (GenOf(word) != permit.generation) {  // a transition won the race
        StaleOne();
        return false;
      }
    }
    CountResult(result, slow);
    if (count < threshold) return true;
    Pending pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      word = word_.load(std::memory_order_relaxed);
      if (GenOf(word) == permit.generation && CountOf(word) >= threshold) {
        TripLocked(word, "failure_threshold", now, &pending);
      }
    }
    Notify(pending);
    return true;
  }
  // With a window every result goes through the lock.
  Pending pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    word = word_.load(std::memory_order_relaxed);
    if (GenOf(word) != permit.generation) {
      StaleOne();
      return false;
    }
    CountResult(result, slow);
    RecordLocked(word, result, slow, now, &pending);
  }
  Notify(pending);
  return true;
}

void CircuitBreaker::RecordLocked(uint64_t word, CallResult result, bool slow, TimePoint now,
                                  Pending* pending) {
  if (result == CallResult::kIgnored) return;
  const bool failure = result == CallResult::kFailure;
  const uint64_t threshold = static_cast<uint64_t>(options_.failure_threshold);
  const uint64_t cap = threshold > 0 ? threshold : kMaxFailureThreshold;
  const uint64_t count = failure ? std::min(CountOf(word) + 1, cap) : 0;
  word = MakeWord(GenOf(word), ModeOf(word), count);
  // Every writer of the word holds mu_ when a window exists, so a store is enough.
  word_.store(word, std::memory_order_release);
  window_->Add(now, failure, slow);

  if (threshold > 0 && count >= threshold) {
    TripLocked(word, "failure_threshold", now, pending);
    return;
  }
  const internal::BreakerWindow::Totals totals = window_->Get(now);
  if (totals.calls < static_cast<uint64_t>(options_.minimum_calls)) return;
  const double calls = static_cast<double>(totals.calls);
  if (static_cast<double>(totals.failures) * 100.0 >= options_.failure_rate_threshold * calls) {
    TripLocked(word, "failure_rate", now, pending);
  } else if (options_.slow_call_duration &&
             static_cast<double>(totals.slow) * 100.0 >= options_.slow_call_rate_threshold * calls) {
    TripLocked(word, "slow_call_rate", now, pending);
  }
}

void CircuitBreaker::NoteTripLocked(uint64_t word, BreakerState from, const char* reason,
                                    TimePoint at) {
  BreakerTrip trip;
  trip.from = from;
  trip.reason = reason;
  trip.at = at;
  trip.consecutive_failures = static_cast<int>(CountOf(word));
  if (window_) {
    const internal::BreakerWindow::Totals totals = window_->Get(at);
    trip.window_calls = totals.calls;
    if (totals.calls > 0) {
      const double calls = static_cast<double>(totals.calls);
      trip.window_failure_rate = 100.0 * static_cast<double>(totals.failures) / calls;
      trip.window_slow_rate = 100.0 * static_cast<double>(totals.slow) / calls;
    }
  }
  last_trip_ = trip;
}

void CircuitBreaker::TripLocked(uint64_t word, const char* reason, TimePoint now,
                                Pending* pending) {
  if (ModeOf(word) == BreakerState::kMetricsOnly) {
    // Report the trip it would make, then start a fresh evaluation period so
    // it is reported once per run or window rather than on every call.
    NoteTripLocked(word, BreakerState::kMetricsOnly, MetricsOnlyReason(reason), now);
    *pending = PendingTransition{BreakerState::kClosed, BreakerState::kOpen,
                                 MetricsOnlyReason(reason), now};
    if (window_) window_->Clear();
    word_.store(MakeWord(GenOf(word), BreakerState::kMetricsOnly, 0), std::memory_order_release);
    return;
  }
  NoteTripLocked(word, ModeOf(word), reason, now);
  SwitchLocked(BreakerState::kOpen, reason, now, pending);
}

bool CircuitBreaker::RecordProbe(const Permit& permit, CallResult result, Duration call_duration,
                                 TimePoint now) {
  Pending pending;
  bool fresh = true;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A result after the half-open limit: the breaker reopens at the limit,
    // which ends the permit's generation, so the result is stale.
    if (GenOf(word_.load(std::memory_order_relaxed)) == permit.generation) {
      HalfOpenExpiredLocked(now, &pending);
    }
    const uint64_t word = word_.load(std::memory_order_relaxed);
    // Also stale: a newer generation, a slot reclaimed after its permit
    // expired, or a result that arrives at or after the permit_timeout
    // (which frees the slot but is discarded).
    const bool current = GenOf(word) == permit.generation &&
                         ModeOf(word) == BreakerState::kHalfOpen &&
                         permit.slot < slots_.size() &&
                         slots_[permit.slot].ticket == permit.ticket;
    if (current) slots_[permit.slot].ticket = 0;
    if (!current || now - permit.acquired_at >= options_.permit_timeout) {
      StaleOne();
      fresh = false;
    } else {
      const bool slow =
          options_.slow_call_duration && call_duration >= *options_.slow_call_duration;
      CountResult(result, slow);
      if (result == CallResult::kIgnored) {
        // Frees the slot only.
      } else if (result == CallResult::kFailure || slow) {
        NoteTripLocked(word, BreakerState::kHalfOpen, "probe_failed", now);
        SwitchLocked(BreakerState::kOpen, "probe_failed", now, &pending);
      } else if (++half_open_successes_ >= options_.half_open_max_calls) {
        SwitchLocked(BreakerState::kClosed, "probe_succeeded", now, &pending);
      }
    }
  }
  Notify(pending);
  return fresh;
}

// ---------------------------------------------------------------------------
// Transitions

Duration CircuitBreaker::OpenPeriodLocked() const {
  const double base = static_cast<double>(options_.reset_timeout.count());
  const Duration cap_duration = std::max(options_.max_reset_timeout, options_.reset_timeout);
  const double cap = static_cast<double>(cap_duration.count());
  // pow saturates to inf for large exponents, which the cap then absorbs.
  const double grown = base * std::pow(options_.reset_timeout_multiplier, consecutive_trips_);
  if (!(grown < cap)) return cap_duration;
  return std::max(Duration(static_cast<Duration::rep>(grown)), options_.reset_timeout);
}

void CircuitBreaker::SwitchLocked(BreakerState to, const char* reason, TimePoint at,
                                  Pending* pending, std::optional<TimePoint> open_until) {
  const uint64_t old = word_.load(std::memory_order_relaxed);
  for (ProbeSlot& slot : slots_) slot.ticket = 0;  // stale probes' slots are freed here
  half_open_successes_ = 0;
  if (window_) window_->Clear();
  if (to == BreakerState::kOpen) {
    TimePoint until;
    if (open_until) {
      until = *open_until;  // a manual open: not a trip, no growth
      consecutive_trips_ = 0;
    } else {
      until = SaturatingAdd(at, OpenPeriodLocked());
      if (consecutive_trips_ < std::numeric_limits<int>::max()) ++consecutive_trips_;
    }
    open_until_ns_.store(Nanos(until), std::memory_order_relaxed);
  } else if (to == BreakerState::kHalfOpen) {
    const int64_t limit = options_.max_half_open_duration
                              ? Nanos(SaturatingAdd(at, *options_.max_half_open_duration))
                              : std::numeric_limits<int64_t>::max();
    half_open_until_ns_.store(limit, std::memory_order_relaxed);
  } else if (to == BreakerState::kClosed) {
    consecutive_trips_ = 0;
  }
  // The release store publishes open_until_ns_ with the new mode.
  word_.store(MakeWord(GenOf(old) + 1, to, 0), std::memory_order_release);
  *pending = PendingTransition{ModeOf(old), to, reason, at};
  if (to == BreakerState::kOpen) {
    (*pending)->open_until = TimePoint{Duration(open_until_ns_.load(std::memory_order_relaxed))};
  }
}

bool CircuitBreaker::HalfOpenExpiredLocked(TimePoint now, Pending* pending) {
  const uint64_t word = word_.load(std::memory_order_relaxed);
  if (ModeOf(word) != BreakerState::kHalfOpen) return false;
  const int64_t limit = half_open_until_ns_.load(std::memory_order_relaxed);
  if (Nanos(now) < limit) return false;
  // Stamped at the limit, so the open period (and the event) do not depend
  // on when the next call happened to notice.
  const TimePoint at{Duration(limit)};
  NoteTripLocked(word, BreakerState::kHalfOpen, "half_open_timeout", at);
  SwitchLocked(BreakerState::kOpen, "half_open_timeout", at, pending);
  return true;
}

Status CircuitBreaker::ForceOpenUntil(TimePoint until, TimePoint now) {
  if (!(until > now)) {
    return InvalidArgumentError("the end of a forced open period must be after now, got " +
                                FormatSeconds(until - now) + " from now");
  }
  Pending pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    SwitchLocked(BreakerState::kOpen, "forced_open_until", now, &pending, until);
  }
  Notify(pending);
  return OkStatus();
}

Status CircuitBreaker::ForceOpenFor(Duration duration, TimePoint now) {
  if (duration <= Duration::zero()) {
    return InvalidArgumentError("duration must be > 0, got " + FormatSeconds(duration));
  }
  return ForceOpenUntil(SaturatingAdd(now, duration), now);
}

Result<bool> CircuitBreaker::ApplyShared(BreakerState to, TimePoint open_until, TimePoint now) {
  if (to != BreakerState::kOpen && to != BreakerState::kClosed) {
    return InvalidArgumentError(std::string("a shared transition goes to open or closed, got ") +
                                BreakerStateName(to));
  }
  if (to == BreakerState::kOpen && !(open_until > now)) {
    return InvalidArgumentError("the end of a shared open period must be after now, got " +
                                FormatSeconds(open_until - now) + " from now");
  }
  Pending pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const BreakerState mode = ModeOf(word_.load(std::memory_order_relaxed));
    if (mode == BreakerState::kForcedOpen || mode == BreakerState::kDisabled ||
        mode == BreakerState::kMetricsOnly) {
      return false;
    }
    if (to == BreakerState::kClosed) {
      if (mode == BreakerState::kClosed) return false;
      SwitchLocked(BreakerState::kClosed, "shared_close", now, &pending);
    } else {
      // SwitchLocked resets the growth for an explicit end; keep it as it was.
      const int trips = consecutive_trips_;
      SwitchLocked(BreakerState::kOpen, "shared_open", now, &pending, open_until);
      consecutive_trips_ = trips;
    }
  }
  Notify(pending);
  return true;
}

void CircuitBreaker::HalfOpen(TimePoint now) {
  ManualSwitch(BreakerState::kHalfOpen, "half_open", now);
}

void CircuitBreaker::ManualSwitch(BreakerState to, const char* reason, TimePoint now) {
  Pending pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ModeOf(word_.load(std::memory_order_relaxed)) == to) return;
    consecutive_trips_ = 0;
    SwitchLocked(to, reason, now, &pending);
  }
  Notify(pending);
}

void CircuitBreaker::ForceOpen(TimePoint now) {
  ManualSwitch(BreakerState::kForcedOpen, "forced_open", now);
}

void CircuitBreaker::Disable(TimePoint now) {
  ManualSwitch(BreakerState::kDisabled, "disabled", now);
}

void CircuitBreaker::MetricsOnly(TimePoint now) {
  ManualSwitch(BreakerState::kMetricsOnly, "metrics_only", now);
}

void CircuitBreaker::Reset(TimePoint now) {
  Pending pending;
  {
    std::lock_guard<std::mutex> lock(mu_);
    const BreakerState from = ModeOf(word_.load(std::memory_order_relaxed));
    consecutive_trips_ = 0;
    SwitchLocked(BreakerState::kClosed, "reset", now, &pending);
    successes_.store(0, std::memory_order_relaxed);
    failures_.store(0, std::memory_order_relaxed);
    ignored_.store(0, std::memory_order_relaxed);
    slow_.store(0, std::memory_order_relaxed);
    rejected_.store(0, std::memory_order_relaxed);
    stale_.store(0, std::memory_order_relaxed);
    last_trip_.reset();
    if (from == BreakerState::kClosed) pending.reset();
  }
  Notify(pending);
}

// ---------------------------------------------------------------------------
// Queries

BreakerState CircuitBreaker::state(TimePoint now) const {
  const BreakerState mode = ModeOf(word_.load(std::memory_order_acquire));
  if (mode == BreakerState::kOpen &&
      Nanos(now) >= open_until_ns_.load(std::memory_order_acquire)) {
    return BreakerState::kHalfOpen;
  }
  // Past the half-open limit it has reopened (the next Acquire makes the switch).
  if (mode == BreakerState::kHalfOpen &&
      Nanos(now) >= half_open_until_ns_.load(std::memory_order_acquire)) {
    return BreakerState::kOpen;
  }
  return mode;
}

Duration CircuitBreaker::TimeUntilProbe(TimePoint now) const {
  std::lock_guard<std::mutex> lock(mu_);
  switch (ModeOf(word_.load(std::memory_order_relaxed))) {
    case BreakerState::kClosed:
    case BreakerState::kDisabled:
    case BreakerState::kMetricsOnly:
      return Duration::zero();
    case BreakerState::kForcedOpen:
      return Duration::max();
    case BreakerState::kOpen: {
      const int64_t left = open_until_ns_.load(std::memory_order_relaxed) - Nanos(now);
      return left > 0 ? Duration(left) : Duration::zero();
    }
    case BreakerState::kHalfOpen: {
      const int64_t limit = half_open_until_ns_.load(std::memory_order_relaxed);
      if (Nanos(now) >= limit) {  // reopened at the limit: the open period that follows
        const int64_t end = Nanos(SaturatingAdd(TimePoint(Duration(limit)), OpenPeriodLocked()));
        return end > Nanos(now) ? Duration(end - Nanos(now)) : Duration::zero();
      }
      Duration earliest = Duration::max();
      for (const ProbeSlot& slot : slots_) {
        if (slot.ticket == 0) return Duration::zero();
        const Duration held = now - slot.acquired_at;
        if (held >= options_.permit_timeout) return Duration::zero();
        earliest = std::min(earliest, options_.permit_timeout - held);
      }
      return earliest;
    }
  }
  return Duration::zero();
}

BreakerCounts CircuitBreaker::counts(TimePoint now) const {
  BreakerCounts c;
  std::lock_guard<std::mutex> lock(mu_);
  c.successes = successes_.load(std::memory_order_relaxed);
  c.failures = failures_.load(std::memory_order_relaxed);
  c.ignored = ignored_.load(std::memory_order_relaxed);
  c.slow = slow_.load(std::memory_order_relaxed);
  c.rejected = rejected_.load(std::memory_order_relaxed);
  c.stale = stale_.load(std::memory_order_relaxed);
  c.calls = c.successes + c.failures + c.ignored;
  const uint64_t word = word_.load(std::memory_order_acquire);
  const BreakerState mode = ModeOf(word);
  if (mode == BreakerState::kClosed || mode == BreakerState::kMetricsOnly) {
    c.consecutive_failures = static_cast<int>(CountOf(word));
  }
  if (window_) {
    const internal::BreakerWindow::Totals totals = window_->Get(now);
    c.window_calls = totals.calls;
    if (totals.calls > 0) {
      c.window_failure_rate = 100.0 * static_cast<double>(totals.failures) /
                              static_cast<double>(totals.calls);
      c.window_slow_rate =
          100.0 * static_cast<double>(totals.slow) / static_cast<double>(totals.calls);
    }
  }
  return c;
}

std::optional<BreakerTrip> CircuitBreaker::last_trip() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_trip_;
}

size_t CircuitBreaker::HeapBytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  size_t bytes = options_.name.capacity() > 15 ? options_.name.capacity() + 1 : 0;
  bytes += slots_.capacity() * sizeof(ProbeSlot);
  bytes += sizeof(Listeners);
  if (window_) bytes += sizeof(internal::BreakerWindow) + window_->HeapBytes();
  return bytes;
}

std::string CircuitBreaker::OpenMessage(const std::string& name, Duration retry_in) {
  if (retry_in == Duration::max()) {
    return "circuit breaker '" + name + "' is forced open; no probe until it is reset";
  }
  return "circuit breaker '" + name + "' is open; next probe in " + FormatSeconds(retry_in);
}

}  // namespace v0
}  // namespace mulligan
