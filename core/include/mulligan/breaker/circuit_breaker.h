// mulligan/breaker/circuit_breaker.h — a per-dependency circuit breaker.
//
// The breaker is a state machine, like the retry engine: it never sleeps,
// never starts a thread or a timer and never calls user code except its own
// listeners. Time is passed in (`now`), and the state is derived lazily from
// it (DESIGN.md section 4, "Circuit breaker"):
//
//   Admission admission = breaker.Acquire(clock.Now());
//   if (!admission.admitted()) return CircuitOpen(admission.retry_in);
//   TimePoint start = clock.Now();
//   Outcome outcome = RunOneAttempt();                     // no lock held here
//   breaker.Record(admission.permit, ResultFor(policy.Classify(outcome)),
//                  clock.Now() - start, clock.Now());
//
// States: closed (admits; counts), open (refuses until the reset timeout has
// elapsed), half-open (admits at most half_open_max_calls concurrent probes),
// plus the manual states forced-open, disabled and metrics-only.
//
// Cost: in the closed state without a sliding window, Acquire is one atomic
// load and Record(kSuccess) one atomic load plus one relaxed counter increment
// (no write to shared breaker state when the consecutive-failure count is
// already 0). A mutex is taken only for sliding windows, transitions and
// half-open bookkeeping, and never while the caller's operation runs.

#ifndef MULLIGAN_BREAKER_CIRCUIT_BREAKER_H_
#define MULLIGAN_BREAKER_CIRCUIT_BREAKER_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

class Metrics;  // metrics.h

// The state of a breaker. Values are pinned (they will cross the C ABI);
// append only.
enum class BreakerState : int {
  // Calls are admitted and their results counted; trips on the configured
  // conditions.
  kClosed = 0,
  // Calls are refused until the reset timeout has elapsed.
  kOpen = 1,
  // At most half_open_max_calls probes are admitted at a time; a probe failure
  // reopens, half_open_max_calls probe successes close.
  kHalfOpen = 2,
  // Manual: every call is refused until Reset() (or another manual state).
  kForcedOpen = 3,
  // Manual: every call is admitted and counted; never trips.
  kDisabled = 4,
  // Manual: every call is admitted and counted; the closed-state trip
  // conditions are evaluated and listeners are told of the trip the breaker
  // would make (reason prefixed "metrics_only:"), but nothing is refused.
  kMetricsOnly = 5,
};

// Returns "closed", "open", "half_open", "forced_open", "disabled" or
// "metrics_only"; "unknown" for any other value.
const char* BreakerStateName(BreakerState state);

// The kind of sliding window used for rate-based tripping.
enum class WindowKind : int {
  // No window: only consecutive failures trip the breaker.
  kNone = 0,
  // The last window_size recorded calls.
  kCount = 1,
  // The calls recorded during the last window_duration, kept in
  // window_buckets buckets of window_duration / window_buckets each; a whole
  // bucket expires at once.
  kTime = 2,
};

// Plain options; validated by CircuitBreaker::Create.
struct CircuitBreakerOptions {
  // The breaker's name, used in listener events, errors and metrics labels.
  // Any text without control characters (bytes 0x00-0x1f and 0x7f; they
  // would forge log lines), else Create returns kInvalidArgument.
  // BreakerRegistry sets it to the key. Default empty.
  std::string name;

  // Consecutive failures that trip a closed breaker. 0 disables this
  // condition. Range [0, 1'000'000]. Default 5.
  int failure_threshold = 5;

  // Rate-based tripping. At least one trip condition must be enabled:
  // failure_threshold > 0 or window != kNone. Default kNone.
  WindowKind window = WindowKind::kNone;
  // kCount: the number of most recent calls kept. Range [1, 1'000'000].
  // Default 100.
  int window_size = 100;
  // kTime: the span of the window. Must be > 0. Default 60 s.
  Duration window_duration = std::chrono::seconds(60);
  // kTime: the number of buckets the span is split into. Range [1, 3600],
  // and window_duration / window_buckets must be at least 1 ns. Default 10.
  int window_buckets = 10;
  // The window failure rate, in percent, that trips the breaker (failures
  // as a share of successes + failures; ignored calls are not in the window).
  // Range (0, 100]. Default 50.
  double failure_rate_threshold = 50.0;
  // Calls that must be in the window before any rate is evaluated.
  // Range [1, window_size] for kCount, >= 1 for kTime. Default 10.
  int minimum_calls = 10;
  // Calls (successes or failures) lasting at least this long are slow.
  // Requires a window; must be > 0 when set. Default: unset (no slow calls).
  std::optional<Duration> slow_call_duration;
  // The window slow-call rate, in percent, that trips the breaker (only with
  // slow_call_duration). Range (0, 100]. Default 100.
  double slow_call_rate_threshold = 100.0;

  // How long the breaker stays open after its first trip. Must be > 0.
  // Default 30 s.
  Duration reset_timeout = std::chrono::seconds(30);
  // Growth of the open period on consecutive trips without a close in
  // between: the n-th consecutive trip (n = 0 for the first) stays open
  // reset_timeout * multiplier^n, capped at max_reset_timeout. 1 means no
  // growth. Must be finite and >= 1. Default 1.
  double reset_timeout_multiplier = 1.0;
  // Cap of the grown open period. With growth (multiplier > 1) it must be
  // >= reset_timeout; without growth it is unused. Default 5 min.
  Duration max_reset_timeout = std::chrono::minutes(5);

  // Probes admitted at the same time in the half-open state; also the number
  // of successful probes that close the breaker. Range [1, 65'535]. Default 1.
  int half_open_max_calls = 1;
  // The longest a breaker stays half-open: one that has not closed this long
  // after it became half-open reopens (reason "half_open_timeout"), its open
  // period starting at that instant, so probes that never return cannot keep
  // it half-open (resilience4j's maxWaitDurationInHalfOpenState). Must be
  // > 0 when set. Default: unset (no limit; probe permits still expire
  // after permit_timeout).
  std::optional<Duration> max_half_open_duration;

  // A half-open probe permit that is never recorded stops holding its slot
  // this long after it was issued (the slot is reclaimed by a later Acquire;
  // a Record arriving after it is discarded). Must be > 0. Default 60 s.
  Duration permit_timeout = std::chrono::seconds(60);

  // Report state changes, the current state and refusals to
  // MetricsRegistry::Default() (metrics.h) under metrics_name, or under
  // `name` when metrics_name is empty. A breaker with neither reports
  // nothing. Default true.
  bool report_metrics = true;
  std::string metrics_name;
};

// The result of one call, as far as the breaker is concerned.
enum class CallResult : int {
  // The call succeeded.
  kSuccess = 0,
  // The call failed in a way that says the dependency is unhealthy: a
  // retryable error, a timeout, a 5xx. Pass kFailure for timeouts.
  kFailure = 1,
  // The call ended with an error that says nothing about the dependency's
  // health (a terminal client error such as a 404, a cancellation): neither
  // a success nor a failure, but it frees a half-open probe slot.
  kIgnored = 2,
};

// Returns "success", "failure" or "ignored".
const char* CallResultName(CallResult result);

// Maps a retry-policy classification to a breaker result: success ->
// kSuccess, retryable -> kFailure, terminal -> kIgnored (DESIGN.md: only
// retryable-class failures count).
CallResult ResultFor(Classification classification);

// A permission to make one call, returned by Acquire and handed back to
// Record. A small copyable value; it holds no lock and no reference.
struct Permit {
  // The breaker generation it was issued in. Every transition bumps the
  // generation, so a Record with a permit from an earlier generation changes
  // nothing.
  uint64_t generation = 0;
  // When the permit was issued (the `now` given to Acquire).
  TimePoint acquired_at;
  // Half-open probes only: identifies the probe slot and this use of it.
  uint32_t ticket = 0;
  uint16_t slot = 0;
  // True for a half-open probe.
  bool probe = false;
  // False for a default-constructed permit or a refusal; Record ignores it.
  bool valid = false;
};

// The answer of Acquire: a permit, or a refusal with the time until the next
// probe is possible.
struct Admission {
  Permit permit;
  // When refused: the time until a call may be admitted again, measured from
  // the `now` given to Acquire. Open: until the reset timeout elapses (0 when
  // it just did). Half-open with every slot taken: until the earliest
  // outstanding probe permit expires (an upper bound; a probe result usually
  // frees the slot sooner). Forced open: Duration::max(). Zero when admitted.
  Duration retry_in = Duration::zero();
  // The state the breaker was in when it answered (after any lazy
  // open -> half-open switch this call made).
  BreakerState state = BreakerState::kClosed;

  bool admitted() const { return permit.valid; }
};

// A state change, as given to listeners.
struct BreakerTransition {
  // The breaker's name. Valid only during the listener call.
  std::string_view name;
  BreakerState from = BreakerState::kClosed;
  BreakerState to = BreakerState::kClosed;
  // Static text: "failure_threshold", "failure_rate", "slow_call_rate",
  // "reset_timeout_elapsed", "probe_succeeded", "probe_failed",
  // "half_open_timeout", "forced_open", "forced_open_until", "half_open",
  // "disabled", "metrics_only", "reset", in the
  // metrics-only state "metrics_only:failure_threshold",
  // "metrics_only:failure_rate", "metrics_only:slow_call_rate", and for a
  // transition another process made (ApplyShared) "shared_open" and
  // "shared_close".
  const char* reason = "";
  // The `now` of the call that made the transition.
  TimePoint at;
  // When `to` is kOpen: the end of the open period (the instant it turns
  // half-open); otherwise the default TimePoint. (Added in 0.6.)
  TimePoint open_until{};
};

// Receives transitions. Called after the breaker's lock is released, on the
// thread whose Acquire/Record/manual call caused the transition; it may call
// back into the breaker. Must not throw. With several threads making
// transitions at once, listeners may observe them out of order.
using BreakerListener = std::function<void(const BreakerTransition&)>;

// Counters, for metrics. Cumulative counters cover results recorded since
// creation or the last Reset(). A result from a stale permit (issued before
// a transition, or a half-open probe recorded after its permit_timeout) is
// counted in `stale` only: it changes no state and no other counter.
struct BreakerCounts {
  // Recorded results: successes + failures + ignored.
  uint64_t calls = 0;
  uint64_t successes = 0;
  uint64_t failures = 0;
  uint64_t ignored = 0;
  // Recorded successes and failures that lasted at least slow_call_duration.
  uint64_t slow = 0;
  // Refused Acquire calls.
  uint64_t rejected = 0;
  // The current run of consecutive failures in the closed (or metrics-only)
  // state.
  int consecutive_failures = 0;
  // Calls currently in the sliding window (0 without a window).
  uint64_t window_calls = 0;
  // The window's failure and slow-call rates in percent, 0 when the window
  // is empty or absent.
  double window_failure_rate = 0.0;
  double window_slow_rate = 0.0;
  // Results recorded with a stale permit (see above); not in `calls`.
  uint64_t stale = 0;
};

// What the breaker's statistics were when it last opened, so an operator can
// see why it did after the window has been cleared by the transition.
struct BreakerTrip {
  // The state it opened from: kClosed for a trip, kHalfOpen for a failed
  // probe, kMetricsOnly for the trip a metrics-only breaker would make.
  BreakerState from = BreakerState::kClosed;
  // The transition's reason (static text, as BreakerTransition::reason).
  const char* reason = "";
  // The `now` of the call that tripped it.
  TimePoint at;
  // The consecutive-failure run and the window's figures (as in
  // BreakerCounts) just before the transition cleared them. Rates are in
  // percent; the window figures are 0 without a window.
  int consecutive_failures = 0;
  uint64_t window_calls = 0;
  double window_failure_rate = 0.0;
  double window_slow_rate = 0.0;
};

// What one call did, as given to call listeners (resilience4j's
// CircuitBreakerEvent kinds onSuccess, onError, onIgnoredError and
// onCallNotPermitted). Values are pinned (they cross the C ABI); append only.
enum class BreakerCallKind : int {
  // A result recorded as CallResult::kSuccess.
  kSuccess = 0,
  // A result recorded as CallResult::kFailure.
  kFailure = 1,
  // A result recorded as CallResult::kIgnored.
  kIgnored = 2,
  // An Acquire that was refused.
  kRejected = 3,
};

// Returns "success", "failure", "ignored" or "rejected"; "unknown" otherwise.
const char* BreakerCallKindName(BreakerCallKind kind);

// One call's event, as given to call listeners.
struct BreakerCallEvent {
  // The breaker's name. Valid only during the listener call.
  std::string_view name;
  BreakerCallKind kind = BreakerCallKind::kSuccess;
  // The state the breaker was in when it answered (Acquire) or when the
  // result arrived (Record, before any transition the result caused).
  BreakerState state = BreakerState::kClosed;
  // Results only: the call's duration as given to Record; zero for kRejected.
  Duration duration = Duration::zero();
  // Results only: true when the permit was stale (the result changed nothing).
  bool stale = false;
  // The `now` given to Acquire or Record.
  TimePoint at;
};

// Receives call events, on the thread of the Acquire or Record, after the
// breaker's lock is released and after the transition listeners of the same
// call. Must not throw (an exception is caught and dropped). With several
// threads, events may be observed out of order.
using BreakerCallListener = std::function<void(const BreakerCallEvent&)>;

namespace internal {
struct BreakerWindow;
}  // namespace internal

// A circuit breaker for one dependency.
//
// Thread-safety: every method is thread-safe. Acquire and Record are short
// and never block on each other for long; no lock is held between them.
class CircuitBreaker {
 public:
  // Validates `options` and creates a closed breaker. kInvalidArgument names
  // the first bad field ("failure_rate_threshold must be in (0, 100], got 0").
  static Result<std::unique_ptr<CircuitBreaker>> Create(const CircuitBreakerOptions& options);
  // Returns the status Create would return for `options` (OK when valid).
  static Status Validate(const CircuitBreakerOptions& options);

  // Not copyable or movable: permits and listeners refer to this object, and
  // the atomics and mutex cannot move.
  CircuitBreaker(const CircuitBreaker&) = delete;
  CircuitBreaker& operator=(const CircuitBreaker&) = delete;
  ~CircuitBreaker();

  // Asks to make one call at `now`. Returns a permit, or a refusal with the
  // time until the next probe. The first Acquire at or after the end of the
  // open period switches the breaker to half-open (exactly once, even when
  // threads race) and takes a probe slot. A refusal increments `rejected`.
  Admission Acquire(TimePoint now);

  // Acquire, reading `clock` only when the answer depends on the time: a
  // closed, disabled or metrics-only breaker that measures no call durations
  // (no slow_call_duration, no call listener) issues its permit without a
  // reading, and the permit's acquired_at is then kTimeNotRead. Otherwise the
  // same as Acquire(clock.Now()). For callers that pay for every reading (a
  // steady-clock read costs about 70 ns on a virtual machine without a fast
  // TSC; the C ABI's mulligan_breaker_acquire). (Added in 0.6.)
  Admission Acquire(const Clock& clock);

  // The acquired_at of a permit issued without a clock reading.
  static constexpr TimePoint kTimeNotRead = TimePoint::min();

  // Whether Record(permit, result, ...) would use its call_duration or its
  // now: false only for a success or an ignored result of a non-probe permit
  // of a breaker without a window, slow_call_duration or call listener (that
  // Record is a counter increment), so a caller may then pass any time and
  // skip the clock. A call listener added between this answer and the
  // Record sees that call with the time passed. (Added in 0.6.)
  bool RecordNeedsTime(const Permit& permit, CallResult result) const;

  // Records the result of the call made under `permit`, which took
  // `call_duration` and ended at `now`. Changes nothing for an invalid permit
  // or one from an earlier generation. A half-open probe's result always
  // frees its slot; its success counts towards closing, its failure (or, with
  // slow_call_duration, a slow success) reopens. Record of a probe at or
  // after its permit_timeout only frees the slot (the result is discarded).
  void Record(const Permit& permit, CallResult result, Duration call_duration, TimePoint now);

  // Returns the state at `now` without changing anything: an open breaker
  // whose open period has ended reports kHalfOpen even before any Acquire has
  // made the switch (and before listeners have been told of it).
  BreakerState state(TimePoint now) const;

  // Returns the time from `now` until a call may be admitted: 0 when one
  // would be admitted now; for an open breaker the rest of the open period;
  // for a half-open breaker with every slot taken the time until the earliest
  // outstanding probe permit expires; Duration::max() when forced open.
  Duration TimeUntilProbe(TimePoint now) const;

  // Returns the counters at `now` (the time window is evaluated at `now`).
  BreakerCounts counts(TimePoint now) const;

  // Returns the figures at the breaker's last transition to kOpen (or the
  // last would-be trip of a metrics-only breaker), or nullopt when it never
  // opened since creation or the last Reset(). Kept across later
  // transitions, so it stays readable after the breaker closed again.
  std::optional<BreakerTrip> last_trip() const;

  // The name this breaker's metrics are reported under in
  // MetricsRegistry::Default(): metrics_name (or name), or, when another
  // live breaker already reports under it, the first free "<label>#2",
  // "<label>#3", ... (so one metrics name never mixes two breakers). Empty
  // when the breaker reports no metrics.
  const std::string& reported_name() const { return reported_name_; }

  const std::string& name() const { return options_.name; }
  const CircuitBreakerOptions& options() const { return options_; }
  // Returns about how many heap bytes this breaker owns besides sizeof(CircuitBreaker)
  // (name, probe slots, window, listener list; not the listeners' captures).
  size_t HeapBytes() const;

  // Manual control. Each switches to its state (a new generation: outstanding
  // permits become stale, probe slots are freed, consecutive failures, the
  // window and the reset-timeout growth are cleared) and notifies listeners
  // with reason "forced_open", "disabled" or "metrics_only", stamped `now`
  // (pass the injected clock's time when using a FakeClock). Calling one in
  // its own state does nothing. A manual state lasts until another manual call.
  void ForceOpen(TimePoint now = SystemClock::Default()->Now());
  // Opens the breaker until `until` (ForceOpenFor: for `duration` from
  // `now`), whatever its state: a new generation, as the manual calls above,
  // but the state is kOpen, so at `until` it turns half-open and probes as
  // after a trip (pybreaker's open() followed by its reset timeout; Polly's
  // Isolate with an end). Notifies listeners with reason "forced_open_until".
  // The reset-timeout growth restarts (this is not a trip), and last_trip()
  // is kept. Errors: kInvalidArgument when `until` is not after `now`
  // (duration <= 0); nothing changes then.
  Status ForceOpenUntil(TimePoint until, TimePoint now = SystemClock::Default()->Now());
  Status ForceOpenFor(Duration duration, TimePoint now = SystemClock::Default()->Now());
  // Applies a transition that another process's breaker of the same name
  // made (the shared breaker of mulligan/state/redis_breaker.h). (Added in
  // 0.6.)
  //   to == kOpen:   opens until `open_until` as a normal open period (not a
  //                  manual state): at `open_until` it turns half-open and
  //                  probes as after its own trip. Reason "shared_open". The
  //                  reset-timeout growth is not advanced and last_trip() is
  //                  kept (the trip was another process's).
  //   to == kClosed: closes (a new generation; the window and the
  //                  consecutive failures are cleared) but, unlike Reset(),
  //                  keeps the cumulative counters and last_trip(). Reason
  //                  "shared_close". Does nothing when already closed.
  // A breaker in a manual state (forced open, disabled, metrics-only) is a
  // local operator's decision and is left alone. Returns true when the state
  // changed. Errors: kInvalidArgument for another `to`, or for kOpen with
  // `open_until` not after `now` (nothing changes then).
  Result<bool> ApplyShared(BreakerState to, TimePoint open_until, TimePoint now);
  // Switches to half-open at once, from any state (a new generation; the
  // probe slots are free), as resilience4j's transitionToHalfOpenState.
  // Notifies listeners with reason "half_open"; does nothing when already
  // half-open.
  void HalfOpen(TimePoint now = SystemClock::Default()->Now());
  void Disable(TimePoint now = SystemClock::Default()->Now());
  void MetricsOnly(TimePoint now = SystemClock::Default()->Now());
  // Returns to closed from any state: a new generation, every counter
  // (cumulative ones included) and the window cleared, the reset-timeout
  // growth restarted. Notifies listeners (from the previous state, reason
  // "reset") unless it was already closed.
  void Reset(TimePoint now = SystemClock::Default()->Now());

  // Adds a listener; returns its id (never 0). Listeners added during a
  // notification take effect from the next transition.
  uint64_t AddListener(BreakerListener listener);
  // Removes the listener with `id`; returns false when there is none. A
  // notification already in progress on another thread may still call it.
  bool RemoveListener(uint64_t id);

  // Adds a call listener (BreakerCallEvent: success, failure, ignored,
  // rejected); returns its id (never 0; ids are shared with AddListener).
  // Without call listeners a call pays one relaxed atomic load for them.
  uint64_t AddCallListener(BreakerCallListener listener);
  // Removes the call listener with `id`; false when there is none.
  bool RemoveCallListener(uint64_t id);

  // Runs `fn()` under the breaker, reading time from `clock`. Returns a
  // Result<T> holding the value of `fn` (a Status for a void `fn`; a `fn`
  // that returns a Status or Result<U> has it passed through unchanged), or a
  // kCircuitOpen status whose message gives the seconds until the next probe
  // ("circuit breaker 'db' is open; next probe in 12.500 s") when refused.
  // A value (or an OK Status/Result) records kSuccess; a non-OK Status/Result
  // records kFailure; an exception records kFailure and is rethrown. Callers
  // that need classification (a 404 is not a failure) use Acquire/Record.
  template <typename F>
  auto Execute(F&& fn, Clock& clock = *SystemClock::Default());

  // Returns the kCircuitOpen status for a refused `admission`, as Execute and
  // RetryCall report it: "circuit breaker 'db' is open; next probe in
  // 12.500 s" (or "... is forced open; no probe until it is reset").
  Status OpenStatus(const Admission& admission) const {
    return CircuitOpenError(OpenMessage(name(), admission.retry_in));
  }

 private:
  struct Listeners;
  // A transition decided under mu_ and announced after it is released. One
  // call makes at most one transition.
  struct PendingTransition {
    BreakerState from;
    BreakerState to;
    const char* reason;
    TimePoint at;
    TimePoint open_until{};  // when `to` is kOpen
  };
  using Pending = std::optional<PendingTransition>;
  struct ProbeSlot {
    uint32_t ticket = 0;  // 0 = free
    TimePoint acquired_at;
  };

  explicit CircuitBreaker(const CircuitBreakerOptions& options);

  Admission AcquireSlow(TimePoint now);
  // Each returns false when the permit was stale (nothing but `stale` counted).
  bool RecordImpl(const Permit& permit, CallResult result, Duration call_duration,
                  TimePoint now);
  bool RecordProbe(const Permit& permit, CallResult result, Duration call_duration,
                   TimePoint now);
  void StaleOne();
  void NotifyCall(BreakerCallKind kind, BreakerState state, Duration duration, bool stale,
                  TimePoint at);
  void NoteTripLocked(uint64_t word, BreakerState from, const char* reason, TimePoint at);
  void RecordLocked(uint64_t word, CallResult result, bool slow, TimePoint now, Pending* pending);
  void TripLocked(uint64_t word, const char* reason, TimePoint now, Pending* pending);
  // `open_until`: the end of the open period when `to` is kOpen (default:
  // the grown reset timeout from `at`, counting one more consecutive trip).
  void SwitchLocked(BreakerState to, const char* reason, TimePoint at, Pending* pending,
                    std::optional<TimePoint> open_until = std::nullopt);
  // True when a half-open breaker has outlived max_half_open_duration at
  // `now`; then reopens it, stamped at the instant the limit was reached.
  bool HalfOpenExpiredLocked(TimePoint now, Pending* pending);
  void ManualSwitch(BreakerState to, const char* reason, TimePoint now);
  void CountResult(CallResult result, bool slow);
  void RejectedOne();
  Duration OpenPeriodLocked() const;
  void Notify(const Pending& pending);
  static std::string OpenMessage(const std::string& name, Duration retry_in);

  const CircuitBreakerOptions options_;

  // Generation, state and consecutive failures in one word, so that a stale
  // Record cannot touch a newer generation's count (see circuit_breaker.cc).
  std::atomic<uint64_t> word_;
  // End of the open period, steady-clock nanoseconds; written under mu_
  // before the word announcing the open state.
  std::atomic<int64_t> open_until_ns_{0};
  // End of the half-open period (max_half_open_duration), likewise; INT64_MAX
  // without a limit.
  std::atomic<int64_t> half_open_until_ns_{0};

  // Statistics, on their own cache line so the read-mostly word is not
  // invalidated by every counted call.
  alignas(64) std::atomic<uint64_t> successes_{0};
  std::atomic<uint64_t> failures_{0};
  std::atomic<uint64_t> ignored_{0};
  std::atomic<uint64_t> slow_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> stale_{0};
  // Set while call listeners exist: the only cost of the feature without them.
  std::atomic<bool> has_call_listeners_{false};

  // Slow-path state, guarded by mu_.
  alignas(64) mutable std::mutex mu_;
  int consecutive_trips_ = 0;        // opens since the last close
  int half_open_successes_ = 0;      // successful probes this half-open period
  uint32_t next_ticket_ = 1;
  std::vector<ProbeSlot> slots_;     // half_open_max_calls entries
  std::unique_ptr<internal::BreakerWindow> window_;  // null without a window
  std::optional<BreakerTrip> last_trip_;

  std::unique_ptr<Listeners> listeners_;
  // Where transitions and refusals are reported; null when not reporting.
  // This breaker is attached to it (its counts appear in snapshots) until
  // the destructor detaches it.
  Metrics* metrics_ = nullptr;
  std::string reported_name_;
};

// ---------------------------------------------------------------------------
// Implementation details of Execute.

namespace internal {
// What Execute returns for a callable returning T.
template <typename T>
struct ExecuteResult {
  using type = Result<T>;
  static bool Failed(const Result<T>&) { return false; }
};
template <>
struct ExecuteResult<void> {
  using type = Status;
};
template <>
struct ExecuteResult<Status> {
  using type = Status;
  static bool Failed(const Status& s) { return !s.ok(); }
};
template <typename U>
struct ExecuteResult<Result<U>> {
  using type = Result<U>;
  static bool Failed(const Result<U>& r) { return !r.ok(); }
};
}  // namespace internal

template <typename F>
auto CircuitBreaker::Execute(F&& fn, Clock& clock) {
  using T = std::decay_t<std::invoke_result_t<F&>>;
  using Traits = internal::ExecuteResult<T>;
  using R = typename Traits::type;
  Admission admission = Acquire(clock.Now());
  if (!admission.admitted()) {
    return R(CircuitOpenError(OpenMessage(name(), admission.retry_in)));
  }
  const TimePoint start = clock.Now();
  try {
    if constexpr (std::is_void_v<T>) {
      fn();
      const TimePoint end = clock.Now();
      Record(admission.permit, CallResult::kSuccess, end - start, end);
      return R(OkStatus());
    } else {
      R result(fn());
      const TimePoint end = clock.Now();
      Record(admission.permit, Traits::Failed(result) ? CallResult::kFailure : CallResult::kSuccess,
             end - start, end);
      return result;
    }
  } catch (...) {
    const TimePoint end = clock.Now();
    Record(admission.permit, CallResult::kFailure, end - start, end);
    throw;
  }
}

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_BREAKER_CIRCUIT_BREAKER_H_
