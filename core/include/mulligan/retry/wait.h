// mulligan/retry/wait.h — composable waits: a small immutable expression of
// delay terms that replaces a backoff strategy and its jitter.
//
// Peers: tenacity's wait_fixed / wait_incrementing / wait_exponential /
// wait_random / wait_chain and `+`; urllib3 Retry's backoff_jitter (an
// additive uniform(0, jitter)); stamina's wait_initial / wait_max /
// wait_jitter. Every front door (C++, C, Python, the HTTP clients, config
// files) builds the same expression, and the engine evaluates it with the
// policy's seeded generator, so every front door gets the same delays.
//
// With n = retries already made (0 before the first retry), a term's value is
//   constant(d)                       d
//   linear(start, increment[, max])   min(start + increment * n, max)
//   exponential(base, mult[, max])    min(base * mult^n, max)   (base 0 or
//                                     mult 0: no wait at every n)
//   uniform(low, high)                uniform(low, high)         (one draw)
//   jitter(max)                       uniform(0, max)            (one draw)
//   sum(t1, t2, ...)                  t1 + t2 + ...              (terms in order)
//   chain(t1, t2, ..., tk)            t(min(n, k - 1) + 1): t1 before the first
//                                     retry, t2 before the second, ..., and tk
//                                     for every later one (tenacity's
//                                     wait_chain); n inside the chosen term is
//                                     still the call's retries made.
// Draws happen in the order the terms are written, one per uniform or jitter
// term that is evaluated (an unchosen chain term draws nothing).
// The policy then clamps the whole value to [min_delay, max_delay] of its
// BackoffOptions, after every jitter term (DESIGN.md section 5: the cap
// applies after jitter). All arithmetic is in double nanoseconds and
// saturates: an overflow or inf reaches the cap, never wraps.
//
// Accepted ranges (ValidateWait refuses anything else with kInvalidArgument
// naming the term): every Duration >= 0; multiplier finite and >= 0;
// uniform's low <= high; max >= 0 when set; sum and chain hold 1..64 terms;
// nesting at most 16 deep.

#ifndef MULLIGAN_RETRY_WAIT_H_
#define MULLIGAN_RETRY_WAIT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/base/random.h"
#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

// The kind of one wait term. Values are pinned (they cross the C ABI as
// MULLIGAN_WAIT_*); append only.
enum class WaitKind : int {
  kConstant = 0,
  kLinear = 1,
  kExponential = 2,
  kUniform = 3,
  kJitter = 4,
  kSum = 5,
  kChain = 6,
};

// Returns "constant", "linear", "exponential", "uniform", "jitter", "sum",
// "chain" (or "unknown").
const char* WaitKindName(WaitKind kind);

// One node of a wait expression: a plain value, copied freely. Build it with
// the factories below; ValidateWait checks it (RetryPolicy::Create calls it).
//
// Thread-safety: a value type; a const WaitExpr may be read from many threads.
struct WaitExpr {
  WaitKind kind = WaitKind::kConstant;
  // constant: the delay; linear: start; exponential: base; uniform: low;
  // jitter: the largest addition.
  Duration first = Duration::zero();
  // linear: the increment per retry; uniform: high. Unused otherwise.
  Duration second = Duration::zero();
  // exponential: the growth factor per retry. Unused otherwise.
  double multiplier = 2.0;
  // linear, exponential: this term's own cap (before the sum and the
  // policy's max_delay). Unset: no cap of its own.
  std::optional<Duration> max;
  // sum, chain: the terms, in order.
  std::vector<WaitExpr> terms;

  static WaitExpr Constant(Duration delay);
  static WaitExpr Linear(Duration start, Duration increment,
                         std::optional<Duration> max = std::nullopt);
  static WaitExpr Exponential(Duration base, double multiplier,
                              std::optional<Duration> max = std::nullopt);
  static WaitExpr Uniform(Duration low, Duration high);
  static WaitExpr Jitter(Duration max);
  // Sums `terms`; a sum inside is flattened into this one (same value).
  static WaitExpr Sum(std::vector<WaitExpr> terms);
  static WaitExpr Chain(std::vector<WaitExpr> terms);

  // Returns a readable form, e.g. "exponential(0.1s, 2, max=5s) + jitter(1s)".
  std::string ToString() const;
};

// Checks every term of `wait`; `field` names it in the message ("wait").
// Returns kInvalidArgument naming the bad term and value.
Status ValidateWait(const WaitExpr& wait, const std::string& field = "wait");

// Returns the value of a validated `wait` before retry n + 1, in nanoseconds
// as a double: >= 0, possibly inf (the caller clamps). Draws from `random`
// once per uniform or jitter term evaluated, in order. Never fails.
double EvaluateWaitNanos(const WaitExpr& wait, uint64_t retries_made, Random& random);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_RETRY_WAIT_H_
