// tests/core/idempotency_store_test.cc — IdempotencyStore and
// ParseIdempotencyKey: the semantics of DESIGN.md section 4 (reserve, replay,
// 409, 422, release, leases, ttl with a FakeClock), the bounds (count, bytes,
// in-flight never evicted), concurrency, and flat memory over 1,000,000 keys.

#include "mulligan/idempotency/store.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/http/client.h"

// AddressSanitizer: GCC defines __SANITIZE_ADDRESS__, clang has the feature.
#if defined(__SANITIZE_ADDRESS__)
#define MULLIGAN_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MULLIGAN_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef MULLIGAN_TEST_UNDER_ASAN
#define MULLIGAN_TEST_UNDER_ASAN 0
#endif
#if MULLIGAN_TEST_UNDER_ASAN
// From <sanitizer/allocator_interface.h> of compiler-rt, which GCC does not
// install; GCC's libasan and clang's runtime both export it.
extern "C" size_t __sanitizer_get_current_allocated_bytes(void);
#endif

namespace mulligan {
namespace {

using std::chrono::hours;
using std::chrono::milliseconds;
using std::chrono::seconds;

std::unique_ptr<IdempotencyStore> MakeStore(const IdempotencyStoreOptions& options = {}) {
  auto store = IdempotencyStore::Create(options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

StoredResponse Response(int status, std::string body) {
  StoredResponse r;
  r.status = status;
  r.headers = {{"Content-Type", "application/json"}};
  r.body = std::move(body);
  return r;
}

// --- ParseIdempotencyKey -----------------------------------------------------

TEST(ParseIdempotencyKeyTest, AcceptsStructuredFieldsStrings) {
  EXPECT_EQ(ParseIdempotencyKey("\"8e03978e-40d5-43e8-bc93-6894a57f9324\"").value(),
            "8e03978e-40d5-43e8-bc93-6894a57f9324");
  EXPECT_EQ(ParseIdempotencyKey("  \"a b\"\t").value(), "a b");
  EXPECT_EQ(ParseIdempotencyKey(R"("say \"hi\" \\ ok")").value(), R"(say "hi" \ ok)");
}

TEST(ParseIdempotencyKeyTest, AcceptsBareTokensForStripeStyleClients) {
  EXPECT_EQ(ParseIdempotencyKey("8e03978e-40d5-43e8-bc93-6894a57f9324").value(),
            "8e03978e-40d5-43e8-bc93-6894a57f9324");
  EXPECT_EQ(ParseIdempotencyKey("KG5LxwFBepaKHyUD").value(), "KG5LxwFBepaKHyUD");
  EXPECT_EQ(ParseIdempotencyKey(" order 42 ").value(), "order 42");
}

TEST(ParseIdempotencyKeyTest, RejectsMalformedValues) {
  for (const char* bad : {"", "   ", "\"\"", "\"abc", "\"abc\"x", "\"a\\x\"", "\"a\\\"",
                          "ab\"c", "a\\b", "caf\xc3\xa9", "\"caf\xc3\xa9\"", "a\x01"}) {
    Result<std::string> r = ParseIdempotencyKey(bad);
    EXPECT_FALSE(r.ok()) << "accepted: " << bad;
    if (!r.ok()) {
      EXPECT_TRUE(IsInvalidArgument(r.status()));
    }
  }
}

TEST(ParseIdempotencyKeyTest, EnforcesTheMaximumLength) {
  const std::string ok(255, 'k');
  EXPECT_TRUE(ParseIdempotencyKey(ok).ok());
  EXPECT_TRUE(ParseIdempotencyKey("\"" + ok + "\"").ok());
  EXPECT_FALSE(ParseIdempotencyKey(ok + "k").ok());
  EXPECT_FALSE(ParseIdempotencyKey("\"" + ok + "k\"").ok());
  EXPECT_TRUE(ParseIdempotencyKey("abcd", 4).ok());
  EXPECT_FALSE(ParseIdempotencyKey("abcde", 4).ok());
}

// What mulligan's own client sends (a bare UUID v4) is what the server parses.
TEST(ParseIdempotencyKeyTest, RoundTripsTheClientsKeys) {
  for (int i = 0; i < 100; ++i) {
    const std::string key = NewIdempotencyKey();
    EXPECT_EQ(ParseIdempotencyKey(key).value(), key);
  }
}

// --- Options -----------------------------------------------------------------

TEST(IdempotencyStoreTest, RejectsBadOptions) {
  auto bad = [](auto mutate) {
    IdempotencyStoreOptions o;
    mutate(o);
    return !IdempotencyStore::Create(o).ok();
  };
  EXPECT_TRUE(bad([](IdempotencyStoreOptions& o) { o.ttl = Duration::zero(); }));
  EXPECT_TRUE(bad([](IdempotencyStoreOptions& o) { o.lease = -seconds(1); }));
  EXPECT_TRUE(bad([](IdempotencyStoreOptions& o) { o.in_flight_retry_after = -seconds(1); }));
  EXPECT_TRUE(bad([](IdempotencyStoreOptions& o) { o.max_entries = 0; }));
  EXPECT_TRUE(bad([](IdempotencyStoreOptions& o) { o.max_bytes = 0; }));
  EXPECT_TRUE(bad([](IdempotencyStoreOptions& o) { o.max_key_length = 0; }));
  EXPECT_TRUE(bad([](IdempotencyStoreOptions& o) { o.shards = 0; }));
  EXPECT_TRUE(bad([](IdempotencyStoreOptions& o) { o.shards = 1025; }));
  EXPECT_FALSE(bad([](IdempotencyStoreOptions& o) { o.ttl = Duration::max(); }));
}

TEST(IdempotencyStoreTest, RejectsBadKeys) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.max_key_length = 8;
  auto store = MakeStore(options);
  for (std::string_view key : {std::string_view(""), std::string_view("123456789"),
                               std::string_view("a\nb"), std::string_view("a\0b", 3)}) {
    Result<Reservation> r = store->Reserve("", key, "fp", clock.Now());
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(IsInvalidArgument(r.status())) << r.status().ToString();
  }
}

// --- Semantics ---------------------------------------------------------------

TEST(IdempotencyStoreTest, ReservesThenReplaysTheStoredResponse) {
  FakeClock clock;
  auto store = MakeStore();
  Reservation first = store->Reserve("", "k1", "POST /charges", clock.Now()).value();
  ASSERT_EQ(first.state, ReserveState::kReserved);
  EXPECT_NE(first.lease.token, 0u);
  EXPECT_EQ(first.lease.key, "k1");
  ASSERT_TRUE(store->Complete(first.lease, Response(201, "{\"id\":1}"), clock.Now()).ok());

  Reservation again = store->Reserve("", "k1", "POST /charges", clock.Now()).value();
  ASSERT_EQ(again.state, ReserveState::kReplay);
  ASSERT_NE(again.response, nullptr);
  EXPECT_EQ(again.response->status, 201);
  EXPECT_EQ(again.response->body, "{\"id\":1}");
  ASSERT_EQ(again.response->headers.size(), 1u);
  EXPECT_EQ(again.response->headers[0].first, "Content-Type");

  IdempotencyStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 1u);
  EXPECT_EQ(stats.in_flight, 0u);
  EXPECT_EQ(stats.reserved, 1u);
  EXPECT_EQ(stats.completed, 1u);
  EXPECT_EQ(stats.replayed, 1u);
}

TEST(IdempotencyStoreTest, InFlightGives409HintCappedAtTheConfiguredValue) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.lease = seconds(10);
  options.in_flight_retry_after = seconds(1);
  auto store = MakeStore(options);
  Reservation first = store->Reserve("", "k", "fp", clock.Now()).value();
  ASSERT_EQ(first.state, ReserveState::kReserved);
  Reservation second = store->Reserve("", "k", "fp", clock.Now()).value();
  EXPECT_EQ(second.state, ReserveState::kInFlight);
  EXPECT_EQ(second.retry_after, seconds(1));
  clock.Advance(milliseconds(9700));
  Reservation third = store->Reserve("", "k", "fp", clock.Now()).value();
  EXPECT_EQ(third.state, ReserveState::kInFlight);
  EXPECT_EQ(third.retry_after, milliseconds(300));  // what is left of the lease
  EXPECT_EQ(store->Stats().in_flight_conflicts, 2u);
}

TEST(IdempotencyStoreTest, DifferentFingerprintIsAMismatchInFlightAndCompleted) {
  FakeClock clock;
  auto store = MakeStore();
  Reservation first = store->Reserve("", "k", "body-a", clock.Now()).value();
  EXPECT_EQ(store->Reserve("", "k", "body-b", clock.Now()).value().state,
            ReserveState::kFingerprintMismatch);
  ASSERT_TRUE(store->Complete(first.lease, Response(200, "a"), clock.Now()).ok());
  EXPECT_EQ(store->Reserve("", "k", "body-b", clock.Now()).value().state,
            ReserveState::kFingerprintMismatch);
  EXPECT_EQ(store->Reserve("", "k", "body-a", clock.Now()).value().state, ReserveState::kReplay);
  EXPECT_EQ(store->Stats().fingerprint_mismatches, 2u);
}

TEST(IdempotencyStoreTest, ReleaseFreesTheKeyForARetry) {
  FakeClock clock;
  auto store = MakeStore();
  Reservation first = store->Reserve("", "k", "fp", clock.Now()).value();
  ASSERT_TRUE(store->Release(first.lease).ok());
  EXPECT_EQ(store->Stats().entries, 0u);
  Reservation retry = store->Reserve("", "k", "fp", clock.Now()).value();
  ASSERT_EQ(retry.state, ReserveState::kReserved);
  EXPECT_NE(retry.lease.token, first.lease.token);
  // The old lease is dead: neither Release nor Complete may touch the new one.
  EXPECT_TRUE(IsInvalidArgument(store->Release(first.lease)));
  EXPECT_TRUE(IsInvalidArgument(store->Complete(first.lease, Response(200, ""), clock.Now())));
  EXPECT_TRUE(store->Complete(retry.lease, Response(200, "ok"), clock.Now()).ok());
  EXPECT_TRUE(IsInvalidArgument(store->Release(retry.lease)));  // completed already
}

TEST(IdempotencyStoreTest, AnExpiredLeaseIsTakenOver) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.lease = seconds(30);
  auto store = MakeStore(options);
  Reservation crashed = store->Reserve("", "k", "fp", clock.Now()).value();
  clock.Advance(seconds(29));
  EXPECT_EQ(store->Reserve("", "k", "fp", clock.Now()).value().state, ReserveState::kInFlight);
  clock.Advance(seconds(1));
  Reservation takeover = store->Reserve("", "k", "fp", clock.Now()).value();
  ASSERT_EQ(takeover.state, ReserveState::kReserved);
  // The presumed-dead handler finishing late cannot overwrite the new run.
  EXPECT_FALSE(store->Complete(crashed.lease, Response(200, "late"), clock.Now()).ok());
  ASSERT_TRUE(store->Complete(takeover.lease, Response(200, "new"), clock.Now()).ok());
  EXPECT_EQ(store->Reserve("", "k", "fp", clock.Now()).value().response->body, "new");
}

TEST(IdempotencyStoreTest, ReplaysJustBeforeTheTtlAndRunsAfreshJustAfter) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.ttl = hours(24);
  auto store = MakeStore(options);
  Reservation first = store->Reserve("", "k", "fp", clock.Now()).value();
  clock.Advance(seconds(5));  // the handler's run time does not count
  ASSERT_TRUE(store->Complete(first.lease, Response(200, "one"), clock.Now()).ok());

  clock.Advance(hours(24) - milliseconds(1));
  Reservation before = store->Reserve("", "k", "fp", clock.Now()).value();
  ASSERT_EQ(before.state, ReserveState::kReplay);
  EXPECT_EQ(before.response->body, "one");

  clock.Advance(milliseconds(1));
  Reservation after = store->Reserve("", "k", "fp", clock.Now()).value();
  EXPECT_EQ(after.state, ReserveState::kReserved);
  EXPECT_EQ(store->Stats().expired, 1u);
}

TEST(IdempotencyStoreTest, ScopesKeepUsersApart) {
  FakeClock clock;
  auto store = MakeStore();
  Reservation alice = store->Reserve("alice", "k", "fp", clock.Now()).value();
  ASSERT_TRUE(store->Complete(alice.lease, Response(200, "alice's"), clock.Now()).ok());
  EXPECT_EQ(store->Reserve("alice", "k", "fp", clock.Now()).value().state, ReserveState::kReplay);
  EXPECT_EQ(store->Reserve("bob", "k", "fp", clock.Now()).value().state, ReserveState::kReserved);
  // "a\0b" + "c" and "a" + "b\0c" cannot collide: keys never hold NUL.
  EXPECT_EQ(store->Reserve(std::string_view("x\0y", 3), "z", "fp", clock.Now()).value().state,
            ReserveState::kReserved);
}

TEST(IdempotencyStoreTest, SweepRemovesExpiredEntries) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.ttl = seconds(10);
  options.lease = seconds(5);
  auto store = MakeStore(options);
  for (int i = 0; i < 100; ++i) {
    Reservation r = store->Reserve("", "k" + std::to_string(i), "fp", clock.Now()).value();
    if (i % 2 == 0) {
      ASSERT_TRUE(store->Complete(r.lease, Response(200, "x"), clock.Now()).ok());
    }
  }
  EXPECT_EQ(store->Stats().entries, 100u);
  clock.Advance(seconds(6));
  store->Sweep(clock.Now());
  EXPECT_EQ(store->Stats().entries, 50u);  // the leases ran out
  clock.Advance(seconds(4));
  store->Sweep(clock.Now());
  IdempotencyStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 0u);
  EXPECT_EQ(stats.bytes, 0u);
  EXPECT_EQ(stats.expired, 100u);
}

// --- Bounds ------------------------------------------------------------------

TEST(IdempotencyStoreTest, EvictsTheOldestCompletedEntryAtTheCountBound) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.max_entries = 3;
  options.shards = 1;
  auto store = MakeStore(options);
  for (const char* key : {"a", "b", "c", "d"}) {
    Reservation r = store->Reserve("", key, "fp", clock.Now()).value();
    ASSERT_EQ(r.state, ReserveState::kReserved) << key;
    ASSERT_TRUE(store->Complete(r.lease, Response(200, key), clock.Now()).ok());
    clock.Advance(seconds(1));
  }
  IdempotencyStoreStats stats = store->Stats();
  EXPECT_EQ(stats.entries, 3u);
  EXPECT_EQ(stats.evicted, 1u);
  EXPECT_EQ(store->Reserve("", "b", "fp", clock.Now()).value().state, ReserveState::kReplay);
  EXPECT_EQ(store->Reserve("", "a", "fp", clock.Now()).value().state, ReserveState::kReserved);
}

TEST(IdempotencyStoreTest, NeverEvictsInFlightEntriesAndSaysWhenFull) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.max_entries = 4;
  options.shards = 1;
  auto store = MakeStore(options);
  std::vector<Reservation> held;
  for (int i = 0; i < 4; ++i) {
    held.push_back(store->Reserve("", "k" + std::to_string(i), "fp", clock.Now()).value());
  }
  Result<Reservation> full = store->Reserve("", "new", "fp", clock.Now());
  ASSERT_FALSE(full.ok());
  EXPECT_EQ(full.status().code(), StatusCode::kUnavailable);
  EXPECT_NE(full.status().message().find("in-flight"), std::string::npos);
  EXPECT_EQ(store->Stats().rejected_full, 1u);
  // Repeats of held keys still get their answer.
  EXPECT_EQ(store->Reserve("", "k0", "fp", clock.Now()).value().state, ReserveState::kInFlight);
  // Completing one makes it evictable, so a new key fits again.
  ASSERT_TRUE(store->Complete(held[0].lease, Response(200, "x"), clock.Now()).ok());
  EXPECT_EQ(store->Reserve("", "new", "fp", clock.Now()).value().state, ReserveState::kReserved);
  EXPECT_EQ(store->Stats().in_flight, 4u);
}

TEST(IdempotencyStoreTest, StaysWithinTheByteBound) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.max_bytes = 64 * 1024;
  options.shards = 2;
  auto store = MakeStore(options);
  const std::string body(1000, 'b');
  for (int i = 0; i < 1000; ++i) {
    Reservation r = store->Reserve("", "key-" + std::to_string(i), "fp", clock.Now()).value();
    ASSERT_EQ(r.state, ReserveState::kReserved);
    ASSERT_TRUE(store->Complete(r.lease, Response(200, body), clock.Now()).ok());
    ASSERT_LE(store->Stats().bytes, options.max_bytes);
  }
  IdempotencyStoreStats stats = store->Stats();
  EXPECT_GT(stats.entries, 30u);
  EXPECT_LT(stats.entries, 64u);
  EXPECT_GT(stats.evicted, 900u);
}

TEST(IdempotencyStoreTest, AResponseLargerThanTheBudgetReleasesTheKey) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.max_bytes = 4096;
  options.shards = 1;
  auto store = MakeStore(options);
  Reservation r = store->Reserve("", "k", "fp", clock.Now()).value();
  Status s = store->Complete(r.lease, Response(200, std::string(10000, 'x')), clock.Now());
  EXPECT_EQ(s.code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->Stats().entries, 0u);
  EXPECT_EQ(store->Reserve("", "k", "fp", clock.Now()).value().state, ReserveState::kReserved);
}

// Found by tests/fuzz/fuzz_idempotency_store: a key whose entry alone could
// never fit the shard's byte budget (a long scope or fingerprint) first
// evicted every stored response of the shard, then was refused as "full of
// in-flight requests (0 in this shard)".
TEST(IdempotencyStoreTest, AnEntryLargerThanTheBudgetIsRefusedWithoutEvictingAnything) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.max_bytes = 4096;
  options.shards = 1;
  auto store = MakeStore(options);
  for (const char* key : {"a", "b", "c"}) {
    Reservation r = store->Reserve("", key, "fp", clock.Now()).value();
    ASSERT_TRUE(store->Complete(r.lease, Response(201, key), clock.Now()).ok());
  }
  Result<Reservation> big = store->Reserve("", "k", std::string(5000, 'f'), clock.Now());
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), StatusCode::kUnavailable);
  // The id "\0k" is in-place (short-string storage); the fingerprint's heap
  // buffer is counted whole: 5000 characters and the terminating NUL.
  const size_t needs = IdempotencyEntryOverhead() + 5001;
  EXPECT_EQ(big.status().message(),
            "the idempotency entry of this key needs " + std::to_string(needs) +
                " bytes (scope, key, fingerprint and overhead), more than the store's budget "
                "of 4096 bytes per shard (max_bytes / shards)");
  EXPECT_EQ(store->Stats().evicted, 0u);
  EXPECT_EQ(store->Stats().rejected_full, 0u);
  for (const char* key : {"a", "b", "c"}) {
    Reservation replay = store->Reserve("", key, "fp", clock.Now()).value();
    ASSERT_EQ(replay.state, ReserveState::kReplay) << key;
    EXPECT_EQ(replay.response->body, key);
  }
}

TEST(IdempotencyStoreTest, RejectsResponsesThatCannotBeReplayedAndKeepsTheLease) {
  FakeClock clock;
  auto store = MakeStore();
  Reservation r = store->Reserve("", "k", "fp", clock.Now()).value();
  ASSERT_EQ(r.state, ReserveState::kReserved);
  auto expect_rejected = [&](StoredResponse response, const std::string& fragment) {
    Status s = store->Complete(r.lease, std::move(response), clock.Now());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << fragment;
    EXPECT_NE(s.message().find(fragment), std::string::npos) << s.message();
    // Nothing stored, and the key is still held by the same lease.
    EXPECT_EQ(store->Reserve("", "k", "fp", clock.Now()).value().state, ReserveState::kInFlight);
  };
  for (int status : {0, -1, 99, 600, 1000, 2147483647}) {
    expect_rejected(Response(status, "x"), "status must be in [100, 599], got " +
                                               std::to_string(status));
  }
  const std::vector<std::string> bad_names = {
      "", "X-A\r\nSet-Cookie: evil=1", "X A", "X:A", "X-A\n", std::string("X\0A", 3),
      "caf\xc3\xa9", "(x)", "x\"y", "a/b"};
  for (const std::string& name : bad_names) {
    StoredResponse response = Response(200, "x");
    response.headers.emplace_back(name, "v");
    expect_rejected(std::move(response), "header field 1 has an invalid name");
  }
  for (const std::string& value :
       {std::string("v\r\nX-B: 1"), std::string("v\r"), std::string("v\n"),
        std::string("v\0w", 3)}) {
    StoredResponse response = Response(200, "x");
    response.headers.emplace_back("X-A", value);
    expect_rejected(std::move(response), "CR, LF or NUL");
  }
  // The message escapes what it quotes.
  StoredResponse injected = Response(200, "x");
  injected.headers = {{"X-A\r\nSet-Cookie: evil=1", "v"}};
  Status s = store->Complete(r.lease, std::move(injected), clock.Now());
  EXPECT_NE(s.message().find("\"X-A\\x0d\\x0aSet-Cookie: evil=1\""), std::string::npos)
      << s.message();
  EXPECT_EQ(store->Stats().completed, 0u);

  // The lease is still valid: it can be released...
  ASSERT_TRUE(store->Release(r.lease).ok());
  // ...or, on a new reservation, completed with a valid response. The edges
  // of the ranges and every tchar are accepted; values may hold tabs,
  // spaces, obs-text and other bytes but CR, LF and NUL.
  for (int status : {100, 599}) {
    Reservation ok = store->Reserve("", "edge" + std::to_string(status), "", clock.Now()).value();
    StoredResponse response = Response(status, "");
    response.headers.emplace_back("!#$%&'*+-.^_`|~09azAZ", "a\tb c\x7f\xff");
    response.headers.emplace_back("X-Empty", "");
    ASSERT_TRUE(store->Complete(ok.lease, std::move(response), clock.Now()).ok());
    Reservation replay =
        store->Reserve("", "edge" + std::to_string(status), "", clock.Now()).value();
    ASSERT_EQ(replay.state, ReserveState::kReplay);
    EXPECT_EQ(replay.response->status, status);
    EXPECT_EQ(replay.response->headers[1].second, "a\tb c\x7f\xff");
  }
}

// The memory the process holds for its live data, in bytes (0 if unknown).
// Normally the resident set size from /proc/self/statm. Under
// AddressSanitizer the resident set also holds the allocator's quarantine
// (freed blocks kept poisoned, up to 256 MiB by default, to catch
// use-after-free), which grows with every eviction and is not memory the
// store keeps: there it is ASan's own count of bytes in live allocations,
// which excludes the quarantine.
size_t MemoryInUse() {
#if MULLIGAN_TEST_UNDER_ASAN
  return __sanitizer_get_current_allocated_bytes();
#else
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return 0;
  unsigned long size = 0, resident = 0;
  const int n = std::fscanf(f, "%lu %lu", &size, &resident);
  std::fclose(f);
  return n == 2 ? resident * 4096 : 0;
#endif
}

TEST(IdempotencyStoreTest, AMillionDistinctKeysStayWithinTheBoundAndMemoryIsFlat) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.max_entries = 10000;
  auto store = MakeStore(options);
  const std::string body(200, 'r');
  char key[64];
  size_t memory_at_100k = 0;
  for (int i = 0; i < 1000000; ++i) {
    std::snprintf(key, sizeof key, "3f1c9a2e-0000-4000-8000-%012d", i);
    Result<Reservation> r = store->Reserve("tenant", key, "POST /orders", clock.Now());
    ASSERT_TRUE(r.ok()) << r.status().ToString();
    ASSERT_EQ(r->state, ReserveState::kReserved);
    StoredResponse response;
    response.status = 201;
    response.body = body;
    ASSERT_TRUE(store->Complete(r->lease, std::move(response), clock.Now()).ok());
    if (i % 100000 == 0) {
      ASSERT_LE(store->Stats().entries, 10000u);
    }
    if (i == 100000) memory_at_100k = MemoryInUse();
  }
  const size_t memory_end = MemoryInUse();
  IdempotencyStoreStats stats = store->Stats();
  EXPECT_LE(stats.entries, 10000u);
  EXPECT_GE(stats.entries, 9000u);
  EXPECT_EQ(stats.evicted, 1000000u - stats.entries);
  // Flat: the last 900,000 keys added no more than 2 MiB of memory in use.
  if (memory_at_100k != 0) {
    EXPECT_LT(memory_end, memory_at_100k + (size_t{2} << 20))
        << "memory in use at 100k keys " << memory_at_100k << ", at 1M keys " << memory_end;
  }
}

// --- Concurrency -------------------------------------------------------------

TEST(IdempotencyStoreTest, ConcurrentReservesOfOneKeyRunOnce) {
  FakeClock clock;
  auto store = MakeStore();
  constexpr int kThreads = 8;
  constexpr int kRounds = 200;
  for (int round = 0; round < kRounds; ++round) {
    const std::string key = "key-" + std::to_string(round);
    std::atomic<int> reserved{0}, replayed{0}, in_flight{0}, other{0};
    std::atomic<bool> go{false};
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t) {
      threads.emplace_back([&] {
        while (!go.load()) std::this_thread::yield();
        Result<Reservation> r = store->Reserve("", key, "fp", clock.Now());
        if (!r.ok()) {
          ++other;
        } else if (r->state == ReserveState::kReserved) {
          ++reserved;
          if (!store->Complete(r->lease, Response(200, "once"), clock.Now()).ok()) ++other;
        } else if (r->state == ReserveState::kReplay) {
          ++replayed;
        } else if (r->state == ReserveState::kInFlight) {
          ++in_flight;
        } else {
          ++other;
        }
      });
    }
    go = true;
    for (std::thread& t : threads) t.join();
    ASSERT_EQ(reserved.load(), 1);
    ASSERT_EQ(other.load(), 0);
    ASSERT_EQ(reserved + replayed + in_flight, kThreads);
  }
  EXPECT_EQ(store->Stats().reserved, static_cast<uint64_t>(kRounds));
}

TEST(IdempotencyStoreTest, ManyThreadsOnDistinctKeysKeepTheAccounting) {
  FakeClock clock;
  IdempotencyStoreOptions options;
  options.max_entries = 1000;
  auto store = MakeStore(options);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 20000; ++i) {
        const std::string key = std::to_string(t) + "-" + std::to_string(i);
        Result<Reservation> r = store->Reserve("", key, "fp", clock.Now());
        if (!r.ok() || r->state != ReserveState::kReserved) continue;
        if (i % 3 == 0) {
          (void)store->Release(r->lease);
        } else {
          (void)store->Complete(r->lease, Response(200, "b"), clock.Now());
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  IdempotencyStoreStats stats = store->Stats();
  EXPECT_LE(stats.entries, 1000u);
  EXPECT_EQ(stats.in_flight, 0u);
  EXPECT_EQ(stats.reserved, stats.completed + stats.released);
  EXPECT_EQ(stats.completed, stats.entries + stats.evicted);
}

}  // namespace
}  // namespace mulligan
