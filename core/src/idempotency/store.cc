// core/src/idempotency/store.cc — IdempotencyStore: sharded hash tables of
// entries with two intrusive lists per shard (in-flight entries in
// reservation order, completed entries in completion order).
//
// Because the lease and the ttl are the same for every entry, each list is
// also (nearly) sorted by expiry, so the lazy sweep only looks at list heads
// and eviction "oldest first" is a pop from the completed list's head: every
// operation is O(1) amortised, and no timer or thread exists.

#include "mulligan/idempotency/store.h"

#include "internal/ascii.h"
#include "internal/saturating.h"
#include "idempotency/key_rules.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <new>
#include <unordered_map>

namespace mulligan {
inline namespace v0 {
namespace {

using internal::IsPrintableAscii;
using internal::IsTokenChar;
using internal::SaturatingAdd;

// A field name or value quoted for an error message: printable ASCII kept,
// other bytes as \xNN, cut after 64 bytes.
std::string Quoted(std::string_view s) {
  static const char kHex[] = "0123456789abcdef";
  std::string out = "\"";
  for (size_t i = 0; i < s.size() && i < 64; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (IsPrintableAscii(static_cast<char>(c)) && c != '"' && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  if (s.size() > 64) out += "...";
  out += "\"";
  return out;
}

// Checks that `r` can be sent again as an HTTP response: the status is in
// [100, 599], every field name is an RFC 9110 token, and no field value holds
// CR, LF or NUL (which would let a stored response inject fields on replay).
}  // namespace

Status ValidateStoredResponse(const StoredResponse& r) {
  if (r.status < 100 || r.status > 599) {
    return InvalidArgumentError("status must be in [100, 599], got " + std::to_string(r.status));
  }
  for (size_t i = 0; i < r.headers.size(); ++i) {
    const std::string& name = r.headers[i].first;
    const std::string& value = r.headers[i].second;
    if (name.empty() || !std::all_of(name.begin(), name.end(), IsTokenChar)) {
      return InvalidArgumentError("header field " + std::to_string(i) + " has an invalid name " +
                                  Quoted(name) + " (it must be an RFC 9110 token)");
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return InvalidArgumentError("header field " + std::to_string(i) + " (" + Quoted(name) +
                                  ") has a value holding CR, LF or NUL: " + Quoted(value));
    }
  }
  return OkStatus();
}

namespace {

struct Entry {
  bool completed = false;
  std::string fingerprint;
  uint64_t token = 0;
  // The lease's end (in flight) or the ttl's end (completed).
  TimePoint expires;
  std::shared_ptr<const StoredResponse> response;
  size_t bytes = 0;
  // Intrusive links of the list the entry is on (in_flight or completed).
  Entry* prev = nullptr;
  Entry* next = nullptr;
  // The map key of this entry (node-stable in std::unordered_map).
  const std::string* id = nullptr;
};

struct List {
  Entry* head = nullptr;
  Entry* tail = nullptr;

  void PushBack(Entry* e) {
    e->prev = tail;
    e->next = nullptr;
    if (tail != nullptr) {
      tail->next = e;
    } else {
      head = e;
    }
    tail = e;
  }
  void Remove(Entry* e) {
    (e->prev != nullptr ? e->prev->next : head) = e->next;
    (e->next != nullptr ? e->next->prev : tail) = e->prev;
    e->prev = e->next = nullptr;
  }
};

using EntryMap = std::unordered_map<std::string, Entry>;

// The bytes a node of EntryMap occupies beyond its strings' heap buffers: the
// node (next pointer, value, cached hash), one bucket slot, malloc's header.
constexpr size_t kEntryOverhead = sizeof(void*) + sizeof(EntryMap::value_type) +
                                  sizeof(size_t) + sizeof(void*) + 2 * sizeof(size_t);

// Heap bytes of a string beyond the object (0 inside the small buffer).
size_t HeapBytes(const std::string& s) { return s.size() > 15 ? s.capacity() + 1 : 0; }

size_t ResponseBytes(const StoredResponse& r) {
  // The shared_ptr control block holding the response, plus its strings.
  size_t bytes = sizeof(StoredResponse) + 2 * sizeof(long) + HeapBytes(r.body) +
                 r.headers.capacity() * sizeof(r.headers[0]);
  for (const auto& [name, value] : r.headers) bytes += HeapBytes(name) + HeapBytes(value);
  return bytes;
}

// One independently locked part of the store, on its own cache lines.
struct alignas(64) Shard {
  std::mutex mu;
  EntryMap map;
  List in_flight;
  List completed;
  size_t bytes = 0;
  size_t in_flight_count = 0;
  size_t max_entries = 0;
  size_t max_bytes = 0;
  uint64_t next_token = 1;
  IdempotencyStoreStats counters;
};

// Builds "scope NUL key" in a reused per-thread buffer, so that look-ups do not
// allocate. Keys never hold NUL, so the last NUL splits the pair uniquely.
const std::string& MakeId(std::string_view scope, std::string_view key) {
  thread_local std::string id;
  id.assign(scope.data(), scope.size());
  id.push_back('\0');
  id.append(key.data(), key.size());
  return id;
}

}  // namespace

Result<std::string> ParseIdempotencyKey(std::string_view value, size_t max_length) {
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return InvalidArgumentError("the Idempotency-Key is empty");
  std::string key;
  if (value.front() == '"') {
    // RFC 8941 section 4.2.5 (Parsing a String).
    size_t i = 1;
    for (;;) {
      if (i >= value.size()) {
        return InvalidArgumentError("the Idempotency-Key string has no closing quote");
      }
      const char c = value[i++];
      if (c == '\\') {
        if (i >= value.size() || (value[i] != '"' && value[i] != '\\')) {
          return InvalidArgumentError(
              "the Idempotency-Key string has a bad escape (only \\\" and \\\\ are allowed)");
        }
        key.push_back(value[i++]);
      } else if (c == '"') {
        break;
      } else if (!IsPrintableAscii(c)) {
        return InvalidArgumentError("the Idempotency-Key holds a character that is not printable ASCII");
      } else {
        key.push_back(c);
      }
    }
    if (i != value.size()) {
      return InvalidArgumentError("the Idempotency-Key has characters after the closing quote");
    }
    if (key.empty()) return InvalidArgumentError("the Idempotency-Key is empty");
  } else {
    // Compatibility: a bare token or UUID, as Stripe-style clients send it.
    for (char c : value) {
      if (!IsPrintableAscii(c) || c == '"' || c == '\\') {
        return InvalidArgumentError(
            "the Idempotency-Key must be a Structured Fields string (\"...\") or printable "
            "ASCII without quotes or backslashes");
      }
    }
    key.assign(value.data(), value.size());
  }
  if (key.size() > max_length) {
    return InvalidArgumentError("the Idempotency-Key is longer than " + std::to_string(max_length) +
                                " characters");
  }
  return key;
}

const char* ReserveStateName(ReserveState state) {
  switch (state) {
    case ReserveState::kReserved: return "reserved";
    case ReserveState::kReplay: return "replay";
    case ReserveState::kInFlight: return "in_flight";
    case ReserveState::kFingerprintMismatch: return "fingerprint_mismatch";
  }
  return "unknown";
}

size_t IdempotencyEntryOverhead() { return kEntryOverhead; }

// The in-memory store (the embedded default).
class MemoryIdempotencyStore final : public IdempotencyStore {
 public:
  struct Impl;
  explicit MemoryIdempotencyStore(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
  ~MemoryIdempotencyStore() override;

  Result<Reservation> Reserve(std::string_view scope, std::string_view key,
                              std::string_view fingerprint, TimePoint now) override;
  Status Complete(const IdempotencyLease& lease, StoredResponse response, TimePoint now) override;
  Status Release(const IdempotencyLease& lease) override;
  void Sweep(TimePoint now) override;
  IdempotencyStoreStats Stats() const override;
  const IdempotencyStoreOptions& options() const override;
  const char* backend() const override { return "memory"; }

 private:
  std::unique_ptr<Impl> impl_;
};

struct MemoryIdempotencyStore::Impl {
  IdempotencyStoreOptions options;
  std::unique_ptr<Shard[]> shards;
  size_t shard_count = 1;

  Shard& ShardFor(const std::string& id) {
    // Mix the hash so that the shard and the bucket inside the shard do not
    // use the same bits.
    uint64_t h = std::hash<std::string>{}(id);
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    return shards[h % shard_count];
  }

  // REQUIRES: s.mu held. Unlinks and erases `e`.
  static void Erase(Shard& s, Entry* e) {
    if (e->completed) {
      s.completed.Remove(e);
    } else {
      s.in_flight.Remove(e);
      --s.in_flight_count;
    }
    s.bytes -= e->bytes;
    s.map.erase(s.map.find(*e->id));
  }

  // REQUIRES: s.mu held. Drops expired entries at the heads of both lists.
  static void SweepLocked(Shard& s, TimePoint now) {
    while (s.completed.head != nullptr && s.completed.head->expires <= now) {
      Erase(s, s.completed.head);
      ++s.counters.expired;
    }
    while (s.in_flight.head != nullptr && s.in_flight.head->expires <= now) {
      Erase(s, s.in_flight.head);
      ++s.counters.expired;
    }
  }

  // REQUIRES: s.mu held. Evicts completed entries, oldest first, until one
  // more entry (when `new_entry`) of `extra` bytes fits. Returns false when it
  // cannot fit (only in-flight entries left).
  static bool MakeRoom(Shard& s, bool new_entry, size_t extra) {
    for (;;) {
      const bool count_ok = !new_entry || s.map.size() < s.max_entries;
      const bool bytes_ok = s.bytes + extra <= s.max_bytes;
      if (count_ok && bytes_ok) return true;
      if (s.completed.head == nullptr) return false;
      Erase(s, s.completed.head);
      ++s.counters.evicted;
    }
  }

  // REQUIRES: s.mu held. Returns the entry of `id` holding `token`, or null.
  static Entry* FindLease(Shard& s, const std::string& id, uint64_t token) {
    auto it = s.map.find(id);
    if (it == s.map.end() || it->second.completed || it->second.token != token || token == 0) {
      return nullptr;
    }
    return &it->second;
  }
};

IdempotencyStore::~IdempotencyStore() = default;
MemoryIdempotencyStore::~MemoryIdempotencyStore() = default;

Result<std::unique_ptr<IdempotencyStore>> IdempotencyStore::Create(
    const IdempotencyStoreOptions& options) {
  if (options.ttl <= Duration::zero()) return InvalidArgumentError("ttl must be > 0");
  if (options.lease <= Duration::zero()) return InvalidArgumentError("lease must be > 0");
  if (options.in_flight_retry_after < Duration::zero()) {
    return InvalidArgumentError("in_flight_retry_after must be >= 0");
  }
  if (options.max_entries < 1) return InvalidArgumentError("max_entries must be >= 1");
  if (options.max_bytes < 1) return InvalidArgumentError("max_bytes must be >= 1");
  if (options.max_key_length < 1) return InvalidArgumentError("max_key_length must be >= 1");
  if (options.shards < 1 || options.shards > 1024) {
    return InvalidArgumentError("shards must be in [1, 1024], got " +
                                std::to_string(options.shards));
  }
  auto impl = std::make_unique<MemoryIdempotencyStore::Impl>();
  impl->options = options;
  // Every shard must be able to hold at least one entry.
  size_t n = static_cast<size_t>(options.shards);
  n = std::min(n, options.max_entries);
  n = std::max<size_t>(1, std::min(n, options.max_bytes / (kEntryOverhead * 4)));
  impl->shard_count = n;
  impl->shards.reset(new Shard[n]);
  for (size_t i = 0; i < n; ++i) {
    Shard& s = impl->shards[i];
    s.max_entries = options.max_entries / n + (i < options.max_entries % n ? 1 : 0);
    s.max_bytes = options.max_bytes / n + (i < options.max_bytes % n ? 1 : 0);
  }
  return std::unique_ptr<IdempotencyStore>(new MemoryIdempotencyStore(std::move(impl)));
}

const IdempotencyStoreOptions& MemoryIdempotencyStore::options() const { return impl_->options; }

Result<Reservation> MemoryIdempotencyStore::Reserve(std::string_view scope, std::string_view key,
                                              std::string_view fingerprint, TimePoint now) {
  const IdempotencyStoreOptions& options = impl_->options;
  if (Status s = internal::CheckIdempotencyKey(key, options.max_key_length); !s.ok()) return s;
  const std::string& id = MakeId(scope, key);
  Shard& s = impl_->ShardFor(id);
  Reservation r;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    Impl::SweepLocked(s, now);
    auto it = s.map.find(id);
    if (it != s.map.end()) {
      Entry& e = it->second;
      if (e.expires <= now) {
        // A completed entry past its ttl, or a lease that ran out (the handler
        // is presumed dead): the key is free again.
        Impl::Erase(s, &e);
        ++s.counters.expired;
      } else if (e.fingerprint != fingerprint) {
        ++s.counters.fingerprint_mismatches;
        r.state = ReserveState::kFingerprintMismatch;
        return r;
      } else if (e.completed) {
        ++s.counters.replayed;
        r.state = ReserveState::kReplay;
        r.response = e.response;
        return r;
      } else {
        ++s.counters.in_flight_conflicts;
        r.state = ReserveState::kInFlight;
        r.retry_after = std::min(e.expires - now, options.in_flight_retry_after);
        return r;
      }
    }
    // The entry's strings are built before the check, so that the bytes
    // checked are the bytes accounted: a string's heap buffer may be larger
    // than its size (and the per-thread id buffer larger than the key's copy).
    std::string stored_id(id);
    std::string stored_fingerprint(fingerprint);
    const size_t bytes =
        kEntryOverhead + HeapBytes(stored_id) + HeapBytes(stored_fingerprint);
    if (bytes > s.max_bytes) {
      // It could never fit: refuse before MakeRoom, which would evict every
      // completed entry of the shard first (stored responses lost for nothing).
      return Status(StatusCode::kUnavailable,
                    "the idempotency entry of this key needs " + std::to_string(bytes) +
                        " bytes (scope, key, fingerprint and overhead), more than the store's "
                        "budget of " + std::to_string(s.max_bytes) +
                        " bytes per shard (max_bytes / shards)");
    }
    if (!Impl::MakeRoom(s, true, bytes)) {
      ++s.counters.rejected_full;
      return Status(StatusCode::kUnavailable,
                    "the idempotency store is full of in-flight requests (" +
                        std::to_string(s.in_flight_count) + " in this shard); try again later");
    }
    auto [pos, inserted] = s.map.try_emplace(std::move(stored_id));
    (void)inserted;
    Entry& e = pos->second;
    e.id = &pos->first;
    e.fingerprint = std::move(stored_fingerprint);
    e.token = s.next_token++;
    e.expires = SaturatingAdd(now, options.lease);
    // Moving keeps each heap buffer, so this equals `bytes`.
    e.bytes = kEntryOverhead + HeapBytes(pos->first) + HeapBytes(e.fingerprint);
    s.bytes += e.bytes;
    s.in_flight.PushBack(&e);
    ++s.in_flight_count;
    ++s.counters.reserved;
    r.lease.token = e.token;
  }
  r.state = ReserveState::kReserved;
  r.lease.scope.assign(scope.data(), scope.size());
  r.lease.key.assign(key.data(), key.size());
  return r;
}

Status MemoryIdempotencyStore::Complete(const IdempotencyLease& lease, StoredResponse response,
                                  TimePoint now) {
  // Checked before the lease: an invalid response leaves the lease held, so
  // the caller can still Release() it (or Complete() with a valid response).
  if (Status valid = ValidateStoredResponse(response); !valid.ok()) return valid;
  const std::string& id = MakeId(lease.scope, lease.key);
  Shard& s = impl_->ShardFor(id);
  // Built outside the lock: the allocation and the move of the body.
  const size_t response_bytes = ResponseBytes(response);
  auto stored = std::make_shared<const StoredResponse>(std::move(response));
  std::lock_guard<std::mutex> lock(s.mu);
  Entry* e = Impl::FindLease(s, id, lease.token);
  if (e == nullptr) {
    return InvalidArgumentError("the idempotency lease of key \"" + lease.key +
                                "\" is not held any more (released, completed or expired and "
                                "taken over)");
  }
  const size_t bytes = e->bytes + response_bytes;
  if (bytes > s.max_bytes) {
    Impl::Erase(s, e);
    ++s.counters.released;
    return Status(StatusCode::kUnavailable,
                  "the response of " + std::to_string(response_bytes) +
                      " bytes exceeds the idempotency store's budget of " +
                      std::to_string(s.max_bytes) + " bytes per shard; the key was released");
  }
  s.in_flight.Remove(e);
  --s.in_flight_count;
  s.bytes -= e->bytes;
  // The entry is on no list now, so it cannot evict itself.
  Impl::SweepLocked(s, now);
  if (!Impl::MakeRoom(s, false, bytes)) {
    // Only in-flight entries are left to make room: the bound wins.
    s.map.erase(s.map.find(id));
    ++s.counters.released;
    return Status(StatusCode::kUnavailable,
                  "the idempotency store is full of in-flight requests; the response of key \"" +
                      lease.key + "\" was not stored and the key was released");
  }
  e->completed = true;
  e->bytes = bytes;
  e->expires = SaturatingAdd(now, impl_->options.ttl);
  e->response = std::move(stored);
  s.bytes += bytes;
  s.completed.PushBack(e);
  ++s.counters.completed;
  return OkStatus();
}

Status MemoryIdempotencyStore::Release(const IdempotencyLease& lease) {
  const std::string& id = MakeId(lease.scope, lease.key);
  Shard& s = impl_->ShardFor(id);
  std::lock_guard<std::mutex> lock(s.mu);
  Entry* e = Impl::FindLease(s, id, lease.token);
  if (e == nullptr) {
    return InvalidArgumentError("the idempotency lease of key \"" + lease.key +
                                "\" is not held any more (released, completed or expired and "
                                "taken over)");
  }
  Impl::Erase(s, e);
  ++s.counters.released;
  return OkStatus();
}

void MemoryIdempotencyStore::Sweep(TimePoint now) {
  for (size_t i = 0; i < impl_->shard_count; ++i) {
    Shard& s = impl_->shards[i];
    std::lock_guard<std::mutex> lock(s.mu);
    // The lists are only nearly sorted (callers' `now` values may interleave),
    // so a full sweep walks them entirely.
    for (List* list : {&s.completed, &s.in_flight}) {
      for (Entry* e = list->head; e != nullptr;) {
        Entry* next = e->next;
        if (e->expires <= now) {
          Impl::Erase(s, e);
          ++s.counters.expired;
        }
        e = next;
      }
    }
  }
}

IdempotencyStoreStats MemoryIdempotencyStore::Stats() const {
  IdempotencyStoreStats total;
  for (size_t i = 0; i < impl_->shard_count; ++i) {
    Shard& s = impl_->shards[i];
    std::lock_guard<std::mutex> lock(s.mu);
    const IdempotencyStoreStats& c = s.counters;
    total.entries += s.map.size();
    total.in_flight += s.in_flight_count;
    total.bytes += s.bytes;
    total.reserved += c.reserved;
    total.replayed += c.replayed;
    total.in_flight_conflicts += c.in_flight_conflicts;
    total.fingerprint_mismatches += c.fingerprint_mismatches;
    total.completed += c.completed;
    total.released += c.released;
    total.evicted += c.evicted;
    total.expired += c.expired;
    total.rejected_full += c.rejected_full;
  }
  return total;
}

}  // namespace v0
}  // namespace mulligan
