// core/src/http/hedged_send.cc — HttpClient::Send of a hedged request
// (hedged_send.h; issue 18: "the sync Client runs its copies in one libcurl
// multi handle, with no thread per copy"). (Added in 0.6.)
//
// The engine decides, the driver acts (DESIGN.md section 1, hedging.h): a
// HedgedCall begun with HedgeAccounting::kGateOnly over a gate pipeline (the
// request's deadline, the origin's retry budget and metrics) says when a copy
// may start, which copy won and which to cancel. Each copy is a one-attempt
// call of an HttpAsyncEngine over the client's own settings, so the origin's
// breaker admits and judges it and its metrics count it; this file only
// waits on the engine's sockets and timer with poll(2) and calls back into
// the engine, as Python's hedged AsyncClient does on asyncio
// (python/mulligan/_http/hedged.py).

#include "hedged_send.h"

#include <poll.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mulligan/http/redact.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

bool ShouldHedge(const Settings& settings, const HttpRequest& request) {
  if (settings.hedging == nullptr) return false;
  return IsIdempotentMethod(request.method) || request.idempotency_key.has_value() ||
         FindHeader(request.headers, "Idempotency-Key").has_value();
}

namespace {

using Steady = std::chrono::steady_clock;

// libcurl's socket watches and timer, as the engine hands them out, waited
// on with poll(2) (real time: libcurl's timeouts are real).
class EngineWaiter {
 public:
  explicit EngineWaiter(HttpAsyncEngine& engine) : engine_(engine) {}

  // Waits at most `max_wait` for a watched socket or libcurl's timer, then
  // runs the socket actions they call for (which queue the engine's events).
  void WaitOnce(Duration max_wait) {
    Apply();
    Steady::time_point wake = Steady::now() + std::max(Duration::zero(), max_wait);
    if (timer_ && *timer_ < wake) wake = *timer_;
    fds_.clear();
    for (const auto& [fd, events] : watches_) {
      pollfd p{};
      p.fd = fd;
      p.events = static_cast<short>(((events & HttpAsyncEngine::kRead) ? POLLIN : 0) |
                                    ((events & HttpAsyncEngine::kWrite) ? POLLOUT : 0));
      fds_.push_back(p);
    }
    const auto ms = std::chrono::ceil<std::chrono::milliseconds>(wake - Steady::now()).count();
    const int timeout = static_cast<int>(std::clamp<int64_t>(ms, 0, 60 * 1000));
    if (poll(fds_.data(), fds_.size(), timeout) > 0) {
      for (const pollfd& p : fds_) {
        int ready = 0;
        if (p.revents & (POLLIN | POLLERR | POLLHUP)) ready |= HttpAsyncEngine::kRead;
        if (p.revents & POLLOUT) ready |= HttpAsyncEngine::kWrite;
        if (ready != 0) engine_.SocketAction(p.fd, ready);
      }
    }
    Apply();
    if (timer_ && Steady::now() >= *timer_) {
      timer_.reset();
      engine_.SocketAction(-1, 0);  // re-arms the timer if need be
    }
    Apply();
  }

 private:
  void Apply() {
    engine_.TakeSocketChanges(&changes_);
    for (const HttpAsyncEngine::SocketWatch& w : changes_) {
      if (w.events <= 0) {
        watches_.erase(w.fd);  // 0: not watched now; -1: closed
      } else {
        watches_[w.fd] = w.events;
      }
    }
    if (std::optional<long> t = engine_.TakeTimerChange()) {
      if (*t < 0) {
        timer_.reset();
      } else {
        timer_ = Steady::now() + std::chrono::milliseconds(*t);
      }
    }
  }

  HttpAsyncEngine& engine_;
  std::unordered_map<int, int> watches_;
  std::optional<Steady::time_point> timer_;
  std::vector<HttpAsyncEngine::SocketWatch> changes_;
  std::vector<pollfd> fds_;
};

// A copy's outcome for the hedged call, from its own call's end (hedged.py,
// _outcome_of): an accepted response wins, a terminal one ends the call, a
// retryable one is its HttpResponseOutcome (its Retry-After is the server's
// pushback, gRPC A6); an error is a retryable failure unless terminal.
Outcome OutcomeOf(const Result<HttpResponse>& r, const HttpCallInfo& info, bool keyed,
                  WallTime wall) {
  if (!r.ok()) return Outcome::Failure(info.stop_reason != StopReason::kTerminal);
  if (r->stop_reason == StopReason::kSucceeded) return Outcome::Success();
  if (r->stop_reason == StopReason::kTerminal) return Outcome::Failure(false);
  std::optional<std::string> retry_after = r->Header("Retry-After");
  return HttpResponseOutcome(r->status, retry_after, keyed, wall);
}

// One hedged Send (see HedgedSend).
class HedgedSender {
 public:
  HedgedSender(const Settings& settings, HttpAsyncEngine& engine, const HttpRequest& request)
      : settings_(settings),
        engine_(engine),
        request_(request),
        clock_(request.clock != nullptr ? *request.clock : *settings.clock),
        virtual_clock_(dynamic_cast<SystemClock*>(&clock_) == nullptr),
        policy_(request.policy != nullptr ? *request.policy : settings.policy),
        waiter_(engine),
        keyed_(request.idempotency_key.has_value() ||
               FindHeader(request.headers, "Idempotency-Key").has_value()) {
    if (request.should_abort) {
      abort_ = &request.should_abort;
    } else if (settings.options.should_abort) {
      abort_ = &settings.options.should_abort;
    }
  }

  Result<HttpResponse> Run(HttpCallInfo* info) {
    // The gate: the request's deadline bounds new copies; the budget is the
    // one the copies' calls are charged to; the metrics the origin's (or
    // metrics_name), as the copies' calls report.
    RetryOptions gate_retry = policy_.options();
    gate_retry.max_attempts = 1;
    Result<RetryPolicy> gate_policy = RetryPolicy::Create(gate_retry);
    if (!gate_policy.ok()) return gate_policy.status();
    const std::string origin = HttpOrigin(request_.url).value_or(request_.url);
    const std::shared_ptr<RetryBudget> budget = engine_.BudgetFor(request_.url);
    Pipeline::Parts parts;
    parts.policy = &*gate_policy;
    parts.clock = &clock_;
    parts.budget = budget.get();
    if (settings_.options.report_metrics) {
      parts.metrics = MetricsRegistry::Default().Get(
          settings_.options.metrics_name.empty() ? origin : settings_.options.metrics_name);
    }
    const Pipeline gate(parts);
    CallOptions options;
    options.key = origin;
    // mulligan's testing mode (one attempt): one copy, as in Python.
    options.replay_safe = request_.max_attempts != 1;
    HedgedCall call = settings_.hedging->Begin(gate, clock_.Now(), options,
                                               HedgeAccounting::kGateOnly);
    Loop(call);
    for (auto& [copy, id] : running_) engine_.CancelCopy(id);
    running_.clear();
    restarts_.clear();
    call.Abandon(clock_.Now());  // no-op once finished
    return Finish(call, info);
  }

 private:
  void Loop(HedgedCall& call) {
    while (!call.finished()) {
      if (abort_ != nullptr && PollAbort()) return;
      const TimePoint now = clock_.Now();
      const HedgeAdmission a = call.Admit(now);
      if (a.start()) {
        if (!StartCopy(a.copy, now)) {
          // Validated before (Send): only memory can fail here; the call ends.
          (void)call.Record(a.copy, Outcome::Failure(false), clock_.Now());
        }
        continue;
      }
      std::optional<Duration> wait;
      if (a.wait()) wait = a.next_start - now;
      if (running_.empty()) {
        if (!wait) return;  // no copy may start and none runs
        Sleep(*wait);       // a server's pushback is being waited out
        continue;
      }
      if (wait && virtual_clock_) {
        clock_.SleepFor(*wait);  // a fake clock: the delay passes at once
        wait = Duration::zero();
      }
      Duration max_wait = wait.value_or(std::chrono::seconds(1));
      if (abort_ != nullptr) max_wait = std::min(max_wait, kAbortPollInterval);
      RestartDue(&max_wait);
      waiter_.WaitOnce(max_wait);
      if (HandleEvents(call)) return;
    }
  }

  // Begins copy `copy` as a one-attempt call of the engine and starts it;
  // false (last_error_ says why) when it cannot start.
  bool StartCopy(int copy, TimePoint now) {
    HttpRequest one = request_;
    one.max_attempts = 1;
    one.on_retry = nullptr;
    one.should_abort = nullptr;
    // The copy's own deadline is what is left of the request's.
    std::optional<RetryPolicy> trimmed;
    if (policy_.options().deadline) {
      RetryOptions o = policy_.options();
      o.deadline = std::max(Duration(std::chrono::milliseconds(1)),
                            *o.deadline - (now - start_));
      Result<RetryPolicy> made = RetryPolicy::Create(o);
      if (made.ok()) trimmed.emplace(std::move(made).value());
    }
    one.policy = trimmed ? &*trimmed : &policy_;
    Result<uint64_t> id = engine_.Begin(std::move(one));  // copies the policy
    if (!id.ok()) {
      last_error_ = id.status();
      return false;
    }
    Status started = engine_.StartAttempt(*id);
    if (!started.ok()) {
      engine_.CancelCopy(*id);
      last_error_ = started;
      return false;
    }
    running_.emplace(copy, *id);
    return true;
  }

  // Handles the ends of copies; true when the hedged call is over.
  bool HandleEvents(HedgedCall& call) {
    engine_.TakeEvents(&events_);
    for (const HttpAsyncEngine::Event& e : events_) {
      const int copy = CopyOf(e.id);
      if (copy == 0) continue;
      if (e.admission_wait) {  // a bulkhead's queue or a rate limiter's slot
        if (virtual_clock_) {
          clock_.SleepFor(e.decision.delay);
          restarts_.emplace_back(Steady::now(), e.id);
        } else {
          restarts_.emplace_back(Steady::now() + e.decision.delay, e.id);
        }
        continue;
      }
      running_.erase(copy);
      HttpCallInfo copy_info;
      Result<HttpResponse> r = engine_.Finish(e.id, &copy_info);
      if (call.finished()) continue;  // ended after the call did: dropped
      const Outcome outcome = OutcomeOf(r, copy_info, keyed_, clock_.WallNow());
      Keep(std::move(r), copy_info);
      const HedgeDecision d = call.Record(copy, outcome, clock_.Now());
      for (int loser : d.cancel) {
        auto it = running_.find(loser);
        if (it == running_.end()) continue;
        engine_.CancelCopy(it->second);  // counted cancelled
        running_.erase(it);
      }
      if (d.finished) return true;
    }
    return false;
  }

  // A response is kept over an earlier copy's error; an error only until a
  // response comes (a refused copy sent nothing).
  void Keep(Result<HttpResponse> r, const HttpCallInfo& info) {
    if (r.ok()) {
      last_response_ = std::move(r).value();
      last_error_ = OkStatus();
    } else if (!last_response_) {
      last_error_ = r.status();
    }
    last_info_ = info;
  }

  // Starts again the copies whose admission wait is over, and shortens
  // `max_wait` to the next one due.
  void RestartDue(Duration* max_wait) {
    const Steady::time_point now = Steady::now();
    for (auto it = restarts_.begin(); it != restarts_.end();) {
      if (it->first <= now) {
        if (!engine_.StartAttempt(it->second).ok()) engine_.CancelCopy(it->second);
        it = restarts_.erase(it);
      } else {
        *max_wait = std::min<Duration>(*max_wait, it->first - now);
        ++it;
      }
    }
  }

  int CopyOf(uint64_t id) const {
    for (const auto& [copy, running] : running_) {
      if (running == id) return copy;
    }
    return 0;
  }

  bool PollAbort() {
    bool stop = false;
    try {
      stop = (*abort_)();
    } catch (...) {
      stop = false;  // an escaping exception counts as false (client.h)
    }
    aborted_ = aborted_ || stop;
    return aborted_;
  }

  // Sleeps `d` through the clock, in slices polling the abort hook.
  void Sleep(Duration d) {
    while (d > Duration::zero()) {
      const Duration slice = abort_ != nullptr ? std::min(d, kAbortPollInterval) : d;
      clock_.SleepFor(slice);
      d -= slice;
      if (abort_ != nullptr && PollAbort()) return;
    }
  }

  Result<HttpResponse> Finish(const HedgedCall& call, HttpCallInfo* info);

  const Settings& settings_;
  HttpAsyncEngine& engine_;
  const HttpRequest& request_;
  Clock& clock_;
  const bool virtual_clock_;  // not the system clock: waits pass through it at once
  const RetryPolicy& policy_;
  EngineWaiter waiter_;
  const bool keyed_;
  const HttpAbortHook* abort_ = nullptr;
  bool aborted_ = false;
  TimePoint start_ = clock_.Now();
  std::unordered_map<int, uint64_t> running_;  // copy -> engine call id
  std::vector<std::pair<Steady::time_point, uint64_t>> restarts_;
  std::vector<HttpAsyncEngine::Event> events_;
  std::optional<HttpResponse> last_response_;
  Status last_error_ = OkStatus();
  HttpCallInfo last_info_;
};

// The stop reason of a hedged request no copy won: the hedged call's
// (attempts exhausted, budget, deadline) unless a copy's terminal response
// ended it (hedged.py, _final_reason).
StopReason FinalReason(StopReason hedge, StopReason copy) {
  return copy == StopReason::kTerminal || hedge == StopReason::kNone ? copy : hedge;
}

// The error of a hedged request no copy answered: the last copy's own error,
// which names one attempt (each copy is one attempt of its own exchange),
// made to name the copies sent ("... after 3 attempts (hedged copies) (...)").
Status CopiesError(const Status& copy_error, int copies) {
  if (copies <= 1) return copy_error;
  const std::string one = " after 1 attempt";
  const std::string many = " after " + std::to_string(copies) + " attempts (hedged copies)";
  std::string message = copy_error.message();
  const size_t at = message.find(one);
  const bool exact = at != std::string::npos &&
                     (at + one.size() == message.size() || message[at + one.size()] != 's');
  if (exact) {
    message.replace(at, one.size(), many);
  } else {
    message += " (" + std::to_string(copies) + " hedged copies)";
  }
  return Status(copy_error.code(), message);
}

Result<HttpResponse> HedgedSender::Finish(const HedgedCall& call, HttpCallInfo* info) {
  const Duration elapsed = clock_.Now() - start_;
  const int copies = call.started();
  if (info != nullptr) {
    *info = last_info_;
    info->attempts = copies;
    info->elapsed = elapsed;
  }
  if (aborted_) {
    if (info != nullptr) info->stop_reason = StopReason::kNone;
    return Status(StatusCode::kCallback, request_.method + " " + RedactUrl(request_.url) +
                                             ": aborted by the should_abort hook after " +
                                             std::to_string(copies) + " hedged copies");
  }
  if (!last_response_) {
    return last_error_.ok() ? InternalError("a hedged request ended without a copy")
                            : CopiesError(last_error_, copies);
  }
  HttpResponse response = std::move(*last_response_);
  response.attempts = copies;
  response.elapsed = elapsed;
  if (call.winner() == 0) response.stop_reason = FinalReason(call.stop_reason(), response.stop_reason);
  if (info != nullptr) info->stop_reason = response.stop_reason;
  return response;
}

}  // namespace

Result<HttpResponse> HedgedSend(const Settings& settings, HttpAsyncEngine& engine,
                                const HttpRequest& request, HttpCallInfo* info) {
  if (info != nullptr) *info = HttpCallInfo{};
  HedgedSender sender(settings, engine, request);
  return sender.Run(info);
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
