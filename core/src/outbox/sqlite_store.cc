// core/src/outbox/sqlite_store.cc — the outbox's SQLite store (outbox/store.h;
// the contract is outbox/outbox.h's), the embedded default.
//
// Tables (schema "mulligan-outbox-1", kept in outbox_meta):
//   outbox_entries   one row per entry: what to deliver, its state, attempt
//                    counts, times in nanoseconds since the Unix epoch, and
//                    the lease (owner, token, expiry)
//   outbox_attempts  one row per recorded attempt (entry_id, attempt): the
//                    history dead letters keep
//   outbox_counters  deliveries and dead letters since the file was made
// Each public operation is one transaction under the Outbox's mutex; writes
// use BEGIN IMMEDIATE so that concurrent processes serialize on SQLite's
// lock (waiting up to busy_timeout) instead of failing mid-transaction.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "outbox/schedule.h"
#include "outbox/sqlite_db.h"
#include "outbox/store.h"

namespace mulligan {
inline namespace v0 {

namespace outbox_internal {

namespace {

constexpr const char* kSchema = "mulligan-outbox-1";

constexpr const char* kCreateTables = R"sql(
CREATE TABLE IF NOT EXISTS outbox_meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS outbox_entries(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind INTEGER NOT NULL,
  idempotency_key TEXT NOT NULL UNIQUE,
  method TEXT NOT NULL, url TEXT NOT NULL, headers BLOB NOT NULL, body BLOB NOT NULL,
  job TEXT NOT NULL, payload BLOB NOT NULL,
  state INTEGER NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  attempt_base INTEGER NOT NULL DEFAULT 0,
  leases INTEGER NOT NULL DEFAULT 0,
  lease_token INTEGER NOT NULL DEFAULT 0,
  created_ns INTEGER NOT NULL,
  next_ns INTEGER NOT NULL,
  previous_delay_ns INTEGER NOT NULL,
  lease_owner TEXT NOT NULL DEFAULT '',
  lease_expires_ns INTEGER NOT NULL DEFAULT 0,
  finished_ns INTEGER NOT NULL DEFAULT 0,
  stop_reason TEXT NOT NULL DEFAULT '');
CREATE INDEX IF NOT EXISTS outbox_entries_due ON outbox_entries(state, next_ns);
CREATE TABLE IF NOT EXISTS outbox_attempts(
  entry_id INTEGER NOT NULL, attempt INTEGER NOT NULL, at_ns INTEGER NOT NULL,
  http_status INTEGER NOT NULL, error INTEGER NOT NULL, classification INTEGER NOT NULL,
  message TEXT NOT NULL, delay_ns INTEGER NOT NULL,
  PRIMARY KEY(entry_id, attempt));
CREATE TABLE IF NOT EXISTS outbox_counters(name TEXT PRIMARY KEY, value INTEGER NOT NULL);
INSERT OR IGNORE INTO outbox_counters VALUES('deliveries', 0), ('dead_letters', 0);
INSERT OR IGNORE INTO outbox_counters VALUES('failures', 0), ('lease_expiries', 0);
INSERT OR IGNORE INTO outbox_meta VALUES('schema', 'mulligan-outbox-1');
)sql";

constexpr const char* kEntryColumns =
    "id, kind, idempotency_key, method, url, headers, body, job, payload, state, attempts, "
    "leases, lease_token, created_ns, next_ns, lease_owner, lease_expires_ns, finished_ns, "
    "stop_reason";

OutboxEntry ReadEntry(const Stmt& s) {
  OutboxEntry e;
  e.id = s.Int(0);
  e.spec.kind = static_cast<OutboxKind>(s.Int(1));
  e.spec.idempotency_key = s.Text(2);
  e.spec.method = s.Text(3);
  e.spec.url = s.Text(4);
  e.spec.headers = DecodeHeaders(s.Text(5));
  e.spec.body = s.Text(6);
  e.spec.job = s.Text(7);
  e.spec.payload = s.Text(8);
  e.state = static_cast<OutboxState>(s.Int(9));
  e.attempts = static_cast<int>(s.Int(10));
  e.leases = static_cast<int>(s.Int(11));
  e.created_at = FromNs(s.Int(13));
  e.next_attempt_at = FromNs(s.Int(14));
  e.lease_owner = s.Text(15);
  e.lease_expires_at = FromNs(s.Int(16));
  e.finished_at = FromNs(s.Int(17));
  e.stop_reason = s.Text(18);
  return e;
}

// Refuses a database that holds tables but no outbox_meta table: another
// program's database, to which the outbox must not add its tables. (The
// marker's value is checked after the tables are made.) A database SQLite
// cannot read yet (a read-only WAL file without its -shm) passes: its
// operations report SQLite's error, as Open documents.
Status CheckIsOutboxOrEmpty(Db& db, const std::string& path) {
  Stmt s(db,
         "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
         "ORDER BY name");
  std::vector<std::string> tables;
  bool has_meta = false;
  for (;;) {
    Result<bool> row = s.Step("read schema");
    if (!row.ok()) {
      // Not a database at all is refused; anything else is left to the
      // operations (see above).
      if (row.status().message().find("not a database") != std::string::npos) return row.status();
      return OkStatus();
    }
    if (!*row) break;
    std::string name = s.Text(0);
    if (name == "outbox_meta") has_meta = true;
    tables.push_back(std::move(name));
  }
  if (tables.empty() || has_meta) return OkStatus();
  std::string list;
  for (size_t i = 0; i < tables.size() && i < 5; ++i) list += (i ? ", " : "") + tables[i];
  if (tables.size() > 5) list += ", ...";
  return OutboxError("outbox " + path + ": not a mulligan outbox: it holds other tables (" +
                     list + ") and no outbox_meta schema marker; refusing to add the outbox's "
                     "tables to it");
}

// The store: one connection behind a mutex, each operation one transaction.
class SqliteStore final : public Store {
 public:
  SqliteStore(const RetryPolicy& p, std::unique_ptr<Db> d) : policy(p), conn(std::move(d)) {}
  Result<std::vector<OutboxEntry>> EnqueueMany(std::vector<OutboxEntrySpec> specs,
                                               WallTime now) override;
  Result<std::vector<OutboxLease>> Lease(std::string_view worker, int max_entries, WallTime now,
                                         Duration lease_timeout) override;
  Status CompleteMany(const std::vector<OutboxSuccess>& successes, WallTime now) override;
  Result<OutboxFailure> Fail(const OutboxLease& lease, const Outcome& outcome,
                             std::string_view message, WallTime now, int http_status) override;
  Result<OutboxEntry> Get(int64_t id) override;
  Result<std::vector<OutboxEntry>> List(std::optional<OutboxState> state, int limit) override;
  Result<std::vector<OutboxAttempt>> History(int64_t id) override;
  Result<OutboxStats> Stats(WallTime now) override;
  Status Retry(int64_t id, WallTime now) override;
  Result<int64_t> Purge(OutboxState state) override;

 private:
  const RetryPolicy& policy;
  std::unique_ptr<Db> conn;
  std::mutex mu;

  // Adds `delta` to counter `name` inside the caller's transaction.
  Status Count(const char* name, int64_t delta) {
    Stmt s(*conn, "UPDATE outbox_counters SET value = value + ?1 WHERE name = ?2");
    return s.Bind(1, delta).Bind(2, name).Run("count " + std::string(name));
  }
  Status RecordAttempt(int64_t id, int attempt, WallTime now, const Outcome& outcome,
                       Classification classification, std::string_view message,
                       Duration delay) {
    Stmt s(*conn, "INSERT INTO outbox_attempts VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    s.Bind(1, id).Bind(2, attempt).Bind(3, ToNs(now)).Bind(4, outcome.http_status);
    s.Bind(5, static_cast<int>(outcome.error)).Bind(6, static_cast<int>(classification));
    s.Bind(7, message).Bind(8, delay.count());
    return s.Run("record attempt");
  }
  // Counts every lease expired at `now` as a failed attempt of its entry
  // (history: "lease expired, worker W", error kind timeout, retryable) and
  // applies the policy: pending again after the backoff, or dead when that
  // was the last of max_attempts (or the deadline is reached). Inside the
  // caller's transaction.
  Status ReclaimExpiredLocked(WallTime now) {
    struct Expired {
      ScheduleInput input;
      std::string owner;
    };
    std::vector<Expired> expired;
    {
      Stmt s(*conn,
             "SELECT id, attempts, attempt_base, previous_delay_ns, created_ns, lease_owner "
             "FROM outbox_entries WHERE state = 1 AND lease_expires_ns <= ?1 "
             "ORDER BY lease_expires_ns, id");
      s.Bind(1, ToNs(now));
      for (;;) {
        Result<bool> row = s.Step("lease (expired leases)");
        if (!row.ok()) return row.status();
        if (!*row) break;
        Expired e;
        e.input.id = s.Int(0);
        e.input.attempt = static_cast<int>(s.Int(1)) + 1;
        e.input.attempt_base = static_cast<int>(s.Int(2));
        e.input.previous_delay = Duration(s.Int(3));
        e.input.created_at = FromNs(s.Int(4));
        e.input.now = now;
        e.owner = s.Text(5);
        expired.push_back(std::move(e));
      }
    }
    int64_t dead_letters = 0;
    for (const Expired& e : expired) {
      ScheduleDecision d =
          DecideAfterLeaseExpiry(policy, e.input);
      if (Status s = RecordAttempt(e.input.id, e.input.attempt, now,
                                   Outcome::Transport(ErrorKind::kTimeout), d.classification,
                                   LeaseExpiredMessage(e.owner), d.failure.delay);
          !s.ok())
        return s;
      const bool dead = d.failure.state == OutboxState::kDead;
      Stmt up(*conn,
              "UPDATE outbox_entries SET state = ?1, attempts = ?2, next_ns = ?3, "
              "previous_delay_ns = ?4, finished_ns = ?5, stop_reason = ?6, lease_owner = '' "
              "WHERE id = ?7");
      up.Bind(1, static_cast<int>(d.failure.state)).Bind(2, e.input.attempt);
      up.Bind(3, ToNs(d.failure.next_attempt_at)).Bind(4, d.backoff_delay.count());
      up.Bind(5, dead ? ToNs(now) : 0).Bind(6, dead ? StopReasonName(d.failure.reason) : "");
      up.Bind(7, e.input.id);
      if (Status s = up.Run("lease (expired lease)"); !s.ok()) return s;
      if (dead) ++dead_letters;
    }
    if (!expired.empty()) {
      if (Status s = Count("lease_expiries", static_cast<int64_t>(expired.size())); !s.ok())
        return s;
    }
    if (dead_letters > 0) return Count("dead_letters", dead_letters);
    return OkStatus();
  }
  // True when entry `id` (dead, lease token `token`) died of the expiry of
  // `lease` itself: not leased since, and its last attempt is that expiry.
  // Then a late success of that lease is a delivery (CompleteMany).
  Result<bool> DiedOfLeaseLocked(int64_t id, int64_t token, const OutboxLease& lease) {
    if (token != lease.token) return false;
    Stmt s(*conn,
           "SELECT error, message FROM outbox_attempts WHERE entry_id = ?1 "
           "ORDER BY attempt DESC LIMIT 1");
    Result<bool> row = s.Bind(1, id).Step("complete");
    if (!row.ok()) return row.status();
    return *row && s.Int(0) == static_cast<int>(ErrorKind::kTimeout) &&
           s.Text(1) == LeaseExpiredMessage(lease.entry.lease_owner);
  }
  Result<OutboxEntry> GetLocked(int64_t id) {
    Stmt s(*conn, (std::string("SELECT ") + kEntryColumns + " FROM outbox_entries WHERE id = ?1")
                    .c_str());
    s.Bind(1, id);
    Result<bool> row = s.Step("read entry");
    if (!row.ok()) return row.status();
    if (!*row) return InvalidArgumentError("no outbox entry " + std::to_string(id));
    return ReadEntry(s);
  }
};

}  // namespace

Result<std::unique_ptr<Store>> OpenSqliteStore(const OutboxOptions& options,
                                              const RetryPolicy& policy) {
  Result<std::unique_ptr<Db>> db = Db::Open(options.path, options.create);
  if (!db.ok()) return db.status();
  Db& d = **db;
  if (Status s = CheckIsOutboxOrEmpty(d, options.path); !s.ok()) return s;
  sqlite3_busy_timeout(
      d.handle(),
      static_cast<int>(std::min<int64_t>(
          std::chrono::duration_cast<std::chrono::milliseconds>(options.busy_timeout).count(),
          INT32_MAX)));
  if (!d.read_only()) {
    // journal_mode answers with a row naming the mode in force.
    Stmt wal(d, "PRAGMA journal_mode=WAL");
    Result<bool> row = wal.Step("set WAL mode");
    if (!row.ok()) return row.status();
    if (!*row || wal.Text(0) != "wal")
      return OutboxError("outbox " + options.path + ": cannot set WAL mode (journal_mode is '" +
                         (*row ? wal.Text(0) : std::string()) + "')");
  }
  const char* sync = options.sync == OutboxSync::kFull ? "PRAGMA synchronous=FULL"
                                                       : "PRAGMA synchronous=NORMAL";
  if (d.read_only()) {
    // SQLite opened the file read-only (no write permission). A WAL file
    // can then be read only where its -shm file exists or can be made
    // (https://www.sqlite.org/wal.html#readonly); when it cannot, the outbox
    // still opens, and every operation reports SQLite's error, naming the
    // file as read-only: Enqueue never pretends to have written.
    return std::unique_ptr<Store>(new SqliteStore(policy, std::move(db).value()));
  }
  if (Status s = d.Exec(sync, "set synchronous"); !s.ok()) return s;
  if (Status s = d.Exec(kCreateTables, "create tables"); !s.ok()) return s;
  {
    Stmt schema(d, "SELECT value FROM outbox_meta WHERE key = 'schema'");
    Result<bool> row = schema.Step("read schema");
    if (!row.ok()) return row.status();
    if (!*row || schema.Text(0) != kSchema)
      return OutboxError("outbox " + options.path + ": not a mulligan outbox (schema '" +
                         (*row ? schema.Text(0) : std::string()) + "', expected '" + kSchema +
                         "')");
  }
  if (options.max_size_bytes > 0) {
    Stmt page(d, "PRAGMA page_size");
    Result<bool> row = page.Step("read page size");
    if (!row.ok()) return row.status();
    int64_t pages = options.max_size_bytes / std::max<int64_t>(page.Int(0), 1);
    // SQLite never sets max_page_count below the pages in use.
    std::string sql = "PRAGMA max_page_count=" + std::to_string(std::max<int64_t>(pages, 1));
    Stmt cap(d, sql.c_str());
    if (Status s = cap.Run("set max_page_count"); !s.ok()) return s;
  }
  return std::unique_ptr<Store>(new SqliteStore(policy, std::move(db).value()));
}

Result<std::vector<OutboxEntry>> SqliteStore::EnqueueMany(std::vector<OutboxEntrySpec> stored,
                                                          WallTime now) {
  std::lock_guard<std::mutex> lock(mu);
  Db& db = *conn;
  Transaction tx(db);
  if (!tx.status().ok())
    return db.Error("cannot enqueue (nothing written)", sqlite3_extended_errcode(db.handle()));
  std::vector<OutboxEntry> entries;
  entries.reserve(stored.size());
  for (OutboxEntrySpec& spec : stored) {
    Stmt dup(db, "SELECT id FROM outbox_entries WHERE idempotency_key = ?1");
    Result<bool> row = dup.Bind(1, spec.idempotency_key).Step("cannot enqueue (nothing written)");
    if (!row.ok()) return row.status();
    if (*row)
      return InvalidArgumentError("outbox entry idempotency_key '" + spec.idempotency_key +
                                  "' is already entry " + std::to_string(dup.Int(0)));
    Stmt s(db,
           "INSERT INTO outbox_entries(kind, idempotency_key, method, url, headers, body, job, "
           "payload, state, created_ns, next_ns, previous_delay_ns) "
           "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, 0, ?9, ?9, ?10)");
    s.Bind(1, static_cast<int>(spec.kind)).Bind(2, spec.idempotency_key);
    s.Bind(3, spec.method).Bind(4, spec.url).BindBlob(5, EncodeHeaders(spec.headers));
    s.BindBlob(6, spec.body).Bind(7, spec.job).BindBlob(8, spec.payload);
    s.Bind(9, ToNs(now)).Bind(10, policy.options().backoff.base.count());
    if (Status st = s.Run("cannot enqueue (nothing written)"); !st.ok()) return st;
    OutboxEntry entry;
    entry.id = sqlite3_last_insert_rowid(db.handle());
    entry.spec = std::move(spec);
    entry.created_at = FromNs(ToNs(now));
    entry.next_attempt_at = entry.created_at;
    entries.push_back(std::move(entry));
  }
  if (Status st = tx.Commit("cannot enqueue (commit failed; nothing written)"); !st.ok())
    return st;
  return entries;
}

Result<std::vector<OutboxLease>> SqliteStore::Lease(std::string_view worker, int max_entries,
                                                    WallTime now, Duration timeout) {
  std::lock_guard<std::mutex> lock(mu);
  Db& db = *conn;
  Transaction tx(db);
  if (!tx.status().ok()) return tx.status();
  // Expired leases first: each is a failed attempt, rescheduled by the
  // policy (pending after the backoff, or dead), so it is leased below only
  // when that makes it due now.
  if (Status s = ReclaimExpiredLocked(now); !s.ok()) return s;
  // One statement leases the whole batch (SQLite >= 3.35 for RETURNING):
  // the longest due pending entries.
  const int64_t expires = ToNs(now) + timeout.count();
  const std::string sql =
      std::string("UPDATE outbox_entries SET state = 1, lease_owner = ?1, lease_expires_ns = ?2, "
                  "lease_token = lease_token + 1, leases = leases + 1 WHERE id IN ("
                  "SELECT id FROM outbox_entries WHERE state = 0 AND next_ns <= ?3 "
                  "ORDER BY next_ns, id LIMIT ?4) RETURNING ") +
      kEntryColumns;
  Stmt up(db, sql.c_str());
  up.Bind(1, worker).Bind(2, expires).Bind(3, ToNs(now)).Bind(4, max_entries);
  std::vector<OutboxLease> leases;
  for (;;) {
    Result<bool> row = up.Step("lease");
    if (!row.ok()) return row.status();
    if (!*row) break;
    OutboxLease lease;
    lease.entry = ReadEntry(up);
    lease.token = up.Int(12);  // lease_token
    lease.attempt_timeout = policy.options().attempt_timeout;
    leases.push_back(std::move(lease));
  }
  // RETURNING gives no order: hand them out oldest entry first.
  std::sort(leases.begin(), leases.end(),
            [](const OutboxLease& a, const OutboxLease& b) { return a.entry.id < b.entry.id; });
  if (Status st = tx.Commit("lease (commit)"); !st.ok()) return st;
  return leases;
}

Status SqliteStore::CompleteMany(const std::vector<OutboxSuccess>& successes, WallTime now) {
  std::lock_guard<std::mutex> lock(mu);
  Db& db = *conn;
  Transaction tx(db);
  if (!tx.status().ok()) return tx.status();
  int64_t delivered = 0;
  for (const OutboxSuccess& success : successes) {
    const int64_t id = success.lease->entry.id;
    Stmt read(db,
              "SELECT state, attempts, lease_token, idempotency_key FROM outbox_entries "
              "WHERE id = ?1");
    Result<bool> row = read.Bind(1, id).Step("complete");
    if (!row.ok()) return row.status();
    if (!*row) return OutboxError("no outbox entry " + std::to_string(id));
    if (read.Text(3) != success.lease->entry.spec.idempotency_key) return ForeignLease(id);
    const auto state = static_cast<OutboxState>(read.Int(0));
    if (state == OutboxState::kDone) continue;  // already recorded
    if (state == OutboxState::kDead) {
      // A worker that overran its lease on the last attempt did deliver.
      Result<bool> late = DiedOfLeaseLocked(id, read.Int(2), *success.lease);
      if (!late.ok()) return late.status();
      if (!*late) return OutboxError("outbox entry " + std::to_string(id) + " is already dead");
    }
    Outcome outcome = Outcome::Http(success.http_status);
    if (Status s = RecordAttempt(id, static_cast<int>(read.Int(1)) + 1, now, outcome,
                                        Classification::kSuccess, "delivered", Duration::zero());
        !s.ok())
      return s;
    Stmt up(db,
            "UPDATE outbox_entries SET state = 2, attempts = attempts + 1, finished_ns = ?1, "
            "stop_reason = 'succeeded', lease_owner = '' WHERE id = ?2");
    if (Status s = up.Bind(1, ToNs(now)).Bind(2, id).Run("complete"); !s.ok()) return s;
    ++delivered;
  }
  if (delivered > 0) {
    if (Status s = Count("deliveries", delivered); !s.ok()) return s;
  }
  return tx.Commit("complete (commit)");
}

Result<OutboxFailure> SqliteStore::Fail(const OutboxLease& lease, const Outcome& outcome,
                                   std::string_view message, WallTime now, int http_status) {
  std::lock_guard<std::mutex> lock(mu);
  Db& db = *conn;
  Transaction tx(db);
  if (!tx.status().ok()) return tx.status();
  Stmt row_stmt(db,
                "SELECT state, lease_token, attempts, attempt_base, previous_delay_ns, created_ns, "
                "idempotency_key FROM outbox_entries WHERE id = ?1");
  Result<bool> row = row_stmt.Bind(1, lease.entry.id).Step("fail");
  if (!row.ok()) return row.status();
  if (!*row) return OutboxError("no outbox entry " + std::to_string(lease.entry.id));
  if (row_stmt.Text(6) != lease.entry.spec.idempotency_key) return ForeignLease(lease.entry.id);
  if (row_stmt.Int(0) != static_cast<int>(OutboxState::kLeased) ||
      row_stmt.Int(1) != lease.token)
    return LeaseLost(lease.entry.id);
  ScheduleInput input;
  input.id = lease.entry.id;
  input.attempt = static_cast<int>(row_stmt.Int(2)) + 1;
  input.attempt_base = static_cast<int>(row_stmt.Int(3));
  input.previous_delay = Duration(row_stmt.Int(4));
  input.created_at = FromNs(row_stmt.Int(5));
  input.now = now;
  ScheduleDecision d =
      DecideAfterFailure(policy, outcome, input);
  Outcome recorded = outcome;
  if (http_status > 0) recorded.http_status = http_status;
  if (Status s = RecordAttempt(input.id, input.attempt, now, recorded, d.classification,
                                      message, d.failure.delay);
      !s.ok())
    return s;
  const bool dead = d.failure.state == OutboxState::kDead;
  Stmt up(db,
          "UPDATE outbox_entries SET state = ?1, attempts = ?2, next_ns = ?3, "
          "previous_delay_ns = ?4, finished_ns = ?5, stop_reason = ?6, lease_owner = '' "
          "WHERE id = ?7");
  up.Bind(1, static_cast<int>(d.failure.state)).Bind(2, input.attempt);
  up.Bind(3, ToNs(d.failure.next_attempt_at)).Bind(4, d.backoff_delay.count());
  up.Bind(5, dead ? ToNs(now) : 0).Bind(6, dead ? StopReasonName(d.failure.reason) : "");
  up.Bind(7, input.id);
  if (Status s = up.Run("fail"); !s.ok()) return s;
  if (Status s = Count("failures", 1); !s.ok()) return s;
  if (dead) {
    if (Status s = Count("dead_letters", 1); !s.ok()) return s;
  }
  if (Status s = tx.Commit("fail (commit)"); !s.ok()) return s;
  return d.failure;
}

Result<OutboxEntry> SqliteStore::Get(int64_t id) {
  std::lock_guard<std::mutex> lock(mu);
  return GetLocked(id);
}

Result<std::vector<OutboxEntry>> SqliteStore::List(std::optional<OutboxState> state, int limit) {
  std::lock_guard<std::mutex> lock(mu);
  std::string sql = std::string("SELECT ") + kEntryColumns + " FROM outbox_entries" +
                    (state ? " WHERE state = ?2" : "") + " ORDER BY id LIMIT ?1";
  Stmt s(*conn, sql.c_str());
  s.Bind(1, limit);
  if (state) s.Bind(2, static_cast<int>(*state));
  std::vector<OutboxEntry> entries;
  for (;;) {
    Result<bool> row = s.Step("list");
    if (!row.ok()) return row.status();
    if (!*row) break;
    entries.push_back(ReadEntry(s));
  }
  return entries;
}

Result<std::vector<OutboxAttempt>> SqliteStore::History(int64_t id) {
  std::lock_guard<std::mutex> lock(mu);
  Stmt s(*conn,
         "SELECT attempt, at_ns, http_status, error, classification, message, delay_ns "
         "FROM outbox_attempts WHERE entry_id = ?1 ORDER BY attempt");
  s.Bind(1, id);
  std::vector<OutboxAttempt> history;
  for (;;) {
    Result<bool> row = s.Step("history");
    if (!row.ok()) return row.status();
    if (!*row) break;
    OutboxAttempt a;
    a.attempt = static_cast<int>(s.Int(0));
    a.at = FromNs(s.Int(1));
    a.http_status = static_cast<int>(s.Int(2));
    a.error = static_cast<ErrorKind>(s.Int(3));
    a.classification = static_cast<Classification>(s.Int(4));
    a.message = s.Text(5);
    a.delay = Duration(s.Int(6));
    history.push_back(std::move(a));
  }
  return history;
}

Result<OutboxStats> SqliteStore::Stats(WallTime now) {
  std::lock_guard<std::mutex> lock(mu);
  Db& db = *conn;
  OutboxStats stats;
  Stmt counts(db, "SELECT state, COUNT(*) FROM outbox_entries GROUP BY state");
  for (;;) {
    Result<bool> row = counts.Step("stats");
    if (!row.ok()) return row.status();
    if (!*row) break;
    int64_t n = counts.Int(1);
    switch (static_cast<OutboxState>(counts.Int(0))) {
      case OutboxState::kPending: stats.pending = n; break;
      case OutboxState::kLeased: stats.leased = n; break;
      case OutboxState::kDone: stats.done = n; break;
      case OutboxState::kDead: stats.dead = n; break;
    }
  }
  stats.depth = stats.pending + stats.leased;
  Stmt oldest(db, "SELECT MIN(created_ns) FROM outbox_entries WHERE state IN (0, 1)");
  Result<bool> row = oldest.Step("stats");
  if (!row.ok()) return row.status();
  if (*row && !oldest.IsNull(0))
    stats.oldest_age = std::max(Duration::zero(), Duration(ToNs(now) - oldest.Int(0)));
  Stmt counters(db, "SELECT name, value FROM outbox_counters");
  for (;;) {
    Result<bool> r = counters.Step("stats");
    if (!r.ok()) return r.status();
    if (!*r) break;
    if (counters.Text(0) == "deliveries") stats.deliveries = counters.Int(1);
    if (counters.Text(0) == "dead_letters") stats.dead_letters = counters.Int(1);
    if (counters.Text(0) == "failures") stats.failures = counters.Int(1);
    if (counters.Text(0) == "lease_expiries") stats.lease_expiries = counters.Int(1);
  }
  return stats;
}

Status SqliteStore::Retry(int64_t id, WallTime now) {
  std::lock_guard<std::mutex> lock(mu);
  Db& db = *conn;
  Transaction tx(db);
  if (!tx.status().ok()) return tx.status();
  Result<OutboxEntry> entry = GetLocked(id);
  if (!entry.ok()) return entry.status();
  if (entry->state != OutboxState::kDead)
    return InvalidArgumentError("outbox entry " + std::to_string(id) + " is " +
                                OutboxStateName(entry->state) + ", not dead");
  Stmt up(db,
          "UPDATE outbox_entries SET state = 0, next_ns = ?1, attempt_base = attempts, "
          "previous_delay_ns = ?2, finished_ns = 0, stop_reason = '' WHERE id = ?3");
  up.Bind(1, ToNs(now)).Bind(2, policy.options().backoff.base.count()).Bind(3, id);
  if (Status s = up.Run("retry"); !s.ok()) return s;
  return tx.Commit("retry (commit)");
}

Result<int64_t> SqliteStore::Purge(OutboxState state) {
  std::lock_guard<std::mutex> lock(mu);
  Db& db = *conn;
  Transaction tx(db);
  if (!tx.status().ok()) return tx.status();
  Stmt history(db,
               "DELETE FROM outbox_attempts WHERE entry_id IN "
               "(SELECT id FROM outbox_entries WHERE state = ?1)");
  if (Status s = history.Bind(1, static_cast<int>(state)).Run("purge"); !s.ok()) return s;
  Stmt entries(db, "DELETE FROM outbox_entries WHERE state = ?1");
  if (Status s = entries.Bind(1, static_cast<int>(state)).Run("purge"); !s.ok()) return s;
  int64_t removed = sqlite3_changes(db.handle());
  if (Status s = tx.Commit("purge (commit)"); !s.ok()) return s;
  return removed;
}

}  // namespace outbox_internal
}  // namespace v0
}  // namespace mulligan
