// core/src/state/redis_breaker.cc — RedisSharedBreaker: a local breaker
// whose transitions are written to and read from Redis by two threads (see
// mulligan/state/redis_breaker.h for the protocol and its consistency).

#include "mulligan/state/redis_breaker.h"

#include <hiredis/hiredis.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "mulligan/base/random.h"
#include "mulligan/retry/backoff.h"
#include "mulligan/telemetry/metrics.h"
#include "state/sigpipe_guard.h"

namespace mulligan {
inline namespace v0 {
namespace {

using std::chrono::milliseconds;

// KEYS[1] the object's key; ARGV: state, open_until (Unix ms), writer.
// Every write gets the next epoch of the key; the message carries it.
// Running it twice (a retry after a dead idle connection) writes the same
// state with a newer epoch: harmless, so it is marked retry-safe.
const RedisScript& PublishScript() {
  static const RedisScript* script = new RedisScript(
      "local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)\n"
      "redis.call('HSET', KEYS[1], 'state', ARGV[1], 'open_until', ARGV[2], 'writer', ARGV[3])\n"
      "redis.call('PUBLISH', KEYS[1], ARGV[1] .. ' ' .. ARGV[2] .. ' ' .. epoch .. ' ' .. "
      "ARGV[3])\n"
      "return epoch\n",
      /*retry_safe=*/true);
  return *script;
}

int64_t WallMillis(WallTime t) {
  return std::chrono::duration_cast<milliseconds>(t.time_since_epoch()).count();
}

timeval ToTimeval(Duration d) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  timeval tv;
  tv.tv_sec = static_cast<time_t>(us / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(us % 1000000);
  return tv;
}

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

// One local transition waiting to be written.
struct Transition {
  const char* state;  // "open", "half_open", "closed"
  int64_t open_until_ms;
};

// The queue between the listener (any caller's thread) and the writer
// thread. Holds no reference to the breaker, so a listener that outlives
// the shared breaker (a notification in flight) only pushes into a queue
// nobody reads.
struct Queue {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Transition> items;
  bool stop = false;
  size_t limit = 64;
  uint64_t dropped = 0;

  void Push(const Transition& t) {
    {
      std::lock_guard<std::mutex> lock(mu);
      if (stop) return;
      if (items.size() >= limit) {
        items.pop_front();
        ++dropped;
      }
      items.push_back(t);
    }
    cv.notify_one();
  }
};

// A parsed message or key: "<state> <open_until> <epoch> <writer>".
struct Shared {
  std::string state;
  int64_t open_until_ms = 0;
  int64_t epoch = 0;
  std::string writer;
};

std::optional<Shared> ParseMessage(const std::string& payload) {
  char state[16] = {0};
  char writer[65] = {0};
  long long until = 0;
  long long epoch = 0;
  if (std::sscanf(payload.c_str(), "%15s %lld %lld %64s", state, &until, &epoch, writer) != 4) {
    return std::nullopt;
  }
  return Shared{state, until, epoch, writer};
}

Status ValidateWriterId(const std::string& id) {
  if (id.empty() || id.size() > 64) {
    return InvalidArgumentError("writer_id must be 1 to 64 bytes, got " +
                                std::to_string(id.size()));
  }
  for (const char c : id) {
    if (c <= ' ' || c > '~') {
      return InvalidArgumentError("writer_id must be printable ASCII without space");
    }
  }
  return OkStatus();
}

std::string RandomWriterId() {
  Random random = Random::FromEntropy();
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(random.NextU64()));
  return buf;
}

// What the metrics read of one shared breaker (MetricsRegistry tracks it
// weakly; the Impl owns it).
class SharingMetrics final : public SharedStateMetricsSource {
 public:
  explicit SharingMetrics(std::string name) : name_(std::move(name)) {}
  const char* shared_part() const override { return "breaker"; }
  const std::string& metrics_name() const override { return name_; }
  bool falling_back() const override { return falling_back_.load(std::memory_order_relaxed); }
  uint64_t fallback_periods() const override {
    return periods_.load(std::memory_order_relaxed);
  }
  // Called with every report to on_sharing (serialised by the caller).
  void Note(bool shared) {
    falling_back_.store(!shared, std::memory_order_relaxed);
    if (!shared) periods_.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  const std::string name_;
  std::atomic<bool> falling_back_{false};
  std::atomic<uint64_t> periods_{0};
};

}  // namespace

struct RedisSharedBreaker::Impl {
  std::shared_ptr<RedisState> state;
  std::shared_ptr<CircuitBreaker> breaker;
  RedisSharedBreakerOptions options;
  SharingListener on_sharing;
  std::string key;
  RedisUrl url;
  std::shared_ptr<Queue> queue = std::make_shared<Queue>();
  uint64_t listener_id = 0;
  int wake_fd = -1;  // eventfd: wakes the subscriber's poll() at shutdown

  std::thread writer_thread;
  std::thread subscriber_thread;

  // The subscriber's waits between attempts (real time).
  std::mutex stop_mu;
  std::condition_variable stop_cv;
  bool stopping = false;  // guarded by stop_mu

  mutable std::mutex mu;  // guards the fields below
  RedisSharedBreakerHealth health;
  bool write_ok = true;
  bool ever_subscribed = false;
  // The last read of the key failed: a message published meanwhile may have
  // been missed (the subscriber connection may be up while RedisState's
  // command connection still waits out its reconnect backoff), so the
  // subscriber reads the key again at its next wake-up.
  bool catch_up_owed = false;
  // A local transition whose write failed, and the epoch known then.
  std::optional<Transition> unpublished;
  int64_t epoch_at_failure = 0;
  // The last state seen on the key (written, read or received).
  Shared last;

  std::mutex sharing_mu;     // serialises on_sharing
  bool reported_shared = false;  // guarded by sharing_mu
  bool reported_once = false;    // guarded by sharing_mu
  std::shared_ptr<SharingMetrics> metrics;  // set by Create, then constant
  MetricsRegistry* metrics_registry = nullptr;

  // Tells on_sharing (and the metrics) when health.shared changed; before
  // the first report, a false is told only after a failed subscription
  // attempt (`failed_attempt`), so a Redis unreachable from the start is
  // reported once and the start-up itself (not yet subscribed) is not.
  // REQUIRES: mu not held.
  void UpdateShared(bool failed_attempt = false) {
    std::lock_guard<std::mutex> serial(sharing_mu);
    bool shared;
    std::string cause;
    {
      std::lock_guard<std::mutex> lock(mu);
      health.shared = health.subscribed && write_ok;
      shared = health.shared;
      cause = health.last_error;
    }
    if (reported_once ? shared == reported_shared : !shared && !failed_attempt) return;
    reported_once = true;
    reported_shared = shared;
    if (metrics) metrics->Note(shared);
    if (on_sharing) {
      try {
        on_sharing(shared, shared ? std::string() : cause);
      } catch (...) {
        // A listener must not throw; nothing sensible to do here.
      }
    }
  }

  void NoteError(const std::string& error) {
    std::lock_guard<std::mutex> lock(mu);
    health.last_error = error;
  }

  // ---- local -> Redis -------------------------------------------------

  void WriterLoop() {
    for (;;) {
      Transition t;
      {
        std::unique_lock<std::mutex> lock(queue->mu);
        queue->cv.wait(lock, [&] { return queue->stop || !queue->items.empty(); });
        if (queue->stop) return;
        t = queue->items.front();
        queue->items.pop_front();
      }
      Write(t);
    }
  }

  void Write(const Transition& t) {
    Result<RedisValue> r = state->Eval(
        PublishScript(), {key},
        {t.state, std::to_string(t.open_until_ms), health_writer_id()});
    {
      std::lock_guard<std::mutex> lock(mu);
      if (r.ok() && r->type == RedisValue::Type::kInteger) {
        ++health.published;
        if (r->integer > health.epoch) {
          health.epoch = r->integer;
          last = Shared{t.state, t.open_until_ms, r->integer, options.writer_id};
        }
        write_ok = true;
        unpublished.reset();
      } else {
        ++health.publish_failures;
        health.last_error = r.ok() ? "the publish script answered no epoch" : r.status().message();
        if (!unpublished) epoch_at_failure = health.epoch;
        unpublished = t;
        write_ok = false;
      }
    }
    UpdateShared();
  }

  const std::string& health_writer_id() const { return options.writer_id; }

  // ---- Redis -> local -------------------------------------------------

  // Applies a remote state to the local breaker (never under mu: the
  // breaker's listeners run inside, and a front door's listener may ask for
  // Health()). `catch_up`: from a read of the key, where an epoch different
  // from the last seen one (lower after a Redis restart) is news.
  void Apply(const Shared& s, bool catch_up) {
    {
      std::lock_guard<std::mutex> lock(mu);
      // A read is news when anything differs from the last state seen: the
      // epoch can be lower, or even equal, after a restarted server counted
      // again from nothing.
      const bool news = catch_up ? s.epoch != health.epoch || s.writer != last.writer ||
                                       s.state != last.state ||
                                       s.open_until_ms != last.open_until_ms
                                 : s.epoch > health.epoch;
      if (!news) return;
      health.epoch = s.epoch;
      last = s;
      if (s.writer == options.writer_id) return;  // our own write
    }
    Clock& clock = state->clock();
    const TimePoint now = clock.Now();
    Result<bool> changed = false;
    if (s.state == "open") {
      const int64_t left_ms = s.open_until_ms - WallMillis(clock.WallNow());
      if (left_ms <= 0) return;  // that open period is over everywhere
      changed = breaker->ApplyShared(BreakerState::kOpen, now + milliseconds(left_ms), now);
    } else if (s.state == "closed") {
      changed = breaker->ApplyShared(BreakerState::kClosed, TimePoint{}, now);
    } else {
      return;  // "half_open": each process half-opens when its period ends
    }
    if (changed.ok() && *changed) {
      std::lock_guard<std::mutex> lock(mu);
      ++health.applied;
    }
  }

  // Reads the key once and applies it; then writes a transition that failed
  // during an outage, unless another process wrote the key since. Returns
  // false when Redis did not answer.
  bool CatchUp() {
    Result<RedisValue> r = state->Command({"HGETALL", key});
    if (!r.ok() || r->type != RedisValue::Type::kArray) {
      NoteError(r.ok() ? "HGETALL answered no array" : r.status().message());
      std::lock_guard<std::mutex> lock(mu);
      catch_up_owed = true;
      return false;
    }
    Shared s;
    bool present = false;
    const auto& e = r->elements;
    for (size_t i = 0; i + 1 < e.size(); i += 2) {
      const std::string& field = e[i].str;
      const std::string& value = e[i + 1].str;
      present = true;
      if (field == "state") s.state = value;
      if (field == "writer") s.writer = value;
      if (field == "open_until") s.open_until_ms = std::strtoll(value.c_str(), nullptr, 10);
      if (field == "epoch") s.epoch = std::strtoll(value.c_str(), nullptr, 10);
    }
    std::optional<Transition> retry;
    {
      std::lock_guard<std::mutex> lock(mu);
      ++health.reads;
      catch_up_owed = false;
      // The error since the last success, as RedisState's health says.
      if (health.subscribed) health.last_error.clear();
      if (unpublished && (!present || s.epoch == epoch_at_failure)) retry = unpublished;
      // Either queued again (a failure sets it again) or superseded by a
      // newer write of another process: never queued twice.
      unpublished.reset();
      if (!present) {  // a fresh (restarted) server, or never written
        health.epoch = 0;
        last = Shared{};
      }
    }
    if (present) Apply(s, /*catch_up=*/true);
    if (retry) queue->Push(*retry);
    return true;
  }

  // Waits `d` of real time; false when stopping.
  bool Wait(Duration d) {
    std::unique_lock<std::mutex> lock(stop_mu);
    return !stop_cv.wait_for(lock, d, [&] { return stopping; });
  }

  bool Stopping() {
    std::lock_guard<std::mutex> lock(stop_mu);
    return stopping;
  }

  // Connects, authenticates and subscribes; nullptr (and the cause) on
  // failure. Bounded by connect_timeout per step.
  ContextPtr Subscribe(std::string* error) {
    const RedisStateOptions& o = state->options();
    ContextPtr c(redisConnectWithTimeout(url.host.c_str(), url.port, ToTimeval(o.connect_timeout)));
    if (c == nullptr || c->err != 0) {
      *error = "redis at " + state->endpoint() + ": subscriber connect failed (" +
               (c ? std::string(c->errstr) : std::string("no memory")) + ")";
      return nullptr;
    }
    redisSetTimeout(c.get(), ToTimeval(o.connect_timeout));
    std::vector<std::vector<std::string>> steps;
    if (!url.password.empty()) {
      if (url.user.empty()) {
        steps.push_back({"AUTH", url.password});
      } else {
        steps.push_back({"AUTH", url.user, url.password});
      }
    }
    steps.push_back({"SUBSCRIBE", key});
    for (const auto& step : steps) {
      std::vector<const char*> argv;
      std::vector<size_t> lens;
      for (const std::string& a : step) {
        argv.push_back(a.data());
        lens.push_back(a.size());
      }
      internal::SigpipeGuard no_sigpipe;
      ReplyPtr reply(static_cast<redisReply*>(redisCommandArgv(
          c.get(), static_cast<int>(argv.size()), argv.data(), lens.data())));
      if (reply == nullptr) {
        *error = "redis at " + state->endpoint() + ": subscriber " + step[0] + " failed (" +
                 c->errstr + ")";
        return nullptr;
      }
      if (reply->type == REDIS_REPLY_ERROR) {
        // The server's text never echoes the password.
        *error = "redis at " + state->endpoint() + ": subscriber " + step[0] +
                 " refused: " + std::string(reply->str, reply->len);
        return nullptr;
      }
    }
    redisSetTimeout(c.get(), ToTimeval(o.command_timeout));
    return c;
  }

  // Reads messages until the connection fails or the breaker stops; wakes
  // every poll_interval to retry a write that failed.
  void Listen(redisContext* c) {
    const int timeout_ms = static_cast<int>(
        std::chrono::duration_cast<milliseconds>(options.poll_interval).count());
    for (;;) {
      void* raw = nullptr;
      if (redisGetReplyFromReader(c, &raw) != REDIS_OK) break;
      if (raw == nullptr) {
        pollfd fds[2] = {{c->fd, POLLIN, 0}, {wake_fd, POLLIN, 0}};
        const int n = poll(fds, 2, timeout_ms);
        if (n < 0 && errno != EINTR) break;
        if (Stopping()) return;
        if (n == 0) {
          bool pending;
          {
            std::lock_guard<std::mutex> lock(mu);
            pending = unpublished.has_value() || catch_up_owed;
          }
          if (pending) CatchUp();
          continue;
        }
        if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
          if (redisBufferRead(c) != REDIS_OK) break;
        }
        continue;
      }
      ReplyPtr reply(static_cast<redisReply*>(raw));
      if (reply->type == REDIS_REPLY_ARRAY && reply->elements == 3 &&
          reply->element[0]->type == REDIS_REPLY_STRING &&
          std::string(reply->element[0]->str, reply->element[0]->len) == "message" &&
          reply->element[2]->type == REDIS_REPLY_STRING) {
        std::optional<Shared> s =
            ParseMessage(std::string(reply->element[2]->str, reply->element[2]->len));
        if (s) Apply(*s, /*catch_up=*/false);
      }
    }
    NoteError("redis at " + state->endpoint() + ": subscription lost (" +
              (c->err != 0 ? std::string(c->errstr) : std::string("read failed")) + ")");
  }

  void SubscriberLoop() {
    Result<Backoff> backoff = Backoff::Create(state->options().reconnect);
    Random random = Random::FromEntropy();
    int failures = 0;
    Duration previous = Duration::zero();
    while (!Stopping()) {
      std::string error;
      ContextPtr c = Subscribe(&error);
      if (c != nullptr) {
        {
          std::lock_guard<std::mutex> lock(mu);
          health.subscribed = true;
          if (ever_subscribed) ++health.resubscriptions;
          ever_subscribed = true;
        }
        failures = 0;
        previous = Duration::zero();
        CatchUp();
        UpdateShared();
        Listen(c.get());
        // A close is not a fallback: on_sharing is not told of it (a reload
        // that rebuilds the sharing would log a false alarm).
        if (Stopping()) return;
        {
          std::lock_guard<std::mutex> lock(mu);
          health.subscribed = false;
        }
        UpdateShared();
        continue;  // the first resubscription is at once
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        health.subscribed = false;
        health.last_error = error;
      }
      UpdateShared(/*failed_attempt=*/true);
      // Down: poll the key every poll_interval until the next subscription
      // attempt, which follows RedisState's reconnect backoff.
      Duration delay = backoff.ok() ? backoff->Delay(failures, previous, random)
                                    : Duration(milliseconds(100));
      previous = delay;
      ++failures;
      while (delay > Duration::zero()) {
        const Duration step = std::min(delay, options.poll_interval);
        if (!Wait(step)) return;
        delay -= step;
        if (delay > Duration::zero()) CatchUp();
      }
      CatchUp();
    }
  }
};

Result<std::unique_ptr<RedisSharedBreaker>> RedisSharedBreaker::Create(
    std::shared_ptr<RedisState> state, std::shared_ptr<CircuitBreaker> breaker,
    const RedisSharedBreakerOptions& options, SharingListener on_sharing) {
  if (state == nullptr) return InvalidArgumentError("state must not be null");
  if (breaker == nullptr) return InvalidArgumentError("breaker must not be null");
  if (Status s = ValidateSharedName(breaker->name()); !s.ok()) return s;
  if (options.poll_interval < milliseconds(10) || options.poll_interval > std::chrono::hours(1)) {
    return InvalidArgumentError(
        "poll_interval must be in [10 ms, 1 h], got " +
        std::to_string(std::chrono::duration_cast<milliseconds>(options.poll_interval).count()) +
        " ms");
  }
  if (options.queue_limit < 1 || options.queue_limit > 65536) {
    return InvalidArgumentError("queue_limit must be in [1, 65536], got " +
                                std::to_string(options.queue_limit));
  }
  RedisSharedBreakerOptions o = options;
  if (o.writer_id.empty()) o.writer_id = RandomWriterId();
  if (Status s = ValidateWriterId(o.writer_id); !s.ok()) return s;
  Result<RedisUrl> url = ParseRedisUrl(state->options().url);
  if (!url.ok()) return url.status();

  auto impl = std::make_unique<Impl>();
  impl->state = std::move(state);
  impl->breaker = std::move(breaker);
  impl->options = o;
  impl->on_sharing = std::move(on_sharing);
  impl->key = impl->state->Key("breaker", impl->breaker->name());
  impl->url = std::move(url).value();
  impl->queue->limit = o.queue_limit;
  impl->health.writer_id = o.writer_id;
  impl->metrics = std::make_shared<SharingMetrics>(impl->breaker->name());
  impl->metrics_registry = o.metrics != nullptr ? o.metrics : &MetricsRegistry::Default();
  impl->metrics_registry->Track(
      std::static_pointer_cast<SharedStateMetricsSource>(impl->metrics));
  impl->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->wake_fd < 0) return InternalError("eventfd failed");

  // The listener: queues local transitions, never blocks, never echoes a
  // remote one ("shared_*"), skips the manual states.
  std::shared_ptr<Queue> queue = impl->queue;
  std::shared_ptr<RedisState> st = impl->state;
  impl->listener_id = impl->breaker->AddListener([queue, st](const BreakerTransition& t) {
    if (std::string_view(t.reason).rfind("shared_", 0) == 0) return;
    Transition item{nullptr, 0};
    switch (t.to) {
      case BreakerState::kOpen: {
        Clock& clock = st->clock();
        item.state = "open";
        item.open_until_ms =
            WallMillis(clock.WallNow()) +
            std::chrono::duration_cast<milliseconds>(t.open_until - clock.Now()).count();
        break;
      }
      case BreakerState::kHalfOpen:
        item.state = "half_open";
        break;
      case BreakerState::kClosed:
        item.state = "closed";
        break;
      default:
        return;  // forced open, disabled, metrics-only: local decisions
    }
    queue->Push(item);
  });
  Impl* raw = impl.get();
  raw->writer_thread = std::thread([raw] { raw->WriterLoop(); });
  raw->subscriber_thread = std::thread([raw] { raw->SubscriberLoop(); });
  return std::unique_ptr<RedisSharedBreaker>(new RedisSharedBreaker(std::move(impl)));
}

RedisSharedBreaker::RedisSharedBreaker(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

RedisSharedBreaker::~RedisSharedBreaker() {
  Impl& d = *impl_;
  d.breaker->RemoveListener(d.listener_id);
  {
    std::lock_guard<std::mutex> lock(d.queue->mu);
    d.queue->stop = true;
  }
  d.queue->cv.notify_all();
  {
    std::lock_guard<std::mutex> lock(d.stop_mu);
    d.stopping = true;
  }
  d.stop_cv.notify_all();
  const uint64_t one = 1;
  (void)!write(d.wake_fd, &one, sizeof(one));
  if (d.writer_thread.joinable()) d.writer_thread.join();
  if (d.subscriber_thread.joinable()) d.subscriber_thread.join();
  close(d.wake_fd);
}

CircuitBreaker& RedisSharedBreaker::breaker() const { return *impl_->breaker; }
const std::shared_ptr<CircuitBreaker>& RedisSharedBreaker::breaker_ptr() const {
  return impl_->breaker;
}
const std::string& RedisSharedBreaker::key() const { return impl_->key; }

RedisSharedBreakerHealth RedisSharedBreaker::Health() const {
  RedisSharedBreakerHealth h;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    h = impl_->health;
  }
  std::lock_guard<std::mutex> lock(impl_->queue->mu);
  h.dropped = impl_->queue->dropped;
  return h;
}

}  // namespace v0
}  // namespace mulligan
