// core/src/outbox/store.h — the outbox's backend seam: what an Outbox asks
// of the place its entries live. Outbox (outbox.cc) validates options,
// specs and arguments, draws keys, and checks what the contract says of a
// call before the store sees it; a store keeps the entries and applies the
// retry decisions of schedule.h, which both stores share. Two stores:
// SQLite (sqlite_store.cc, the embedded default) and Redis (redis_store.cc,
// in mulligan_redis). (Added in 0.6.)
//
// Every method has the contract of the Outbox method of the same name
// (mulligan/outbox/outbox.h), after the Outbox's checks:
//   EnqueueMany  specs are valid and every key is set (drawn when empty)
//   Lease        max_entries >= 1 and lease_timeout > 0
//   CompleteMany no lease is null
//   Fail         the outcome is not a success
//   List         limit >= 1
//   Purge        state is kDone or kDead
//
// Thread-safety: a store is internally synchronized (the Outbox adds no
// lock of its own).

#ifndef MULLIGAN_SRC_OUTBOX_STORE_H_
#define MULLIGAN_SRC_OUTBOX_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/base/status.h"
#include "mulligan/outbox/outbox.h"
#include "mulligan/retry/policy.h"

namespace mulligan {
inline namespace v0 {
namespace outbox_internal {

class Store {
 public:
  virtual ~Store() = default;
  virtual Result<std::vector<OutboxEntry>> EnqueueMany(std::vector<OutboxEntrySpec> specs,
                                                       WallTime now) = 0;
  virtual Result<std::vector<OutboxLease>> Lease(std::string_view worker, int max_entries,
                                                 WallTime now, Duration lease_timeout) = 0;
  virtual Status CompleteMany(const std::vector<OutboxSuccess>& successes, WallTime now) = 0;
  virtual Result<OutboxFailure> Fail(const OutboxLease& lease, const Outcome& outcome,
                                     std::string_view message, WallTime now,
                                     int http_status) = 0;
  virtual Result<OutboxEntry> Get(int64_t id) = 0;
  virtual Result<std::vector<OutboxEntry>> List(std::optional<OutboxState> state, int limit) = 0;
  virtual Result<std::vector<OutboxAttempt>> History(int64_t id) = 0;
  virtual Result<OutboxStats> Stats(WallTime now) = 0;
  virtual Status Retry(int64_t id, WallTime now) = 0;
  virtual Result<int64_t> Purge(OutboxState state) = 0;
};

// Nanoseconds since the Unix epoch, and back.
int64_t ToNs(WallTime t);
WallTime FromNs(int64_t ns);

// Headers stored as name NUL value NUL ... (neither may hold a NUL).
std::string EncodeHeaders(const std::vector<OutboxHeader>& headers);
std::vector<OutboxHeader> DecodeHeaders(const std::string& bytes);

// The history's message for a lease that expired unfinished:
// "lease expired, worker W".
std::string LeaseExpiredMessage(const std::string& owner);

// kInvalidArgument for a lease whose key is not that of entry `id` here: it
// was made by an outbox elsewhere (ids are per outbox; keys are unique).
// `file`: the SQLite wording ("of this file"), else "of this outbox".
Status ForeignLease(int64_t id, bool file = true);

// kOutbox "outbox entry <id>: lease lost (...)", what Fail answers when the
// entry was leased again, finished, or its lease expired since `lease`.
Status LeaseLost(int64_t id);

// What a backend's opener (OpenRedisOutbox) uses to make an Outbox over its
// store: validates the common options and the policy, then calls
// `open_store` with them (Outbox::OpenWith).
struct OutboxAccess {
  static Result<std::unique_ptr<Outbox>> Open(const OutboxOptions& options,
                                              const Outbox::StoreFactory& open_store) {
    return Outbox::OpenWith(options, open_store);
  }
};

// Opens the SQLite store of `options` (validated) with `policy`.
Result<std::unique_ptr<Store>> OpenSqliteStore(const OutboxOptions& options,
                                              const RetryPolicy& policy);

}  // namespace outbox_internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SRC_OUTBOX_STORE_H_
