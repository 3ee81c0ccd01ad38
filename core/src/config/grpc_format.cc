// core/src/config/grpc_format.cc — the gRPC service config (see formats.h):
// gRFC A6 "gRPC Retry Design", the retryPolicy of each methodConfig, read
// into retry policies. Durations are google.protobuf.Duration JSON strings
// ("1.5s"); the A6 backoff maps to exponential backoff with A6's +-20%
// jitter (proportional jitter 0.2, see ParseGrpcRetryPolicy).
//
//   {"methodConfig": [{"name": [{"service": "pkg.Svc", "method": "Get"}],
//                      "timeout": "2s",
//                      "retryPolicy": {"maxAttempts": 4, "initialBackoff": "0.1s",
//                                      "maxBackoff": "1s", "backoffMultiplier": 2,
//                                      "retryableStatusCodes": ["UNAVAILABLE"]}}],
//    "retryThrottling": {"maxTokens": 10, "tokenRatio": 0.1}}
//
// A methodConfig's hedgingPolicy (0.6; 0.5 ignored it with a warning) becomes
// ConfigSnapshot::hedging of each of its names, beside a one-attempt policy
// (see ParseGrpcHedgingPolicy); one with a retryPolicy too is an error.
//
// retryThrottling (gRFC A6 "Throttling Retry Attempts and Hedged RPCs")
// becomes the token-bucket budget kGrpcThrottlingBudget of the snapshot's
// "budgets", and every policy of the file names it (PolicyLimits::budget),
// as the throttle of a gRPC channel covers every method of it.
#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "environment.h"
#include "formats.h"
#include "internal/saturating.h"
#include "limits_format.h"

namespace mulligan {
inline namespace v0 {
namespace internal {
namespace {

// gRFC A6: "maxAttempts ... values greater than 5 are treated as 5".
constexpr int64_t kGrpcMaxAttempts = 5;
// gRFC A6 (August 2024): every retry delay is multiplied by random(0.8, 1.2).
constexpr double kGrpcJitter = 0.2;

// Policy names in the order their methodConfig lists them, each with the
// path of its "name" element (for messages).
using NamesAndPaths = std::vector<std::pair<std::string, std::string>>;

// Reads a google.protobuf.Duration string ("0.1s": seconds only, no sign),
// below kMaxDurationSeconds, rounded to the nearest nanosecond. `positive`:
// zero is rejected too, including a value that rounds to 0 ns.
bool ReadGrpcDuration(Context& ctx, const std::string& path, const json::value& v, bool positive,
                      Duration& out) {
  const std::string what = "a duration string such as \"0.1s\"";
  if (v.is_string()) {
    std::string_view s = v.get_string();
    if (s.size() >= 2 && s.back() == 's' && s[0] != '-') {
      std::string note;
      std::optional<double> seconds = ParseDurationSeconds(s, note);
      // "> 0" holds for the Duration itself (a positive value below half a
      // nanosecond rounds to zero). The seconds that reach
      // DurationFromSeconds are finite and in [0, kMaxDurationSeconds),
      // where it is exactly llround(seconds * 1e9).
      if (seconds && std::isfinite(*seconds) && *seconds < kMaxDurationSeconds &&
          (!positive || DurationFromSeconds(*seconds) > Duration::zero())) {
        out = DurationFromSeconds(*seconds);
        return true;
      }
    }
  }
  ctx.Expected(path, positive ? what + " greater than 0" : what, v);
  return false;
}

// Returns the policy name of one methodConfig "name" element:
// "service/method", "service", or "default" for {}; "" after an error.
std::string GrpcPolicyName(Context& ctx, const std::string& path, const json::value& v) {
  const json::object* o = AsObject(ctx, path, v, "an object such as {\"service\": \"pkg.Svc\"}");
  if (o == nullptr) return "";
  std::string service, method;
  for (const auto& kv : *o) {
    const std::string p = Join(path, kv.key());
    if (kv.key() == "service") {
      ReadString(ctx, p, kv.value(), service);
    } else if (kv.key() == "method") {
      ReadString(ctx, p, kv.value(), method);
    } else {
      ctx.Error(p, "unknown field; expected one of: service, method");
    }
  }
  if (service.empty() && method.empty()) return "default";
  if (service.empty()) {
    ctx.Error(path, "expected a service when a method is given");
    return "";
  }
  return method.empty() ? service : service + "/" + method;
}

// Reads "maxAttempts": an integer > 1, capped at 5 with a warning.
void ReadGrpcMaxAttempts(Context& ctx, const std::string& path, const json::value& v,
                         RetryOptions& options) {
  std::optional<int64_t> i = AsInteger(v);
  if (!i || *i < 2) {
    ctx.Expected(path, "an integer > 1", v);
  } else if (*i > kGrpcMaxAttempts) {
    ctx.Warn(path, std::to_string(*i) + " is capped at 5, as gRPC does (gRFC A6)");
    options.max_attempts = static_cast<int>(kGrpcMaxAttempts);
  } else {
    options.max_attempts = static_cast<int>(*i);
  }
}

// Reads "retryableStatusCodes": a non-empty array of codes (names or
// numbers, OK excluded).
void ReadGrpcCodes(Context& ctx, const std::string& path, const json::value& v,
                   RetryOptions& options) {
  std::vector<int> codes;
  const bool ok = ForEachElement(ctx, path, v, "a non-empty array of status codes",
                                 [&](const std::string& ep, const json::value& e) {
                                   int code = 0;
                                   if (!ReadGrpcCode(ctx, ep, e, code)) return false;
                                   codes.push_back(code);
                                   return true;
                                 });
  if (ok && codes.empty()) ctx.Expected(path, "a non-empty array of status codes", v);
  if (ok) options.retryable_grpc_codes = std::move(codes);
}

// Reads a retryPolicy object into `options`; every field but
// perAttemptRecvTimeout is required.
void ParseGrpcRetryPolicy(Context& ctx, const std::string& path, const json::object& o,
                          RetryOptions& options) {
  // A6 mapping. Since gRFC A6's update of August 2024 (grpc/proposal#452;
  // grpc-go 1.69 and grpc-java 1.71 followed) the n-th retry waits
  //   min(initialBackoff * backoffMultiplier^(n-1), maxBackoff) * random(0.8, 1.2),
  // replacing the older random(0, min(...)). mulligan's proportional jitter
  // with fraction 0.2 is min(d, max_delay / 1.2) * uniform(0.8, 1.2) with d
  // already capped at max_delay (DESIGN.md section 5), so max_delay =
  // 1.2 * maxBackoff gives exactly A6's delays, the cap being the longest
  // wait A6 allows. The max_delay itself is set after the loop.
  options.backoff.kind = BackoffKind::kExponential;
  options.backoff.jitter = JitterKind::kProportional;
  options.backoff.jitter_fraction = kGrpcJitter;
  static const std::vector<std::string_view> kRequired = {
      "maxAttempts", "initialBackoff", "maxBackoff", "backoffMultiplier",
      "retryableStatusCodes"};
  for (const auto& kv : o) {
    const std::string p = Join(path, kv.key());
    const std::string_view key = kv.key();
    const json::value& v = kv.value();
    if (key == "maxAttempts") {
      ReadGrpcMaxAttempts(ctx, p, v, options);
    } else if (key == "initialBackoff") {
      ReadGrpcDuration(ctx, p, v, true, options.backoff.base);
    } else if (key == "maxBackoff") {
      ReadGrpcDuration(ctx, p, v, true, options.backoff.max_delay);
    } else if (key == "backoffMultiplier") {
      ReadNumber(ctx, p, v, 0, true, 1e300, "a number > 0", options.backoff.multiplier);
    } else if (key == "retryableStatusCodes") {
      ReadGrpcCodes(ctx, p, v, options);
    } else if (key == "perAttemptRecvTimeout") {
      Duration d{};
      if (ReadGrpcDuration(ctx, p, v, true, d)) options.attempt_timeout = d;
    } else {
      ctx.Error(p, "unknown field; expected one of: maxAttempts, initialBackoff, maxBackoff, "
                   "backoffMultiplier, retryableStatusCodes, perAttemptRecvTimeout");
    }
  }
  options.backoff.max_delay = SaturatingDuration(
      static_cast<double>(options.backoff.max_delay.count()) * (1.0 + kGrpcJitter), 1.0);
  for (std::string_view key : kRequired) {
    if (!o.contains(key)) ctx.Error(Join(path, key), "missing (required by gRFC A6)");
  }
}

// Reads a hedgingPolicy object (gRFC A6 "Hedging Policy"): maxAttempts
// (required, an integer > 1, capped at 5 with a warning), hedgingDelay (a
// Duration, default 0: every copy at once) and nonFatalStatusCodes (the
// codes after which the next copy starts at once; every other non-OK code
// is fatal and ends the call; default none). The codes become the policy's
// retryable codes: the hedged call classifies outcomes with the policy.
void ParseGrpcHedgingPolicy(Context& ctx, const std::string& path, const json::object& o,
                            HedgingOptions& hedging, RetryOptions& options) {
  for (const auto& kv : o) {
    const std::string p = Join(path, kv.key());
    const std::string_view key = kv.key();
    const json::value& v = kv.value();
    if (key == "maxAttempts") {
      RetryOptions copies;
      ReadGrpcMaxAttempts(ctx, p, v, copies);
      hedging.max_attempts = copies.max_attempts;
    } else if (key == "hedgingDelay") {
      ReadGrpcDuration(ctx, p, v, false, hedging.hedging_delay);
    } else if (key == "nonFatalStatusCodes") {
      std::vector<int> codes;
      const bool ok = ForEachElement(ctx, p, v, "an array of status codes",
                                     [&](const std::string& ep, const json::value& e) {
                                       int code = 0;
                                       if (!ReadGrpcCode(ctx, ep, e, code)) return false;
                                       codes.push_back(code);
                                       return true;
                                     });
      if (ok) options.retryable_grpc_codes = std::move(codes);
    } else {
      ctx.Error(p, "unknown field; expected one of: maxAttempts, hedgingDelay, "
                   "nonFatalStatusCodes");
    }
  }
  if (!o.contains("maxAttempts")) ctx.Error(Join(path, "maxAttempts"), "missing (required by gRFC A6)");
}

// The name of the budget a service config's retryThrottling becomes.
constexpr const char* kGrpcThrottlingBudget = "retryThrottling";

// Reports the top-level fields other than methodConfig and retryThrottling:
// the known gRPC ones are warnings (ignored), anything else an error.
void CheckGrpcTopLevel(Context& ctx, const json::object& root) {
  for (const auto& kv : root) {
    const std::string_view key = kv.key();
    if (key == "methodConfig" || key == "retryThrottling") continue;
    if (key == "loadBalancingPolicy" || key == "loadBalancingConfig" ||
        key == "healthCheckConfig") {
      ctx.Warn(Join("", key),
               "ignored (mulligan reads only methodConfig[].retryPolicy and retryThrottling)");
    } else {
      ctx.Error(Join("", key),
                "unknown field; expected one of: methodConfig, loadBalancingPolicy, "
                "loadBalancingConfig, retryThrottling, healthCheckConfig");
    }
  }
}

// Reads the fields of the methodConfig `mc` at `path`: its names into
// `names`, its retryPolicy and timeout into `options`, its hedgingPolicy
// into `hedging` (and its nonFatalStatusCodes into `options`).
void ReadMethodConfigFields(Context& ctx, const std::string& path, const json::object& mc,
                            RetryOptions& options, std::optional<HedgingOptions>& hedging,
                            NamesAndPaths& names) {
  for (const auto& kv : mc) {
    const std::string p = Join(path, kv.key());
    const std::string_view key = kv.key();
    if (key == "name") {
      ForEachElement(ctx, p, kv.value(), "an array of {\"service\", \"method\"} objects",
                     [&](const std::string& np, const json::value& n) {
                       std::string name = GrpcPolicyName(ctx, np, n);
                       if (!name.empty()) names.emplace_back(name, np);
                       return true;
                     });
    } else if (key == "retryPolicy") {
      if (const json::object* rp = AsObject(ctx, p, kv.value(), "an object")) {
        ParseGrpcRetryPolicy(ctx, p, *rp, options);
      }
    } else if (key == "timeout") {
      Duration d{};
      if (ReadGrpcDuration(ctx, p, kv.value(), true, d)) options.deadline = d;
    } else if (key == "waitForReady" || key == "maxRequestMessageBytes" ||
               key == "maxResponseMessageBytes") {
      // Transport settings with no retry meaning.
    } else if (key == "hedgingPolicy") {
      if (const json::object* hp = AsObject(ctx, p, kv.value(), "an object")) {
        hedging.emplace();
        ParseGrpcHedgingPolicy(ctx, p, *hp, *hedging, options);
      }
    } else {
      ctx.Error(p, "unknown field; expected one of: name, retryPolicy, timeout, "
                   "waitForReady, maxRequestMessageBytes, maxResponseMessageBytes, "
                   "hedgingPolicy");
    }
  }
}

// Adds one policy per name of the methodConfig at `path`: `options` with the
// name's environment overrides. A name seen in an earlier methodConfig (or
// earlier in this one) is an error; `first_seen` maps each name to the path
// that first gave it.
void AddGrpcPolicies(Context& ctx, const std::string& path, const RetryOptions& options,
                     const std::optional<HedgingOptions>& hedging, const NamesAndPaths& names,
                     std::map<std::string, std::string>& first_seen, ConfigSnapshot& out) {
  for (const auto& [name, name_path] : names) {
    auto [it, inserted] = first_seen.emplace(name, name_path);
    if (!inserted) {
      ctx.Error(name_path, "duplicate name " + Quote(name) + " (first at " + it->second + ")");
      continue;
    }
    RetryOptions named = options;
    const size_t before_env = ctx.error_count();
    ApplyPolicyEnv(ctx, name, named);
    if (ctx.error_count() != before_env) continue;
    Result<RetryPolicy> policy = RetryPolicy::Create(named);
    if (!policy.ok()) {
      ctx.Error(path, policy.status().message());
      continue;
    }
    out.policies[name] = std::make_shared<const RetryPolicy>(std::move(policy).value());
    if (hedging) out.hedging[name] = *hedging;
  }
}

// Joins the names of a methodConfig for a message: "pkg.Svc/Get", "pkg.Svc".
std::string NameList(const NamesAndPaths& names) {
  std::string out;
  for (const auto& entry : names) {
    if (!out.empty()) out += ", ";
    out += Quote(entry.first);
  }
  return out;
}

// Reads one methodConfig element; returns false when it had errors (its
// policies are then not added).
bool ReadMethodConfig(Context& ctx, const std::string& path, const json::value& entry,
                      std::map<std::string, std::string>& first_seen, ConfigSnapshot& out) {
  const json::object* mc = AsObject(ctx, path, entry, "an object");
  if (mc == nullptr) return false;
  RetryOptions options;
  // Without a retryPolicy gRPC makes one attempt.
  options.max_attempts = 1;
  options.retryable_grpc_codes.clear();
  const size_t before = ctx.error_count();
  NamesAndPaths names;
  std::optional<HedgingOptions> hedging;
  ReadMethodConfigFields(ctx, path, *mc, options, hedging, names);
  if (!mc->contains("name")) ctx.Error(Join(path, "name"), "missing");
  if (mc->contains("retryPolicy") && mc->contains("hedgingPolicy")) {
    // gRFC A6: "at most one of retryPolicy or hedgingPolicy may be set".
    ctx.Error(path, "has both retryPolicy and hedgingPolicy for " + NameList(names) +
                        "; gRFC A6 allows one or the other for a method");
  }
  if (hedging && ctx.error_count() == before) {
    const Status valid = ValidateHedgingOptions(*hedging);
    if (!valid.ok()) ctx.Error(Join(path, "hedgingPolicy"), valid.message());
  }
  if (ctx.error_count() != before) return false;
  AddGrpcPolicies(ctx, path, options, hedging, names, first_seen, out);
  return true;
}

}  // namespace

void ParseGrpc(Context& ctx, const json::object& root, ConfigSnapshot& out) {
  CheckGrpcTopLevel(ctx, root);
  std::map<std::string, std::string> first_seen;  // policy name -> path of its "name"
  ForEachElement(ctx, "methodConfig", root.at("methodConfig"), "an array of method configs",
                 [&](const std::string& path, const json::value& entry) {
                   return ReadMethodConfig(ctx, path, entry, first_seen, out);
                 });
  if (const json::value* throttling = root.if_contains("retryThrottling")) {
    BudgetOptions budget;
    if (ReadRetryThrottling(ctx, "retryThrottling", *throttling, kGrpcThrottlingBudget, budget)) {
      out.budgets[kGrpcThrottlingBudget] = budget;
      for (const auto& entry : out.policies) out.policy_limits[entry.first].budget = budget.name;
    }
  }
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
