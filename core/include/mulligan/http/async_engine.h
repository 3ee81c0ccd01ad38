// mulligan/http/async_engine.h — the resilient HTTP client for event loops:
// many calls on one thread through libcurl's multi interface.
//
// A front door of the pipeline like HttpClient (http/client.h), whose
// request, response and option types it shares.

#ifndef MULLIGAN_HTTP_ASYNC_ENGINE_H_
#define MULLIGAN_HTTP_ASYNC_ENGINE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "mulligan/base/status.h"
#include "mulligan/http/client.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
inline namespace v0 {

// Runs many HTTP calls on one thread through libcurl's multi interface, for
// an event loop to drive (asyncio, libuv, epoll): the loop watches the
// sockets and the timer this engine asks for and calls SocketAction when one
// is ready; no thread per request. The engine decides, the caller acts: when
// an attempt fails and the policy says retry, the event carries the delay,
// the caller waits it its own way (asyncio.sleep) and calls StartAttempt
// again. Semantics (method rules, Retry-After, deadlines, breakers, errors)
// are HttpClient::Send's.
//
//   id = engine.Begin(request);  engine.StartAttempt(id);
//   loop: apply TakeSocketChanges() / TakeTimerChange() to the event loop;
//         on readiness SocketAction(fd, events); on the timer SocketAction(-1, 0);
//         for each TakeEvents(): retry -> wait delay, StartAttempt(id);
//                                 done  -> Finish(id)
//
// Thread-safety: not thread-safe; one engine belongs to one event-loop
// thread. Not copyable or movable (libcurl callbacks point at it).
// How often an event loop asks again for a call queued in a bulkhead
// (Event::admission_wait). (Added in 0.4.)
inline constexpr Duration kAdmissionPollInterval = std::chrono::milliseconds(20);

namespace internal {
class EngineFactory;  // core/src/http/hedged_send.h
}  // namespace internal

class HttpAsyncEngine {
 public:
  // A socket whose watch changed: events is a mask of kRead | kWrite, 0 to
  // stop watching it, or -1 when libcurl has just closed it (a loop that
  // keeps idle sockets registered must drop them then; the number may be
  // reused by the next socket).
  struct SocketWatch {
    int fd = -1;
    int events = 0;
  };
  static constexpr int kRead = 1;
  static constexpr int kWrite = 2;

  // The end of one attempt of call `id`.
  struct Event {
    uint64_t id = 0;
    // True: wait `decision.delay`, then StartAttempt(id). False: Finish(id).
    bool retry = false;
    Decision decision;
    ErrorKind error = ErrorKind::kNone;
    int http_status = 0;
    // True (with retry): no attempt ran; the pipeline's strategy 2 (the
    // client's bulkhead queue, or its rate limiter's reserved slot) asks the
    // call to wait `decision.delay`, then StartAttempt(id) again. Not a
    // retry: report none. A caller that gives up meanwhile calls Cancel(id),
    // which frees its place. A place in a bulkhead's queue is polled: its
    // delay is then at most kAdmissionPollInterval. (Appended in 0.4.)
    bool admission_wait = false;
  };

  // Validates `options` as HttpClient::Create does. `options.clock` is used
  // for deadlines only (the caller does the waiting). `options.hedging` is
  // validated but not acted on: the engine runs calls, and a hedging front
  // door begins each copy as a call of its own (Python's AsyncClient,
  // HttpClient::Send; hedging/hedging.h, HedgeAccounting::kGateOnly).
  static Result<std::unique_ptr<HttpAsyncEngine>> Create(const HttpClientOptions& options);
  ~HttpAsyncEngine();
  HttpAsyncEngine(const HttpAsyncEngine&) = delete;
  HttpAsyncEngine& operator=(const HttpAsyncEngine&) = delete;

  // Validates and copies `request` (its policy too; on_retry is ignored: the
  // caller reports retries from the events) and returns the call's id. No
  // transfer starts yet. kInvalidArgument as HttpClient::Send.
  Result<uint64_t> Begin(const HttpRequest& request);
  // The same, taking `request` over instead of copying it.
  Result<uint64_t> Begin(HttpRequest&& request);
  // Starts the next attempt of call `id`. When the circuit breaker refuses,
  // no transfer starts and a final event is queued at once.
  // kInvalidArgument for an unknown id or one already in flight.
  Status StartAttempt(uint64_t id);
  // Replaces every header field named `name` (any case) for the next
  // attempts of call `id`, or adds it, as HttpClientCall::SetHeader (a
  // per-attempt traceparent). kInvalidArgument for an unknown id, an
  // attempt in flight or queued, or a header Begin would refuse (and
  // Idempotency-Key); kNoMemory. (Added in 0.5.)
  Status SetHeader(uint64_t id, const std::string& name, const std::string& value);
  // Tells libcurl that `fd` is ready for `events` (kRead | kWrite), or with
  // fd -1 that the timer fired; queues the events of finished attempts.
  void SocketAction(int fd, int events);
  // The socket watches changed since the last call, in order.
  std::vector<SocketWatch> TakeSocketChanges();
  // The same into `*out` (replaced), handing its storage to the engine in
  // exchange: a loop that keeps one vector allocates nothing per call.
  void TakeSocketChanges(std::vector<SocketWatch>* out);
  // The timer change since the last call: nullopt for none, -1 to cancel
  // the timer, otherwise fire SocketAction(-1, 0) after that many ms. Every
  // SocketAction(-1, 0) reports the current timer, so a loop may fire early
  // or keep an earlier timer instead of cancelling it: it is re-armed.
  std::optional<long> TakeTimerChange();
  // The events queued since the last call.
  std::vector<Event> TakeEvents();
  // The same into `*out` (replaced), swapping storage as above.
  void TakeEvents(std::vector<Event>* out);
  // Returns the result of a finished call (as HttpClient::Send would) and
  // forgets the call. `info`, when non-null, is filled in either way.
  Result<HttpResponse> Finish(uint64_t id, HttpCallInfo* info = nullptr);
  // Abandons call `id` (removing any transfer in flight); no-op when unknown.
  // Like an aborted HttpClient::Send, the call frees its breaker's half-open
  // probe permit without judging the origin and is reported as failed in
  // the metrics. Destroying the engine does the same for pending calls.
  void Cancel(uint64_t id);
  // Cancels call `id` because its answer is no longer wanted: a hedged
  // request's losing copy (another copy won, or one failed fatally), or a
  // request whose caller cancelled it (Python's awaiting task). As
  // Cancel, the transfer in flight is removed (its connection is closed,
  // never reused mid-request) and a half-open probe permit is freed without
  // judging the origin, and the retry budget is not told; but the metrics
  // count the call as cancelled (MetricsSnapshot::cancelled, with its
  // attempt in flight in attempts), neither success nor failure, as issue
  // 18 and hedging/hedging.h require of a losing copy. No-op when unknown.
  // Thread-safety: as the engine's. (Added in 0.6.)
  void CancelCopy(uint64_t id);
  // Calls begun and not yet finished or cancelled.
  size_t size() const;
  // The retry budget the calls to `url`'s origin (HttpOrigin) are charged
  // to: the client's shared budget, the origin's own (made on first use),
  // or null when budgets are off or `url` has no origin. A hedging front
  // door asks it before each extra copy (hedging.h, HedgeAccounting::
  // kGateOnly). Thread-safety: as the engine's. (Added in 0.6.)
  std::shared_ptr<RetryBudget> BudgetFor(std::string_view url) const;

 private:
  friend class internal::EngineFactory;
  struct Impl;
  explicit HttpAsyncEngine(std::unique_ptr<Impl> impl);
  static Result<std::unique_ptr<HttpAsyncEngine>> Make(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_ASYNC_ENGINE_H_
