// Tests the "state" section of configuration files and the "shared" flag of
// "breakers" and "rate_limiters" entries (issue 16; config.h's
// StateSettings): what loads, and every error naming its JSON path without
// quoting a password. Nothing here connects to Redis (the configuration core
// never does); the Python suite builds the shared parts on a real
// redis-server (tests/python/config/test_config_state.py).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "mulligan/config/config.h"
#include "config_test_util.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using config_test::NoEnv;

// The error message of loading `json` (empty when it loads).
std::string ErrorOf(const std::string& json) { return config_test::LoadError(json, "state.json"); }

TEST(ConfigState, StateSectionAndSharedEntriesLoad) {
  PolicyRegistry registry;
  Result<LoadReport> report = registry.LoadString(R"({
    "state": {"redis": "redis://:pw@127.0.0.1:6380/2", "prefix": "orders", "timeout": "100ms",
              "connect_timeout": 2},
    "breakers": {"payments": {"shared": true, "failure_threshold": 3},
                 "local": {"shared": false}, "plain": {}},
    "rate_limiters": {"api": {"rate": 50, "shared": true}, "mine": {"rate": 5}}
  })", "state.json", NoEnv());
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_TRUE(report->state);
  EXPECT_EQ(report->shared_breakers, std::vector<std::string>{"payments"});
  EXPECT_EQ(report->shared_rate_limiters, std::vector<std::string>{"api"});
  EXPECT_EQ(report->breakers, (std::vector<std::string>{"local", "payments", "plain"}));
  std::shared_ptr<const ConfigSnapshot> s = registry.Snapshot();
  ASSERT_TRUE(s->state.has_value());
  EXPECT_EQ(s->state->redis, "redis://:pw@127.0.0.1:6380/2");
  EXPECT_EQ(s->state->prefix, "orders");
  EXPECT_EQ(s->state->timeout, milliseconds(100));
  EXPECT_EQ(s->state->connect_timeout, std::optional<Duration>(seconds(2)));
  EXPECT_EQ(s->breakers.at("payments").failure_threshold, 3);
  // A shared limiter needs the front door's backend: never a silent local one.
  Result<std::shared_ptr<RateLimiter>> api = registry.RateLimiterNamed("api");
  ASSERT_FALSE(api.ok());
  EXPECT_EQ(api.status().message(),
            "rate limiter \"api\" is shared (\"shared\": true) but no state backend was given");
  Result<std::shared_ptr<RateLimiter>> mine = registry.RateLimiterNamed("mine");
  ASSERT_TRUE(mine.ok());
  EXPECT_FALSE((*mine)->shared());
}

TEST(ConfigState, DefaultsWithoutOptionalFields) {
  PolicyRegistry registry;
  ASSERT_TRUE(registry.LoadString(R"({"state": {"redis": "redis://h"}})", "s", NoEnv()).ok());
  const StateSettings& st = *registry.Snapshot()->state;
  EXPECT_EQ(st.prefix, "mulligan");
  EXPECT_EQ(st.timeout, milliseconds(250));
  EXPECT_FALSE(st.connect_timeout.has_value());
  ASSERT_TRUE(registry.LoadString("{}", "s", NoEnv()).ok());
  EXPECT_FALSE(registry.Snapshot()->state.has_value());
  EXPECT_FALSE(MakeLoadReport(*registry.Snapshot()).state);
}

TEST(ConfigState, UrlErrorsNameThePathAndNeverThePassword) {
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "http://x"}})"),
            "state.json: state.redis: expected a redis:// URL, got \"http://x\"");
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "http://admin:s3cret@x/0"}})"),
            "state.json: state.redis: expected a redis:// URL, got \"http://***@x/0\"");
  // Mistyped schemes (no "://") and a password holding '/' are masked too.
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "redis//:hunter2@127.0.0.1:6379/0"}})"),
            "state.json: state.redis: expected a redis:// URL, got \"***@127.0.0.1:6379/0\"");
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "redis:/:hunter2@127.0.0.1"}})"),
            "state.json: state.redis: expected a redis:// URL, got \"***@127.0.0.1\"");
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "http://:pa/ss@x"}})"),
            "state.json: state.redis: expected a redis:// URL, got \"http://***@x\"");
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "redis://:s3cret@h:99999/0"}})"),
            "state.json: state.redis: the port must be digits in [1, 65535]");
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "rediss://h"}})"),
            "state.json: state.redis: rediss:// (TLS) is not supported: it needs hiredis >= 1.0 "
            "built with SSL, and this build uses hiredis 0.14 (Debian 12's libhiredis-dev), "
            "which has no TLS");
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": 6379}})"),
            "state.json: state.redis: expected a redis:// URL, got 6379");
  EXPECT_EQ(ErrorOf(R"({"state": {"prefix": "x"}})"),
            "state.json: state.redis: missing: this field is required");
  EXPECT_EQ(ErrorOf(R"({"state": "redis://:s3cret@h"})"),
            "state.json: state: expected an object such as {\"redis\": "
            "\"redis://host:6379/0\"}, got \"redis://***@h\"");
  EXPECT_EQ(ErrorOf(R"({"state": 1})"), "state.json: state: expected an object, got 1");
}

TEST(ConfigState, OtherFieldErrorsNameThePath) {
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "redis://h", "prefix": "a:b"}})"),
            "state.json: state.prefix: byte 1 must be one of A-Z a-z 0-9 _ . - (a ':' would let "
            "one prefix's keys collide with another's)");
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "redis://h", "timeout": "500us"}})"),
            "state.json: state.timeout: expected a duration in [1ms, 1h], got \"500us\"");
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "redis://h", "connect_timeout": "2h"}})"),
            "state.json: state.connect_timeout: expected a duration in [1ms, 1h], got \"2h\"");
  EXPECT_EQ(ErrorOf(R"({"state": {"redis": "redis://h", "prefx": "a"}})"),
            "state.json: state.prefx: unknown field, did you mean \"prefix\"?");
  EXPECT_EQ(ErrorOf(R"({"stat": {}})"), "state.json: stat: unknown field, did you mean \"state\"?");
}

TEST(ConfigState, SharedNeedsStateAndASharedName) {
  EXPECT_EQ(ErrorOf(R"({"breakers": {"b": {"shared": true}}})"),
            "state.json: breakers.b.shared: needs the top-level \"state\" section (the Redis the "
            "shared objects live in)");
  EXPECT_EQ(ErrorOf(R"({"rate_limiters": {"r": {"rate": 1, "shared": true}}})"),
            "state.json: rate_limiters.r.shared: needs the top-level \"state\" section (the "
            "Redis the shared objects live in)");
  const std::string state = R"("state": {"redis": "redis://h"})";
  EXPECT_EQ(ErrorOf("{" + state + R"(, "breakers": {"b": {"shared": "yes"}}})"),
            "state.json: breakers.b.shared: expected true or false, got \"yes\"");
  EXPECT_EQ(ErrorOf("{" + state + R"(, "breakers": {"b{x}": {"shared": true}}})"),
            "state.json: breakers[\"b{x}\"]: a shared object's name must be printable ASCII without "
            "'{' or '}' (a brace would end the Redis Cluster hash tag {prefix:kind:name}): byte "
            "1 is 0x7b");
  EXPECT_EQ(ErrorOf("{" + state + R"(, "rate_limiters": {"r}": {"rate": 1, "shared": true}}})"),
            "state.json: rate_limiters[\"r}\"]: a shared object's name must be printable ASCII "
            "without '{' or '}' (a brace would end the Redis Cluster hash tag "
            "{prefix:kind:name}): byte 1 is 0x7d");
  // A brace is fine in a local entry's name.
  EXPECT_EQ(ErrorOf("{" + state + R"(, "breakers": {"b{x}": {}}})"), "");
  // "shared" belongs to entries, not to the defaults.
  EXPECT_NE(ErrorOf("{" + state + R"(, "defaults": {"breaker": {"shared": true}}})"), "");
}

}  // namespace
}  // namespace mulligan
