// capi/src/capi_breaker.cc — circuit breakers, the breaker registry and
// mulligan_retry_call of the C ABI: thin extern "C" shims over
// mulligan::CircuitBreaker / BreakerRegistry / RetrySession.
//
// The permit crosses the ABI as a caller-owned struct (see mulligan.h for
// why); its opaque_ words carry the core Permit plus the identity of the
// breaker that issued it, so a permit handed to another breaker is rejected
// instead of corrupting its probe slots.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <utility>

#include "capi_internal.h"
#include "mulligan/breaker/registry.h"
#include "mulligan/breaker/circuit_breaker.h"
#include "mulligan/telemetry/metrics.h"

struct mulligan_breaker_options {
  mulligan::CircuitBreakerOptions impl;
  // Borrowed; null means the system steady clock.
  const mulligan::Clock* clock = nullptr;
};

struct mulligan_breaker {
  std::shared_ptr<mulligan::CircuitBreaker> impl;
  // Borrowed; never null.
  const mulligan::Clock* clock;
};

struct mulligan_breaker_registry {
  std::unique_ptr<mulligan::BreakerRegistry> impl;
  const mulligan::Clock* clock;
};

namespace {

using mulligan::Duration;
using mulligan::capi_internal::CheckMs;
using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::MsToDuration;
using mulligan::capi_internal::SetError;

// The first published sizes of the caller-owned structs.
constexpr size_t kPermitSizeV0_1 = sizeof(mulligan_breaker_permit);
constexpr size_t kCountsSizeV0_1 = sizeof(mulligan_breaker_counts);
// metrics_name came later (issue 7): callers compiled before pass the smaller
// size and report no metrics.
constexpr size_t kCallOptionsSizeV0_1 = offsetof(mulligan_retry_call_options, metrics_name);
constexpr size_t kCallOptionsSizeWithMetrics =
    offsetof(mulligan_retry_call_options, metrics_name) + sizeof(const char*);
constexpr size_t kCallInfoSizeV0_1 = sizeof(mulligan_retry_call_info);

const mulligan::Clock* ClockOf(const mulligan_breaker_options* opts) {
  if (opts != nullptr && opts->clock != nullptr) return opts->clock;
  return mulligan::SystemClock::Default();
}

double NowMs(mulligan::TimePoint t) {
  return std::chrono::duration<double, std::milli>(t.time_since_epoch()).count();
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

// Reports a failed attempt of mulligan_retry_call to `metrics`, rebuilding
// the core Outcome and Decision from their (already validated) C forms.
void ReportFailedAttempt(mulligan::Metrics& metrics, const mulligan_outcome& outcome,
                         const mulligan_decision& decision, Duration elapsed) {
  mulligan::Outcome o;
  o.error = static_cast<mulligan::ErrorKind>(outcome.error_kind);
  o.http_status = outcome.http_status;
  if (outcome.retry_after_ms >= 0) o.retry_after = MsToDuration(outcome.retry_after_ms);
  mulligan::Decision d;
  d.action = static_cast<mulligan::Decision::Action>(decision.action);
  d.delay = MsToDuration(decision.delay_ms);
  d.reason = static_cast<mulligan::StopReason>(decision.reason);
  d.classification = static_cast<mulligan::Classification>(decision.classification);
  d.attempt = decision.attempt;
  d.from_retry_after = decision.from_retry_after != 0;
  metrics.AttemptFailed(d.attempt, o, d, elapsed);
}

// Transition listener state: the callback and the caller's user_data, freed
// through free_user_data when the last copy of the listener goes away.
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
    opts->impl.assign = MsToDuration(ms);                                   \
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
  if (permit->struct_size < kPermitSizeV0_1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "permit->struct_size must be at least %zu (use MULLIGAN_BREAKER_PERMIT_INIT), "
                    "got %u",
                    kPermitSizeV0_1, static_cast<unsigned>(permit->struct_size));
  }
  const mulligan::Admission admission = breaker->impl->Acquire(breaker->clock->Now());
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
  if (permit->struct_size < kPermitSizeV0_1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "permit->struct_size must be at least %zu, got %u", kPermitSizeV0_1,
                    static_cast<unsigned>(permit->struct_size));
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
  const mulligan::TimePoint now = breaker->clock->Now();
  const Duration duration = duration_ms < 0 ? now - p.acquired_at : MsToDuration(duration_ms);
  breaker->impl->Record(p, static_cast<mulligan::CallResult>(result), duration, now);
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
  if (out->struct_size < kCountsSizeV0_1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "out->struct_size must be at least %zu (use MULLIGAN_BREAKER_COUNTS_INIT), "
                    "got %u",
                    kCountsSizeV0_1, static_cast<unsigned>(out->struct_size));
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
    transition.at_ms = NowMs(t.at);
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
  *out = new mulligan_breaker_registry{std::move(created).value(), ClockOf(opts)};
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

// ---------------------------------------------------------------------------
// Retry call

int mulligan_retry_call(const mulligan_retry_policy* policy,
                        int (*attempt)(int attempt_number, mulligan_outcome* out,
                                       void* user_data),
                        void* user_data, const mulligan_retry_call_options* opts,
                        mulligan_retry_call_info* info) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(policy);
  MULLIGAN_CHECK_NOT_NULL(attempt);
  if (opts != nullptr && opts->struct_size < kCallOptionsSizeV0_1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "opts->struct_size must be at least %zu (use "
                    "MULLIGAN_RETRY_CALL_OPTIONS_INIT), got %u",
                    kCallOptionsSizeV0_1, static_cast<unsigned>(opts->struct_size));
  }
  if (info != nullptr && info->struct_size < kCallInfoSizeV0_1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "info->struct_size must be at least %zu (use MULLIGAN_RETRY_CALL_INFO_INIT), "
                    "got %u",
                    kCallInfoSizeV0_1, static_cast<unsigned>(info->struct_size));
  }
  mulligan::Clock* clock = mulligan::SystemClock::Default();
  if (opts != nullptr && opts->clock != nullptr) clock = &opts->clock->impl;
  mulligan_breaker* const breaker = opts != nullptr ? opts->breaker : nullptr;
  const bool each_attempt = opts != nullptr && opts->breaker_record_each_attempt != 0;
  mulligan::Metrics* metrics = nullptr;
  if (opts != nullptr && opts->struct_size >= kCallOptionsSizeWithMetrics &&
      opts->metrics_name != nullptr) {
    if (opts->metrics_name[0] == '\0') {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "opts->metrics_name must not be empty (NULL reports no metrics)");
    }
    metrics = mulligan::MetricsRegistry::Default().Get(opts->metrics_name);
  }

  mulligan_retry_session session{policy->impl.Begin(clock->Now()), clock};
  if (metrics != nullptr) metrics->CallStarted();
  mulligan_retry_call_info result = MULLIGAN_RETRY_CALL_INFO_INIT;
  Duration total_delay = Duration::zero();
  // Ends the call: fills `info` and reports the result to the metrics (as
  // the core's RetryCall does: a refusal, an abort or an invalid outcome
  // ends the call as a terminal failure).
  auto finish = [&](int rc) {
    result.attempts = session.impl.attempts();
    result.total_delay_ms = DurationToMs(total_delay);
    const Duration elapsed = clock->Now() - session.impl.start();
    result.elapsed_ms = DurationToMs(elapsed);
    if (metrics != nullptr) {
      if (rc == MULLIGAN_OK) {
        metrics->CallSucceeded(result.attempts, elapsed);
      } else {
        const auto reason = result.stop_reason != MULLIGAN_STOP_NONE
                                ? static_cast<mulligan::StopReason>(result.stop_reason)
                                : mulligan::StopReason::kTerminal;
        metrics->CallFailed(result.attempts, elapsed, reason);
      }
    }
    if (info != nullptr) {
      // Copy only what the caller's struct holds (it only grows at the end).
      const uint32_t size = info->struct_size;
      result.struct_size = info->struct_size;
      std::memcpy(info, &result, std::min<size_t>(size, sizeof(result)));
    }
    return rc;
  };

  for (;;) {
    const int number = session.impl.attempts() + 1;
    mulligan::Permit permit;
    mulligan::TimePoint attempt_start = clock->Now();
    if (breaker != nullptr) {
      const mulligan::Admission admission = breaker->impl->Acquire(attempt_start);
      if (!admission.admitted()) {
        result.circuit_open = 1;
        result.retry_in_ms = DurationToMs(admission.retry_in);
        Refused(*breaker->impl, admission);
        return finish(MULLIGAN_E_CIRCUIT_OPEN);
      }
      permit = admission.permit;
    }

    if (metrics != nullptr) metrics->AttemptStarted(number);
    mulligan_outcome outcome = MULLIGAN_OUTCOME_INIT;
    const int rc = attempt(number, &outcome, user_data);
    if (rc != 0) {
      if (breaker != nullptr) {
        const mulligan::TimePoint end = clock->Now();
        breaker->impl->Record(permit, mulligan::CallResult::kIgnored, end - attempt_start, end);
      }
      SetError(MULLIGAN_E_CALLBACK, "the attempt callback returned %d (attempt %d)", rc, number);
      return finish(MULLIGAN_E_CALLBACK);
    }
    mulligan_decision decision = MULLIGAN_DECISION_INIT;
    const int status = mulligan_retry_session_on_outcome(&session, &outcome, &decision);
    if (status != MULLIGAN_OK) {
      if (breaker != nullptr) {
        const mulligan::TimePoint end = clock->Now();
        breaker->impl->Record(permit, mulligan::CallResult::kIgnored, end - attempt_start, end);
      }
      return finish(status);  // the last error names the bad outcome field
    }
    if (metrics != nullptr && decision.classification != MULLIGAN_CLASSIFICATION_SUCCESS) {
      ReportFailedAttempt(*metrics, outcome, decision, clock->Now() - session.impl.start());
    }
    // The recording rule of RetryCallOptions::breaker (core/include/mulligan/retry/call.h).
    const bool stop = decision.action == MULLIGAN_ACTION_STOP;
    if (breaker != nullptr && (each_attempt || permit.probe || stop)) {
      const mulligan::TimePoint end = clock->Now();
      breaker->impl->Record(
          permit,
          mulligan::ResultFor(static_cast<mulligan::Classification>(decision.classification)),
          end - attempt_start, end);
    }
    if (stop) {
      result.stop_reason = decision.reason;
      result.last_decision = decision;
      switch (decision.reason) {
        case MULLIGAN_STOP_SUCCEEDED:
          return finish(MULLIGAN_OK);
        case MULLIGAN_STOP_TERMINAL:
          SetError(MULLIGAN_E_UNAVAILABLE, "attempt %d failed with a terminal outcome", number);
          return finish(MULLIGAN_E_UNAVAILABLE);
        case MULLIGAN_STOP_DEADLINE:
          SetError(MULLIGAN_E_DEADLINE_EXCEEDED, "the deadline ended the retries after %d "
                   "attempt(s)", number);
          return finish(MULLIGAN_E_DEADLINE_EXCEEDED);
        default:
          SetError(MULLIGAN_E_RETRIES_EXHAUSTED, "gave up after %d attempt(s): %s", number,
                   mulligan::StopReasonName(static_cast<mulligan::StopReason>(decision.reason)));
          return finish(MULLIGAN_E_RETRIES_EXHAUSTED);
      }
    }
    const Duration delay = MsToDuration(decision.delay_ms);
    total_delay += delay;
    clock->SleepFor(delay);
    if (metrics != nullptr) metrics->RetryWaitEnded();
  }
  MULLIGAN_CAPI_END
}

}  // extern "C"
