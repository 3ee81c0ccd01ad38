// capi/src/breaker.cc — the circuit-breaker part of the C ABI
// (mulligan_breaker.h): breaker options, breakers and the breaker registry,
// thin extern "C" shims over mulligan::CircuitBreaker / BreakerRegistry.
//
// The permit crosses the ABI as a caller-owned struct (see mulligan.h for
// why); its opaque_ words carry the core Permit plus the identity of the
// breaker that issued it, so a permit handed to another breaker is rejected
// instead of corrupting its probe slots. The breaker and registry handles are
// defined in capi_internal.h: mulligan_retry_call and the pipeline use them.

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/breaker/registry.h"

namespace {

using mulligan::Duration;
using mulligan::capi_internal::CheckMs;
using mulligan::capi_internal::CheckStructSize;
using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::SetError;
using mulligan::capi_internal::TimePointToMs;
using mulligan::internal::DurationFromMillis;

// The first published sizes of the caller-owned structs.
constexpr size_t kPermitSizeV0_1 = sizeof(mulligan_breaker_permit);
// `stale` was appended in 0.2: a 0.1 caller's struct ends before it.
constexpr size_t kCountsSizeV0_1 = offsetof(mulligan_breaker_counts, stale);
constexpr size_t kCountsSizeWithStale =
    offsetof(mulligan_breaker_counts, stale) + sizeof(uint64_t);
constexpr size_t kTripSizeV0_2 = sizeof(mulligan_breaker_trip);

const mulligan::Clock* ClockOf(const mulligan_breaker_options* opts) {
  if (opts != nullptr && opts->clock != nullptr) return opts->clock;
  return mulligan::SystemClock::Default();
}

uint64_t Identity(const mulligan::CircuitBreaker* breaker) {
  return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(breaker));
}

void PackPermit(const mulligan::Admission& admission, const mulligan::CircuitBreaker* breaker,
                mulligan_breaker_permit* out) {
  const mulligan::Permit& p = admission.permit;
  out->admitted = admission.admitted() ? 1 : 0;
  out->state = static_cast<int>(admission.state);
  out->retry_in_ms = DurationToMs(admission.retry_in);
  out->probe = p.probe ? 1 : 0;
  out->opaque_[0] = p.generation;
  out->opaque_[1] = static_cast<uint64_t>(p.acquired_at.time_since_epoch().count());
  out->opaque_[2] = static_cast<uint64_t>(p.ticket) | (static_cast<uint64_t>(p.slot) << 32) |
                    (static_cast<uint64_t>(p.probe) << 48) |
                    (static_cast<uint64_t>(p.valid) << 49);
  out->opaque_[3] = Identity(breaker);
}

mulligan::Permit UnpackPermit(const mulligan_breaker_permit* in) {
  mulligan::Permit p;
  p.generation = in->opaque_[0];
  p.acquired_at = mulligan::TimePoint(Duration(static_cast<int64_t>(in->opaque_[1])));
  p.ticket = static_cast<uint32_t>(in->opaque_[2] & 0xffffffffu);
  p.slot = static_cast<uint16_t>((in->opaque_[2] >> 32) & 0xffffu);
  p.probe = ((in->opaque_[2] >> 48) & 1u) != 0;
  p.valid = ((in->opaque_[2] >> 49) & 1u) != 0;
  return p;
}

int CheckOpts(mulligan_breaker_options* opts, const char* func) {
  if (opts == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: opts must not be NULL", func);
  }
  return MULLIGAN_OK;
}

int IntInRange(const char* name, int value, int lo, int hi) {
  if (value < lo || value > hi) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s must be in [%d, %d], got %d", name, lo, hi,
                    value);
  }
  return MULLIGAN_OK;
}

int Percent(const char* name, double value) {
  if (!(value > 0 && value <= 100)) {  // also rejects NaN
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s must be in (0, 100], got %g", name, value);
  }
  return MULLIGAN_OK;
}

int CheckResult(int result) {
  if (result < MULLIGAN_CALL_SUCCESS || result > MULLIGAN_CALL_IGNORED) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "result must be a mulligan_call_result (0..2), got %d", result);
  }
  return MULLIGAN_OK;
}

// Sets the last error for a refusal and returns MULLIGAN_E_CIRCUIT_OPEN.
int Refused(const mulligan::CircuitBreaker& breaker, const mulligan::Admission& admission) {
  return SetError(breaker.OpenStatus(admission));
}

// Transition listener state: the callback and the caller's user_data, freed
// through free_user_data when the last copy of the listener goes away.
// A C call listener and its user data, freed with the last reference (the
// breaker's copy of the std::function, or a notification still running).
struct CallListenerData {
  mulligan_breaker_call_listener fn = nullptr;
  void* user_data = nullptr;
  void (*free_user_data)(void*) = nullptr;
  CallListenerData() = default;
  CallListenerData(const CallListenerData&) = delete;
  CallListenerData& operator=(const CallListenerData&) = delete;
  ~CallListenerData() {
    if (free_user_data != nullptr) free_user_data(user_data);
  }
};

struct ListenerData {
  mulligan_breaker_listener fn = nullptr;
  void* user_data = nullptr;
  void (*free_user_data)(void*) = nullptr;
  ListenerData() = default;
  ListenerData(const ListenerData&) = delete;
  ListenerData& operator=(const ListenerData&) = delete;
  ~ListenerData() {
    if (free_user_data != nullptr) free_user_data(user_data);
  }
};

}  // namespace

extern "C" {

const char* mulligan_breaker_state_str(int state) {
  MULLIGAN_CAPI_BEGIN
  if (state < MULLIGAN_BREAKER_CLOSED || state > MULLIGAN_BREAKER_METRICS_ONLY) return "unknown";
  return mulligan::BreakerStateName(static_cast<mulligan::BreakerState>(state));
  MULLIGAN_CAPI_END_RETURN("unknown")
}

// ---------------------------------------------------------------------------
// Options

int mulligan_breaker_options_create(mulligan_breaker_options** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  *out = new mulligan_breaker_options();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_breaker_options_destroy(mulligan_breaker_options* opts) {
  MULLIGAN_CAPI_BEGIN
  delete opts;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_breaker_options_set_name(mulligan_breaker_options* opts, const char* name) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  MULLIGAN_CHECK_NOT_NULL(name);
  opts->impl.name = name;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

#define MULLIGAN_INT_SETTER(func, field, lo, hi)                 \
  int func(mulligan_breaker_options* opts, int value) {          \
    MULLIGAN_CAPI_BEGIN                                          \
    if (int rc = CheckOpts(opts, __func__)) return rc;           \
    if (int rc = IntInRange(#field, value, lo, hi)) return rc;   \
    opts->impl.field = value;                                    \
    return MULLIGAN_OK;                                          \
    MULLIGAN_CAPI_END                                            \
  }

MULLIGAN_INT_SETTER(mulligan_breaker_options_set_failure_threshold, failure_threshold, 0, 1000000)
MULLIGAN_INT_SETTER(mulligan_breaker_options_set_window_size, window_size, 1, 1000000)
MULLIGAN_INT_SETTER(mulligan_breaker_options_set_window_buckets, window_buckets, 1, 3600)
MULLIGAN_INT_SETTER(mulligan_breaker_options_set_minimum_calls, minimum_calls, 1, 2147483647)
MULLIGAN_INT_SETTER(mulligan_breaker_options_set_half_open_max_calls, half_open_max_calls, 1,
                    65535)
#undef MULLIGAN_INT_SETTER

int mulligan_breaker_options_set_window(mulligan_breaker_options* opts, int window) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  if (window < MULLIGAN_WINDOW_NONE || window > MULLIGAN_WINDOW_TIME) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "window must be a mulligan_breaker_window (0..2), got %d", window);
  }
  opts->impl.window = static_cast<mulligan::WindowKind>(window);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

#define MULLIGAN_MS_SETTER(func, name, assign)                              \
  int func(mulligan_breaker_options* opts, double ms) {                     \
    MULLIGAN_CAPI_BEGIN                                                     \
    if (int rc = CheckOpts(opts, __func__)) return rc;                      \
    if (!CheckMs(name, ms, true)) return MULLIGAN_E_INVALID_ARGUMENT;       \
    opts->impl.assign = DurationFromMillis(ms);                                   \
    return MULLIGAN_OK;                                                     \
    MULLIGAN_CAPI_END                                                       \
  }

MULLIGAN_MS_SETTER(mulligan_breaker_options_set_window_duration_ms, "window_duration_ms",
                   window_duration)
MULLIGAN_MS_SETTER(mulligan_breaker_options_set_slow_call_duration_ms, "slow_call_duration_ms",
                   slow_call_duration)
MULLIGAN_MS_SETTER(mulligan_breaker_options_set_reset_timeout_ms, "reset_timeout_ms",
                   reset_timeout)
MULLIGAN_MS_SETTER(mulligan_breaker_options_set_max_reset_timeout_ms, "max_reset_timeout_ms",
                   max_reset_timeout)
MULLIGAN_MS_SETTER(mulligan_breaker_options_set_permit_timeout_ms, "permit_timeout_ms",
                   permit_timeout)
MULLIGAN_MS_SETTER(mulligan_breaker_options_set_max_half_open_duration_ms,
                   "max_half_open_duration_ms", max_half_open_duration)
#undef MULLIGAN_MS_SETTER

int mulligan_breaker_options_set_failure_rate_threshold(mulligan_breaker_options* opts,
                                                        double percent) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  if (int rc = Percent("failure_rate_threshold", percent)) return rc;
  opts->impl.failure_rate_threshold = percent;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_options_set_slow_call_rate_threshold(mulligan_breaker_options* opts,
                                                          double percent) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  if (int rc = Percent("slow_call_rate_threshold", percent)) return rc;
  opts->impl.slow_call_rate_threshold = percent;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_options_set_reset_timeout_multiplier(mulligan_breaker_options* opts,
                                                          double multiplier) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  if (!(std::isfinite(multiplier) && multiplier >= 1)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "reset_timeout_multiplier must be a finite number >= 1, got %g", multiplier);
  }
  opts->impl.reset_timeout_multiplier = multiplier;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_options_set_clock(mulligan_breaker_options* opts,
                                       const mulligan_clock* clock) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  opts->clock = clock != nullptr ? static_cast<const mulligan::Clock*>(&clock->impl) : nullptr;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

// ---------------------------------------------------------------------------
// Breakers

int mulligan_breaker_create(mulligan_breaker** out, const mulligan_breaker_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  const mulligan::CircuitBreakerOptions defaults;
  auto created = mulligan::CircuitBreaker::Create(opts != nullptr ? opts->impl : defaults);
  if (!created.ok()) return SetError(created.status());
  *out = new mulligan_breaker{std::shared_ptr<mulligan::CircuitBreaker>(std::move(created).value()),
                              ClockOf(opts)};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_breaker_destroy(mulligan_breaker* breaker) {
  MULLIGAN_CAPI_BEGIN
  delete breaker;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_breaker_acquire(mulligan_breaker* breaker, mulligan_breaker_permit* permit) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  MULLIGAN_CHECK_NOT_NULL(permit);
  if (int rc = CheckStructSize("permit", permit->struct_size, kPermitSizeV0_1,
                               "MULLIGAN_BREAKER_PERMIT_INIT")) {
    return rc;
  }
  // The clock is read only when the engine's answer needs it (no reading for
  // a closed breaker that measures no durations: CircuitBreaker::Acquire(Clock)).
  const mulligan::Admission admission = breaker->impl->Acquire(*breaker->clock);
  PackPermit(admission, breaker->impl.get(), permit);
  if (!admission.admitted()) return Refused(*breaker->impl, admission);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_record(mulligan_breaker* breaker, const mulligan_breaker_permit* permit,
                            int result, double duration_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  MULLIGAN_CHECK_NOT_NULL(permit);
  if (int rc = CheckStructSize("permit", permit->struct_size, kPermitSizeV0_1,
                               "MULLIGAN_BREAKER_PERMIT_INIT")) {
    return rc;
  }
  if (int rc = CheckResult(result)) return rc;
  if (std::isnan(duration_ms) || std::isinf(duration_ms)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "duration_ms must be finite (negative for \"since the acquire\"), got %g",
                    duration_ms);
  }
  if (permit->admitted && permit->opaque_[3] != Identity(breaker->impl.get())) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "permit was issued by another breaker than '%.200s'",
                    breaker->impl->name().c_str());
  }
  const mulligan::Permit p = UnpackPermit(permit);
  const auto r = static_cast<mulligan::CallResult>(result);
  // No clock reading when the engine would not use it (a success of a closed
  // breaker that measures no durations: CircuitBreaker::RecordNeedsTime).
  Duration duration = duration_ms < 0 ? Duration::zero() : DurationFromMillis(duration_ms);
  mulligan::TimePoint now = p.acquired_at;
  if (breaker->impl->RecordNeedsTime(p, r)) {
    now = breaker->clock->Now();
    if (duration_ms < 0 && p.acquired_at != mulligan::CircuitBreaker::kTimeNotRead) {
      duration = now - p.acquired_at;
    }
  }
  breaker->impl->Record(p, r, duration, now);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_execute(mulligan_breaker* breaker, int (*fn)(void* user_data),
                             void* user_data, int* fn_result) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  MULLIGAN_CHECK_NOT_NULL(fn);
  mulligan::CircuitBreaker& b = *breaker->impl;
  const mulligan::Clock& clock = *breaker->clock;
  const mulligan::Admission admission = b.Acquire(clock.Now());
  if (!admission.admitted()) return Refused(b, admission);
  const mulligan::TimePoint start = clock.Now();
  const int rc = fn(user_data);  // C code: cannot throw
  const mulligan::TimePoint end = clock.Now();
  b.Record(admission.permit,
           rc == 0 ? mulligan::CallResult::kSuccess : mulligan::CallResult::kFailure, end - start,
           end);
  if (fn_result != nullptr) *fn_result = rc;
  if (rc != 0) {
    return SetError(MULLIGAN_E_CALLBACK, "the callback of mulligan_breaker_execute returned %d",
                    rc);
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_state_now(const mulligan_breaker* breaker) {
  MULLIGAN_CAPI_BEGIN
  if (breaker == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: breaker must not be NULL", __func__);
    return 0;
  }
  return static_cast<int>(breaker->impl->state(breaker->clock->Now()));
  MULLIGAN_CAPI_END_RETURN(0)
}

double mulligan_breaker_time_until_probe_ms(const mulligan_breaker* breaker) {
  MULLIGAN_CAPI_BEGIN
  if (breaker == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: breaker must not be NULL", __func__);
    return 0.0;
  }
  return DurationToMs(breaker->impl->TimeUntilProbe(breaker->clock->Now()));
  MULLIGAN_CAPI_END_RETURN(0.0)
}

int mulligan_breaker_get_counts(const mulligan_breaker* breaker, mulligan_breaker_counts* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckStructSize("out", out->struct_size, kCountsSizeV0_1,
                               "MULLIGAN_BREAKER_COUNTS_INIT")) {
    return rc;
  }
  const mulligan::BreakerCounts c = breaker->impl->counts(breaker->clock->Now());
  out->calls = c.calls;
  out->successes = c.successes;
  out->failures = c.failures;
  out->ignored = c.ignored;
  out->slow = c.slow;
  out->rejected = c.rejected;
  out->consecutive_failures = c.consecutive_failures;
  out->window_calls = c.window_calls;
  out->window_failure_rate = c.window_failure_rate;
  out->window_slow_rate = c.window_slow_rate;
  if (out->struct_size >= kCountsSizeWithStale) out->stale = c.stale;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

const char* mulligan_breaker_name(const mulligan_breaker* breaker) {
  MULLIGAN_CAPI_BEGIN
  if (breaker == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: breaker must not be NULL", __func__);
    return "";
  }
  return breaker->impl->name().c_str();
  MULLIGAN_CAPI_END_RETURN("")
}

#define MULLIGAN_MANUAL(func, method)                   \
  int func(mulligan_breaker* breaker) {                 \
    MULLIGAN_CAPI_BEGIN                                 \
    MULLIGAN_CHECK_NOT_NULL(breaker);                   \
    breaker->impl->method(breaker->clock->Now());       \
    return MULLIGAN_OK;                                 \
    MULLIGAN_CAPI_END                                   \
  }

MULLIGAN_MANUAL(mulligan_breaker_force_open, ForceOpen)
MULLIGAN_MANUAL(mulligan_breaker_disable, Disable)
MULLIGAN_MANUAL(mulligan_breaker_metrics_only, MetricsOnly)
MULLIGAN_MANUAL(mulligan_breaker_reset, Reset)
#undef MULLIGAN_MANUAL

int mulligan_breaker_add_listener(mulligan_breaker* breaker, mulligan_breaker_listener listener,
                                  void* user_data, void (*free_user_data)(void* user_data),
                                  uint64_t* out_id) {
  MULLIGAN_CAPI_BEGIN
  if (out_id != nullptr) *out_id = 0;
  MULLIGAN_CHECK_NOT_NULL(breaker);
  MULLIGAN_CHECK_NOT_NULL(listener);
  // Until the shared_ptr owns it, a failure must not call free_user_data.
  auto data = std::make_shared<ListenerData>();
  data->fn = listener;
  data->user_data = user_data;
  data->free_user_data = free_user_data;
  const uint64_t id = breaker->impl->AddListener([data](const mulligan::BreakerTransition& t) {
    const std::string name(t.name);  // NUL-terminated for C
    mulligan_breaker_transition transition;
    transition.struct_size = static_cast<uint32_t>(sizeof(transition));
    transition.name = name.c_str();
    transition.from = static_cast<int>(t.from);
    transition.to = static_cast<int>(t.to);
    transition.reason = t.reason;
    transition.at_ms = TimePointToMs(t.at);
    (void)data->fn(&transition, data->user_data);  // reserved return value
  });
  if (out_id != nullptr) *out_id = id;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_remove_listener(mulligan_breaker* breaker, uint64_t id) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  if (!breaker->impl->RemoveListener(id)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "no listener with id %llu",
                    static_cast<unsigned long long>(id));
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_force_open_for_ms(mulligan_breaker* breaker, double duration_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  if (!CheckMs("duration_ms", duration_ms, true)) return MULLIGAN_E_INVALID_ARGUMENT;
  const mulligan::Status status =
      breaker->impl->ForceOpenFor(DurationFromMillis(duration_ms), breaker->clock->Now());
  if (!status.ok()) return SetError(status);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_force_open_until_ms(mulligan_breaker* breaker, double until_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  mulligan::TimePoint until;
  if (!mulligan::capi_internal::TimePointFromMs("until_ms", until_ms, &until)) {
    return MULLIGAN_E_INVALID_ARGUMENT;
  }
  const mulligan::Status status = breaker->impl->ForceOpenUntil(until, breaker->clock->Now());
  if (!status.ok()) return SetError(status);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_half_open(mulligan_breaker* breaker) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  breaker->impl->HalfOpen(breaker->clock->Now());
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

const char* mulligan_breaker_call_kind_str(int kind) {
  MULLIGAN_CAPI_BEGIN
  if (kind < MULLIGAN_BREAKER_CALL_SUCCESS || kind > MULLIGAN_BREAKER_CALL_REJECTED) {
    return "unknown";
  }
  return mulligan::BreakerCallKindName(static_cast<mulligan::BreakerCallKind>(kind));
  MULLIGAN_CAPI_END_RETURN("unknown")
}

int mulligan_breaker_get_last_trip(const mulligan_breaker* breaker, mulligan_breaker_trip* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckStructSize("out", out->struct_size, kTripSizeV0_2,
                               "MULLIGAN_BREAKER_TRIP_INIT")) {
    return rc;
  }
  const std::optional<mulligan::BreakerTrip> trip = breaker->impl->last_trip();
  out->tripped = trip ? 1 : 0;
  out->from = trip ? static_cast<int>(trip->from) : 0;
  out->reason = trip ? trip->reason : "";
  out->at_ms = trip ? TimePointToMs(trip->at) : 0.0;
  out->consecutive_failures = trip ? trip->consecutive_failures : 0;
  out->window_calls = trip ? trip->window_calls : 0;
  out->window_failure_rate = trip ? trip->window_failure_rate : 0.0;
  out->window_slow_rate = trip ? trip->window_slow_rate : 0.0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

const char* mulligan_breaker_reported_name(const mulligan_breaker* breaker) {
  MULLIGAN_CAPI_BEGIN
  if (breaker == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: breaker must not be NULL", __func__);
    return "";
  }
  return breaker->impl->reported_name().c_str();
  MULLIGAN_CAPI_END_RETURN("")
}

int mulligan_breaker_add_call_listener(mulligan_breaker* breaker,
                                       mulligan_breaker_call_listener listener, void* user_data,
                                       void (*free_user_data)(void* user_data),
                                       uint64_t* out_id) {
  MULLIGAN_CAPI_BEGIN
  if (out_id != nullptr) *out_id = 0;
  MULLIGAN_CHECK_NOT_NULL(breaker);
  MULLIGAN_CHECK_NOT_NULL(listener);
  // Until the shared_ptr owns it, a failure must not call free_user_data.
  auto data = std::make_shared<CallListenerData>();
  data->fn = listener;
  data->user_data = user_data;
  data->free_user_data = free_user_data;
  const uint64_t id =
      breaker->impl->AddCallListener([data](const mulligan::BreakerCallEvent& e) {
        const std::string name(e.name);  // NUL-terminated for C
        mulligan_breaker_call_event event;
        event.struct_size = static_cast<uint32_t>(sizeof(event));
        event.name = name.c_str();
        event.kind = static_cast<int>(e.kind);
        event.state = static_cast<int>(e.state);
        event.duration_ms = DurationToMs(e.duration);
        event.stale = e.stale ? 1 : 0;
        event.at_ms = TimePointToMs(e.at);
        (void)data->fn(&event, data->user_data);  // reserved return value
      });
  if (out_id != nullptr) *out_id = id;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_remove_call_listener(mulligan_breaker* breaker, uint64_t id) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(breaker);
  if (!breaker->impl->RemoveCallListener(id)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "no call listener with id %llu",
                    static_cast<unsigned long long>(id));
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

// ---------------------------------------------------------------------------
// Registry

int mulligan_breaker_registry_create(mulligan_breaker_registry** out,
                                     const mulligan_breaker_options* opts, size_t max_breakers) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::BreakerRegistryOptions options;
  if (opts != nullptr) options.breaker = opts->impl;
  if (max_breakers != 0) options.max_breakers = max_breakers;
  auto created = mulligan::BreakerRegistry::Create(options);
  if (!created.ok()) return SetError(created.status());
  *out = new mulligan_breaker_registry{
      std::shared_ptr<mulligan::BreakerRegistry>(std::move(created).value()), ClockOf(opts)};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_breaker_registry_destroy(mulligan_breaker_registry* registry) {
  MULLIGAN_CAPI_BEGIN
  delete registry;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_breaker_registry_get(mulligan_breaker_registry* registry, const char* key,
                                  mulligan_breaker** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(registry);
  MULLIGAN_CHECK_NOT_NULL(key);
  auto got = registry->impl->Get(key);
  if (!got.ok()) return SetError(got.status());
  *out = new mulligan_breaker{std::move(got).value(), registry->clock};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_breaker_registry_foreach(mulligan_breaker_registry* registry,
                                      int (*fn)(mulligan_breaker* breaker, void* user_data),
                                      void* user_data) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(registry);
  MULLIGAN_CHECK_NOT_NULL(fn);
  for (auto& b : registry->impl->Snapshot()) {
    mulligan_breaker handle{b, registry->clock};
    const int rc = fn(&handle, user_data);
    if (rc != 0) {
      return SetError(MULLIGAN_E_CALLBACK,
                      "the callback of mulligan_breaker_registry_foreach returned %d", rc);
    }
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

size_t mulligan_breaker_registry_size(const mulligan_breaker_registry* registry) {
  MULLIGAN_CAPI_BEGIN
  if (registry == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: registry must not be NULL", __func__);
    return 0;
  }
  return registry->impl->size();
  MULLIGAN_CAPI_END_RETURN(0)
}

}  // extern "C"
