// tests/core/outbox_redis_test.cc — what only the Redis Streams outbox
// (mulligan/outbox/redis_outbox.h) has to show, on a real redis-server per
// test (AOF fsync'ed on every write) and a FakeClock: two Outbox objects on
// two connections (two workers) never lease one entry; a worker that dies
// holding a lease hands the entry over on the fake clock, counted as a
// failed attempt, with the consumer group's pending list following; a
// stopped server gives kOutbox errors without the password and loses nothing
// acknowledged; sync full needs a server that fsyncs; every key is in the
// outbox's hash tag; bad options name the field. (The contract both
// backends keep is OutboxBackendTest in outbox_test.cc.)

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mulligan/outbox/outbox.h"
#include "mulligan/outbox/redis_outbox.h"
#include "redis/redis_test_base.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr const char* kTag = "{test:outbox:box}";

class RedisOutboxTest : public redis_test::RedisTest {
 protected:
  RedisOutboxTest() {
    char tmpl[] = "/tmp/mulligan-outbox-redis-XXXXXX";
    if (mkdtemp(tmpl) != nullptr) dir_ = tmpl;
  }
  ~RedisOutboxTest() override {
    server_.Stop();
    std::string cmd = "rm -rf '" + dir_ + "'";
    EXPECT_EQ(std::system(cmd.c_str()), 0);
  }
  std::vector<std::string> ServerArgs() const override {
    return {"--appendonly", "yes", "--appendfsync", "always", "--dir", dir_,
            "--requirepass", "s3cret"};
  }
  // A connection with the password, generous bounds (a loaded CI machine),
  // and the fake clock's exact reconnect backoff (100 ms, 200 ms, ... 1 s).
  std::shared_ptr<RedisState> State() {
    RedisStateOptions o = Options();
    o.url = "redis://:s3cret@" + o.url.substr(std::string("redis://").size());
    o.command_timeout = seconds(10);
    o.connect_timeout = seconds(10);
    return Connect(o);
  }
  OutboxOptions BoxOptions(std::string name = "box") {
    OutboxOptions o;
    o.name = std::move(name);
    o.retry.max_attempts = 4;
    o.retry.backoff.jitter = JitterKind::kNone;  // 200 ms, 400 ms, 800 ms
    return o;
  }
  std::unique_ptr<Outbox> Open(std::shared_ptr<RedisState> state, const OutboxOptions& o) {
    auto box = OpenRedisOutbox(std::move(state), o);
    EXPECT_TRUE(box.ok()) << box.status().ToString();
    return box.ok() ? std::move(box).value() : nullptr;
  }
  static OutboxEntrySpec Job(std::string payload) {
    OutboxEntrySpec s;
    s.kind = OutboxKind::kJob;
    s.job = "mail";
    s.payload = std::move(payload);
    return s;
  }
  WallTime Now() const { return clock_.WallNow(); }

  std::string dir_;
};

TEST_F(RedisOutboxTest, TwoWorkersNeverLeaseTheSameEntry) {
  auto a = Open(State(), BoxOptions());
  auto b = Open(State(), BoxOptions());
  ASSERT_TRUE(a && b);
  constexpr int kTotal = 60;
  std::vector<OutboxEntrySpec> specs;
  for (int i = 0; i < kTotal; ++i) specs.push_back(Job(std::to_string(i)));
  ASSERT_TRUE(a->EnqueueMany(specs, Now()).ok());
  // One after the other: b gets the next two, not a's.
  auto first = a->Lease("a", 2, Now());
  auto second = b->Lease("b", 2, Now());
  ASSERT_TRUE(first.ok() && second.ok());
  ASSERT_EQ(first->size(), 2u);
  ASSERT_EQ(second->size(), 2u);
  EXPECT_EQ((*first)[0].entry.id, 1);
  EXPECT_EQ((*first)[1].entry.id, 2);
  EXPECT_EQ((*second)[0].entry.id, 3);
  EXPECT_EQ((*second)[1].entry.id, 4);
  for (const auto* batch : {&*first, &*second}) {
    for (const OutboxLease& l : *batch) ASSERT_TRUE(a->Complete(l, Now()).ok());
  }
  // At once, from two threads on two connections.
  std::vector<int64_t> got[2];
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      Outbox& box = w == 0 ? *a : *b;
      for (;;) {
        auto leases = box.Lease(w == 0 ? "a" : "b", 3, Now());
        ASSERT_TRUE(leases.ok()) << leases.status().ToString();
        if (leases->empty()) return;
        for (const OutboxLease& l : *leases) {
          got[w].push_back(l.entry.id);
          ASSERT_TRUE(box.Complete(l, Now()).ok());
        }
      }
    });
  }
  for (auto& t : workers) t.join();
  std::set<int64_t> all(got[0].begin(), got[0].end());
  for (int64_t id : got[1]) EXPECT_TRUE(all.insert(id).second) << "entry " << id << " twice";
  EXPECT_EQ(all.size(), static_cast<size_t>(kTotal - 4));
  auto stats = b->Stats(Now());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->deliveries, kTotal);
  EXPECT_EQ(stats->done, kTotal);
  EXPECT_EQ(stats->depth, 0);
}

// Worker a leases and dies (its Outbox and connection gone); on the fake
// clock its lease ends, b's Lease records the expiry as attempt 1 and, after
// the 200 ms backoff, takes the entry: the consumer group's pending list
// then holds it under consumer b.
TEST_F(RedisOutboxTest, ALeaseOfADeadWorkerExpiresOnTheFakeClockAndIsCounted) {
  auto b = Open(State(), BoxOptions());
  ASSERT_TRUE(b);
  const WallTime t0 = Now();
  int64_t id = 0;
  {
    auto a = Open(State(), BoxOptions());
    ASSERT_TRUE(a);
    auto e = a->Enqueue(Job("x"), t0);
    ASSERT_TRUE(e.ok());
    id = e->id;
    auto held = a->Lease("a", 1, Now(), seconds(10));
    ASSERT_EQ(held->size(), 1u);
  }  // a dies holding the lease
  auto admin = State();
  auto pending = admin->Command({"XPENDING", std::string(kTag) + ":stream", "workers"});
  ASSERT_TRUE(pending.ok()) << pending.status().ToString();
  EXPECT_EQ(pending->elements[0].integer, 1);
  clock_.Advance(seconds(10) - std::chrono::nanoseconds(1));
  EXPECT_TRUE(b->Lease("b", 1, Now())->empty());
  clock_.Advance(std::chrono::nanoseconds(1));
  EXPECT_TRUE(b->Lease("b", 1, Now())->empty());  // expired: backing off 200 ms
  EXPECT_EQ(admin->Command({"XPENDING", std::string(kTag) + ":stream", "workers"})
                ->elements[0]
                .integer,
            0);
  clock_.Advance(milliseconds(200));
  auto taken = b->Lease("b", 1, Now());
  ASSERT_EQ(taken->size(), 1u);
  EXPECT_EQ((*taken)[0].entry.id, id);
  EXPECT_EQ((*taken)[0].entry.attempts, 1);
  EXPECT_EQ((*taken)[0].entry.leases, 2);
  pending = admin->Command({"XPENDING", std::string(kTag) + ":stream", "workers"});
  ASSERT_EQ(pending->elements.size(), 4u);
  EXPECT_EQ(pending->elements[0].integer, 1);
  ASSERT_EQ(pending->elements[3].elements.size(), 1u);
  EXPECT_EQ(pending->elements[3].elements[0].elements[0].str, "b");
  auto history = b->History(id);
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0].message, "lease expired, worker a");
  EXPECT_EQ((*history)[0].at, t0 + seconds(10));
  EXPECT_EQ((*history)[0].delay, milliseconds(200));
  EXPECT_EQ((*history)[0].error, ErrorKind::kTimeout);
  auto stats = b->Stats(Now());
  EXPECT_EQ(stats->lease_expiries, 1);
  EXPECT_EQ(stats->leased, 1);
}

TEST_F(RedisOutboxTest, AStoppedServerGivesOutboxErrorsAndLosesNothingAcknowledged) {
  auto box = Open(State(), BoxOptions());
  ASSERT_TRUE(box);
  ASSERT_TRUE(box->EnqueueMany({Job("1"), Job("2"), Job("3")}, Now()).ok());
  auto leases = box->Lease("w", 2, Now());
  ASSERT_EQ(leases->size(), 2u);
  ASSERT_TRUE(box->Complete((*leases)[0], Now(), 200).ok());  // acknowledged

  server_.Stop();  // SIGKILL
  OutboxEntrySpec lost = Job("4");
  lost.idempotency_key = "never-written";
  auto enqueued = box->Enqueue(lost, Now());
  ASSERT_EQ(enqueued.status().code(), StatusCode::kOutbox);
  const std::string& text = enqueued.status().message();
  EXPECT_EQ(text.rfind("outbox box: enqueue (nothing written", 0), 0u) << text;
  EXPECT_NE(text.find("never-written"), std::string::npos) << text;
  EXPECT_NE(text.find(server_.url()), std::string::npos) << text;
  EXPECT_EQ(text.find("s3cret"), std::string::npos) << text;
  EXPECT_EQ(box->Complete((*leases)[1], Now()).code(), StatusCode::kOutbox);
  EXPECT_EQ(box->Lease("w", 1, Now()).status().code(), StatusCode::kOutbox);
  EXPECT_EQ(box->Stats(Now()).status().code(), StatusCode::kOutbox);
  EXPECT_EQ(box->Get(1).status().code(), StatusCode::kOutbox);

  ASSERT_EQ(server_.Start(), "");  // the same port and AOF
  clock_.Advance(seconds(1));      // past the fake clock's reconnect backoff
  auto stats = box->Stats(Now());
  ASSERT_TRUE(stats.ok()) << stats.status().ToString();
  EXPECT_EQ(stats->done, 1);
  EXPECT_EQ(stats->deliveries, 1);
  EXPECT_EQ(stats->leased, 1);
  EXPECT_EQ(stats->pending, 1);
  auto again = box->Enqueue(lost, Now());  // it was not written before
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->id, 4);
  ASSERT_TRUE(box->Complete((*leases)[1], Now()).ok());
  EXPECT_EQ(box->Get((*leases)[1].entry.id)->state, OutboxState::kDone);
}

class RedisOutboxNoAofTest : public RedisOutboxTest {
 protected:
  std::vector<std::string> ServerArgs() const override {
    return {"--dir", dir_, "--requirepass", "s3cret"};
  }
};

TEST_F(RedisOutboxNoAofTest, SyncFullNeedsAServerThatFsyncsEveryWrite) {
  auto full = OpenRedisOutbox(State(), BoxOptions());
  ASSERT_EQ(full.status().code(), StatusCode::kOutbox);
  EXPECT_NE(full.status().message().find("appendonly yes, appendfsync always), got appendonly "
                                         "no, appendfsync everysec; or set sync normal"),
            std::string::npos)
      << full.status().message();
  OutboxOptions normal = BoxOptions();
  normal.sync = OutboxSync::kNormal;
  EXPECT_TRUE(OpenRedisOutbox(State(), normal).ok());
}

TEST_F(RedisOutboxTest, EveryKeyIsInTheOutboxHashTag) {
  auto box = Open(State(), BoxOptions());
  ASSERT_TRUE(box);
  ASSERT_TRUE(box->EnqueueMany({Job("1"), Job("2")}, Now()).ok());
  auto leases = box->Lease("w", 2, Now());
  ASSERT_EQ(leases->size(), 2u);
  ASSERT_TRUE(box->Complete((*leases)[0], Now()).ok());
  ASSERT_TRUE(box->Fail((*leases)[1], Outcome::Http(503), "HTTP 503", Now()).ok());
  auto keys = State()->Command({"KEYS", "*"});
  ASSERT_TRUE(keys.ok());
  EXPECT_GE(keys->elements.size(), 8u);
  for (const RedisValue& k : keys->elements) EXPECT_EQ(k.str.rfind(kTag, 0), 0u) << k.str;
}

TEST_F(RedisOutboxTest, BadOptionsNameTheFieldAndALeaseOfAnotherOutboxIsRefused) {
  OutboxOptions o = BoxOptions();
  EXPECT_EQ(OpenRedisOutbox(nullptr, o).status().message(), "outbox state must not be null");
  o.path = "/tmp/x.db";
  EXPECT_NE(OpenRedisOutbox(State(), o).status().message().find("path must be empty"),
            std::string::npos);
  o = BoxOptions("");
  EXPECT_NE(OpenRedisOutbox(State(), o).status().message().find("name must name"),
            std::string::npos);
  o = BoxOptions();
  o.max_size_bytes = 1 << 20;
  EXPECT_NE(OpenRedisOutbox(State(), o).status().message().find("maxmemory"), std::string::npos);
  o = BoxOptions();
  o.lease_timeout = Duration::zero();
  EXPECT_NE(OpenRedisOutbox(State(), o).status().message().find("lease_timeout"),
            std::string::npos);
  o = BoxOptions("absent");
  o.create = false;
  auto absent = OpenRedisOutbox(State(), o);
  EXPECT_EQ(absent.status().code(), StatusCode::kOutbox);
  EXPECT_NE(absent.status().message().find("no such outbox"), std::string::npos);
  EXPECT_EQ(State()->Command({"EXISTS", "{test:outbox:absent}:meta"})->integer, 0);
  OutboxOptions url;
  url.path = server_.url();
  auto wrong_door = Outbox::Open(url);
  EXPECT_EQ(wrong_door.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(wrong_door.status().message().find("OpenRedisOutbox"), std::string::npos);

  auto x = Open(State(), BoxOptions("x"));
  auto y = Open(State(), BoxOptions("y"));
  ASSERT_TRUE(x && y);
  ASSERT_TRUE(x->Enqueue(Job("from x"), Now()).ok());
  ASSERT_TRUE(y->Enqueue(Job("from y"), Now()).ok());
  auto from_x = x->Lease("w", 1, Now());
  ASSERT_EQ(from_x->size(), 1u);
  const std::string want = "outbox entry 1 of this outbox has another idempotency key: the "
                           "lease was made by another outbox";
  EXPECT_EQ(y->Complete((*from_x)[0], Now()).message(), want);
  EXPECT_EQ(y->Fail((*from_x)[0], Outcome::Http(503), "503", Now()).status().message(), want);
  EXPECT_EQ(y->Get(1)->state, OutboxState::kPending);
}

}  // namespace
}  // namespace mulligan
