// capi/src/budget.cc — the C ABI of retry budgets and adaptive throttling
// (mulligan_budget.h): thin shims over core/include/mulligan/budget/.
// (Added in 0.4.)

#include <cmath>
#include <cstddef>
#include <memory>
#include <string>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan/budget/budget.h"
#include "mulligan/budget/throttle.h"
#include "mulligan_budget.h"

struct mulligan_budget {
  std::shared_ptr<mulligan::RetryBudget> impl;
};

struct mulligan_throttle {
  std::shared_ptr<mulligan::AdaptiveThrottle> impl;
};

namespace {

using mulligan::capi_internal::SetError;

// The sizes of the options structs as first published (0.4).
constexpr size_t kBudgetOptionsSizeV0_4 =
    offsetof(mulligan_budget_options, min_retries_per_second) + sizeof(double);
constexpr size_t kThrottleOptionsSizeV0_4 =
    offsetof(mulligan_throttle_options, seed) + sizeof(uint64_t);

// Converts the C options; the core validates every value (naming the field).
int BudgetOptionsFromC(const char* name, const mulligan_budget_options* in,
                       const mulligan_clock* clock, mulligan::BudgetOptions* out) {
  out->name = name != nullptr ? name : "";
  out->clock = const_cast<mulligan::Clock*>(mulligan::capi_internal::ClockOf(clock));
  if (in == nullptr) return MULLIGAN_OK;
  if (int rc = mulligan::capi_internal::CheckStructSize(
          "opts", in->struct_size, kBudgetOptionsSizeV0_4, "MULLIGAN_BUDGET_OPTIONS_INIT")) {
    return rc;
  }
  if (in->kind < MULLIGAN_BUDGET_TOKEN_BUCKET || in->kind > MULLIGAN_BUDGET_RATIO) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "opts->kind must be a mulligan_budget_kind (0, 1 or 2), got %d", in->kind);
  }
  out->kind = static_cast<mulligan::BudgetKind>(in->kind);
  out->token_bucket.max_tokens = in->max_tokens;
  out->token_bucket.token_ratio = in->token_ratio;
  out->quota.capacity = in->capacity;
  out->quota.retry_cost = in->retry_cost;
  out->quota.timeout_cost = in->timeout_cost;
  out->quota.throttling_cost = in->throttling_cost;
  out->quota.no_retry_increment = in->no_retry_increment;
  // Only a ratio budget reads ttl_ms: another kind keeps the default when
  // the caller left it out of range (a zeroed struct).
  const bool ttl_ok = std::isfinite(in->ttl_ms) && in->ttl_ms >= 1000.0 && in->ttl_ms <= 60000.0;
  if (!ttl_ok && in->kind == MULLIGAN_BUDGET_RATIO) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "opts->ttl_ms (ratio.ttl) must be in [1000, 60000] ms, got %g", in->ttl_ms);
  }
  if (ttl_ok) out->ratio.ttl = mulligan::internal::DurationFromMillis(in->ttl_ms);
  out->ratio.percent = in->percent;
  out->ratio.min_retries_per_second = in->min_retries_per_second;
  return MULLIGAN_OK;
}

int ThrottleOptionsFromC(const char* name, const mulligan_throttle_options* in,
                         mulligan::ThrottleOptions* out) {
  out->name = name != nullptr ? name : "";
  if (in == nullptr) return MULLIGAN_OK;
  if (int rc = mulligan::capi_internal::CheckStructSize(
          "opts", in->struct_size, kThrottleOptionsSizeV0_4, "MULLIGAN_THROTTLE_OPTIONS_INIT")) {
    return rc;
  }
  if (!(std::isfinite(in->window_ms) && in->window_ms >= 1.0)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "opts->window_ms must be a finite number >= 1 ms, got %g", in->window_ms);
  }
  out->window = mulligan::internal::DurationFromMillis(in->window_ms);
  out->k = in->k;
  if (in->has_seed != 0) out->seed = in->seed;
  return MULLIGAN_OK;
}

int FailureKind(int kind, mulligan::BudgetFailure* out) {
  if (kind < MULLIGAN_BUDGET_FAILURE_OTHER || kind > MULLIGAN_BUDGET_FAILURE_THROTTLING) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "kind must be a mulligan_budget_failure (0, 1 or 2), got %d", kind);
  }
  *out = static_cast<mulligan::BudgetFailure>(kind);
  return MULLIGAN_OK;
}

int Now(double now_ms, mulligan::TimePoint* out) {
  return mulligan::capi_internal::TimePointFromMs("now_ms", now_ms, out)
             ? MULLIGAN_OK
             : MULLIGAN_E_INVALID_ARGUMENT;
}

int MakeBudget(mulligan_budget** out, const char* name, const mulligan_budget_options* opts,
               const mulligan_clock* clock, bool shared) {
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::BudgetOptions options;
  if (int rc = BudgetOptionsFromC(name, opts, clock, &options)) return rc;
  if (shared && options.name.empty()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "mulligan_budget_shared: name must not be empty");
  }
  auto made = shared ? mulligan::RetryBudget::Shared(options) : mulligan::RetryBudget::Create(options);
  if (!made.ok()) return SetError(made.status());
  *out = new mulligan_budget{std::move(made).value()};
  return MULLIGAN_OK;
}

int MakeThrottle(mulligan_throttle** out, const char* name, const mulligan_throttle_options* opts,
                 bool shared) {
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::ThrottleOptions options;
  if (int rc = ThrottleOptionsFromC(name, opts, &options)) return rc;
  if (shared && options.name.empty()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "mulligan_throttle_shared: name must not be empty");
  }
  auto made = shared ? mulligan::AdaptiveThrottle::Shared(options)
                     : mulligan::AdaptiveThrottle::Create(options);
  if (!made.ok()) return SetError(made.status());
  *out = new mulligan_throttle{std::move(made).value()};
  return MULLIGAN_OK;
}

}  // namespace

extern "C" {

int mulligan_budget_create(mulligan_budget** out, const char* name,
                           const mulligan_budget_options* opts, const mulligan_clock* clock) {
  MULLIGAN_CAPI_BEGIN
  return MakeBudget(out, name, opts, clock, false);
  MULLIGAN_CAPI_END
}

int mulligan_budget_shared(mulligan_budget** out, const char* name,
                           const mulligan_budget_options* opts, const mulligan_clock* clock) {
  MULLIGAN_CAPI_BEGIN
  return MakeBudget(out, name, opts, clock, true);
  MULLIGAN_CAPI_END
}

void mulligan_budget_destroy(mulligan_budget* budget) {
  MULLIGAN_CAPI_BEGIN
  delete budget;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_budget_on_call_started(mulligan_budget* budget, double now_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(budget);
  mulligan::TimePoint now;
  if (int rc = Now(now_ms, &now)) return rc;
  budget->impl->OnCallStarted(now);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_budget_add_successes(mulligan_budget* budget, uint64_t n) {
  MULLIGAN_CHECK_NOT_NULL(budget);
  budget->impl->AddSuccesses(n);
  return MULLIGAN_OK;
}

int mulligan_budget_on_retried_success(mulligan_budget* budget, int64_t cost) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(budget);
  if (cost < 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "cost must be >= 0, got %lld",
                    static_cast<long long>(cost));
  }
  budget->impl->OnRetriedSuccess(cost);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_budget_on_failure(mulligan_budget* budget, int kind, double now_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(budget);
  mulligan::BudgetFailure failure = mulligan::BudgetFailure::kOther;
  if (int rc = FailureKind(kind, &failure)) return rc;
  mulligan::TimePoint now;
  if (int rc = Now(now_ms, &now)) return rc;
  budget->impl->OnFailure(failure, now);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_budget_try_retry(mulligan_budget* budget, int kind, double now_ms, int64_t* cost) {
  MULLIGAN_CAPI_BEGIN
  if (cost != nullptr) *cost = -1;
  MULLIGAN_CHECK_NOT_NULL(budget);
  mulligan::BudgetFailure failure = mulligan::BudgetFailure::kOther;
  if (int rc = FailureKind(kind, &failure)) return rc;
  mulligan::TimePoint now;
  if (int rc = Now(now_ms, &now)) return rc;
  const int64_t taken = budget->impl->TryRetry(failure, now);
  if (cost != nullptr) *cost = taken;
  if (taken < 0) {
    return SetError(MULLIGAN_E_BUDGET_EXHAUSTED, "retry budget '%s' (%s) refused the retry",
                    budget->impl->name().c_str(), mulligan::BudgetKindName(budget->impl->kind()));
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_budget_tokens(mulligan_budget* budget, double now_ms, double* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(budget);
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = 0;
  mulligan::TimePoint now;
  if (int rc = Now(now_ms, &now)) return rc;
  *out = budget->impl->Tokens(now);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

uint64_t mulligan_budget_refused(const mulligan_budget* budget) {
  return budget != nullptr ? budget->impl->refused() : 0;
}

uint64_t mulligan_budget_allowed(const mulligan_budget* budget) {
  return budget != nullptr ? budget->impl->allowed() : 0;
}

int mulligan_budget_kind_of(const mulligan_budget* budget) {
  return budget != nullptr ? static_cast<int>(budget->impl->kind()) : -1;
}

int mulligan_throttle_create(mulligan_throttle** out, const char* name,
                             const mulligan_throttle_options* opts) {
  MULLIGAN_CAPI_BEGIN
  return MakeThrottle(out, name, opts, false);
  MULLIGAN_CAPI_END
}

int mulligan_throttle_shared(mulligan_throttle** out, const char* name,
                             const mulligan_throttle_options* opts) {
  MULLIGAN_CAPI_BEGIN
  return MakeThrottle(out, name, opts, true);
  MULLIGAN_CAPI_END
}

void mulligan_throttle_destroy(mulligan_throttle* throttle) {
  MULLIGAN_CAPI_BEGIN
  delete throttle;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_throttle_admit(mulligan_throttle* throttle, double now_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(throttle);
  mulligan::TimePoint now;
  if (int rc = Now(now_ms, &now)) return rc;
  if (throttle->impl->Admit(now)) return MULLIGAN_OK;
  return SetError(MULLIGAN_E_THROTTLED, "adaptive throttling '%s' rejected the request locally",
                  throttle->impl->name().c_str());
  MULLIGAN_CAPI_END
}

int mulligan_throttle_record(mulligan_throttle* throttle, const mulligan_outcome* outcome) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(throttle);
  mulligan::Outcome o;
  if (int rc = mulligan::capi_internal::OutcomeFromC(outcome, &o)) return rc;
  throttle->impl->Record(o);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_throttle_add_accepts(mulligan_throttle* throttle, uint64_t n) {
  MULLIGAN_CHECK_NOT_NULL(throttle);
  throttle->impl->AddAccepts(n);
  return MULLIGAN_OK;
}

int mulligan_throttle_probability(mulligan_throttle* throttle, double now_ms, double* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(throttle);
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = 0;
  mulligan::TimePoint now;
  if (int rc = Now(now_ms, &now)) return rc;
  *out = throttle->impl->Probability(now);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_throttle_counts(mulligan_throttle* throttle, double now_ms, int64_t* requests,
                             int64_t* accepts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(throttle);
  mulligan::TimePoint now;
  if (int rc = Now(now_ms, &now)) return rc;
  if (accepts != nullptr) *accepts = throttle->impl->Accepts(now);
  if (requests != nullptr) *requests = throttle->impl->Requests(now);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

uint64_t mulligan_throttle_rejected(const mulligan_throttle* throttle) {
  return throttle != nullptr ? throttle->impl->rejected() : 0;
}

int mulligan_pipeline_options_set_budget(mulligan_pipeline_options* opts,
                                         const mulligan_budget* budget) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.budget = budget != nullptr ? budget->impl : nullptr;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_pipeline_options_set_throttle(mulligan_pipeline_options* opts,
                                           const mulligan_throttle* throttle) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.throttle = throttle != nullptr ? throttle->impl : nullptr;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

}  // extern "C"
