// The idempotency store's documented bounds (store.h), each at the bound, one
// step inside and one outside: max_key_length, max_entries, max_bytes, the
// lease, the ttl and in_flight_retry_after; and a second, independent check
// of the fingerprint rule (a different request under a used key is a 422,
// never a replay or a 409, and never runs or changes anything).
//
// Byte budgets are computed from IdempotencyEntryOverhead() (the documented
// per-entry cost) with keys, scopes and fingerprints short enough to live in
// std::string's inline buffer, so an in-flight entry costs exactly that
// overhead. Shards are set to 1 so the bounds are the shard's.
#include "mulligan/idempotency/store.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mulligan/base/clock.h"

namespace mulligan {
namespace {

using std::chrono::hours;
using std::chrono::nanoseconds;
using std::chrono::seconds;

constexpr nanoseconds kStep(1);

std::unique_ptr<IdempotencyStore> MakeStore(IdempotencyStoreOptions options) {
  options.shards = 1;
  auto store = IdempotencyStore::Create(options);
  EXPECT_TRUE(store.ok()) << store.status().ToString();
  return std::move(store).value();
}

StoredResponse Response(std::string body) {
  StoredResponse r;
  r.status = 201;
  r.body = std::move(body);
  return r;
}

ReserveState StateOf(IdempotencyStore& store, const std::string& key, const std::string& print,
                     TimePoint now) {
  Result<Reservation> r = store.Reserve("", key, print, now);
  EXPECT_TRUE(r.ok()) << r.status().ToString();
  return r.ok() ? r->state : ReserveState::kReserved;
}

// --- max_key_length ------------------------------------------------------------

TEST(IdempotencyBoundsTest, AKeyOfExactlyMaxKeyLengthIsAcceptedAndOneMoreIsNot) {
  IdempotencyStoreOptions o;
  o.max_key_length = 12;
  auto store = MakeStore(o);
  const TimePoint t = FakeClock().Now();
  EXPECT_TRUE(store->Reserve("", std::string(11, 'k'), "fp", t).ok());
  EXPECT_TRUE(store->Reserve("", std::string(12, 'k'), "fp", t).ok());
  Result<Reservation> over = store->Reserve("", std::string(13, 'k'), "fp", t);
  ASSERT_FALSE(over.ok());
  EXPECT_TRUE(IsInvalidArgument(over.status()));
  EXPECT_NE(over.status().message().find("12"), std::string::npos) << over.status().message();
}

TEST(IdempotencyBoundsTest, TheDefaultMaxKeyLengthIs255) {
  auto store = MakeStore(IdempotencyStoreOptions{});
  const TimePoint t = FakeClock().Now();
  EXPECT_TRUE(store->Reserve("", std::string(255, 'k'), "fp", t).ok());
  EXPECT_FALSE(store->Reserve("", std::string(256, 'k'), "fp", t).ok());
}

// --- max_entries -----------------------------------------------------------------

TEST(IdempotencyBoundsTest, MaxEntriesInFlightFitAndTheNextIsRefused) {
  IdempotencyStoreOptions o;
  o.max_entries = 5;
  auto store = MakeStore(o);
  const TimePoint t = FakeClock().Now();
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(StateOf(*store, "k" + std::to_string(i), "fp", t), ReserveState::kReserved) << i;
  }
  EXPECT_EQ(store->Stats().entries, 5u);
  Result<Reservation> sixth = store->Reserve("", "k5", "fp", t);
  ASSERT_FALSE(sixth.ok());
  EXPECT_EQ(sixth.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(store->Stats().rejected_full, 1u);
  EXPECT_EQ(store->Stats().evicted, 0u);
}

TEST(IdempotencyBoundsTest, AtMaxEntriesANewKeyEvictsExactlyTheOldestCompletedOne) {
  IdempotencyStoreOptions o;
  o.max_entries = 2;
  auto store = MakeStore(o);
  FakeClock clock;
  for (const char* key : {"a", "b"}) {
    Reservation r = store->Reserve("", key, "fp", clock.Now()).value();
    ASSERT_TRUE(store->Complete(r.lease, Response(key), clock.Now()).ok());
    clock.Advance(seconds(1));
  }
  EXPECT_EQ(store->Stats().evicted, 0u);  // at the bound: nothing evicted yet
  EXPECT_EQ(StateOf(*store, "c", "fp", clock.Now()), ReserveState::kReserved);
  EXPECT_EQ(store->Stats().evicted, 1u);
  EXPECT_EQ(store->Stats().entries, 2u);
  EXPECT_EQ(StateOf(*store, "b", "fp", clock.Now()), ReserveState::kReplay);
}

// --- max_bytes ---------------------------------------------------------------------

TEST(IdempotencyBoundsTest, InFlightEntriesFillTheByteBoundExactly) {
  const size_t entry = IdempotencyEntryOverhead();
  const TimePoint t = FakeClock().Now();
  {
    // Exactly three entries' worth: three fit, the fourth is refused.
    IdempotencyStoreOptions o;
    o.max_bytes = 3 * entry;
    auto store = MakeStore(o);
    for (const char* key : {"a", "b", "c"}) {
      EXPECT_EQ(StateOf(*store, key, "fp", t), ReserveState::kReserved) << key;
    }
    EXPECT_EQ(store->Stats().bytes, 3 * entry);
    EXPECT_FALSE(store->Reserve("", "d", "fp", t).ok());
  }
  {
    // One byte less: the third no longer fits.
    IdempotencyStoreOptions o;
    o.max_bytes = 3 * entry - 1;
    auto store = MakeStore(o);
    EXPECT_EQ(StateOf(*store, "a", "fp", t), ReserveState::kReserved);
    EXPECT_EQ(StateOf(*store, "b", "fp", t), ReserveState::kReserved);
    Result<Reservation> c = store->Reserve("", "c", "fp", t);
    ASSERT_FALSE(c.ok());
    EXPECT_EQ(c.status().code(), StatusCode::kUnavailable);
  }
  {
    // One byte more: still three, with a byte to spare.
    IdempotencyStoreOptions o;
    o.max_bytes = 3 * entry + 1;
    auto store = MakeStore(o);
    for (const char* key : {"a", "b", "c"}) {
      EXPECT_EQ(StateOf(*store, key, "fp", t), ReserveState::kReserved) << key;
    }
    EXPECT_FALSE(store->Reserve("", "d", "fp", t).ok());
  }
}

TEST(IdempotencyBoundsTest, TheByteBoundHoldsWhateverTheFingerprintsLength) {
  // Fingerprints past std::string's inline buffer are accounted with their
  // heap buffer; the bound must hold for every length and every budget near
  // two entries' worth, not only for lengths the estimate happens to match.
  const size_t entry = IdempotencyEntryOverhead();
  const TimePoint t = FakeClock().Now();
  for (size_t length = 14; length <= 40; ++length) {
    for (size_t budget = 2 * entry; budget <= 2 * entry + 100; ++budget) {
      IdempotencyStoreOptions o;
      o.max_bytes = budget;
      auto store = MakeStore(o);
      for (const char* key : {"a", "b", "c"}) {
        (void)store->Reserve("", key, std::string(length, 'f'), t);
        ASSERT_LE(store->Stats().bytes, budget) << "fingerprint of " << length << " bytes";
      }
    }
  }
}

// --- lease -------------------------------------------------------------------------

TEST(IdempotencyBoundsTest, ALeaseBlocksItsKeyUntilExactlyItsEnd) {
  IdempotencyStoreOptions o;
  o.lease = seconds(30);
  o.in_flight_retry_after = seconds(1);
  auto store = MakeStore(o);
  const TimePoint t = FakeClock().Now();
  ASSERT_EQ(StateOf(*store, "k", "fp", t), ReserveState::kReserved);
  Result<Reservation> before = store->Reserve("", "k", "fp", t + seconds(30) - kStep);
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->state, ReserveState::kInFlight);
  EXPECT_EQ(before->retry_after, kStep);  // what is left of the lease, under the 1 s cap
  EXPECT_EQ(StateOf(*store, "k", "fp", t + seconds(30)), ReserveState::kReserved);
  EXPECT_EQ(store->Stats().expired, 1u);
}

TEST(IdempotencyBoundsTest, ALeaseBehindALaterOneEndsExactlyAtItsEndToo) {
  // Callers' `now` values may interleave (threads read the clock before they
  // take the store's lock), so an entry can sit behind one that expires later
  // and escape the sweep of the list heads: Reserve's own check must then
  // apply the same bound.
  IdempotencyStoreOptions o;
  o.lease = seconds(30);
  auto store = MakeStore(o);
  const TimePoint t = FakeClock().Now();
  ASSERT_EQ(StateOf(*store, "later", "fp", t + seconds(10)), ReserveState::kReserved);
  ASSERT_EQ(StateOf(*store, "k", "fp", t), ReserveState::kReserved);  // ends at t + 30 s
  EXPECT_EQ(StateOf(*store, "k", "fp", t + seconds(30) - kStep), ReserveState::kInFlight);
  EXPECT_EQ(StateOf(*store, "k", "fp", t + seconds(30)), ReserveState::kReserved);
  EXPECT_EQ(StateOf(*store, "later", "fp", t + seconds(30)), ReserveState::kInFlight);
}

TEST(IdempotencyBoundsTest, TheInFlightHintIsTheLeaseLeftCappedAtTheConfiguredValue) {
  IdempotencyStoreOptions o;
  o.lease = seconds(10);
  o.in_flight_retry_after = seconds(2);
  auto store = MakeStore(o);
  const TimePoint t = FakeClock().Now();
  ASSERT_EQ(StateOf(*store, "k", "fp", t), ReserveState::kReserved);
  auto hint_at = [&](Duration after) {
    return store->Reserve("", "k", "fp", t + after).value().retry_after;
  };
  EXPECT_EQ(hint_at(seconds(8) - kStep), seconds(2));          // 2 s + 1 ns left: the cap
  EXPECT_EQ(hint_at(seconds(8)), seconds(2));                  // exactly the cap left
  EXPECT_EQ(hint_at(seconds(8) + kStep), seconds(2) - kStep);  // less than the cap left
}

// --- ttl ---------------------------------------------------------------------------

TEST(IdempotencyBoundsTest, AResponseReplaysUntilOneNanosecondBeforeItsTtl) {
  IdempotencyStoreOptions o;
  o.ttl = hours(24);
  auto store = MakeStore(o);
  const TimePoint t = FakeClock().Now();
  Reservation r = store->Reserve("", "k", "fp", t).value();
  ASSERT_TRUE(store->Complete(r.lease, Response("one"), t).ok());
  EXPECT_EQ(StateOf(*store, "k", "fp", t + hours(24) - kStep), ReserveState::kReplay);
  EXPECT_EQ(StateOf(*store, "k", "fp", t + hours(24)), ReserveState::kReserved);
}

// --- Fingerprints ------------------------------------------------------------------

TEST(IdempotencyFingerprintTest, AnyDifferenceInTheFingerprintIsAMismatchNeverAReplay) {
  auto store = MakeStore(IdempotencyStoreOptions{});
  const TimePoint t = FakeClock().Now();
  const std::string print = "POST /charges sha256=ab12";
  Reservation r = store->Reserve("", "k", print, t).value();
  ASSERT_TRUE(store->Complete(r.lease, Response("charged once"), t).ok());
  // The last byte, one byte more, one byte less, an embedded NUL, empty.
  const std::vector<std::string> others = {
      "POST /charges sha256=ab13", print + "0", print.substr(0, print.size() - 1),
      std::string("POST /charges\0sha256=ab12", 25), ""};
  for (const std::string& other : others) {
    Result<Reservation> mismatch = store->Reserve("", "k", other, t);
    ASSERT_TRUE(mismatch.ok());
    EXPECT_EQ(mismatch->state, ReserveState::kFingerprintMismatch) << other;
    EXPECT_EQ(mismatch->response, nullptr) << "a mismatch must not carry the stored response";
    EXPECT_EQ(mismatch->lease.token, 0u);
  }
  const IdempotencyStoreStats stats = store->Stats();
  EXPECT_EQ(stats.fingerprint_mismatches, others.size());
  EXPECT_EQ(stats.replayed, 0u);
  EXPECT_EQ(stats.reserved, 1u);
  // The stored response is untouched: the original request still replays it.
  Reservation replay = store->Reserve("", "k", print, t).value();
  ASSERT_EQ(replay.state, ReserveState::kReplay);
  EXPECT_EQ(replay.response->body, "charged once");
}

TEST(IdempotencyFingerprintTest, AMismatchWhileInFlightIsA422NotA409) {
  auto store = MakeStore(IdempotencyStoreOptions{});
  const TimePoint t = FakeClock().Now();
  ASSERT_EQ(StateOf(*store, "k", "a", t), ReserveState::kReserved);
  Result<Reservation> other = store->Reserve("", "k", "b", t);
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(other->state, ReserveState::kFingerprintMismatch);
  EXPECT_EQ(other->retry_after, Duration::zero());
  EXPECT_EQ(store->Stats().in_flight_conflicts, 0u);
  EXPECT_EQ(StateOf(*store, "k", "a", t), ReserveState::kInFlight);
}

TEST(IdempotencyFingerprintTest, AnExpiredEntryDoesNotHoldItsFingerprint) {
  // After the ttl the key is free for any request: no mismatch.
  IdempotencyStoreOptions o;
  o.ttl = seconds(10);
  auto store = MakeStore(o);
  const TimePoint t = FakeClock().Now();
  Reservation r = store->Reserve("", "k", "a", t).value();
  ASSERT_TRUE(store->Complete(r.lease, Response("a"), t).ok());
  EXPECT_EQ(StateOf(*store, "k", "b", t + seconds(10) - kStep), ReserveState::kFingerprintMismatch);
  EXPECT_EQ(StateOf(*store, "k", "b", t + seconds(10)), ReserveState::kReserved);
}

}  // namespace
}  // namespace mulligan
