// mulligan/retry/backoff.h — backoff strategies, jitter and the max_delay cap.
//
// The rules are DESIGN.md section 4. With n = number of retries already made
// (0 before the first retry):
//   constant:     d = base
//   linear:       d = base * (n + 1)
//   exponential:  d = base * multiplier^n
//   decorrelated: d = uniform(base, 3 * previous), previous starts at base
//                 (AWS Architecture Blog, "Exponential Backoff And Jitter", 2015).
//                 It carries its own randomness; the jitter mode is not applied
//                 on top of it.
// The un-jittered delay is capped at max_delay before jitter (as in the AWS
// article, so that full jitter keeps its spread at the cap) and the result is
// capped again after jitter, so every delay lies in [0, max_delay]:
//   none:          d
//   full:          uniform(0, d)
//   equal:         d/2 + uniform(0, d/2)
//   proportional:  min(d, max_delay / (1 + f)) * uniform(1 - f, 1 + f)
//                  (callers that all reached the cap still spread out).
// All arithmetic saturates: an overflow or inf becomes max_delay (the double
// product is compared with the cap before any conversion, so nothing wraps);
// n may be as large as 2^64 - 1. base 0 means no wait at every n with every
// strategy and jitter, and multiplier 0 means no wait at every n with
// kExponential (the one strategy that reads it), whatever the other options:
// 0 * multiplier^n is 0 even where multiplier^n overflows to inf.
//
// min_delay (default 0) raises every backoff delay to at least that much
// (tenacity's wait_exponential(min=...), for every strategy); it is applied
// with the cap, after jitter, so every delay lies in [min_delay, max_delay].
// A composed `wait` (mulligan/retry/wait.h), when set, replaces kind, base,
// multiplier and jitter; min_delay and max_delay still clamp its value.
//
// Accepted ranges (Backoff::Create refuses anything else with
// kInvalidArgument naming the field; these are exactly the ranges the C
// setters, the Python arguments and the config fields accept):
//   base, max_delay    [0, Duration::max()]  (>= 0 ns)
//   multiplier         [0, DBL_MAX]          (finite, >= 0)
//   jitter_fraction    [0, 1]
//   min_delay          [0, max_delay]
//   wait               see ValidateWait (wait.h)

#ifndef MULLIGAN_RETRY_BACKOFF_H_
#define MULLIGAN_RETRY_BACKOFF_H_

#include <cstdint>
#include <optional>
#include <string_view>

#include "mulligan/base/clock.h"
#include "mulligan/base/random.h"
#include "mulligan/base/status.h"
#include "mulligan/retry/wait.h"

namespace mulligan {
inline namespace v0 {

enum class BackoffKind : int {
  kConstant = 0,
  kLinear = 1,
  kExponential = 2,
  kDecorrelated = 3,
};

enum class JitterKind : int {
  kNone = 0,
  kFull = 1,
  kEqual = 2,
  kProportional = 3,
};

// Returns "constant", "linear", "exponential", "decorrelated" (or "unknown").
const char* BackoffKindName(BackoffKind kind);
// Returns "none", "full", "equal", "proportional" (or "unknown").
const char* JitterKindName(JitterKind kind);
// Parses the names above (exact, lower case). kInvalidArgument on anything else.
Result<BackoffKind> ParseBackoffKind(std::string_view name);
Result<JitterKind> ParseJitterKind(std::string_view name);

// Plain options; defaults are DESIGN.md's: exponential, base 200 ms,
// multiplier 2, full jitter, max_delay 10 s.
struct BackoffOptions {
  BackoffKind kind = BackoffKind::kExponential;
  // The base delay. Must be >= 0.
  Duration base = std::chrono::milliseconds(200);
  // Growth factor for kExponential. Must be finite and >= 0 (values below 1
  // shrink the delay; 0 means no wait).
  double multiplier = 2.0;
  // Upper bound of every delay. Must be >= 0.
  Duration max_delay = std::chrono::seconds(10);
  JitterKind jitter = JitterKind::kFull;
  // f for kProportional: the delay is scaled by uniform(1 - f, 1 + f).
  // Must be in [0, 1] (a larger f could give a negative wait: rejected).
  // gRPC's connection backoff uses 0.2.
  double jitter_fraction = 0.2;
  // The least delay of every backoff (not of Retry-After hints), applied
  // after jitter together with max_delay. Must be in [0, max_delay].
  // Default 0. (Appended in 0.2.)
  Duration min_delay = Duration::zero();
  // A composed wait that replaces kind, base, multiplier and jitter (see
  // wait.h); min_delay and max_delay still clamp it. Default: unset (the
  // strategy above). (Appended in 0.2.)
  std::optional<WaitExpr> wait;
};

// A validated, immutable backoff schedule.
//
// Thread-safety: immutable after Create; Delay() is const and safe from many
// threads as long as each passes its own Random.
class Backoff {
 public:
  // Validates `options`. Returns kInvalidArgument naming the bad field.
  static Result<Backoff> Create(const BackoffOptions& options);

  // Returns the delay before the next attempt, in [min_delay, max_delay].
  //   retries_made: retries already made (0 before the first retry).
  //   previous:     the previous delay returned (used by kDecorrelated; pass
  //                 base, or any value <= base, before the first retry).
  //   random:       the jitter source (not used by kNone with a non-decorrelated
  //                 strategy).
  // Never fails; pure apart from drawing from `random`.
  Duration Delay(uint64_t retries_made, Duration previous, Random& random) const;

  const BackoffOptions& options() const { return options_; }

 private:
  explicit Backoff(const BackoffOptions& options) : options_(options) {}
  BackoffOptions options_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_RETRY_BACKOFF_H_
