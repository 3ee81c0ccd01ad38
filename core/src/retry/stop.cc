// Composable stop conditions (see mulligan/retry/stop.h for the rules).
#include "mulligan/retry/stop.h"

#include "internal/format.h"
#include "internal/saturating.h"
#include "mulligan/retry/policy.h"

#include <algorithm>
#include <utility>

namespace mulligan {
inline namespace v0 {

namespace {

constexpr size_t kMaxTerms = 64;
constexpr int kMaxDepth = 16;

std::vector<StopExpr> Flatten(StopKind kind, std::vector<StopExpr> terms) {
  std::vector<StopExpr> out;
  for (StopExpr& t : terms) {
    if (t.kind == kind) {
      for (StopExpr& inner : t.terms) out.push_back(std::move(inner));
    } else {
      out.push_back(std::move(t));
    }
  }
  return out;
}

bool Bounded(const StopExpr& s) {
  switch (s.kind) {
    case StopKind::kAfterAttempts:
    case StopKind::kAfterElapsed: return true;
    case StopKind::kNever:
    case StopKind::kPredicate: return false;
    case StopKind::kAny:
      return std::any_of(s.terms.begin(), s.terms.end(), Bounded);
    case StopKind::kAll:
      return std::all_of(s.terms.begin(), s.terms.end(), Bounded);
  }
  return false;
}

Status Validate(const StopExpr& s, const std::string& where, int depth) {
  if (depth > kMaxDepth) {
    return InvalidArgumentError(where + ": stop conditions nest at most " +
                                std::to_string(kMaxDepth) + " deep");
  }
  switch (s.kind) {
    case StopKind::kAfterAttempts:
      if (s.attempts < 1) {
        return InvalidArgumentError(where + ": after_attempts must be >= 1, got " +
                                    std::to_string(s.attempts));
      }
      return OkStatus();
    case StopKind::kAfterElapsed:
      if (s.elapsed <= Duration::zero()) {
        return InvalidArgumentError(where + ": after_elapsed must be > 0, got " +
                                    internal::FormatSeconds(s.elapsed));
      }
      return OkStatus();
    case StopKind::kNever: return OkStatus();
    case StopKind::kPredicate:
      if (s.predicate < 0 || s.predicate >= kMaxStopPredicates) {
        return InvalidArgumentError(where + ": predicate slot must be in [0, " +
                                    std::to_string(kMaxStopPredicates) + "), got " +
                                    std::to_string(s.predicate));
      }
      return OkStatus();
    case StopKind::kAny:
    case StopKind::kAll: {
      if (s.terms.empty() || s.terms.size() > kMaxTerms) {
        return InvalidArgumentError(where + " (" + StopKindName(s.kind) + ") must hold 1 to " +
                                    std::to_string(kMaxTerms) + " terms, got " +
                                    std::to_string(s.terms.size()));
      }
      for (size_t i = 0; i < s.terms.size(); ++i) {
        Status st = Validate(s.terms[i], where + " term " + std::to_string(i + 1), depth + 1);
        if (!st.ok()) return st;
      }
      return OkStatus();
    }
  }
  return InvalidArgumentError(where + ": stop kind " + std::to_string(static_cast<int>(s.kind)) +
                              " is not a known stop condition");
}

}  // namespace

const char* StopKindName(StopKind kind) {
  switch (kind) {
    case StopKind::kAfterAttempts: return "after_attempts";
    case StopKind::kAfterElapsed: return "after_elapsed";
    case StopKind::kNever: return "never";
    case StopKind::kPredicate: return "predicate";
    case StopKind::kAny: return "any";
    case StopKind::kAll: return "all";
  }
  return "unknown";
}

StopExpr StopExpr::AfterAttempts(int attempts) {
  StopExpr s;
  s.kind = StopKind::kAfterAttempts;
  s.attempts = attempts;
  return s;
}

StopExpr StopExpr::AfterElapsed(Duration elapsed) {
  StopExpr s;
  s.kind = StopKind::kAfterElapsed;
  s.elapsed = elapsed;
  return s;
}

StopExpr StopExpr::Never() { return StopExpr{}; }

StopExpr StopExpr::Predicate(int slot) {
  StopExpr s;
  s.kind = StopKind::kPredicate;
  s.predicate = slot;
  return s;
}

StopExpr StopExpr::Any(std::vector<StopExpr> terms) {
  StopExpr s;
  s.kind = StopKind::kAny;
  s.terms = Flatten(StopKind::kAny, std::move(terms));
  return s;
}

StopExpr StopExpr::All(std::vector<StopExpr> terms) {
  StopExpr s;
  s.kind = StopKind::kAll;
  s.terms = Flatten(StopKind::kAll, std::move(terms));
  return s;
}

std::string StopExpr::ToString() const {
  switch (kind) {
    case StopKind::kAfterAttempts: return "after_attempts(" + std::to_string(attempts) + ")";
    case StopKind::kAfterElapsed: return "after_elapsed(" + internal::FormatSeconds(elapsed) + ")";
    case StopKind::kNever: return "never";
    case StopKind::kPredicate: return "predicate(" + std::to_string(predicate) + ")";
    case StopKind::kAny:
    case StopKind::kAll: {
      const char* op = kind == StopKind::kAny ? " | " : " & ";
      std::string out;
      for (size_t i = 0; i < terms.size(); ++i) {
        if (i > 0) out += op;
        const bool paren = terms[i].kind == StopKind::kAny || terms[i].kind == StopKind::kAll;
        out += paren ? "(" + terms[i].ToString() + ")" : terms[i].ToString();
      }
      return out;
    }
  }
  return "unknown";
}

Status ValidateStop(const StopExpr& stop, bool deadline_set) {
  Status s = Validate(stop, "stop", 0);
  if (!s.ok()) return s;
  if (!deadline_set && !Bounded(stop)) {
    return InvalidArgumentError(
        "stop: " + stop.ToString() +
        " may never stop (unlimited attempts); bound it with after_attempts or after_elapsed, "
        "or set a deadline");
  }
  return OkStatus();
}

std::optional<StopReason> EvaluateStop(const StopExpr& s, const StopContext& c) {
  switch (s.kind) {
    case StopKind::kAfterAttempts:
      if (c.attempts >= s.attempts) return StopReason::kAttemptsExhausted;
      return std::nullopt;
    case StopKind::kAfterElapsed: {
      const Duration reach =
          c.delay ? internal::SaturatingAdd(c.elapsed, *c.delay) : c.elapsed;
      if (reach >= s.elapsed) return StopReason::kDeadline;
      return std::nullopt;
    }
    case StopKind::kNever: return std::nullopt;
    case StopKind::kPredicate:
      if (s.predicate >= 0 && s.predicate < kMaxStopPredicates &&
          (c.predicates & (uint32_t{1} << s.predicate))) {
        return StopReason::kStopCondition;
      }
      return std::nullopt;
    case StopKind::kAny:
      for (const StopExpr& t : s.terms) {
        if (std::optional<StopReason> r = EvaluateStop(t, c)) return r;
      }
      return std::nullopt;
    case StopKind::kAll: {
      std::optional<StopReason> last;
      for (const StopExpr& t : s.terms) {
        last = EvaluateStop(t, c);
        if (!last) return std::nullopt;
      }
      return last;
    }
  }
  return std::nullopt;
}

std::optional<Duration> TopLevelElapsed(const StopExpr& stop) {
  if (stop.kind == StopKind::kAfterElapsed) return stop.elapsed;
  if (stop.kind != StopKind::kAny) return std::nullopt;
  std::optional<Duration> least;
  for (const StopExpr& t : stop.terms) {
    if (t.kind == StopKind::kAfterElapsed && (!least || t.elapsed < *least)) least = t.elapsed;
  }
  return least;
}

}  // namespace v0
}  // namespace mulligan
