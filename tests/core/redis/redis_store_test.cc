// tests/core/redis/redis_store_test.cc — the Redis idempotency store against a
// real redis-server: exact states after event scripts on a FakeClock
// (reserve, replay, 409 with retry_after, 422, ttl, lease expiry), one round
// trip per operation, two "processes" (two connections) sharing records,
// concurrency (one reservation among many), and failing closed while the
// server is down, then working again (with persistence: the completed
// record survives a kill -9).

#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <thread>

#include "mulligan/idempotency/redis_store.h"
#include "redis/redis_test_base.h"

namespace mulligan {
namespace redis_test {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

StoredResponse Created() {
  StoredResponse r;
  r.status = 201;
  r.headers = {{"Content-Type", "application/json"}, {"X-Order", "42"}, {"x-order", "dup"}};
  r.body = std::string("{\"id\":42}\0\xff", 11);
  return r;
}

class RedisStoreTest : public RedisTest {
 protected:
  std::unique_ptr<IdempotencyStore> Store(std::shared_ptr<RedisState> state,
                                          IdempotencyStoreOptions o = Defaults()) {
    Result<std::unique_ptr<IdempotencyStore>> s = RedisIdempotencyStore::Create(state, o);
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return s.ok() ? std::move(s).value() : nullptr;
  }
  static IdempotencyStoreOptions Defaults() {
    IdempotencyStoreOptions o;
    o.ttl = seconds(3600);
    o.lease = seconds(60);
    o.in_flight_retry_after = seconds(1);
    return o;
  }
};

TEST(RedisStoreCodecTest, RoundTripsAndRefusesCorruptBytes) {
  const StoredResponse r = Created();
  const std::string bytes = EncodeStoredResponse(r);
  EXPECT_EQ(bytes, std::string("1\n201\n3\n12\nContent-Type16\napplication/json7\nX-Order2\n42"
                               "7\nx-order3\ndup11\n{\"id\":42}\0\xff",
                               83));
  Result<StoredResponse> back = DecodeStoredResponse(bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->status, 201);
  EXPECT_EQ(back->headers, r.headers);
  EXPECT_EQ(back->body, r.body);
  for (const std::string& bad :
       {std::string(""), std::string("2\n200\n0\n0\n"), std::string("1\n99\n0\n0\n"),
        std::string("1\n200\n1\n0\n"), std::string("1\n200\n0\n5\nabc"),
        std::string("1\n200\n0\n0\nextra"), std::string("1\n200\n99999999999999999999\n")}) {
    Result<StoredResponse> d = DecodeStoredResponse(bad);
    ASSERT_FALSE(d.ok()) << bad;
    EXPECT_EQ(d.status().code(), StatusCode::kInternal);
  }
}

TEST_F(RedisStoreTest, ConfigErrorsNameTheField) {
  EXPECT_EQ(RedisIdempotencyStore::Create(nullptr, Defaults()).status().message(),
            "state must not be null");
  auto state = Connect(Options());
  IdempotencyStoreOptions o = Defaults();
  o.ttl = Duration::zero();
  EXPECT_EQ(RedisIdempotencyStore::Create(state, o).status().message(), "ttl must be > 0");
  o = Defaults();
  o.lease = -seconds(1);
  EXPECT_EQ(RedisIdempotencyStore::Create(state, o).status().message(), "lease must be > 0");
  o = Defaults();
  o.in_flight_retry_after = -milliseconds(1);
  EXPECT_EQ(RedisIdempotencyStore::Create(state, o).status().message(),
            "in_flight_retry_after must be >= 0");
  o = Defaults();
  o.max_key_length = 0;
  EXPECT_EQ(RedisIdempotencyStore::Create(state, o).status().message(),
            "max_key_length must be >= 1");
}

TEST_F(RedisStoreTest, ReserveCompleteReplayConflictMismatchTtl) {
  auto state = Connect(Options());
  auto store = Store(state);
  EXPECT_STREQ(store->backend(), "redis");
  Result<Reservation> r = store->Reserve("alice", "k-1", "POST /orders h1", clock_.Now());
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  ASSERT_EQ(r->state, ReserveState::kReserved);
  const IdempotencyLease lease = r->lease;
  EXPECT_EQ(lease.scope, "alice");
  EXPECT_EQ(lease.key, "k-1");
  EXPECT_NE(lease.token, 0u);

  // The record, as the server holds it: in flight until now + 60 s.
  const int64_t t0 = std::chrono::duration_cast<milliseconds>(
                         clock_.WallNow().time_since_epoch()).count();
  EXPECT_EQ(t0, 1704067200000);  // FakeClock's 2024-01-01T00:00:00Z
  Result<RedisValue> rec =
      state->Command({"HMGET", "{test:idem:5:alice:k-1}", "s", "fp", "exp"});
  ASSERT_TRUE(rec.ok());
  ASSERT_EQ(rec->elements.size(), 3u);
  EXPECT_EQ(rec->elements[0].str, "f");
  EXPECT_EQ(rec->elements[1].str, "POST /orders h1");
  EXPECT_EQ(rec->elements[2].str, std::to_string(t0 + 60000));
  Result<RedisValue> pttl = state->Command({"PTTL", "{test:idem:5:alice:k-1}"});
  EXPECT_GT(pttl->integer, 59000);
  EXPECT_LE(pttl->integer, 60000);

  // While in flight: 409 with retry_after = min(lease left, 1 s).
  clock_.Advance(seconds(10));
  r = store->Reserve("alice", "k-1", "POST /orders h1", clock_.Now());
  ASSERT_EQ(r->state, ReserveState::kInFlight);
  EXPECT_EQ(r->retry_after, seconds(1));
  clock_.Advance(milliseconds(49750));  // 250 ms of the lease left
  r = store->Reserve("alice", "k-1", "POST /orders h1", clock_.Now());
  ASSERT_EQ(r->state, ReserveState::kInFlight);
  EXPECT_EQ(r->retry_after, milliseconds(250));
  // Another fingerprint: 422, in flight or not.
  r = store->Reserve("alice", "k-1", "POST /orders other", clock_.Now());
  EXPECT_EQ(r->state, ReserveState::kFingerprintMismatch);

  ASSERT_TRUE(store->Complete(lease, Created(), clock_.Now()).ok());
  r = store->Reserve("alice", "k-1", "POST /orders h1", clock_.Now());
  ASSERT_EQ(r->state, ReserveState::kReplay);
  ASSERT_NE(r->response, nullptr);
  EXPECT_EQ(r->response->status, 201);
  EXPECT_EQ(r->response->headers, Created().headers);
  EXPECT_EQ(r->response->body, Created().body);
  r = store->Reserve("alice", "k-1", "POST /orders other", clock_.Now());
  EXPECT_EQ(r->state, ReserveState::kFingerprintMismatch);
  // The same key under another scope is another record.
  r = store->Reserve("bob", "k-1", "POST /orders h1", clock_.Now());
  EXPECT_EQ(r->state, ReserveState::kReserved);

  // ttl: replayed until 1 ms before completion + 3600 s, free at it.
  clock_.Advance(seconds(3600) - milliseconds(1));
  EXPECT_EQ(store->Reserve("alice", "k-1", "POST /orders h1", clock_.Now())->state,
            ReserveState::kReplay);
  clock_.Advance(milliseconds(1));
  r = store->Reserve("alice", "k-1", "POST /orders other", clock_.Now());
  EXPECT_EQ(r->state, ReserveState::kReserved);

  const IdempotencyStoreStats st = store->Stats();
  EXPECT_EQ(st.reserved, 3u);
  EXPECT_EQ(st.replayed, 2u);
  EXPECT_EQ(st.in_flight_conflicts, 2u);
  EXPECT_EQ(st.fingerprint_mismatches, 2u);
  EXPECT_EQ(st.completed, 1u);
  EXPECT_EQ(st.expired, 1u);
  EXPECT_EQ(st.entries, 0u);  // gauges live in the server
}

TEST_F(RedisStoreTest, OneRoundTripPerReserveAndPerComplete) {
  auto state = Connect(Options());
  auto store = Store(state);
  // Warm up: SCRIPT LOAD of each script, once per process.
  auto warm = store->Reserve("s", "warm", "f", clock_.Now());
  ASSERT_TRUE(store->Complete(warm->lease, Created(), clock_.Now()).ok());
  uint64_t trips = state->Health().round_trips;
  auto r = store->Reserve("s", "k", "f", clock_.Now());
  EXPECT_EQ(state->Health().round_trips - trips, 1u);
  trips = state->Health().round_trips;
  ASSERT_TRUE(store->Complete(r->lease, Created(), clock_.Now()).ok());
  EXPECT_EQ(state->Health().round_trips - trips, 1u);
  trips = state->Health().round_trips;
  EXPECT_EQ(store->Reserve("s", "k", "f", clock_.Now())->state, ReserveState::kReplay);
  EXPECT_EQ(state->Health().round_trips - trips, 1u);
}

TEST_F(RedisStoreTest, LeaseExpiryReleaseAndRepeatedComplete) {
  auto state = Connect(Options());
  auto store = Store(state);
  auto first = store->Reserve("s", "k", "f", clock_.Now());
  ASSERT_EQ(first->state, ReserveState::kReserved);
  // The lease runs out at exactly +60 s: the key is taken over.
  clock_.Advance(seconds(60) - milliseconds(1));
  EXPECT_EQ(store->Reserve("s", "k", "f", clock_.Now())->state, ReserveState::kInFlight);
  clock_.Advance(milliseconds(1));
  auto second = store->Reserve("s", "k", "f", clock_.Now());
  ASSERT_EQ(second->state, ReserveState::kReserved);
  EXPECT_NE(second->lease.token, first->lease.token);
  // The first holder's late result is refused: nothing stored.
  Status late = store->Complete(first->lease, Created(), clock_.Now());
  EXPECT_TRUE(IsInvalidArgument(late));
  EXPECT_EQ(late.message(),
            "the idempotency lease of key \"k\" is not held any more (released, completed or "
            "expired and taken over)");
  EXPECT_TRUE(IsInvalidArgument(store->Release(first->lease)));
  // An invalid response: refused, the lease stays held.
  StoredResponse bad = Created();
  bad.headers.push_back({"X-Evil", "a\r\nSet-Cookie: x"});
  EXPECT_TRUE(IsInvalidArgument(store->Complete(second->lease, bad, clock_.Now())));
  EXPECT_EQ(store->Reserve("s", "k", "f", clock_.Now())->state, ReserveState::kInFlight);
  // Release frees the key for a retry.
  ASSERT_TRUE(store->Release(second->lease).ok());
  auto third = store->Reserve("s", "k", "f", clock_.Now());
  ASSERT_EQ(third->state, ReserveState::kReserved);
  // A Complete whose reply was lost may be repeated with the same lease.
  ASSERT_TRUE(store->Complete(third->lease, Created(), clock_.Now()).ok());
  ASSERT_TRUE(store->Complete(third->lease, Created(), clock_.Now()).ok());
  EXPECT_EQ(store->Stats().completed, 1u);
  EXPECT_TRUE(IsInvalidArgument(store->Release(third->lease)));  // completed: not held
  EXPECT_EQ(store->Reserve("s", "k", "f", clock_.Now())->state, ReserveState::kReplay);
  // Key checks, as the memory store's.
  EXPECT_EQ(store->Reserve("s", "", "f", clock_.Now()).status().message(),
            "the idempotency key is empty");
  EXPECT_EQ(store->Reserve("s", std::string(256, 'k'), "f", clock_.Now()).status().message(),
            "the idempotency key is longer than 255 characters");
}

TEST_F(RedisStoreTest, ScopesCannotCollide) {
  auto store = Store(Connect(Options()));
  auto a = store->Reserve("a:b", "c", "f", clock_.Now());
  auto b = store->Reserve("a", "b:c", "f", clock_.Now());
  EXPECT_EQ(a->state, ReserveState::kReserved);
  EXPECT_EQ(b->state, ReserveState::kReserved);
}

TEST_F(RedisStoreTest, TwoProcessesShareOneRecord) {
  // Two connections with their own stores and clocks (on the same wall time)
  // stand for two worker processes.
  FakeClock other_clock(TimePoint(seconds(5000)), clock_.WallNow());
  RedisStateOptions o = Options();
  o.clock = &other_clock;
  auto a = Store(Connect(Options()));
  auto b = Store(Connect(o));
  auto ra = a->Reserve("u", "pay-7", "f", clock_.Now());
  ASSERT_EQ(ra->state, ReserveState::kReserved);
  clock_.Advance(seconds(2));
  other_clock.Advance(seconds(2));
  auto rb = b->Reserve("u", "pay-7", "f", other_clock.Now());
  ASSERT_EQ(rb->state, ReserveState::kInFlight);
  EXPECT_EQ(rb->retry_after, seconds(1));
  ASSERT_TRUE(a->Complete(ra->lease, Created(), clock_.Now()).ok());
  rb = b->Reserve("u", "pay-7", "f", other_clock.Now());
  ASSERT_EQ(rb->state, ReserveState::kReplay);
  EXPECT_EQ(rb->response->body, Created().body);
}

TEST_F(RedisStoreTest, ConcurrentSameKeyReservesExactlyOnce) {
  constexpr int kThreads = 8;
  constexpr int kTries = 25;
  std::atomic<int> reserved{0}, in_flight{0}, other{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      auto store = Store(Connect(Options()));  // one connection per "worker"
      for (int i = 0; i < kTries; ++i) {
        auto r = store->Reserve("u", "same", "f", clock_.Now());
        if (!r.ok()) {
          ++other;
        } else if (r->state == ReserveState::kReserved) {
          ++reserved;
        } else if (r->state == ReserveState::kInFlight) {
          ++in_flight;
        } else {
          ++other;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(reserved.load(), 1);
  EXPECT_EQ(in_flight.load(), kThreads * kTries - 1);
  EXPECT_EQ(other.load(), 0);
}

TEST_F(RedisStoreTest, FailsClosedWhileDownAndWorksAfterARestart) {
  auto state = Connect(Options());
  auto store = Store(state);
  auto r = store->Reserve("u", "k", "f", clock_.Now());
  ASSERT_EQ(r->state, ReserveState::kReserved);
  server_.Stop();
  // Down: a distinct status, no exception, nothing decided.
  Status complete = store->Complete(r->lease, Created(), clock_.Now());
  EXPECT_TRUE(IsStateUnavailable(complete)) << complete.ToString();
  Result<Reservation> down = store->Reserve("u", "k2", "f", clock_.Now());
  ASSERT_FALSE(down.ok());
  EXPECT_EQ(down.status().code(), StatusCode::kStateUnavailable);
  EXPECT_TRUE(IsStateUnavailable(store->Release(r->lease)));
  // Back (empty: no persistence), after the reconnect backoff.
  ASSERT_EQ(server_.Start(), "");
  clock_.Advance(seconds(1));
  auto again = store->Reserve("u", "k2", "f", clock_.Now());
  ASSERT_TRUE(again.ok()) << again.status().ToString();
  EXPECT_EQ(again->state, ReserveState::kReserved);
  // The scripts were loaded again through the NOSCRIPT fallback.
  ASSERT_TRUE(store->Complete(again->lease, Created(), clock_.Now()).ok());
  EXPECT_EQ(store->Reserve("u", "k2", "f", clock_.Now())->state, ReserveState::kReplay);
}

TEST_F(RedisStoreTest, ARestartBetweenCallsCostsNoFailedOperation) {
  auto state = Connect(Options());
  auto store = Store(state);
  auto r = store->Reserve("u", "k", "f", clock_.Now());
  ASSERT_EQ(r->state, ReserveState::kReserved);
  server_.Stop();
  ASSERT_EQ(server_.Start(), "");  // empty again: no persistence
  // Complete meets the dead connection, reconnects at once and runs on the
  // new server, which holds no lease: "not held", not "unavailable".
  Status s = store->Complete(r->lease, Created(), clock_.Now());
  EXPECT_TRUE(IsInvalidArgument(s)) << s.ToString();
  EXPECT_EQ(state->Health().reconnects, 1u);
  // A plain command is not retried: only scripts marked retry-safe are.
  server_.Stop();
  ASSERT_EQ(server_.Start(), "");
  EXPECT_TRUE(IsStateUnavailable(state->Command({"PING"}).status()));
  EXPECT_TRUE(state->Command({"PING"}).ok());
}

class RedisPersistentStoreTest : public RedisStoreTest {
 protected:
  std::vector<std::string> ServerArgs() const override {
    return {"--appendonly", "yes", "--appendfsync", "always", "--dir", dir_};
  }
  void SetUp() override {
    char tmpl[] = "/tmp/mulligan-redis-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    RedisStoreTest::SetUp();
  }
  void TearDown() override {
    server_.Stop();
    (void)std::system(("rm -rf '" + dir_ + "'").c_str());
  }
  std::string dir_;
};

TEST_F(RedisPersistentStoreTest, AnAcknowledgedCompletionSurvivesAKill) {
  auto state = Connect(Options());
  auto store = Store(state);
  auto r = store->Reserve("u", "k", "f", clock_.Now());
  ASSERT_EQ(r->state, ReserveState::kReserved);
  ASSERT_TRUE(store->Complete(r->lease, Created(), clock_.Now()).ok());
  auto in_flight = store->Reserve("u", "k-running", "f", clock_.Now());
  ASSERT_EQ(in_flight->state, ReserveState::kReserved);
  server_.Stop();  // SIGKILL
  ASSERT_EQ(server_.Start(), "");
  // The first script after the restart finds the dead connection and is sent
  // again at once on a fresh one (the scripts are retry-safe): no 503.
  Result<Reservation> first = store->Reserve("u", "k", "f", clock_.Now());
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_EQ(state->Health().reconnects, 1u);
  EXPECT_EQ(state->Health().failures, 1u);
  ASSERT_EQ(first->state, ReserveState::kReplay);
  EXPECT_EQ(first->response->body, Created().body);
  // The in-flight record survived too: its handler may still be running, so
  // the key answers 409 until the lease runs out (never a second run).
  EXPECT_EQ(store->Reserve("u", "k-running", "f", clock_.Now())->state,
            ReserveState::kInFlight);
}

}  // namespace
}  // namespace redis_test
}  // namespace mulligan
