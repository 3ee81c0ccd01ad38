// Composable waits (see mulligan/retry/wait.h for the rules).
#include "mulligan/retry/wait.h"

#include "internal/format.h"

#include <algorithm>
#include <cmath>
#include <utility>

namespace mulligan {
inline namespace v0 {

namespace {

constexpr size_t kMaxTerms = 64;
constexpr int kMaxDepth = 16;

std::string Seconds(Duration d) {
  return internal::FormatDouble(std::chrono::duration<double>(d).count()) + "s";
}

double Nanos(Duration d) { return static_cast<double>(d.count()); }

// Applies an optional per-term cap; NaN and inf reach the cap.
double CapTerm(double value, const std::optional<Duration>& max) {
  if (!max) return value;
  const double cap = Nanos(*max);
  return value <= cap ? value : cap;
}

Status CheckNonNegative(const std::string& where, const char* what, Duration d) {
  if (d < Duration::zero()) {
    return InvalidArgumentError(where + ": " + what + " must be >= 0, got " + Seconds(d));
  }
  return OkStatus();
}

Status Validate(const WaitExpr& w, const std::string& where, int depth) {
  if (depth > kMaxDepth) {
    return InvalidArgumentError(where + ": waits nest at most " + std::to_string(kMaxDepth) +
                                " deep");
  }
  const std::string here = where + " (" + WaitKindName(w.kind) + ")";
  switch (w.kind) {
    case WaitKind::kConstant:
      return CheckNonNegative(here, "the delay", w.first);
    case WaitKind::kJitter:
      return CheckNonNegative(here, "max", w.first);
    case WaitKind::kLinear:
    case WaitKind::kExponential: {
      const bool linear = w.kind == WaitKind::kLinear;
      Status s = CheckNonNegative(here, linear ? "start" : "base", w.first);
      if (!s.ok()) return s;
      if (linear) {
        s = CheckNonNegative(here, "increment", w.second);
        if (!s.ok()) return s;
      } else if (!std::isfinite(w.multiplier) || w.multiplier < 0) {
        return InvalidArgumentError(here + ": multiplier must be a finite number >= 0, got " +
                                    internal::FormatDouble(w.multiplier));
      }
      if (w.max) return CheckNonNegative(here, "max", *w.max);
      return OkStatus();
    }
    case WaitKind::kUniform: {
      Status s = CheckNonNegative(here, "min", w.first);
      if (!s.ok()) return s;
      if (w.second < w.first) {
        return InvalidArgumentError(here + ": max must be >= min, got min " + Seconds(w.first) +
                                    " and max " + Seconds(w.second));
      }
      return OkStatus();
    }
    case WaitKind::kSum:
    case WaitKind::kChain: {
      if (w.terms.empty() || w.terms.size() > kMaxTerms) {
        return InvalidArgumentError(here + " must hold 1 to " + std::to_string(kMaxTerms) +
                                    " terms, got " + std::to_string(w.terms.size()));
      }
      for (size_t i = 0; i < w.terms.size(); ++i) {
        Status s = Validate(w.terms[i], where + " term " + std::to_string(i + 1), depth + 1);
        if (!s.ok()) return s;
      }
      return OkStatus();
    }
  }
  return InvalidArgumentError(where + ": wait kind " + std::to_string(static_cast<int>(w.kind)) +
                              " is not a known wait");
}

}  // namespace

const char* WaitKindName(WaitKind kind) {
  switch (kind) {
    case WaitKind::kConstant: return "constant";
    case WaitKind::kLinear: return "linear";
    case WaitKind::kExponential: return "exponential";
    case WaitKind::kUniform: return "uniform";
    case WaitKind::kJitter: return "jitter";
    case WaitKind::kSum: return "sum";
    case WaitKind::kChain: return "chain";
  }
  return "unknown";
}

WaitExpr WaitExpr::Constant(Duration delay) {
  WaitExpr w;
  w.kind = WaitKind::kConstant;
  w.first = delay;
  return w;
}

WaitExpr WaitExpr::Linear(Duration start, Duration increment, std::optional<Duration> max) {
  WaitExpr w;
  w.kind = WaitKind::kLinear;
  w.first = start;
  w.second = increment;
  w.max = max;
  return w;
}

WaitExpr WaitExpr::Exponential(Duration base, double multiplier, std::optional<Duration> max) {
  WaitExpr w;
  w.kind = WaitKind::kExponential;
  w.first = base;
  w.multiplier = multiplier;
  w.max = max;
  return w;
}

WaitExpr WaitExpr::Uniform(Duration low, Duration high) {
  WaitExpr w;
  w.kind = WaitKind::kUniform;
  w.first = low;
  w.second = high;
  return w;
}

WaitExpr WaitExpr::Jitter(Duration max) {
  WaitExpr w;
  w.kind = WaitKind::kJitter;
  w.first = max;
  return w;
}

WaitExpr WaitExpr::Sum(std::vector<WaitExpr> terms) {
  WaitExpr w;
  w.kind = WaitKind::kSum;
  for (WaitExpr& t : terms) {
    if (t.kind == WaitKind::kSum) {
      for (WaitExpr& inner : t.terms) w.terms.push_back(std::move(inner));
    } else {
      w.terms.push_back(std::move(t));
    }
  }
  return w;
}

WaitExpr WaitExpr::Chain(std::vector<WaitExpr> terms) {
  WaitExpr w;
  w.kind = WaitKind::kChain;
  w.terms = std::move(terms);
  return w;
}

std::string WaitExpr::ToString() const {
  const std::string cap = max ? ", max=" + Seconds(*max) : "";
  switch (kind) {
    case WaitKind::kConstant: return "constant(" + Seconds(first) + ")";
    case WaitKind::kLinear: return "linear(" + Seconds(first) + ", " + Seconds(second) + cap + ")";
    case WaitKind::kExponential:
      return "exponential(" + Seconds(first) + ", " + internal::FormatDouble(multiplier) + cap +
             ")";
    case WaitKind::kUniform: return "uniform(" + Seconds(first) + ", " + Seconds(second) + ")";
    case WaitKind::kJitter: return "jitter(" + Seconds(first) + ")";
    case WaitKind::kSum:
    case WaitKind::kChain: {
      const bool sum = kind == WaitKind::kSum;
      std::string out = sum ? "" : "chain(";
      for (size_t i = 0; i < terms.size(); ++i) {
        if (i > 0) out += sum ? " + " : ", ";
        const bool paren = sum && terms[i].kind == WaitKind::kSum;
        out += paren ? "(" + terms[i].ToString() + ")" : terms[i].ToString();
      }
      return sum ? out : out + ")";
    }
  }
  return "unknown";
}

Status ValidateWait(const WaitExpr& wait, const std::string& field) {
  return Validate(wait, field, 0);
}

double EvaluateWaitNanos(const WaitExpr& w, uint64_t retries_made, Random& random) {
  const double n = static_cast<double>(retries_made);
  switch (w.kind) {
    case WaitKind::kConstant: return Nanos(w.first);
    case WaitKind::kLinear:
      return CapTerm(Nanos(w.first) + Nanos(w.second) * n, w.max);
    case WaitKind::kExponential: {
      // base 0 or multiplier 0 is no wait at every n (0 * inf would be NaN).
      if (w.first == Duration::zero() || w.multiplier == 0.0) return 0.0;
      return CapTerm(Nanos(w.first) * std::pow(w.multiplier, n), w.max);
    }
    case WaitKind::kUniform: return random.Uniform(Nanos(w.first), Nanos(w.second));
    case WaitKind::kJitter: return random.Uniform(0.0, Nanos(w.first));
    case WaitKind::kSum: {
      double total = 0.0;
      for (const WaitExpr& t : w.terms) total += EvaluateWaitNanos(t, retries_made, random);
      return total;
    }
    case WaitKind::kChain: {
      if (w.terms.empty()) return 0.0;
      const uint64_t last = w.terms.size() - 1;
      return EvaluateWaitNanos(w.terms[std::min<uint64_t>(retries_made, last)], retries_made,
                               random);
    }
  }
  return 0.0;
}

}  // namespace v0
}  // namespace mulligan
