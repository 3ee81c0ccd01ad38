// core/src/http/async_engine.cc — HttpAsyncEngine: many calls on one thread
// through libcurl's multi interface, for an event loop to drive.
//
// Each call is an Exchange (exchange.h) over the client's pipeline, exactly
// as in HttpClient::Send; only the loop differs: libcurl's sockets and timer
// are handed to the caller's event loop, finished transfers come back as
// events carrying the pipeline's decision, and the caller waits between
// attempts its own way (asyncio.sleep) before StartAttempt.

#include "mulligan/http/async_engine.h"

#include <curl/curl.h>
#include <unistd.h>

#include <algorithm>
#include <deque>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "exchange.h"
#include "hedged_send.h"
#include "transfer.h"

namespace mulligan {
inline namespace v0 {

struct HttpAsyncEngine::Impl {
  struct AsyncCall {
    HttpRequest request;
    std::optional<RetryPolicy> policy;
    internal::Exchange call;
    CURL* easy = nullptr;
    bool in_flight = false;
    bool queued = false;  // admitted, waiting for a transfer slot (max_connections)
  };

  explicit Impl(std::unique_ptr<internal::Settings> s)
      : owned_settings(std::move(s)), settings(owned_settings.get()) {}
  // An engine over another front door's settings (a hedged HttpClient::Send).
  explicit Impl(const internal::Settings* borrowed) : settings(borrowed) {}
  ~Impl() {
    for (auto& [id, c] : calls) {
      const bool in_flight = c->in_flight;
      if (in_flight) curl_multi_remove_handle(multi, c->easy);
      if (c->easy != nullptr) curl_easy_cleanup(c->easy);
      c->call.Abandon(c->call.clock().Now(), in_flight);
    }
    calls.clear();
    for (CURL* easy : idle) curl_easy_cleanup(easy);
    if (multi != nullptr) curl_multi_cleanup(multi);
  }

  static int OnSocket(CURL*, curl_socket_t fd, int what, void* user, void*) {
    auto* self = static_cast<Impl*>(user);
    int events = 0;
    if (what != CURL_POLL_REMOVE) {
      if (what & CURL_POLL_IN) events |= kRead;
      if (what & CURL_POLL_OUT) events |= kWrite;
    }
    self->socket_changes.push_back(SocketWatch{static_cast<int>(fd), events});
    return 0;
  }
  // Closes a socket libcurl opened, telling the event loop first (events -1)
  // so that it can drop a watch it kept on an idle connection.
  static int OnCloseSocket(void* user, curl_socket_t fd) {
    auto* self = static_cast<Impl*>(user);
    try {
      self->socket_changes.push_back(SocketWatch{static_cast<int>(fd), -1});
    } catch (...) {
      // Out of memory: the loop's next wait on this fd reports an error.
    }
    return close(fd);
  }

  static int OnTimer(CURLM*, long timeout_ms, void* user) {
    static_cast<Impl*>(user)->timer_change = timeout_ms;
    return 0;
  }

  void Release(AsyncCall& c) {
    if (c.in_flight) {
      curl_multi_remove_handle(multi, c.easy);
      c.in_flight = false;
      --active;
    }
    c.queued = false;  // its id stays in `waiting`, skipped there
    if (c.easy != nullptr) {
      internal::ScrubHandle(c.easy);
      curl_easy_setopt(c.easy, CURLOPT_PRIVATE, static_cast<char*>(nullptr));
      if (idle.size() < 256) {
        idle.push_back(c.easy);
      } else {
        curl_easy_cleanup(c.easy);
      }
      c.easy = nullptr;
    }
  }

  void Drain() {
    int pending = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &pending)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* easy = msg->easy_handle;
      const CURLcode code = msg->data.result;
      char* priv = nullptr;
      curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
      const auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(priv));
      curl_multi_remove_handle(multi, easy);
      auto it = calls.find(id);
      if (it == calls.end()) continue;
      AsyncCall& c = *it->second;
      c.in_flight = false;
      --active;
      c.call.Collect(easy, code);
      Event e;
      e.id = id;
      e.decision = c.call.OnAttemptDone(c.call.clock().Now());
      e.retry = e.decision.retry();
      e.error = c.call.last_error();
      e.http_status = c.call.last_status();
      events.push_back(e);
    }
    LaunchWaiting();
  }

  // Starts the transfer of call `id`'s next attempt (admitted already).
  Status Launch(uint64_t id, AsyncCall& c, TimePoint now) {
    if (c.easy == nullptr) {
      if (!idle.empty()) {
        c.easy = idle.back();
        idle.pop_back();
      } else {
        c.easy = curl_easy_init();
        if (c.easy == nullptr) return InternalError("curl_easy_init failed");
        internal::ConfigureHandle(c.easy, nullptr, settings->options, settings->proxy_from_env);
        curl_easy_setopt(c.easy, CURLOPT_CLOSESOCKETFUNCTION, &Impl::OnCloseSocket);
        curl_easy_setopt(c.easy, CURLOPT_CLOSESOCKETDATA, this);
      }
    }
    // The attempt's timeout starts now, not when it was queued.
    c.call.Setup(c.easy, c.call.AttemptTimeout(now));
    curl_easy_setopt(c.easy, CURLOPT_PRIVATE, reinterpret_cast<char*>(static_cast<uintptr_t>(id)));
    if (curl_multi_add_handle(multi, c.easy) != CURLM_OK) {
      return InternalError("curl_multi_add_handle failed");
    }
    c.in_flight = true;
    ++active;
    return OkStatus();
  }

  // Starts queued attempts, in order, while transfer slots are free.
  void LaunchWaiting() {
    const auto cap = static_cast<size_t>(settings->options.max_connections);
    while (!waiting.empty() && (cap == 0 || active < cap)) {
      const uint64_t id = waiting.front();
      waiting.pop_front();
      auto it = calls.find(id);
      if (it == calls.end() || !it->second->queued) continue;  // cancelled meanwhile
      AsyncCall& c = *it->second;
      c.queued = false;
      if (!Launch(id, c, c.call.clock().Now()).ok()) {
        c.call.FailToStart(c.call.clock().Now());
        Event e;
        e.id = id;
        events.push_back(e);
      }
    }
  }

  std::unique_ptr<internal::Settings> owned_settings;  // null when borrowed
  const internal::Settings* settings;
  CURLM* multi = nullptr;
  std::unordered_map<uint64_t, std::unique_ptr<AsyncCall>> calls;
  std::vector<CURL*> idle;
  size_t active = 0;             // transfers in libcurl
  std::deque<uint64_t> waiting;  // admitted attempts waiting for a slot, in order
  uint64_t next_id = 1;
  std::vector<SocketWatch> socket_changes;
  std::optional<long> timer_change;
  std::vector<Event> events;
};

HttpAsyncEngine::HttpAsyncEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpAsyncEngine::~HttpAsyncEngine() = default;

Result<std::unique_ptr<HttpAsyncEngine>> HttpAsyncEngine::Create(
    const HttpClientOptions& options) {
  Result<std::unique_ptr<internal::Settings>> settings = internal::MakeSettings(options);
  if (!settings.ok()) return settings.status();
  return Make(std::make_unique<Impl>(std::move(settings).value()));
}

Result<std::unique_ptr<HttpAsyncEngine>> internal::EngineFactory::Over(const Settings& settings) {
  return HttpAsyncEngine::Make(std::make_unique<HttpAsyncEngine::Impl>(&settings));
}

Result<std::unique_ptr<HttpAsyncEngine>> HttpAsyncEngine::Make(std::unique_ptr<Impl> impl) {
  impl->multi = curl_multi_init();
  if (impl->multi == nullptr) return InternalError("curl_multi_init failed");
  curl_multi_setopt(impl->multi, CURLMOPT_SOCKETFUNCTION, &Impl::OnSocket);
  curl_multi_setopt(impl->multi, CURLMOPT_SOCKETDATA, impl.get());
  curl_multi_setopt(impl->multi, CURLMOPT_TIMERFUNCTION, &Impl::OnTimer);
  curl_multi_setopt(impl->multi, CURLMOPT_TIMERDATA, impl.get());
  return std::unique_ptr<HttpAsyncEngine>(new HttpAsyncEngine(std::move(impl)));
}

Result<uint64_t> HttpAsyncEngine::Begin(const HttpRequest& request) {
  return Begin(HttpRequest(request));
}

Result<uint64_t> HttpAsyncEngine::Begin(HttpRequest&& request) {
  Impl& impl = *impl_;
  auto c = std::make_unique<Impl::AsyncCall>();
  c->request = std::move(request);
  c->request.on_retry = nullptr;
  c->request.should_abort = nullptr;
  if (c->request.policy != nullptr) {
    c->policy.emplace(*c->request.policy);
    c->request.policy = &*c->policy;
  }
  Status s = c->call.Init(*impl.settings, c->request, /*abortable=*/false);
  if (!s.ok()) return s;
  c->call.Begin(c->call.clock().Now());
  const uint64_t id = impl.next_id++;
  impl.calls.emplace(id, std::move(c));
  return id;
}

Status HttpAsyncEngine::SetHeader(uint64_t id, const std::string& name, const std::string& value) {
  Impl& impl = *impl_;
  auto it = impl.calls.find(id);
  if (it == impl.calls.end()) return InvalidArgumentError("unknown call id");
  Impl::AsyncCall& c = *it->second;
  if (c.in_flight || c.queued) return InvalidArgumentError("an attempt of this call is in flight");
  return c.call.SetHeader(name, value);
}

Status HttpAsyncEngine::StartAttempt(uint64_t id) {
  Impl& impl = *impl_;
  auto it = impl.calls.find(id);
  if (it == impl.calls.end()) return InvalidArgumentError("unknown call id");
  Impl::AsyncCall& c = *it->second;
  if (c.in_flight || c.queued) return InvalidArgumentError("an attempt of this call is in flight");
  const TimePoint now = c.call.clock().Now();
  if (!c.call.Admit(now)) {
    Event e;
    e.id = id;
    e.retry = false;
    if (c.call.admission_wait()) {
      // Strategy 2 asks the call to wait (a bulkhead's queue, a rate
      // limiter's reserved slot): the caller sleeps, then starts again.
      e.retry = true;
      e.admission_wait = true;
      e.decision.action = Decision::Action::kRetry;
      // A place in a bulkhead's queue may be granted any time: the loop
      // (which no other thread may wake) asks again at least every
      // kAdmissionPollInterval; a rate limiter's slot comes due exactly.
      e.decision.delay = c.call.admission_delay();
      if (c.call.admission_queued()) {
        e.decision.delay = std::min(e.decision.delay, kAdmissionPollInterval);
      }
    }
    impl.events.push_back(e);
    return OkStatus();
  }
  const auto cap = static_cast<size_t>(impl.settings->options.max_connections);
  if (cap > 0 && impl.active >= cap) {
    c.queued = true;
    impl.waiting.push_back(id);
    return OkStatus();
  }
  return impl.Launch(id, c, now);
}

void HttpAsyncEngine::SocketAction(int fd, int events) {
  Impl& impl = *impl_;
  int mask = 0;
  if (events & kRead) mask |= CURL_CSELECT_IN;
  if (events & kWrite) mask |= CURL_CSELECT_OUT;
  int running = 0;
  curl_multi_socket_action(impl.multi, fd < 0 ? CURL_SOCKET_TIMEOUT : fd, fd < 0 ? 0 : mask,
                           &running);
  if (fd < 0) {
    // Re-arm after every timer action: libcurl calls the timer callback only
    // when its deadline changes, so a loop that fired early (or coalesced
    // timers) would otherwise never hear of the unchanged deadline again.
    long ms = -1;
    if (curl_multi_timeout(impl.multi, &ms) == CURLM_OK) impl.timer_change = ms;
  }
  impl.Drain();
}

std::vector<HttpAsyncEngine::SocketWatch> HttpAsyncEngine::TakeSocketChanges() {
  std::vector<SocketWatch> out;
  out.swap(impl_->socket_changes);
  return out;
}

void HttpAsyncEngine::TakeSocketChanges(std::vector<SocketWatch>* out) {
  out->clear();
  out->swap(impl_->socket_changes);
}

std::optional<long> HttpAsyncEngine::TakeTimerChange() {
  std::optional<long> out = impl_->timer_change;
  impl_->timer_change.reset();
  return out;
}

std::vector<HttpAsyncEngine::Event> HttpAsyncEngine::TakeEvents() {
  std::vector<Event> out;
  out.swap(impl_->events);
  return out;
}

void HttpAsyncEngine::TakeEvents(std::vector<Event>* out) {
  out->clear();
  out->swap(impl_->events);
}

Result<HttpResponse> HttpAsyncEngine::Finish(uint64_t id, HttpCallInfo* info) {
  Impl& impl = *impl_;
  auto it = impl.calls.find(id);
  if (it == impl.calls.end()) return InvalidArgumentError("unknown call id");
  std::unique_ptr<Impl::AsyncCall> c = std::move(it->second);
  impl.calls.erase(it);
  impl.Release(*c);
  return c->call.Finish(c->call.clock().Now(), info);
}

void HttpAsyncEngine::Cancel(uint64_t id) {
  Impl& impl = *impl_;
  auto it = impl.calls.find(id);
  if (it == impl.calls.end()) return;
  const bool in_flight = it->second->in_flight;
  impl.Release(*it->second);
  it->second->call.Abandon(it->second->call.clock().Now(), in_flight);
  impl.calls.erase(it);
  impl.LaunchWaiting();  // a slot may have freed
}

void HttpAsyncEngine::CancelCopy(uint64_t id) {
  Impl& impl = *impl_;
  auto it = impl.calls.find(id);
  if (it == impl.calls.end()) return;
  const bool in_flight = it->second->in_flight;
  impl.Release(*it->second);
  it->second->call.Abandon(it->second->call.clock().Now(), in_flight, /*cancelled=*/true);
  impl.calls.erase(it);
  impl.LaunchWaiting();  // a slot may have freed
}

size_t HttpAsyncEngine::size() const { return impl_->calls.size(); }

std::shared_ptr<RetryBudget> HttpAsyncEngine::BudgetFor(std::string_view url) const {
  const internal::Settings& settings = *impl_->settings;
  if (!settings.per_origin_budget) return settings.options.shared_budget;
  std::optional<std::string> origin = HttpOrigin(url);
  if (!origin.has_value()) return nullptr;
  return settings.BudgetFor(*origin);
}

}  // namespace v0
}  // namespace mulligan
