// core/src/http/client.cc — HttpClient: blocking calls over the pipeline,
// and the same call stepped by its caller (HttpClientCall).
//
// Send is one loop (DESIGN.md section 1): validate the request, begin its
// pipeline call, then for each attempt ask the call to admit it, run one
// libcurl transfer, and let the call decide; the waits go through the
// request's or the client's Clock, so a FakeClock runs a whole chain
// instantly. A hedged Send (HttpClientOptions::hedging) runs its copies on
// an HttpAsyncEngine instead (hedged_send.cc).
//
// Connections: every easy handle is attached to one CURLSH that shares the
// connection cache and the DNS cache, and finished easy handles go back to a
// pool (handle_pool.h), so a keep-alive connection opened by one attempt (or
// call, or thread) is reused by the next. A handle gets the client's fixed
// options once, when it is made (ConfigureHandle); each attempt sets only
// what belongs to the call (Exchange::Setup sets every one of those, every
// time), and a handle going back to its pool drops its pointers into the
// finished call (ScrubHandle). That saves a curl_easy_reset() and a dozen
// option copies per request.

#include "mulligan/http/client.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>
#include <optional>
#include <utility>
#include <vector>

#include "exchange.h"
#include "handle_pool.h"
#include "hedged_send.h"
#include "mulligan/http/async_engine.h"

namespace mulligan {
inline namespace v0 {

struct HttpClient::Impl {
  explicit Impl(std::unique_ptr<internal::Settings> s) : settings(std::move(s)) {}
  std::unique_ptr<internal::Settings> settings;
  internal::CurlHandlePool handles;

  // Hedged Sends (options.hedging): each runs on an engine of its own (one
  // libcurl multi handle, on the calling thread), taken from these idle
  // ones, whose connections stay alive for the next hedged Send. Declared
  // after `settings`: destroyed before it.
  std::mutex engines_mu;
  std::vector<std::unique_ptr<HttpAsyncEngine>> engines;  // guarded by engines_mu

  // An idle engine, or a new one (kInternal when libcurl cannot make it).
  Result<std::unique_ptr<HttpAsyncEngine>> TakeEngine() {
    {
      std::lock_guard<std::mutex> lock(engines_mu);
      if (!engines.empty()) {
        std::unique_ptr<HttpAsyncEngine> engine = std::move(engines.back());
        engines.pop_back();
        return engine;
      }
    }
    return internal::EngineFactory::Over(*settings);
  }
  // Keeps `engine` for the next hedged Send (at most kIdleEngines).
  void ReturnEngine(std::unique_ptr<HttpAsyncEngine> engine) {
    std::lock_guard<std::mutex> lock(engines_mu);
    if (engines.size() < kIdleEngines) engines.push_back(std::move(engine));
  }
  static constexpr size_t kIdleEngines = 8;
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

const RetryPolicy& HttpClient::policy() const { return impl_->settings->policy; }
const HttpClientOptions& HttpClient::options() const { return impl_->settings->options; }

Result<std::unique_ptr<HttpClient>> HttpClient::Create(const HttpClientOptions& options) {
  Result<std::unique_ptr<internal::Settings>> settings = internal::MakeSettings(options);
  if (!settings.ok()) return settings.status();
  auto impl = std::make_unique<Impl>(std::move(settings).value());
  Status s = impl->handles.Init();
  if (!s.ok()) return s;
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

namespace {

// Runs the next attempt of `call` on `easy`: the abort check, the
// admission, the transfer and the decision. A stop decision (with reason
// kNone when the call was aborted or refused) ends the call.
Decision RunAttempt(internal::Exchange& call, CURL* easy) {
  Clock& clock = call.clock();
  if (call.PollAbort()) return Decision{};
  // A bulkhead's queue or a rate limiter's slot is waited for here, on the
  // calling thread; then a transfer slot (max_connections).
  if (!call.AdmitBlocking()) return Decision{};
  if (!call.AcquireConnection()) return Decision{};
  call.Setup(easy, call.AttemptTimeout(clock.Now()));
  const CURLcode code = curl_easy_perform(easy);
  call.ReleaseConnection();
  call.Collect(easy, code);
  if (call.aborted()) return Decision{};
  return call.OnAttemptDone(clock.Now());
}

}  // namespace

Result<HttpResponse> HttpClient::Send(const HttpRequest& request, HttpCallInfo* info) {
  if (info != nullptr) *info = HttpCallInfo{};
  Impl& impl = *impl_;
  internal::Exchange call;
  Status valid = call.Init(*impl.settings, request);
  if (!valid.ok()) return valid;
  if (internal::ShouldHedge(*impl.settings, request)) {
    // Validated above; nothing of `call` began.
    Result<std::unique_ptr<HttpAsyncEngine>> engine = impl.TakeEngine();
    if (!engine.ok()) return engine.status();
    Result<HttpResponse> response = internal::HedgedSend(*impl.settings, **engine, request, info);
    impl.ReturnEngine(std::move(engine).value());
    return response;
  }

  internal::PooledHandle easy(&impl.handles, impl.settings->options,
                              impl.settings->proxy_from_env);
  if (easy.get() == nullptr) return InternalError("curl_easy_init failed");

  Clock& clock = call.clock();
  call.Begin(clock.Now());
  for (;;) {
    const Decision decision = RunAttempt(call, easy.get());
    if (!decision.retry()) break;
    if (!call.NotifyRetry()) break;
    if (!call.Wait(decision.delay)) break;
  }
  return call.Finish(clock.Now(), info);
}

// ---------------------------------------------------------------------------
// HttpClientCall

struct HttpClientCall::Impl {
  Impl(HttpClient::Impl* client, HttpRequest r)
      : request(std::move(r)),
        easy(&client->handles, client->settings->options, client->settings->proxy_from_env) {}
  HttpRequest request;
  std::optional<RetryPolicy> policy;  // the request's own, copied
  internal::PooledHandle easy;
  internal::Exchange call;
  Decision last;
  bool stopped = false;   // a stop decision came (or Cancel ran)
  bool finished = false;  // Finish ran
};

HttpClientCall::HttpClientCall(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpClientCall::~HttpClientCall() {
  if (impl_ && !impl_->finished) {
    Cancel();
    (void)Finish(nullptr);
  }
}

Result<std::unique_ptr<HttpClientCall>> HttpClient::Begin(HttpRequest request) {
  Impl& impl = *impl_;
  auto state = std::make_unique<HttpClientCall::Impl>(&impl, std::move(request));
  if (state->request.policy != nullptr) {
    state->policy.emplace(*state->request.policy);
    state->request.policy = &*state->policy;
  }
  Status valid = state->call.Init(*impl.settings, state->request);
  if (!valid.ok()) {
    state->finished = true;  // nothing began: nothing to cancel
    return valid;
  }
  if (state->easy.get() == nullptr) {
    state->finished = true;
    return InternalError("curl_easy_init failed");
  }
  state->call.Begin(state->call.clock().Now());
  return std::unique_ptr<HttpClientCall>(new HttpClientCall(std::move(state)));
}

Decision HttpClientCall::Attempt() {
  Impl& impl = *impl_;
  if (impl.finished || impl.stopped) return impl.last;
  impl.last = RunAttempt(impl.call, impl.easy.get());
  impl.stopped = !impl.last.retry();
  return impl.last;
}

HttpRetryEvent HttpClientCall::RetryEvent() const { return impl_->call.RetryEvent(); }

Status HttpClientCall::SetHeader(const std::string& name, const std::string& value) {
  Impl& impl = *impl_;
  if (impl.finished || impl.stopped) return InvalidArgumentError("this HTTP call has stopped");
  return impl.call.SetHeader(name, value);
}

void HttpClientCall::Cancel() {
  Impl& impl = *impl_;
  if (impl.finished || impl.stopped) return;
  impl.call.CancelRetry(impl.call.clock().Now());
  impl.stopped = true;
  impl.last = Decision{};
}

Result<HttpResponse> HttpClientCall::Finish(HttpCallInfo* info) {
  Impl& impl = *impl_;
  if (impl.finished) return InvalidArgumentError("this HTTP call is finished already");
  impl.finished = true;
  return impl.call.Finish(impl.call.clock().Now(), info);
}

}  // namespace v0
}  // namespace mulligan
