// core/src/state/redis.cc — RedisState: one hiredis connection behind a
// mutex, bounded timeouts, reconnects on mulligan's backoff, EVALSHA with an
// EVAL fallback.

#include "mulligan/state/redis.h"

#include <hiredis/hiredis.h>
#include <pthread.h>
#include <signal.h>
#include <sys/time.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "mulligan/base/random.h"
#include "state/sigpipe_guard.h"

namespace mulligan {
inline namespace v0 {
namespace {

struct ContextDeleter {
  void operator()(redisContext* c) const { redisFree(c); }
};
using ContextPtr = std::unique_ptr<redisContext, ContextDeleter>;

struct ReplyDeleter {
  void operator()(redisReply* r) const { freeReplyObject(r); }
};
using ReplyPtr = std::unique_ptr<redisReply, ReplyDeleter>;

timeval ToTimeval(Duration d) {
  const auto us = std::chrono::duration_cast<std::chrono::microseconds>(d).count();
  timeval tv;
  tv.tv_sec = static_cast<time_t>(us / 1000000);
  tv.tv_usec = static_cast<suseconds_t>(us % 1000000);
  return tv;
}

int64_t Millis(Duration d) { return std::chrono::duration_cast<std::chrono::milliseconds>(d).count(); }

RedisValue Convert(const redisReply* r) {
  RedisValue v;
  switch (r->type) {
    case REDIS_REPLY_INTEGER:
      v.type = RedisValue::Type::kInteger;
      v.integer = r->integer;
      break;
    case REDIS_REPLY_STRING:
      v.type = RedisValue::Type::kString;
      v.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_STATUS:
      v.type = RedisValue::Type::kStatus;
      v.str.assign(r->str, r->len);
      break;
    case REDIS_REPLY_ARRAY:
      v.type = RedisValue::Type::kArray;
      v.elements.reserve(r->elements);
      for (size_t i = 0; i < r->elements; ++i) v.elements.push_back(Convert(r->element[i]));
      break;
    default:
      v.type = RedisValue::Type::kNil;
      break;
  }
  return v;
}

Status ValidateTimeout(const char* field, Duration d) {
  if (d < std::chrono::milliseconds(1) || d > std::chrono::hours(1)) {
    return InvalidArgumentError(std::string(field) + " must be in [1 ms, 1 h], got " +
                                std::to_string(Millis(d)) + " ms");
  }
  return OkStatus();
}

}  // namespace

BackoffOptions RedisStateOptions::DefaultReconnectBackoff() {
  BackoffOptions b;
  b.kind = BackoffKind::kExponential;
  b.base = std::chrono::milliseconds(50);
  b.multiplier = 2.0;
  b.max_delay = std::chrono::seconds(5);
  b.jitter = JitterKind::kFull;
  return b;
}

struct RedisState::Impl {
  RedisStateOptions options;
  RedisUrl url;
  std::string endpoint;
  Clock* clock = nullptr;
  Backoff backoff;

  mutable std::mutex mu;
  // Guarded by mu.
  ContextPtr context;
  Random random{1};
  bool ever_connected = false;
  uint64_t connect_failures = 0;  // consecutive
  Duration previous_delay = Duration::zero();
  TimePoint next_connect_at{};
  std::unordered_map<std::string, std::string> sha_by_source;
  StateBackendHealth health;
  // Set by Run: the last failure was a connection, made before that Run,
  // found closed or reset (not a timeout, not a failed connect).
  bool stale_connection = false;

  explicit Impl(Backoff b) : backoff(std::move(b)) {}

  // REQUIRES: mu held. Records a failure and returns it as kStateUnavailable.
  Status Fail(std::string cause, bool record = true) {
    health.reachable = false;
    if (record) health.last_error = cause;
    ++health.failures;
    return StateUnavailableError("redis at " + endpoint + ": " + cause);
  }

  // REQUIRES: mu held. Drops the connection after a transport failure; the
  // next command reconnects at once (backoff applies to failed connects).
  Status DropConnection(const std::string& during, Duration timeout,
                        const std::string& timeout_name) {
    std::string cause = during + " failed";
    if (context != nullptr) {
      // hiredis reports a socket timeout as an I/O error with EAGAIN's text.
      const bool timed_out = context->err == REDIS_ERR_IO &&
                             std::string_view(context->errstr) == std::strerror(EAGAIN);
      cause += timed_out ? " (no reply within " + std::to_string(Millis(timeout)) +
                               " ms: " + timeout_name + ")"
                         : std::string(" (") + context->errstr + ")";
      stale_connection = !timed_out;
    }
    context.reset();
    next_connect_at = TimePoint{};
    return Fail(cause + "; the connection was dropped");
  }

  // REQUIRES: mu held, context set. Sends one command; nullptr after a
  // transport failure (context->err says which).
  ReplyPtr Send(const std::vector<std::string>& argv) {
    std::vector<const char*> args;
    std::vector<size_t> lens;
    args.reserve(argv.size());
    lens.reserve(argv.size());
    for (const std::string& a : argv) {
      args.push_back(a.data());
      lens.push_back(a.size());
    }
    ++health.round_trips;
    internal::SigpipeGuard no_sigpipe;
    errno = 0;
    return ReplyPtr(static_cast<redisReply*>(
        redisCommandArgv(context.get(), static_cast<int>(args.size()), args.data(), lens.data())));
  }

  // REQUIRES: mu held, context set. AUTH and SELECT on a new connection.
  Status Handshake() {
    std::vector<std::vector<std::string>> steps;
    if (!url.password.empty()) {
      if (url.user.empty()) {
        steps.push_back({"AUTH", url.password});
      } else {
        steps.push_back({"AUTH", url.user, url.password});
      }
    }
    if (url.db != 0) steps.push_back({"SELECT", std::to_string(url.db)});
    for (const auto& step : steps) {
      ReplyPtr reply = Send(step);
      const char* what = step[0] == "AUTH" ? "AUTH" : "SELECT";
      if (reply == nullptr) {
        return DropConnection(what, options.connect_timeout, options.connect_timeout_name);
      }
      if (reply->type == REDIS_REPLY_ERROR) {
        // The server's text ("WRONGPASS invalid username-password pair") never
        // echoes the password.
        std::string cause = std::string(what) + " refused: " + std::string(reply->str, reply->len);
        context.reset();
        return ConnectFailed(std::move(cause));
      }
    }
    return OkStatus();
  }

  // REQUIRES: mu held. Schedules the next connection attempt on the backoff.
  Status ConnectFailed(std::string cause) {
    const Duration delay = backoff.Delay(connect_failures, previous_delay, random);
    ++connect_failures;
    previous_delay = delay;
    next_connect_at = clock->Now() + delay;
    // last_error keeps the cause alone: the fail-fast message below adds the
    // time left, which would otherwise be said twice.
    health.last_error = cause;
    return Fail(cause + "; next connection attempt in " + std::to_string(Millis(delay)) + " ms",
                false);
  }

  // REQUIRES: mu held. Makes sure a connection is up.
  Status EnsureConnected() {
    if (context != nullptr) return OkStatus();
    const TimePoint now = clock->Now();
    if (now < next_connect_at) {
      return Fail("not connected (" + health.last_error + "); next connection attempt in " +
                      std::to_string(Millis(next_connect_at - now)) + " ms",
                  false);
    }
    ContextPtr c(redisConnectWithTimeout(url.host.c_str(), url.port,
                                         ToTimeval(options.connect_timeout)));
    if (c == nullptr) return ConnectFailed("cannot allocate a connection");
    if (c->err != 0) {
      std::string cause = std::string("connect failed (") + c->errstr;
      // hiredis's connect timeout reads "Connection timed out" (ETIMEDOUT).
      if (c->err == REDIS_ERR_IO && std::string_view(c->errstr) == std::strerror(ETIMEDOUT)) {
        cause += " after " + std::to_string(Millis(options.connect_timeout)) +
                 " ms: " + options.connect_timeout_name;
      }
      return ConnectFailed(cause + ")");
    }
    // The handshake is bounded by connect_timeout, later commands by
    // command_timeout.
    redisSetTimeout(c.get(), ToTimeval(options.connect_timeout));
    context = std::move(c);
    if (Status s = Handshake(); !s.ok()) return s;
    redisSetTimeout(context.get(), ToTimeval(options.command_timeout));
    if (ever_connected) ++health.reconnects;
    ever_connected = true;
    connect_failures = 0;
    previous_delay = Duration::zero();
    health.reachable = true;
    health.last_error.clear();
    return OkStatus();
  }

  // REQUIRES: mu held. One command on a live connection; error replies are
  // returned as kStateUnavailable with the server's text in `error_text`.
  Result<RedisValue> Run(const std::vector<std::string>& argv, std::string* error_text) {
    stale_connection = false;
    const bool reused = context != nullptr;
    if (Status s = EnsureConnected(); !s.ok()) return s;
    ReplyPtr reply = Send(argv);
    if (reply == nullptr) {
      Status dropped =
          DropConnection(argv[0], options.command_timeout, options.command_timeout_name);
      stale_connection = stale_connection && reused;
      return dropped;
    }
    health.reachable = true;
    if (reply->type == REDIS_REPLY_ERROR) {
      std::string text(reply->str, reply->len);
      if (error_text != nullptr) *error_text = text;
      return Fail(argv[0] + " answered an error: " + text);
    }
    health.last_error.clear();
    return Convert(reply.get());
  }
};

RedisState::RedisState(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RedisState::~RedisState() = default;

Result<std::shared_ptr<RedisState>> RedisState::Create(const RedisStateOptions& options) {
  Result<RedisUrl> url = ParseRedisUrl(options.url);
  if (!url.ok()) return url.status();
  if (Status s = ValidateStatePrefix(options.prefix); !s.ok()) return s;
  // The command bound first: a front door may default the connect bound to
  // it (Python's connect_timeout=None), and the error must name what was set.
  if (Status s = ValidateTimeout(options.command_timeout_name.c_str(), options.command_timeout);
      !s.ok()) {
    return s;
  }
  if (Status s = ValidateTimeout(options.connect_timeout_name.c_str(), options.connect_timeout);
      !s.ok()) {
    return s;
  }
  Result<Backoff> backoff = Backoff::Create(options.reconnect);
  if (!backoff.ok()) {
    return InvalidArgumentError("reconnect: " + backoff.status().message());
  }
  auto impl = std::make_unique<Impl>(std::move(backoff).value());
  impl->options = options;
  impl->url = std::move(url).value();
  const bool v6 = impl->url.host.find(':') != std::string::npos;
  impl->endpoint = "redis://" + (v6 ? "[" + impl->url.host + "]" : impl->url.host) + ":" +
                   std::to_string(impl->url.port) + "/" + std::to_string(impl->url.db);
  impl->clock = options.clock != nullptr ? options.clock : SystemClock::Default();
  impl->random = options.seed != 0 ? Random(options.seed) : Random::FromEntropy();
  impl->health.endpoint = impl->endpoint;
  {
    std::lock_guard<std::mutex> lock(impl->mu);
    // Unreachable is not a configuration error: commands report it.
    (void)impl->EnsureConnected();
  }
  return std::shared_ptr<RedisState>(new RedisState(std::move(impl)));
}

Result<RedisValue> RedisState::Command(const std::vector<std::string>& argv) {
  if (argv.empty()) return InvalidArgumentError("argv must name a command");
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->Run(argv, nullptr);
}

Result<RedisValue> RedisState::Eval(const RedisScript& script, const std::vector<std::string>& keys,
                                    const std::vector<std::string>& args) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  Impl& d = *impl_;
  auto known = d.sha_by_source.find(script.source());
  if (known == d.sha_by_source.end()) {
    const std::vector<std::string> load = {"SCRIPT", "LOAD", script.source()};
    Result<RedisValue> sha = d.Run(load, nullptr);
    // Loading is always safe to repeat: once more on a fresh connection when
    // an idle one turned out dead.
    if (!sha.ok() && d.stale_connection) sha = d.Run(load, nullptr);
    if (!sha.ok()) return sha.status();
    if (sha->type != RedisValue::Type::kString) {
      return d.Fail("SCRIPT LOAD answered something other than a SHA1");
    }
    known = d.sha_by_source.emplace(script.source(), sha->str).first;
  }
  std::vector<std::string> argv;
  argv.reserve(3 + keys.size() + args.size());
  argv.push_back("EVALSHA");
  argv.push_back(known->second);
  argv.push_back(std::to_string(keys.size()));
  argv.insert(argv.end(), keys.begin(), keys.end());
  argv.insert(argv.end(), args.begin(), args.end());
  std::string error_text;
  std::string last_error = d.health.last_error;
  Result<RedisValue> result = d.Run(argv, &error_text);
  if (!result.ok() && d.stale_connection && script.retry_safe()) {
    // A connection that died while idle (a Redis restart): once more, on a
    // fresh one. The first failure stays counted.
    last_error = d.health.last_error;
    result = d.Run(argv, &error_text);
  }
  if (result.ok() || error_text.rfind("NOSCRIPT", 0) != 0) return result;
  // The server lost its script cache (a restart, SCRIPT FLUSH): EVAL runs the
  // source and caches it again under the same SHA1. The NOSCRIPT answer is
  // part of the protocol, not a failure of the backend.
  --d.health.failures;
  d.health.last_error = last_error;
  argv[0] = "EVAL";
  argv[1] = script.source();
  return d.Run(argv, nullptr);
}

std::string RedisState::Key(std::string_view kind, std::string_view name) const {
  return StateObjectKey(impl_->options.prefix, kind, name);
}

StateBackendHealth RedisState::Health() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->health;
}

const std::string& RedisState::endpoint() const { return impl_->endpoint; }
const RedisStateOptions& RedisState::options() const { return impl_->options; }
Clock& RedisState::clock() const { return *impl_->clock; }

}  // namespace v0
}  // namespace mulligan
