// mulligan/outbox/redis_outbox.h — the durable outbox on Redis Streams
// (issue 21), for many workers on many machines: the same Outbox, the same
// contract (outbox.h), with its entries on a Redis server instead of in an
// SQLite file. CMake target mulligan_outbox_redis (mulligan_outbox +
// mulligan_redis): a program that uses only the SQLite outbox links no
// hiredis. (Added in 0.6.)
//
//   RedisStateOptions so;
//   so.url = "redis://10.0.0.5:6379/0";
//   Result<std::shared_ptr<RedisState>> state = RedisState::Create(so);
//   OutboxOptions o;
//   o.name = "webhooks";            // the outbox's name on the server
//   Result<std::unique_ptr<Outbox>> box = OpenRedisOutbox(*state, o);
//
// Layout: every key of one outbox shares the hash tag of
// RedisState::Key("outbox", name), "{prefix:outbox:name}" (state/backend.h),
// so every script touches one slot (Redis Cluster hashes only the tag):
//   <tag>:meta        hash: schema "mulligan-outbox-redis-1", the id
//                     sequence, and the counters deliveries, dead_letters,
//                     failures, lease_expiries
//   <tag>:keys        hash: idempotency key -> id (keys are unique)
//   <tag>:e:<id>      hash: the entry (what to deliver, state, attempts,
//                     lease owner and token, times)
//   <tag>:h:<id>      list: the attempt history, first attempt first
//   <tag>:due         sorted set: pending entries by next attempt time
//                     (delayed retries wait here)
//   <tag>:stream      stream with consumer group "workers": an entry due at
//                     a Lease's `now` is added to it (XADD) and handed out
//                     by XREADGROUP, so the group's pending list (XPENDING)
//                     shows which worker (consumer) holds which entry;
//                     Complete, Fail and an expired lease XACK and XDEL it
//   <tag>:leases      sorted set: leased entries by lease expiry
//   <tag>:all, :s:<state>, :live   sorted sets for List, Stats (the counts
//                     per state) and the oldest live entry's age
// Every operation is one Lua script (atomic) or one read; Fail and a Lease
// that finds expired leases read first, let the retry policy decide in the
// client (the same decision code as the SQLite outbox: the seeded jitter of
// attempt n of entry id is the same draw), then apply the decision in one
// script that first checks the entry's lease token is unchanged, so two
// workers never both record one expiry and a stale lease gets "lease lost".
//
// Lease expiry is judged on the caller's `now`, as with SQLite, not on the
// consumer group's idle times (Redis's own clock): the lease set holds each
// lease's end in the caller's time, so Lease is deterministic on a fake
// clock and across machines whose clocks agree. Times are stored as
// nanoseconds since the Unix epoch, in a fixed-width decimal form that Lua
// compares as strings (Lua's doubles cannot hold them exactly).
//
// Two workers never lease the same entry: XREADGROUP hands each stream
// message to one consumer, inside the script that marks the entry leased.
// Due entries are handed out in the order they became due (moved to the
// stream oldest due first), Lease returns its batch in id order.
//
// Durability (https://redis.io/docs/management/persistence/): Redis keeps
// the outbox in memory; what survives depends on the server's persistence.
//   OutboxSync::kFull (default)  Open requires the server to report
//     appendonly yes and appendfsync always (CONFIG GET), else kOutbox
//     naming the settings: then every write is fsync'ed to the AOF before
//     Redis replies, so an Enqueue, Complete or Fail that returned survives
//     a power loss, the SQLite kFull guarantee. A server that refuses CONFIG
//     (a managed Redis) is refused too: choose kNormal and configure it.
//   OutboxSync::kNormal  no check: the guarantee is the server's own
//     (appendfsync everysec loses at most about a second of writes on a
//     crash of the server, no persistence loses everything on a restart).
// Replication is asynchronous: a failover to a replica may lose writes the
// primary acknowledged (WAIT is not used; Redis 7.2's WAITAOF would be the
// tool for a replicated kFull).
//
// Failure: every operation is bounded by the RedisState's command_timeout
// (connect_timeout to connect) and returns kOutbox "outbox <name> at
// redis://host:port/db: <operation> failed: ..." (no credentials) when Redis
// is down, slow or answers an error. A failed Enqueue wrote nothing, except
// when its reply was lost after the script ran (a timeout): the message
// then names the entry's idempotency key, which a second Enqueue with that
// key resolves ("already entry N", or written now). Complete is recorded
// before it returns OK, so an acknowledged Complete is never lost (with the
// persistence above); an unacknowledged one leaves the entry leased, and
// its lease expiry hands it over again (at least once, same key).
//
// Options: `name` names the outbox (required); `path` must be empty (the
// RedisState says where); max_size_bytes must be 0 (bound the server with
// maxmemory: a full server refuses Enqueue with its OOM error and writes
// nothing); busy_timeout is not read (the state's command_timeout bounds
// every call); `create` false makes Open refuse an outbox that does not
// exist on the server (kOutbox "no such outbox"); sync, lease_timeout and
// retry as for SQLite.
//
// Thread-safety: as Outbox; the RedisState's one connection serializes
// commands, so many threads share one round trip at a time.

#ifndef MULLIGAN_OUTBOX_REDIS_OUTBOX_H_
#define MULLIGAN_OUTBOX_REDIS_OUTBOX_H_

#include <memory>

#include "mulligan/base/status.h"
#include "mulligan/outbox/outbox.h"
#include "mulligan/state/redis.h"

namespace mulligan {
inline namespace v0 {

// Opens (creating when absent, unless options.create is false) the outbox
// options.name on `state`'s server. kInvalidArgument names a bad option (a
// null state, path set, name empty, max_size_bytes set, and Outbox::Open's
// checks); kOutbox when the server cannot be reached within the state's
// bounds, holds another schema under the name, or (sync full) does not
// fsync every write. The outbox keeps `state`. (Added in 0.6.)
Result<std::unique_ptr<Outbox>> OpenRedisOutbox(std::shared_ptr<RedisState> state,
                                                const OutboxOptions& options);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_OUTBOX_REDIS_OUTBOX_H_
