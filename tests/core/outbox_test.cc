// tests/core/outbox_test.cc — the durable outbox (outbox/outbox.h) on a
// FakeClock, its contract run over both backends (OutboxBackendTest: SQLite
// in a temporary file, and Redis Streams on a real redis-server started per
// test with AOF fsync'ed on every write; the Redis-only cases are in
// outbox_redis_test.cc), and the SQLite-only cases (OutboxTest): enqueue / lease / complete,
// lease expiry handing an entry to another worker, retry times that follow
// the policy exactly (fixed backoff, Retry-After, seeded jitter), dead
// letters with their history, reopening the file, a read-only file and a
// full size cap failing Enqueue with a clear error, and many threads.

#include "mulligan/outbox/outbox.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/base/random.h"
#include "mulligan/retry/backoff.h"
#include "mulligan/telemetry/metrics.h"
#include "outbox_fixture.h"

namespace mulligan {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using outbox_test::OutboxBackendTest;
using outbox_test::OutboxTest;

INSTANTIATE_TEST_SUITE_P(Backends, OutboxBackendTest, ::testing::Values("sqlite", "redis"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

TEST_P(OutboxBackendTest, EnqueueLeaseCompleteKeepsTheRequestAndOneKey) {
  auto box = Open(Options());
  ASSERT_TRUE(box);
  auto http = box->Enqueue(Http(std::string("a\0b", 3)), Now());
  ASSERT_TRUE(http.ok()) << http.status().ToString();
  OutboxEntrySpec job_spec = Job("send_email", "to=ann");
  job_spec.idempotency_key = "order-17";
  auto job = box->Enqueue(job_spec, Now());
  ASSERT_TRUE(job.ok()) << job.status().ToString();
  // A fresh UUID v4: 36 characters, version nibble 4, variant 8..b.
  const std::string& key = http->spec.idempotency_key;
  ASSERT_EQ(key.size(), 36u);
  EXPECT_EQ(key[14], '4');
  EXPECT_NE(std::string("89ab").find(key[19]), std::string::npos);
  EXPECT_EQ(job->spec.idempotency_key, "order-17");

  auto leases = box->Lease("w1", 10, Now());
  ASSERT_TRUE(leases.ok()) << leases.status().ToString();
  ASSERT_EQ(leases->size(), 2u);
  const OutboxEntry& e = (*leases)[0].entry;
  EXPECT_EQ(e.id, http->id);
  EXPECT_EQ(e.state, OutboxState::kLeased);
  EXPECT_EQ(e.spec.method, "POST");
  EXPECT_EQ(e.spec.url, "http://127.0.0.1:9/hooks");
  ASSERT_EQ(e.spec.headers.size(), 2u);
  EXPECT_EQ(e.spec.headers[1].name, "X-Tenant");
  EXPECT_EQ(e.spec.headers[1].value, "acme");
  EXPECT_EQ(e.spec.body, std::string("a\0b", 3));
  EXPECT_EQ(e.spec.idempotency_key, key);
  EXPECT_EQ(e.lease_owner, "w1");
  EXPECT_EQ(e.lease_expires_at, Now() + seconds(30));
  EXPECT_EQ((*leases)[1].entry.spec.job, "send_email");
  EXPECT_EQ((*leases)[1].entry.spec.payload, "to=ann");
  // Both are held: nothing else is due.
  auto none = box->Lease("w2", 10, Now());
  ASSERT_TRUE(none.ok());
  EXPECT_TRUE(none->empty());

  ASSERT_TRUE(box->Complete((*leases)[0], Now(), 201).ok());
  ASSERT_TRUE(box->Complete((*leases)[1], Now()).ok());
  auto stats = box->Stats(Now());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->depth, 0);
  EXPECT_EQ(stats->done, 2);
  EXPECT_EQ(stats->deliveries, 2);
  EXPECT_EQ(stats->dead_letters, 0);
  auto history = box->History(http->id);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 1u);
  EXPECT_EQ((*history)[0].attempt, 1);
  EXPECT_EQ((*history)[0].http_status, 201);
  EXPECT_EQ((*history)[0].classification, Classification::kSuccess);
}

TEST_F(OutboxTest, ALeaseOfAnotherFileIsRefusedAndAnotherHandleOnTheSameFileWorks) {
  // Ids are per file: entry 1 of x.db and entry 1 of y.db are different
  // entries, and the lease of one must never finish the other.
  OutboxOptions ox = Options();
  ox.path = dir_ + "/x.db";
  OutboxOptions oy = Options();
  oy.path = dir_ + "/y.db";
  auto x = Open(ox);
  auto y = Open(oy);
  ASSERT_TRUE(x && y);
  ASSERT_TRUE(x->Enqueue(Job("a", "from x"), Now()).ok());
  ASSERT_TRUE(y->Enqueue(Job("a", "from y"), Now()).ok());
  auto from_x = x->Lease("w1", 1, Now());
  auto from_y = y->Lease("w1", 1, Now());
  ASSERT_TRUE(from_x.ok() && from_y.ok());
  ASSERT_EQ(from_x->size(), 1u);
  ASSERT_EQ((*from_x)[0].entry.id, (*from_y)[0].entry.id);  // both entry 1
  const std::string want = "outbox entry 1 of this file has another idempotency key: the "
                           "lease was made by an outbox on another file";
  Status done = y->Complete((*from_x)[0], Now());
  EXPECT_TRUE(IsInvalidArgument(done));
  EXPECT_EQ(done.message(), want);
  auto failed = y->Fail((*from_x)[0], Outcome::Http(503), "503", Now());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().message(), want);
  // y's entry is untouched: still leased, no attempt recorded.
  auto entry = y->Get(1);
  ASSERT_TRUE(entry.ok());
  EXPECT_EQ(entry->state, OutboxState::kLeased);
  EXPECT_EQ(entry->attempts, 0);
  // A second handle on x's own file completes x's lease.
  auto x2 = Open(ox);
  ASSERT_TRUE(x2);
  ASSERT_TRUE(x2->Complete((*from_x)[0], Now()).ok());
  EXPECT_EQ(x->Get(1)->state, OutboxState::kDone);
}

TEST_P(OutboxBackendTest, ExpiredLeaseHandsTheEntryToAnotherWorker) {
  auto box = Open(Options());
  ASSERT_TRUE(box);
  auto entry = box->Enqueue(Http(), Now());
  ASSERT_TRUE(entry.ok());
  auto a = box->Lease("worker-a", 1, Now(), seconds(30));
  ASSERT_TRUE(a.ok());
  ASSERT_EQ(a->size(), 1u);
  // Worker a "crashes". One nanosecond before its lease ends, nothing is due.
  clock_.Advance(seconds(30) - std::chrono::nanoseconds(1));
  auto early = box->Lease("worker-b", 1, Now());
  ASSERT_TRUE(early.ok());
  EXPECT_TRUE(early->empty());
  clock_.Advance(std::chrono::nanoseconds(1));
  // The expired lease is attempt 1 (a retryable failure): due again after
  // the policy's first backoff, 200 ms.
  auto backing_off = box->Lease("worker-b", 1, Now());
  ASSERT_TRUE(backing_off.ok());
  EXPECT_TRUE(backing_off->empty());
  clock_.Advance(milliseconds(200));
  auto b = box->Lease("worker-b", 1, Now());
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(b->size(), 1u);
  EXPECT_EQ((*b)[0].entry.attempts, 1);
  EXPECT_EQ((*b)[0].entry.id, entry->id);
  EXPECT_EQ((*b)[0].entry.lease_owner, "worker-b");
  EXPECT_EQ((*b)[0].entry.leases, 2);
  EXPECT_EQ((*b)[0].entry.spec.idempotency_key, entry->spec.idempotency_key);
  EXPECT_NE((*b)[0].token, (*a)[0].token);
  // The old lease can no longer reschedule the entry...
  auto stale = box->Fail((*a)[0], Outcome::Http(503), "HTTP 503", Now());
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.status().code(), StatusCode::kOutbox);
  EXPECT_NE(stale.status().message().find("lease lost"), std::string::npos);
  // ...the new holder delivers it, and a late success of the old one is
  // accepted once (the receiver saw the same key): one delivery counted.
  ASSERT_TRUE(box->Complete((*b)[0], Now(), 200).ok());
  ASSERT_TRUE(box->Complete((*a)[0], Now(), 200).ok());
  auto stats = box->Stats(Now());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->deliveries, 1);
  EXPECT_EQ(stats->done, 1);
}

// A poison entry: every worker that leases it dies holding the lease. Each
// expiry is one attempt; the fourth (max_attempts 4) dead-letters it, with
// one history row per expiry, the backoff between them (200, 400, 800 ms,
// no jitter), and a late success of the last lease still counted.
TEST_P(OutboxBackendTest, ExpiredLeasesCountAsAttemptsAndDeadLetterAPoisonEntry) {
  auto box = Open(Options());
  ASSERT_TRUE(box);
  const WallTime t0 = Now();
  auto entry = box->Enqueue(Http(), t0);
  ASSERT_TRUE(entry.ok());
  const Duration backoff[] = {milliseconds(200), milliseconds(400), milliseconds(800)};
  std::vector<WallTime> expired_at;
  std::vector<OutboxLease> last;
  for (int i = 0; i < 4; ++i) {
    auto lease = box->Lease("w" + std::to_string(i + 1), 1, Now(), seconds(10));
    ASSERT_TRUE(lease.ok()) << lease.status().ToString();
    ASSERT_EQ(lease->size(), 1u) << "lease " << i + 1;
    EXPECT_EQ((*lease)[0].entry.attempts, i);
    last = *lease;
    clock_.Advance(seconds(10));  // the worker dies; its lease ends
    expired_at.push_back(Now());
    auto reclaim = box->Lease("observer", 1, Now(), seconds(10));
    ASSERT_TRUE(reclaim.ok());
    EXPECT_TRUE(reclaim->empty());  // backing off (or dead)
    if (i < 3) clock_.Advance(backoff[i]);
  }
  auto dead = box->Get(entry->id);
  ASSERT_TRUE(dead.ok());
  EXPECT_EQ(dead->state, OutboxState::kDead);
  EXPECT_EQ(dead->stop_reason, "attempts_exhausted");
  EXPECT_EQ(dead->attempts, 4);
  EXPECT_EQ(dead->leases, 4);
  EXPECT_EQ(dead->finished_at, t0 + seconds(40) + milliseconds(1400));
  auto history = box->History(entry->id);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 4u);
  const Duration delays[] = {milliseconds(200), milliseconds(400), milliseconds(800),
                             Duration::zero()};
  for (int i = 0; i < 4; ++i) {
    const OutboxAttempt& a = (*history)[i];
    EXPECT_EQ(a.attempt, i + 1);
    EXPECT_EQ(a.message, "lease expired, worker w" + std::to_string(i + 1));
    EXPECT_EQ(a.error, ErrorKind::kTimeout);
    EXPECT_EQ(a.classification, Classification::kRetryable);
    EXPECT_EQ(a.http_status, 0);
    EXPECT_EQ(a.at, expired_at[i]);
    EXPECT_EQ(a.delay, delays[i]);
  }
  auto stats = box->Stats(Now());
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->dead, 1);
  EXPECT_EQ(stats->dead_letters, 1);
  EXPECT_EQ(stats->depth, 0);
  clock_.Advance(seconds(3600));
  EXPECT_TRUE(box->Lease("w", 1, Now())->empty());
  // The fourth worker was only slow: its success after the expiry that
  // killed the entry is a delivery (not leased since). An older lease's is
  // not: the entry had been leased again after it.
  ASSERT_TRUE(box->Complete(last[0], Now(), 200).ok());
  auto done = box->Get(entry->id);
  EXPECT_EQ(done->state, OutboxState::kDone);
  EXPECT_EQ(done->attempts, 5);
  EXPECT_EQ(box->Stats(Now())->deliveries, 1);
}

TEST_P(OutboxBackendTest, ALateSuccessOfAnOlderLeaseOnADeadEntryIsRefused) {
  OutboxOptions o = Options();
  o.retry.max_attempts = 2;
  auto box = Open(o);
  ASSERT_TRUE(box);
  auto entry = box->Enqueue(Http(), Now());
  ASSERT_TRUE(entry.ok());
  auto first = box->Lease("w1", 1, Now(), seconds(5));
  ASSERT_EQ(first->size(), 1u);
  clock_.Advance(seconds(5));
  EXPECT_TRUE(box->Lease("w2", 1, Now(), seconds(5))->empty());  // expiry 1: backing off
  clock_.Advance(milliseconds(200));
  auto second = box->Lease("w2", 1, Now(), seconds(5));
  ASSERT_EQ(second->size(), 1u);
  ASSERT_TRUE(box->Fail((*second)[0], Outcome::Http(503), "HTTP 503", Now()).ok());
  EXPECT_EQ(box->Get(entry->id)->state, OutboxState::kDead);
  Status late = box->Complete((*first)[0], Now(), 200);
  EXPECT_EQ(late.code(), StatusCode::kOutbox);
  EXPECT_NE(late.message().find("already dead"), std::string::npos) << late.ToString();
}

// The registry reads a tracked outbox at snapshot time: after this script,
// exactly one entry pending (D), one leased (C), one done (A), one dead (B),
// the oldest live entry (C, enqueued at t0) 12.5 s old, one delivery of each
// result, and one dead letter. Untracked once the outbox is gone.
TEST_P(OutboxBackendTest, MetricsRegistryExportsTheOutboxFamilies) {
  OutboxOptions o = Options();
  o.name = "mail";
  std::shared_ptr<Outbox> box = Open(o);
  ASSERT_TRUE(box);
  MetricsRegistry registry;
  registry.Track(box);
  const WallTime t0 = Now();
  ASSERT_TRUE(box->EnqueueMany({Http("a"), Http("b"), Http("c")}, t0).ok());
  auto ab = box->Lease("w1", 2, Now(), seconds(10));
  ASSERT_EQ(ab->size(), 2u);
  ASSERT_TRUE(box->Complete((*ab)[0], Now(), 200).ok());
  ASSERT_EQ(box->Fail((*ab)[1], Outcome::Http(404), "HTTP 404", Now())->state,
            OutboxState::kDead);
  auto c = box->Lease("w1", 1, Now(), seconds(10));
  ASSERT_EQ(c->size(), 1u);
  clock_.Advance(seconds(10));  // w1 dies holding C
  EXPECT_TRUE(box->Lease("w2", 1, Now(), seconds(30))->empty());  // C backs off 200 ms
  clock_.Advance(seconds(2));
  auto c2 = box->Lease("w3", 1, Now(), seconds(30));
  ASSERT_EQ(c2->size(), 1u);
  EXPECT_EQ((*c2)[0].entry.id, (*c)[0].entry.id);
  ASSERT_TRUE(box->Enqueue(Http("d"), Now()).ok());
  clock_.Advance(milliseconds(500));

  const std::string text = registry.ToPrometheus(clock_.Now(), Now());
  const std::string expected =
      "# HELP mulligan_outbox_depth Entries in a durable outbox waiting for an attempt "
      "(pending) or held by a worker (leased).\n"
      "# TYPE mulligan_outbox_depth gauge\n"
      "mulligan_outbox_depth{outbox=\"mail\",state=\"pending\"} 1\n"
      "mulligan_outbox_depth{outbox=\"mail\",state=\"leased\"} 1\n"
      "# HELP mulligan_outbox_oldest_age_seconds Age of a durable outbox's oldest pending or "
      "leased entry (0 when none).\n"
      "# TYPE mulligan_outbox_oldest_age_seconds gauge\n"
      "mulligan_outbox_oldest_age_seconds{outbox=\"mail\"} 12.5\n"
      "# HELP mulligan_outbox_deliveries_total Delivery attempts a durable outbox recorded, by "
      "result (success, failure, lease_expired), since its file was made.\n"
      "# TYPE mulligan_outbox_deliveries_total counter\n"
      "mulligan_outbox_deliveries_total{outbox=\"mail\",result=\"success\"} 1\n"
      "mulligan_outbox_deliveries_total{outbox=\"mail\",result=\"failure\"} 1\n"
      "mulligan_outbox_deliveries_total{outbox=\"mail\",result=\"lease_expired\"} 1\n"
      "# HELP mulligan_outbox_dead_letters_total Entries a durable outbox dead-lettered, since "
      "its file was made.\n"
      "# TYPE mulligan_outbox_dead_letters_total counter\n"
      "mulligan_outbox_dead_letters_total{outbox=\"mail\"} 1\n";
  const size_t at = text.find("# HELP mulligan_outbox_depth");
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_EQ(text.substr(at, expected.size()), expected);

  LimitsSnapshot snap = registry.SnapshotLimits(clock_.Now(), Now());
  ASSERT_EQ(snap.outboxes.size(), 1u);
  const LimitsSnapshot::Outbox& m = snap.outboxes[0];
  EXPECT_EQ(m.name, "mail");
  EXPECT_EQ(m.done, 1);
  EXPECT_EQ(m.dead, 1);
  auto stats = box->Stats(Now());
  EXPECT_EQ(stats->failures, 1);
  EXPECT_EQ(stats->lease_expiries, 1);
  EXPECT_EQ(stats->deliveries, 1);

  box.reset();
  EXPECT_TRUE(registry.SnapshotLimits(clock_.Now(), Now()).outboxes.empty());
  EXPECT_EQ(registry.ToPrometheus(clock_.Now(), Now()).find("mulligan_outbox_"),
            std::string::npos);
}

// Another program's SQLite database (tables, no outbox_meta marker) is
// refused and left as it was; an empty database becomes an outbox; with
// create = false an absent file is refused and not made.
TEST_F(OutboxTest, ForeignDatabaseIsRefusedAndCreateFalseMakesNoFile) {
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE users(id INTEGER); CREATE TABLE orders(id INTEGER)",
                           nullptr, nullptr, nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }
  auto foreign = Outbox::Open(Options());
  ASSERT_FALSE(foreign.ok());
  EXPECT_EQ(foreign.status().code(), StatusCode::kOutbox);
  EXPECT_EQ(foreign.status().message(),
            "outbox " + path_ + ": not a mulligan outbox: it holds other tables (orders, users) "
            "and no outbox_meta schema marker; refusing to add the outbox's tables to it");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
    sqlite3_stmt* st = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*) FROM sqlite_master", -1, &st, nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(st, 0), 2);  // nothing added
    sqlite3_finalize(st);
    sqlite3_close(db);
  }
  // An empty file (a database with no tables) becomes an outbox.
  OutboxOptions empty = Options();
  empty.path = dir_ + "/empty.db";
  ASSERT_EQ(std::system(("touch '" + empty.path + "'").c_str()), 0);
  EXPECT_TRUE(Outbox::Open(empty).ok());
  // create = false: an absent file is refused, and none is made.
  OutboxOptions absent = Options();
  absent.path = dir_ + "/typo.db";
  absent.create = false;
  auto missing = Outbox::Open(absent);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kOutbox);
  EXPECT_NE(missing.status().message().find("no such file"), std::string::npos)
      << missing.status().ToString();
  struct stat st;
  EXPECT_NE(stat(absent.path.c_str(), &st), 0);
  // ...and an existing outbox opens with create = false.
  absent.path = empty.path;
  EXPECT_TRUE(Outbox::Open(absent).ok());
}

TEST_P(OutboxBackendTest, RetryTimesFollowThePolicyThenDeadLetterKeepsHistory) {
  auto box = Open(Options());
  ASSERT_TRUE(box);
  const WallTime t0 = Now();
  auto entry = box->Enqueue(Http(), t0);
  ASSERT_TRUE(entry.ok());

  auto lease = box->Lease("w", 1, Now());
  ASSERT_EQ(lease->size(), 1u);
  auto f1 = box->Fail((*lease)[0], Outcome::Http(503), "HTTP 503", Now());
  ASSERT_TRUE(f1.ok()) << f1.status().ToString();
  EXPECT_EQ(f1->state, OutboxState::kPending);
  EXPECT_EQ(f1->delay, milliseconds(200));  // base * 2^0
  EXPECT_EQ(f1->next_attempt_at, t0 + milliseconds(200));

  clock_.Advance(milliseconds(199));
  EXPECT_TRUE(box->Lease("w", 1, Now())->empty());
  clock_.Advance(milliseconds(1));
  lease = box->Lease("w", 1, Now());
  ASSERT_EQ(lease->size(), 1u);
  auto f2 = box->Fail((*lease)[0], Outcome::Transport(ErrorKind::kConnectionRefused),
                      "connection refused", Now());
  ASSERT_TRUE(f2.ok());
  EXPECT_EQ(f2->delay, milliseconds(400));  // base * 2^1
  EXPECT_EQ(f2->next_attempt_at, t0 + milliseconds(600));

  clock_.Advance(milliseconds(400));
  lease = box->Lease("w", 1, Now());
  ASSERT_EQ(lease->size(), 1u);
  // Retry-After replaces the backoff (RFC 9110 section 10.2.3).
  auto f3 = box->Fail((*lease)[0], Outcome::Http(429, seconds(7)), "HTTP 429", Now());
  ASSERT_TRUE(f3.ok());
  EXPECT_EQ(f3->delay, seconds(7));
  EXPECT_EQ(f3->next_attempt_at, t0 + milliseconds(7600));

  clock_.Advance(seconds(7));
  lease = box->Lease("w", 1, Now());
  ASSERT_EQ(lease->size(), 1u);
  auto f4 = box->Fail((*lease)[0], Outcome::Http(500), "HTTP 500", Now());
  ASSERT_TRUE(f4.ok());
  EXPECT_EQ(f4->state, OutboxState::kDead);
  EXPECT_EQ(f4->reason, StopReason::kAttemptsExhausted);
  EXPECT_EQ(f4->attempt, 4);

  auto dead = box->Get(entry->id);
  ASSERT_TRUE(dead.ok());
  EXPECT_EQ(dead->state, OutboxState::kDead);
  EXPECT_EQ(dead->stop_reason, "attempts_exhausted");
  EXPECT_EQ(dead->attempts, 4);
  EXPECT_EQ(dead->finished_at, t0 + milliseconds(7600));
  auto history = box->History(entry->id);
  ASSERT_TRUE(history.ok());
  ASSERT_EQ(history->size(), 4u);
  const int statuses[] = {503, 0, 429, 500};
  const Duration delays[] = {milliseconds(200), milliseconds(400), seconds(7), Duration::zero()};
  const WallTime times[] = {t0, t0 + milliseconds(200), t0 + milliseconds(600),
                            t0 + milliseconds(7600)};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ((*history)[i].attempt, i + 1);
    EXPECT_EQ((*history)[i].http_status, statuses[i]);
    EXPECT_EQ((*history)[i].delay, delays[i]);
    EXPECT_EQ((*history)[i].at, times[i]);
    EXPECT_EQ((*history)[i].classification, Classification::kRetryable);
  }
  EXPECT_EQ((*history)[1].error, ErrorKind::kConnectionRefused);
  EXPECT_EQ((*history)[1].message, "connection refused");
  auto stats = box->Stats(Now());
  EXPECT_EQ(stats->dead, 1);
  EXPECT_EQ(stats->dead_letters, 1);
  EXPECT_EQ(stats->depth, 0);
  // Nothing is due any more.
  clock_.Advance(seconds(3600));
  EXPECT_TRUE(box->Lease("w", 1, Now())->empty());
}

TEST_P(OutboxBackendTest, SeededJitterIsTheDocumentedDrawAndSurvivesReopening) {
  OutboxOptions o = Options();
  o.retry.backoff.jitter = JitterKind::kFull;
  o.retry.seed = 42;
  o.retry.max_attempts = 5;
  std::vector<Duration> got;
  int64_t id = 0;
  {
    auto box = Open(o);
    auto entry = box->Enqueue(Http(), Now());
    id = entry->id;
    for (int i = 0; i < 2; ++i) {
      auto lease = box->Lease("w", 1, Now());
      ASSERT_EQ(lease->size(), 1u);
      auto f = box->Fail((*lease)[0], Outcome::Http(503), "HTTP 503", Now());
      ASSERT_TRUE(f.ok());
      got.push_back(f->delay);
      clock_.Advance(f->delay);
    }
  }
  {
    auto box = Open(o);  // a restart in the middle of the schedule
    for (int i = 0; i < 2; ++i) {
      auto lease = box->Lease("w", 1, Now());
      ASSERT_EQ(lease->size(), 1u);
      auto f = box->Fail((*lease)[0], Outcome::Http(503), "HTTP 503", Now());
      ASSERT_TRUE(f.ok());
      got.push_back(f->delay);
      clock_.Advance(f->delay);
    }
  }
  // Full jitter of attempt n: uniform(0, min(200 ms * 2^(n-1), 10 s)), drawn
  // from Random(42 + id * 0x9E3779B97F4A7C15 + n).
  for (int n = 1; n <= 4; ++n) {
    Random random(42 + static_cast<uint64_t>(id) * 0x9E3779B97F4A7C15ULL +
                  static_cast<uint64_t>(n));
    const double cap_ns = 200e6 * static_cast<double>(1 << (n - 1));
    const Duration expected(static_cast<Duration::rep>(random.Uniform(0.0, cap_ns)));
    EXPECT_LE(got[n - 1], Duration(static_cast<Duration::rep>(cap_ns)));
    EXPECT_NEAR(static_cast<double>(got[n - 1].count()), static_cast<double>(expected.count()),
                1.0)
        << "attempt " << n;
  }
}

TEST_P(OutboxBackendTest, TerminalOutcomeAndLongRetryAfterAndDeadlineDeadLetter) {
  OutboxOptions o = Options();
  o.retry.deadline = seconds(1);
  auto box = Open(o);
  auto a = box->Enqueue(Http(), Now());
  auto b = box->Enqueue(Http(), Now());
  auto c = box->Enqueue(Http(), Now());
  auto leases = box->Lease("w", 3, Now());
  ASSERT_EQ(leases->size(), 3u);
  auto fa = box->Fail((*leases)[0], Outcome::Http(404), "HTTP 404", Now());
  EXPECT_EQ(fa->state, OutboxState::kDead);
  EXPECT_EQ(fa->reason, StopReason::kTerminal);
  auto fb = box->Fail((*leases)[1], Outcome::Http(503, seconds(61)), "HTTP 503", Now());
  EXPECT_EQ(fb->reason, StopReason::kRetryAfterTooLong);
  // 200 ms later (so the wait of 200 ms still fits), then 800 ms later the
  // next wait (400 ms) would reach created + 1 s.
  auto fc = box->Fail((*leases)[2], Outcome::Http(503), "HTTP 503", Now());
  EXPECT_EQ(fc->state, OutboxState::kPending);
  clock_.Advance(milliseconds(600));
  auto again = box->Lease("w", 1, Now());
  ASSERT_EQ(again->size(), 1u);
  auto fc2 = box->Fail((*again)[0], Outcome::Http(503), "HTTP 503", Now());
  EXPECT_EQ(fc2->state, OutboxState::kDead);
  EXPECT_EQ(fc2->reason, StopReason::kDeadline);
  EXPECT_EQ(box->Get(a->id)->stop_reason, "terminal");
  EXPECT_EQ(box->Get(b->id)->stop_reason, "retry_after_too_long");
  EXPECT_EQ(box->Get(c->id)->stop_reason, "deadline");
  EXPECT_EQ(box->Stats(Now())->dead_letters, 3);
}

TEST_P(OutboxBackendTest, ReopeningTheFileKeepsEverything) {
  int64_t ids[3];
  std::string keys[3];
  {
    auto box = Open(Options());
    for (int i = 0; i < 3; ++i) {
      auto e = box->Enqueue(Http("body" + std::to_string(i)), Now());
      ids[i] = e->id;
      keys[i] = e->spec.idempotency_key;
    }
    auto leases = box->Lease("w", 2, Now());
    ASSERT_EQ(leases->size(), 2u);
    ASSERT_TRUE(box->Complete((*leases)[0], Now(), 200).ok());
    ASSERT_TRUE(box->Fail((*leases)[1], Outcome::Http(502), "HTTP 502", Now()).ok());
  }
  auto box = Open(Options());
  auto all = box->List(std::nullopt, 100);
  ASSERT_TRUE(all.ok());
  ASSERT_EQ(all->size(), 3u);
  EXPECT_EQ((*all)[0].state, OutboxState::kDone);
  EXPECT_EQ((*all)[1].state, OutboxState::kPending);
  EXPECT_EQ((*all)[1].attempts, 1);
  EXPECT_EQ((*all)[1].next_attempt_at, Now() + milliseconds(200));
  EXPECT_EQ((*all)[2].state, OutboxState::kPending);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ((*all)[i].id, ids[i]);
    EXPECT_EQ((*all)[i].spec.idempotency_key, keys[i]);
    EXPECT_EQ((*all)[i].spec.body, "body" + std::to_string(i));
  }
  EXPECT_EQ(box->History(ids[1])->at(0).http_status, 502);
  auto stats = box->Stats(Now() + seconds(5));
  EXPECT_EQ(stats->deliveries, 1);
  EXPECT_EQ(stats->depth, 2);
  EXPECT_EQ(stats->oldest_age, seconds(5));
  auto pending = box->List(OutboxState::kPending, 100);
  EXPECT_EQ(pending->size(), 2u);
}

// Runs `body` in a child process that cannot write the file: as root (which
// write permission does not stop), after switching to the nobody user.
// Returns the child's exit code.
template <typename F>
int RunWithoutWriteAccess(F body) {
  pid_t pid = fork();
  if (pid == 0) {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) _exit(90);
    _exit(body());
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 99;
}

TEST_F(OutboxTest, ReadOnlyFileGivesAClearErrorOnEnqueue) {
  {
    auto box = Open(Options());
    ASSERT_TRUE(box->Enqueue(Http("kept"), Now()).ok());
  }  // the last connection closes: the WAL is checkpointed into the file
  ASSERT_EQ(chmod(dir_.c_str(), 0755), 0);
  ASSERT_EQ(chmod(path_.c_str(), 0444), 0);
  const std::string path = path_;
  const int code = RunWithoutWriteAccess([&]() -> int {
    OutboxOptions o;
    o.path = path;
    auto box = Outbox::Open(o);
    if (!box.ok()) {
      fprintf(stderr, "open: %s\n", box.status().ToString().c_str());
      return 10;
    }
    FakeClock clock;
    auto r = (*box)->Enqueue(Http("lost?"), clock.WallNow());
    if (r.ok()) return 11;
    fprintf(stderr, "enqueue: %s\n", r.status().ToString().c_str());
    if (r.status().code() != StatusCode::kOutbox) return 12;
    if (r.status().message().find("read-only") == std::string::npos) return 13;
    if (r.status().message().find(path) == std::string::npos) return 14;
    return 0;
  });
  EXPECT_EQ(code, 0);
  ASSERT_EQ(chmod(path_.c_str(), 0644), 0);
  auto box = Open(Options());
  EXPECT_EQ(box->List(std::nullopt, 10)->size(), 1u);
}

TEST_F(OutboxTest, FullSizeCapFailsEnqueueAndDropsNothing) {
  OutboxOptions o = Options();
  o.max_size_bytes = 128 * 1024;
  int written = 0;
  Status error;
  {
    auto box = Open(o);
    for (int i = 0; i < 1000; ++i) {
      auto r = box->Enqueue(Http(std::string(4096, static_cast<char>('a' + i % 26))), Now());
      if (!r.ok()) {
        error = r.status();
        break;
      }
      ++written;
    }
    EXPECT_EQ(error.code(), StatusCode::kOutbox);
    EXPECT_NE(error.message().find("full"), std::string::npos) << error.message();
    EXPECT_GT(written, 5);
    EXPECT_LT(written, 1000);
    // Every entry whose Enqueue returned OK is there, and only those.
    EXPECT_EQ(box->Stats(Now())->pending, written);
  }
  o.max_size_bytes = 0;
  auto box = Open(o);
  EXPECT_EQ(box->Stats(Now())->pending, written);
  EXPECT_TRUE(box->Enqueue(Http(), Now()).ok());  // room again without the cap
}

TEST_F(OutboxTest, BadOptionsAndEntriesNameTheField) {
  OutboxOptions o = Options();
  o.path = "";
  EXPECT_NE(Outbox::Open(o).status().message().find("path"), std::string::npos);
  o = Options();
  o.lease_timeout = Duration::zero();
  EXPECT_NE(Outbox::Open(o).status().message().find("lease_timeout"), std::string::npos);
  o = Options();
  o.retry.max_attempts = 0;
  auto bad = Outbox::Open(o);
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("max_attempts"), std::string::npos);
  o = Options();
  o.retry.stop = StopExpr::Never();
  EXPECT_NE(Outbox::Open(o).status().message().find("retry.stop"), std::string::npos);

  auto box = Open(Options());
  OutboxEntrySpec s = Http();
  s.method = "PO ST";
  EXPECT_NE(box->Enqueue(s, Now()).status().message().find("method"), std::string::npos);
  s = Http();
  s.url = "ftp://x";
  EXPECT_NE(box->Enqueue(s, Now()).status().message().find("url"), std::string::npos);
  s = Http();
  s.headers.push_back({"X-Evil", "a\r\nInjected: 1"});
  EXPECT_NE(box->Enqueue(s, Now()).status().message().find("CR, LF"), std::string::npos);
  s = Http();
  s.headers.push_back({"idempotency-key", "k"});
  EXPECT_NE(box->Enqueue(s, Now()).status().message().find("Idempotency-Key"),
            std::string::npos);
  EXPECT_NE(box->Enqueue(Job("", "x"), Now()).status().message().find("job"),
            std::string::npos);
  s = Http();
  s.idempotency_key = "dup-1";
  ASSERT_TRUE(box->Enqueue(s, Now()).ok());
  auto dup = box->Enqueue(s, Now());
  EXPECT_EQ(dup.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(dup.status().message().find("already entry"), std::string::npos);
  EXPECT_EQ(box->Stats(Now())->pending, 1);
  // A file that is not an outbox.
  std::string other = dir_ + "/not-a-db";
  FILE* f = fopen(other.c_str(), "w");
  fputs("this is not an SQLite database, not even close; it is plain text.\n", f);
  fclose(f);
  o = Options();
  o.path = other;
  auto notdb = Outbox::Open(o);
  EXPECT_EQ(notdb.status().code(), StatusCode::kOutbox);
  EXPECT_NE(notdb.status().message().find(other), std::string::npos);
}

TEST_P(OutboxBackendTest, RetryRevivesADeadLetterAndPurgeRemovesFinishedOnes) {
  OutboxOptions o = Options();
  o.retry.max_attempts = 1;
  auto box = Open(o);
  auto e = box->Enqueue(Http(), Now());
  auto lease = box->Lease("w", 1, Now());
  EXPECT_EQ(box->Fail((*lease)[0], Outcome::Http(503), "HTTP 503", Now())->state,
            OutboxState::kDead);
  EXPECT_EQ(box->Retry(e->id, Now()).code(), StatusCode::kOk);
  EXPECT_EQ(box->Retry(e->id, Now()).code(), StatusCode::kInvalidArgument);  // not dead now
  lease = box->Lease("w", 1, Now());
  ASSERT_EQ(lease->size(), 1u);
  // A fresh budget of one attempt: attempt 2 is the last.
  auto f = box->Fail((*lease)[0], Outcome::Http(503), "HTTP 503", Now());
  EXPECT_EQ(f->attempt, 2);
  EXPECT_EQ(f->state, OutboxState::kDead);
  EXPECT_EQ(box->History(e->id)->size(), 2u);
  EXPECT_EQ(box->Purge(OutboxState::kPending).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(*box->Purge(OutboxState::kDead), 1);
  EXPECT_TRUE(box->History(e->id)->empty());
  EXPECT_EQ(box->Stats(Now())->dead_letters, 2);  // counters outlive purges
}

TEST_P(OutboxBackendTest, ManyThreadsDeliverEveryEntryOnce) {
  auto box = Open(Options());
  constexpr int kProducers = 3, kPerProducer = 40, kTotal = kProducers * kPerProducer;
  std::vector<std::thread> threads;
  for (int p = 0; p < kProducers; ++p) {
    threads.emplace_back([&, p] {
      for (int i = 0; i < kPerProducer; ++i)
        ASSERT_TRUE(box->Enqueue(Http(std::to_string(p * 1000 + i)), Now()).ok());
    });
  }
  std::mutex mu;
  std::multiset<std::string> delivered;
  for (int w = 0; w < 2; ++w) {
    threads.emplace_back([&, w] {
      for (;;) {
        auto leases = box->Lease("w" + std::to_string(w), 4, Now());
        ASSERT_TRUE(leases.ok());
        for (const OutboxLease& l : *leases) {
          ASSERT_TRUE(box->Complete(l, Now(), 200).ok());
          std::lock_guard<std::mutex> lock(mu);
          delivered.insert(l.entry.spec.body);
        }
        std::lock_guard<std::mutex> lock(mu);
        if (static_cast<int>(delivered.size()) == kTotal) return;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(delivered.size(), static_cast<size_t>(kTotal));
  EXPECT_EQ(std::set<std::string>(delivered.begin(), delivered.end()).size(),
            static_cast<size_t>(kTotal));
  EXPECT_EQ(box->Stats(Now())->deliveries, kTotal);
}

TEST_P(OutboxBackendTest, CompleteManyRecordsABatchInOneTransaction) {
  auto box = Open(Options());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(box->Enqueue(Http(), Now()).ok());
  auto leases = box->Lease("w", 3, Now());
  ASSERT_EQ(leases->size(), 3u);
  std::vector<OutboxSuccess> batch = {{&(*leases)[0], 200}, {&(*leases)[1], 201}};
  ASSERT_TRUE(box->CompleteMany(batch, Now()).ok());
  // The third one died: the batch that holds it rolls back whole.
  ASSERT_EQ(box->Fail((*leases)[2], Outcome::Http(404), "HTTP 404", Now())->state,
            OutboxState::kDead);
  OutboxEntry unknown;
  unknown.id = 999;
  OutboxLease ghost;
  ghost.entry = unknown;
  EXPECT_EQ(box->CompleteMany({{&(*leases)[2], 200}}, Now()).code(), StatusCode::kOutbox);
  EXPECT_EQ(box->CompleteMany({{&(*leases)[0], 200}, {&ghost, 200}}, Now()).code(),
            StatusCode::kOutbox);
  EXPECT_EQ(box->CompleteMany({{nullptr, 200}}, Now()).code(), StatusCode::kInvalidArgument);
  auto stats = box->Stats(Now());
  EXPECT_EQ(stats->deliveries, 2);
  EXPECT_EQ(stats->done, 2);
  EXPECT_EQ(box->History((*leases)[1].entry.id)->at(0).http_status, 201);
}

TEST_P(OutboxBackendTest, FailRecordsTheStatusGivenBesideAClassifiedOutcome) {
  auto box = Open(Options());
  auto e = box->Enqueue(Http(), Now());
  auto lease = box->Lease("w", 1, Now());
  ASSERT_EQ(lease->size(), 1u);
  // HttpResponseOutcome's form of a keyed 409 with Retry-After: 1.
  Outcome keyed_409 = Outcome::Failure(true);
  keyed_409.retry_after = seconds(1);
  auto f = box->Fail((*lease)[0], keyed_409, "HTTP 409", Now(), 409);
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(f->delay, seconds(1));
  EXPECT_EQ(box->History(e->id)->at(0).http_status, 409);
}

TEST_P(OutboxBackendTest, EnqueueManyWritesAllOrNothing) {
  auto box = Open(Options());
  std::vector<OutboxEntrySpec> specs = {Http("a"), Job("mail", "b"), Http("c")};
  specs[1].idempotency_key = "mail-1";
  auto entries = box->EnqueueMany(specs, Now());
  ASSERT_TRUE(entries.ok()) << entries.status().ToString();
  ASSERT_EQ(entries->size(), 3u);
  EXPECT_EQ((*entries)[1].spec.idempotency_key, "mail-1");
  EXPECT_EQ((*entries)[0].id + 2, (*entries)[2].id);
  // A key given twice in one batch, or a bad spec, writes nothing.
  std::vector<OutboxEntrySpec> twice = {Http("d"), Http("e")};
  twice[0].idempotency_key = twice[1].idempotency_key = "same";
  EXPECT_EQ(box->EnqueueMany(twice, Now()).status().code(), StatusCode::kInvalidArgument);
  std::vector<OutboxEntrySpec> bad = {Http("f"), Job("", "g")};
  EXPECT_EQ(box->EnqueueMany(bad, Now()).status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(box->Stats(Now())->pending, 3);
}

}  // namespace
}  // namespace mulligan
