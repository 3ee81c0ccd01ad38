// Backoff strategies and jitter (DESIGN.md section 4; see backoff.h for the rules).
#include "mulligan/retry/backoff.h"

#include "internal/format.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace mulligan {
inline namespace v0 {

const char* BackoffKindName(BackoffKind kind) {
  switch (kind) {
    case BackoffKind::kConstant: return "constant";
    case BackoffKind::kLinear: return "linear";
    case BackoffKind::kExponential: return "exponential";
    case BackoffKind::kDecorrelated: return "decorrelated";
  }
  return "unknown";
}

const char* JitterKindName(JitterKind kind) {
  switch (kind) {
    case JitterKind::kNone: return "none";
    case JitterKind::kFull: return "full";
    case JitterKind::kEqual: return "equal";
    case JitterKind::kProportional: return "proportional";
  }
  return "unknown";
}

Result<BackoffKind> ParseBackoffKind(std::string_view name) {
  for (BackoffKind kind : {BackoffKind::kConstant, BackoffKind::kLinear,
                           BackoffKind::kExponential, BackoffKind::kDecorrelated}) {
    if (name == BackoffKindName(kind)) return kind;
  }
  return InvalidArgumentError("backoff must be one of constant, linear, exponential, "
                              "decorrelated; got \"" + std::string(name) + "\"");
}

Result<JitterKind> ParseJitterKind(std::string_view name) {
  for (JitterKind kind :
       {JitterKind::kNone, JitterKind::kFull, JitterKind::kEqual, JitterKind::kProportional}) {
    if (name == JitterKindName(kind)) return kind;
  }
  return InvalidArgumentError("jitter must be one of none, full, equal, proportional; got \"" +
                              std::string(name) + "\"");
}

namespace {

bool IsKnownBackoff(BackoffKind kind) {
  return kind >= BackoffKind::kConstant && kind <= BackoffKind::kDecorrelated;
}

bool IsKnownJitter(JitterKind kind) {
  return kind >= JitterKind::kNone && kind <= JitterKind::kProportional;
}

// The exact value of a refused duration, in seconds ("-1e-09 s" for -1 ns),
// so that a value just outside the range does not read as "-0.000 s".
std::string ExactSeconds(Duration d) {
  return internal::FormatDouble(std::chrono::duration<double>(d).count()) + " s";
}

}  // namespace

Result<Backoff> Backoff::Create(const BackoffOptions& options) {
  if (!IsKnownBackoff(options.kind)) {
    return InvalidArgumentError("backoff kind " + std::to_string(static_cast<int>(options.kind)) +
                                " is not a known strategy");
  }
  if (!IsKnownJitter(options.jitter)) {
    return InvalidArgumentError("jitter kind " + std::to_string(static_cast<int>(options.jitter)) +
                                " is not a known jitter mode");
  }
  if (options.base < Duration::zero()) {
    return InvalidArgumentError("base_delay must be >= 0, got " + ExactSeconds(options.base));
  }
  if (options.max_delay < Duration::zero()) {
    return InvalidArgumentError("max_delay must be >= 0, got " + ExactSeconds(options.max_delay));
  }
  if (!std::isfinite(options.multiplier) || options.multiplier < 0) {
    return InvalidArgumentError("multiplier must be a finite number >= 0, got " +
                                internal::FormatDouble(options.multiplier));
  }
  if (!std::isfinite(options.jitter_fraction) || options.jitter_fraction < 0 ||
      options.jitter_fraction > 1) {
    // f > 1 would let uniform(1 - f, 1 + f) go negative: a negative wait.
    return InvalidArgumentError("jitter_fraction must be in [0, 1], got " +
                                internal::FormatDouble(options.jitter_fraction));
  }
  if (options.min_delay < Duration::zero() || options.min_delay > options.max_delay) {
    return InvalidArgumentError("min_delay must be in [0, max_delay " +
                                ExactSeconds(options.max_delay) + "], got " +
                                ExactSeconds(options.min_delay));
  }
  if (options.wait) {
    Status s = ValidateWait(*options.wait);
    if (!s.ok()) return s;
  }
  return Backoff(options);
}

Duration Backoff::Delay(uint64_t retries_made, Duration previous, Random& random) const {
  // Work in double nanoseconds: every overflow becomes inf and every inf or
  // NaN is caught by the comparisons against the cap below.
  const double cap = static_cast<double>(options_.max_delay.count());
  const double base = static_cast<double>(options_.base.count());
  const double n = static_cast<double>(retries_made);

  double delay;
  if (options_.wait) {
    // A composed wait: every jitter term is inside it; the cap below applies
    // after them (DESIGN.md section 5).
    delay = EvaluateWaitNanos(*options_.wait, retries_made, random);
  } else if (options_.kind == BackoffKind::kDecorrelated) {
    // AWS: sleep = min(cap, uniform(base, 3 * sleep)), sleep starting at base.
    // base 0 is no wait whatever `previous` the caller passes.
    const double prev = std::max(static_cast<double>(previous.count()), base);
    delay = base == 0.0 ? 0.0 : random.Uniform(base, 3.0 * prev);
  } else {
    switch (options_.kind) {
      case BackoffKind::kConstant: delay = base; break;
      case BackoffKind::kLinear: delay = base * (n + 1.0); break;
      default:  // kExponential
        // base 0 or multiplier 0 is no wait at every n. Tested before the
        // product: multiplier^n overflows to inf near n = 1024 (for 2), and
        // 0 * inf is NaN, which the cap below would turn into max_delay.
        delay = (base == 0.0 || options_.multiplier == 0.0)
                    ? 0.0
                    : base * std::pow(options_.multiplier, n);
        break;
    }
    // Cap before jitter (keeps full/equal jitter's spread at the cap).
    if (!(delay <= cap)) delay = cap;  // also maps NaN and inf to the cap
    const double f = options_.jitter_fraction;
    switch (options_.jitter) {
      case JitterKind::kNone: break;
      case JitterKind::kFull: delay = random.Uniform(0.0, delay); break;
      case JitterKind::kEqual: delay = delay / 2.0 + random.Uniform(0.0, delay / 2.0); break;
      case JitterKind::kProportional:
        delay = std::min(delay, cap / (1.0 + f)) * random.Uniform(1.0 - f, 1.0 + f);
        break;
    }
  }
  // Cap after jitter; the exact cap is returned as the Duration itself. Then
  // the floor (min_delay <= max_delay, so the result stays under the cap).
  if (!(delay < cap)) return options_.max_delay;
  if (!(delay > 0.0)) return options_.min_delay;
  return std::max(options_.min_delay, Duration(static_cast<Duration::rep>(delay)));
}

}  // namespace v0
}  // namespace mulligan
