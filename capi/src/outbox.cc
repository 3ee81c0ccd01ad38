// capi/src/outbox.cc — the durable outbox part of the C ABI
// (mulligan_outbox.h): thin extern "C" shims over mulligan::Outbox
// (core/include/mulligan/outbox/outbox.h). Every decision (validation,
// leases, the retry policy, SQLite) is the core's; this file converts
// milliseconds, C strings and structs, and reads `now` from the options'
// clock. (Added in 0.6.)

#include <chrono>
#include <climits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan/outbox/outbox.h"
#ifdef MULLIGAN_CAPI_REDIS
#include "mulligan/outbox/redis_outbox.h"
#include "mulligan/state/redis.h"
#endif

struct mulligan_outbox_options {
  mulligan::OutboxOptions impl;
  // Borrowed; null means the system clock.
  const mulligan::Clock* clock = nullptr;
};

struct mulligan_outbox {
  std::unique_ptr<mulligan::Outbox> impl;
  // Borrowed; never null (SystemClock::Default() when the options had none).
  const mulligan::Clock* clock;
};

namespace {

// The header arrays mulligan_outbox_entry_info points at, built once per
// handle from the entry's headers (which the handle owns).
struct HeaderViews {
  std::vector<const char*> names;
  std::vector<const char*> values;

  void Build(const mulligan::OutboxEntry& entry) {
    names.clear();
    values.clear();
    for (const mulligan::OutboxHeader& h : entry.spec.headers) {
      names.push_back(h.name.c_str());
      values.push_back(h.value.c_str());
    }
  }
};

}  // namespace

struct mulligan_outbox_entry {
  mulligan::OutboxEntry impl;
  HeaderViews headers;
};

struct mulligan_outbox_lease {
  mulligan::OutboxLease impl;
  HeaderViews headers;
};

struct mulligan_outbox_history {
  std::vector<mulligan::OutboxAttempt> impl;
};

namespace {

using mulligan::capi_internal::CheckMs;
using mulligan::capi_internal::CheckStructSize;
using mulligan::capi_internal::CopyTruncated;
using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::OutcomeFromC;
using mulligan::capi_internal::SetError;
using mulligan::internal::DurationFromMillis;

// The first published sizes (0.6) of the caller-initialised structs.
constexpr size_t kSpecSizeV0_6 = sizeof(mulligan_outbox_spec);
constexpr size_t kInfoSizeV0_6 = sizeof(mulligan_outbox_entry_info);
constexpr size_t kFailureSizeV0_6 = sizeof(mulligan_outbox_failure);
constexpr size_t kStatsSizeV0_6 = sizeof(mulligan_outbox_stats);
constexpr size_t kAttemptSizeV0_6 = sizeof(mulligan_outbox_attempt);

static_assert(static_cast<int>(mulligan::OutboxKind::kJob) == MULLIGAN_OUTBOX_JOB, "kind");
static_assert(static_cast<int>(mulligan::OutboxState::kDead) == MULLIGAN_OUTBOX_DEAD, "state");
static_assert(static_cast<int>(mulligan::OutboxSync::kNormal) == MULLIGAN_OUTBOX_SYNC_NORMAL,
              "sync");

// Milliseconds since the Unix epoch, rounded down; the zero WallTime is 0.
int64_t UnixMs(mulligan::WallTime t) {
  return std::chrono::floor<std::chrono::milliseconds>(t.time_since_epoch()).count();
}

mulligan::WallTime Now(const mulligan_outbox* box) { return box->clock->WallNow(); }

const char* OrEmpty(const char* s) { return s == nullptr ? "" : s; }

// Copies `len` bytes at `data` ("<field> must not be NULL when <field>_len
// is not 0" otherwise).
int Bytes(const char* where, const char* field, const void* data, size_t len, std::string* out) {
  if (data == nullptr && len != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s%s must not be NULL when %s_len is %zu",
                    where, field, field, len);
  }
  out->assign(static_cast<const char*>(data), data == nullptr ? 0 : len);
  return MULLIGAN_OK;
}

// Converts a caller's spec; the core validates the values themselves.
// `where` prefixes the messages ("specs[2]: ").
int SpecFromC(const mulligan_outbox_spec* in, const char* where, mulligan::OutboxEntrySpec* out) {
  if (int rc = CheckStructSize("spec", in->struct_size, kSpecSizeV0_6,
                               "MULLIGAN_OUTBOX_SPEC_INIT")) {
    return rc;
  }
  if (in->kind != MULLIGAN_OUTBOX_HTTP && in->kind != MULLIGAN_OUTBOX_JOB) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "%sspec->kind must be MULLIGAN_OUTBOX_HTTP or MULLIGAN_OUTBOX_JOB, got %d",
                    where, in->kind);
  }
  out->kind = static_cast<mulligan::OutboxKind>(in->kind);
  out->method = OrEmpty(in->method);
  out->url = OrEmpty(in->url);
  out->job = OrEmpty(in->job);
  out->idempotency_key = OrEmpty(in->idempotency_key);
  if (in->header_count != 0 && (in->header_names == nullptr || in->header_values == nullptr)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "%sspec->header_names and header_values must not be NULL when "
                    "header_count is %zu",
                    where, in->header_count);
  }
  out->headers.clear();
  for (size_t i = 0; i < in->header_count; ++i) {
    if (in->header_names[i] == nullptr || in->header_values[i] == nullptr) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "%sspec->header_names[%zu] and header_values[%zu] must not be NULL", where,
                      i, i);
    }
    out->headers.push_back({in->header_names[i], in->header_values[i]});
  }
  if (int rc = Bytes(where, "spec->body", in->body, in->body_len, &out->body)) return rc;
  return Bytes(where, "spec->payload", in->payload, in->payload_len, &out->payload);
}

int FillInfo(const mulligan::OutboxEntry& e, const HeaderViews& headers,
             mulligan_outbox_entry_info* out) {
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckStructSize("out", out->struct_size, kInfoSizeV0_6,
                               "MULLIGAN_OUTBOX_ENTRY_INFO_INIT")) {
    return rc;
  }
  out->id = e.id;
  out->kind = static_cast<int>(e.spec.kind);
  out->state = static_cast<int>(e.state);
  out->idempotency_key = e.spec.idempotency_key.c_str();
  out->attempts = e.attempts;
  out->leases = e.leases;
  out->created_at_unix_ms = UnixMs(e.created_at);
  out->next_attempt_at_unix_ms = UnixMs(e.next_attempt_at);
  out->lease_owner = e.lease_owner.c_str();
  out->lease_expires_at_unix_ms = UnixMs(e.lease_expires_at);
  out->finished_at_unix_ms = UnixMs(e.finished_at);
  out->stop_reason = e.stop_reason.c_str();
  out->method = e.spec.method.c_str();
  out->url = e.spec.url.c_str();
  out->header_count = headers.names.size();
  out->header_names = headers.names.empty() ? nullptr : headers.names.data();
  out->header_values = headers.values.empty() ? nullptr : headers.values.data();
  out->body = e.spec.body.data();
  out->body_len = e.spec.body.size();
  out->job = e.spec.job.c_str();
  out->payload = e.spec.payload.data();
  out->payload_len = e.spec.payload.size();
  return MULLIGAN_OK;
}

// Checks a state argument: one of the four, or -1 when `all_ok`.
int CheckState(int state, bool all_ok) {
  if ((state >= MULLIGAN_OUTBOX_PENDING && state <= MULLIGAN_OUTBOX_DEAD) ||
      (all_ok && state == -1)) {
    return MULLIGAN_OK;
  }
  return SetError(MULLIGAN_E_INVALID_ARGUMENT, "state must be a mulligan_outbox_state%s, got %d",
                  all_ok ? " or -1" : "", state);
}

int CheckHttpStatus(const char* name, int status) {
  if (status == 0 || (status >= 100 && status <= 599)) return MULLIGAN_OK;
  return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s must be 0 or in [100, 599], got %d", name,
                  status);
}

// Checks a max_entries argument against what the core takes (an int).
int CheckMaxEntries(size_t max_entries) {
  if (max_entries >= 1 && max_entries <= static_cast<size_t>(INT_MAX)) return MULLIGAN_OK;
  return SetError(MULLIGAN_E_INVALID_ARGUMENT, "max_entries must be in [1, %d], got %zu", INT_MAX,
                  max_entries);
}

}  // namespace

extern "C" {

const char* mulligan_outbox_state_str(int state) {
  MULLIGAN_CAPI_BEGIN
  if (state < MULLIGAN_OUTBOX_PENDING || state > MULLIGAN_OUTBOX_DEAD) return "unknown";
  return mulligan::OutboxStateName(static_cast<mulligan::OutboxState>(state));
  MULLIGAN_CAPI_END_RETURN("unknown")
}

// ---------------------------------------------------------------------------
// Options

int mulligan_outbox_options_create(mulligan_outbox_options** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  *out = new mulligan_outbox_options();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_outbox_options_destroy(mulligan_outbox_options* opts) {
  MULLIGAN_CAPI_BEGIN
  delete opts;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_outbox_options_set_create(mulligan_outbox_options* opts, int create) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.create = create != 0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_options_set_sync(mulligan_outbox_options* opts, int sync) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (sync != MULLIGAN_OUTBOX_SYNC_FULL && sync != MULLIGAN_OUTBOX_SYNC_NORMAL) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "sync must be MULLIGAN_OUTBOX_SYNC_FULL or MULLIGAN_OUTBOX_SYNC_NORMAL, got %d",
                    sync);
  }
  opts->impl.sync = static_cast<mulligan::OutboxSync>(sync);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_options_set_busy_timeout_ms(mulligan_outbox_options* opts,
                                                double busy_timeout_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!CheckMs("busy_timeout_ms", busy_timeout_ms, false)) return MULLIGAN_E_INVALID_ARGUMENT;
  opts->impl.busy_timeout = DurationFromMillis(busy_timeout_ms);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_options_set_lease_timeout_ms(mulligan_outbox_options* opts,
                                                 double lease_timeout_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!CheckMs("lease_timeout_ms", lease_timeout_ms, true)) return MULLIGAN_E_INVALID_ARGUMENT;
  opts->impl.lease_timeout = DurationFromMillis(lease_timeout_ms);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_options_set_retry(mulligan_outbox_options* opts,
                                      const mulligan_retry_options* retry) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  MULLIGAN_CHECK_NOT_NULL(retry);
  opts->impl.retry = retry->impl;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_options_set_max_size_bytes(mulligan_outbox_options* opts,
                                               int64_t max_size_bytes) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (max_size_bytes < 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "max_size_bytes must be >= 0, got %lld",
                    static_cast<long long>(max_size_bytes));
  }
  opts->impl.max_size_bytes = max_size_bytes;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_options_set_name(mulligan_outbox_options* opts, const char* name) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  MULLIGAN_CHECK_NOT_NULL(name);
  opts->impl.name = name;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_options_set_clock(mulligan_outbox_options* opts, const mulligan_clock* clock) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->clock = clock == nullptr ? nullptr : &clock->impl;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

// ---------------------------------------------------------------------------
// Open and close

namespace {

// A redis:// or rediss:// location names a Redis Streams outbox (0.6).
bool IsRedisLocation(const std::string& path) {
  return path.rfind("redis://", 0) == 0 || path.rfind("rediss://", 0) == 0;
}

// Opens the outbox `options.path` names: an SQLite file, or, for a Redis URL,
// the outbox options.name on that server through a RedisState with its
// defaults (prefix "mulligan", bounded timeouts), as Python's
// Outbox("redis://...", name=...) does.
mulligan::Result<std::unique_ptr<mulligan::Outbox>> OpenAt(mulligan::OutboxOptions options) {
  if (!IsRedisLocation(options.path)) return mulligan::Outbox::Open(options);
#ifdef MULLIGAN_CAPI_REDIS
  mulligan::RedisStateOptions state_options;
  state_options.url = options.path;
  auto state = mulligan::RedisState::Create(state_options);
  if (!state.ok()) return state.status();
  options.path.clear();
  return mulligan::OpenRedisOutbox(std::move(*state), options);
#else
  return mulligan::Status(mulligan::StatusCode::kInvalidArgument,
                          "outbox path: this libmulligan was built without Redis "
                          "(MULLIGAN_BUILD_REDIS=OFF); a redis:// outbox needs it");
#endif
}

}  // namespace

int mulligan_outbox_open(const char* path, const mulligan_outbox_options* opts,
                         mulligan_outbox** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(path);
  mulligan::OutboxOptions options = opts == nullptr ? mulligan::OutboxOptions() : opts->impl;
  options.path = path;
  auto box = OpenAt(std::move(options));
  if (!box.ok()) return SetError(box.status());
  const mulligan::Clock* clock = opts == nullptr ? nullptr : opts->clock;
  *out = new mulligan_outbox{std::move(*box),
                             clock == nullptr ? mulligan::SystemClock::Default() : clock};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_outbox_close(mulligan_outbox* box) {
  MULLIGAN_CAPI_BEGIN
  delete box;
  MULLIGAN_CAPI_END_VOID
}

// ---------------------------------------------------------------------------
// Enqueue

int mulligan_outbox_enqueue(mulligan_outbox* box, const mulligan_outbox_spec* spec,
                            int64_t* out_id, char* key_buf, size_t key_buf_size) {
  MULLIGAN_CAPI_BEGIN
  if (out_id != nullptr) *out_id = 0;
  CopyTruncated("", key_buf, key_buf_size);
  MULLIGAN_CHECK_NOT_NULL(box);
  MULLIGAN_CHECK_NOT_NULL(spec);
  if (key_buf != nullptr && key_buf_size < MULLIGAN_OUTBOX_KEY_SIZE) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "key_buf_size must be at least MULLIGAN_OUTBOX_KEY_SIZE (%d), got %zu",
                    MULLIGAN_OUTBOX_KEY_SIZE, key_buf_size);
  }
  mulligan::OutboxEntrySpec s;
  if (int rc = SpecFromC(spec, "", &s)) return rc;
  auto entry = box->impl->Enqueue(s, Now(box));
  if (!entry.ok()) return SetError(entry.status());
  if (out_id != nullptr) *out_id = entry->id;
  CopyTruncated(entry->spec.idempotency_key, key_buf, key_buf_size);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_enqueue_many(mulligan_outbox* box, const mulligan_outbox_spec* specs,
                                 size_t count, int64_t* out_ids) {
  MULLIGAN_CAPI_BEGIN
  // Checked first: a count past the bound is a caller's mistake, and
  // out_ids would not have room for it.
  if (count > MULLIGAN_OUTBOX_MAX_BATCH) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "count must be at most %d (MULLIGAN_OUTBOX_MAX_BATCH), got %zu",
                    MULLIGAN_OUTBOX_MAX_BATCH, count);
  }
  if (out_ids != nullptr) {
    for (size_t i = 0; i < count; ++i) out_ids[i] = 0;
  }
  MULLIGAN_CHECK_NOT_NULL(box);
  if (count == 0) return MULLIGAN_OK;
  MULLIGAN_CHECK_NOT_NULL(specs);
  std::vector<mulligan::OutboxEntrySpec> all(count);
  for (size_t i = 0; i < count; ++i) {
    const std::string where = "specs[" + std::to_string(i) + "]: ";
    if (int rc = SpecFromC(&specs[i], where.c_str(), &all[i])) return rc;
  }
  auto entries = box->impl->EnqueueMany(all, Now(box));
  if (!entries.ok()) return SetError(entries.status());
  if (out_ids != nullptr) {
    for (size_t i = 0; i < count; ++i) out_ids[i] = (*entries)[i].id;
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

// ---------------------------------------------------------------------------
// Entries

int mulligan_outbox_entry_info_get(const mulligan_outbox_entry* entry,
                                   mulligan_outbox_entry_info* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(entry);
  return FillInfo(entry->impl, entry->headers, out);
  MULLIGAN_CAPI_END
}

void mulligan_outbox_entry_destroy(mulligan_outbox_entry* entry) {
  MULLIGAN_CAPI_BEGIN
  delete entry;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_outbox_get(mulligan_outbox* box, int64_t id, mulligan_outbox_entry** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(box);
  auto entry = box->impl->Get(id);
  if (!entry.ok()) return SetError(entry.status());
  auto handle = std::make_unique<mulligan_outbox_entry>();
  handle->impl = std::move(*entry);
  handle->headers.Build(handle->impl);
  *out = handle.release();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_list(mulligan_outbox* box, int state, size_t max_entries,
                         mulligan_outbox_entry** out, size_t* count) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(count);
  *count = 0;
  MULLIGAN_CHECK_NOT_NULL(box);
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckState(state, true)) return rc;
  if (int rc = CheckMaxEntries(max_entries)) return rc;
  std::optional<mulligan::OutboxState> which;
  if (state != -1) which = static_cast<mulligan::OutboxState>(state);
  auto entries = box->impl->List(which, static_cast<int>(max_entries));
  if (!entries.ok()) return SetError(entries.status());
  // Build every handle first, so that nothing is filled when one fails.
  std::vector<std::unique_ptr<mulligan_outbox_entry>> handles;
  for (mulligan::OutboxEntry& e : *entries) {
    auto handle = std::make_unique<mulligan_outbox_entry>();
    handle->impl = std::move(e);
    handle->headers.Build(handle->impl);
    handles.push_back(std::move(handle));
  }
  for (size_t i = 0; i < handles.size(); ++i) out[i] = handles[i].release();
  *count = handles.size();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

// ---------------------------------------------------------------------------
// Claim, complete, fail

int mulligan_outbox_claim(mulligan_outbox* box, const char* worker, size_t max_entries,
                          double lease_timeout_ms, mulligan_outbox_lease** out, size_t* count) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(count);
  *count = 0;
  MULLIGAN_CHECK_NOT_NULL(box);
  MULLIGAN_CHECK_NOT_NULL(worker);
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckMaxEntries(max_entries)) return rc;
  std::optional<mulligan::Duration> timeout;
  if (!(lease_timeout_ms < 0)) {  // NaN and 0 are refused here.
    if (!CheckMs("lease_timeout_ms", lease_timeout_ms, true)) return MULLIGAN_E_INVALID_ARGUMENT;
    timeout = DurationFromMillis(lease_timeout_ms);
  }
  auto leases = box->impl->Lease(worker, static_cast<int>(max_entries), Now(box), timeout);
  if (!leases.ok()) return SetError(leases.status());
  std::vector<std::unique_ptr<mulligan_outbox_lease>> handles;
  for (mulligan::OutboxLease& l : *leases) {
    auto handle = std::make_unique<mulligan_outbox_lease>();
    handle->impl = std::move(l);
    handle->headers.Build(handle->impl.entry);
    handles.push_back(std::move(handle));
  }
  for (size_t i = 0; i < handles.size(); ++i) out[i] = handles[i].release();
  *count = handles.size();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_lease_info(const mulligan_outbox_lease* lease,
                               mulligan_outbox_entry_info* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(lease);
  return FillInfo(lease->impl.entry, lease->headers, out);
  MULLIGAN_CAPI_END
}

double mulligan_outbox_lease_attempt_timeout_ms(const mulligan_outbox_lease* lease) {
  MULLIGAN_CAPI_BEGIN
  if (lease == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: lease must not be NULL", __func__);
    return -1.0;
  }
  if (!lease->impl.attempt_timeout) return -1.0;
  return DurationToMs(*lease->impl.attempt_timeout);
  MULLIGAN_CAPI_END_RETURN(-1.0)
}

void mulligan_outbox_lease_destroy(mulligan_outbox_lease* lease) {
  MULLIGAN_CAPI_BEGIN
  delete lease;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_outbox_complete(mulligan_outbox* box, const mulligan_outbox_lease* lease,
                             int http_status) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(box);
  MULLIGAN_CHECK_NOT_NULL(lease);
  if (int rc = CheckHttpStatus("http_status", http_status)) return rc;
  mulligan::Status s = box->impl->Complete(lease->impl, Now(box), http_status);
  return s.ok() ? MULLIGAN_OK : SetError(s);
  MULLIGAN_CAPI_END
}

int mulligan_outbox_complete_many(mulligan_outbox* box,
                                  const mulligan_outbox_lease* const* leases,
                                  const int* http_statuses, size_t count) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(box);
  if (count == 0) return MULLIGAN_OK;
  MULLIGAN_CHECK_NOT_NULL(leases);
  std::vector<mulligan::OutboxSuccess> successes(count);
  for (size_t i = 0; i < count; ++i) {
    if (leases[i] == nullptr) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT, "leases[%zu] must not be NULL", i);
    }
    const int status = http_statuses == nullptr ? 0 : http_statuses[i];
    const std::string name = "http_statuses[" + std::to_string(i) + "]";
    if (int rc = CheckHttpStatus(name.c_str(), status)) return rc;
    successes[i] = {&leases[i]->impl, status};
  }
  mulligan::Status s = box->impl->CompleteMany(successes, Now(box));
  return s.ok() ? MULLIGAN_OK : SetError(s);
  MULLIGAN_CAPI_END
}

int mulligan_outbox_fail(mulligan_outbox* box, const mulligan_outbox_lease* lease,
                         const mulligan_outcome* outcome, const char* message, int http_status,
                         mulligan_outbox_failure* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(box);
  MULLIGAN_CHECK_NOT_NULL(lease);
  MULLIGAN_CHECK_NOT_NULL(outcome);
  if (out != nullptr) {
    if (int rc = CheckStructSize("out", out->struct_size, kFailureSizeV0_6,
                                 "MULLIGAN_OUTBOX_FAILURE_INIT")) {
      return rc;
    }
  }
  if (int rc = CheckHttpStatus("http_status", http_status)) return rc;
  mulligan::Outcome o;
  if (int rc = OutcomeFromC(outcome, &o)) return rc;
  auto failure = box->impl->Fail(lease->impl, o, OrEmpty(message), Now(box), http_status);
  if (!failure.ok()) return SetError(failure.status());
  if (out != nullptr) {
    const bool dead = failure->state == mulligan::OutboxState::kDead;
    out->state = static_cast<int>(failure->state);
    out->next_attempt_at_unix_ms = dead ? 0 : UnixMs(failure->next_attempt_at);
    out->delay_ms = dead ? 0.0 : DurationToMs(failure->delay);
    out->reason = static_cast<int>(failure->reason);
    out->attempt = failure->attempt;
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

// ---------------------------------------------------------------------------
// Attempt history

int mulligan_outbox_history_get(mulligan_outbox* box, int64_t id, mulligan_outbox_history** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(box);
  auto history = box->impl->History(id);
  if (!history.ok()) return SetError(history.status());
  *out = new mulligan_outbox_history{std::move(*history)};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

size_t mulligan_outbox_history_size(const mulligan_outbox_history* history) {
  MULLIGAN_CAPI_BEGIN
  if (history == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: history must not be NULL", __func__);
    return 0;
  }
  return history->impl.size();
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_outbox_history_at(const mulligan_outbox_history* history, size_t index,
                               mulligan_outbox_attempt* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(history);
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckStructSize("out", out->struct_size, kAttemptSizeV0_6,
                               "MULLIGAN_OUTBOX_ATTEMPT_INIT")) {
    return rc;
  }
  if (index >= history->impl.size()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "index must be < %zu, got %zu",
                    history->impl.size(), index);
  }
  const mulligan::OutboxAttempt& a = history->impl[index];
  out->attempt = a.attempt;
  out->at_unix_ms = UnixMs(a.at);
  out->http_status = a.http_status;
  out->error_kind = static_cast<int>(a.error);
  out->classification = static_cast<int>(a.classification);
  out->message = a.message.c_str();
  out->delay_ms = DurationToMs(a.delay);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_outbox_history_destroy(mulligan_outbox_history* history) {
  MULLIGAN_CAPI_BEGIN
  delete history;
  MULLIGAN_CAPI_END_VOID
}

// ---------------------------------------------------------------------------
// Repair and metrics

int mulligan_outbox_retry(mulligan_outbox* box, int64_t id) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(box);
  mulligan::Status s = box->impl->Retry(id, Now(box));
  return s.ok() ? MULLIGAN_OK : SetError(s);
  MULLIGAN_CAPI_END
}

int mulligan_outbox_purge(mulligan_outbox* box, int state, int64_t* out_removed) {
  MULLIGAN_CAPI_BEGIN
  if (out_removed != nullptr) *out_removed = 0;
  MULLIGAN_CHECK_NOT_NULL(box);
  if (int rc = CheckState(state, false)) return rc;
  auto removed = box->impl->Purge(static_cast<mulligan::OutboxState>(state));
  if (!removed.ok()) return SetError(removed.status());
  if (out_removed != nullptr) *out_removed = *removed;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_outbox_stats_get(mulligan_outbox* box, mulligan_outbox_stats* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(box);
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckStructSize("out", out->struct_size, kStatsSizeV0_6,
                               "MULLIGAN_OUTBOX_STATS_INIT")) {
    return rc;
  }
  auto stats = box->impl->Stats(Now(box));
  if (!stats.ok()) return SetError(stats.status());
  out->depth = stats->depth;
  out->pending = stats->pending;
  out->leased = stats->leased;
  out->done = stats->done;
  out->dead = stats->dead;
  out->oldest_age_ms = DurationToMs(stats->oldest_age);
  out->deliveries = stats->deliveries;
  out->dead_letters = stats->dead_letters;
  out->failures = stats->failures;
  out->lease_expiries = stats->lease_expiries;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

}  // extern "C"
