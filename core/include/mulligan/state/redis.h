// mulligan/state/redis.h — a Redis state backend on hiredis (CMake target
// mulligan_redis; a program that does not use it links no hiredis).
// (Added in 0.5.)
//
// One RedisState is one connection to one Redis server (standalone or a
// primary; Redis Cluster's redirections are not followed yet, though every
// key is one hash tag, see backend.h), from a URL:
//
//   redis://[[user]:password@]host[:port][/db]
//
//   host      a name, an IPv4 address, or an IPv6 address in brackets
//   port      default 6379
//   db        the logical database chosen with SELECT, default 0
//   user      an ACL user (Redis 6+): "AUTH user password"
//   password  with no user: "AUTH password" (requirepass)
//   user name and password are percent-decoded (RFC 3986 section 2.1).
//
// `rediss://` (TLS) is refused: hiredis supports TLS from 1.0 on, built with
// SSL, and Debian 12's libhiredis 0.14 has neither.
//
// Bounded time: connecting (the TCP handshake, AUTH and SELECT) is bounded by
// connect_timeout and every command by command_timeout (hiredis's socket
// timeouts). Name resolution is not bounded by hiredis: use an address, or a
// name the resolver answers at once (/etc/hosts), where that matters. A
// timeout's error names the option that bounds it: "AUTH failed (no reply
// within 250 ms: connect_timeout)", "GET failed (no reply within 250 ms:
// command_timeout)" (with the front door's names, see
// connect_timeout_name).
//
// Failure: a command that fails (connection refused or lost, a timeout, an
// error reply) returns kStateUnavailable and never throws. After a transport
// failure the connection is dropped (a late reply would otherwise be read as
// the answer to the next command); the next command reconnects at once, and
// if that fails, later reconnects wait for mulligan's own backoff
// (retry/backoff.h, `reconnect` below) while commands fail fast with
// kStateUnavailable. A command whose reply was lost may or may not have run
// on the server; callers design their scripts so that this is safe (the
// idempotency store fails closed). A script marked retry-safe (RedisScript),
// and SCRIPT LOAD, are sent once more at once on a fresh connection when an
// idle connection turns out closed or reset (a Redis restart between two
// calls), so a restart costs such callers no failed operation; a timeout is
// never retried (the bound stays the bound).
//
// Scripts run with EVALSHA (the script's SHA1, learned once per process with
// SCRIPT LOAD) and fall back to EVAL when the server answers NOSCRIPT (its
// script cache was flushed or it restarted): one round trip per script call
// once the script is known.
//
// Secrets: no error text, log line or health report holds the password or
// the user name: the endpoint is rendered as redis://host:port/db, and URL
// errors name the part that is wrong, never its value.
//
// Thread-safety: RedisState is thread-safe; one mutex guards the connection,
// so commands from many threads run one after another (one round trip each).

#ifndef MULLIGAN_STATE_REDIS_H_
#define MULLIGAN_STATE_REDIS_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/base/status.h"
#include "mulligan/retry/backoff.h"
#include "mulligan/state/backend.h"

namespace mulligan {
inline namespace v0 {

// The parts of a redis:// URL.
struct RedisUrl {
  std::string host;
  int port = 6379;
  // Empty: no ACL user.
  std::string user;
  // Empty: no AUTH.
  std::string password;
  int db = 0;
};

// Parses `url` (see the file comment). kInvalidArgument names what is wrong
// (scheme, rediss:// needing TLS, host (empty, a forbidden character, or
// longer than 255 bytes: RFC 1035 section 2.3.4), port outside [1, 65535], db outside
// [0, 2^31-1], a bad percent-escape, a query or fragment) without quoting the
// URL, which may hold a password.
// Thread-safety: thread-safe.
Result<RedisUrl> ParseRedisUrl(std::string_view url);

// A reply, as hiredis reads it (RESP2).
struct RedisValue {
  enum class Type : int { kNil = 0, kInteger = 1, kString = 2, kStatus = 3, kArray = 4 };
  Type type = Type::kNil;
  int64_t integer = 0;
  // kString and kStatus.
  std::string str;
  // kArray.
  std::vector<RedisValue> elements;
};

// A Lua script (run with EVALSHA / EVAL).
//
// Thread-safety: immutable.
//
// `retry_safe` says that running the script twice is harmless (its second run
// finds what the first did and answers accordingly). Such a script is sent
// once more, at once, on a fresh connection when an existing connection
// turns out to be dead (closed or reset, not a timeout): what happens after
// a Redis restart, where the old connection would otherwise cost the caller
// one kStateUnavailable. Default false.
class RedisScript {
 public:
  explicit RedisScript(std::string source, bool retry_safe = false)
      : source_(std::move(source)), retry_safe_(retry_safe) {}
  const std::string& source() const { return source_; }
  bool retry_safe() const { return retry_safe_; }

 private:
  std::string source_;
  bool retry_safe_ = false;
};

struct RedisStateOptions {
  // The server (see the file comment). Default "redis://127.0.0.1:6379/0".
  std::string url = "redis://127.0.0.1:6379/0";
  // The key namespace shared by the processes of one service (backend.h).
  // Default "mulligan".
  std::string prefix = "mulligan";
  // Bound on connecting: TCP handshake, AUTH and SELECT, each. Must be in
  // [1 ms, 1 h]. Default 250 ms.
  Duration connect_timeout = std::chrono::milliseconds(250);
  // Bound on one command's round trip. Must be in [1 ms, 1 h]. Default 250 ms.
  Duration command_timeout = std::chrono::milliseconds(250);
  // The names of the two options above in error texts ("connect_timeout",
  // "command_timeout"): a front door whose own keywords differ (Python's
  // RedisState calls the command bound `timeout`) passes its names, so an
  // error always names what its reader can set. (Added in 0.6.)
  std::string connect_timeout_name = "connect_timeout";
  std::string command_timeout_name = "command_timeout";
  // The wait between failed connection attempts (n = failed attempts - 1).
  // Default: exponential from 50 ms, multiplier 2, full jitter, at most 5 s.
  BackoffOptions reconnect = DefaultReconnectBackoff();
  // Seed of the reconnect jitter; 0 (default) seeds from std::random_device.
  uint64_t seed = 0;
  // The clock of the reconnect backoff and of the wall-time anchor that the
  // idempotency store uses (redis_store.h). Not owned; must outlive the
  // state. Default (nullptr): SystemClock::Default().
  Clock* clock = nullptr;

  static BackoffOptions DefaultReconnectBackoff();
};

// A connection to Redis.
//
// Thread-safety: thread-safe (see the file comment). Not copyable or
// movable: stores hold it by shared_ptr.
class RedisState final : public StateBackend {
 public:
  // Validates `options` (kInvalidArgument names the field: url, prefix,
  // connect_timeout, command_timeout, reconnect.*) and tries to connect once.
  // A server that cannot be reached is not an error here: the state is
  // returned unreachable (Health()) and commands fail with kStateUnavailable
  // until a reconnect succeeds.
  static Result<std::shared_ptr<RedisState>> Create(const RedisStateOptions& options);
  ~RedisState() override;
  RedisState(const RedisState&) = delete;
  RedisState& operator=(const RedisState&) = delete;

  // Sends one command (argv[0] is its name; arguments are binary-safe).
  // Returns the reply; an error reply, a transport failure or a timeout is
  // kStateUnavailable naming the endpoint and the cause. kInvalidArgument
  // for an empty argv.
  Result<RedisValue> Command(const std::vector<std::string>& argv);

  // Runs `script` on `keys` and `args` (EVALSHA, EVAL on NOSCRIPT; see the
  // file comment). Errors as Command().
  Result<RedisValue> Eval(const RedisScript& script, const std::vector<std::string>& keys,
                          const std::vector<std::string>& args);

  // Returns the key of an object in this state's namespace (backend.h).
  std::string Key(std::string_view kind, std::string_view name) const;

  const char* kind() const override { return "redis"; }
  StateBackendHealth Health() const override;

  // "redis://host:port/db", without credentials.
  const std::string& endpoint() const;
  const RedisStateOptions& options() const;
  // The clock of `options` (SystemClock::Default() when none was given).
  Clock& clock() const;

 private:
  struct Impl;
  explicit RedisState(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_STATE_REDIS_H_
