// mulligan/hedging/hedging.h — hedged calls: extra copies of an idempotent
// call started after a delay, the first acceptable result wins (DESIGN.md
// section 5, "Hedging"; strategy 4 of the pipeline, in place of retry).
// (Added in 0.5.)
//
// The rules are gRPC A6's hedgingPolicy (grpc/proposal A6-client-retries.md,
// "Hedging Policy"), with the quantile delay of "The Tail at Scale" (Dean
// and Barroso, CACM 2013: "defer sending a secondary request until the
// first request has been outstanding for more than the 95th-percentile
// expected latency"):
//   - at most max_attempts copies, the first included; A6 requires more than
//     one and treats values above 5 as 5;
//   - copy k+1 may start `delay` after copy k started (A6 hedgingDelay;
//     0: every copy at once), where `delay` is the fixed hedging_delay, or,
//     with delay_quantile, the p-th quantile of the latencies of recent
//     winning copies of this policy (fixed hedging_delay until enough are
//     known);
//   - a copy that fails with a retryable (A6: non-fatal) outcome, as the
//     pipeline's retry policy classifies it, lets the next copy start at
//     once; a terminal (fatal) outcome ends the call and cancels the rest;
//   - server pushback (A6 "Pushback": the outcome's retry_after, from
//     grpc-retry-pushback-ms or HTTP Retry-After) delays the next copy until
//     the hint has passed; a hint over the policy's retry_after_max stops new
//     copies (kRetryAfterTooLong; with RetryAfterOverflow::kClamp the next
//     copy waits retry_after_max), respect_retry_after = false ignores it,
//     and a next start at or past the deadline stops new copies (kDeadline).
//     (0.6; 0.5 started the next copy at once.) The policy's max_attempts and
//     backoff do not apply: hedging replaces retrying (A6: a method has a
//     retryPolicy or a hedgingPolicy, never both), max_attempts here counts
//     the copies;
//   - the first success wins and every other running copy is cancelled;
//   - every copy after the first asks the retry budget (budget/budget.h) and
//     the circuit breaker; an empty budget or an open breaker stops new
//     copies (the running ones go on);
//   - a cancelled copy is recorded neither as a success nor as a failure: its
//     breaker permit is released as kIgnored (which frees a half-open slot),
//     and the budget is not told;
//   - only replay-safe calls are hedged (CallOptions::replay_safe: idempotent
//     methods, or requests that carry an Idempotency-Key, sent with the same
//     key on every copy); a call that is not runs one copy.
//
// The engine decides, the caller acts (DESIGN.md section 1): HedgedCall never
// reads a clock, sleeps or runs a copy. A front door loops:
//
//   mulligan::HedgedCall call = hedging->Begin(pipeline, clock.Now(), {});
//   while (!call.finished()) {
//     mulligan::HedgeAdmission a = call.Admit(clock.Now());
//     if (a.start()) { StartCopy(a.copy, a.timeout); continue; }
//     // wait for a running copy to end, or until a.next_start (kWait)
//     auto [copy, outcome] = WaitForACopyOrUntil(a);
//     if (!copy) continue;
//     mulligan::HedgeDecision d = call.Record(copy, outcome, clock.Now());
//     for (int loser : d.cancel) CancelCopy(loser);   // already released
//   }
//
// In this slice the hedged call uses, of the pipeline, its retry policy
// (classification, deadline, attempt timeout), its circuit breaker (fixed or
// from its registry by key), its retry budget and its metrics. The pipeline's
// bulkhead, rate limiters and adaptive throttle are not asked for hedged
// calls (see the report of issue 18's first slice).

#ifndef MULLIGAN_HEDGING_HEDGING_H_
#define MULLIGAN_HEDGING_HEDGING_H_

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/status.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/pipeline/call.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
inline namespace v0 {

class Metrics;   // telemetry/metrics.h
class Pipeline;  // pipeline/pipeline.h
class RetryBudget;

// The hard cap on copies per call: gRPC A6 treats maxAttempts above 5 as 5.
inline constexpr int kMaxHedgedAttempts = 5;

// Plain options; validated by HedgingPolicy::Create. (Added in 0.5.)
struct HedgingOptions {
  // Copies per call, the first included. Must be >= 2 (A6: "must be greater
  // than 1"); values above kMaxHedgedAttempts (5) are treated as 5, as A6
  // does. Default 2 (one hedge: Polly's and failsafe-go's default).
  int max_attempts = 2;
  // The wait, from one copy's start, before the next copy may start (A6
  // hedgingDelay). Must be >= 0; 0 starts every copy at once (A6's default).
  // Nanoseconds (Python and the config take seconds / milliseconds). Also
  // the delay used while delay_quantile has too few samples. Default 0.
  Duration hedging_delay = Duration::zero();
  // When set, in (0, 1] (e.g. 0.95): the delay is the nearest-rank quantile
  // of the latencies of the last quantile_window winning copies of this
  // policy, once quantile_min_samples are known. Default: none (fixed delay).
  std::optional<double> delay_quantile;
  // How many recent latencies the quantile is taken over: in [1, 100000].
  // Default 100.
  int quantile_window = 100;
  // How many latencies must be known before the quantile replaces
  // hedging_delay: in [1, quantile_window]. Default 20.
  int quantile_min_samples = 20;
};

// Validates `options`; kInvalidArgument names the field
// ("hedging: max_attempts must be >= 2, got 1").
Status ValidateHedgingOptions(const HedgingOptions& options);

// The latencies of the last `capacity` winning copies (a ring), and their
// nearest-rank quantile. Thread-safety: thread-safe (a mutex held for a
// store, or for a copy and sort of at most `capacity` values).
class LatencyWindow {
 public:
  explicit LatencyWindow(int capacity);
  // Records one latency (negative values count as zero).
  void Record(Duration latency);
  // The nearest-rank p-quantile (the ceil(p * n)-th smallest of the n kept
  // latencies), or nullopt with fewer than `min_samples` kept.
  // REQUIRES: 0 < p <= 1.
  std::optional<Duration> Quantile(double p, int min_samples) const;
  // Latencies kept (at most capacity).
  int size() const;

 private:
  mutable std::mutex mu_;
  std::vector<Duration> ring_;  // guarded by mu_
  size_t next_ = 0;             // guarded by mu_
  size_t capacity_;
};

// The answer before a copy: start one now, wait, or none left to start.
struct HedgeAdmission {
  enum class Action : int {
    // Start copy `copy` now, bounded by `timeout`.
    kStart = 0,
    // No copy may start before `next_start`: wait for a running copy to end
    // or until then, then call Admit again.
    kWait = 1,
    // No further copy will start (max_attempts started, the budget or the
    // breaker refused, the deadline passed, or the call is finished): wait
    // for the running copies. `reason` says why (kNone: max_attempts).
    kNoMore = 2,
  };
  Action action = Action::kNoMore;
  // kStart: the copy's number (1 for the first).
  int copy = 0;
  // kStart: the copy's bound: the policy's attempt_timeout (else the call's
  // default) trimmed to the time left before the deadline; nullopt: none.
  std::optional<Duration> timeout;
  // kWait: when the next copy may start.
  TimePoint next_start;
  // kNoMore: why new copies stopped: kNone (max_attempts reached),
  // kCircuitOpen, kBudget, kDeadline; or the call's stop reason once it is
  // finished.
  StopReason reason = StopReason::kNone;
  // kNoMore because the breaker refused (also once the call finished for
  // that reason): time from the refusing Admit until it admits a probe.
  Duration retry_in = Duration::zero();

  bool start() const { return action == Action::kStart; }
  bool wait() const { return action == Action::kWait; }
};

// The answer to one copy's outcome.
struct HedgeDecision {
  // True once the call is over: `winner` won (success), or it failed.
  bool finished = false;
  // The copy that won (a success), or 0.
  int winner = 0;
  // finished: kSucceeded, kTerminal (a fatal outcome), kAttemptsExhausted
  // (every copy failed and no more may start), or the reason new copies
  // stopped (kCircuitOpen, kBudget, kDeadline) when the last running copy
  // failed after that; kNone while the call goes on.
  StopReason reason = StopReason::kNone;
  // The policy's verdict on the recorded outcome.
  Classification classification = Classification::kSuccess;
  // The copies the caller must cancel now (running copies other than the
  // winner, or all running copies after a fatal outcome). They are already
  // released: recording them later does nothing.
  std::vector<int> cancel;
};

class HedgedCall;

// Who records the copies' outcomes in the retry budget, the breaker and the
// metrics. (Added in 0.6.)
enum class HedgeAccounting : int {
  // The hedged call does (the default; @mulligan.hedge): the breaker is asked
  // before and told after every copy, the budget before every extra copy and
  // after every copy, and the metrics count the call and its hedges.
  kFull = 0,
  // Every copy is a call of its own through a pipeline that already asks the
  // breaker and records its outcome in the breaker, the budget and the call
  // metrics (the HTTP clients: each copy is one single-attempt call of the
  // client's pipeline for the origin). The hedged call then only asks the
  // budget's TryRetry before each extra copy (and the breaker, if its
  // pipeline has one, before each copy, releasing the permit as kIgnored when
  // the copy ends), and counts only the hedge metrics (hedges started, won,
  // cancelled): nothing is recorded twice. A winning hedge's budget cost is
  // not refunded (its call records its success as a first attempt's).
  kGateOnly = 1,
};

// A validated hedging policy: the options and the latency window its calls
// share. Held by shared_ptr by every front door that hedges under it.
//
// Thread-safety: Begin and every accessor may run on many threads at once;
// each HedgedCall belongs to one logical call.
class HedgingPolicy {
 public:
  // Validates `options` (max_attempts capped at 5). kInvalidArgument names
  // the bad field.
  static Result<std::shared_ptr<HedgingPolicy>> Create(const HedgingOptions& options);

  // Begins one hedged call at `now` through `pipeline` (its retry policy,
  // breaker, budget and metrics; see the file comment). options.replay_safe
  // false: one copy only. options.key picks the breaker from the pipeline's
  // registry and the metrics name, as Pipeline::Begin does. Counts the call
  // as started. REQUIRES: the pipeline and this policy outlive the call.
  HedgedCall Begin(const Pipeline& pipeline, TimePoint now, const CallOptions& options = {}) const;
  // The same, with `accounting` saying who records the copies' outcomes
  // (see HedgeAccounting). (Added in 0.6.)
  HedgedCall Begin(const Pipeline& pipeline, TimePoint now, const CallOptions& options,
                   HedgeAccounting accounting) const;

  // The delay after a copy's start before the next copy may start, now:
  // the quantile of recent winners' latencies, or hedging_delay.
  Duration CurrentDelay() const;

  const HedgingOptions& options() const { return options_; }
  // Copies per call after the cap (2..5).
  int max_attempts() const { return options_.max_attempts; }
  LatencyWindow& latencies() const { return *latencies_; }

 private:
  explicit HedgingPolicy(const HedgingOptions& options);
  HedgingOptions options_;
  std::unique_ptr<LatencyWindow> latencies_;
};

// One hedged logical call. Made by HedgingPolicy::Begin.
//
// Thread-safety: not thread-safe; one call belongs to one logical call (one
// thread, or one event loop). Copies may run concurrently, but their
// outcomes are recorded one at a time by the caller.
class HedgedCall {
 public:
  // Moving hands the call over; the moved-from object abandons nothing.
  HedgedCall(HedgedCall&&) noexcept = default;
  HedgedCall& operator=(HedgedCall&&) = delete;
  HedgedCall(const HedgedCall&) = delete;
  HedgedCall& operator=(const HedgedCall&) = delete;
  // A call destroyed before it finished is abandoned at its last step.
  ~HedgedCall();

  // Whether a copy may start at `now` (see HedgeAdmission). A kStart takes
  // the copy's breaker permit, and for copies after the first a retry from
  // the budget, and counts a hedge; the copy is then running until recorded
  // or cancelled. The first copy refused by the breaker ends the call
  // (finished(), reason kCircuitOpen; RefusalStatus says so).
  HedgeAdmission Admit(TimePoint now);

  // Records the outcome of running copy `copy`, which ended at `now`, and
  // returns what to do. A copy that is not running (unknown, cancelled, or
  // recorded) changes nothing: the result has finished set as the call is,
  // and an empty cancel list.
  HedgeDecision Record(int copy, const Outcome& outcome, TimePoint now);

  // Ends a call its caller stopped (a cancelled task): every running copy is
  // released as cancelled (neither success nor failure), and the call is
  // reported as failed with kTerminal. Does nothing once finished. A call
  // its caller cancelled is ended with Cancel instead.
  void Abandon(TimePoint now);

  // Ends a call its caller cancelled because its answer is no longer wanted
  // (a cancelled task, a Go context cancelled, an AbortSignal): every running
  // copy is released as cancelled (its breaker permit as kIgnored, which
  // frees a half-open slot; the budget is not told) and counted in
  // hedge_cancelled, and the call is counted `cancelled` with one attempt
  // per copy started (Metrics::CallCancelled, mulligan_cancelled_total):
  // neither a success nor a failure, exactly as Call::Cancel does for a
  // plain call (DESIGN.md: a caller's cancel is never counted as a
  // failure). With HedgeAccounting::kGateOnly the copies' own calls count
  // themselves (each is cancelled by its front door), so only the hedge
  // metrics are told. The call is then finished with stop_reason() kNone
  // and winner() 0. Does nothing once finished. (Added in 0.6.)
  void Cancel(TimePoint now);

  // kCircuitOpen after the first copy was refused by the breaker; OK
  // otherwise.
  Status RefusalStatus() const;
  // After a breaker refusal (of any copy): the time from that Admit's `now`
  // until the breaker admits a probe (Duration::max() when forced open);
  // zero otherwise.
  Duration refusal_retry_in() const { return refused_retry_in_; }

  // Copies started, running (started and neither recorded nor cancelled),
  // and cancelled so far.
  int started() const { return started_; }
  int running() const;
  int cancelled() const { return cancelled_; }
  // When copy `copy` started (1-based); REQUIRES: 1 <= copy <= started().
  TimePoint copy_start(int copy) const { return copies_[copy - 1].start; }
  // The winning copy (0 before a win).
  int winner() const { return winner_; }
  bool finished() const { return finished_; }
  StopReason stop_reason() const { return reason_; }
  // The copy limit of this call (1 when not replay-safe).
  int max_attempts() const { return max_attempts_; }
  TimePoint start() const { return start_; }
  CircuitBreaker* breaker() const { return breaker_; }
  Metrics* metrics() const { return metrics_; }

 private:
  friend class HedgingPolicy;
  // True until moved from (a moved-from call's destructor does nothing).
  struct Live {
    bool value = true;
    Live() = default;
    Live(Live&& other) noexcept : value(other.value) { other.value = false; }
    Live& operator=(Live&&) = delete;
  };
  struct Copy {
    TimePoint start;
    Permit permit;
    int64_t budget_cost = -1;
    bool running = false;
  };
  HedgedCall(const HedgingPolicy* hedging, const Pipeline* pipeline, TimePoint now,
             const CallOptions& options, HedgeAccounting accounting);
  std::optional<StopReason> GateNextCopy(TimePoint now, HedgeAdmission& admission);
  void ReleaseRunning(TimePoint now, std::vector<int>* cancelled);
  void Finish(bool succeeded, StopReason reason, TimePoint now);
  std::optional<Duration> TimeoutAt(TimePoint now) const;

  const HedgingPolicy* hedging_ = nullptr;
  const Pipeline* pipeline_ = nullptr;
  const RetryPolicy* policy_ = nullptr;
  CircuitBreaker* breaker_ = nullptr;
  std::shared_ptr<CircuitBreaker> breaker_owner_;
  RetryBudget* budget_ = nullptr;
  Metrics* metrics_ = nullptr;
  TimePoint start_;
  TimePoint last_step_;
  TimePoint next_start_;
  std::optional<Duration> default_timeout_;
  std::vector<Copy> copies_;
  int max_attempts_ = 1;
  int started_ = 0;
  int cancelled_ = 0;
  int winner_ = 0;
  // New copies stopped (budget, breaker, deadline): why.
  std::optional<StopReason> no_more_;
  Duration refused_retry_in_ = Duration::zero();
  bool first_refused_ = false;
  bool finished_ = false;
  // HedgeAccounting::kGateOnly: outcomes are recorded by the copies' calls.
  bool gate_only_ = false;
  StopReason reason_ = StopReason::kNone;
  Live live_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HEDGING_HEDGING_H_
