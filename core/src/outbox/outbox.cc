// core/src/outbox/outbox.cc — the Outbox front (outbox/outbox.h): options,
// entries and arguments checked once for every backend, then handed to the
// store (outbox/store.h): SQLite here (sqlite_store.cc), Redis in
// mulligan_redis (redis_store.cc, OpenRedisOutbox).

#include "mulligan/outbox/outbox.h"

#include <chrono>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "mulligan/http/client.h"
#include "outbox/store.h"

namespace mulligan {
inline namespace v0 {

const char* OutboxKindName(OutboxKind kind) {
  switch (kind) {
    case OutboxKind::kHttp: return "http";
    case OutboxKind::kJob: return "job";
  }
  return "unknown";
}

const char* OutboxStateName(OutboxState state) {
  switch (state) {
    case OutboxState::kPending: return "pending";
    case OutboxState::kLeased: return "leased";
    case OutboxState::kDone: return "done";
    case OutboxState::kDead: return "dead";
  }
  return "unknown";
}

Result<OutboxState> ParseOutboxState(std::string_view name) {
  for (OutboxState s : {OutboxState::kPending, OutboxState::kLeased, OutboxState::kDone,
                        OutboxState::kDead}) {
    if (name == OutboxStateName(s)) return s;
  }
  return InvalidArgumentError("outbox state must be pending, leased, done or dead, got '" +
                              std::string(name) + "'");
}

namespace outbox_internal {

int64_t ToNs(WallTime t) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

WallTime FromNs(int64_t ns) {
  return WallTime(std::chrono::duration_cast<WallTime::duration>(std::chrono::nanoseconds(ns)));
}

// Headers are stored as name NUL value NUL ... (neither may hold a NUL).
std::string EncodeHeaders(const std::vector<OutboxHeader>& headers) {
  std::string out;
  for (const OutboxHeader& h : headers) {
    out += h.name;
    out += '\0';
    out += h.value;
    out += '\0';
  }
  return out;
}

std::vector<OutboxHeader> DecodeHeaders(const std::string& bytes) {
  std::vector<OutboxHeader> headers;
  size_t pos = 0;
  while (pos < bytes.size()) {
    size_t name_end = bytes.find('\0', pos);
    if (name_end == std::string::npos) break;
    size_t value_end = bytes.find('\0', name_end + 1);
    if (value_end == std::string::npos) break;
    headers.push_back({bytes.substr(pos, name_end - pos),
                       bytes.substr(name_end + 1, value_end - name_end - 1)});
    pos = value_end + 1;
  }
  return headers;
}

std::string LeaseExpiredMessage(const std::string& owner) {
  return "lease expired, worker " + owner;
}

Status ForeignLease(int64_t id, bool file) {
  if (!file)
    return InvalidArgumentError("outbox entry " + std::to_string(id) +
                                " of this outbox has another idempotency key: the lease was "
                                "made by another outbox");
  return InvalidArgumentError("outbox entry " + std::to_string(id) +
                              " of this file has another idempotency key: the lease was made "
                              "by an outbox on another file");
}

Status LeaseLost(int64_t id) {
  return OutboxError("outbox entry " + std::to_string(id) +
                     ": lease lost (it expired, or the entry was leased again or finished, "
                     "since this lease)");
}

}  // namespace outbox_internal

namespace {

// RFC 9110 section 5.6.2 tchar.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
              std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
                  std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

Status ValidateSpec(const OutboxEntrySpec& spec) {
  const std::string& key = spec.idempotency_key;
  if (key.size() > 255)
    return InvalidArgumentError("outbox entry idempotency_key must be at most 255 bytes");
  for (unsigned char c : key) {
    if (c < 0x21 || c > 0x7e || c == '"')
      return InvalidArgumentError(
          "outbox entry idempotency_key must be printable ASCII without spaces or quotes");
  }
  if (spec.kind == OutboxKind::kJob) {
    if (spec.job.empty()) return InvalidArgumentError("outbox entry job must not be empty");
    if (!spec.method.empty() || !spec.url.empty() || !spec.headers.empty() || !spec.body.empty())
      return InvalidArgumentError(
          "outbox entry of kind job must not set method, url, headers or body");
    return OkStatus();
  }
  if (spec.kind != OutboxKind::kHttp)
    return InvalidArgumentError("outbox entry kind must be http or job");
  if (!spec.job.empty() || !spec.payload.empty())
    return InvalidArgumentError("outbox entry of kind http must not set job or payload");
  if (!IsToken(spec.method))
    return InvalidArgumentError("outbox entry method must be an HTTP token, got '" +
                                spec.method + "'");
  if (spec.url.rfind("http://", 0) != 0 && spec.url.rfind("https://", 0) != 0)
    return InvalidArgumentError("outbox entry url must be an absolute http:// or https:// URL, "
                                "got '" + spec.url + "'");
  for (const OutboxHeader& h : spec.headers) {
    if (!IsToken(h.name))
      return InvalidArgumentError("outbox entry header name must be an HTTP token, got '" +
                                  h.name + "'");
    if (h.value.find_first_of(std::string("\r\n\0", 3)) != std::string::npos)
      return InvalidArgumentError("outbox entry header '" + h.name +
                                  "' value must not hold CR, LF or NUL");
    if (EqualsIgnoreCase(h.name, "Idempotency-Key"))
      return InvalidArgumentError(
          "outbox entry headers must not hold Idempotency-Key: set idempotency_key");
  }
  return OkStatus();
}

// The options every backend reads (the path is the SQLite store's).
Status ValidateOptions(const OutboxOptions& o) {
  if (o.sync != OutboxSync::kFull && o.sync != OutboxSync::kNormal)
    return InvalidArgumentError("outbox option sync must be full or normal");
  if (o.busy_timeout < Duration::zero())
    return InvalidArgumentError("outbox option busy_timeout must be >= 0");
  if (o.lease_timeout <= Duration::zero())
    return InvalidArgumentError("outbox option lease_timeout must be > 0");
  if (o.max_size_bytes < 0)
    return InvalidArgumentError("outbox option max_size_bytes must be >= 0");
  if (o.retry.stop)
    return InvalidArgumentError("outbox option retry.stop is not supported (use max_attempts "
                                "and deadline)");
  for (const auto& kind_max : o.retry.max_kind_retries) {
    if (kind_max) return InvalidArgumentError("outbox option retry.max_kind_retries is not "
                                              "supported");
  }
  return OkStatus();
}

}  // namespace

struct Outbox::Impl {
  Impl(OutboxOptions o, RetryPolicy p) : options(std::move(o)), policy(std::move(p)) {}
  OutboxOptions options;
  RetryPolicy policy;
  // Declared after the policy, which it reads: destroyed first.
  std::unique_ptr<outbox_internal::Store> store;
};

Result<std::unique_ptr<Outbox>> Outbox::Open(const OutboxOptions& options) {
  if (options.path.rfind("redis://", 0) == 0 || options.path.rfind("rediss://", 0) == 0)
    return InvalidArgumentError(
        "outbox option path names a Redis server: open a Redis outbox with OpenRedisOutbox "
        "(mulligan/outbox/redis_outbox.h, library mulligan_redis)");
  if (options.path.empty()) return InvalidArgumentError("outbox option path must not be empty");
  return OpenWith(options, [](const OutboxOptions& o, const RetryPolicy& p) {
    return outbox_internal::OpenSqliteStore(o, p);
  });
}

Result<std::unique_ptr<Outbox>> Outbox::OpenWith(const OutboxOptions& options,
                                                 const StoreFactory& open_store) {
  if (Status s = ValidateOptions(options); !s.ok()) return s;
  Result<RetryPolicy> policy = RetryPolicy::Create(options.retry);
  if (!policy.ok())
    return InvalidArgumentError("outbox option retry: " + policy.status().message());
  auto impl = std::make_unique<Impl>(options, std::move(policy).value());
  Result<std::unique_ptr<outbox_internal::Store>> store = open_store(impl->options, impl->policy);
  if (!store.ok()) return store.status();
  impl->store = std::move(store).value();
  return std::unique_ptr<Outbox>(new Outbox(std::move(impl)));
}

Outbox::Outbox(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Outbox::~Outbox() = default;

const OutboxOptions& Outbox::options() const { return impl_->options; }
const RetryPolicy& Outbox::policy() const { return impl_->policy; }

const std::string& Outbox::metrics_name() const {
  return impl_->options.name.empty() ? impl_->options.path : impl_->options.name;
}

bool Outbox::SampleMetrics(WallTime now, LimitsSnapshot::Outbox* out) {
  Result<OutboxStats> stats = Stats(now);
  if (!stats.ok()) return false;
  out->pending = stats->pending;
  out->leased = stats->leased;
  out->done = stats->done;
  out->dead = stats->dead;
  out->oldest_age_seconds = std::chrono::duration<double>(stats->oldest_age).count();
  out->deliveries_success = static_cast<uint64_t>(stats->deliveries);
  out->deliveries_failure = static_cast<uint64_t>(stats->failures);
  out->deliveries_lease_expired = static_cast<uint64_t>(stats->lease_expiries);
  out->dead_letters = static_cast<uint64_t>(stats->dead_letters);
  return true;
}
Result<OutboxEntry> Outbox::Enqueue(const OutboxEntrySpec& spec, WallTime now) {
  Result<std::vector<OutboxEntry>> entries = EnqueueMany({spec}, now);
  if (!entries.ok()) return entries.status();
  return std::move(entries->front());
}

Result<std::vector<OutboxEntry>> Outbox::EnqueueMany(const std::vector<OutboxEntrySpec>& specs,
                                                     WallTime now) {
  std::vector<OutboxEntrySpec> stored = specs;
  for (OutboxEntrySpec& spec : stored) {
    if (Status s = ValidateSpec(spec); !s.ok()) return s;
    if (spec.idempotency_key.empty()) spec.idempotency_key = NewIdempotencyKey();
  }
  return impl_->store->EnqueueMany(std::move(stored), now);
}

Result<std::vector<OutboxLease>> Outbox::Lease(std::string_view worker, int max_entries,
                                               WallTime now,
                                               std::optional<Duration> lease_timeout) {
  if (max_entries < 1) return InvalidArgumentError("outbox lease max_entries must be >= 1");
  Duration timeout = lease_timeout.value_or(impl_->options.lease_timeout);
  if (timeout <= Duration::zero())
    return InvalidArgumentError("outbox lease lease_timeout must be > 0");
  return impl_->store->Lease(worker, max_entries, now, timeout);
}

Status Outbox::Complete(const OutboxLease& lease, WallTime now, int http_status) {
  return CompleteMany({{&lease, http_status}}, now);
}

Status Outbox::CompleteMany(const std::vector<OutboxSuccess>& successes, WallTime now) {
  for (const OutboxSuccess& s : successes) {
    if (s.lease == nullptr) return InvalidArgumentError("outbox CompleteMany: a null lease");
  }
  return impl_->store->CompleteMany(successes, now);
}

Result<OutboxFailure> Outbox::Fail(const OutboxLease& lease, const Outcome& outcome,
                                   std::string_view message, WallTime now, int http_status) {
  if (impl_->policy.Classify(outcome) == Classification::kSuccess)
    return InvalidArgumentError("outbox Fail got a success outcome: call Complete");
  return impl_->store->Fail(lease, outcome, message, now, http_status);
}

Result<OutboxEntry> Outbox::Get(int64_t id) { return impl_->store->Get(id); }

Result<std::vector<OutboxEntry>> Outbox::List(std::optional<OutboxState> state, int limit) {
  if (limit < 1) return InvalidArgumentError("outbox list limit must be >= 1");
  return impl_->store->List(state, limit);
}

Result<std::vector<OutboxAttempt>> Outbox::History(int64_t id) {
  return impl_->store->History(id);
}

Result<OutboxStats> Outbox::Stats(WallTime now) { return impl_->store->Stats(now); }

Status Outbox::Retry(int64_t id, WallTime now) { return impl_->store->Retry(id, now); }

Result<int64_t> Outbox::Purge(OutboxState state) {
  if (state != OutboxState::kDone && state != OutboxState::kDead)
    return InvalidArgumentError("outbox purge takes done or dead entries only, got " +
                                std::string(OutboxStateName(state)));
  return impl_->store->Purge(state);
}

}  // namespace v0
}  // namespace mulligan
