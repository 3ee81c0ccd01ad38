// mulligan/outbox/outbox.h — the durable outbox: a queue of calls that must
// eventually happen, kept in an SQLite database so that they survive a
// restart of the process (issue 21; DESIGN.md section 4, "outbox").
//
// An entry is an HTTP request (method, URL, headers, body) or a named job
// with a payload. Its life:
//
//   Enqueue   the entry is written (one transaction) before any attempt,
//             with one Idempotency-Key for its whole life (given, or a fresh
//             UUID v4), state pending, next attempt = now.
//   Lease     a worker takes due entries for a visibility timeout (Amazon
//             SQS's term): while the lease runs no other worker sees the
//             entry; when it expires (the worker crashed, or is too slow)
//             the next Lease counts it as a failed attempt (history: "lease
//             expired, worker W") and the policy reschedules it, so that an
//             entry whose delivery kills every worker (a poison entry) ends
//             dead after max_attempts instead of being retried forever.
//             (Counting expired leases: added in 0.6.)
//   Complete  the attempt succeeded: the entry is done.
//   Fail      the attempt failed with an Outcome: the retry policy decides,
//             exactly as the pipeline's strategy 4 does, from the policy's
//             classification, backoff and jitter, and Retry-After rules
//             (retry/policy.h): the entry is pending again at now + delay,
//             or dead-lettered (terminal outcome, attempts exhausted,
//             Retry-After too long, entry older than the deadline) with its
//             attempt history kept.
//
// Delivery is at least once: an attempt that reached the receiver just
// before its worker crashed is made again after the lease expires, with the
// same Idempotency-Key, so a receiver that deduplicates (mulligan's
// idempotency middleware, Stripe's API) applies it exactly once.
//
// Durability (https://www.sqlite.org/wal.html, /pragma.html#pragma_synchronous):
// the database is in WAL mode. With OutboxSync::kFull (the default) every
// committed transaction is fsync'ed before Enqueue, Complete or Fail returns,
// so an entry whose Enqueue returned survives a power loss. With
// OutboxSync::kNormal the WAL is fsync'ed only at checkpoints: a committed
// transaction survives a crash of the process, but the last ones may be lost
// on a power loss or an OS crash (never corrupting the database). A
// busy_timeout makes a writer wait for another process's transaction instead
// of failing at once.
//
// Times: every operation takes the caller's wall-clock time (`now`, from
// Clock::WallNow(); a FakeClock in tests), because stored times must keep
// their meaning across restarts, which monotonic time does not. They are
// stored as nanoseconds since the Unix epoch.
//
// Errors: Status with kInvalidArgument (bad options or entry, naming the
// field), kOutbox (SQLite failed: read-only file, disk or size cap full, not
// a database, lost lease; the message names the file and SQLite's error
// text). An Enqueue that returns an error wrote nothing; one that returns OK
// wrote the entry (never a silent drop).
//
// Thread-safety: an Outbox is internally synchronized (one SQLite connection
// behind a mutex, each operation one transaction), so many threads may share
// one. Many processes may open the same file: each operation that writes runs
// in a BEGIN IMMEDIATE transaction, which SQLite serializes across processes.
//
// Backends (0.6): this header's Open keeps the outbox in an SQLite file, the
// embedded default described above; OpenRedisOutbox (redis_outbox.h, library
// mulligan_outbox_redis) keeps the same Outbox, with the same contract, on a
// Redis server (Redis Streams with a consumer group), for many workers on
// many machines. Where the file comment names SQLite (durability, errors,
// Open's checks), redis_outbox.h says what Redis does instead.

#ifndef MULLIGAN_OUTBOX_OUTBOX_H_
#define MULLIGAN_OUTBOX_OUTBOX_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/status.h"
#include "mulligan/retry/policy.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
inline namespace v0 {

namespace outbox_internal {
class Store;
struct OutboxAccess;
}  // namespace outbox_internal

// What an entry holds. Values are stored in the database; append only.
// (Added in 0.5.)
enum class OutboxKind : int {
  // An HTTP request (method, url, headers, body).
  kHttp = 0,
  // A named job with a payload, run by a handler registered under its name.
  kJob = 1,
};

// Where an entry is in its life. Values are stored in the database; append
// only. (Added in 0.5.)
enum class OutboxState : int {
  // Waiting for its next attempt (due at next_attempt_at).
  kPending = 0,
  // Held by a worker until lease_expires_at.
  kLeased = 1,
  // Delivered (Complete).
  kDone = 2,
  // Given up (dead letter); its history says why.
  kDead = 3,
};

// Returns "http" / "job", and "pending", "leased", "done", "dead" (or
// "unknown"). (Added in 0.5.)
const char* OutboxKindName(OutboxKind kind);
const char* OutboxStateName(OutboxState state);
// Parses the state names above. kInvalidArgument on anything else.
Result<OutboxState> ParseOutboxState(std::string_view name);

// How often SQLite fsyncs (PRAGMA synchronous; see the file comment).
// (Added in 0.5.)
enum class OutboxSync : int {
  // Every commit is on disk before the operation returns. Default.
  kFull = 0,
  // Survives a process crash; the last commits may be lost on power loss.
  kNormal = 1,
};

// Plain options, validated by Outbox::Open. (Added in 0.5.)
struct OutboxOptions {
  // The database file (created when absent, unless `create` is false).
  // Required, not empty.
  std::string path;
  // When false, Open never creates the file: an absent one is kOutbox "no
  // such file" (what the command's inspection and repair actions use, so a
  // mistyped path makes no database). Default true. (Added in 0.6.)
  bool create = true;
  OutboxSync sync = OutboxSync::kFull;
  // How long a write waits for another connection's transaction before
  // failing with kOutbox ("database is locked"). Must be >= 0. Default 5 s.
  Duration busy_timeout = std::chrono::seconds(5);
  // The visibility timeout Lease gives when its caller passes none. Must be
  // > 0. Default 30 s.
  Duration lease_timeout = std::chrono::seconds(30);
  // The retry policy: max_attempts (attempts per entry, counted across
  // restarts), backoff and jitter, seed, Retry-After (respect_retry_after,
  // retry_after_max, retry_after_overflow), classification (statuses,
  // errors), and deadline, which here bounds an entry's age: an entry is
  // dead-lettered rather than retried at or after created_at + deadline.
  // attempt_timeout is the worker's bound on one delivery. Validated as
  // RetryPolicy::Create does; `stop` and max_kind_retries are refused
  // (kInvalidArgument naming "retry.stop" / "retry.max_kind_retries"): they
  // describe one in-memory call. Default: DESIGN.md's (3 attempts,
  // exponential from 200 ms, full jitter, cap 10 s).
  RetryOptions retry;
  // When > 0, a cap on the database's size in bytes (SQLite's
  // max_page_count, rounded down to whole pages, at least the pages already
  // used): an Enqueue that would grow past it fails with kOutbox "database
  // or disk is full", the error a full disk gives, and writes nothing.
  // Must be >= 0. Default 0 (no cap).
  int64_t max_size_bytes = 0;
  // The name metrics export this outbox under (the `outbox` label of
  // mulligan_outbox_*; see MetricsRegistry::Track); empty: the path.
  // (Added in 0.6.) On Redis (redis_outbox.h), required: the outbox's name
  // on the server, in its keys.
  std::string name;
};

// One header of an HTTP entry. Names hold no ':' and no control byte;
// values no CR, LF or NUL.
struct OutboxHeader {
  std::string name;
  std::string value;
};

// What Enqueue writes. (Added in 0.5.)
struct OutboxEntrySpec {
  OutboxKind kind = OutboxKind::kHttp;
  // kHttp: the method ("POST"; an RFC 9110 token, required) and absolute
  // URL (required), headers in order (an Idempotency-Key header among them
  // is refused: the entry's own key is sent), and the body (bytes).
  std::string method;
  std::string url;
  std::vector<OutboxHeader> headers;
  std::string body;
  // kJob: the handler's name (required, not empty) and the payload (bytes).
  std::string job;
  std::string payload;
  // The entry's Idempotency-Key; empty: a fresh UUID v4 from the OS CSPRNG.
  // Printable ASCII without spaces, at most 255 bytes; unique in the outbox
  // (a key already there is refused with kInvalidArgument, so a caller that
  // enqueues twice with its own key enqueues once).
  std::string idempotency_key;
};

// One attempt in an entry's history.
struct OutboxAttempt {
  // 1 for the first.
  int attempt = 0;
  // When Fail or Complete recorded it (Lease, for an expired lease).
  WallTime at;
  // The HTTP status the attempt got, or 0.
  int http_status = 0;
  // The failure's kind (kNone for a response or a success).
  ErrorKind error = ErrorKind::kNone;
  Classification classification = Classification::kSuccess;
  // The caller's text ("connection refused", "HTTP 503", "ValueError: ..."),
  // or "lease expired, worker W" (error kTimeout, kRetryable) for a lease
  // that expired unfinished.
  std::string message;
  // The wait decided after it (zero when it ended the entry).
  Duration delay = Duration::zero();
};

// An entry as stored. (Added in 0.5.)
struct OutboxEntry {
  int64_t id = 0;
  OutboxEntrySpec spec;  // spec.idempotency_key is the entry's key
  OutboxState state = OutboxState::kPending;
  // Attempts recorded by Fail and Complete, and leases that expired
  // unfinished (since 0.6).
  int attempts = 0;
  // Times Lease handed the entry out.
  int leases = 0;
  WallTime created_at;
  WallTime next_attempt_at;
  // kLeased: the holder's name and when the lease ends.
  std::string lease_owner;
  WallTime lease_expires_at;
  // kDone / kDead: when, and (kDead) why: a StopReasonName
  // ("attempts_exhausted", "terminal", "retry_after_too_long", "deadline")
  // or "manual".
  WallTime finished_at;
  std::string stop_reason;
};

// What Lease hands a worker: the entry and the proof of holding it.
struct OutboxLease {
  OutboxEntry entry;
  // Changes every time the entry is leased; Fail checks it.
  int64_t token = 0;
  // The bound on this delivery: the policy's attempt_timeout, or nullopt.
  std::optional<Duration> attempt_timeout;
};

// One success for CompleteMany: the lease (borrowed during the call) and
// the response's status (0 for a job).
struct OutboxSuccess {
  const OutboxLease* lease = nullptr;
  int http_status = 0;
};

// What Fail decided.
struct OutboxFailure {
  // kPending (retry at next_attempt_at) or kDead.
  OutboxState state = OutboxState::kPending;
  WallTime next_attempt_at;
  Duration delay = Duration::zero();
  // kDead: why (StopReasonName).
  StopReason reason = StopReason::kNone;
  // The attempt number just recorded.
  int attempt = 0;
};

// Counts for metrics and the command. (Added in 0.5.)
struct OutboxStats {
  // Entries pending or leased (the queue's depth).
  int64_t depth = 0;
  int64_t pending = 0;
  int64_t leased = 0;
  int64_t done = 0;
  int64_t dead = 0;
  // Age at `now` of the oldest entry not done nor dead (zero when none).
  Duration oldest_age = Duration::zero();
  // Deliveries (Complete) and dead letters since the database was made
  // (kept across restarts and purges).
  int64_t deliveries = 0;
  int64_t dead_letters = 0;
  // Failed attempts recorded by Fail, and leases that expired unfinished
  // (each an attempt), since 0.6 (a 0.5 file counts from its first opening
  // by 0.6). (Added in 0.6.)
  int64_t failures = 0;
  int64_t lease_expiries = 0;
};

// The durable outbox over one SQLite file. See the file comment.
//
// Metrics (0.6): an Outbox held by a shared_ptr can be tracked by a
// MetricsRegistry (`registry.Track(box)`), which reads Stats at every
// snapshot: mulligan_outbox_depth{outbox,state}, _oldest_age_seconds,
// _deliveries_total{result} and _dead_letters_total (telemetry/metrics.h).
//
// Thread-safety: internally synchronized; share one between threads freely.
// Not copyable or movable: it owns the connection and its mutex.
class Outbox : public OutboxMetricsSource {
 public:
  // Opens (creating when absent) the outbox at options.path: sets WAL mode,
  // synchronous, busy_timeout and the size cap, and creates the tables.
  // kInvalidArgument names a bad option; kOutbox when the file cannot be
  // opened or is not an outbox. A file is an outbox when its outbox_meta
  // table holds the schema marker ("schema" = "mulligan-outbox-1"); a
  // database that holds tables but no outbox_meta table is refused
  // (kOutbox "not a mulligan outbox: it holds other tables ..."), so the
  // outbox never adds its tables to another program's database; an empty
  // database (or a new file) becomes an outbox. (Refusing foreign
  // databases: added in 0.6.) A file SQLite can only open read-only (no
  // write permission) still opens: every write then fails with kOutbox
  // saying the file is read-only, and reads work where SQLite can read a
  // read-only WAL file (its -shm file exists or can be made). A path that
  // is a redis:// or rediss:// URL is kInvalidArgument naming
  // OpenRedisOutbox (redis_outbox.h), which opens a Redis outbox. (0.6.)
  static Result<std::unique_ptr<Outbox>> Open(const OutboxOptions& options);

  Outbox(const Outbox&) = delete;
  Outbox& operator=(const Outbox&) = delete;
  ~Outbox() override;

  // Validates `spec` (kInvalidArgument naming the field), then writes the
  // entry in one transaction, due at `now`. Returns the stored entry (its
  // id and key). kOutbox when SQLite cannot write (read-only file, full
  // disk or size cap): nothing was written.
  Result<OutboxEntry> Enqueue(const OutboxEntrySpec& spec, WallTime now);

  // Writes several entries in one transaction (one fsync with
  // OutboxSync::kFull), all or none: the first bad spec, a key already
  // there (or given twice), or an SQLite error writes nothing. Returns the
  // stored entries in the order given.
  Result<std::vector<OutboxEntry>> EnqueueMany(const std::vector<OutboxEntrySpec>& specs,
                                               WallTime now);

  // Leases up to `max_entries` (>= 1) due entries to `worker` (a name for
  // the command's listing) at `now`: pending ones with next_attempt_at <=
  // now, the longest due chosen first, each until now + `lease_timeout`
  // (> 0; nullopt: options.lease_timeout). Returns them in id (enqueue)
  // order; none when nothing is due. First, in the same transaction, every
  // lease expired at `now` (lease_expires_at <= now) is recorded as a
  // failed, retryable attempt ("lease expired, worker W") and the policy
  // decides as Fail does: pending after the backoff delay (so the entry is
  // leased by this call only when that delay is zero), or dead
  // ("attempts_exhausted", "deadline") with its history kept. (Counting
  // expired leases: added in 0.6; 0.5 handed them out again uncounted.)
  Result<std::vector<OutboxLease>> Lease(std::string_view worker, int max_entries, WallTime now,
                                         std::optional<Duration> lease_timeout = std::nullopt);

  // Records a successful attempt of a leased entry at `now` (`http_status`:
  // the response's status, or 0) and marks it done. Accepted even when the
  // lease has expired or passed to another worker (the delivery did
  // happen, and the receiver saw the same key), and when the expiry of this
  // very lease made the entry dead (not leased since); kOutbox when the
  // entry is unknown or dead otherwise; kInvalidArgument when the lease was
  // made by an outbox on another file (its key is not the entry's).
  Status Complete(const OutboxLease& lease, WallTime now, int http_status = 0);

  // Records the successes of several leased entries at `now` in one
  // transaction, so one commit (one fsync with OutboxSync::kFull) serves a
  // whole batch: a worker's group commit. Each is judged as Complete judges
  // it; the first error rolls the whole batch back (nothing recorded). A
  // worker that dies before calling it has its batch delivered again, with
  // the same keys (at least once). kInvalidArgument for a null lease.
  Status CompleteMany(const std::vector<OutboxSuccess>& successes, WallTime now);

  // Records a failed attempt (`outcome`, with the caller's `message`) of a
  // leased entry at `now`, and applies the retry policy (see the file
  // comment). The jitter of attempt n of entry id is drawn from
  // Random(seed + id * 0x9E3779B97F4A7C15 + n) (wrapping 64-bit arithmetic)
  // when the policy has a seed, so a schedule is reproducible across
  // restarts; from the OS's entropy otherwise. A success outcome is
  // kInvalidArgument (call Complete). kOutbox "lease lost" when the entry
  // was leased again since `lease` (another worker now owns its schedule),
  // or its expiry was recorded; kInvalidArgument when the lease was made by
  // an outbox on another file.
  // `http_status`, when > 0, is the status the history records for an
  // outcome that does not carry it (HttpResponseOutcome turns a keyed 409
  // with Retry-After into a classified failure); otherwise
  // outcome.http_status is recorded.
  Result<OutboxFailure> Fail(const OutboxLease& lease, const Outcome& outcome,
                             std::string_view message, WallTime now, int http_status = 0);

  // Returns the entry with `id`, or kInvalidArgument "no outbox entry <id>".
  Result<OutboxEntry> Get(int64_t id);
  // Returns up to `limit` (>= 1) entries, oldest first; in `state` only
  // when given.
  Result<std::vector<OutboxEntry>> List(std::optional<OutboxState> state, int limit);
  // Returns the attempt history of entry `id`, first attempt first.
  Result<std::vector<OutboxAttempt>> History(int64_t id);
  // Returns the counts and the oldest age at `now`.
  Result<OutboxStats> Stats(WallTime now);

  // Makes a dead entry pending again, due at `now`, with its attempt count
  // and history kept and a fresh attempt budget of max_attempts from here
  // (the command's `retry`). kInvalidArgument when it is not dead.
  Status Retry(int64_t id, WallTime now);
  // Deletes the entries in `state` (kDone or kDead only: live ones are
  // refused with kInvalidArgument) and their history; returns how many.
  Result<int64_t> Purge(OutboxState state);

  const OutboxOptions& options() const;
  const RetryPolicy& policy() const;

  // OutboxMetricsSource (Added in 0.6.): options.name, or the path.
  const std::string& metrics_name() const override;
  // Fills `out` from Stats(now); false when Stats failed.
  bool SampleMetrics(WallTime now, LimitsSnapshot::Outbox* out) override;

 private:
  friend struct outbox_internal::OutboxAccess;
  using StoreFactory = std::function<Result<std::unique_ptr<outbox_internal::Store>>(
      const OutboxOptions&, const RetryPolicy&)>;
  // Validates the options every backend reads and the policy, then opens the
  // store with them.
  static Result<std::unique_ptr<Outbox>> OpenWith(const OutboxOptions& options,
                                                  const StoreFactory& open_store);
  struct Impl;
  explicit Outbox(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_OUTBOX_OUTBOX_H_
