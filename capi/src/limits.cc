// capi/src/limits.cc — the C ABI of bulkheads and rate limiters
// (mulligan_limits.h): thin shims over core/include/mulligan/limits/.
// (Added in 0.3.)

#include <memory>
#include <optional>
#include <string>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan/limits/bulkhead.h"
#include "mulligan/limits/rate_limiter.h"
#include "mulligan_limits.h"

struct mulligan_bulkhead {
  std::shared_ptr<mulligan::Bulkhead> impl;
};

namespace {

using mulligan::capi_internal::SetError;

// max_ms < 0: no bound (nullopt); otherwise a finite ms count.
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

namespace mulligan {
namespace capi_internal {

int RateLimiterOptionsFromC(const char* name, double rate, double burst, double max_wait_ms,
                            int penalize_retry_after, RateLimiterOptions* out) {
  out->name = name != nullptr ? name : "";
  out->rate = rate;
  out->burst = burst;
  out->penalize_retry_after = penalize_retry_after != 0;
  return OptionalMs("max_wait_ms", max_wait_ms, &out->max_wait);
}

}  // namespace capi_internal
}  // namespace mulligan

extern "C" {

int mulligan_bulkhead_create(mulligan_bulkhead** out, const char* name, int max_concurrent,
                             int max_queue, double max_wait_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::BulkheadOptions options;
  options.name = name != nullptr ? name : "";
  options.max_concurrent = max_concurrent;
  options.max_queue = max_queue;
  if (int rc = OptionalMs("max_wait_ms", max_wait_ms, &options.max_wait)) return rc;
  auto created = mulligan::Bulkhead::Create(options);
  if (!created.ok()) return SetError(created.status());
  *out = new mulligan_bulkhead{std::move(created).value()};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_bulkhead_destroy(mulligan_bulkhead* bulkhead) {
  MULLIGAN_CAPI_BEGIN
  delete bulkhead;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_bulkhead_try_acquire(mulligan_bulkhead* bulkhead) {
  if (bulkhead == nullptr) return 0;
  return bulkhead->impl->TryAcquire() ? 1 : 0;
}

void mulligan_bulkhead_release(mulligan_bulkhead* bulkhead) {
  if (bulkhead != nullptr) bulkhead->impl->Release();
}

int mulligan_bulkhead_in_flight(const mulligan_bulkhead* bulkhead) {
  return bulkhead != nullptr ? bulkhead->impl->in_flight() : 0;
}

int mulligan_bulkhead_queued(const mulligan_bulkhead* bulkhead) {
  return bulkhead != nullptr ? bulkhead->impl->queued() : 0;
}

int mulligan_rate_limiter_create(mulligan_rate_limiter** out, const char* name, double rate,
                                 double burst, double max_wait_ms, int penalize_retry_after) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::RateLimiterOptions options;
  if (int rc = mulligan::capi_internal::RateLimiterOptionsFromC(name, rate, burst, max_wait_ms,
                                                                penalize_retry_after, &options)) {
    return rc;
  }
  auto created = mulligan::RateLimiter::Create(options);
  if (!created.ok()) return SetError(created.status());
  *out = new mulligan_rate_limiter{std::move(created).value()};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_rate_limiter_destroy(mulligan_rate_limiter* limiter) {
  MULLIGAN_CAPI_BEGIN
  delete limiter;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_rate_limiter_acquire(mulligan_rate_limiter* limiter, const char* key, double now_ms,
                                  double max_wait_ms, double* wait_ms, double* retry_in_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(limiter);
  if (wait_ms != nullptr) *wait_ms = 0;
  if (retry_in_ms != nullptr) *retry_in_ms = 0;
  mulligan::TimePoint now;
  if (!mulligan::capi_internal::TimePointFromMs("now_ms", now_ms, &now)) {
    return MULLIGAN_E_INVALID_ARGUMENT;
  }
  std::optional<mulligan::Duration> bound;
  if (int rc = OptionalMs("max_wait_ms", max_wait_ms, &bound)) return rc;
  const mulligan::RateDecision d =
      bound ? limiter->impl->Acquire(key != nullptr ? key : "", now, *bound)
            : limiter->impl->Acquire(key != nullptr ? key : "", now);
  if (!d.admitted) {
    if (retry_in_ms != nullptr) *retry_in_ms = mulligan::capi_internal::DurationToMs(d.retry_in);
    return SetError(limiter->impl->LimitedStatus(d.retry_in));
  }
  if (wait_ms != nullptr) *wait_ms = mulligan::capi_internal::DurationToMs(d.wait);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_pipeline_options_set_bulkhead(mulligan_pipeline_options* opts,
                                           const mulligan_bulkhead* bulkhead, int per_attempt) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.bulkhead = bulkhead != nullptr ? bulkhead->impl : nullptr;
  opts->impl.bulkhead_per_attempt = per_attempt != 0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_pipeline_options_set_rate_limiter(mulligan_pipeline_options* opts,
                                               const mulligan_rate_limiter* limiter,
                                               int per_attempt) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.rate_limiter = limiter != nullptr ? limiter->impl : nullptr;
  opts->impl.rate_limit_per_attempt = per_attempt != 0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_call_wait(mulligan_call* call, double max_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(call);
  const mulligan::AttemptAdmission& admission = call->impl.last_admission();
  if (!admission.wait() || !admission.ticket) return MULLIGAN_OK;
  const mulligan::Duration bound =
      max_ms >= 0 && max_ms == max_ms ? mulligan::internal::DurationFromMillis(max_ms)
                                      : mulligan::Duration::max();
  (void)admission.ticket->WaitFor(std::min(bound, admission.delay));
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

}  // extern "C"
