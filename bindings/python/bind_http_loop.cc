// bindings/python/bind_http_loop.cc — HttpLoopDriver: an HttpAsyncEngine driven by
// an asyncio event loop, for mulligan.AsyncClient.
//
// The driver keeps libcurl's sockets in an epoll set of its own and gives
// the asyncio loop that one epoll descriptor (loop.add_reader), the way
// libuv and Tornado nest libcurl: when any transfer's socket is ready, the
// loop calls the driver once, which collects every ready socket with one
// epoll_wait and runs libcurl on each, all in C++. libcurl's timer goes to
// the loop (call_soon / call_at). Each attempt's asyncio future is resolved
// here. Python keeps what users see (arguments, errors, logging, hooks, the
// waits between attempts with asyncio.sleep). Before this, a reader per
// socket and the glue in Python cost about a quarter of AsyncClient's time.
//
// Sockets are dropped from the epoll set lazily: libcurl stops watching a
// kept-alive socket after every transfer and watches it again for the next,
// so a socket stays in the set (for input) until libcurl closes it (events
// -1) or it becomes readable while libcurl does not want it (the server
// closed the idle connection). That saves two epoll_ctl calls per request.
//
// Linux only (epoll), as the rest of the engine.
//
// Thread-safety: none. Every method runs on the loop's thread with the GIL
// held; the methods never block (libcurl's multi interface; DNS runs in
// libcurl's resolver thread).
#include <sys/epoll.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <pybind11/stl.h>

#include "bindings.h"
#include "http_common.h"
#include "mulligan/http/async_engine.h"
#include "mulligan/http/client.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
namespace python {
namespace {

// Interned attribute names, made once (the driver calls these per request).
struct Names {
  py::str done = py::reinterpret_steal<py::str>(PyUnicode_InternFromString("done"));
  py::str set_result = py::reinterpret_steal<py::str>(PyUnicode_InternFromString("set_result"));
  py::str cancel = py::reinterpret_steal<py::str>(PyUnicode_InternFromString("cancel"));
};

const Names& names() {
  // Leaked on purpose: destroying Python objects after the interpreter has
  // finalised would crash at exit.
  static const Names* n = new Names();
  return *n;
}

class LoopDriver {
 public:
  // Raises OSError when the epoll set cannot be made.
  LoopDriver(py::object loop, std::unique_ptr<HttpAsyncEngine> engine)
      : loop_(std::move(loop)), engine_(std::move(engine)) {
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) {
      PyErr_SetFromErrno(PyExc_OSError);
      throw py::error_already_set();
    }
    call_soon_ = loop_.attr("call_soon");
    call_at_ = loop_.attr("call_at");
    time_ = loop_.attr("time");
  }
  ~LoopDriver() {
    if (epoll_fd_ >= 0) close(epoll_fd_);
  }
  LoopDriver(const LoopDriver&) = delete;
  LoopDriver& operator=(const LoopDriver&) = delete;

  const py::object& loop() const { return loop_; }

  // Keeps `clock` alive as long as the driver (a call's HttpRequest::clock).
  void KeepClock(std::shared_ptr<FakeClock> clock) {
    for (const auto& kept : clocks_) {
      if (kept == clock) return;
    }
    clocks_.push_back(std::move(clock));
  }

  // Begins a call and starts its first attempt; `future` gets its result
  // when the attempt ends (see Start). Returns the call's id.
  uint64_t Begin(py::object future, HttpRequest&& request) {
    CheckOpen();
    const uint64_t id = Unwrap(engine_->Begin(std::move(request)));
    StartOrForget(id, std::move(future));
    return id;
  }

  // Starts the next attempt of call `id`. When it ends, `future` gets None
  // (the call is over: Finish it) or a retry tuple (attempt, delay, kind,
  // status, from_retry_after): wait `delay` seconds, then Start again.
  void Start(uint64_t id, py::object future) {
    CheckOpen();
    StartOrForget(id, std::move(future));
  }

  // Replaces (or adds) header `name` for the next attempts of call `id`
  // (HttpAsyncEngine::SetHeader): each attempt's traceparent. ValueError
  // for a bad header, an unknown id or an attempt in flight.
  void SetHeader(uint64_t id, const std::string& name, const std::string& value) {
    CheckOpen();
    Status set = engine_->SetHeader(id, name, value);
    if (!set.ok()) ThrowStatus(set);
  }

  // The finished call's response tuple (ResponseTuple); raises the call's
  // error (mulligan.TransportError, CircuitOpenError, ...) otherwise.
  py::tuple Finish(uint64_t id) {
    waiters_.erase(id);
    HttpCallInfo info;
    Result<HttpResponse> result = engine_->Finish(id, &info);
    if (!result.ok()) ThrowCallStatus(result.status(), info);
    return ResponseTuple(std::move(result).value());
  }

  // Abandons call `id` (removing its transfer in flight; the engine reports
  // the call as failed); no-op when unknown. A closed driver watches
  // nothing any more, so there is nothing to apply.
  void Cancel(uint64_t id) {
    waiters_.erase(id);
    engine_->Cancel(id);
    if (!closed_) Apply();
  }

  // The same for a hedged request's losing copy, or a request whose awaiting
  // task was cancelled (0.6): the engine counts the call cancelled, neither
  // success nor failure (HttpAsyncEngine::CancelCopy).
  void CancelCopy(uint64_t id) {
    waiters_.erase(id);
    engine_->CancelCopy(id);
    if (!closed_) Apply();
  }

  // The loop's reader callback for the epoll set: runs libcurl on every
  // ready socket (at most kBatch per call; a level-triggered set that is
  // still ready makes the loop call again), then applies what changed.
  void OnReady() {
    if (closed_) return;
    epoll_event ready[kBatch];
    const int n = epoll_wait(epoll_fd_, ready, kBatch, 0);
    for (int i = 0; i < n; ++i) {
      const int fd = ready[i].data.fd;
      uint8_t& state = Slot(fd);
      const uint32_t got = ready[i].events;
      int events = 0;
      if ((got & (EPOLLIN | EPOLLERR | EPOLLHUP)) && (state & kWantRead)) {
        events |= HttpAsyncEngine::kRead;
      }
      if ((got & (EPOLLOUT | EPOLLERR | EPOLLHUP)) && (state & kWantWrite)) {
        events |= HttpAsyncEngine::kWrite;
      }
      if (events == 0) {
        // An idle socket libcurl does not watch became readable (the peer
        // closed it): stop watching; libcurl notices at its next use.
        Watch(fd, state, 0);
        continue;
      }
      engine_->SocketAction(fd, events);
    }
    Apply();
  }

  void OnTimer() {
    timer_ = py::none();
    if (closed_) return;
    engine_->SocketAction(-1, 0);
    Apply();
  }

  void OnSoon() {
    soon_ = py::none();
    if (closed_) return;
    engine_->SocketAction(-1, 0);
    Apply();
  }

  // Stops watching every socket and the timer, and fails every future still
  // waiting with RuntimeError (its request then cancels its call). Calls
  // left are abandoned when the driver is destroyed. Idempotent.
  void Close() {
    if (closed_) return;
    closed_ = true;
    if (!timer_.is_none()) timer_.attr(names().cancel)();
    if (!soon_.is_none()) soon_.attr(names().cancel)();
    timer_ = py::none();
    soon_ = py::none();
    if (registered_) loop_.attr("remove_reader")(epoll_fd_);
    registered_ = false;
    close(epoll_fd_);
    epoll_fd_ = -1;
    fds_.clear();
    std::unordered_map<uint64_t, py::object> waiters;
    waiters.swap(waiters_);
    for (auto& [id, future] : waiters) {
      if (future.attr(names().done)().cast<bool>()) continue;
      py::object error = py::reinterpret_steal<py::object>(PyObject_CallFunction(
          PyExc_RuntimeError, "s",
          "this AsyncClient was closed while the request was in flight"));
      if (!error) throw py::error_already_set();
      future.attr("set_exception")(error);
    }
  }

  bool closed() const { return closed_; }
  size_t size() const { return engine_->size(); }
  // The budget the calls to `url`'s origin are charged to (null: none);
  // AsyncClient's hedging asks it before each extra copy. (Added in 0.6.)
  std::shared_ptr<RetryBudget> BudgetFor(const std::string& url) const {
    return engine_->BudgetFor(url);
  }

 private:
  // Per-fd state bits: what libcurl watches, what the epoll set watches.
  static constexpr uint8_t kWantRead = 1;
  static constexpr uint8_t kWantWrite = 2;
  static constexpr uint8_t kInSet = 4;       // in the epoll set (for input at least)
  static constexpr uint8_t kSetOutput = 8;   // ... and for output
  static constexpr int kBatch = 64;          // ready sockets taken per OnReady

  void CheckOpen() const {
    if (closed_) {
      PyErr_SetString(PyExc_RuntimeError, "this client is closed");
      throw py::error_already_set();
    }
  }

  uint8_t& Slot(int fd) {
    const auto i = static_cast<size_t>(fd);
    if (i >= fds_.size()) fds_.resize(i + 1, 0);
    return fds_[i];
  }

  // Makes the epoll set watch `fd` for input (`mode` 1), input and output
  // (2), or not at all (0). Changes arrive after libcurl acted, so `fd` may
  // be closed by now (EBADF: nothing to watch), or closed and its number
  // reused (the kernel dropped the old entry: ENOENT / EEXIST are resolved
  // by the other operation). Raises OSError on any other failure.
  void Watch(int fd, uint8_t& state, int mode) {
    const uint8_t want =
        mode == 0 ? 0 : static_cast<uint8_t>(kInSet | (mode == 2 ? kSetOutput : 0));
    const uint8_t have = state & (kInSet | kSetOutput);
    if (want == have) return;
    epoll_event ev{};
    ev.data.fd = fd;
    ev.events = EPOLLIN | ((want & kSetOutput) ? EPOLLOUT : 0);
    int op = want == 0 ? EPOLL_CTL_DEL : (have == 0 ? EPOLL_CTL_ADD : EPOLL_CTL_MOD);
    int rc = epoll_ctl(epoll_fd_, op, fd, &ev);
    if (rc != 0 && op == EPOLL_CTL_MOD && errno == ENOENT) {
      op = EPOLL_CTL_ADD;
      rc = epoll_ctl(epoll_fd_, op, fd, &ev);
    } else if (rc != 0 && op == EPOLL_CTL_ADD && errno == EEXIST) {
      op = EPOLL_CTL_MOD;
      rc = epoll_ctl(epoll_fd_, op, fd, &ev);
    }
    if (rc != 0) {
      if (errno == EBADF || (op == EPOLL_CTL_DEL && errno == ENOENT)) {
        state &= static_cast<uint8_t>(~(kInSet | kSetOutput));
        return;
      }
      PyErr_SetFromErrno(PyExc_OSError);
      throw py::error_already_set();
    }
    state = static_cast<uint8_t>((state & ~(kInSet | kSetOutput)) | want);
  }

  // The Python object wrapping this driver (its bound methods are the loop
  // callbacks). Not cached: a cached bound method would be a reference
  // cycle through a type the garbage collector cannot traverse.
  py::object Self() { return py::cast(this, py::return_value_policy::reference); }

  // Starts an attempt and registers its future; on any failure the call is
  // forgotten (so no id leaks) and the error raised.
  void StartOrForget(uint64_t id, py::object future) {
    waiters_[id] = std::move(future);
    Status started = engine_->StartAttempt(id);
    if (!started.ok()) {
      waiters_.erase(id);
      engine_->Cancel(id);
      ThrowStatus(started);
    }
    try {
      Apply();
    } catch (...) {
      waiters_.erase(id);
      engine_->Cancel(id);
      throw;
    }
  }

  // Applies what the engine asked for since the last call: socket watches,
  // the timer, and the ends of attempts (futures resolved).
  void Apply() {
    if (!registered_) {
      loop_.attr("add_reader")(epoll_fd_, Self().attr("_on_ready"));
      registered_ = true;
    }
    engine_->TakeSocketChanges(&changes_);
    for (const HttpAsyncEngine::SocketWatch& w : changes_) {
      if (w.fd < 0) continue;
      uint8_t& state = Slot(w.fd);
      if (w.events < 0) {  // closed by libcurl: the number may come back
        Watch(w.fd, state, 0);
        state = 0;
        continue;
      }
      const bool read = (w.events & HttpAsyncEngine::kRead) != 0;
      const bool write = (w.events & HttpAsyncEngine::kWrite) != 0;
      state = static_cast<uint8_t>((state & (kInSet | kSetOutput)) | (read ? kWantRead : 0) |
                                   (write ? kWantWrite : 0));
      if (write) {
        Watch(w.fd, state, 2);
      } else if (read || (state & kSetOutput)) {
        // Input only; an idle socket (neither) keeps its input watch.
        Watch(w.fd, state, (state & kInSet) || read ? 1 : 0);
      }
    }
    if (std::optional<long> timer = engine_->TakeTimerChange()) {
      // Timers are coalesced: firing early is harmless, since every
      // SocketAction(-1, 0) re-arms the timer with libcurl's deadline.
      // "Now" (after each new transfer) shares one call_soon; a later
      // deadline keeps a pending timer that fires no later than it.
      if (*timer == 0) {
        if (soon_.is_none()) soon_ = call_soon_(Self().attr("_on_soon"));
      } else if (*timer > 0) {
        const double after = static_cast<double>(*timer) / 1000.0;
        // The loop's clock never goes back, so when even the last reading
        // plus `after` is not earlier than the pending timer, that timer
        // fires first and loop.time() need not be asked (the common case:
        // each new transfer's deadline is later than the oldest one's).
        if (timer_.is_none() || timer_when_ > last_time_ + after + 0.001) {
          last_time_ = time_().cast<double>();
          const double when = last_time_ + after;
          if (timer_.is_none() || timer_when_ > when + 0.001) {
            if (!timer_.is_none()) timer_.attr(names().cancel)();
            timer_ = call_at_(when, Self().attr("_on_timer"));
            timer_when_ = when;
          }
        }
      }
    }
    engine_->TakeEvents(&events_);
    for (const HttpAsyncEngine::Event& e : events_) {
      auto it = waiters_.find(e.id);
      if (it == waiters_.end()) continue;
      py::object future = std::move(it->second);
      waiters_.erase(it);
      // A cancelled task's future is done before its coroutine cancels the call.
      if (future.attr(names().done)().cast<bool>()) continue;
      // An admission wait (a bulkhead's queue, a limiter's slot) is told as
      // attempt 0: the coroutine sleeps its delay and starts again, reporting
      // no retry.
      py::object result =
          e.admission_wait ? py::object(RetryEventTuple(0, e.decision.delay, ErrorKind::kNone, 0,
                                                        false))
          : e.retry        ? py::object(RetryEventTuple(e.decision.attempt, e.decision.delay,
                                                        e.error, e.http_status,
                                                        e.decision.from_retry_after))
                           : py::object(py::none());
      future.attr(names().set_result)(std::move(result));
    }
  }

  py::object loop_;
  // The fake clocks calls of this driver read (tests only); declared before
  // engine_ so that they outlive it.
  std::vector<std::shared_ptr<FakeClock>> clocks_;
  std::unique_ptr<HttpAsyncEngine> engine_;
  int epoll_fd_ = -1;
  bool registered_ = false;  // epoll_fd_ is a reader on the loop
  py::object call_soon_, call_at_, time_;
  py::object timer_ = py::none();  // pending call_at handle
  double timer_when_ = 0;          // its loop time
  double last_time_ = 0;           // the last loop.time() read
  std::vector<HttpAsyncEngine::SocketWatch> changes_;  // reused by Apply
  std::vector<HttpAsyncEngine::Event> events_;         // reused by Apply
  py::object soon_ = py::none();   // pending call_soon handle
  std::vector<uint8_t> fds_;       // state bits by fd
  std::unordered_map<uint64_t, py::object> waiters_;  // call id -> future
  bool closed_ = false;
};

}  // namespace

void BindHttpLoop(py::module_& m) {
  auto make_driver = [](py::object loop, const RetryPolicy* policy, double attempt_timeout,
                        double connect_timeout, bool verify_tls, const std::string& user_agent,
                        bool follow_redirects, int max_redirects, const std::string& ca_bundle,
                        bool strict, std::optional<int> breaker_failure_threshold,
                        double breaker_reset_timeout, bool breaker_per_attempt,
                        int max_connections, const std::string& breaker_key,
                        std::vector<std::string> breaker_key_templates,
                        const py::object& breaker_options, const std::string& methods,
                        std::vector<std::string> allowed_methods, const py::object& budget,
                        const py::object& throttle, const py::object& bulkhead,
                        const py::object& rate_limiter, const py::object& adaptive_rate) {
    HttpClientOptions options =
        MakeOptions(policy, attempt_timeout, connect_timeout, verify_tls, user_agent,
                    follow_redirects, max_redirects, ca_bundle, strict, breaker_failure_threshold,
                    breaker_reset_timeout, breaker_per_attempt);
    SetBreakerKey(options, breaker_key, std::move(breaker_key_templates));
    SetBreakerOptions(options, breaker_options, breaker_per_attempt);
    SetMethodRule(options, methods, std::move(allowed_methods));
    SetLimits(options, budget, throttle, bulkhead, rate_limiter, max_connections);
    SetAdaptiveRate(options, adaptive_rate);
    std::unique_ptr<HttpAsyncEngine> engine = Unwrap(HttpAsyncEngine::Create(options));
    return std::make_unique<LoopDriver>(std::move(loop), std::move(engine));
  };

  py::class_<LoopDriver, std::unique_ptr<LoopDriver>>(
      m, "HttpLoopDriver",
      "libcurl's multi interface driven by one asyncio event loop (loop thread only).")
      .def(py::init(make_driver), py::arg("loop"), py::kw_only(),
           py::arg("policy") = py::none(), py::arg("attempt_timeout") = 30.0,
           py::arg("connect_timeout") = 10.0, py::arg("verify_tls") = true,
           py::arg("user_agent") = "mulligan", py::arg("follow_redirects") = false,
           py::arg("max_redirects") = 10, py::arg("ca_bundle") = "", py::arg("strict") = false,
           py::arg("breaker_failure_threshold") = py::none(),
           py::arg("breaker_reset_timeout") = 30.0, py::arg("breaker_per_attempt") = false,
           py::arg("max_connections") = 0, py::arg("breaker_key") = "origin",
           py::arg("breaker_key_templates") = std::vector<std::string>(),
           py::arg("breaker_options") = py::none(), py::arg("methods") = "idempotent",
           py::arg("allowed_methods") = std::vector<std::string>(),
           py::arg("budget") = "per_origin", py::arg("throttle") = py::none(),
           py::arg("bulkhead") = py::none(), py::arg("rate_limiter") = py::none(),
           py::arg("adaptive_rate") = py::none())
      .def_property_readonly("loop", &LoopDriver::loop)
      .def_property_readonly("closed", &LoopDriver::closed)
      .def(
          "begin",
          [](LoopDriver& driver, py::object future, std::string method, std::string url,
             HttpHeaders headers, std::string body, std::optional<std::string> idempotency_key,
             const RetryPolicy* policy, std::optional<bool> follow_redirects,
             std::optional<int> max_redirects, std::optional<bool> strict, bool fallback,
             int max_attempts, bool no_wait, std::shared_ptr<FakeClock> clock,
             std::string breaker_key) {
            // The engine copies the request and the policy; the clock (a
            // test's FakeClock) is kept by the driver while calls use it.
            HttpRequest request =
                MakeRequest(std::move(method), std::move(url), std::move(headers),
                            std::move(body), std::move(idempotency_key), policy,
                            follow_redirects, max_redirects, strict);
            request.fallback = fallback;
            request.max_attempts = max_attempts < 0 ? 0 : max_attempts;
            request.no_wait = no_wait;
            request.breaker_key = std::move(breaker_key);
            if (clock) {
              request.clock = clock.get();
              driver.KeepClock(std::move(clock));
            }
            return driver.Begin(std::move(future), std::move(request));
          },
          py::arg("future"), py::arg("method"), py::arg("url"), py::arg("headers"),
          py::arg("body"), py::arg("idempotency_key") = py::none(),
          py::arg("policy") = py::none(), py::arg("follow_redirects") = py::none(),
          py::arg("max_redirects") = py::none(), py::arg("strict") = py::none(),
          py::arg("fallback") = false, py::arg("max_attempts") = 0, py::arg("no_wait") = false,
          py::arg("clock") = nullptr, py::arg("breaker_key") = "")
      .def("start", &LoopDriver::Start, py::arg("id"), py::arg("future"))
      .def("set_header", &LoopDriver::SetHeader, py::arg("id"), py::arg("name"), py::arg("value"))
      .def("finish", &LoopDriver::Finish, py::arg("id"))
      .def("cancel", &LoopDriver::Cancel, py::arg("id"))
      .def("cancel_copy", &LoopDriver::CancelCopy, py::arg("id"),
           "Cancels a hedged request's losing copy: counted cancelled in the metrics, "
           "neither success nor failure; the breaker and the budget are not charged. "
           "(Added in 0.6.)")
      .def("close", &LoopDriver::Close)
      .def("_on_ready", &LoopDriver::OnReady)
      .def("_on_timer", &LoopDriver::OnTimer)
      .def("_on_soon", &LoopDriver::OnSoon)
      .def("__len__", &LoopDriver::size)
      .def("budget_for", &LoopDriver::BudgetFor, py::arg("url"),
           "The RetryBudget the calls to url's origin are charged to, or None. (Added in 0.6.)");
}

}  // namespace python
}  // namespace mulligan
