// core/src/simulate/fleet.cc — the client driver (fleet.h): one pass of the
// event queue per mode, every client's calls stepped through the real
// pipeline.
#include "mulligan/simulate/fleet.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include "mulligan/base/random.h"
#include "mulligan/hedging/hedging.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/simulate/event_queue.h"
#include "mulligan/simulate/service_model.h"

namespace mulligan {
inline namespace v0 {
namespace {

// splitmix64's finalizer over (a, b): independent streams per client/process.
uint64_t Mix(uint64_t a, uint64_t b) {
  uint64_t z = a + 0x9E3779B97F4A7C15ULL * (b + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Salts so the client streams and the throttle streams never coincide.
constexpr uint64_t kClientSalt = 0x636C69656E74ULL;    // "client"
constexpr uint64_t kThrottleSalt = 0x7468726F74ULL;    // "throt"
constexpr uint64_t kTailSalt = 0x7461696CULL;          // "tail"

double Seconds(Duration d) { return std::chrono::duration<double>(d).count(); }
double Millis(Duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// The parts one process shares among its clients.
struct Process {
  std::shared_ptr<RetryBudget> budget;
  std::shared_ptr<AdaptiveThrottle> throttle;
  std::unique_ptr<CircuitBreaker> breaker;
  std::unique_ptr<Pipeline> pipeline;
  std::shared_ptr<HedgingPolicy> hedging;  // a hedging mode's (its latency window)
};

struct Client {
  explicit Client(uint64_t seed) : random(seed) {}
  Random random;  // start time and per-call jitter seeds
  std::optional<Call> call;
  Outcome pending;                   // the answer of the attempt in flight
  Duration first_start = Duration::zero();
  Duration call_start = Duration::zero();
  int calls_started = 0;
};

// A hedging mode's per-client state (kept apart: a retrying mode pays nothing).
struct HedgeState {
  struct Copy {
    Outcome outcome;  // the service's answer, delivered at `done`
    Duration done = Duration::zero();
    bool live = false;  // started, and neither recorded nor cancelled
  };
  std::optional<HedgedCall> call;
  Copy copies[kMaxHedgedAttempts];
  // The one armed kAttempt wake-up (a hedging delay), if any.
  std::optional<Duration> wake;
};

std::unique_ptr<ServiceModel> MakeModel(const Scenario& s) {
  if (s.model == SimModelKind::kOcc) return std::make_unique<OccModel>(s.slot);
  if (s.model == SimModelKind::kTail) {
    TailModelOptions t = s.tail;
    t.seed = Mix(s.seed ^ kTailSalt, 0);  // the same stream for every mode
    return std::make_unique<TailModel>(t);
  }
  CapacityModelOptions c = s.capacity;
  if (s.headroom) c.capacity_per_s = *s.headroom * s.clients / Seconds(s.interval);
  return std::make_unique<CapacityModel>(c);
}

class FleetRun {
 public:
  FleetRun(const Scenario& scenario, const SimMode& mode)
      : scenario_(scenario),
        mode_(mode),
        queue_(&clock_),
        model_(MakeModel(scenario)),
        base_policy_(RetryPolicy::Create(mode.policy).value()) {
    report_.mode = mode.name;
    report_.clients = scenario.clients;
  }

  ModeReport Run() {
    MakeProcesses();
    const auto n = static_cast<uint32_t>(scenario_.clients);
    clients_.reserve(n);
    if (mode_.hedging) hedges_.resize(n);
    queue_.Reserve(n);
    const double spread_ns = static_cast<double>(scenario_.start_spread.count());
    for (uint32_t i = 0; i < n; ++i) {
      clients_.emplace_back(Mix(scenario_.seed ^ kClientSalt, i));
      Client& c = clients_.back();
      c.first_start = Duration(static_cast<int64_t>(c.random.Uniform(0, spread_ns)));
      queue_.Push({c.first_start, i, SimEventKind::kStartCall});
    }
    latencies_.reserve(static_cast<size_t>(n) * static_cast<size_t>(scenario_.calls_per_client));
    while (!queue_.empty()) {
      const SimEvent e = queue_.Pop();
      if (mode_.hedging) {
        HedgeEvent(e);
        continue;
      }
      switch (e.kind) {
        case SimEventKind::kStartCall:
          StartCall(e.client);
          break;
        case SimEventKind::kAttempt:
          Admit(e.client);
          break;
        case SimEventKind::kAnswer:
          Answer(e.client);
          break;
      }
    }
    return Finish();
  }

 private:
  void MakeProcesses() {
    const int per = scenario_.clients_per_process;
    const int count = (scenario_.clients + per - 1) / per;
    processes_.resize(static_cast<size_t>(count));
    for (int j = 0; j < count; ++j) {
      Process& p = processes_[static_cast<size_t>(j)];
      Pipeline::Parts parts;
      parts.policy = &base_policy_;
      parts.clock = &clock_;
      if (mode_.budget) {
        BudgetOptions b = *mode_.budget;
        b.clock = &clock_;
        p.budget = RetryBudget::Create(b).value();
        parts.budget = p.budget.get();
      }
      if (mode_.throttle) {
        ThrottleOptions t = *mode_.throttle;
        t.seed = Mix(scenario_.seed ^ kThrottleSalt, static_cast<uint64_t>(j));
        p.throttle = AdaptiveThrottle::Create(t).value();
        parts.throttle = p.throttle.get();
      }
      if (mode_.breaker) {
        p.breaker = CircuitBreaker::Create(*mode_.breaker).value();
        parts.breaker = p.breaker.get();
      }
      p.pipeline = std::make_unique<Pipeline>(parts);
      if (mode_.hedging) p.hedging = HedgingPolicy::Create(*mode_.hedging).value();
    }
  }

  const Process& ProcessOf(uint32_t id) const {
    return processes_[id / static_cast<uint32_t>(scenario_.clients_per_process)];
  }

  void StartCall(uint32_t id) {
    Client& c = clients_[id];
    CallOptions call_options;
    call_options.seed = c.random.NextU64();  // the client's own jitter (fleet.h)
    c.call_start = queue_.now();
    ++c.calls_started;
    const Process& p = ProcessOf(id);
    if (p.hedging) {
      call_options.replay_safe = true;  // the models' calls may be sent twice
      hedges_[id].call.emplace(p.hedging->Begin(*p.pipeline, queue_.NowPoint(), call_options));
      HedgeStep(id);
      return;
    }
    c.call.emplace(p.pipeline->Begin(queue_.NowPoint(), call_options));
    Admit(id);
  }

  // Sends one attempt (or hedged copy) of client `id` to the model now and
  // counts it; returns the answer (delivered by a kAnswer event).
  ServiceAnswer Send(uint32_t id) {
    const ServiceAnswer answer = model_->Serve(queue_.now(), id);
    ++report_.attempts;
    if (answer.during_outage) ++report_.outage_attempts;
    if (answer.overloaded) {
      ++report_.overloaded;
      last_overload_ = answer.done;
    }
    return answer;
  }

  // A hedging mode's event: stale ones (the answer of a cancelled copy, a
  // wake-up no longer armed) change nothing.
  void HedgeEvent(const SimEvent& e) {
    HedgeState& h = hedges_[e.client];
    switch (e.kind) {
      case SimEventKind::kStartCall:
        StartCall(e.client);
        return;
      case SimEventKind::kAttempt:
        if (!h.wake || *h.wake != e.time) return;
        h.wake.reset();
        HedgeStep(e.client);
        return;
      case SimEventKind::kAnswer:
        HedgeAnswer(e.client, e.copy, e.time);
        return;
    }
  }

  // Starts every copy the hedged call admits now, then arms the wake-up of
  // a hedging delay or ends a call that is over (the engine decides).
  void HedgeStep(uint32_t id) {
    HedgeState& h = hedges_[id];
    for (;;) {
      const HedgeAdmission a = h.call->Admit(queue_.NowPoint());
      if (a.start()) {
        const ServiceAnswer answer = Send(id);
        if (a.copy > 1) ++report_.hedges;
        h.copies[a.copy - 1] = {answer.outcome, answer.done, true};
        queue_.Push({answer.done, id, SimEventKind::kAnswer, static_cast<uint8_t>(a.copy)});
        continue;
      }
      if (a.wait()) {
        const Duration at = queue_.now() + (a.next_start - queue_.NowPoint());
        if (h.wake != at) {
          h.wake = at;
          queue_.Push({at, id, SimEventKind::kAttempt});
        }
        return;
      }
      if (h.call->finished()) EndCall(id, h.call->stop_reason());
      return;  // kNoMore: wait for the running copies
    }
  }

  void HedgeAnswer(uint32_t id, int copy, Duration at) {
    HedgeState& h = hedges_[id];
    if (copy < 1 || copy > kMaxHedgedAttempts) return;
    HedgeState::Copy& slot = h.copies[copy - 1];
    // Two events alike in (time, client, copy) are interchangeable, so a live
    // copy answering when a cancelled one would is still answered once.
    if (!h.call || !slot.live || slot.done != at) return;
    slot.live = false;
    const HedgeDecision d = h.call->Record(copy, slot.outcome, queue_.NowPoint());
    for (int loser : d.cancel) h.copies[loser - 1].live = false;
    if (d.finished) {
      if (d.winner > 1) ++report_.hedges_won;
      EndCall(id, d.reason);
      return;
    }
    HedgeStep(id);
  }

  void Admit(uint32_t id) {
    Client& c = clients_[id];
    const AttemptAdmission admission = c.call->Admit(queue_.NowPoint());
    if (admission.wait()) {  // strategy 2 (none is configured by a scenario yet)
      queue_.Push({queue_.now() + admission.delay, id, SimEventKind::kAttempt});
      return;
    }
    if (admission.refused()) {
      EndCall(id, admission.reason);
      return;
    }
    const ServiceAnswer answer = Send(id);
    c.pending = answer.outcome;
    queue_.Push({answer.done, id, SimEventKind::kAnswer});
  }

  void Answer(uint32_t id) {
    Client& c = clients_[id];
    const Decision decision = c.call->Record(c.pending, queue_.NowPoint());
    if (decision.retry()) {
      queue_.Push({queue_.now() + decision.delay, id, SimEventKind::kAttempt});
      return;
    }
    EndCall(id, decision.reason);
  }

  void EndCall(uint32_t id, StopReason reason) {
    Client& c = clients_[id];
    const Duration now = queue_.now();
    latencies_.push_back((now - c.call_start).count());
    completion_ = std::max(completion_, now);
    ++report_.calls;
    switch (reason) {
      case StopReason::kSucceeded:
        ++report_.successes;
        break;
      case StopReason::kBudget:
        ++report_.budget_stops;
        break;
      case StopReason::kThrottled:
        ++report_.throttled;
        break;
      case StopReason::kCircuitOpen:
        ++report_.circuit_open;
        break;
      default:
        break;
    }
    c.call.reset();
    if (mode_.hedging) {
      hedges_[id].call.reset();  // finished: its destructor abandons nothing
      hedges_[id].wake.reset();
      for (HedgeState::Copy& copy : hedges_[id].copies) copy.live = false;
    }
    if (c.calls_started < scenario_.calls_per_client) {
      const Duration nominal = c.first_start + scenario_.interval * c.calls_started;
      queue_.Push({std::max(nominal, now), id, SimEventKind::kStartCall});
    }
  }

  ModeReport Finish() {
    report_.give_ups = report_.calls - report_.successes;
    report_.amplification =
        report_.calls ? static_cast<double>(report_.attempts) / static_cast<double>(report_.calls)
                      : 0.0;
    report_.completion_s = Seconds(completion_);
    report_.p50_ms = Millis(Duration(NearestRankPercentile(latencies_, 50)));
    report_.p99_ms = Millis(Duration(NearestRankPercentile(latencies_, 99)));
    report_.last_overload_s = last_overload_ ? Seconds(*last_overload_) : -1.0;
    report_.extra_load_pct =
        report_.calls ? 100.0 * static_cast<double>(report_.hedges) /
                            static_cast<double>(report_.calls)
                      : 0.0;
    return report_;
  }

  const Scenario& scenario_;
  const SimMode& mode_;
  FakeClock clock_;
  EventQueue queue_;
  std::unique_ptr<ServiceModel> model_;
  RetryPolicy base_policy_;  // every pipeline's, shared by every call
  std::vector<Process> processes_;
  std::vector<Client> clients_;
  std::vector<HedgeState> hedges_;  // a hedging mode's, one per client
  std::vector<int64_t> latencies_;
  Duration completion_ = Duration::zero();
  std::optional<Duration> last_overload_;
  ModeReport report_;
};

}  // namespace

ModeReport RunMode(const Scenario& scenario, const SimMode& mode) {
  FleetRun run(scenario, mode);
  return run.Run();
}

namespace {

// Runs every mode of the valid `s` and appends their reports to `out` in
// the scenario's order. The modes are independent runs (each owns its
// clock, queue, model and parts): they run on up to hardware_concurrency
// threads, each writing its own slot, so the report does not depend on the
// number of threads.
void RunModes(const Scenario& s, std::vector<ModeReport>& out) {
  const size_t first = out.size();
  out.resize(first + s.modes.size());
  const size_t threads = std::max<size_t>(
      1, std::min<size_t>(s.modes.size(), std::thread::hardware_concurrency()));
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < s.modes.size(); i = next++) {
      out[first + i] = RunMode(s, s.modes[i]);
    }
  };
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
}

}  // namespace

Result<SimulationReport> RunScenario(const Scenario& scenario, const SimRunOptions& options) {
  Scenario s = scenario;
  if (options.clients && !options.sweep.empty()) {
    return InvalidArgumentError("clients and sweep cannot be given together");
  }
  if (options.clients) {
    if (*options.clients < 1 || *options.clients > kMaxSimClients) {
      return InvalidArgumentError("clients must be in [1, 1000000], got " +
                                  std::to_string(*options.clients));
    }
    s.clients = *options.clients;
    s.sweep.clear();  // one run with that count
  }
  if (!options.sweep.empty()) s.sweep = options.sweep;
  if (options.seed) s.seed = *options.seed;
  Status valid = ValidateScenario(s);
  if (!valid.ok()) return valid;
  SimulationReport report;
  report.scenario = s.name;
  report.model = SimModelKindName(s.model);
  report.seed = s.seed;
  report.clients = s.clients;
  report.sweep = s.sweep;
  if (s.sweep.empty()) {
    RunModes(s, report.modes);
    return report;
  }
  for (int count : report.sweep) {
    s.clients = count;
    RunModes(s, report.modes);
  }
  report.clients = report.sweep.back();
  return report;
}

}  // namespace v0
}  // namespace mulligan
