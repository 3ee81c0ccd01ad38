// tests/core/outbox_fixture.h — the fixtures of outbox_test.cc: OutboxTest
// (SQLite in a temporary directory, a FakeClock, entry builders) and
// OutboxBackendTest, the same parameterized over the backend: "sqlite"
// (Outbox::Open on a file) or "redis" (OpenRedisOutbox on a real
// redis-server started per test with AOF fsync'ed on every write, its
// --dir the test's directory; skipped when none is installed).

#ifndef MULLIGAN_TESTS_CORE_OUTBOX_FIXTURE_H_
#define MULLIGAN_TESTS_CORE_OUTBOX_FIXTURE_H_

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>

#include "mulligan/base/clock.h"
#include "mulligan/outbox/outbox.h"
#include "mulligan/retry/backoff.h"
#if MULLIGAN_TEST_REDIS
#include "mulligan/outbox/redis_outbox.h"
#include "redis/redis_server.h"
#endif

namespace mulligan {
namespace outbox_test {

using std::chrono::seconds;

class OutboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/mulligan-outbox-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/outbox.db";
  }
  void TearDown() override {
    std::string cmd = "rm -rf '" + dir_ + "'";
    ASSERT_EQ(std::system(cmd.c_str()), 0);
  }
  OutboxOptions Options() {
    OutboxOptions o;
    o.path = path_;
    o.retry.max_attempts = 4;
    o.retry.backoff.jitter = JitterKind::kNone;  // 200 ms, 400 ms, 800 ms
    return o;
  }
  std::unique_ptr<Outbox> Open(const OutboxOptions& o) {
    auto box = OpenBackend(o);
    EXPECT_TRUE(box.ok()) << box.status().ToString();
    return box.ok() ? std::move(box).value() : nullptr;
  }
  virtual Result<std::unique_ptr<Outbox>> OpenBackend(const OutboxOptions& o) {
    return Outbox::Open(o);
  }
  static OutboxEntrySpec Http(std::string body = "{\"n\":1}") {
    OutboxEntrySpec s;
    s.kind = OutboxKind::kHttp;
    s.method = "POST";
    s.url = "http://127.0.0.1:9/hooks";
    s.headers = {{"Content-Type", "application/json"}, {"X-Tenant", "acme"}};
    s.body = std::move(body);
    return s;
  }
  static OutboxEntrySpec Job(std::string name, std::string payload) {
    OutboxEntrySpec s;
    s.kind = OutboxKind::kJob;
    s.job = std::move(name);
    s.payload = std::move(payload);
    return s;
  }
  WallTime Now() const { return clock_.WallNow(); }

  FakeClock clock_;
  std::string dir_;
  std::string path_;
};

// The contract both backends keep: "sqlite" (Outbox::Open on a file) and
// "redis" (OpenRedisOutbox; the outbox named options.name, "box" by
// default, on this test's redis-server, reopened by name).
class OutboxBackendTest : public OutboxTest,
                          public ::testing::WithParamInterface<std::string> {
 protected:
  void SetUp() override {
    OutboxTest::SetUp();
    if (GetParam() != "redis") return;
#if MULLIGAN_TEST_REDIS
    bool required = false;
    if (redis_test::RedisServerPath(&required).empty())
      GTEST_SKIP() << "redis-server is not installed (set MULLIGAN_REDIS_SERVER to require it)";
    ASSERT_EQ(server_.Start({"--appendonly", "yes", "--appendfsync", "always", "--dir", dir_}),
              "");
    RedisStateOptions so;
    so.url = server_.url();
    so.prefix = "test";
    // Generous bounds: the CI machine may be heavily loaded.
    so.command_timeout = seconds(10);
    so.connect_timeout = seconds(10);
    auto state = RedisState::Create(so);
    ASSERT_TRUE(state.ok()) << state.status().ToString();
    state_ = *state;
#else
    GTEST_SKIP() << "built without MULLIGAN_BUILD_REDIS";
#endif
  }
  void TearDown() override {
#if MULLIGAN_TEST_REDIS
    state_.reset();
    server_.Stop();  // before its --dir goes
#endif
    OutboxTest::TearDown();
  }
  Result<std::unique_ptr<Outbox>> OpenBackend(const OutboxOptions& o) override {
#if MULLIGAN_TEST_REDIS
    if (GetParam() == "redis") {
      OutboxOptions r = o;
      r.path.clear();
      if (r.name.empty()) r.name = "box";
      return OpenRedisOutbox(state_, r);
    }
#endif
    return Outbox::Open(o);
  }
#if MULLIGAN_TEST_REDIS
  redis_test::RedisServer server_;
  std::shared_ptr<RedisState> state_;
#endif
};

}  // namespace outbox_test
}  // namespace mulligan

#endif  // MULLIGAN_TESTS_CORE_OUTBOX_FIXTURE_H_
