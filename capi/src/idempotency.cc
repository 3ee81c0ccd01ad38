// capi/src/idempotency.cc — the idempotency part of the C ABI
// (mulligan_idempotency.h): fresh keys, the key parser and the server-side
// store, thin extern "C" shims over mulligan::NewIdempotencyKey,
// ParseIdempotencyKey and IdempotencyStore.
//
// The reservation handle is defined here, as no other shim file needs it;
// the options and store handles are in capi_internal.h (state.cc makes
// stores on Redis, 0.6).

#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan/http/client.h"
#include "mulligan/idempotency/store.h"

struct mulligan_idempotency_reservation {
  mulligan::Reservation impl;
};

namespace {

using mulligan::Duration;
using mulligan::capi_internal::CheckMs;
using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::SetError;
using mulligan::internal::DurationFromMillis;

// Shared body of the duration setters.
int SetMs(mulligan_idempotency_options* opts, const char* func, const char* name, double ms,
          bool positive, Duration mulligan::IdempotencyStoreOptions::*field) {
  if (opts == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: opts must not be NULL", func);
  }
  if (!CheckMs(name, ms, positive)) return MULLIGAN_E_INVALID_ARGUMENT;
  opts->impl.*field = DurationFromMillis(ms);
  return MULLIGAN_OK;
}

int SetCount(mulligan_idempotency_options* opts, const char* func, const char* name, size_t value,
             size_t mulligan::IdempotencyStoreOptions::*field) {
  if (opts == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: opts must not be NULL", func);
  }
  if (value < 1) return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s must be >= 1, got 0", name);
  opts->impl.*field = value;
  return MULLIGAN_OK;
}

// The replayed response of `r`, or null.
const mulligan::StoredResponse* Replayed(const mulligan_idempotency_reservation* r) {
  if (r == nullptr) return nullptr;
  return r->impl.state == mulligan::ReserveState::kReplay ? r->impl.response.get() : nullptr;
}

// Checks that `r` is a reservation holding a lease.
int CheckLease(const char* func, const mulligan_idempotency_store* store,
               const mulligan_idempotency_reservation* r) {
  if (store == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: store must not be NULL", func);
  }
  if (r == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: reservation must not be NULL", func);
  }
  if (r->impl.state != mulligan::ReserveState::kReserved) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "%s: the reservation is \"%s\", not \"reserved\": it holds no lease", func,
                    mulligan::ReserveStateName(r->impl.state));
  }
  return MULLIGAN_OK;
}

}  // namespace

extern "C" {

const char* mulligan_idempotency_state_str(int state) {
  MULLIGAN_CAPI_BEGIN
  if (state < MULLIGAN_IDEMPOTENCY_RESERVED || state > MULLIGAN_IDEMPOTENCY_FINGERPRINT_MISMATCH) {
    return "unknown";
  }
  return mulligan::ReserveStateName(static_cast<mulligan::ReserveState>(state));
  MULLIGAN_CAPI_END_RETURN("unknown")
}

int mulligan_idempotency_key_new(char* buf, size_t buf_size) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(buf);
  const std::string key = mulligan::NewIdempotencyKey();
  if (buf_size < key.size() + 1) {
    if (buf_size > 0) buf[0] = '\0';
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "buf_size must be at least %zu (MULLIGAN_IDEMPOTENCY_KEY_SIZE), got %zu",
                    key.size() + 1, buf_size);
  }
  std::memcpy(buf, key.c_str(), key.size() + 1);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_key_parse(const char* value, size_t max_length, char* buf,
                                   size_t buf_size) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(value);
  MULLIGAN_CHECK_NOT_NULL(buf);
  if (buf_size > 0) buf[0] = '\0';
  mulligan::Result<std::string> key = mulligan::ParseIdempotencyKey(
      value, max_length == 0 ? mulligan::kDefaultMaxIdempotencyKeyLength : max_length);
  if (!key.ok()) return SetError(key.status());
  if (key->size() + 1 > buf_size) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "mulligan_idempotency_key_parse: buf_size %zu is too small for a key of %zu "
                    "characters and its NUL",
                    buf_size, key->size());
  }
  std::memcpy(buf, key->c_str(), key->size() + 1);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

// ---------------------------------------------------------------------------
// Options

int mulligan_idempotency_options_create(mulligan_idempotency_options** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  *out = new mulligan_idempotency_options();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_idempotency_options_destroy(mulligan_idempotency_options* opts) {
  MULLIGAN_CAPI_BEGIN
  delete opts;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_idempotency_options_set_ttl_ms(mulligan_idempotency_options* opts, double ttl_ms) {
  MULLIGAN_CAPI_BEGIN
  return SetMs(opts, __func__, "ttl_ms", ttl_ms, true, &mulligan::IdempotencyStoreOptions::ttl);
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_options_set_lease_ms(mulligan_idempotency_options* opts,
                                              double lease_ms) {
  MULLIGAN_CAPI_BEGIN
  return SetMs(opts, __func__, "lease_ms", lease_ms, true,
               &mulligan::IdempotencyStoreOptions::lease);
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_options_set_in_flight_retry_after_ms(mulligan_idempotency_options* opts,
                                                              double retry_after_ms) {
  MULLIGAN_CAPI_BEGIN
  return SetMs(opts, __func__, "retry_after_ms", retry_after_ms, false,
               &mulligan::IdempotencyStoreOptions::in_flight_retry_after);
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_options_set_max_entries(mulligan_idempotency_options* opts,
                                                 size_t max_entries) {
  MULLIGAN_CAPI_BEGIN
  return SetCount(opts, __func__, "max_entries", max_entries,
                  &mulligan::IdempotencyStoreOptions::max_entries);
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_options_set_max_bytes(mulligan_idempotency_options* opts,
                                               size_t max_bytes) {
  MULLIGAN_CAPI_BEGIN
  return SetCount(opts, __func__, "max_bytes", max_bytes,
                  &mulligan::IdempotencyStoreOptions::max_bytes);
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_options_set_max_key_length(mulligan_idempotency_options* opts,
                                                    size_t max_key_length) {
  MULLIGAN_CAPI_BEGIN
  return SetCount(opts, __func__, "max_key_length", max_key_length,
                  &mulligan::IdempotencyStoreOptions::max_key_length);
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_options_set_shards(mulligan_idempotency_options* opts, int shards) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (shards < 1 || shards > 1024) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "shards must be in [1, 1024], got %d", shards);
  }
  opts->impl.shards = shards;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

// ---------------------------------------------------------------------------
// Store

int mulligan_idempotency_store_create(const mulligan_idempotency_options* opts,
                                      const mulligan_clock* clock,
                                      mulligan_idempotency_store** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::IdempotencyStoreOptions options = opts != nullptr ? opts->impl
                                                              : mulligan::IdempotencyStoreOptions{};
  auto store = mulligan::IdempotencyStore::Create(options);
  if (!store.ok()) return SetError(store.status());
  auto handle = std::make_unique<mulligan_idempotency_store>();
  handle->impl = std::move(store).value();
  handle->clock = clock != nullptr ? static_cast<const mulligan::Clock*>(&clock->impl)
                                   : mulligan::SystemClock::Default();
  *out = handle.release();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_idempotency_store_destroy(mulligan_idempotency_store* store) {
  MULLIGAN_CAPI_BEGIN
  delete store;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_idempotency_store_reserve(mulligan_idempotency_store* store, const char* scope,
                                       const char* key, const void* fingerprint,
                                       size_t fingerprint_len,
                                       mulligan_idempotency_reservation** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(store);
  MULLIGAN_CHECK_NOT_NULL(key);
  if (fingerprint == nullptr && fingerprint_len != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "mulligan_idempotency_store_reserve: fingerprint is NULL but "
                    "fingerprint_len is %zu",
                    fingerprint_len);
  }
  std::string_view fp(static_cast<const char*>(fingerprint), fingerprint_len);
  if (fingerprint_len == 0) fp = std::string_view();
  auto r = store->impl->Reserve(scope != nullptr ? scope : "", key, fp, store->clock->Now());
  if (!r.ok()) return SetError(r.status());
  auto handle = std::make_unique<mulligan_idempotency_reservation>();
  handle->impl = std::move(r).value();
  *out = handle.release();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_store_complete(mulligan_idempotency_store* store,
                                        mulligan_idempotency_reservation* reservation, int status,
                                        const char* const* header_names,
                                        const char* const* header_values, size_t header_count,
                                        const void* body, size_t body_len) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckLease(__func__, store, reservation); rc != MULLIGAN_OK) return rc;
  // The status and the header fields are validated by IdempotencyStore::Complete.
  if (header_count > 0 && (header_names == nullptr || header_values == nullptr)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "header_names and header_values must not be NULL when header_count is %zu",
                    header_count);
  }
  if (body == nullptr && body_len != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "body is NULL but body_len is %zu", body_len);
  }
  mulligan::StoredResponse response;
  response.status = status;
  response.headers.reserve(header_count);
  for (size_t i = 0; i < header_count; ++i) {
    if (header_names[i] == nullptr || header_values[i] == nullptr) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT, "header %zu has a NULL name or value", i);
    }
    response.headers.emplace_back(header_names[i], header_values[i]);
  }
  if (body_len > 0) response.body.assign(static_cast<const char*>(body), body_len);
  mulligan::Status s =
      store->impl->Complete(reservation->impl.lease, std::move(response), store->clock->Now());
  if (!s.ok()) return SetError(s);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_store_release(mulligan_idempotency_store* store,
                                       mulligan_idempotency_reservation* reservation) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckLease(__func__, store, reservation); rc != MULLIGAN_OK) return rc;
  mulligan::Status s = store->impl->Release(reservation->impl.lease);
  if (!s.ok()) return SetError(s);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_idempotency_store_sweep(mulligan_idempotency_store* store) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(store);
  store->impl->Sweep(store->clock->Now());
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

size_t mulligan_idempotency_store_entries(const mulligan_idempotency_store* store) {
  MULLIGAN_CAPI_BEGIN
  if (store == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: store must not be NULL", __func__);
    return 0;
  }
  return store->impl->Stats().entries;
  MULLIGAN_CAPI_END_RETURN(0)
}

size_t mulligan_idempotency_store_in_flight(const mulligan_idempotency_store* store) {
  MULLIGAN_CAPI_BEGIN
  if (store == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: store must not be NULL", __func__);
    return 0;
  }
  return store->impl->Stats().in_flight;
  MULLIGAN_CAPI_END_RETURN(0)
}

size_t mulligan_idempotency_store_bytes(const mulligan_idempotency_store* store) {
  MULLIGAN_CAPI_BEGIN
  if (store == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: store must not be NULL", __func__);
    return 0;
  }
  return store->impl->Stats().bytes;
  MULLIGAN_CAPI_END_RETURN(0)
}

// ---------------------------------------------------------------------------
// Reservations

int mulligan_idempotency_reservation_state(const mulligan_idempotency_reservation* reservation) {
  MULLIGAN_CAPI_BEGIN
  if (reservation == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: reservation must not be NULL", __func__);
    return -1;
  }
  return static_cast<int>(reservation->impl.state);
  MULLIGAN_CAPI_END_RETURN(-1)
}

double mulligan_idempotency_reservation_retry_after_ms(
    const mulligan_idempotency_reservation* reservation) {
  MULLIGAN_CAPI_BEGIN
  if (reservation == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: reservation must not be NULL", __func__);
    return 0;
  }
  if (reservation->impl.state != mulligan::ReserveState::kInFlight) return 0;
  return DurationToMs(reservation->impl.retry_after);
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_idempotency_reservation_status(const mulligan_idempotency_reservation* reservation) {
  MULLIGAN_CAPI_BEGIN
  const mulligan::StoredResponse* r = Replayed(reservation);
  return r != nullptr ? r->status : 0;
  MULLIGAN_CAPI_END_RETURN(0)
}

const char* mulligan_idempotency_reservation_body(
    const mulligan_idempotency_reservation* reservation, size_t* len) {
  MULLIGAN_CAPI_BEGIN
  if (len != nullptr) *len = 0;
  const mulligan::StoredResponse* r = Replayed(reservation);
  if (r == nullptr) return nullptr;
  if (len != nullptr) *len = r->body.size();
  return r->body.c_str();
  MULLIGAN_CAPI_END_RETURN(nullptr)
}

size_t mulligan_idempotency_reservation_header_count(
    const mulligan_idempotency_reservation* reservation) {
  MULLIGAN_CAPI_BEGIN
  const mulligan::StoredResponse* r = Replayed(reservation);
  return r != nullptr ? r->headers.size() : 0;
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_idempotency_reservation_header_at(const mulligan_idempotency_reservation* reservation,
                                               size_t index, const char** name,
                                               const char** value) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(name);
  MULLIGAN_CHECK_NOT_NULL(value);
  *name = nullptr;
  *value = nullptr;
  MULLIGAN_CHECK_NOT_NULL(reservation);
  const mulligan::StoredResponse* r = Replayed(reservation);
  const size_t count = r != nullptr ? r->headers.size() : 0;
  if (index >= count) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "header index %zu out of range (%zu fields)",
                    index, count);
  }
  *name = r->headers[index].first.c_str();
  *value = r->headers[index].second.c_str();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_idempotency_reservation_destroy(mulligan_idempotency_reservation* reservation) {
  MULLIGAN_CAPI_BEGIN
  delete reservation;
  MULLIGAN_CAPI_END_VOID
}

}  // extern "C"
