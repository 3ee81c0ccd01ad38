// mulligan/simulate/fleet.h — the client driver of `mulligan simulate`: a
// fleet of clients calling a service model through the REAL engine, in
// virtual time. (Added in 0.6.)
//
// Each logical call of each client is a pipeline Call (pipeline/call.h)
// stepped exactly as every front door steps it: Admit before each attempt,
// the service model answers, Record the outcome, wait the decision's delay.
// The waits are events of the event queue (event_queue.h), whose FakeClock
// every engine part reads, so 100,000 clients run in seconds of wall time.
//
// What is real: the mode's RetryPolicy (backoff, every jitter mode, max
// attempts, deadline), its RetryBudget, AdaptiveThrottle and CircuitBreaker,
// each created from the mode's options and driven through one Pipeline per
// process. Clients are grouped into processes of `clients_per_process`
// consecutive clients: a process shares one budget, one throttle and one
// breaker, as a service's replicas each keep their own.
//
// Hedging modes (0.6): each logical call is a HedgedCall (hedging/hedging.h)
// of the process's HedgingPolicy (one per process, so one latency window per
// process, as each replica keeps its own), begun replay-safe, through the
// process's pipeline (its policy, budget and breaker). The engine decides,
// the fleet acts: every copy the call admits is sent to the model at that
// instant (copy k+1 at copy k's start + the policy's current delay, or at
// once after a retryable failure), a kWait arms one wake-up at its
// next_start, each copy's answer is recorded when it arrives, and the copies
// the decision cancels are dropped: their answers, still delivered by the
// model, are ignored (service_model.h: a cancelled copy has cost the server
// what it costs at arrival). A copy's timeout is not enforced (every model
// answers). The call's latency is its start to the winner's answer (or to
// its last copy's failure). At one instant a client's answers are handled
// before its wake-up (event_queue.h), so a copy answered exactly when the
// delay runs out wins without a hedge.
//
// Randomness, all from the scenario's seed (splitmix64 / xoshiro256**,
// base/random.h), the same for every mode (common random numbers, so modes
// differ only by their policy): client i draws its first start in
// [0, start_spread) and one jitter seed per logical call (CallOptions::seed),
// so each client has its own jitter sequence from the one shared policy;
// process j's throttle draws from its own seed.
//
// Client i's call k (from 0) starts at first_start + k * interval, or when
// its call k - 1 ends if that is later (a client makes one call at a time).
//
// Thread-safety: RunScenario and RunMode are reentrant (each run owns its
// clock, queue, model and parts; nothing global is touched).
#ifndef MULLIGAN_SIMULATE_FLEET_H_
#define MULLIGAN_SIMULATE_FLEET_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "mulligan/base/status.h"
#include "mulligan/simulate/report.h"
#include "mulligan/simulate/scenario.h"

namespace mulligan {
inline namespace v0 {

// Overrides of a scenario's own values (the command's --clients, --seed).
// (Added in 0.6.)
struct SimRunOptions {
  std::optional<int> clients;     // [1, kMaxSimClients]; replaces the scenario's sweep too
  std::optional<uint64_t> seed;
  // A sweep (--sweep): client counts replacing the scenario's "sweep" (each
  // in [1, kMaxSimClients], none twice); not with `clients`. (Added in 0.6.)
  std::vector<int> sweep;
};

// Runs every mode of `scenario` (after the overrides) and returns their
// reports in the scenario's order; with a sweep (the scenario's or the
// options'), every mode once per client count, the counts in sweep order
// (report.sweep; report.clients is then the last count). The modes run in parallel on up to
// std::thread::hardware_concurrency() threads (each mode is one
// single-threaded run, so the report is the same on any machine). kInvalidArgument (ValidateScenario's
// message, "clients must be in [1, 1000000], got 0", "sweep[1]: 10 is
// listed twice", or "clients and sweep cannot be given together") when the
// scenario or an override is invalid; nothing is run then.
Result<SimulationReport> RunScenario(const Scenario& scenario, const SimRunOptions& options = {});

// Runs one mode of a valid scenario. REQUIRES: ValidateScenario(scenario)
// is OK and `mode` is valid.
ModeReport RunMode(const Scenario& scenario, const SimMode& mode);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SIMULATE_FLEET_H_
