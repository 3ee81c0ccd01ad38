// capi/src/wait.cc — composed waits and stop options of the C ABI
// (mulligan_wait.h): thin extern "C" shims over mulligan::WaitExpr
// (core/include/mulligan/retry/wait.h) and RetryOptions::stop.
//
// Each constructor checks its own numbers (so the error names the call);
// mulligan_retry_policy_create validates the whole expression again through
// RetryPolicy::Create.

#include <cstddef>
#include <optional>
#include <utility>
#include <vector>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan/retry/stop.h"
#include "mulligan/retry/wait.h"
#include "mulligan_wait.h"

struct mulligan_wait {
  mulligan::WaitExpr impl;
};

namespace {

using mulligan::Duration;
using mulligan::WaitExpr;
using mulligan::capi_internal::CheckMs;
using mulligan::capi_internal::SetError;
using mulligan::internal::DurationFromMillis;

constexpr size_t kMaxTerms = 64;

static_assert(static_cast<int>(mulligan::RetryKind::kConnect) == MULLIGAN_RETRY_KIND_CONNECT &&
                  static_cast<int>(mulligan::RetryKind::kRead) == MULLIGAN_RETRY_KIND_READ &&
                  static_cast<int>(mulligan::RetryKind::kStatus) == MULLIGAN_RETRY_KIND_STATUS &&
                  static_cast<int>(mulligan::RetryKind::kOther) == MULLIGAN_RETRY_KIND_OTHER,
              "mulligan_retry_kind equals mulligan::RetryKind");

int Emit(mulligan_wait** out, WaitExpr wait) {
  *out = new mulligan_wait{std::move(wait)};
  return MULLIGAN_OK;
}

// max_ms < 0 (MULLIGAN_WAIT_NO_MAX) is "no cap"; NaN and inf are refused.
bool OptionalMax(const char* name, double max_ms, std::optional<Duration>* max) {
  if (max_ms < 0) return true;
  if (!CheckMs(name, max_ms, false)) return false;
  *max = DurationFromMillis(max_ms);
  return true;
}

int Terms(const char* name, const mulligan_wait* const* waits, size_t count,
          std::vector<WaitExpr>* terms) {
  if (count == 0 || count > kMaxTerms) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: count must be in [1, 64], got %zu", name,
                    count);
  }
  if (waits == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: waits must not be NULL", name);
  }
  for (size_t i = 0; i < count; ++i) {
    if (waits[i] == nullptr) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: waits[%zu] must not be NULL", name, i);
    }
    terms->push_back(waits[i]->impl);
  }
  return MULLIGAN_OK;
}

}  // namespace

extern "C" {

int mulligan_wait_constant(mulligan_wait** out, double delay_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  if (!CheckMs("delay_ms", delay_ms, false)) return MULLIGAN_E_INVALID_ARGUMENT;
  return Emit(out, WaitExpr::Constant(DurationFromMillis(delay_ms)));
  MULLIGAN_CAPI_END
}

int mulligan_wait_linear(mulligan_wait** out, double start_ms, double increment_ms,
                         double max_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  std::optional<Duration> max;
  if (!CheckMs("start_ms", start_ms, false) || !CheckMs("increment_ms", increment_ms, false) ||
      !OptionalMax("max_ms", max_ms, &max)) {
    return MULLIGAN_E_INVALID_ARGUMENT;
  }
  return Emit(out, WaitExpr::Linear(DurationFromMillis(start_ms), DurationFromMillis(increment_ms),
                                    max));
  MULLIGAN_CAPI_END
}

int mulligan_wait_exponential(mulligan_wait** out, double base_ms, double multiplier,
                              double max_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  std::optional<Duration> max;
  if (!CheckMs("base_ms", base_ms, false) || !OptionalMax("max_ms", max_ms, &max)) {
    return MULLIGAN_E_INVALID_ARGUMENT;
  }
  if (!(multiplier >= 0 && multiplier <= 1.7976931348623157e308)) {  // also NaN, inf
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "multiplier must be a finite number >= 0, got %.17g", multiplier);
  }
  return Emit(out, WaitExpr::Exponential(DurationFromMillis(base_ms), multiplier, max));
  MULLIGAN_CAPI_END
}

int mulligan_wait_uniform(mulligan_wait** out, double low_ms, double high_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  if (!CheckMs("low_ms", low_ms, false) || !CheckMs("high_ms", high_ms, false)) {
    return MULLIGAN_E_INVALID_ARGUMENT;
  }
  if (high_ms < low_ms) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "high_ms must be >= low_ms, got %g < %g",
                    high_ms, low_ms);
  }
  return Emit(out, WaitExpr::Uniform(DurationFromMillis(low_ms), DurationFromMillis(high_ms)));
  MULLIGAN_CAPI_END
}

int mulligan_wait_jitter(mulligan_wait** out, double max_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  if (!CheckMs("max_ms", max_ms, false)) return MULLIGAN_E_INVALID_ARGUMENT;
  return Emit(out, WaitExpr::Jitter(DurationFromMillis(max_ms)));
  MULLIGAN_CAPI_END
}

int mulligan_wait_sum(mulligan_wait** out, const mulligan_wait* const* waits, size_t count) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  std::vector<WaitExpr> terms;
  if (int rc = Terms("mulligan_wait_sum", waits, count, &terms)) return rc;
  return Emit(out, WaitExpr::Sum(std::move(terms)));
  MULLIGAN_CAPI_END
}

int mulligan_wait_chain(mulligan_wait** out, const mulligan_wait* const* waits, size_t count) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  std::vector<WaitExpr> terms;
  if (int rc = Terms("mulligan_wait_chain", waits, count, &terms)) return rc;
  return Emit(out, WaitExpr::Chain(std::move(terms)));
  MULLIGAN_CAPI_END
}

void mulligan_wait_destroy(mulligan_wait* wait) { delete wait; }

int mulligan_retry_options_set_wait(mulligan_retry_options* opts, const mulligan_wait* wait) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (wait == nullptr) {
    opts->impl.backoff.wait.reset();
  } else {
    opts->impl.backoff.wait = wait->impl;
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_min_delay_ms(mulligan_retry_options* opts, double min_delay_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!CheckMs("min_delay_ms", min_delay_ms, false)) return MULLIGAN_E_INVALID_ARGUMENT;
  opts->impl.backoff.min_delay = DurationFromMillis(min_delay_ms);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_unlimited_attempts(mulligan_retry_options* opts, int unlimited) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (unlimited) {
    opts->impl.stop = mulligan::StopExpr::Never();
  } else {
    opts->impl.stop.reset();
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_kind_retries(mulligan_retry_options* opts, int kind,
                                            int max_retries) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (kind < MULLIGAN_RETRY_KIND_CONNECT || kind > MULLIGAN_RETRY_KIND_OTHER) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "kind must be a mulligan_retry_kind value (0..3), got %d", kind);
  }
  std::optional<int>& slot = opts->impl.max_kind_retries[kind];
  if (max_retries < 0) {
    slot.reset();
  } else {
    slot = max_retries;
  }
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

}  // extern "C"
