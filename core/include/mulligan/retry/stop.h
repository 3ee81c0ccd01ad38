// mulligan/retry/stop.h — composable stop conditions: a small immutable
// expression that replaces RetryOptions::max_attempts.
//
// Peers: tenacity's stop_after_attempt / stop_after_delay / stop_before_delay
// / stop_never and `|` (stop_any), `&` (stop_all). After each retryable
// failure the session asks the expression whether to stop:
//   after_attempts(k)   stop when k attempts were made (k >= 1)
//   after_elapsed(d)    stop when the time since the first attempt started
//                       has reached d, or when the next wait would reach it
//                       (no attempt starts at or after d; DESIGN.md section 5's
//                       deadline rule, tenacity's stop_before_delay)
//   never               never stop (unlimited attempts): refused unless the
//                       expression or the policy's deadline bounds it
//   predicate(i)        stop when the caller says so: bit i of
//                       Outcome::stop_predicates (the Python layer sets it from
//                       a user's predicate on the failure path; the engine
//                       never calls user code)
//   any(t1, t2, ...)    stop when any term says stop (tenacity's `|`)
//   all(t1, t2, ...)    stop when every term says stop (tenacity's `&`)
// A term that stops gives the reason: after_attempts -> attempts_exhausted,
// after_elapsed -> deadline, predicate -> stop_condition; any gives its first
// stopping term's, all its last term's.
//
// An after_elapsed term at the top (alone, or a direct term of a top-level
// any) also bounds every attempt like RetryOptions::deadline: the policy's
// effective deadline is the least of them and of RetryOptions::deadline.

#ifndef MULLIGAN_RETRY_STOP_H_
#define MULLIGAN_RETRY_STOP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

enum class StopReason : int;

// The kind of one stop term. Values are pinned (they cross the C ABI as
// MULLIGAN_STOP_*); append only.
enum class StopKind : int {
  kAfterAttempts = 0,
  kAfterElapsed = 1,
  kNever = 2,
  kPredicate = 3,
  kAny = 4,
  kAll = 5,
};

// Returns "after_attempts", "after_elapsed", "never", "predicate", "any",
// "all" (or "unknown").
const char* StopKindName(StopKind kind);

// The number of predicate slots (bits of Outcome::stop_predicates).
inline constexpr int kMaxStopPredicates = 32;

// One node of a stop expression: a plain value. Build it with the factories.
//
// Thread-safety: a value type; a const StopExpr may be read from many threads.
struct StopExpr {
  StopKind kind = StopKind::kNever;
  // after_attempts: the attempts (>= 1).
  int attempts = 0;
  // after_elapsed: the time since the first attempt started (> 0).
  Duration elapsed = Duration::zero();
  // predicate: the slot, in [0, kMaxStopPredicates).
  int predicate = 0;
  // any, all: the terms (1 to 64).
  std::vector<StopExpr> terms;

  static StopExpr AfterAttempts(int attempts);
  static StopExpr AfterElapsed(Duration elapsed);
  static StopExpr Never();
  static StopExpr Predicate(int slot);
  // any and all flatten a directly nested term of the same kind.
  static StopExpr Any(std::vector<StopExpr> terms);
  static StopExpr All(std::vector<StopExpr> terms);

  // Returns a readable form, e.g. "after_attempts(5) | after_elapsed(30s)".
  std::string ToString() const;
};

// What a stop expression is asked about, after a retryable failure.
struct StopContext {
  // Attempts made, the one that just failed included.
  int attempts = 0;
  // Time since the first attempt started.
  Duration elapsed = Duration::zero();
  // The wait before the next attempt, once it is known.
  std::optional<Duration> delay;
  // Outcome::stop_predicates of the failure.
  uint32_t predicates = 0;
};

// Checks `stop`; kInvalidArgument names the bad term ("stop: after_attempts
// must be >= 1, got 0"). `deadline_set`: whether RetryOptions::deadline bounds
// the call; without it an unbounded expression (never, a predicate alone,
// any without a bounded term, all with an unbounded one) is refused, so that
// unlimited attempts always end.
Status ValidateStop(const StopExpr& stop, bool deadline_set);

// Returns the reason to stop, or nullopt to go on. Never fails.
std::optional<StopReason> EvaluateStop(const StopExpr& stop, const StopContext& context);

// Returns the least after_elapsed of the top level (see the file comment),
// or nullopt.
std::optional<Duration> TopLevelElapsed(const StopExpr& stop);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_RETRY_STOP_H_
