// core/src/config/wait_fields.cc — the JSON form of composed waits and stop
// conditions (see wait_fields.h).
#include "wait_fields.h"

#include <limits>
#include <utility>
#include <vector>

namespace mulligan {
inline namespace v0 {
namespace internal {
namespace {

constexpr const char* kWaitKinds =
    "an object with one of constant, linear, exponential, uniform, jitter, sum, chain";
constexpr const char* kStopKinds =
    "an object with one of after_attempts, after_elapsed, never, any, all";

// Returns the single key/value of `v`, or reports `what`.
const json::key_value_pair* Single(Context& ctx, const std::string& path, const json::value& v,
                                   const char* what) {
  if (!v.is_object() || v.get_object().size() != 1) {
    ctx.Expected(path, what, v);
    return nullptr;
  }
  return &*v.get_object().begin();
}

// Reads the fields of a parameter object ({"start": ..., "max": ...}):
// `required` must be there, `optional` may be; anything else is reported.
template <typename F>
bool ReadParams(Context& ctx, const std::string& path, const json::value& v,
                const std::vector<std::string_view>& required,
                const std::vector<std::string_view>& optional, F read) {
  const json::object* o = AsObject(ctx, path, v, "an object");
  if (o == nullptr) return false;
  bool ok = true;
  for (std::string_view key : required) {
    if (!o->contains(key)) {
      ctx.Error(Join(path, key), "missing (required)");
      ok = false;
    }
  }
  for (const auto& kv : *o) {
    bool known = false;
    for (const auto& list : {required, optional}) {
      for (std::string_view key : list) known = known || key == kv.key();
    }
    if (!known) {
      ctx.Error(Join(path, kv.key()), "unknown field");
      ok = false;
      continue;
    }
    ok = read(kv.key(), Join(path, kv.key()), kv.value()) && ok;
  }
  return ok;
}

bool ReadTerms(Context& ctx, const std::string& path, const json::value& v,
               std::vector<WaitExpr>& out) {
  return ForEachElement(ctx, path, v, "an array of waits", [&](const std::string& p,
                                                                 const json::value& e) {
    WaitExpr w;
    if (!ReadWait(ctx, p, e, w)) return false;
    out.push_back(std::move(w));
    return true;
  });
}

}  // namespace

bool ReadWait(Context& ctx, const std::string& path, const json::value& v, WaitExpr& out) {
  const json::key_value_pair* kv = Single(ctx, path, v, kWaitKinds);
  if (kv == nullptr) return false;
  const std::string kind(kv->key());
  const std::string p = Join(path, kind);
  const json::value& arg = kv->value();
  if (kind == "constant" || kind == "jitter") {
    Duration d{};
    if (!ReadDuration(ctx, p, arg, false, d)) return false;
    out = kind == "constant" ? WaitExpr::Constant(d) : WaitExpr::Jitter(d);
    return true;
  }
  if (kind == "sum" || kind == "chain") {
    std::vector<WaitExpr> terms;
    if (!ReadTerms(ctx, p, arg, terms)) return false;
    out = kind == "sum" ? WaitExpr::Sum(std::move(terms)) : WaitExpr::Chain(std::move(terms));
    return true;
  }
  Duration first{}, second{};
  double multiplier = 2.0;
  std::optional<Duration> max;
  auto read = [&](std::string_view key, const std::string& kp, const json::value& e) {
    if (key == "multiplier") {
      return ReadNumber(ctx, kp, e, 0, false, std::numeric_limits<double>::max(),
                        "a number >= 0", multiplier);
    }
    if (key == "max" && kind != "uniform") {
      Duration d{};
      if (!ReadDuration(ctx, kp, e, false, d)) return false;
      max = d;
      return true;
    }
    const bool is_first = key == "start" || key == "base" || key == "min";
    return ReadDuration(ctx, kp, e, false, is_first ? first : second);
  };
  if (kind == "linear") {
    if (!ReadParams(ctx, p, arg, {"start", "increment"}, {"max"}, read)) return false;
    out = WaitExpr::Linear(first, second, max);
  } else if (kind == "exponential") {
    if (!ReadParams(ctx, p, arg, {"base"}, {"multiplier", "max"}, read)) return false;
    out = WaitExpr::Exponential(first, multiplier, max);
  } else if (kind == "uniform") {
    if (!ReadParams(ctx, p, arg, {"min", "max"}, {}, read)) return false;
    if (second < first) {
      ctx.Error(p, "max must be >= min");
      return false;
    }
    out = WaitExpr::Uniform(first, second);
  } else {
    ctx.Expected(path, kWaitKinds, v);
    return false;
  }
  return true;
}

bool ReadStop(Context& ctx, const std::string& path, const json::value& v, StopExpr& out) {
  const json::key_value_pair* kv = Single(ctx, path, v, kStopKinds);
  if (kv == nullptr) return false;
  const std::string kind(kv->key());
  const std::string p = Join(path, kind);
  const json::value& arg = kv->value();
  if (kind == "after_attempts") {
    int n = 0;
    if (!ReadInt(ctx, p, arg, 1, std::numeric_limits<int>::max(), n)) return false;
    out = StopExpr::AfterAttempts(n);
    return true;
  }
  if (kind == "after_elapsed") {
    Duration d{};
    if (!ReadDuration(ctx, p, arg, true, d)) return false;
    out = StopExpr::AfterElapsed(d);
    return true;
  }
  if (kind == "never") {
    if (!arg.is_bool() || !arg.get_bool()) {
      ctx.Expected(p, "true", arg);
      return false;
    }
    out = StopExpr::Never();
    return true;
  }
  if (kind == "any" || kind == "all") {
    std::vector<StopExpr> terms;
    const bool ok = ForEachElement(ctx, p, arg, "an array of stop conditions",
                                   [&](const std::string& ep, const json::value& e) {
                                     StopExpr s;
                                     if (!ReadStop(ctx, ep, e, s)) return false;
                                     terms.push_back(std::move(s));
                                     return true;
                                   });
    if (!ok) return false;
    out = kind == "any" ? StopExpr::Any(std::move(terms)) : StopExpr::All(std::move(terms));
    return true;
  }
  ctx.Expected(path, kStopKinds, v);
  return false;
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
