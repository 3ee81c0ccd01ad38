// mulligan/simulate/scenario.h — what `mulligan simulate` runs: a service
// model, a fleet of clients, and the modes (policies, budgets, throttling,
// breakers) to compare on them. (Added in 0.6.)
//
// The scenario file is JSON (Boost.JSON), every duration a string with units
// ("250ms", "1m30s") or a number of seconds:
//
//   {
//     "name": "outage",                     // optional text
//     "description": "...",                 // optional text, ignored
//     "seed": 1,                            // integer >= 0; default 1
//     "service": {"model": "occ", "slot": "10ms"}
//             or {"model": "capacity", "capacity_per_s": 5000 | "headroom": 1.5,
//                 "window": "100ms", "latency": "20ms",
//                 "outage_start": "30s", "outage_duration": "60s"}
//             or {"model": "tail", "latency": "1ms",       // (0.6)
//                 "tail_latency": "100ms", "tail_fraction": 0.02 | "tail_every": 50},
//     "clients": {"count": 1000,            // 1 .. 1,000,000
//                 "start_spread": "1s",     // first calls start uniformly in [0, spread)
//                 "calls": 1,               // logical calls per client, >= 1
//                 "interval": "10s",        // between a client's calls' starts, > 0
//                 "per_process": 1},        // clients sharing one budget/throttle/breaker
//     "modes": [{"name": "full jitter",     // required, unique
//                "policy":   {...},         // the config file's policy fields
//                "budget":   {...},         // the config file's budget fields (optional)
//                "throttle": {...},         // the config file's throttling fields (optional)
//                "breaker":  {...},         // the config file's breaker fields (optional)
//                "hedging":  {...}}],       // HedgingOptions' fields (optional; 0.6)
//     "sweep": [10, 100, 1000]              // optional (0.6): run once per client count
//   }
//
// "policy", "budget", "throttle" and "breaker" take exactly the fields of the
// same objects in a mulligan configuration file (config/config.h), read by
// the same code; a mode without "policy" gets DESIGN.md's defaults. "seed" in
// a policy is refused: every client draws its own jitter (fleet.h).
// "hedging" takes HedgingOptions' fields under their own names (max_attempts,
// hedging_delay, delay_quantile, quantile_window, quantile_min_samples; the
// table of core/src/config, hedging.h states the rules): the mode's calls are
// then hedged calls (HedgedCall, fleet.h) instead of retried ones; its policy
// still classifies outcomes and bounds the call (deadline), its budget and
// breaker gate the copies, and "throttle" is refused (hedged calls do not ask
// adaptive throttling). "sweep" runs the whole scenario once per client count
// (each in [1, 1000000], no count twice), in the order given; --clients
// replaces it.
// A tail model needs exactly one of tail_fraction and tail_every.
// "headroom" sets C = headroom * count / interval (a capacity that follows
// --clients); exactly one of capacity_per_s and headroom is required.
// Model fields of the other model are refused.
//
// Errors (kInvalidArgument): every problem found, one per line, each
// "<source>: <json path>: <what was expected>, got <value>", as the
// configuration loader reports them; unknown fields say "did you mean".
//
// Thread-safety: the functions are reentrant.
#ifndef MULLIGAN_SIMULATE_SCENARIO_H_
#define MULLIGAN_SIMULATE_SCENARIO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/base/status.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"
#include "mulligan/hedging/hedging.h"
#include "mulligan/retry/policy.h"
#include "mulligan/simulate/service_model.h"

namespace mulligan {
inline namespace v0 {

// Which model of service_model.h. (Added in 0.6.)
enum class SimModelKind : int { kOcc = 0, kCapacity = 1, kTail = 2 /* 0.6 */ };

// Returns "occ", "capacity" or "tail".
const char* SimModelKindName(SimModelKind kind);

// One way of calling the service, compared with the others. (Added in 0.6.)
struct SimMode {
  std::string name;
  RetryOptions policy;  // its seed must be unset
  std::optional<BudgetOptions> budget;
  std::optional<ThrottleOptions> throttle;
  std::optional<CircuitBreakerOptions> breaker;
  // Set: the mode hedges its calls (fleet.h); no throttle then. (Added in 0.6.)
  std::optional<HedgingOptions> hedging;
};

// A whole scenario (see the file comment for the meaning of each field).
// (Added in 0.6.)
struct Scenario {
  std::string name;
  uint64_t seed = 1;
  SimModelKind model = SimModelKind::kOcc;
  Duration slot = std::chrono::milliseconds(10);  // occ, > 0
  CapacityModelOptions capacity;                  // capacity
  std::optional<double> headroom;                 // capacity: replaces capacity_per_s
  TailModelOptions tail;                          // tail (0.6)
  int clients = 100;                              // [1, kMaxClients]
  Duration start_spread = Duration::zero();       // >= 0
  int calls_per_client = 1;                       // >= 1
  Duration interval = std::chrono::seconds(1);    // > 0
  int clients_per_process = 1;                    // >= 1
  std::vector<SimMode> modes;                     // at least one
  // Client counts to run in turn, each in [1, kMaxSimClients], none twice;
  // empty: one run with `clients`. (Added in 0.6.)
  std::vector<int> sweep;
};

inline constexpr int kMaxSimClients = 1000000;

// Checks a scenario built in code (ParseScenario runs it too): the ranges of
// the file comment, mode names non-empty and unique, and each mode's parts
// valid (RetryPolicy::Create, ValidateBudgetOptions, ValidateThrottleOptions,
// CircuitBreaker::Validate, ValidateHedgingOptions), no hedging mode with a
// throttle, and the sweep's counts. kInvalidArgument names the field
// ("modes[1].policy: max_attempts must be >= 1, got 0").
Status ValidateScenario(const Scenario& scenario);

// Parses and validates a scenario document. `source` prefixes messages
// ("outage.json", "<string>").
Result<Scenario> ParseScenario(std::string_view text, std::string_view source);

// Reads and parses the file at `path`; an unreadable file gives
// "<path>: cannot read the scenario file: <strerror>".
Result<Scenario> ParseScenarioFile(const std::string& path);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SIMULATE_SCENARIO_H_
