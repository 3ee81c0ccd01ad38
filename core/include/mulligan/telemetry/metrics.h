// mulligan/telemetry/metrics.h — counters, gauges, histograms and events, per name.
//
// Operators need to see retries before they become an outage. Every retry
// loop, breaker and HTTP client reports into a Metrics object named after its
// policy, breaker or client origin; a MetricsRegistry holds them by name and
// exports a JSON snapshot and the Prometheus text exposition format.
//
// Hot path: each thread writes into its own shard of a Metrics object (plain
// relaxed loads and stores, no locked instructions, no lock), and readers sum
// the shards. Totals are exact: 2 threads x 1,000,000 calls give 2,000,000.
// Gauges that count things in progress (calls in flight, calls waiting to
// retry) are derived from started/finished counters, so they cost nothing.
//
// What counts as what (DESIGN.md section 4, "Metrics"):
//   calls        logical calls started (a call that retries counts once)
//   attempts     attempts made by finished calls
//   retries      attempts after the first, by reason (status, transport,
//                timeout, retry_after, exception)
//   successes    calls that finally succeeded; an eventual success is a
//                success, never a failure
//   failures     calls that gave up (or were refused by an open breaker)
//   fallbacks    failed calls answered by a fallback (also counted in failures)
//   cancelled    calls ended because their caller cancelled them (Call::Cancel:
//                a hedged request's losing copy): neither successes nor
//                failures; their attempts count in attempts (they were sent)
//                and they leave the in-flight gauge. (Added in 0.6.)
//   short_circuits  attempts refused by an open circuit breaker
//   rejections   calls ended by an overload refusal, by reason: budget (a
//                retry the retry budget refused), throttled (adaptive
//                throttling), bulkhead_full, rate_limited (0.4). Counted in
//                CallFailed from the stop reason: no extra engine call.
//   hedges       extra copies started by hedged calls (copies after the
//                first; gRPC A96's grpc.client.call.hedges counts the same
//                thing per call), hedges_won (calls won by such an extra
//                copy) and hedge_cancelled (running copies cancelled: because
//                another copy won or failed fatally, or, 0.6, because the
//                caller cancelled the call, copy 1 included). (Added in 0.5.)
//
// Overload primitives (0.4): the retry budgets, adaptive throttles,
// bulkheads and rate limiters a pipeline uses are tracked by the registry
// (weakly: a primitive is exported while something else holds it) and read
// at snapshot time from their own counters, as breakers are, so the success
// path pays nothing for their metrics. See MetricsRegistry::Track.
//
// Durable outboxes (0.6): an outbox (outbox/outbox.h) tracked here is read
// at snapshot time from its database: depth by state, the oldest live
// entry's age, deliveries by result and dead letters (issue 21).

#ifndef MULLIGAN_TELEMETRY_METRICS_H_
#define MULLIGAN_TELEMETRY_METRICS_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/retry/policy.h"
#include "mulligan/telemetry/histogram.h"

namespace mulligan {
inline namespace v0 {

class AdaptiveRate;
class AdaptiveThrottle;
class Bulkhead;
class RateLimiter;
class RetryBudget;

// Why a retry was scheduled. Values are pinned; append only.
enum class RetryReason : int {
  // A retryable HTTP status (503, 429, ...) without a Retry-After hint.
  kStatus = 0,
  // A transport failure: refused, reset, DNS, TLS, other.
  kTransport = 1,
  // An attempt or connect timeout.
  kTimeout = 2,
  // The server's Retry-After hint set the delay.
  kRetryAfter = 3,
  // A failure the caller classified (a matching exception, a callback error).
  kException = 4,
};
inline constexpr int kRetryReasonCount = 5;

// Returns "status", "transport", "timeout", "retry_after" or "exception".
const char* RetryReasonName(RetryReason reason);

// Returns the reason for retrying after `outcome` when `decision` says retry.
RetryReason RetryReasonFor(const Outcome& outcome, const Decision& decision);

// Why an overload protection refused a call. Values are pinned; append
// only. (Added in 0.4.)
enum class RejectionReason : int {
  kBudget = 0,        // StopReason::kBudget: the retry budget refused a retry
  kThrottled = 1,     // StopReason::kThrottled: adaptive throttling
  kBulkheadFull = 2,  // StopReason::kBulkheadFull
  kRateLimited = 3,   // StopReason::kRateLimited
};
inline constexpr int kRejectionReasonCount = 4;

// Returns "budget", "throttled", "bulkhead_full" or "rate_limited" (the
// StopReason names). (Added in 0.4.)
const char* RejectionReasonName(RejectionReason reason);

// The rejection reason of `stop`, or -1 when `stop` is not an overload
// refusal. (Added in 0.4.)
int RejectionReasonIndex(StopReason stop);

// What kind of event a listener receives. Values are pinned; append only.
enum class EventKind : int {
  kAttemptStarted = 0,
  kAttemptFailed = 1,
  kRetryScheduled = 2,
  kGaveUp = 3,
  kBreakerTransition = 4,
  kFallbackUsed = 5,
  kSucceeded = 6,
  kShortCircuited = 7,
  // A call was refused by a retry budget, adaptive throttling, a bulkhead or
  // a rate limiter (stop_reason says which); emitted before kGaveUp.
  // (Added in 0.4.)
  kRejected = 8,
};

// Returns "attempt_started", "attempt_failed", "retry_scheduled", "gave_up",
// "breaker_transition", "fallback_used", "succeeded", "short_circuited" or
// "rejected".
const char* EventKindName(EventKind kind);

// One event. Fields that do not apply to a kind keep their defaults.
// `name` points into the Metrics object that emitted it and is valid only
// during the listener call.
struct Event {
  EventKind kind = EventKind::kAttemptStarted;
  std::string_view name;
  // Attempt number (1 for the first) for attempt and retry events; attempts
  // made for kGaveUp and kSucceeded.
  int attempt = 0;
  // The wait before the next attempt (kRetryScheduled).
  Duration delay = Duration::zero();
  // The failed attempt's outcome (kAttemptFailed, kRetryScheduled, kGaveUp).
  ErrorKind error = ErrorKind::kNone;
  int http_status = 0;
  RetryReason retry_reason = RetryReason::kStatus;
  StopReason stop_reason = StopReason::kNone;
  // kBreakerTransition only.
  BreakerState from = BreakerState::kClosed;
  BreakerState to = BreakerState::kClosed;
  const char* transition_reason = "";
  // Time since the call's first attempt started (zero for breaker events).
  Duration elapsed = Duration::zero();
};

using EventListener = std::function<void(const Event&)>;

// A consistent-enough reading of one Metrics object (each value is exact; the
// values are read one after another while writers may run).
struct MetricsSnapshot {
  using Histogram = HistogramSnapshot;
  std::string name;
  uint64_t calls = 0;
  uint64_t attempts = 0;
  uint64_t retries = 0;
  std::array<uint64_t, kRetryReasonCount> retries_by_reason{};
  uint64_t successes = 0;
  uint64_t failures = 0;
  uint64_t fallbacks = 0;
  uint64_t short_circuits = 0;
  // Calls ended by an overload refusal, indexed by RejectionReason. (0.4)
  std::array<uint64_t, kRejectionReasonCount> rejections_by_reason{};
  // Hedged calls (hedging/hedging.h; Added in 0.5.): extra copies started,
  // calls won by an extra copy, copies cancelled.
  uint64_t hedges = 0;
  uint64_t hedges_won = 0;
  uint64_t hedge_cancelled = 0;
  // Calls ended by Call::Cancel (neither successes nor failures). (Added in
  // 0.6.)
  uint64_t cancelled = 0;
  // transitions[from][to], indexed by BreakerState values.
  std::array<std::array<uint64_t, 6>, 6> transitions{};
  // Transitions into kOpen from any state.
  uint64_t circuit_opens = 0;
  int64_t in_flight = 0;
  int64_t waiting_to_retry = 0;
  // The last breaker state reported, or -1 when no breaker reports here.
  int breaker_state = -1;
  // The live breaker attached to this name (CircuitBreaker reports under its
  // reported_name()): its own counters, read at snapshot time with the
  // steady clock's now (a time window is evaluated then), and its last trip.
  bool has_breaker = false;
  BreakerCounts breaker;
  std::optional<BreakerTrip> last_trip;
  Histogram call_duration_seconds;
  Histogram attempts_per_call;
  Histogram retry_delay_seconds;
};

// A reading of the overload primitives a registry tracks (Added in 0.4.).
// Each list is sorted by name; a name is the primitive's own, suffixed
// "#2", "#3", ... when two live primitives of a kind share it.
struct LimitsSnapshot {
  struct Budget {
    std::string name;
    // BudgetKind value: 0 token_bucket, 1 quota, 2 ratio.
    int kind = 0;
    // RetryBudget::Tokens at the snapshot's time: tokens (token_bucket),
    // capacity left (quota), retries available now (ratio).
    double tokens = 0;
    // The most it can hold: max_tokens, capacity; 0 for ratio (no bound).
    double max_tokens = 0;
    uint64_t retries_allowed = 0;
    uint64_t retries_refused = 0;
  };
  struct Throttle {
    std::string name;
    // Requests and accepts in the window at the snapshot's time.
    int64_t requests = 0;
    int64_t accepts = 0;
    // The rejection probability at the snapshot's time, in [0, 1).
    double probability = 0;
    uint64_t rejections = 0;
  };
  struct BulkheadStats {
    std::string name;
    int max_concurrent = 0;
    int max_queue = 0;
    int in_flight = 0;
    int queued = 0;
    // Refused because the bulkhead and its queue were full, and waiters
    // that gave up (their wait bound passed, or they were cancelled).
    uint64_t rejected_full = 0;
    uint64_t rejected_timeout = 0;
    // Waits from joining the queue to the grant, in seconds.
    HistogramSnapshot queue_wait_seconds;
  };
  struct Limiter {
    std::string name;
    // Admitted at once, admitted after a (reserved) wait, and refused.
    uint64_t admitted = 0;
    uint64_t waited = 0;
    uint64_t refused = 0;
    // The waits of the calls admitted after one, in seconds.
    HistogramSnapshot wait_seconds;
  };
  std::vector<Budget> budgets;
  std::vector<Throttle> throttles;
  std::vector<BulkheadStats> bulkheads;
  std::vector<Limiter> rate_limiters;
  // AWS adaptive-mode client rates (limits/adaptive_rate.h).
  struct Adaptive {
    std::string name;
    bool enabled = false;        // a throttling answer was seen
    double fill_rate = 0;        // requests per second the bucket allows now
    double measured_rate = 0;    // smoothed requests per second sent
    uint64_t admitted = 0;       // at once
    uint64_t waited = 0;         // after a wait
    uint64_t refused = 0;
    uint64_t throttles = 0;      // throttling answers recorded
  };
  std::vector<Adaptive> adaptive_rates;
  // Durable outboxes (OutboxMetricsSource; Added in 0.6.), read from their
  // database at the snapshot's wall time. Counts are the database's own,
  // kept across restarts and shared by every process that opens the file,
  // so each process serving one file reports the same values.
  struct Outbox {
    std::string name;
    // Entries waiting for an attempt, and held by a worker (their sum is
    // the queue's depth); finished ones kept (done, dead).
    int64_t pending = 0;
    int64_t leased = 0;
    int64_t done = 0;
    int64_t dead = 0;
    // Age of the oldest pending or leased entry, in seconds (0 when none).
    double oldest_age_seconds = 0;
    // Attempts recorded since the file was made, by result: success
    // (delivered), failure (a failed attempt the worker recorded), and
    // lease_expired (a lease that ended unfinished), and entries
    // dead-lettered.
    uint64_t deliveries_success = 0;
    uint64_t deliveries_failure = 0;
    uint64_t deliveries_lease_expired = 0;
    uint64_t dead_letters = 0;
  };
  std::vector<Outbox> outboxes;
  // Parts shared through a state backend (Added in 0.6.): tracked shared
  // rate limiters (RateLimiter::shared()) and SharedStateMetricsSources
  // (Redis-shared breakers), sorted by part, then name.
  struct SharedState {
    // "breaker" or "rate_limiter".
    std::string part;
    std::string name;
    // True while the part serves from its local state alone because the
    // backend is unreachable (or failing).
    bool fallback = false;
    // Fallback periods begun: times `fallback` turned true.
    uint64_t fallback_periods = 0;
  };
  std::vector<SharedState> shared_states;
};

// A part shared through a state backend that reports whether it falls back
// to local state (state/redis_breaker.h's RedisSharedBreaker implements it;
// the engine itself knows nothing of Redis). (Added in 0.6.)
class SharedStateMetricsSource {
 public:
  virtual ~SharedStateMetricsSource() = default;
  // The `part` label: a short literal ("breaker").
  virtual const char* shared_part() const = 0;
  // The `name` label; empty: not exported.
  virtual const std::string& metrics_name() const = 0;
  // True while the part serves from its local state alone. Thread-safe.
  virtual bool falling_back() const = 0;
  // Fallback periods begun. Thread-safe.
  virtual uint64_t fallback_periods() const = 0;
};

// What a durable outbox gives a registry at snapshot time (outbox/outbox.h's
// Outbox implements it; the engine itself knows nothing of SQLite).
// (Added in 0.6.)
class OutboxMetricsSource {
 public:
  virtual ~OutboxMetricsSource() = default;
  // The name exported as the `outbox` label; empty: not exported.
  virtual const std::string& metrics_name() const = 0;
  // Fills `out` (all but name) as of wall time `now`; false when the
  // database could not be read (that outbox is then left out of the
  // snapshot). Thread-safe; may wait for the database.
  virtual bool SampleMetrics(WallTime now, LimitsSnapshot::Outbox* out) = 0;
};

class MetricsRegistry;

// The metrics of one name.
//
// Thread-safety: every method is thread-safe. Writes go to the calling
// thread's own shard; readers (Snapshot) sum all shards.
// Not copyable or movable: shards and listeners point back into it.
class Metrics {
 public:
  ~Metrics();
  Metrics(const Metrics&) = delete;
  Metrics& operator=(const Metrics&) = delete;

  // A logical call started (its first attempt is about to run).
  void CallStarted();
  // An attempt is about to run (emits kAttemptStarted to listeners only).
  void AttemptStarted(int attempt);
  // An attempt failed and the engine decided `decision`; records the retry
  // (and its delay) when it is one. Call RetryWaitEnded after the wait.
  void AttemptFailed(int attempt, const Outcome& outcome, const Decision& decision,
                     Duration elapsed);
  // The wait before a scheduled retry is over (or was cancelled).
  void RetryWaitEnded();
  // An attempt was refused by an open circuit breaker.
  void ShortCircuited(int attempt);
  // The call finished: succeeded, or gave up (`stop_reason` says why) after
  // `attempts` attempts, `elapsed` after its first attempt started.
  void CallSucceeded(int attempts, Duration elapsed);
  void CallFailed(int attempts, Duration elapsed, StopReason stop_reason);
  // The call was cancelled by its caller after `attempts` attempts (the one
  // in flight included): counted in `cancelled` and in attempts and the
  // attempts-per-call histogram, not in successes, failures or the
  // call-duration histogram (a losing hedge's time is not a call's latency).
  // No event is emitted. (Added in 0.6.)
  void CallCancelled(int attempts);
  // Records `count` calls that started and succeeded on their first attempt
  // without being timed (front ends that count successes on their hot path
  // and flush them in bulk, and RetryCall's first-attempt fast path, 0.6).
  // They add to calls, attempts, successes and the attempts-per-call
  // histogram, not to the call-duration histogram, and emit no event. Cost:
  // one relaxed load and store of the calling thread's shard (no locked
  // instruction); Snapshot adds the one counter to all four, so a snapshot
  // never sees such a call started but not finished.
  void UntimedFirstAttemptSuccesses(uint64_t count = 1);
  // True when the registry these metrics report to has an event listener
  // (MetricsRegistry::AddListener): a front door that skips the engine on a
  // first-attempt success (RetryCall, 0.6) takes the full path then, so
  // listeners see every attempt_started and succeeded event. One atomic
  // load (acquire); thread-safe. (Added in 0.6.)
  bool has_listeners() const;
  // A fallback answered a failed call (call CallFailed too).
  void FallbackUsed();
  // Hedging (Added in 0.5.): an extra copy (copy 2 or later) started; a call
  // was won by an extra copy; `count` running copies were cancelled.
  void HedgeStarted();
  void HedgeWon();
  void HedgesCancelled(uint64_t count);
  // A breaker reporting under this name changed state.
  void BreakerTransitioned(BreakerState from, BreakerState to, const char* reason);
  // Records the current breaker state (a gauge), without a transition.
  void SetBreakerState(BreakerState state);
  // Detaches `breaker` (attached by MetricsRegistry::AttachBreaker); no-op
  // when another breaker, or none, is attached. Snapshots taken after it
  // returns no longer read the breaker.
  void DetachBreaker(const CircuitBreaker* breaker);

  MetricsSnapshot Snapshot() const;
  const std::string& name() const { return name_; }

 private:
  friend class MetricsRegistry;
  struct Shard;
  Metrics(std::string name, MetricsRegistry* registry);
  Shard& LocalShard();
  Shard& RegisterShard();
  void Emit(const Event& event) const;

  const std::string name_;
  MetricsRegistry* const registry_;
  const uint64_t id_;  // index into each thread's shard table; never reused
  mutable std::mutex shards_mu_;
  std::vector<std::shared_ptr<Shard>> shards_;  // guarded by shards_mu_
  std::array<std::array<std::atomic<uint64_t>, 6>, 6> transitions_{};
  std::atomic<int> breaker_state_{-1};
  // Guards breaker_: Snapshot reads the breaker's counts under it, and the
  // breaker's destructor detaches under it. Lock order: breaker_mu_, then
  // the breaker's own mutex (a breaker never calls Metrics under its mutex
  // except to count, which takes shards_mu_ only).
  mutable std::mutex breaker_mu_;
  const CircuitBreaker* breaker_ = nullptr;
};

// Metrics by name, plus the event stream.
//
// Thread-safety: thread-safe. Get takes a mutex (callers keep the returned
// pointer, which stays valid as long as the registry lives); the hot path is
// in Metrics.
class MetricsRegistry {
 public:
  // The name under which metrics beyond max_names are merged.
  static constexpr const char* kOverflowName = "_overflow";
  // The default bound on distinct names.
  static constexpr size_t kDefaultMaxNames = 2000;

  // Holds at most `max_names` names; metrics for further names are merged
  // under kOverflowName, so a label with unbounded values (one breaker per
  // user, per host) cannot exhaust memory. OpenTelemetry's metrics SDK does
  // the same with its cardinality limit and the otel.metric.overflow
  // attribute. REQUIRES: max_names >= 1.
  explicit MetricsRegistry(size_t max_names = kDefaultMaxNames);
  ~MetricsRegistry();
  MetricsRegistry(const MetricsRegistry&) = delete;
  MetricsRegistry& operator=(const MetricsRegistry&) = delete;

  // The process-wide registry used by default (never destroyed).
  static MetricsRegistry& Default();

  // Returns the metrics named `name`, creating them on first use (or the
  // overflow metrics once max_names names exist). The pointer is never null
  // and stays valid for the registry's lifetime. Cost: a hash look-up under a
  // mutex; callers keep the pointer instead of looking it up per call.
  Metrics* Get(std::string_view name);
  // Returns the metrics a live breaker reports under and attaches it there:
  // `name` when no breaker is attached to it, else the first of "name#2",
  // "name#3", ... that has none, so one name never mixes two breakers' state
  // and counts. Sets `*reported_name` to the chosen name. Once max_names
  // names exist, returns the overflow metrics without attaching (the
  // breaker's transitions are merged there, its counts are not exported)
  // and sets kOverflowName. REQUIRES: `breaker` outlives the attachment
  // (its destructor calls Metrics::DetachBreaker).
  Metrics* AttachBreaker(std::string_view name, const CircuitBreaker* breaker,
                         std::string* reported_name);
  // Snapshots of every name, sorted by name.
  std::vector<MetricsSnapshot> Snapshot() const;

  // Tracks an overload primitive (Added in 0.4.): until it is destroyed,
  // snapshots and exports read its counters (a weak reference: tracking
  // never keeps it alive). Pipelines reporting here track theirs at
  // creation; front doors that use a primitive without a pipeline (Python's
  // guards) track it themselves. Tracking the same object again is a no-op;
  // a null pointer or an empty name is ignored (a private, unnamed
  // primitive is not exported); beyond max_names live primitives of a kind,
  // further ones are not tracked. Thread-safe (takes the registry mutex).
  void Track(const std::shared_ptr<RetryBudget>& budget);
  void Track(const std::shared_ptr<AdaptiveThrottle>& throttle);
  void Track(const std::shared_ptr<Bulkhead>& bulkhead);
  void Track(const std::shared_ptr<RateLimiter>& limiter);
  void Track(const std::shared_ptr<AdaptiveRate>& adaptive);
  // Tracks a durable outbox (Added in 0.6.) under its metrics_name(), with
  // the rules above (weak, idempotent, empty name ignored).
  void Track(const std::shared_ptr<OutboxMetricsSource>& outbox);
  // Tracks a part shared through a state backend (Added in 0.6.), with the
  // rules above (weak, idempotent, empty name ignored). Shared rate limiters
  // need no call of their own: Track(limiter) covers them.
  void Track(const std::shared_ptr<SharedStateMetricsSource>& part);
  // Reads every live tracked primitive; windowed values (a budget's tokens
  // for the ratio kind, a throttle's window) are evaluated at `now` (the
  // clock the primitives are driven by; the exports without an argument use
  // the steady clock's now). Folds pending successes into budgets and
  // throttles, as their own Tokens()/Probability() do. (Added in 0.4.)
  // Outboxes are read at `wall_now` (their stored times are wall-clock
  // times); nullopt: the system clock's now. (wall_now: added in 0.6.)
  LimitsSnapshot SnapshotLimits(TimePoint now,
                                std::optional<WallTime> wall_now = std::nullopt) const;
  // Clears every name (for tests): pointers handed out before stay valid but
  // are detached and no longer exported.
  void Clear();
  // How many times Clear ran: lets callers that cache Metrics pointers
  // notice that they were detached.
  uint64_t clear_count() const { return clears_.load(std::memory_order_acquire); }

  // Adds a listener for every event of every name; returns its id. Listeners
  // run synchronously on the thread that caused the event and must be quick
  // and must not throw (an exception is caught and dropped).
  uint64_t AddListener(EventListener listener);
  // Removes a listener; false if the id is unknown.
  bool RemoveListener(uint64_t id);

  // The Prometheus text exposition format (version 0.0.4): mulligan_calls_total,
  // mulligan_retries_total{reason=...}, mulligan_call_duration_seconds, ...
  // Also exports the tracked primitives (0.4): mulligan_budget_tokens,
  // mulligan_budget_retries_allowed_total, mulligan_budget_retries_refused_total,
  // mulligan_throttle_*, mulligan_bulkhead_*, mulligan_rate_limiter_*, and
  // each name's mulligan_rejections_total{reason=...}. Without `now`,
  // windowed values are read at the steady clock's now. Since 0.6 also the
  // tracked outboxes: mulligan_outbox_depth{outbox,state} (gauge, state
  // pending | leased), mulligan_outbox_oldest_age_seconds{outbox} (gauge),
  // mulligan_outbox_deliveries_total{outbox,result} (result success |
  // failure | lease_expired) and mulligan_outbox_dead_letters_total{outbox},
  // read at `wall_now` (nullopt: the system clock's now). Since 0.6 also
  // the parts shared through a state backend:
  // mulligan_shared_state_fallback{part,name} (gauge, 1 while the part
  // serves from local state alone, else 0) and
  // mulligan_shared_state_fallbacks_total{part,name} (counter, fallback
  // periods begun), part "breaker" | "rate_limiter".
  std::string ToPrometheus() const;
  std::string ToPrometheus(TimePoint now, std::optional<WallTime> wall_now = std::nullopt) const;
  // A JSON object {"metrics": [{"name": ..., "calls": ..., ...}], "totals": {...}}
  // whose totals include the six classic counters: calls, retries,
  // circuit_opens, fallbacks, successes, failures.
  // Defined in the mulligan_config target (it uses Boost.JSON): a program
  // linking only mulligan_engine must link mulligan_config to call it.
  // Since 0.4 the root also holds "budgets", "throttles", "bulkheads" and
  // "rate_limiters" (LimitsSnapshot's lists), each entry has
  // "rejections_by_reason", and totals hold "rejections". Since 0.6 the
  // root holds "outboxes": [{"name", "pending", "leased", "done", "dead",
  // "depth", "oldest_age_seconds", "deliveries": {"success", "failure",
  // "lease_expired"}, "dead_letters"}], read at `wall_now`, and
  // "shared_states": [{"part", "name", "fallback" (bool), "fallback_periods"}]
  // (the Prometheus mulligan_shared_state_fallback families' values).
  std::string ToJson() const;
  std::string ToJson(TimePoint now, std::optional<WallTime> wall_now = std::nullopt) const;

 private:
  friend class Metrics;
  void Dispatch(const Event& event) const;

  const size_t max_names_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Metrics>> metrics_;        // guarded by mu_
  std::unordered_map<std::string, Metrics*> by_name_;    // guarded by mu_
  Metrics* overflow_ = nullptr;                          // guarded by mu_
  std::vector<std::unique_ptr<Metrics>> detached_;       // guarded by mu_
  struct Listeners;
  std::shared_ptr<const Listeners> listeners_;           // guarded by mu_
  std::atomic<bool> has_listeners_{false};
  std::atomic<uint64_t> clears_{0};
  uint64_t next_listener_id_ = 1;                        // guarded by mu_
  struct Tracked;
  std::unique_ptr<Tracked> tracked_;                     // guarded by mu_
};

inline bool Metrics::has_listeners() const {
  return registry_ != nullptr && registry_->has_listeners_.load(std::memory_order_acquire);
}

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_TELEMETRY_METRICS_H_
