// tests/fuzz/fuzz_idempotency_store.cc — libFuzzer harness of IdempotencyStore
// (mulligan/idempotency/store.h): the request validation of Reserve and
// Complete, and the store's semantics over a sequence of operations.
//
// Input: 6 bytes of options (max_entries 1..16, max_bytes 1..65536 in steps
// of 256 bytes, shards 1..4, lease and ttl 1..16 s, in_flight_retry_after
// 0..3 s), then operations of one byte each plus their arguments: Reserve,
// Complete, Release, advance the clock, Sweep. Time only moves forward.
//
// A model beside the store keeps the leases handed out and the responses
// stored. Post-conditions after every operation:
//   - Stats: entries <= max_entries, bytes <= max_bytes, in_flight <= entries;
//   - Reserve of a key held by a live lease: kInFlight (same fingerprint, with
//     retry_after = min(lease left, in_flight_retry_after)) or
//     kFingerprintMismatch; never a second reservation (in-flight entries are
//     never evicted);
//   - Reserve of a key with a live stored response: kReplay of exactly that
//     response (same fingerprint), kFingerprintMismatch, or kReserved when it
//     was evicted; never kInFlight;
//   - Reserve refuses a key (kInvalidArgument) exactly when it is empty,
//     longer than max_key_length or not printable ASCII; kUnavailable only
//     while some lease is live, or for an entry larger than a shard's byte
//     budget (then saying so, and evicting nothing);
//   - Complete refuses (kInvalidArgument) exactly the responses that cannot be
//     replayed (status outside [100, 599], a field name that is not a token, a
//     value holding CR, LF or NUL), and then the lease stays held; a valid
//     response on a live lease is stored (OK) or the key released
//     (kUnavailable); on a lease released or completed it is kInvalidArgument.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fuzz_check.h"
#include "mulligan/base/clock.h"
#include "mulligan/idempotency/store.h"

namespace {

using mulligan::Duration;
using mulligan::IdempotencyLease;
using mulligan::IdempotencyStore;
using mulligan::IdempotencyStoreOptions;
using mulligan::ReserveState;
using mulligan::StatusCode;
using mulligan::StoredResponse;
using mulligan::TimePoint;
using mulligan_fuzz::Printable;
using std::chrono::milliseconds;
using std::chrono::seconds;

bool IsTokenChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// RFC 9110: a status of three digits the store accepts, token field names,
// field values without CR, LF or NUL.
bool Replayable(const StoredResponse& r) {
  if (r.status < 100 || r.status > 599) return false;
  for (const auto& [name, value] : r.headers) {
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsTokenChar)) return false;
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) return false;
  }
  return true;
}

bool SameResponse(const StoredResponse& a, const StoredResponse& b) {
  return a.status == b.status && a.headers == b.headers && a.body == b.body;
}

using Id = std::pair<std::string, std::string>;  // scope, key

struct Held {
  IdempotencyLease lease;
  std::string fingerprint;
  TimePoint expires;
};

struct Stored {
  std::string fingerprint;
  StoredResponse response;
  TimePoint expires;
};

class Harness {
 public:
  Harness(mulligan_fuzz::Input& in, IdempotencyStoreOptions options)
      : in_(in), options_(options),
        store_(std::move(IdempotencyStore::Create(options)).value()) {}

  void Run() {
    while (!in_.AtEnd()) {
      switch (in_.Byte() % 6) {
        case 0: Reserve(); break;
        case 1: Complete(); break;
        case 2: Release(); break;
        case 3: clock_.Advance(milliseconds(in_.Byte()) * 100); break;
        case 4: store_->Sweep(clock_.Now()); break;
        case 5: ReserveHeldKey(); break;
      }
      CheckStats();
    }
  }

 private:
  std::string Scope() {
    static const char* kScopes[] = {"", "alice", "bob"};
    return kScopes[in_.Byte() % 3];
  }
  std::string Fingerprint() { return in_.Byte() % 2 ? "POST /orders" : "POST /refunds"; }

  bool Live(TimePoint expires) const { return clock_.Now() < expires; }
  size_t LiveLeases() const {
    size_t n = 0;
    for (const auto& [id, held] : held_) n += Live(held.expires) ? 1 : 0;
    return n;
  }

  void Reserve() {
    const std::string scope = Scope();
    const std::string key(in_.Bytes(in_.Byte() % 12));
    ReserveKey(scope, key, Fingerprint());
  }

  // Reserves the key of a lease handed out earlier (or of a stored response),
  // so that conflicts and replays are common.
  void ReserveHeldKey() {
    const uint8_t pick = in_.Byte();
    const std::string fingerprint = Fingerprint();
    if (!held_.empty() && pick % 2 == 0) {
      auto it = std::next(held_.begin(), pick / 2 % held_.size());
      ReserveKey(it->first.first, it->first.second, fingerprint);
    } else if (!stored_.empty()) {
      auto it = std::next(stored_.begin(), pick / 2 % stored_.size());
      ReserveKey(it->first.first, it->first.second, fingerprint);
    }
  }

  void ReserveKey(const std::string& scope, const std::string& key,
                  const std::string& fingerprint) {
    const TimePoint now = clock_.Now();
    const Id id{scope, key};
    bool valid = !key.empty() && key.size() <= options_.max_key_length;
    for (char c : key) valid = valid && c >= 0x20 && c <= 0x7e;
    const uint64_t evicted_before = store_->Stats().evicted;
    mulligan::Result<mulligan::Reservation> r = store_->Reserve(scope, key, fingerprint, now);
    const std::string what = "Reserve(" + Printable(scope) + ", " + Printable(key) + ")";
    if (!valid) {
      FUZZ_CHECK(!r.ok() && r.status().code() == StatusCode::kInvalidArgument,
                 what + ": an invalid key was not refused");
      return;
    }
    if (!r.ok()) {
      FUZZ_CHECK(r.status().code() == StatusCode::kUnavailable,
                 what + ": " + r.status().ToString());
      // With no lease live the shard holds completed entries only, which are
      // evicted to make room: the only refusal left is an entry that could
      // never fit the shard's budget.
      FUZZ_CHECK(LiveLeases() > 0 || r.status().message().find("budget") != std::string::npos,
                 what + ": kUnavailable with no lease live: " + r.status().ToString());
      if (r.status().message().find("budget") != std::string::npos) {
        FUZZ_CHECK(store_->Stats().evicted == evicted_before,
                   what + ": evicted stored responses for an entry that never fits");
      }
      return;
    }
    auto held = held_.find(id);
    if (held != held_.end() && Live(held->second.expires)) {
      if (held->second.fingerprint == fingerprint) {
        FUZZ_CHECK(r->state == ReserveState::kInFlight,
                   what + ": a held key gave " + mulligan::ReserveStateName(r->state));
        const Duration left = held->second.expires - now;
        FUZZ_CHECK(r->retry_after == std::min(left, options_.in_flight_retry_after),
                   what + ": retry_after " + std::to_string(r->retry_after.count()));
      } else {
        FUZZ_CHECK(r->state == ReserveState::kFingerprintMismatch,
                   what + ": a held key, other fingerprint, gave " +
                       mulligan::ReserveStateName(r->state));
      }
      return;
    }
    auto stored = stored_.find(id);
    if (stored != stored_.end() && Live(stored->second.expires)) {
      FUZZ_CHECK(r->state != ReserveState::kInFlight, what + ": a stored key gave in_flight");
      if (r->state == ReserveState::kReplay) {
        FUZZ_CHECK(stored->second.fingerprint == fingerprint, what + ": replay, other print");
        FUZZ_CHECK(r->response && SameResponse(*r->response, stored->second.response),
                   what + ": replayed a different response");
        return;
      }
      if (r->state == ReserveState::kFingerprintMismatch) {
        FUZZ_CHECK(stored->second.fingerprint != fingerprint, what + ": mismatch, same print");
        return;
      }
      // kReserved: the response was evicted (completed entries may be).
    }
    if (r->state == ReserveState::kReserved) {
      FUZZ_CHECK(r->lease.token != 0 && r->lease.scope == scope && r->lease.key == key,
                 what + ": a lease that is not this key's");
      stored_.erase(id);
      // A lease that ran out was taken over: it is spent now.
      if (held != held_.end()) spent_.emplace_back(id, held->second.lease);
      held_[id] = Held{r->lease, fingerprint, now + options_.lease};
      return;
    }
    // Otherwise only an entry the model has forgotten could answer: none.
    FUZZ_CHECK(false, what + ": " + mulligan::ReserveStateName(r->state) +
                          " for a key the store should not know");
  }

  // Picks a lease handed out earlier: one still held or one spent.
  std::optional<std::pair<Id, IdempotencyLease>> PickLease() {
    const uint8_t pick = in_.Byte();
    if (!held_.empty() && pick % 4 != 0) {
      auto it = std::next(held_.begin(), pick / 4 % held_.size());
      return std::make_pair(it->first, it->second.lease);
    }
    if (!spent_.empty()) return spent_[pick / 4 % spent_.size()];
    return std::nullopt;
  }

  StoredResponse MakeResponse() {
    StoredResponse r;
    const uint8_t kind = in_.Byte();
    r.status = kind & 1 ? 100 + in_.Byte() * 2 : static_cast<int16_t>(in_.U64() & 0xffff);
    const int fields = in_.Byte() % 4;
    for (int i = 0; i < fields; ++i) {
      std::string name(in_.Bytes(in_.Byte() % 8));
      std::string value(in_.Bytes(in_.Byte() % 8));
      r.headers.emplace_back(std::move(name), std::move(value));
    }
    r.body.assign(static_cast<size_t>(in_.Byte()) * 64, 'b');
    return r;
  }

  void Complete() {
    std::optional<std::pair<Id, IdempotencyLease>> pick = PickLease();
    if (!pick) return;
    const auto& [id, lease] = *pick;
    StoredResponse response = MakeResponse();
    const bool replayable = Replayable(response);
    const StoredResponse copy = response;
    const mulligan::Status s = store_->Complete(lease, std::move(response), clock_.Now());
    const std::string what = "Complete(" + Printable(id.second) + ")";
    if (!replayable) {
      FUZZ_CHECK(s.code() == StatusCode::kInvalidArgument,
                 what + ": an unreplayable response gave " + s.ToString());
      return;  // the lease, if held, stays held
    }
    auto held = held_.find(id);
    const bool holds = held != held_.end() && held->second.lease.token == lease.token;
    if (!holds) {
      FUZZ_CHECK(s.code() == StatusCode::kInvalidArgument,
                 what + ": a spent lease gave " + s.ToString());
      return;
    }
    if (s.ok()) {
      stored_[id] = Stored{held->second.fingerprint, copy, clock_.Now() + options_.ttl};
    } else if (Live(held->second.expires)) {
      FUZZ_CHECK(s.code() == StatusCode::kUnavailable, what + ": " + s.ToString());
    } else {
      // An expired lease: taken over and swept, or still completable.
      FUZZ_CHECK(s.code() == StatusCode::kUnavailable ||
                     s.code() == StatusCode::kInvalidArgument,
                 what + ": " + s.ToString());
    }
    spent_.emplace_back(id, lease);
    held_.erase(held);
  }

  void Release() {
    std::optional<std::pair<Id, IdempotencyLease>> pick = PickLease();
    if (!pick) return;
    const auto& [id, lease] = *pick;
    const mulligan::Status s = store_->Release(lease);
    auto held = held_.find(id);
    const bool holds = held != held_.end() && held->second.lease.token == lease.token;
    const std::string what = "Release(" + Printable(id.second) + ")";
    if (!holds) {
      FUZZ_CHECK(s.code() == StatusCode::kInvalidArgument,
                 what + ": a spent lease gave " + s.ToString());
      return;
    }
    if (Live(held->second.expires)) FUZZ_CHECK(s.ok(), what + ": " + s.ToString());
    spent_.emplace_back(id, lease);
    held_.erase(held);
  }

  void CheckStats() const {
    const mulligan::IdempotencyStoreStats stats = store_->Stats();
    FUZZ_CHECK(stats.entries <= options_.max_entries,
               "entries " + std::to_string(stats.entries) + " > max_entries");
    FUZZ_CHECK(stats.bytes <= options_.max_bytes,
               "bytes " + std::to_string(stats.bytes) + " > max_bytes " +
                   std::to_string(options_.max_bytes));
    FUZZ_CHECK(stats.in_flight <= stats.entries, "in_flight > entries");
    FUZZ_CHECK(stats.in_flight >= LiveLeases(), "a live lease is missing from the store");
  }

  mulligan_fuzz::Input& in_;
  const IdempotencyStoreOptions options_;
  std::unique_ptr<IdempotencyStore> store_;
  mulligan::FakeClock clock_;
  std::map<Id, Held> held_;
  std::map<Id, Stored> stored_;
  std::vector<std::pair<Id, IdempotencyLease>> spent_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 1024) return 0;  // long inputs add no new state, only time
  mulligan_fuzz::Input in(data, size);
  IdempotencyStoreOptions options;
  options.max_entries = 1 + in.Byte() % 16;
  options.max_bytes = 1 + static_cast<size_t>(in.Byte()) * 256;
  options.shards = 1 + in.Byte() % 4;
  options.lease = seconds(1 + in.Byte() % 16);
  options.ttl = seconds(1 + in.Byte() % 16);
  options.in_flight_retry_after = milliseconds(in.Byte() % 4 * 1000);
  options.max_key_length = 8;
  Harness(in, options).Run();
  return 0;
}
