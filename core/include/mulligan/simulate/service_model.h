// mulligan/simulate/service_model.h — the models of a service that
// `mulligan simulate` runs the fleet against. (Added in 0.6.)
//
// A model is told each attempt when it arrives (virtual time, in the order
// the event queue delivers them, which never goes backwards) and returns the
// attempt's Outcome and when the answer reaches the client. The models are
// deterministic: only the tail model with tail_fraction draws random numbers,
// from its own seeded stream.
//
// OccModel — a resource written with optimistic concurrency, as in Marc
// Brooker, "Exponential Backoff And Jitter" (AWS Architecture Blog, 2015):
// every client does one write; writers that contend at the same moment
// conflict and all but one fail. The rule here, exactly:
//   - time is cut into slots of `slot` (the service time of one write);
//     an attempt arriving at t belongs to slot k = floor(t / slot);
//   - the FIRST attempt to arrive in a slot wins (the earliest; at the same
//     instant the lowest client id, the event queue's order) and succeeds;
//     every later attempt in the same slot conflicts: a retryable failure
//     (Outcome::Failure(true), the OCC "version changed, read and retry");
//   - every answer of slot k arrives at the slot's end, (k + 1) * slot.
//
// CapacityModel — a server of capacity C requests per second that fails
// above it, goes down and recovers:
//   - during the outage [outage_start, outage_start + outage_duration) every
//     attempt is answered 503;
//   - otherwise time is cut into windows of `window`; the first
//     floor(C * window) attempts arriving in a window are served (success),
//     the rest are answered 503 (overload), a fixed-window limiter;
//   - every answer arrives `latency` after the attempt.
// 503 is Outcome::Http(503): retryable by default and an overload answer for
// adaptive throttling and the budgets (RFC 9110 15.6.4).
//
// TailModel — a server with a latency tail, the case hedging is for ("The
// Tail at Scale", Dean and Barroso, CACM 2013; issue 18's benchmark: about
// 2% of requests take 100 ms or more, the rest about 1 ms). (Added in 0.6.)
//   - every attempt succeeds;
//   - a slow attempt answers `tail_latency` after it arrives, every other
//     one `latency` after;
//   - which are slow: with tail_every > 0, the attempts are numbered 1, 2,
//     3, ... in the order they arrive and the tail_every-th, 2*tail_every-th,
//     ... (n % tail_every == 0) are slow (exact, for tests; it aliases with
//     hedges sent in pairs); with tail_every == 0, each attempt is slow with
//     probability tail_fraction, one Random(seed).NextDouble() < tail_fraction
//     draw per attempt in arrival order (base/random.h);
//   - it has no queue and no capacity: an attempt never delays another.
//
// Cancelled hedges: every model decides an attempt when it arrives and keeps
// no queue, so a copy the client cancels has already cost the server what it
// costs (its OCC slot, its capacity window's place, its number in the tail
// model's count): cancelling it changes nothing on the server; the client
// only ignores its answer.
//
// Thread-safety: not thread-safe; a model belongs to one run.
#ifndef MULLIGAN_SIMULATE_SERVICE_MODEL_H_
#define MULLIGAN_SIMULATE_SERVICE_MODEL_H_

#include <cstdint>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/random.h"

namespace mulligan {
inline namespace v0 {

// The service's answer to one attempt. (Added in 0.6.)
struct ServiceAnswer {
  Outcome outcome;
  // When the answer reaches the client: virtual ns since the run's start.
  Duration done = Duration::zero();
  // The attempt arrived while the service was down (CapacityModel only).
  bool during_outage = false;
  // The attempt was refused for capacity, outside the outage (CapacityModel).
  bool overloaded = false;
};

// The interface the fleet driver talks to. (Added in 0.6.)
class ServiceModel {
 public:
  virtual ~ServiceModel() = default;
  // Serves the attempt of `client` that arrives at `arrival` (virtual ns
  // since the start; never earlier than the previous call's arrival).
  virtual ServiceAnswer Serve(Duration arrival, uint32_t client) = 0;
};

// See the file comment. REQUIRES: slot > 0 (the scenario checks it).
// (Added in 0.6.)
class OccModel final : public ServiceModel {
 public:
  explicit OccModel(Duration slot) : slot_(slot) {}
  ServiceAnswer Serve(Duration arrival, uint32_t client) override;

 private:
  Duration slot_;
  // The slot whose write has been won already (-1: none yet).
  int64_t won_slot_ = -1;
};

// Parameters of CapacityModel; times are virtual since the run's start.
// (Added in 0.6.)
struct CapacityModelOptions {
  double capacity_per_s = 1000.0;  // C, requests per second, > 0
  Duration window = std::chrono::milliseconds(100);   // > 0
  Duration latency = std::chrono::milliseconds(20);   // >= 0
  Duration outage_start = std::chrono::seconds(30);   // >= 0
  Duration outage_duration = std::chrono::seconds(60);  // >= 0 (0: no outage)
};

// See the file comment. (Added in 0.6.)
class CapacityModel final : public ServiceModel {
 public:
  explicit CapacityModel(const CapacityModelOptions& options);
  ServiceAnswer Serve(Duration arrival, uint32_t client) override;
  // Attempts served per window: floor(capacity_per_s * window), at least 1.
  int64_t per_window() const { return per_window_; }

 private:
  CapacityModelOptions options_;
  int64_t per_window_;
  int64_t window_index_ = -1;
  int64_t served_in_window_ = 0;
};

// Parameters of TailModel. (Added in 0.6.)
struct TailModelOptions {
  Duration latency = std::chrono::milliseconds(1);         // >= 0
  Duration tail_latency = std::chrono::milliseconds(100);  // >= 0
  int64_t tail_every = 0;       // >= 0; > 0: every n-th attempt is slow
  double tail_fraction = 0.02;  // in [0, 1]: the chance of a slow attempt (tail_every 0)
  uint64_t seed = 1;            // tail_fraction's stream (the fleet derives it)
};

// See the file comment. REQUIRES: tail_every >= 0, 0 <= tail_fraction <= 1
// (the scenario checks them). (Added in 0.6.)
class TailModel final : public ServiceModel {
 public:
  explicit TailModel(const TailModelOptions& options)
      : options_(options), random_(options.seed) {}
  ServiceAnswer Serve(Duration arrival, uint32_t client) override;

 private:
  TailModelOptions options_;
  Random random_;
  int64_t received_ = 0;  // attempts served so far
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SIMULATE_SERVICE_MODEL_H_
