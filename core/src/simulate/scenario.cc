// core/src/simulate/scenario.cc — the scenario file (scenario.h): read with
// the configuration loader's readers and field tables (core/src/config/), so
// a policy, budget, throttle or breaker object means here what it means in a
// mulligan configuration file, and a bad field is described the same way.
#include "mulligan/simulate/scenario.h"

#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <set>
#include <sstream>

#include "config/duplicate_keys.h"
#include "config/fields.h"
#include "config/limits_format.h"
#include "config/reader.h"

namespace mulligan {
inline namespace v0 {
namespace {

using internal::Context;
using internal::FieldTable;
namespace json = boost::json;

constexpr double kMax = 1.7e308;

bool ReadPositiveDuration(Context& c, const std::string& p, const json::value& v, Duration& out) {
  return internal::ReadDuration(c, p, v, /*positive=*/true, out);
}
bool ReadAnyDuration(Context& c, const std::string& p, const json::value& v, Duration& out) {
  return internal::ReadDuration(c, p, v, /*positive=*/false, out);
}

// The "service" object's fields. Presence is tracked by the caller.
const FieldTable<Scenario>& ServiceFields() {
  using S = Scenario;
  static const FieldTable<S> table = {
      {"model",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         int i = 0;
         if (!internal::ReadChoice(c, p, v, {"occ", "capacity", "tail"}, i)) return false;
         s.model = static_cast<SimModelKind>(i);
         return true;
       }},
      {"slot", [](Context& c, const std::string& p, const json::value& v,
                  S& s) { return ReadPositiveDuration(c, p, v, s.slot); }},
      {"capacity_per_s",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         return internal::ReadNumber(c, p, v, 0, /*lo_open=*/true, kMax, "a number > 0",
                                     s.capacity.capacity_per_s);
       }},
      {"headroom",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         double h = 0;
         if (!internal::ReadNumber(c, p, v, 0, /*lo_open=*/true, kMax, "a number > 0", h))
           return false;
         s.headroom = h;
         return true;
       }},
      {"window", [](Context& c, const std::string& p, const json::value& v,
                    S& s) { return ReadPositiveDuration(c, p, v, s.capacity.window); }},
      {"latency",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         // The capacity and the tail models' base latency (only the
         // scenario's model reads its own).
         if (!ReadAnyDuration(c, p, v, s.capacity.latency)) return false;
         s.tail.latency = s.capacity.latency;
         return true;
       }},
      {"outage_start", [](Context& c, const std::string& p, const json::value& v,
                          S& s) { return ReadAnyDuration(c, p, v, s.capacity.outage_start); }},
      {"outage_duration",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         return ReadAnyDuration(c, p, v, s.capacity.outage_duration);
       }},
      {"tail_latency", [](Context& c, const std::string& p, const json::value& v,
                          S& s) { return ReadAnyDuration(c, p, v, s.tail.tail_latency); }},
      {"tail_every",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         int every = 0;
         if (!internal::ReadInt(c, p, v, 1, std::numeric_limits<int>::max(), every)) return false;
         s.tail.tail_every = every;
         return true;
       }},
      {"tail_fraction",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         return internal::ReadNumber(c, p, v, 0, /*lo_open=*/false, 1, "a number in [0, 1]",
                                     s.tail.tail_fraction);
       }},
  };
  return table;
}

// The "clients" object's fields.
const FieldTable<Scenario>& ClientFields() {
  using S = Scenario;
  static const FieldTable<S> table = {
      {"count",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         return internal::ReadInt(c, p, v, 1, kMaxSimClients, s.clients);
       }},
      {"start_spread", [](Context& c, const std::string& p, const json::value& v,
                          S& s) { return ReadAnyDuration(c, p, v, s.start_spread); }},
      {"calls",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         return internal::ReadInt(c, p, v, 1, 1000000, s.calls_per_client);
       }},
      {"interval", [](Context& c, const std::string& p, const json::value& v,
                      S& s) { return ReadPositiveDuration(c, p, v, s.interval); }},
      {"per_process",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         return internal::ReadInt(c, p, v, 1, kMaxSimClients, s.clients_per_process);
       }},
  };
  return table;
}

// The names a mode object takes (for "unknown field" messages).
const FieldTable<SimMode>& ModeFields() {
  static const FieldTable<SimMode> table = {
      {"name",
       [](Context& c, const std::string& p, const json::value& v, SimMode& m) {
         return internal::ReadString(c, p, v, m.name);
       }},
      {"policy",
       [](Context& c, const std::string& p, const json::value& v, SimMode& m) {
         const json::object* o = internal::AsObject(c, p, v, "a policy object");
         if (o == nullptr) return false;
         internal::ApplyObject(c, p, *o, internal::PolicyFields(), m.policy);
         return true;
       }},
      {"budget",
       [](Context& c, const std::string& p, const json::value& v, SimMode& m) {
         const json::object* o = internal::AsObject(c, p, v, "a budget object");
         if (o == nullptr) return false;
         m.budget.emplace();
         internal::ApplyObject(c, p, *o, internal::BudgetFields(), *m.budget);
         return true;
       }},
      {"throttle",
       [](Context& c, const std::string& p, const json::value& v, SimMode& m) {
         const json::object* o = internal::AsObject(c, p, v, "a throttle object");
         if (o == nullptr) return false;
         m.throttle.emplace();
         internal::ApplyObject(c, p, *o, internal::ThrottleFields(), *m.throttle);
         return true;
       }},
      {"breaker",
       [](Context& c, const std::string& p, const json::value& v, SimMode& m) {
         const json::object* o = internal::AsObject(c, p, v, "a breaker object");
         if (o == nullptr) return false;
         m.breaker.emplace();
         internal::ApplyObject(c, p, *o, internal::BreakerFields(), *m.breaker);
         return true;
       }},
      {"hedging",
       [](Context& c, const std::string& p, const json::value& v, SimMode& m) {
         const json::object* o = internal::AsObject(c, p, v, "a hedging object");
         if (o == nullptr) return false;
         m.hedging.emplace();
         internal::ApplyObject(c, p, *o, internal::HedgingFields(), *m.hedging);
         return true;
       }},
  };
  return table;
}

const FieldTable<Scenario>& TopFields() {
  using S = Scenario;
  static const FieldTable<S> table = {
      {"name", [](Context& c, const std::string& p, const json::value& v,
                  S& s) { return internal::ReadString(c, p, v, s.name); }},
      {"description",
       [](Context& c, const std::string& p, const json::value& v, S&) {
         std::string ignored;
         return internal::ReadString(c, p, v, ignored);
       }},
      {"seed",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         std::optional<int64_t> i = internal::AsInteger(v);
         if (!i || *i < 0) {
           c.Expected(p, "an integer >= 0", v);
           return false;
         }
         s.seed = static_cast<uint64_t>(*i);
         return true;
       }},
      // "service", "clients" and "modes" are read by ParseRoot (listed here
      // for the "unknown field" message).
      {"service", nullptr},
      {"clients", nullptr},
      {"modes", nullptr},
      {"sweep",
       [](Context& c, const std::string& p, const json::value& v, S& s) {
         return internal::ForEachElement(
             c, p, v, "an array of client counts", [&](const std::string& ep, const json::value& e) {
               int count = 0;
               if (!internal::ReadInt(c, ep, e, 1, kMaxSimClients, count)) return false;
               s.sweep.push_back(count);
               return true;
             });
       }},
  };
  return table;
}

// The models a field of the service object belongs to, as a bit set of
// 1 << SimModelKind, and how a message names them.
unsigned ModelsOf(std::string_view key) {
  constexpr unsigned kOcc = 1u << static_cast<int>(SimModelKind::kOcc);
  constexpr unsigned kCapacity = 1u << static_cast<int>(SimModelKind::kCapacity);
  constexpr unsigned kTail = 1u << static_cast<int>(SimModelKind::kTail);
  if (key == "model") return kOcc | kCapacity | kTail;
  if (key == "slot") return kOcc;
  if (key == "latency") return kCapacity | kTail;
  if (key == "tail_latency" || key == "tail_every" || key == "tail_fraction") return kTail;
  return kCapacity;
}
std::string ModelNames(unsigned models) {
  std::vector<std::string> names;
  for (int k = 0; k <= static_cast<int>(SimModelKind::kTail); ++k) {
    if (models & (1u << k)) names.push_back(internal::Quote(SimModelKindName(static_cast<SimModelKind>(k))));
  }
  if (names.size() == 1) return "model " + names[0];
  std::string out = "models ";
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) out += i + 1 == names.size() ? " and " : ", ";
    out += names[i];
  }
  return out;
}

void ReadService(Context& ctx, const json::value& v, Scenario& out) {
  const json::object* o = internal::AsObject(ctx, "service", v, "a service object");
  if (o == nullptr) return;
  if (!o->contains("model")) {
    ctx.Error("service.model", "required: \"occ\", \"capacity\" or \"tail\"");
    return;
  }
  internal::ApplyObject(ctx, "service", *o, ServiceFields(), out);
  for (const auto& kv : *o) {
    const std::string_view key = kv.key();
    const unsigned models = ModelsOf(key);
    if (internal::FindField(ServiceFields(), key) &&
        (models & (1u << static_cast<int>(out.model))) == 0) {
      ctx.Error(internal::Join("service", key), "only for " + ModelNames(models));
    }
  }
  if (out.model == SimModelKind::kCapacity &&
      o->contains("capacity_per_s") == o->contains("headroom")) {
    ctx.Error("service", "a capacity model needs exactly one of capacity_per_s and headroom");
  }
  if (out.model == SimModelKind::kTail &&
      o->contains("tail_every") == o->contains("tail_fraction")) {
    ctx.Error("service", "a tail model needs exactly one of tail_every and tail_fraction");
  }
}

void ReadModes(Context& ctx, const json::value& v, Scenario& out) {
  internal::ForEachElement(
      ctx, "modes", v, "an array of mode objects", [&](const std::string& p, const json::value& e) {
        const json::object* o = internal::AsObject(ctx, p, e, "a mode object");
        if (o == nullptr) return false;
        SimMode mode;
        internal::ApplyObject(ctx, p, *o, ModeFields(), mode);
        out.modes.push_back(std::move(mode));
        return true;
      });
}

std::string Prefixed(const std::string& path, const Status& status) {
  return path + ": " + status.message();
}

}  // namespace

const char* SimModelKindName(SimModelKind kind) {
  switch (kind) {
    case SimModelKind::kOcc:
      return "occ";
    case SimModelKind::kCapacity:
      return "capacity";
    case SimModelKind::kTail:
      return "tail";
  }
  return "unknown";
}

Status ValidateScenario(const Scenario& s) {
  auto bad = [](const std::string& what) { return InvalidArgumentError(what); };
  if (s.clients < 1 || s.clients > kMaxSimClients)
    return bad("clients.count must be in [1, 1000000], got " + std::to_string(s.clients));
  if (s.calls_per_client < 1)
    return bad("clients.calls must be >= 1, got " + std::to_string(s.calls_per_client));
  if (s.clients_per_process < 1)
    return bad("clients.per_process must be >= 1, got " + std::to_string(s.clients_per_process));
  if (s.start_spread < Duration::zero()) return bad("clients.start_spread must be >= 0");
  if (s.interval <= Duration::zero()) return bad("clients.interval must be > 0");
  if (s.model == SimModelKind::kOcc && s.slot <= Duration::zero())
    return bad("service.slot must be > 0");
  if (s.model == SimModelKind::kCapacity) {
    const CapacityModelOptions& c = s.capacity;
    const double capacity = s.headroom ? *s.headroom : c.capacity_per_s;
    if (!(capacity > 0) || !std::isfinite(capacity))
      return bad(std::string(s.headroom ? "service.headroom" : "service.capacity_per_s") +
                 " must be a finite number > 0");
    if (c.window <= Duration::zero()) return bad("service.window must be > 0");
    if (c.latency < Duration::zero()) return bad("service.latency must be >= 0");
    if (c.outage_start < Duration::zero()) return bad("service.outage_start must be >= 0");
    if (c.outage_duration < Duration::zero()) return bad("service.outage_duration must be >= 0");
  }
  if (s.model == SimModelKind::kTail) {
    if (s.tail.latency < Duration::zero()) return bad("service.latency must be >= 0");
    if (s.tail.tail_latency < Duration::zero()) return bad("service.tail_latency must be >= 0");
    if (s.tail.tail_every < 0)
      return bad("service.tail_every must be >= 0, got " + std::to_string(s.tail.tail_every));
    if (!(s.tail.tail_fraction >= 0 && s.tail.tail_fraction <= 1))
      return bad("service.tail_fraction must be in [0, 1]");
  }
  std::set<int> counts;
  for (size_t i = 0; i < s.sweep.size(); ++i) {
    const std::string path = "sweep[" + std::to_string(i) + "]";
    if (s.sweep[i] < 1 || s.sweep[i] > kMaxSimClients)
      return bad(path + ": must be in [1, 1000000], got " + std::to_string(s.sweep[i]));
    if (!counts.insert(s.sweep[i]).second)
      return bad(path + ": " + std::to_string(s.sweep[i]) + " is listed twice");
  }
  if (s.modes.empty()) return bad("modes: at least one mode is required");
  std::set<std::string> names;
  for (size_t i = 0; i < s.modes.size(); ++i) {
    const SimMode& m = s.modes[i];
    const std::string path = "modes[" + std::to_string(i) + "]";
    if (m.name.empty()) return bad(path + ".name: required (a non-empty string)");
    if (!names.insert(m.name).second)
      return bad(path + ".name: " + internal::Quote(m.name) + " names two modes");
    if (m.policy.seed)
      return bad(path + ".policy.seed: not allowed; each client draws its own jitter from "
                        "the scenario's seed");
    Result<RetryPolicy> policy = RetryPolicy::Create(m.policy);
    if (!policy.ok()) return bad(Prefixed(path + ".policy", policy.status()));
    if (m.budget) {
      Status st = ValidateBudgetOptions(*m.budget);
      if (!st.ok()) return bad(Prefixed(path + ".budget", st));
    }
    if (m.throttle) {
      Status st = ValidateThrottleOptions(*m.throttle);
      if (!st.ok()) return bad(Prefixed(path + ".throttle", st));
    }
    if (m.breaker) {
      Status st = CircuitBreaker::Validate(*m.breaker);
      if (!st.ok()) return bad(Prefixed(path + ".breaker", st));
    }
    if (m.hedging) {
      if (m.throttle)
        return bad(path + ".throttle: not allowed with \"hedging\" (a hedged call does not ask "
                          "adaptive throttling, hedging.h)");
      Status st = ValidateHedgingOptions(*m.hedging);
      // "hedging: max_attempts must be ..." becomes "modes[0].hedging.max_attempts ...".
      std::string what = st.message();
      if (what.rfind("hedging: ", 0) == 0) what = what.substr(9);
      if (!st.ok()) return bad(path + ".hedging." + what);
    }
  }
  return Status();
}

Result<Scenario> ParseScenario(std::string_view text, std::string_view source) {
  LoadOptions load;
  load.env_overrides = false;
  Context ctx(std::string(source), load);
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
  json::parser parser;
  boost::system::error_code ec;
  const size_t consumed = parser.write(text.data(), text.size(), ec);
  if (ec) {
    return InvalidArgumentError(std::string(source) + ": invalid JSON at byte " +
                                std::to_string(consumed) + ": " + ec.message());
  }
  if (std::optional<std::pair<std::string, size_t>> repeated = internal::FindDuplicateKey(text)) {
    return InvalidArgumentError(std::string(source) + ": duplicate key " +
                                internal::Quote(repeated->first) + " at byte " +
                                std::to_string(repeated->second));
  }
  const json::value root = parser.release();
  const json::object* o = internal::AsObject(ctx, "(top level)", root, "a scenario object");
  if (o == nullptr) return ctx.ToStatus();
  Scenario out;
  for (const auto& kv : *o) {
    const std::string_view key = kv.key();
    if (key == "service") {
      ReadService(ctx, kv.value(), out);
    } else if (key == "clients") {
      const json::object* c = internal::AsObject(ctx, "clients", kv.value(), "a clients object");
      if (c != nullptr) internal::ApplyObject(ctx, "clients", *c, ClientFields(), out);
    } else if (key == "modes") {
      ReadModes(ctx, kv.value(), out);
    } else if (const internal::FieldFn<Scenario>* fn = internal::FindField(TopFields(), key)) {
      (*fn)(ctx, std::string(key), kv.value(), out);
    } else {
      internal::UnknownField(ctx, "", key, TopFields());
    }
  }
  if (!o->contains("service")) ctx.Error("service", "required: a service object");
  if (!o->contains("modes")) ctx.Error("modes", "required: an array of mode objects");
  if (o->contains("sweep") && out.sweep.empty() && ctx.error_count() == 0)
    ctx.Error("sweep", "expected at least one client count, got []");
  if (ctx.error_count() > 0) return ctx.ToStatus();
  Status valid = ValidateScenario(out);
  if (!valid.ok()) return InvalidArgumentError(std::string(source) + ": " + valid.message());
  return out;
}

Result<Scenario> ParseScenarioFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return InvalidArgumentError(path + ": cannot read the scenario file: " +
                                std::strerror(errno));
  }
  std::ostringstream text;
  text << in.rdbuf();
  return ParseScenario(text.str(), path);
}

}  // namespace v0
}  // namespace mulligan
