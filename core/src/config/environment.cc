// core/src/config/environment.cc — the environment overrides (see
// environment.h): variable names, how a value is read, and which fields each
// kind of entry lets the environment set.
#include "environment.h"

#include <algorithm>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "fields.h"
#include "limits_format.h"

namespace mulligan {
inline namespace v0 {
namespace internal {
namespace {

// Variable suffix -> JSON field, for one kind of entry.
using EnvFields = std::vector<std::pair<std::string_view, std::string_view>>;

const EnvFields& PolicyEnvFields() {
  static const EnvFields fields = {
      {"MAX_ATTEMPTS", "max_attempts"}, {"BACKOFF", "backoff"},
      {"BASE_DELAY", "base_delay"},     {"MULTIPLIER", "multiplier"},
      {"MAX_DELAY", "max_delay"},       {"JITTER", "jitter"},
      {"DEADLINE", "deadline"},         {"ATTEMPT_TIMEOUT", "attempt_timeout"},
      {"MIN_DELAY", "min_delay"}};
  return fields;
}

const EnvFields& BreakerEnvFields() {
  static const EnvFields fields = {{"FAILURE_THRESHOLD", "failure_threshold"},
                                   {"RESET_TIMEOUT", "reset_timeout"},
                                   {"HALF_OPEN_MAX_CALLS", "half_open_max_calls"},
                                   {"MAX_HALF_OPEN_DURATION", "max_half_open_duration"}};
  return fields;
}

const EnvFields& ClientEnvFields() {
  static const EnvFields fields = {{"ATTEMPT_TIMEOUT", "attempt_timeout"},
                                   {"CONNECT_TIMEOUT", "connect_timeout"},
                                   {"VERIFY_TLS", "verify_tls"},
                                   {"USER_AGENT", "user_agent"},
                                   {"BREAKER_KEY", "breaker_key"}};
  return fields;
}

const EnvFields& BudgetEnvFields() {
  static const EnvFields fields = {
      {"MAX_TOKENS", "max_tokens"},
      {"TOKEN_RATIO", "token_ratio"},
      {"CAPACITY", "capacity"},
      {"RETRY_COST", "retry_cost"},
      {"TIMEOUT_COST", "timeout_cost"},
      {"THROTTLING_COST", "throttling_cost"},
      {"NO_RETRY_INCREMENT", "no_retry_increment"},
      {"TTL", "ttl"},
      {"PERCENT", "percent"},
      {"MIN_RETRIES_PER_SECOND", "min_retries_per_second"}};
  return fields;
}

const EnvFields& ThrottleEnvFields() {
  static const EnvFields fields = {{"K", "k"}, {"WINDOW", "window"}};
  return fields;
}

const EnvFields& BulkheadEnvFields() {
  static const EnvFields fields = {{"MAX_CONCURRENT", "max_concurrent"},
                                   {"MAX_QUEUE", "max_queue"},
                                   {"MAX_WAIT", "max_wait"}};
  return fields;
}

const EnvFields& RateLimiterEnvFields() {
  static const EnvFields fields = {
      {"RATE", "rate"}, {"BURST", "burst"}, {"MAX_WAIT", "max_wait"}};
  return fields;
}

const EnvFields& AdaptiveRateEnvFields() {
  static const EnvFields fields = {{"BETA", "beta"},
                                   {"SCALE_CONSTANT", "scale_constant"},
                                   {"SMOOTHING", "smoothing"},
                                   {"BUCKET", "bucket"},
                                   {"MIN_FILL_RATE", "min_fill_rate"},
                                   {"MAX_RATE_SCALE", "max_rate_scale"},
                                   {"MAX_WAIT", "max_wait"}};
  return fields;
}

// Returns `name` as it appears in a variable: a-z upper-cased, A-Z and 0-9
// kept, every other byte '_'.
std::string EnvName(std::string_view name) {
  std::string out;
  for (char c : name) {
    if (c >= 'a' && c <= 'z') {
      out += static_cast<char>(c - 'a' + 'A');
    } else if ((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      out += c;
    } else {
      out += '_';
    }
  }
  return out;
}

// Reads an environment value as JSON when it is JSON (3, 1.5, true, null),
// else as a string ("250ms", "exponential"). "none" means null for the
// optional durations (deadline, attempt_timeout, max_half_open_duration).
json::value EnvValue(const std::string& text, bool nullable) {
  if (nullable && text == "none") return nullptr;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (!ec && !v.is_structured()) return v;
  return json::string(text);
}

// Applies MULLIGAN_<KIND>_<NAME>_<FIELD> for each of `fields` to the entry
// `name` of `section`, through `table`.
// REQUIRES: every field of `fields` is in `table`.
template <typename T>
void ApplyEnv(Context& ctx, std::string_view kind, const std::string& section,
              const std::string& name, const EnvFields& fields, const FieldTable<T>& table,
              T& out) {
  for (const auto& [suffix, field] : fields) {
    const std::string var = "MULLIGAN_" + std::string(kind) + "_" + EnvName(name) + "_" +
                            std::string(suffix);
    std::optional<std::string> value = ctx.Env(var);
    if (!value) continue;
    const FieldFn<T>* fn = FindField(table, field);
    // Errors from the environment name the variable, not a JSON path.
    Context env_ctx("environment", LoadOptions{});
    const bool nullable = field == "deadline" || field == "attempt_timeout" ||
                          field == "max_half_open_duration" || field == "max_wait";
    if ((*fn)(env_ctx, var, EnvValue(*value, nullable), out)) {
      ctx.Warn(Join(Join(section, name), field), "overridden by " + var + "=" + *value);
    } else {
      // Keep the variable's message as is ("environment: VAR: expected ...").
      ctx.AddRaw(env_ctx.ToStatus().message());
    }
  }
}

// Reports the variables of one kind ("POLICY") that name no entry of
// `names` or no field of one (see ReportUnmatchedEnv).
void ReportKind(Context& ctx, const std::vector<std::string>& vars, std::string_view kind,
                std::string_view noun, std::string_view plural,
                const std::vector<std::string>& names,
                const EnvFields& fields) {
  const std::string prefix = "MULLIGAN_" + std::string(kind) + "_";
  for (const std::string& var : vars) {
    if (var.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string_view rest = std::string_view(var).substr(prefix.size());
    const std::string* named = nullptr;  // the entry whose name the variable starts with
    bool matched = false;
    for (const std::string& name : names) {
      const std::string env_name = EnvName(name) + "_";
      if (rest.compare(0, env_name.size(), env_name) != 0) continue;
      named = &name;
      const std::string_view suffix = rest.substr(env_name.size());
      for (const auto& field : fields) matched = matched || field.first == suffix;
      if (matched) break;
    }
    if (matched) continue;
    std::string what;
    if (named != nullptr) {
      what = "names no field of " + std::string(noun) + " " + Quote(*named) + " (fields: ";
      for (size_t i = 0; i < fields.size(); ++i) {
        what += (i ? ", " : "") + std::string(fields[i].first);
      }
    } else {
      what = "names no " + std::string(noun) + " of this document (" + std::string(plural) + ": ";
      for (size_t i = 0; i < names.size(); ++i) what += (i ? ", " : "") + names[i];
      if (names.empty()) what += "none";
    }
    ctx.Warn(var, what + "); not applied");
  }
}

}  // namespace

void ReportUnmatchedEnv(Context& ctx, const std::vector<std::string>& policies,
                        const std::vector<std::string>& breakers,
                        const std::vector<std::string>& clients) {
  std::vector<std::string> vars = ctx.EnvNames();
  if (vars.empty()) return;
  std::sort(vars.begin(), vars.end());
  ReportKind(ctx, vars, "POLICY", "policy", "policies", policies, PolicyEnvFields());
  ReportKind(ctx, vars, "BREAKER", "breaker", "breakers", breakers, BreakerEnvFields());
  ReportKind(ctx, vars, "CLIENT", "client", "clients", clients, ClientEnvFields());
}

void ReportUnmatchedLimitEnv(Context& ctx, const ConfigSnapshot& s) {
  std::vector<std::string> vars = ctx.EnvNames();
  if (vars.empty()) return;
  std::sort(vars.begin(), vars.end());
  auto keys = [](const auto& map) {
    std::vector<std::string> names;
    for (const auto& entry : map) names.push_back(entry.first);
    return names;
  };
  ReportKind(ctx, vars, "BUDGET", "budget", "budgets", keys(s.budgets), BudgetEnvFields());
  ReportKind(ctx, vars, "THROTTLE", "throttle", "throttles", keys(s.throttles),
             ThrottleEnvFields());
  ReportKind(ctx, vars, "BULKHEAD", "bulkhead", "bulkheads", keys(s.bulkheads),
             BulkheadEnvFields());
  ReportKind(ctx, vars, "RATE_LIMITER", "rate limiter", "rate_limiters", keys(s.rate_limiters),
             RateLimiterEnvFields());
  ReportKind(ctx, vars, "ADAPTIVE_RATE", "adaptive rate", "adaptive_rates",
             keys(s.adaptive_rates), AdaptiveRateEnvFields());
}

void ApplyLimitEnv(Context& ctx, const std::string& name, BudgetOptions& out) {
  // Only the fields of the budget's kind apply; another kind's is an error.
  static const char* const kKinds[] = {"token_bucket", "quota", "ratio"};
  const int kind = static_cast<int>(out.kind);
  EnvFields mine;
  for (const auto& [suffix, field] : BudgetEnvFields()) {
    const int of = KindOfBudgetField(field);
    if (of == kind) {
      mine.emplace_back(suffix, field);
      continue;
    }
    const std::string var = "MULLIGAN_BUDGET_" + EnvName(name) + "_" + std::string(suffix);
    if (ctx.Env(var)) {
      ctx.AddRaw("environment: " + var + ": a field of kind \"" + kKinds[of] + "\", but budget " +
                 Quote(name) + " is of kind \"" + kKinds[kind] + "\"");
    }
  }
  ApplyEnv(ctx, "BUDGET", "budgets", name, mine, BudgetFields(), out);
}

void ApplyLimitEnv(Context& ctx, const std::string& name, ThrottleOptions& out) {
  ApplyEnv(ctx, "THROTTLE", "throttles", name, ThrottleEnvFields(), ThrottleFields(), out);
}

void ApplyLimitEnv(Context& ctx, const std::string& name, BulkheadOptions& out) {
  ApplyEnv(ctx, "BULKHEAD", "bulkheads", name, BulkheadEnvFields(), BulkheadFields(), out);
}

void ApplyLimitEnv(Context& ctx, const std::string& name, RateLimiterOptions& out) {
  ApplyEnv(ctx, "RATE_LIMITER", "rate_limiters", name, RateLimiterEnvFields(),
           RateLimiterFields(), out);
}

void ApplyLimitEnv(Context& ctx, const std::string& name, AdaptiveRateOptions& out) {
  ApplyEnv(ctx, "ADAPTIVE_RATE", "adaptive_rates", name, AdaptiveRateEnvFields(),
           AdaptiveRateFields(), out);
}

void ApplyPolicyEnv(Context& ctx, const std::string& name, RetryOptions& out) {
  ApplyEnv(ctx, "POLICY", "policies", name, PolicyEnvFields(), PolicyFields(), out);
}

void ApplyBreakerEnv(Context& ctx, const std::string& name, CircuitBreakerOptions& out) {
  ApplyEnv(ctx, "BREAKER", "breakers", name, BreakerEnvFields(), BreakerFields(), out);
}

void ApplyClientEnv(Context& ctx, const std::string& name, ClientSettings& out) {
  ApplyEnv(ctx, "CLIENT", "clients", name, ClientEnvFields(), ClientFields(), out);
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
