// tests/core/redis/redis_state_test.cc — RedisState against a real
// redis-server: URL parsing, AUTH (password and ACL user), SELECT, EVALSHA
// with the NOSCRIPT fallback, the command timeout, and reconnection on
// mulligan's backoff after the server is killed and restarted.

#include <gtest/gtest.h>

#include <thread>

#include "mulligan/state/backend.h"
#include "mulligan/state/redis.h"
#include "redis/redis_test_base.h"

namespace mulligan {
namespace redis_test {
namespace {

using std::chrono::milliseconds;

TEST(RedisUrlTest, ParsesEveryPart) {
  Result<RedisUrl> u = ParseRedisUrl("redis://alice:p%40ss%3Aword@cache.internal:6380/7");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host, "cache.internal");
  EXPECT_EQ(u->port, 6380);
  EXPECT_EQ(u->user, "alice");
  EXPECT_EQ(u->password, "p@ss:word");
  EXPECT_EQ(u->db, 7);

  u = ParseRedisUrl("redis://127.0.0.1");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->host, "127.0.0.1");
  EXPECT_EQ(u->port, 6379);
  EXPECT_EQ(u->db, 0);
  EXPECT_EQ(u->user, "");
  EXPECT_EQ(u->password, "");

  u = ParseRedisUrl("redis://:secret@[::1]:7000/");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host, "::1");
  EXPECT_EQ(u->port, 7000);
  EXPECT_EQ(u->user, "");
  EXPECT_EQ(u->password, "secret");

  // A bare userinfo is a password (requirepass), as other clients read it.
  u = ParseRedisUrl("redis://secret@localhost/2");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->password, "secret");
  EXPECT_EQ(u->db, 2);
}

TEST(RedisUrlTest, RefusesTlsWithTheReason) {
  Result<RedisUrl> u = ParseRedisUrl("rediss://user:hunter2@host:6380/0");
  ASSERT_FALSE(u.ok());
  EXPECT_TRUE(IsInvalidArgument(u.status()));
  EXPECT_EQ(u.status().message(),
            "url: rediss:// (TLS) is not supported: it needs hiredis >= 1.0 built with SSL, and "
            "this build uses hiredis 0.14 (Debian 12's libhiredis-dev), which has no TLS");
}

TEST(RedisUrlTest, ErrorsNameThePartAndNeverTheSecret) {
  const struct {
    const char* url;
    const char* message;
  } cases[] = {
      {"http://h:hunter2@x/0", "url: the scheme must be redis:// (as in redis://host:6379/0)"},
      {"redis://u:hunter2@/0", "url: the host is empty"},
      {"redis://u:hunter2@h:0/0", "url: the port must be digits in [1, 65535]"},
      {"redis://u:hunter2@h:65536", "url: the port must be digits in [1, 65535]"},
      {"redis://u:hunter2@h:", "url: the port is empty"},
      {"redis://u:hunter2@h/x",
       "url: the path must be the database number, digits in [0, 2147483647] (as in "
       "redis://host:6379/0)"},
      {"redis://u:hunter2@h/2147483648",
       "url: the path must be the database number, digits in [0, 2147483647] (as in "
       "redis://host:6379/0)"},
      {"redis://u:hunt%zz@h", "url: the password has a bad percent-escape"},
      {"redis://u:hunter2%4@h", "url: the password has a bad percent-escape"},
      {"redis://alice:@h", "url: an ACL user needs a password (redis://user:password@host)"},
      {"redis://u:hunter2@h/0?password=x", "url: a query or fragment is not supported"},
      {"redis://u:hunter2@[::1", "url: an IPv6 host must end with ']'"},
  };
  for (const auto& c : cases) {
    Result<RedisUrl> u = ParseRedisUrl(c.url);
    ASSERT_FALSE(u.ok()) << c.url;
    EXPECT_EQ(u.status().message(), c.message) << c.url;
    EXPECT_EQ(u.status().message().find("hunter2"), std::string::npos) << c.url;
  }
}

TEST(RedisUrlTest, HostIsAtMost255Bytes) {
  // RFC 1035 section 2.3.4: names are at most 255 octets (review fix, 0.6).
  const std::string longest(255, 'h');
  Result<RedisUrl> u = ParseRedisUrl("redis://" + longest + ":6380/0");
  ASSERT_TRUE(u.ok()) << u.status().ToString();
  EXPECT_EQ(u->host, longest);
  EXPECT_EQ(u->port, 6380);
  for (const size_t n : {256u, 300u}) {
    u = ParseRedisUrl("redis://u:hunter2@" + std::string(n, 'h') + ":6380/0");
    ASSERT_FALSE(u.ok()) << n;
    EXPECT_EQ(u.status().message(),
              "url: the host is longer than 255 bytes (RFC 1035 section 2.3.4)");
  }
}

TEST(StateKeyTest, OneHashTagPerObjectEscaped) {
  EXPECT_EQ(StateObjectKey("svc", "idem", "5:alice:k-1"), "{svc:idem:5:alice:k-1}");
  EXPECT_EQ(StateObjectKey("svc", "idem", "a{b}c%"), "{svc:idem:a%7Bb%7Dc%25}");
  EXPECT_TRUE(ValidateStatePrefix("orders-v2.prod").ok());
  EXPECT_EQ(ValidateStatePrefix("").message(), "prefix must be 1 to 64 bytes, got 0");
  EXPECT_EQ(ValidateStatePrefix("a{b").message(), "prefix byte 1 must be one of A-Z a-z 0-9 _ . - (a ':' would let one prefix's keys collide with another's)");
  // Review fix (0.6): a ':' in a prefix would make "a:idem" + "x" the same
  // keys as "a" + "idem" + "x:...": refused, as is anything outside
  // [A-Za-z0-9_.-].
  EXPECT_EQ(StateObjectKey("a:idem", "x", "k"), StateObjectKey("a", "idem", "x:k"));
  EXPECT_EQ(ValidateStatePrefix("a:idem").message(), "prefix byte 1 must be one of A-Z a-z 0-9 _ . - (a ':' would let one prefix's keys collide with another's)");
  EXPECT_EQ(ValidateStatePrefix("tenant/1").message(), "prefix byte 6 must be one of A-Z a-z 0-9 _ . - (a ':' would let one prefix's keys collide with another's)");
  EXPECT_EQ(ValidateStatePrefix("caf\xc3\xa9").message(), "prefix byte 3 must be one of A-Z a-z 0-9 _ . - (a ':' would let one prefix's keys collide with another's)");
  EXPECT_TRUE(ValidateStatePrefix("AZaz09_.-").ok());
  EXPECT_EQ(ValidateStatePrefix(std::string(65, 'x')).message(),
            "prefix must be 1 to 64 bytes, got 65");
}

TEST(SharedNameTest, OneRuleForEveryNamedSharedObject) {
  EXPECT_TRUE(ValidateSharedName("payments").ok());
  EXPECT_TRUE(ValidateSharedName("https://api.example.com:443").ok());
  EXPECT_TRUE(ValidateSharedName("a b%:/[]~ !").ok());
  EXPECT_TRUE(ValidateSharedName(std::string(200, 'x')).ok());
  EXPECT_EQ(ValidateSharedName("").message(),
            "a shared object's name must not be empty (it names the Redis key "
            "{prefix:kind:name})");
  EXPECT_EQ(ValidateSharedName(std::string(201, 'x')).message(),
            "a shared object's name must be at most 200 bytes, got 201");
  const std::string bad =
      "a shared object's name must be printable ASCII without '{' or '}' (a brace would end the "
      "Redis Cluster hash tag {prefix:kind:name}): byte ";
  EXPECT_EQ(ValidateSharedName("ab{c").message(), bad + "2 is 0x7b");
  EXPECT_EQ(ValidateSharedName("}").message(), bad + "0 is 0x7d");
  EXPECT_EQ(ValidateSharedName("tab\t").message(), bad + "3 is 0x09");
  EXPECT_EQ(ValidateSharedName("caf\xc3\xa9").message(), bad + "3 is 0xc3");
  EXPECT_EQ(ValidateSharedName(std::string("a\0b", 3)).message(), bad + "1 is 0x00");
  EXPECT_EQ(ValidateSharedName("del\x7f").message(), bad + "3 is 0x7f");
}

TEST(RedisStateOptionsTest, ErrorsNameTheField) {
  RedisStateOptions o;
  o.url = "redis://127.0.0.1:1/0";
  o.connect_timeout = std::chrono::microseconds(10);
  Result<std::shared_ptr<RedisState>> s = RedisState::Create(o);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().message(), "connect_timeout must be in [1 ms, 1 h], got 0 ms");
  o.connect_timeout = milliseconds(10);
  o.command_timeout = std::chrono::hours(2);
  EXPECT_EQ(RedisState::Create(o).status().message(),
            "command_timeout must be in [1 ms, 1 h], got 7200000 ms");
  o.command_timeout = milliseconds(10);
  o.prefix = "has space";
  EXPECT_EQ(RedisState::Create(o).status().message(), "prefix byte 3 must be one of A-Z a-z 0-9 _ . - (a ':' would let one prefix's keys collide with another's)");
  // A front door with other keywords names its own (Python: timeout).
  o.prefix = "p";
  o.command_timeout_name = "timeout";
  o.command_timeout = std::chrono::hours(2);
  EXPECT_EQ(RedisState::Create(o).status().message(),
            "timeout must be in [1 ms, 1 h], got 7200000 ms");
  o.command_timeout = milliseconds(10);
  o.prefix = "p";
  o.reconnect.multiplier = -1;
  Result<std::shared_ptr<RedisState>> bad = RedisState::Create(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("reconnect: ", 0), 0u) << bad.status().message();
  EXPECT_NE(bad.status().message().find("multiplier"), std::string::npos);
}

class RedisStateTest : public RedisTest {};

TEST_F(RedisStateTest, CommandsAndHealth) {
  auto state = Connect(Options());
  ASSERT_NE(state, nullptr);
  Result<RedisValue> pong = state->Command({"PING"});
  ASSERT_TRUE(pong.ok()) << pong.status().ToString();
  EXPECT_EQ(pong->type, RedisValue::Type::kStatus);
  EXPECT_EQ(pong->str, "PONG");
  ASSERT_TRUE(state->Command({"SET", "k", std::string("a\0b", 3)}).ok());
  Result<RedisValue> got = state->Command({"GET", "k"});
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->str, std::string("a\0b", 3));
  Result<RedisValue> nil = state->Command({"GET", "absent"});
  ASSERT_TRUE(nil.ok());
  EXPECT_EQ(nil->type, RedisValue::Type::kNil);
  // An error reply is a failure of the backend, with the server's text.
  Result<RedisValue> err = state->Command({"INCR", "k"});
  ASSERT_FALSE(err.ok());
  EXPECT_TRUE(IsStateUnavailable(err.status()));
  EXPECT_EQ(err.status().message(), "redis at " + state->endpoint() +
                                        ": INCR answered an error: ERR value is not an integer "
                                        "or out of range");
  EXPECT_TRUE(IsInvalidArgument(state->Command({}).status()));
  const StateBackendHealth h = state->Health();
  EXPECT_EQ(h.endpoint, "redis://127.0.0.1:" + std::to_string(server_.port()) + "/0");
  EXPECT_FALSE(h.reachable);  // the last command answered an error
  EXPECT_EQ(h.round_trips, 5u);
  EXPECT_EQ(h.failures, 1u);
  EXPECT_EQ(h.reconnects, 0u);
  EXPECT_STREQ(state->kind(), "redis");
}

TEST_F(RedisStateTest, SelectsTheDatabaseOfTheUrl) {
  auto db3 = Connect(Options(3));
  auto db0 = Connect(Options(0));
  ASSERT_TRUE(db3->Command({"SET", "where", "three"}).ok());
  EXPECT_EQ(db0->Command({"EXISTS", "where"})->integer, 0);
  EXPECT_EQ(db3->Command({"EXISTS", "where"})->integer, 1);
}

TEST_F(RedisStateTest, EvalshaFallsBackToEvalOnNoscript) {
  auto state = Connect(Options());
  const RedisScript script("return {KEYS[1], ARGV[1], tonumber(ARGV[2]) + 1}");
  const uint64_t before = state->Health().round_trips;
  Result<RedisValue> r = state->Eval(script, {"{test:x}"}, {"arg", "41"});
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->elements.size(), 3u);
  EXPECT_EQ(r->elements[0].str, "{test:x}");
  EXPECT_EQ(r->elements[1].str, "arg");
  EXPECT_EQ(r->elements[2].integer, 42);
  // SCRIPT LOAD once, then EVALSHA.
  EXPECT_EQ(state->Health().round_trips - before, 2u);
  ASSERT_TRUE(state->Eval(script, {"k"}, {"a", "1"}).ok());
  EXPECT_EQ(state->Health().round_trips - before, 3u);  // one round trip
  ASSERT_TRUE(state->Command({"SCRIPT", "FLUSH"}).ok());
  Result<RedisValue> again = state->Eval(script, {"k"}, {"a", "1"});
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->elements[2].integer, 2);
  // EVALSHA (NOSCRIPT) + EVAL, and the NOSCRIPT is not counted as a failure.
  EXPECT_EQ(state->Health().round_trips - before, 6u);
  EXPECT_EQ(state->Health().failures, 0u);
  EXPECT_EQ(state->Health().last_error, "");
  EXPECT_TRUE(state->Health().reachable);
  // EVAL cached it again: back to one round trip.
  ASSERT_TRUE(state->Eval(script, {"k"}, {"a", "1"}).ok());
  EXPECT_EQ(state->Health().round_trips - before, 7u);
}

TEST_F(RedisStateTest, KilledServerFailsFastThenReconnectsOnTheBackoff) {
  auto state = Connect(Options());
  ASSERT_TRUE(state->Command({"SET", "k", "v"}).ok());
  server_.Stop();
  // The dead connection: dropped, and reported.
  Result<RedisValue> r = state->Command({"GET", "k"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsStateUnavailable(r.status()));
  EXPECT_NE(r.status().message().find("GET failed"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("the connection was dropped"), std::string::npos);
  // The immediate reconnect is refused: the backoff starts (100 ms, no jitter).
  r = state->Command({"GET", "k"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("connect failed (Connection refused); next connection "
                                      "attempt in 100 ms"),
            std::string::npos)
      << r.status().message();
  // Before the backoff ends, commands fail fast without touching the network.
  const uint64_t trips = state->Health().round_trips;
  clock_.Advance(milliseconds(40));
  r = state->Command({"GET", "k"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("next connection attempt in 60 ms"), std::string::npos)
      << r.status().message();
  // Said once (review fix, 0.6): the cause in brackets does not repeat it.
  EXPECT_EQ(r.status().message(),
            "redis at " + state->endpoint() +
                ": not connected (connect failed (Connection refused)); next connection attempt "
                "in 60 ms");
  EXPECT_EQ(state->Health().last_error, "connect failed (Connection refused)");
  EXPECT_EQ(state->Health().round_trips, trips);
  // Second failed connect: 200 ms.
  clock_.Advance(milliseconds(60));
  r = state->Command({"GET", "k"});
  EXPECT_NE(r.status().message().find("next connection attempt in 200 ms"), std::string::npos)
      << r.status().message();
  // The server comes back (empty: no persistence); after the backoff, it works.
  ASSERT_EQ(server_.Start(), "");
  clock_.Advance(milliseconds(199));
  EXPECT_FALSE(state->Command({"PING"}).ok());
  clock_.Advance(milliseconds(1));
  Result<RedisValue> pong = state->Command({"PING"});
  ASSERT_TRUE(pong.ok()) << pong.status().ToString();
  EXPECT_EQ(pong->str, "PONG");
  EXPECT_EQ(state->Command({"EXISTS", "k"})->integer, 0);
  const StateBackendHealth h = state->Health();
  EXPECT_TRUE(h.reachable);
  EXPECT_EQ(h.reconnects, 1u);
  EXPECT_EQ(h.failures, 5u);
  // Recovered: the outage's error is gone (review fix, 0.6), its count stays.
  EXPECT_EQ(h.last_error, "");
}

TEST_F(RedisStateTest, UnreachableAtCreateIsNotAConfigError) {
  server_.Stop();
  auto state = Connect(Options());
  ASSERT_NE(state, nullptr);
  EXPECT_FALSE(state->Health().reachable);
  EXPECT_TRUE(IsStateUnavailable(state->Command({"PING"}).status()));
  ASSERT_EQ(server_.Start(), "");
  clock_.Advance(std::chrono::seconds(1));
  EXPECT_TRUE(state->Command({"PING"}).ok());
  EXPECT_EQ(state->Health().reconnects, 0u);  // the first connection
}

class RedisSlowTest : public RedisTest {
  std::vector<std::string> ServerArgs() const override {
    return {"--enable-debug-command", "yes"};
  }
};

TEST_F(RedisSlowTest, CommandTimeoutIsBounded) {
  RedisStateOptions o = Options();
  o.command_timeout = milliseconds(50);
  auto state = Connect(o);
  const auto start = std::chrono::steady_clock::now();
  Result<RedisValue> r = state->Command({"DEBUG", "SLEEP", "0.3"});
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsStateUnavailable(r.status()));
  EXPECT_NE(r.status().message().find("DEBUG failed (no reply within 50 ms: command_timeout); "
                                      "the connection was dropped"),
            std::string::npos)
      << r.status().message();
  EXPECT_LT(took, milliseconds(250));
  // Once the server is free again, the next command reconnects at once.
  // "Free again" is awaited (a PING on a connection of the test's own, bounded
  // by 5 s), not slept: the DEBUG SLEEP began when the server read it, which
  // on a loaded machine can be well after `start`, so a fixed 300 ms sleep
  // could send the PING while the server still slept.
  const auto free_by = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!Ping(server_.port()) && std::chrono::steady_clock::now() < free_by) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  Result<RedisValue> pong = state->Command({"PING"});
  ASSERT_TRUE(pong.ok()) << pong.status().ToString();
  EXPECT_EQ(state->Health().reconnects, 1u);
}

class RedisAuthTest : public RedisTest {
  std::vector<std::string> ServerArgs() const override {
    return {"--requirepass", "s3cret-pw", "--user", "alice", "on", ">alice-pw", "~*", "&*",
            "+@all"};
  }
};

TEST_F(RedisAuthTest, PasswordAndAclUser) {
  const std::string host = "127.0.0.1:" + std::to_string(server_.port());
  RedisStateOptions o = Options();
  o.url = "redis://:s3cret-pw@" + host + "/0";
  EXPECT_TRUE(Connect(o)->Command({"PING"}).ok());
  o.url = "redis://alice:alice-pw@" + host + "/1";
  auto alice = Connect(o);
  EXPECT_TRUE(alice->Command({"SET", "a", "1"}).ok());
  EXPECT_EQ(alice->endpoint(), "redis://" + host + "/1");
  // No password: NOAUTH from the server.
  o.url = "redis://" + host + "/0";
  Result<RedisValue> r = Connect(o)->Command({"PING"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("NOAUTH"), std::string::npos) << r.status().message();
  // A wrong password: refused, and the text holds neither password nor user.
  o.url = "redis://alice:wrong-pw-123@" + host + "/0";
  auto wrong = Connect(o);
  r = wrong->Command({"PING"});
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(IsStateUnavailable(r.status()));
  EXPECT_NE(r.status().message().find("AUTH refused: WRONGPASS"), std::string::npos)
      << r.status().message();
  for (const std::string& text : {r.status().message(), wrong->Health().last_error,
                                  wrong->Health().endpoint}) {
    EXPECT_EQ(text.find("wrong-pw-123"), std::string::npos) << text;
    EXPECT_EQ(text.find("alice"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace redis_test
}  // namespace mulligan
