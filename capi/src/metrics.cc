// capi/src/metrics.cc — the metrics part of the C ABI (mulligan_metrics.h): exports of
// mulligan::MetricsRegistry::Default() into caller buffers (snprintf's
// protocol, so no allocation crosses the ABI), per-name snapshots, the
// in-flight / waiting-to-retry status, and event listeners.
//
// mulligan_retry_call() (retry.cc) and pipelines (pipeline.cc) report into the
// same registry.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "capi_internal.h"
#include "mulligan/telemetry/metrics.h"

namespace {

using mulligan::EventKind;
using mulligan::MetricsRegistry;
using mulligan::MetricsSnapshot;
using mulligan::RetryReason;
using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::SetError;

// The C enums mirror the core's pinned values.
static_assert(MULLIGAN_RETRY_REASON_STATUS == static_cast<int>(RetryReason::kStatus), "");
static_assert(MULLIGAN_RETRY_REASON_TRANSPORT == static_cast<int>(RetryReason::kTransport), "");
static_assert(MULLIGAN_RETRY_REASON_TIMEOUT == static_cast<int>(RetryReason::kTimeout), "");
static_assert(MULLIGAN_RETRY_REASON_RETRY_AFTER == static_cast<int>(RetryReason::kRetryAfter),
              "");
static_assert(MULLIGAN_RETRY_REASON_EXCEPTION == static_cast<int>(RetryReason::kException), "");
static_assert(MULLIGAN_RETRY_REASON_COUNT == mulligan::kRetryReasonCount, "");
static_assert(MULLIGAN_EVENT_ATTEMPT_STARTED == static_cast<int>(EventKind::kAttemptStarted), "");
static_assert(MULLIGAN_EVENT_ATTEMPT_FAILED == static_cast<int>(EventKind::kAttemptFailed), "");
static_assert(MULLIGAN_EVENT_RETRY_SCHEDULED == static_cast<int>(EventKind::kRetryScheduled), "");
static_assert(MULLIGAN_EVENT_GAVE_UP == static_cast<int>(EventKind::kGaveUp), "");
static_assert(MULLIGAN_EVENT_BREAKER_TRANSITION ==
                  static_cast<int>(EventKind::kBreakerTransition), "");
static_assert(MULLIGAN_EVENT_FALLBACK_USED == static_cast<int>(EventKind::kFallbackUsed), "");
static_assert(MULLIGAN_EVENT_SUCCEEDED == static_cast<int>(EventKind::kSucceeded), "");
static_assert(MULLIGAN_EVENT_SHORT_CIRCUITED == static_cast<int>(EventKind::kShortCircuited), "");
static_assert(MULLIGAN_EVENT_REJECTED == static_cast<int>(EventKind::kRejected), "");
static_assert(std::string_view(MULLIGAN_METRICS_OVERFLOW_NAME) ==
                  std::string_view(MetricsRegistry::kOverflowName), "");

// The first published size of the caller-owned snapshot struct (up to
// breaker_state, with its tail padding: `cancelled`, 0.6, starts there).
constexpr size_t kSnapshotSizeV0_1 = offsetof(mulligan_metrics_snapshot, cancelled);
static_assert(kSnapshotSizeV0_1 % alignof(uint64_t) == 0, "0.1's struct ended padded to 8");

// Copies `text` into buf with snprintf's protocol (see mulligan_metrics.h):
// *needed is the size that fits the whole text, its NUL included.
int CopyOut(const std::string& text, char* buf, size_t size, size_t* needed, const char* func) {
  if (buf == nullptr && size > 0) {
    if (needed != nullptr) *needed = 0;
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "%s: buf must not be NULL when size is %zu (pass size 0 to query the size)",
                    func, size);
  }
  if (needed != nullptr) *needed = text.size() + 1;
  mulligan::capi_internal::CopyTruncated(text, buf, size);
  return MULLIGAN_OK;
}

// `size`: the caller's struct_size; the fields past it are not written.
void Fill(const MetricsSnapshot& s, mulligan_metrics_snapshot* out, size_t size) {
  out->calls = s.calls;
  out->attempts = s.attempts;
  out->retries = s.retries;
  for (int i = 0; i < MULLIGAN_RETRY_REASON_COUNT; ++i) {
    out->retries_by_reason[i] = s.retries_by_reason[i];
  }
  out->successes = s.successes;
  out->failures = s.failures;
  out->fallbacks = s.fallbacks;
  out->short_circuits = s.short_circuits;
  out->circuit_opens = s.circuit_opens;
  out->in_flight = s.in_flight;
  out->waiting_to_retry = s.waiting_to_retry;
  out->breaker_state = s.breaker_state;
  if (size >= offsetof(mulligan_metrics_snapshot, cancelled) + sizeof(out->cancelled)) {
    out->cancelled = s.cancelled;
  }
  if (size >= offsetof(mulligan_metrics_snapshot, hedge_cancelled) + sizeof(out->hedge_cancelled)) {
    out->hedges = s.hedges;
    out->hedges_won = s.hedges_won;
    out->hedge_cancelled = s.hedge_cancelled;
  }
}

// Listener state: the callback and the caller's user_data, freed through
// free_user_data when the last copy of the listener goes away (after
// removal, once no notification still runs it).
struct ListenerData {
  mulligan_event_listener fn = nullptr;
  void* user_data = nullptr;
  void (*free_user_data)(void*) = nullptr;
  uint32_t kinds_mask = 0;
  ListenerData() = default;
  ListenerData(const ListenerData&) = delete;
  ListenerData& operator=(const ListenerData&) = delete;
  ~ListenerData() {
    if (free_user_data != nullptr) free_user_data(user_data);
  }
};

void Deliver(const ListenerData& data, const mulligan::Event& e) {
  const int kind = static_cast<int>(e.kind);
  if (data.kinds_mask != 0 && (kind >= 32 || (data.kinds_mask & (1u << kind)) == 0)) return;
  const std::string name(e.name);  // NUL-terminated for C (short names: no allocation)
  mulligan_event event;
  event.struct_size = static_cast<uint32_t>(sizeof(event));
  event.kind = kind;
  event.name = name.c_str();
  event.attempt = e.attempt;
  event.delay_ms = DurationToMs(e.delay);
  event.error_kind = static_cast<int>(e.error);
  event.http_status = e.http_status;
  event.retry_reason = static_cast<int>(e.retry_reason);
  event.stop_reason = static_cast<int>(e.stop_reason);
  event.from_state = static_cast<int>(e.from);
  event.to_state = static_cast<int>(e.to);
  event.transition_reason = e.transition_reason != nullptr ? e.transition_reason : "";
  event.elapsed_ms = DurationToMs(e.elapsed);
  (void)data.fn(&event, data.user_data);  // reserved return value
}

}  // namespace

extern "C" {

int mulligan_metrics_prometheus(char* buf, size_t size, size_t* needed) {
  MULLIGAN_CAPI_BEGIN
  return CopyOut(MetricsRegistry::Default().ToPrometheus(), buf, size, needed, __func__);
  MULLIGAN_CAPI_END
}

int mulligan_metrics_json(char* buf, size_t size, size_t* needed) {
  MULLIGAN_CAPI_BEGIN
  return CopyOut(MetricsRegistry::Default().ToJson(), buf, size, needed, __func__);
  MULLIGAN_CAPI_END
}

int mulligan_metrics_get(const char* name, mulligan_metrics_snapshot* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = mulligan::capi_internal::CheckStructSize("out", out->struct_size, kSnapshotSizeV0_1,
                                                        "MULLIGAN_METRICS_SNAPSHOT_INIT")) {
    return rc;
  }
  // Zeroed first, so that a failure leaves no stale values.
  {
    const uint32_t size = out->struct_size;
    mulligan_metrics_snapshot zero = MULLIGAN_METRICS_SNAPSHOT_INIT;
    zero.struct_size = size;
    std::memcpy(out, &zero, std::min<size_t>(size, sizeof(zero)));
  }
  MULLIGAN_CHECK_NOT_NULL(name);
  // Snapshot() never creates a name, unlike Get().
  for (const MetricsSnapshot& s : MetricsRegistry::Default().Snapshot()) {
    if (s.name == name) {
      Fill(s, out, out->struct_size);
      return MULLIGAN_OK;
    }
  }
  return SetError(MULLIGAN_E_INVALID_ARGUMENT, "no metrics named '%s'", name);
  MULLIGAN_CAPI_END
}

int mulligan_metrics_status(int64_t* in_flight, int64_t* waiting_to_retry) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(in_flight);
  MULLIGAN_CHECK_NOT_NULL(waiting_to_retry);
  int64_t flying = 0, waiting = 0;
  for (const MetricsSnapshot& s : MetricsRegistry::Default().Snapshot()) {
    flying += s.in_flight;
    waiting += s.waiting_to_retry;
  }
  *in_flight = flying;
  *waiting_to_retry = waiting;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_metrics_reset(void) {
  MULLIGAN_CAPI_BEGIN
  MetricsRegistry::Default().Clear();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_event_listener_add(mulligan_event_listener callback, void* user_data,
                                void (*free_user_data)(void* user_data), uint32_t kinds_mask,
                                uint64_t* out_id) {
  MULLIGAN_CAPI_BEGIN
  if (out_id != nullptr) *out_id = 0;
  MULLIGAN_CHECK_NOT_NULL(callback);
  // free_user_data is set only once nothing can fail any more: a failed add
  // must not call it.
  auto data = std::make_shared<ListenerData>();
  data->fn = callback;
  data->user_data = user_data;
  data->kinds_mask = kinds_mask;
  mulligan::EventListener listener = [data](const mulligan::Event& e) { Deliver(*data, e); };
  data->free_user_data = free_user_data;
  uint64_t id = 0;
  try {
    id = MetricsRegistry::Default().AddListener(std::move(listener));
  } catch (...) {
    data->free_user_data = nullptr;  // the add failed: the caller keeps user_data
    throw;
  }
  if (out_id != nullptr) *out_id = id;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_event_listener_remove(uint64_t id) {
  MULLIGAN_CAPI_BEGIN
  if (!MetricsRegistry::Default().RemoveListener(id)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "no event listener with id %llu",
                    static_cast<unsigned long long>(id));
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

}  // extern "C"
