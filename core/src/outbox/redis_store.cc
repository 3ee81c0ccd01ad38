// core/src/outbox/redis_store.cc — the outbox's Redis Streams store
// (outbox/store.h; the layout and guarantees are
// mulligan/outbox/redis_outbox.h's, the scripts outbox/redis_scripts.h).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "mulligan/outbox/redis_outbox.h"
#include "outbox/redis_scripts.h"
#include "outbox/schedule.h"
#include "outbox/store.h"

namespace mulligan {
inline namespace v0 {
namespace outbox_internal {
namespace {

constexpr const char* kRedisSchema = "mulligan-outbox-redis-1";

// The fixed-width form of a time that sorts as its value does (see
// redis_scripts.h): the sign bit flipped, 20 decimal digits.
std::string Lex(WallTime t) {
  const uint64_t v = static_cast<uint64_t>(ToNs(t)) ^ (uint64_t{1} << 63);
  std::string digits = std::to_string(v);
  return std::string(20 - digits.size(), '0') + digits;
}

WallTime FromLex(const std::string& lex) {
  if (lex.empty()) return WallTime{};
  const uint64_t v = std::strtoull(lex.c_str(), nullptr, 10) ^ (uint64_t{1} << 63);
  return FromNs(static_cast<int64_t>(v));
}

int64_t ToInt(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

std::string Str(const RedisValue& v) {
  return v.type == RedisValue::Type::kInteger ? std::to_string(v.integer) : v.str;
}

// The history record's part after its attempt number.
std::string RecordRest(WallTime at, int http_status, ErrorKind error,
                       Classification classification, Duration delay, std::string_view message) {
  return std::to_string(ToNs(at)) + "|" + std::to_string(http_status) + "|" +
         std::to_string(static_cast<int>(error)) + "|" +
         std::to_string(static_cast<int>(classification)) + "|" +
         std::to_string(delay.count()) + "|" + std::string(message);
}

OutboxAttempt ParseRecord(const std::string& record) {
  std::vector<std::string> parts;
  size_t pos = 0;
  for (int i = 0; i < 6; ++i) {
    const size_t bar = record.find('|', pos);
    if (bar == std::string::npos) break;
    parts.push_back(record.substr(pos, bar - pos));
    pos = bar + 1;
  }
  OutboxAttempt a;
  if (parts.size() < 6) return a;
  a.attempt = static_cast<int>(ToInt(parts[0]));
  a.at = FromNs(ToInt(parts[1]));
  a.http_status = static_cast<int>(ToInt(parts[2]));
  a.error = static_cast<ErrorKind>(ToInt(parts[3]));
  a.classification = static_cast<Classification>(ToInt(parts[4]));
  a.delay = Duration(ToInt(parts[5]));
  a.message = record.substr(pos);
  return a;
}

// An entry from its hash (HGETALL's field, value pairs).
OutboxEntry ParseEntry(const RedisValue& hash, int64_t* token = nullptr) {
  std::map<std::string, std::string> f;
  for (size_t i = 0; i + 1 < hash.elements.size(); i += 2)
    f[hash.elements[i].str] = hash.elements[i + 1].str;
  OutboxEntry e;
  e.id = ToInt(f["id"]);
  e.spec.kind = static_cast<OutboxKind>(ToInt(f["kind"]));
  e.spec.idempotency_key = f["key"];
  e.spec.method = f["method"];
  e.spec.url = f["url"];
  e.spec.headers = DecodeHeaders(f["headers"]);
  e.spec.body = f["body"];
  e.spec.job = f["job"];
  e.spec.payload = f["payload"];
  e.state = static_cast<OutboxState>(ToInt(f["state"]));
  e.attempts = static_cast<int>(ToInt(f["attempts"]));
  e.leases = static_cast<int>(ToInt(f["leases"]));
  e.created_at = FromLex(f["createdl"]);
  e.next_attempt_at = FromLex(f["nextl"]);
  e.lease_owner = f["owner"];
  e.lease_expires_at = FromLex(f["expl"]);
  e.finished_at = FromLex(f["finl"]);
  e.stop_reason = f["stop"];
  if (token != nullptr) *token = ToInt(f["token"]);
  return e;
}

class RedisStore final : public Store {
 public:
  RedisStore(std::shared_ptr<RedisState> state, const OutboxOptions& options,
             const RetryPolicy& policy)
      : state_(std::move(state)),
        policy_(policy),
        name_(options.name),
        tag_(state_->Key("outbox", options.name)) {}

  Status Open(const OutboxOptions& options);

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
  // A failure of the state as this outbox's kOutbox error. The state's
  // message names the endpoint without credentials.
  Status Error(std::string_view what, const Status& s) const {
    return OutboxError("outbox " + name_ + ": " + std::string(what) + " failed: " + s.message());
  }
  Result<RedisValue> Run(const RedisScript& script, std::vector<std::string> args,
                         std::string_view what) {
    Result<RedisValue> r = state_->Eval(script, {tag_}, args);
    if (!r.ok()) return Error(what, r.status());
    return r;
  }
  Result<RedisValue> Command(std::vector<std::string> argv, std::string_view what) {
    Result<RedisValue> r = state_->Command(argv);
    if (!r.ok()) return Error(what, r.status());
    return r;
  }
  std::string EntryKey(int64_t id) const { return tag_ + ":e:" + std::to_string(id); }
  // The decisions on every lease expired at `now`, as the Lease script's
  // arguments (10 each), and how many.
  Status DecideExpired(WallTime now, std::vector<std::string>* args, int* count);

  static RedisScript Script(const char* body, bool retry_safe) {
    return RedisScript(std::string(kLuaHelpers) + body, retry_safe);
  }

  std::shared_ptr<RedisState> state_;
  const RetryPolicy& policy_;
  std::string name_;
  std::string tag_;
  // Scripts whose second run finds what the first did are retry-safe
  // (redis.h); Enqueue and Fail are not (a second run would misreport).
  const RedisScript open_{Script(kLuaOpen, true)};
  const RedisScript enqueue_{Script(kLuaEnqueue, false)};
  const RedisScript expired_{Script(kLuaExpired, true)};
  const RedisScript lease_{Script(kLuaLease, true)};
  const RedisScript complete_{Script(kLuaComplete, true)};
  const RedisScript fail_{Script(kLuaFail, false)};
  const RedisScript list_{Script(kLuaList, true)};
  const RedisScript stats_{Script(kLuaStats, true)};
  const RedisScript retry_{Script(kLuaRetry, true)};
  const RedisScript purge_{Script(kLuaPurge, true)};
};

Status RedisStore::Open(const OutboxOptions& options) {
  Result<RedisValue> opened =
      Run(open_, {kRedisSchema, options.create ? "1" : "0"}, "open");
  if (!opened.ok()) return opened.status();
  if (opened->type == RedisValue::Type::kInteger && opened->integer == 0)
    return OutboxError("outbox " + name_ + " at " + state_->endpoint() +
                       ": no such outbox (create is false)");
  if (opened->type != RedisValue::Type::kInteger)
    return OutboxError("outbox " + name_ + " at " + state_->endpoint() +
                       ": not a mulligan Redis outbox (schema '" + opened->str + "', expected '" +
                       kRedisSchema + "')");
  if (options.sync != OutboxSync::kFull) return OkStatus();
  // kFull needs every write fsync'ed before Redis replies (see the header).
  std::string found;
  for (const char* setting : {"appendonly", "appendfsync"}) {
    Result<RedisValue> r = state_->Command({"CONFIG", "GET", setting});
    if (!r.ok())
      return OutboxError("outbox " + name_ + ": sync full needs the server's appendonly and "
                         "appendfsync settings, and CONFIG GET failed (" + r.status().message() +
                         "); set sync normal and configure persistence on the server");
    const std::string value = r->elements.size() == 2 ? r->elements[1].str : "";
    found += (found.empty() ? "" : ", ") + std::string(setting) + " " + value;
  }
  if (found != "appendonly yes, appendfsync always")
    return OutboxError("outbox " + name_ + " at " + state_->endpoint() +
                       ": sync full needs a server that fsyncs every write (appendonly yes, "
                       "appendfsync always), got " + found + "; or set sync normal");
  return OkStatus();
}

Result<std::vector<OutboxEntry>> RedisStore::EnqueueMany(std::vector<OutboxEntrySpec> specs,
                                                         WallTime now) {
  std::vector<std::string> args = {Lex(now),
                                   std::to_string(policy_.options().backoff.base.count()),
                                   std::to_string(specs.size())};
  for (const OutboxEntrySpec& s : specs) {
    args.insert(args.end(), {std::to_string(static_cast<int>(s.kind)), s.idempotency_key,
                             s.method, s.url, EncodeHeaders(s.headers), s.body, s.job,
                             s.payload});
  }
  Result<RedisValue> r = state_->Eval(enqueue_, {tag_}, args);
  if (!r.ok()) {
    std::string keys;
    for (size_t i = 0; i < specs.size() && i < 3; ++i)
      keys += (i ? ", " : "") + specs[i].idempotency_key;
    if (specs.size() > 3) keys += ", ...";
    return Error("enqueue (nothing written, unless the reply was lost after the server ran "
                 "it: enqueue again with idempotency_key " + keys + " to find out)",
                 r.status());
  }
  if (r->elements.empty()) return OutboxError("outbox " + name_ + ": enqueue: bad reply");
  if (r->elements[0].integer == 0) {
    const std::string id = Str(r->elements[2]);
    return InvalidArgumentError("outbox entry idempotency_key '" + Str(r->elements[1]) + "' " +
                                (id.empty() ? std::string("is given twice")
                                            : "is already entry " + id));
  }
  std::vector<OutboxEntry> entries;
  for (size_t i = 0; i < specs.size(); ++i) {
    OutboxEntry e;
    e.id = r->elements[i + 1].integer;
    e.spec = std::move(specs[i]);
    e.created_at = FromNs(ToNs(now));
    e.next_attempt_at = e.created_at;
    entries.push_back(std::move(e));
  }
  return entries;
}

Status RedisStore::DecideExpired(WallTime now, std::vector<std::string>* args, int* count) {
  Result<RedisValue> r = Run(expired_, {Lex(now) + ";"}, "lease (expired leases)");
  if (!r.ok()) return r.status();
  *count = 0;
  for (const RedisValue& row : r->elements) {
    if (row.elements.size() < 7) continue;
    ScheduleInput in;
    in.id = ToInt(row.elements[0].str);
    in.attempt = static_cast<int>(ToInt(row.elements[2].str)) + 1;
    in.attempt_base = static_cast<int>(ToInt(row.elements[3].str));
    in.previous_delay = Duration(ToInt(row.elements[4].str));
    in.created_at = FromLex(row.elements[5].str);
    in.now = now;
    const ScheduleDecision d = DecideAfterLeaseExpiry(policy_, in);
    const bool dead = d.failure.state == OutboxState::kDead;
    args->insert(args->end(),
                 {row.elements[0].str, row.elements[1].str,
                  std::to_string(static_cast<int>(d.failure.state)), std::to_string(in.attempt),
                  Lex(d.failure.next_attempt_at), std::to_string(d.backoff_delay.count()),
                  dead ? Lex(now) : "", dead ? StopReasonName(d.failure.reason) : "",
                  RecordRest(now, 0, ErrorKind::kTimeout, d.classification, d.failure.delay,
                             LeaseExpiredMessage(row.elements[6].str)),
                  dead ? "1" : "0"});
    ++*count;
  }
  return OkStatus();
}

Result<std::vector<OutboxLease>> RedisStore::Lease(std::string_view worker, int max_entries,
                                                   WallTime now, Duration timeout) {
  std::vector<std::string> decided;
  int expired = 0;
  if (Status s = DecideExpired(now, &decided, &expired); !s.ok()) return s;
  // now + timeout, saturating as the schedule's times do.
  const WallTime expires =
      timeout > WallTime::max() - now ? WallTime::max()
                                      : now + std::chrono::duration_cast<WallTime::duration>(timeout);
  std::vector<std::string> args = {Lex(now) + ";", Lex(expires), std::string(worker),
                                   std::to_string(max_entries), std::to_string(expired)};
  args.insert(args.end(), decided.begin(), decided.end());
  Result<RedisValue> r = Run(lease_, std::move(args), "lease");
  if (!r.ok()) return r.status();
  std::vector<OutboxLease> leases;
  for (const RedisValue& hash : r->elements) {
    OutboxLease lease;
    lease.entry = ParseEntry(hash, &lease.token);
    leases.push_back(std::move(lease));
  }
  for (OutboxLease& lease : leases) lease.attempt_timeout = policy_.options().attempt_timeout;
  std::sort(leases.begin(), leases.end(),
            [](const OutboxLease& a, const OutboxLease& b) { return a.entry.id < b.entry.id; });
  return leases;
}

Status RedisStore::CompleteMany(const std::vector<OutboxSuccess>& successes, WallTime now) {
  std::vector<std::string> args = {Lex(now), std::to_string(successes.size()),
                                   std::to_string(static_cast<int>(ErrorKind::kTimeout))};
  for (const OutboxSuccess& s : successes) {
    const OutboxLease& l = *s.lease;
    args.insert(args.end(), {std::to_string(l.entry.id), l.entry.spec.idempotency_key,
                             std::to_string(l.token), l.entry.lease_owner,
                             RecordRest(now, s.http_status, ErrorKind::kNone,
                                        Classification::kSuccess, Duration::zero(),
                                        "delivered")});
  }
  Result<RedisValue> r = Run(complete_, std::move(args), "complete");
  if (!r.ok()) return r.status();
  if (r->elements.size() < 2) return OutboxError("outbox " + name_ + ": complete: bad reply");
  if (r->elements[0].integer == 1) return OkStatus();
  const std::string why = Str(r->elements[1]);
  const int64_t id = ToInt(Str(r->elements[2]));
  if (why == "foreign") return ForeignLease(id, false);
  if (why == "dead") return OutboxError("outbox entry " + std::to_string(id) + " is already dead");
  return OutboxError("no outbox entry " + std::to_string(id));
}

Result<OutboxFailure> RedisStore::Fail(const OutboxLease& lease, const Outcome& outcome,
                                       std::string_view message, WallTime now,
                                       int http_status) {
  const int64_t id = lease.entry.id;
  Result<RedisValue> row = Command({"HMGET", EntryKey(id), "state", "token", "attempts", "base",
                                    "prev", "createdl", "key"},
                                   "fail");
  if (!row.ok()) return row.status();
  const std::vector<RedisValue>& f = row->elements;
  if (f.size() < 7 || f[0].type == RedisValue::Type::kNil)
    return OutboxError("no outbox entry " + std::to_string(id));
  if (f[6].str != lease.entry.spec.idempotency_key) return ForeignLease(id, false);
  if (f[0].str != "1" || ToInt(f[1].str) != lease.token) return LeaseLost(id);
  ScheduleInput in;
  in.id = id;
  in.attempt = static_cast<int>(ToInt(f[2].str)) + 1;
  in.attempt_base = static_cast<int>(ToInt(f[3].str));
  in.previous_delay = Duration(ToInt(f[4].str));
  in.created_at = FromLex(f[5].str);
  in.now = now;
  const ScheduleDecision d = DecideAfterFailure(policy_, outcome, in);
  const bool dead = d.failure.state == OutboxState::kDead;
  const int status = http_status > 0 ? http_status : outcome.http_status;
  Result<RedisValue> r =
      Run(fail_,
          {std::to_string(id), std::to_string(lease.token),
           std::to_string(static_cast<int>(d.failure.state)), std::to_string(in.attempt),
           Lex(d.failure.next_attempt_at), std::to_string(d.backoff_delay.count()),
           dead ? Lex(now) : "", dead ? StopReasonName(d.failure.reason) : "",
           RecordRest(now, status, outcome.error, d.classification, d.failure.delay, message),
           dead ? "1" : "0"},
          "fail");
  if (!r.ok()) return r.status();
  if (r->integer != 1) return LeaseLost(id);
  return d.failure;
}

Result<OutboxEntry> RedisStore::Get(int64_t id) {
  Result<RedisValue> r = Command({"HGETALL", EntryKey(id)}, "read entry");
  if (!r.ok()) return r.status();
  if (r->elements.empty()) return InvalidArgumentError("no outbox entry " + std::to_string(id));
  return ParseEntry(*r);
}

Result<std::vector<OutboxEntry>> RedisStore::List(std::optional<OutboxState> state, int limit) {
  const std::string set =
      state ? "s:" + std::to_string(static_cast<int>(*state)) : std::string("all");
  Result<RedisValue> r = Run(list_, {set, std::to_string(limit)}, "list");
  if (!r.ok()) return r.status();
  std::vector<OutboxEntry> entries;
  for (const RedisValue& hash : r->elements) entries.push_back(ParseEntry(hash));
  return entries;
}

Result<std::vector<OutboxAttempt>> RedisStore::History(int64_t id) {
  Result<RedisValue> r =
      Command({"LRANGE", tag_ + ":h:" + std::to_string(id), "0", "-1"}, "history");
  if (!r.ok()) return r.status();
  std::vector<OutboxAttempt> history;
  for (const RedisValue& record : r->elements) history.push_back(ParseRecord(record.str));
  return history;
}

Result<OutboxStats> RedisStore::Stats(WallTime now) {
  Result<RedisValue> r = Run(stats_, {}, "stats");
  if (!r.ok()) return r.status();
  const std::vector<RedisValue>& v = r->elements;
  if (v.size() < 9) return OutboxError("outbox " + name_ + ": stats: bad reply");
  OutboxStats stats;
  stats.pending = v[0].integer;
  stats.leased = v[1].integer;
  stats.done = v[2].integer;
  stats.dead = v[3].integer;
  stats.depth = stats.pending + stats.leased;
  if (!v[4].str.empty())
    stats.oldest_age = std::max(Duration::zero(),
                                Duration(ToNs(now) - ToNs(FromLex(v[4].str.substr(0, 20)))));
  stats.deliveries = ToInt(Str(v[5]));
  stats.dead_letters = ToInt(Str(v[6]));
  stats.failures = ToInt(Str(v[7]));
  stats.lease_expiries = ToInt(Str(v[8]));
  return stats;
}

Status RedisStore::Retry(int64_t id, WallTime now) {
  Result<RedisValue> r =
      Run(retry_,
          {std::to_string(id), Lex(now), std::to_string(policy_.options().backoff.base.count())},
          "retry");
  if (!r.ok()) return r.status();
  if (r->type == RedisValue::Type::kInteger) return OkStatus();
  if (r->str.empty()) return InvalidArgumentError("no outbox entry " + std::to_string(id));
  return InvalidArgumentError("outbox entry " + std::to_string(id) + " is " +
                              OutboxStateName(static_cast<OutboxState>(ToInt(r->str))) +
                              ", not dead");
}

Result<int64_t> RedisStore::Purge(OutboxState state) {
  Result<RedisValue> r = Run(purge_, {std::to_string(static_cast<int>(state))}, "purge");
  if (!r.ok()) return r.status();
  return r->integer;
}

}  // namespace

}  // namespace outbox_internal

Result<std::unique_ptr<Outbox>> OpenRedisOutbox(std::shared_ptr<RedisState> state,
                                                const OutboxOptions& options) {
  if (state == nullptr) return InvalidArgumentError("outbox state must not be null");
  if (!options.path.empty())
    return InvalidArgumentError("outbox option path must be empty for a Redis outbox (the "
                                "RedisState names the server)");
  if (options.name.empty())
    return InvalidArgumentError("outbox option name must name the outbox on the Redis server");
  if (options.max_size_bytes != 0)
    return InvalidArgumentError("outbox option max_size_bytes is not supported on Redis (bound "
                                "the server with maxmemory)");
  return outbox_internal::OutboxAccess::Open(
      options, [&state](const OutboxOptions& o, const RetryPolicy& p)
                   -> Result<std::unique_ptr<outbox_internal::Store>> {
        auto store = std::make_unique<outbox_internal::RedisStore>(state, o, p);
        if (Status s = store->Open(o); !s.ok()) return s;
        return std::unique_ptr<outbox_internal::Store>(std::move(store));
      });
}

}  // namespace v0
}  // namespace mulligan
