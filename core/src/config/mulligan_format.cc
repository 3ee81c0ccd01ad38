// core/src/config/mulligan_format.cc — the mulligan configuration format
// (see formats.h; the fields are documented in docs/configuration.md):
//
//   {"version": 1, "defaults": {"policy": {...}, "breaker": {...}, "client": {...}},
//    "policies": {...}, "breakers": {...}, "clients": {...},
//    "budgets": {...}, "throttles": {...}, "bulkheads": {...}, "rate_limiters": {...},
//    "adaptive_rates": {...}}
//
// Each entry starts from its section's defaults, takes its own fields, then
// the environment overrides, and is kept only when all of that was valid
// and the options validate (RetryPolicy::Create, CircuitBreaker::Validate).
// The parts sections (limits_format.cc) are read first, then policies,
// breakers and clients, so a policy's "budget" (and the others) and a
// client's "policy", "breaker" and "budget" are checked once every entry
// they may name is known.
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "environment.h"
#include "fields.h"
#include "formats.h"
#include "limits_format.h"
#include "state_format.h"

namespace mulligan {
inline namespace v0 {
namespace internal {
namespace {

// The "defaults" section: the starting point of every entry of each kind.
struct Defaults {
  RetryOptions policy;
  CircuitBreakerOptions breaker;
  ClientSettings client;
  // The "defaults.client" object when there is one, for its references.
  const json::object* client_source = nullptr;
};

// Reports unknown top-level fields and checks "$schema" and "version".
void CheckTopLevel(Context& ctx, const json::object& root) {
  static const std::vector<std::string_view> kTopLevel = {
      "$schema", "version",  "defaults",  "policies",  "breakers",
      "clients", "budgets", "throttles", "bulkheads", "rate_limiters", "adaptive_rates",
      "state"};
  for (const auto& kv : root) {
    const std::string_view key = kv.key();
    if (std::find(kTopLevel.begin(), kTopLevel.end(), key) == kTopLevel.end()) {
      const std::string best = Suggest(key, kTopLevel);
      ctx.Error(Join("", key), best.empty()
                                   ? "unknown field; expected one of: $schema, version, "
                                     "defaults, policies, breakers, clients, budgets, "
                                     "throttles, bulkheads, rate_limiters, adaptive_rates, "
                                     "state (or methodConfig for a gRPC service config)"
                                   : "unknown field, did you mean " + Quote(best) + "?");
    }
  }
  if (const json::value* v = root.if_contains("$schema"); v && !v->is_string()) {
    ctx.Expected("$schema", "a string", *v);
  }
  if (const json::value* v = root.if_contains("version")) {
    std::optional<int64_t> i = AsInteger(*v);
    if (!i || *i != 1) ctx.Expected("version", "1", *v);
  }
}

// Reads the "defaults" section, when there is one, into `out`.
void ReadDefaults(Context& ctx, const json::object& root, Defaults& out) {
  const json::value* v = root.if_contains("defaults");
  if (v == nullptr) return;
  const json::object* d = AsObject(ctx, "defaults", *v, "an object");
  if (d == nullptr) return;
  for (const auto& kv : *d) {
    const std::string path = Join("defaults", kv.key());
    if (kv.key() == "policy") {
      if (const json::object* o = AsObject(ctx, path, kv.value(), "an object")) {
        ApplyObject(ctx, path, *o, PolicyFields(), out.policy);
      }
    } else if (kv.key() == "breaker") {
      if (const json::object* o = AsObject(ctx, path, kv.value(), "an object")) {
        ApplyObject(ctx, path, *o, BreakerFields(), out.breaker);
      }
    } else if (kv.key() == "client") {
      if (const json::object* o = AsObject(ctx, path, kv.value(), "an object")) {
        ApplyObject(ctx, path, *o, ClientFields(), out.client);
        out.client_source = o;
      }
    } else {
      ctx.Error(path, "unknown field; expected one of: policy, breaker, client");
    }
  }
}

// Calls `each(name, path, object)` for every named entry of the section
// `section` of `root`, when there is one; reports a section that is not an
// object, an empty name and an entry that is not an object.
template <typename F>
void ForEachEntry(Context& ctx, const json::object& root, const std::string& section,
                  const std::string& what, F each) {
  const json::value* v = root.if_contains(section);
  if (v == nullptr) return;
  const json::object* entries = AsObject(ctx, section, *v, "an object of " + what + " by name");
  if (entries == nullptr) return;
  for (const auto& kv : *entries) {
    const std::string path = Join(section, kv.key());
    if (kv.key().empty()) {
      ctx.Error(path, "expected a non-empty name");
      continue;
    }
    const json::object* entry = AsObject(ctx, path, kv.value(), "an object");
    if (entry != nullptr) each(std::string(kv.key()), path, *entry);
  }
}

// The fields of a "policies" entry, for messages: the policy's own and the
// part references (read by ReadPolicyLimitField; never called from here).
const FieldTable<RetryOptions>& PolicyObjectFields() {
  static const FieldTable<RetryOptions> table = [] {
    FieldTable<RetryOptions> t = PolicyFields();
    for (std::string_view ref :
         {"budget", "throttle", "bulkhead", "rate_limiter", "adaptive_rate"}) {
      t.emplace_back(ref, [](Context&, const std::string&, const json::value&, RetryOptions&) {
        return false;
      });
    }
    return t;
  }();
  return table;
}

// Applies a policy object: its part references ("budget", "throttle",
// "bulkhead", "rate_limiter", "adaptive_rate") to `limits`, every other field to `options`.
void ApplyPolicyObject(Context& ctx, const std::string& path, const json::object& o,
                       RetryOptions& options, PolicyLimits& limits) {
  for (const auto& kv : o) {
    const std::string p = Join(path, kv.key());
    if (ReadPolicyLimitField(ctx, p, kv.key(), kv.value(), limits)) continue;
    const FieldFn<RetryOptions>* fn = FindField(PolicyFields(), kv.key());
    if (fn == nullptr) {
      UnknownField(ctx, path, kv.key(), PolicyObjectFields());
      continue;
    }
    (*fn)(ctx, p, kv.value(), options);
  }
}

void ReadPolicies(Context& ctx, const json::object& root, const RetryOptions& base,
                  ConfigSnapshot& out) {
  ForEachEntry(ctx, root, "policies", "retry policies",
               [&](const std::string& name, const std::string& path, const json::object& o) {
                 RetryOptions options = base;
                 PolicyLimits limits;
                 const size_t before = ctx.error_count();
                 ApplyPolicyObject(ctx, path, o, options, limits);
                 ApplyPolicyEnv(ctx, name, options);
                 CheckPolicyLimits(ctx, root, out, path, limits, o);
                 if (ctx.error_count() != before) return;
                 Result<RetryPolicy> policy = RetryPolicy::Create(options);
                 if (!policy.ok()) {
                   ctx.Error(path, policy.status().message());
                   return;
                 }
                 out.policies[name] =
                     std::make_shared<const RetryPolicy>(std::move(policy).value());
                 if (!limits.empty()) out.policy_limits[name] = limits;
               });
}

void ReadBreakers(Context& ctx, const json::object& root, const CircuitBreakerOptions& base,
                  ConfigSnapshot& out) {
  ForEachEntry(ctx, root, "breakers", "circuit breakers",
               [&](const std::string& name, const std::string& path, const json::object& o) {
                 CircuitBreakerOptions options = base;
                 const size_t before = ctx.error_count();
                 // "shared" (0.6) is the entry's, not a breaker option.
                 bool shared = false;
                 ReadSharedFlag(ctx, root, path, name, o, shared);
                 ApplyObject(ctx, path, o, WithSharedField(BreakerFields()), options);
                 ApplyBreakerEnv(ctx, name, options);
                 if (ctx.error_count() != before) return;
                 options.name = name;
                 Status status = CircuitBreaker::Validate(options);
                 if (!status.ok()) {
                   ctx.Error(path, status.message());
                   return;
                 }
                 out.breakers[name] = options;
                 if (shared) out.shared_breakers.push_back(name);
               });
}

// Reports the reference `field` ("policy" or "breaker", written in the
// client object `source` at `path`) when `target` names no entry of
// `section`: neither a loaded one nor one the document defines (an entry
// that failed has its own error already).
template <typename Map>
void CheckRef(Context& ctx, const json::object& root, const Map& loaded, std::string_view section,
              std::string_view field, const std::string& target, const std::string& path,
              const json::object* source) {
  const json::value* written = source ? source->if_contains(field) : nullptr;
  if (target.empty() || written == nullptr || loaded.find(target) != loaded.end()) return;
  const json::value* defined = root.if_contains(section);
  if (defined && defined->is_object() && defined->get_object().contains(target)) return;
  ctx.Expected(Join(path, field),
               "the name of a " + std::string(field) + " in \"" + std::string(section) + "\"",
               *written);
}

// Checks the "policy" and "breaker" of the client settings `c` read from
// `source` at `path`.
void CheckClientRefs(Context& ctx, const json::object& root, const ConfigSnapshot& out,
                     const std::string& path, const ClientSettings& c,
                     const json::object* source) {
  CheckRef(ctx, root, out.policies, "policies", "policy", c.policy, path, source);
  CheckRef(ctx, root, out.breakers, "breakers", "breaker", c.breaker, path, source);
  CheckRef(ctx, root, out.budgets, "budgets", "budget", c.budget, path, source);
}

void ReadClients(Context& ctx, const json::object& root, const ClientSettings& base,
                 ConfigSnapshot& out) {
  ForEachEntry(ctx, root, "clients", "clients",
               [&](const std::string& name, const std::string& path, const json::object& o) {
                 ClientSettings settings = base;
                 const size_t before = ctx.error_count();
                 ApplyObject(ctx, path, o, ClientFields(), settings);
                 ApplyClientEnv(ctx, name, settings);
                 CheckClientRefs(ctx, root, out, path, settings, &o);
                 if (ctx.error_count() != before) return;
                 out.clients[name] = settings;
               });
}

}  // namespace

void ParseMulligan(Context& ctx, const json::object& root, ConfigSnapshot& out) {
  CheckTopLevel(ctx, root);
  ReadStateSection(ctx, root, out);
  Defaults defaults;
  ReadDefaults(ctx, root, defaults);
  ReadLimitSections(ctx, root, out);
  ReadPolicies(ctx, root, defaults.policy, out);
  ReadBreakers(ctx, root, defaults.breaker, out);
  // Client references are checked once every policy and breaker is known.
  if (defaults.client_source != nullptr) {
    CheckClientRefs(ctx, root, out, "defaults.client", defaults.client, defaults.client_source);
  }
  ReadClients(ctx, root, defaults.client, out);
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
