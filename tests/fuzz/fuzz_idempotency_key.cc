// tests/fuzz/fuzz_idempotency_key.cc — libFuzzer harness of ParseIdempotencyKey
// and of the key check of IdempotencyStore::Reserve
// (mulligan/idempotency/store.h).
//
// Input: byte 0 is max_length - 1 (1..256), the rest the header field value.
// Post-conditions:
//   - a key that parses is non-empty, at most max_length bytes and printable
//     ASCII; the value without surrounding spaces and tabs is either that key
//     itself (a bare key: no quote, no backslash) or that key written as a
//     Structured Fields String (RFC 8941 section 3.3.3: "..." with \" and \\);
//   - a value that does not parse gives kInvalidArgument with a message;
//   - Reserve accepts every key the parser gives (a server that parsed the
//     field can always reserve it);
//   - Reserve's own check of a raw key: accepted exactly when it is non-empty,
//     at most max_key_length bytes and printable ASCII, else kInvalidArgument.

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "fuzz_check.h"
#include "mulligan/base/clock.h"
#include "mulligan/idempotency/store.h"

namespace {

using mulligan::IdempotencyStore;
using mulligan::IdempotencyStoreOptions;
using mulligan_fuzz::Printable;

bool IsPrintableAscii(char c) { return c >= 0x20 && c <= 0x7e; }

// The key as a Structured Fields String.
std::string Quote(std::string_view key) {
  std::string out = "\"";
  for (char c : key) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out + "\"";
}

// A store per max_length: creating one per input would dominate the run.
IdempotencyStore& StoreFor(size_t max_length) {
  static std::unique_ptr<IdempotencyStore> stores[256];
  std::unique_ptr<IdempotencyStore>& store = stores[max_length - 1];
  if (!store) {
    IdempotencyStoreOptions options;
    options.max_key_length = max_length;
    options.max_entries = 64;
    options.shards = 1;
    store = std::move(IdempotencyStore::Create(options)).value();
  }
  return *store;
}

// Reserves `key` and frees it again; returns the status.
mulligan::Status ReserveOnce(IdempotencyStore& store, std::string_view key) {
  static mulligan::FakeClock clock;
  mulligan::Result<mulligan::Reservation> r = store.Reserve("scope", key, "GET /", clock.Now());
  if (!r.ok()) return r.status();
  if (r->state == mulligan::ReserveState::kReserved) (void)store.Release(r->lease);
  return mulligan::OkStatus();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mulligan_fuzz::Input in(data, size);
  const size_t max_length = static_cast<size_t>(in.Byte()) + 1;
  const std::string_view value = in.Rest();
  IdempotencyStore& store = StoreFor(max_length);

  mulligan::Result<std::string> key = mulligan::ParseIdempotencyKey(value, max_length);
  if (key.ok()) {
    const std::string& k = *key;
    FUZZ_CHECK(!k.empty(), "empty key from " + Printable(value));
    FUZZ_CHECK(k.size() <= max_length, "key longer than " + std::to_string(max_length) +
                                            " from " + Printable(value));
    for (char c : k) FUZZ_CHECK(IsPrintableAscii(c), "unprintable key from " + Printable(value));
    std::string_view trimmed = value;
    while (!trimmed.empty() && (trimmed.front() == ' ' || trimmed.front() == '\t')) {
      trimmed.remove_prefix(1);
    }
    while (!trimmed.empty() && (trimmed.back() == ' ' || trimmed.back() == '\t')) {
      trimmed.remove_suffix(1);
    }
    const bool bare = trimmed == k && k.find_first_of("\"\\") == std::string::npos;
    FUZZ_CHECK(bare || trimmed == Quote(k),
               Printable(value) + " gave key " + Printable(k) + ", neither bare nor quoted");
    const mulligan::Status reserved = ReserveOnce(store, k);
    FUZZ_CHECK(reserved.ok(), "parsed key " + Printable(k) + " refused: " + reserved.ToString());
  } else {
    FUZZ_CHECK(key.status().code() == mulligan::StatusCode::kInvalidArgument,
               "unexpected status " + key.status().ToString());
    FUZZ_CHECK(!key.status().message().empty(), "no message for " + Printable(value));
  }

  // Reserve's own validation of the raw bytes as a key.
  bool valid = !value.empty() && value.size() <= max_length;
  for (char c : value) valid = valid && IsPrintableAscii(c);
  const mulligan::Status raw = ReserveOnce(store, value);
  if (valid) {
    FUZZ_CHECK(raw.ok(), "valid key " + Printable(value) + " refused: " + raw.ToString());
  } else {
    FUZZ_CHECK(raw.code() == mulligan::StatusCode::kInvalidArgument &&
                   !raw.message().empty(),
               "invalid key " + Printable(value) + " gave " + raw.ToString());
  }
  return 0;
}
