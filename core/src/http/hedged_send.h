// core/src/http/hedged_send.h — HttpClient::Send of a hedged request: the
// copies as transfers of one libcurl multi handle (an HttpAsyncEngine over
// the client's own settings) driven by poll(2) on the calling thread
// (private). (Added in 0.6.)

#ifndef MULLIGAN_HTTP_HEDGED_SEND_H_
#define MULLIGAN_HTTP_HEDGED_SEND_H_

#include <memory>

#include "exchange.h"
#include "mulligan/http/async_engine.h"
#include "mulligan/http/client.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// Makes HttpAsyncEngines over an existing client's settings.
class EngineFactory {
 public:
  // An engine whose calls share `settings` (the client's per-origin
  // budgets, breakers and metrics) instead of settings of their own.
  // kInternal when libcurl cannot make a multi handle.
  // REQUIRES: `settings` outlives the engine.
  static Result<std::unique_ptr<HttpAsyncEngine>> Over(const Settings& settings);
};

// Whether HttpClient::Send hedges `request`: the client has a hedging
// policy and the request may be sent more than once at a time (an RFC 9110
// idempotent method, or an Idempotency-Key field or key: the rule of
// Python's hedged AsyncClient, hedged.replay_safe).
bool ShouldHedge(const Settings& settings, const HttpRequest& request);

// Sends `request` hedged under settings.hedging through `engine` (an
// EngineFactory::Over engine of the same settings, with no call in it), as
// HttpClient::Send documents, and fills `info` (when non-null) either way.
// The engine decides (HedgedCall, begun with HedgeAccounting::kGateOnly),
// this loop acts: it starts each copy as a one-attempt call of the engine,
// waits on the engine's sockets and timer with poll(2) until a copy ends or
// the next may start, and cancels the losers (HttpAsyncEngine::CancelCopy).
// Returns with no call left in the engine.
// Thread-safety: one Send per engine at a time.
Result<HttpResponse> HedgedSend(const Settings& settings, HttpAsyncEngine& engine,
                                const HttpRequest& request, HttpCallInfo* info);

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_HEDGED_SEND_H_
