// capi/src/adaptive_rate.cc — the C ABI of the adaptive client rate
// (mulligan_adaptive_rate.h): thin shims over
// core/include/mulligan/limits/adaptive_rate.h. (Added in 0.4.)

#include <memory>
#include <optional>
#include <string>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan/limits/adaptive_rate.h"
#include "mulligan_adaptive_rate.h"

struct mulligan_adaptive_rate {
  std::shared_ptr<mulligan::AdaptiveRate> impl;
};

namespace {

using mulligan::capi_internal::SetError;

int OptionalMs(const char* name, double ms, std::optional<mulligan::Duration>* out) {
  if (ms < 0) {
    *out = std::nullopt;
    return MULLIGAN_OK;
  }
  if (!mulligan::capi_internal::CheckMs(name, ms, false)) return MULLIGAN_E_INVALID_ARGUMENT;
  *out = mulligan::internal::DurationFromMillis(ms);
  return MULLIGAN_OK;
}

}  // namespace

extern "C" {

int mulligan_adaptive_rate_create(mulligan_adaptive_rate** out, const char* name, double now_ms,
                                  double beta, double scale_constant, double max_wait_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::TimePoint now;
  if (!mulligan::capi_internal::TimePointFromMs("now_ms", now_ms, &now)) {
    return MULLIGAN_E_INVALID_ARGUMENT;
  }
  mulligan::AdaptiveRateOptions options;
  options.name = name != nullptr ? name : "";
  options.beta = beta;
  options.scale_constant = scale_constant;
  if (int rc = OptionalMs("max_wait_ms", max_wait_ms, &options.max_wait)) return rc;
  auto created = mulligan::AdaptiveRate::Create(options, now);
  if (!created.ok()) return SetError(created.status());
  *out = new mulligan_adaptive_rate{std::move(created).value()};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_adaptive_rate_destroy(mulligan_adaptive_rate* rate) {
  MULLIGAN_CAPI_BEGIN
  delete rate;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_adaptive_rate_acquire(mulligan_adaptive_rate* rate, double now_ms,
                                   double max_wait_ms, double* wait_ms, double* retry_in_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(rate);
  if (wait_ms != nullptr) *wait_ms = 0;
  if (retry_in_ms != nullptr) *retry_in_ms = 0;
  mulligan::TimePoint now;
  if (!mulligan::capi_internal::TimePointFromMs("now_ms", now_ms, &now)) {
    return MULLIGAN_E_INVALID_ARGUMENT;
  }
  std::optional<mulligan::Duration> bound;
  if (int rc = OptionalMs("max_wait_ms", max_wait_ms, &bound)) return rc;
  const mulligan::RateDecision d = bound ? rate->impl->Acquire(now, *bound) : rate->impl->Acquire(now);
  if (!d.admitted) {
    if (retry_in_ms != nullptr) *retry_in_ms = mulligan::capi_internal::DurationToMs(d.retry_in);
    return SetError(rate->impl->LimitedStatus(d.retry_in));
  }
  if (wait_ms != nullptr) *wait_ms = mulligan::capi_internal::DurationToMs(d.wait);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_adaptive_rate_record(mulligan_adaptive_rate* rate, int throttled, double now_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(rate);
  mulligan::TimePoint now;
  if (!mulligan::capi_internal::TimePointFromMs("now_ms", now_ms, &now)) {
    return MULLIGAN_E_INVALID_ARGUMENT;
  }
  rate->impl->Record(throttled != 0, now);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

double mulligan_adaptive_rate_get(const mulligan_adaptive_rate* rate,
                                  mulligan_adaptive_field field, double now_ms) {
  if (rate == nullptr) return 0;
  mulligan::TimePoint now;
  if (!mulligan::capi_internal::TimePointFromMs("now_ms", now_ms, &now)) return 0;
  const mulligan::AdaptiveRateState s = rate->impl->State(now);
  switch (field) {
    case MULLIGAN_ADAPTIVE_ENABLED: return s.enabled ? 1.0 : 0.0;
    case MULLIGAN_ADAPTIVE_FILL_RATE: return s.fill_rate;
    case MULLIGAN_ADAPTIVE_MAX_CAPACITY: return s.max_capacity;
    case MULLIGAN_ADAPTIVE_CAPACITY: return s.capacity;
    case MULLIGAN_ADAPTIVE_MEASURED_RATE: return s.measured_rate;
    case MULLIGAN_ADAPTIVE_LAST_MAX_RATE: return s.last_max_rate;
    case MULLIGAN_ADAPTIVE_TIME_WINDOW: return s.time_window;
    case MULLIGAN_ADAPTIVE_CALCULATED_RATE: return s.calculated_rate;
  }
  return 0;
}

int mulligan_pipeline_options_set_adaptive_rate(mulligan_pipeline_options* opts,
                                                const mulligan_adaptive_rate* rate) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.adaptive_rate = rate != nullptr ? rate->impl : nullptr;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

}  // extern "C"
