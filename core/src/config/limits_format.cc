// core/src/config/limits_format.cc — the "budgets", "throttles",
// "bulkheads", "rate_limiters" and "adaptive_rates" sections and a policy's references to them
// (see limits_format.h). Each field's range is its option's own (the headers
// of budget/ and limits/); what no single field can check, the part's
// Validate checks after, and its message is reported at the entry's path.
#include "limits_format.h"

#include <cmath>
#include <limits>
#include <map>
#include <utility>
#include <vector>

#include "environment.h"
#include "fields.h"
#include "state_format.h"

namespace mulligan {
inline namespace v0 {
namespace internal {
namespace {

constexpr double kMax = std::numeric_limits<double>::max();

// Reads an integer in [lo, INT64_MAX].
bool ReadInt64(Context& c, const std::string& p, const json::value& v, int64_t lo, int64_t& out) {
  std::optional<int64_t> i = AsInteger(v);
  if (!i || *i < lo) {
    c.Expected(p, "an integer >= " + std::to_string(lo), v);
    return false;
  }
  out = *i;
  return true;
}

// Reads a duration (>= 0), or null for none.
bool ReadMaxWait(Context& c, const std::string& p, const json::value& v,
                 std::optional<Duration>& out) {
  if (v.is_null()) {
    out.reset();
    return true;
  }
  Duration d{};
  if (!ReadDuration(c, p, v, /*positive=*/false, d)) return false;
  out = d;
  return true;
}

}  // namespace

int KindOfBudgetField(std::string_view key) {
  static const std::map<std::string_view, int> kinds = {
      {"max_tokens", 0},     {"token_ratio", 0},     {"capacity", 1},
      {"retry_cost", 1},     {"timeout_cost", 1},    {"throttling_cost", 1},
      {"no_retry_increment", 1}, {"ttl", 2},         {"percent", 2},
      {"min_retries_per_second", 2}};
  auto it = kinds.find(key);
  return it == kinds.end() ? -1 : it->second;
}

const FieldTable<BudgetOptions>& BudgetFields() {
  using O = BudgetOptions;
  static const FieldTable<O> table = {
      {"kind",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         int i = 0;
         if (!ReadChoice(c, p, v, {"token_bucket", "quota", "ratio"}, i)) return false;
         o.kind = static_cast<BudgetKind>(i);
         return true;
       }},
      {"max_tokens",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, true, 1000, "a number in (0, 1000] (gRPC A6)",
                           o.token_bucket.max_tokens);
       }},
      {"token_ratio",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0.001, false, kMax,
                           "a number >= 0.001 (gRPC A6 keeps 3 decimal places)",
                           o.token_bucket.token_ratio);
       }},
      {"capacity",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt64(c, p, v, 1, o.quota.capacity);
       }},
      {"retry_cost",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt64(c, p, v, 0, o.quota.retry_cost);
       }},
      {"timeout_cost",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt64(c, p, v, 0, o.quota.timeout_cost);
       }},
      {"throttling_cost",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt64(c, p, v, 0, o.quota.throttling_cost);
       }},
      {"no_retry_increment",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt64(c, p, v, 0, o.quota.no_retry_increment);
       }},
      {"ttl",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         Duration d{};
         if (!ReadDuration(c, p, v, true, d)) return false;
         if (d < std::chrono::seconds(1) || d > std::chrono::seconds(60)) {
           c.Expected(p, "a duration in [1s, 60s] (Finagle's bounds)", v);
           return false;
         }
         o.ratio.ttl = d;
         return true;
       }},
      {"percent",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, false, 1, "a number in [0, 1]", o.ratio.percent);
       }},
      {"min_retries_per_second",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, false, kMax, "a number >= 0",
                           o.ratio.min_retries_per_second);
       }},
  };
  return table;
}

const FieldTable<ThrottleOptions>& ThrottleFields() {
  using O = ThrottleOptions;
  static const FieldTable<O> table = {
      {"k",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 1, false, kMax, "a number >= 1 (the SRE book's K)", o.k);
       }},
      {"window",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         Duration d{};
         if (!ReadDuration(c, p, v, true, d)) return false;
         if (d < std::chrono::milliseconds(1)) {
           c.Expected(p, "a duration >= 1ms", v);
           return false;
         }
         o.window = d;
         return true;
       }},
      {"seed",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         if (v.is_null()) {
           o.seed.reset();
           return true;
         }
         int64_t s = 0;
         if (!ReadInt64(c, p, v, 0, s)) return false;
         o.seed = static_cast<uint64_t>(s);
         return true;
       }},
  };
  return table;
}

const FieldTable<BulkheadOptions>& BulkheadFields() {
  using O = BulkheadOptions;
  static const FieldTable<O> table = {
      {"max_concurrent",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt(c, p, v, 1, std::numeric_limits<int>::max(), o.max_concurrent);
       }},
      {"max_queue",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadInt(c, p, v, 0, std::numeric_limits<int>::max(), o.max_queue);
       }},
      {"max_wait",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadMaxWait(c, p, v, o.max_wait);
       }},
  };
  return table;
}

const FieldTable<RateLimiterOptions>& RateLimiterFields() {
  using O = RateLimiterOptions;
  static const FieldTable<O> table = {
      {"rate",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, true, kMax, "a number > 0 (calls per second)", o.rate);
       }},
      {"burst",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 1, false, kMax, "a number >= 1", o.burst);
       }},
      {"max_wait",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadMaxWait(c, p, v, o.max_wait);
       }},
      {"penalize_retry_after",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadBool(c, p, v, o.penalize_retry_after);
       }},
      {"max_keys",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         int n = 0;
         if (!ReadInt(c, p, v, 1, std::numeric_limits<int>::max(), n)) return false;
         o.max_keys = static_cast<size_t>(n);
         return true;
       }},
  };
  return table;
}

const FieldTable<AdaptiveRateOptions>& AdaptiveRateFields() {
  using O = AdaptiveRateOptions;
  // The ranges are AdaptiveRate::Validate's (limits/adaptive_rate.h); the
  // spec's defaults are the AWS SDKs' retry behavior specification's.
  static const FieldTable<O> table = {
      {"beta",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         const char* what = "a number in (0, 1) (CUBIC's multiplicative decrease)";
         double b = 0;
         if (!ReadNumber(c, p, v, 0, true, 1, what, b)) return false;
         if (b >= 1) {
           c.Expected(p, what, v);
           return false;
         }
         o.beta = b;
         return true;
       }},
      {"scale_constant",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, true, kMax, "a number > 0 (CUBIC's C)", o.scale_constant);
       }},
      {"smoothing",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, true, 1, "a number in (0, 1]", o.smoothing);
       }},
      {"bucket",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadDuration(c, p, v, /*positive=*/true, o.bucket);
       }},
      {"min_fill_rate",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 0, true, kMax, "a number > 0 (requests per second)",
                           o.min_fill_rate);
       }},
      {"max_rate_scale",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadNumber(c, p, v, 1, false, kMax, "a number >= 1", o.max_rate_scale);
       }},
      {"max_wait",
       [](Context& c, const std::string& p, const json::value& v, O& o) {
         return ReadMaxWait(c, p, v, o.max_wait);
       }},
  };
  return table;
}

namespace {

// Reports a field of another kind than the entry's ("capacity" in a
// token_bucket budget), which would otherwise be silently unused.
void CheckBudgetKind(Context& ctx, const std::string& path, const json::object& o,
                     const BudgetOptions& options) {
  static const char* const kNames[] = {"token_bucket", "quota", "ratio"};
  const int kind = static_cast<int>(options.kind);
  for (const auto& kv : o) {
    const int of = KindOfBudgetField(kv.key());
    if (of >= 0 && of != kind) {
      ctx.Error(Join(path, kv.key()), std::string("a field of kind \"") + kNames[of] +
                                          "\", but this budget's kind is \"" + kNames[kind] +
                                          "\"" + (o.contains("kind") ? "" : " (the default)"));
    }
  }
}

// Reads every entry of `section`: its fields through `table`, the fields
// `required` must hold, then `finish` (checks and validation; it records
// its own errors). Valid entries go to `out` under their names.
template <typename Options, typename Finish>
void ReadSection(Context& ctx, const json::object& root, const char* section,
                 const FieldTable<Options>& table, std::string_view required,
                 std::map<std::string, Options, std::less<>>& out, Finish finish,
                 bool allow_shared = false) {
  // The environment overrides of the entry (environment.h), after its fields.
  void (*const env)(Context&, const std::string&, Options&) = &ApplyLimitEnv;
  const json::value* v = root.if_contains(section);
  if (v == nullptr) return;
  const json::object* entries =
      AsObject(ctx, section, *v, std::string("an object of ") + section + " by name");
  if (entries == nullptr) return;
  for (const auto& kv : *entries) {
    const std::string path = Join(section, kv.key());
    if (kv.key().empty()) {
      ctx.Error(path, "expected a non-empty name");
      continue;
    }
    const json::object* o = AsObject(ctx, path, kv.value(), "an object");
    if (o == nullptr) continue;
    Options options;
    const size_t before = ctx.error_count();
    // "shared" (0.6, rate_limiters only) is read by `finish`.
    ApplyObject(ctx, path, *o, allow_shared ? WithSharedField(table) : table, options);
    env(ctx, std::string(kv.key()), options);
    if (!required.empty() && !o->contains(required)) {
      ctx.Error(Join(path, required), "missing: this field is required");
    }
    if (ctx.error_count() != before) continue;
    options.name = std::string(kv.key());
    if (!finish(path, *o, options)) continue;
    out[options.name] = std::move(options);
  }
}

// Records a part's validation failure at `path`; returns status.ok().
bool Valid(Context& ctx, const std::string& path, const Status& status) {
  if (!status.ok()) ctx.Error(path, status.message());
  return status.ok();
}

}  // namespace

void ReadLimitSections(Context& ctx, const json::object& root, ConfigSnapshot& out) {
  ReadSection(ctx, root, "budgets", BudgetFields(), "", out.budgets,
              [&](const std::string& path, const json::object& o, BudgetOptions& options) {
                const size_t before = ctx.error_count();
                CheckBudgetKind(ctx, path, o, options);
                return ctx.error_count() == before &&
                       Valid(ctx, path, ValidateBudgetOptions(options));
              });
  ReadSection(ctx, root, "throttles", ThrottleFields(), "", out.throttles,
              [&](const std::string& path, const json::object&, ThrottleOptions& options) {
                return Valid(ctx, path, ValidateThrottleOptions(options));
              });
  ReadSection(ctx, root, "bulkheads", BulkheadFields(), "max_concurrent", out.bulkheads,
              [&](const std::string& path, const json::object&, BulkheadOptions& options) {
                return Valid(ctx, path, Bulkhead::Validate(options));
              });
  ReadSection(
      ctx, root, "rate_limiters", RateLimiterFields(), "rate", out.rate_limiters,
      [&](const std::string& path, const json::object& o, RateLimiterOptions& options) {
        bool shared = false;
        if (!ReadSharedFlag(ctx, root, path, options.name, o, shared)) return false;
        if (!Valid(ctx, path, RateLimiter::Validate(options))) return false;
        if (shared) out.shared_rate_limiters.push_back(options.name);
        return true;
      },
      /*allow_shared=*/true);
  ReadSection(ctx, root, "adaptive_rates", AdaptiveRateFields(), "", out.adaptive_rates,
              [&](const std::string& path, const json::object&, AdaptiveRateOptions& options) {
                return Valid(ctx, path, AdaptiveRate::Validate(options));
              });
}

bool ReadPolicyLimitField(Context& ctx, const std::string& path, std::string_view key,
                          const json::value& v, PolicyLimits& limits) {
  std::string* slot = nullptr;
  if (key == "budget") slot = &limits.budget;
  if (key == "throttle") slot = &limits.throttle;
  if (key == "bulkhead") slot = &limits.bulkhead;
  if (key == "rate_limiter") slot = &limits.rate_limiter;
  if (key == "adaptive_rate") slot = &limits.adaptive_rate;
  if (slot == nullptr) return false;
  if (!v.is_string() || v.get_string().empty()) {
    ctx.Expected(path, "the name of an entry of \"" + std::string(key) + "s\"", v);
    return true;
  }
  *slot = std::string(v.get_string());
  return true;
}

namespace {

template <typename Map>
void CheckLimitRef(Context& ctx, const json::object& root, const Map& loaded,
                   std::string_view section, std::string_view field, const std::string& target,
                   const std::string& path, const json::object& source) {
  const json::value* written = source.if_contains(field);
  if (target.empty() || written == nullptr || loaded.find(target) != loaded.end()) return;
  const json::value* defined = root.if_contains(section);
  if (defined && defined->is_object() && defined->get_object().contains(target)) return;
  ctx.Expected(Join(path, field), "the name of an entry of \"" + std::string(section) + "\"",
               *written);
}

}  // namespace

void CheckPolicyLimits(Context& ctx, const json::object& root, const ConfigSnapshot& out,
                       const std::string& path, const PolicyLimits& limits,
                       const json::object& source) {
  CheckLimitRef(ctx, root, out.budgets, "budgets", "budget", limits.budget, path, source);
  CheckLimitRef(ctx, root, out.throttles, "throttles", "throttle", limits.throttle, path, source);
  CheckLimitRef(ctx, root, out.bulkheads, "bulkheads", "bulkhead", limits.bulkhead, path, source);
  CheckLimitRef(ctx, root, out.rate_limiters, "rate_limiters", "rate_limiter",
                limits.rate_limiter, path, source);
  CheckLimitRef(ctx, root, out.adaptive_rates, "adaptive_rates", "adaptive_rate",
                limits.adaptive_rate, path, source);
}

bool ReadRetryThrottling(Context& ctx, const std::string& path, const json::value& v,
                         const std::string& name, BudgetOptions& out) {
  const json::object* o = AsObject(ctx, path, v, "an object with maxTokens and tokenRatio");
  if (o == nullptr) return false;
  const size_t before = ctx.error_count();
  BudgetOptions options;
  options.name = name;
  options.kind = BudgetKind::kTokenBucket;
  for (const auto& kv : *o) {
    const std::string p = Join(path, kv.key());
    if (kv.key() == "maxTokens") {
      ReadNumber(ctx, p, kv.value(), 0, true, 1000, "a number in (0, 1000] (gRFC A6)",
                 options.token_bucket.max_tokens);
    } else if (kv.key() == "tokenRatio") {
      double r = 0;
      if (!ReadNumber(ctx, p, kv.value(), 0, true, kMax, "a number > 0 (gRFC A6)", r)) continue;
      const double milli = r * 1000.0;
      if (std::fabs(milli - std::round(milli)) > 1e-6 * std::max(1.0, milli)) {
        ctx.Expected(p, "a number with at most 3 decimal places (gRFC A6)", kv.value());
        continue;
      }
      options.token_bucket.token_ratio = r;
    } else {
      ctx.Error(p, "unknown field; expected one of: maxTokens, tokenRatio");
    }
  }
  for (const char* required : {"maxTokens", "tokenRatio"}) {
    if (!o->contains(required)) ctx.Error(Join(path, required), "missing (gRFC A6 requires it)");
  }
  if (ctx.error_count() != before) return false;
  if (!Valid(ctx, path, ValidateBudgetOptions(options))) return false;
  out = std::move(options);
  return true;
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
