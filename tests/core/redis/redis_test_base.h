// tests/core/redis/redis_test_base.h — the gtest fixture of the Redis suites:
// a fresh redis-server per test (redis_server.h), skipped with a message when
// none is installed, failed when MULLIGAN_REDIS_SERVER names one that cannot
// run.

#ifndef MULLIGAN_TESTS_CORE_REDIS_REDIS_TEST_BASE_H_
#define MULLIGAN_TESTS_CORE_REDIS_REDIS_TEST_BASE_H_

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/state/redis.h"
#include "redis/redis_server.h"

namespace mulligan {
namespace redis_test {

class RedisTest : public ::testing::Test {
 protected:
  // Arguments added to redis-server's command line (e.g. --requirepass).
  virtual std::vector<std::string> ServerArgs() const { return {}; }

  void SetUp() override {
    bool required = false;
    if (RedisServerPath(&required).empty()) {
      GTEST_SKIP() << "redis-server is not installed at /usr/bin/redis-server (Debian "
                      "redis-server); set MULLIGAN_REDIS_SERVER to require it";
    }
    const std::string error = server_.Start(ServerArgs());
    ASSERT_EQ(error, "") << "MULLIGAN_REDIS_SERVER=" << (required ? "set" : "unset");
  }

  // Options on the test's server, the fake clock, and a reconnect backoff
  // without jitter (100 ms, 200 ms, ... at most 1 s), so waits are exact.
  RedisStateOptions Options(int db = 0) {
    RedisStateOptions o;
    o.url = server_.url(db);
    o.prefix = "test";
    o.clock = &clock_;
    o.reconnect.base = std::chrono::milliseconds(100);
    o.reconnect.max_delay = std::chrono::seconds(1);
    o.reconnect.jitter = JitterKind::kNone;
    return o;
  }

  std::shared_ptr<RedisState> Connect(const RedisStateOptions& o) {
    Result<std::shared_ptr<RedisState>> state = RedisState::Create(o);
    EXPECT_TRUE(state.ok()) << state.status().ToString();
    return state.ok() ? state.value() : nullptr;
  }

  RedisServer server_;
  FakeClock clock_;
};

}  // namespace redis_test
}  // namespace mulligan

#endif  // MULLIGAN_TESTS_CORE_REDIS_REDIS_TEST_BASE_H_
