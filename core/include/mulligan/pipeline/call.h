// mulligan/pipeline/call.h — one logical call through a pipeline, stepped by
// its caller (DESIGN.md section 2: the engine decides, the caller acts).
//
//   mulligan::Call call = pipeline.Begin(clock.Now(), {.key = origin});
//   for (;;) {
//     mulligan::AttemptAdmission admission = call.Admit(clock.Now());
//     if (admission.refused()) break;            // circuit open: call.RefusalStatus()
//     Outcome outcome = RunOneAttempt(admission.timeout);
//     mulligan::Decision decision = call.Record(outcome, clock.Now());
//     if (!decision.retry()) break;              // done, or stopped: decision.reason
//     clock.SleepFor(decision.delay);            // or asyncio.sleep, a libcurl timer
//   }
//
// The call never sleeps, never reads a clock and never calls user code: every
// front door (RetryCall, HttpClient, HttpAsyncEngine, the C ABI, Python's
// drivers, the Go, Rust and Node bindings) is a loop like the one above, and
// none of them keeps its own copy of the retry, breaker, metrics or fallback
// bookkeeping.

#ifndef MULLIGAN_PIPELINE_CALL_H_
#define MULLIGAN_PIPELINE_CALL_H_

#include <memory>
#include <optional>
#include <string_view>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/status.h"
#include "mulligan/pipeline/strategy.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
inline namespace v0 {

class Metrics;   // telemetry/metrics.h
class Pipeline;  // pipeline/pipeline.h

// The pipeline's answer before an attempt.
struct AttemptAdmission {
  enum class Action : int {
    // Run the attempt now, bounded by `timeout`.
    kGo = 0,
    // Wait `delay`, then call Admit again (strategy 2: a rate limiter's
    // reserved slot, or a bulkhead's queue). With a `ticket`, the wait ends
    // early when the ticket is granted: a blocking front door waits with
    // ticket->WaitFor(delay) (WaitForAdmission below does it), an event loop
    // sets ticket->SetOnGrant and a timer of `delay`, then calls Admit again
    // either way; a caller that gives up instead (cancelled) calls Cancel
    // (or Abandon), which frees the place. (Used since 0.3.)
    kWait = 1,
    // Do not run it: the call is over (`reason` says why; never retried).
    kRefuse = 2,
  };
  Action action = Action::kGo;
  // The attempt this admission is for (1 for the first).
  int attempt = 0;
  // kGo: the bound on this attempt: the policy's attempt_timeout, else the
  // call's default (CallOptions::attempt_timeout), trimmed to the time left
  // before the deadline; nullopt when none of them is set. May be zero when
  // the deadline has just passed.
  std::optional<Duration> timeout;
  // kWait: how long to wait before asking again.
  Duration delay = Duration::zero();
  // kRefuse: why (kCircuitOpen, kBulkheadFull, kRateLimited).
  StopReason reason = StopReason::kNone;
  // kRefuse by a circuit breaker: the time from the Admit's `now` until it
  // admits a probe; Duration::max() when forced open. By a rate limiter: the
  // wait the call would have needed. (Rate limiter: added in 0.3.)
  Duration retry_in = Duration::zero();
  // kWait in a bulkhead's queue: the call's place, granted when a slot
  // reaches it; null for a plain timed wait. (Added in 0.3.)
  std::shared_ptr<BulkheadTicket> ticket;
  // kRefuse: the call has a fallback, which answers it (counted once in the
  // metrics' fallbacks).
  bool use_fallback = false;

  bool go() const { return action == Action::kGo; }
  bool refused() const { return action == Action::kRefuse; }
  bool wait() const { return action == Action::kWait; }  // (Added in 0.3.)
};

// What a blocking front door does with a kWait admission: waits on the
// ticket (a bulkhead's queue) up to `delay`, on the steady clock when
// `clock` is a SystemClock; with any other clock (a FakeClock in tests) a
// ticket not yet granted waits `delay` through clock.SleepFor (so its wait
// timeout passes in fake time); a plain timed wait (rate limiter) sleeps
// through clock.SleepFor. The caller then calls Admit(clock.Now()) again.
// (Added in 0.3.)
void WaitForAdmission(const AttemptAdmission& admission, Clock& clock);

// Per-call choices, given to Pipeline::Begin. Every field has a default that
// leaves the pipeline's own setting in force.
struct CallOptions {
  // The call's key: which breaker of the pipeline's registry guards it, and
  // the metrics name when the pipeline reports by key (HTTP: the origin,
  // scheme://host:port). Borrowed only during Begin.
  std::string_view key;
  // When not empty, which breaker of the pipeline's registry guards the
  // call, instead of `key` (the metrics stay by `key`): the HTTP clients'
  // breaker key by host, path or template. Borrowed only during Begin.
  std::string_view breaker_key;
  // Replaces the pipeline's retry policy for this call (an HTTP request's own
  // attempts or deadline). REQUIRES: outlives the call.
  const RetryPolicy* policy = nullptr;
  // False for a request that must not be repeated once sent (POST or PATCH
  // without an idempotency key): only failures before any byte was sent are
  // then retried (DESIGN.md section 5, "Methods").
  bool replay_safe = true;
  // The attempt timeout when the policy sets none (an HTTP client's default
  // timeout); still trimmed to the deadline. Must be > 0 when set.
  std::optional<Duration> attempt_timeout;
  // The caller holds a fallback for this call: a give-up or a refusal then
  // says use_fallback (and counts a fallback) instead of failing.
  bool fallback = false;
  // Testing mode (Python's mulligan.testing.set_testing, and the same switch
  // of every front door): when > 0, at most this many attempts, whatever the
  // policy says (a policy with fewer keeps its own); 0 leaves the policy's.
  int max_attempts = 0;
  // Testing mode: every retry waits zero. The decision is otherwise the
  // policy's, deadline checks included.
  bool no_wait = false;
  // Seeds this call's jitter generator, replacing the policy's seed (or the
  // fresh seed an unseeded policy draws): calls that share one policy each
  // get their own reproducible delays (RetryPolicy::Begin with a seed).
  // Default: unset (the policy's rule). (Added in 0.6.)
  std::optional<uint64_t> seed;
};

// One logical call. Made by Pipeline::Begin; the caller steps it with Admit
// before each attempt and Record after it, until Record returns a stop
// decision or Admit refuses. A call that ends otherwise must be told, or its
// breaker permit is held until the permit times out: with Cancel when its
// caller cancelled it (a cancelled task or context, KeyboardInterrupt, an
// AbortSignal: never counted as a failure, DESIGN.md), with Abandon when
// the end is a failure (a hook's error, a panic, a transfer torn down).
//
// Thread-safety: not thread-safe; one call belongs to one logical call (one
// thread, or one coroutine at a time). The pipeline it came from is shared.
// REQUIRES: the pipeline (and CallOptions::policy) outlive the call.
class Call {
 public:
  // Moving hands the call over; the moved-from object is finished (its
  // destructor abandons nothing).
  Call(Call&& other) noexcept;
  Call& operator=(Call&& other) noexcept;
  // Not copyable: a copy would hold the same breaker permit twice.
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;
  // A call destroyed before it finished is abandoned (see Abandon), at the
  // time of its last step.
  ~Call();

  // Asks every strategy, outermost first, whether the next attempt may run
  // at `now`. After a refusal the call is finished; further Admit calls
  // return the same refusal. Calling Admit twice without a Record in
  // between returns the first admission again (no second permit is taken).
  AttemptAdmission Admit(TimePoint now);

  // Records the outcome of the admitted attempt, which ended at `now`, and
  // returns what to do: retry after `delay`, or stop (`reason` kSucceeded
  // for a success). After a stop the call is finished and further calls
  // return the same decision. A Record with no Admit before it counts an
  // attempt that ran unguarded (Python's first attempt, which runs before
  // any engine call when the pipeline has no breaker).
  Decision Record(const Outcome& outcome, TimePoint now);

  // Ends a call that stopped on a failure outside its attempts (a hook that
  // raised, a panic, an aborted transfer, a client closed under it; a
  // caller's cancel is Cancel's, 0.6): frees what strategies hold (a
  // half-open probe's slot is freed without judging the dependency) and
  // reports the call as failed (stop reason kTerminal) with
  // `attempts_in_flight` more attempts than were recorded (1 when an
  // attempt was running). Does nothing once finished.
  void Abandon(TimePoint now, int attempts_in_flight = 0);

  // Ends a call its caller cancelled because it is no longer wanted: a
  // hedged request's losing copy (hedging/hedging.h: "a cancelled copy is
  // recorded neither as a success nor as a failure"), a cancelled task or
  // context, KeyboardInterrupt, an AbortSignal (DESIGN.md: never counted as
  // a failure). Frees what strategies
  // hold as Abandon does (the breaker permit is released as kIgnored, which
  // frees a half-open slot without judging the dependency; the retry budget
  // is not told), but the metrics count the call as `cancelled`, not as a
  // failure, with `attempts_in_flight` more attempts than were recorded
  // (Metrics::CallCancelled). Does nothing once finished. (Added in 0.6.)
  void Cancel(TimePoint now, int attempts_in_flight = 0);

  // The kCircuitOpen status after a breaker refusal ("circuit breaker 'db'
  // is open; next probe in 12.500 s"), kBulkheadFull or kRateLimited after
  // a bulkhead's or limiter's; OK otherwise. Built on demand.
  Status RefusalStatus() const;

  // Attempts recorded so far.
  int attempts() const { return session_.attempts(); }
  // When the call began (the `now` given to Begin).
  TimePoint start() const { return start_; }
  // Total delay of the retries decided so far.
  Duration total_delay() const { return total_delay_; }
  // The time left before the deadline at `now`, or nullopt without one.
  std::optional<Duration> TimeLeft(TimePoint now) const { return session_.TimeLeft(now); }
  // True once Record stopped, Admit refused or Abandon ran.
  bool finished() const { return phase_ == Phase::kFinished; }
  // The last decision Record returned (a default stop before any).
  const Decision& last_decision() const { return last_; }
  // The last admission Admit returned.
  const AttemptAdmission& last_admission() const { return admission_; }
  // The breaker guarding this call, or null.
  CircuitBreaker* breaker() const { return state_.breaker; }
  // The metrics this call reports to, or null.
  Metrics* metrics() const { return metrics_; }
  // The retry policy in force for this call.
  const RetryPolicy& policy() const { return session_.policy(); }

 private:
  friend class Pipeline;
  enum class Phase : int { kReady, kAdmitted, kWaiting, kFinished };
  Call(const Pipeline* pipeline, const RetryPolicy* policy, TimePoint now,
       const CallOptions& options);
  void Finish(bool succeeded, StopReason reason, int attempts, TimePoint now, bool fallback);

  const Pipeline* pipeline_;
  RetrySession session_;
  internal::CallState state_;
  Metrics* metrics_ = nullptr;
  TimePoint start_;
  TimePoint last_step_;
  Duration total_delay_ = Duration::zero();
  std::optional<Duration> default_timeout_;
  int max_attempts_ = 0;
  bool no_wait_ = false;
  bool fallback_ = false;
  Phase phase_ = Phase::kReady;
  AttemptAdmission admission_;
  Decision last_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_PIPELINE_CALL_H_
