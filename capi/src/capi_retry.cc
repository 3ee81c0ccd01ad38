// capi/src/capi_retry.cc — retry options, policies, clocks, sessions and the
// Retry-After parser of the C ABI: thin extern "C" shims over
// mulligan::RetryPolicy / RetrySession / FakeClock / ParseRetryAfter.
//
// Setters validate their single value at once (so the error names the call
// that was wrong); mulligan_retry_policy_create validates the whole set again
// through RetryPolicy::Create.

#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "capi_internal.h"
#include "mulligan/retry/retry_after.h"

namespace {

using mulligan::Duration;
using mulligan::capi_internal::CheckMs;
using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::MsToDuration;
using mulligan::capi_internal::SetError;

// The sizes of the public structs as shipped in 0.1: callers compiled against
// 0.1 headers must keep working when the structs grow at the end.
constexpr size_t kOutcomeSizeV0_1 = offsetof(mulligan_outcome, request_sent) + sizeof(int);
constexpr size_t kDecisionSizeV0_1 =
    offsetof(mulligan_decision, from_retry_after) + sizeof(int);

// Shared body of the duration setters.
int SetMs(mulligan_retry_options* opts, const char* func, const char* name, double ms,
          bool positive, Duration mulligan::RetryOptions::*field) {
  if (opts == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: opts must not be NULL", func);
  }
  if (!CheckMs(name, ms, positive)) return MULLIGAN_E_INVALID_ARGUMENT;
  opts->impl.*field = MsToDuration(ms);
  return MULLIGAN_OK;
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------------------
// Retry options

int mulligan_retry_options_create(mulligan_retry_options** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  *out = new mulligan_retry_options();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_retry_options_destroy(mulligan_retry_options* opts) {
  MULLIGAN_CAPI_BEGIN
  delete opts;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_retry_options_set_max_attempts(mulligan_retry_options* opts, int max_attempts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (max_attempts < 1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "max_attempts must be >= 1, got %d",
                    max_attempts);
  }
  opts->impl.max_attempts = max_attempts;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_backoff(mulligan_retry_options* opts, mulligan_backoff_kind kind) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  const int value = static_cast<int>(kind);
  if (value < MULLIGAN_BACKOFF_CONSTANT || value > MULLIGAN_BACKOFF_DECORRELATED) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "backoff must be a mulligan_backoff_kind (0..3), got %d", value);
  }
  opts->impl.backoff.kind = static_cast<mulligan::BackoffKind>(value);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_base_delay_ms(mulligan_retry_options* opts, double base_delay_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!CheckMs("base_delay_ms", base_delay_ms, false)) return MULLIGAN_E_INVALID_ARGUMENT;
  opts->impl.backoff.base = MsToDuration(base_delay_ms);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_multiplier(mulligan_retry_options* opts, double multiplier) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!(std::isfinite(multiplier) && multiplier >= 0)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "multiplier must be a finite number >= 0, got %g", multiplier);
  }
  opts->impl.backoff.multiplier = multiplier;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_max_delay_ms(mulligan_retry_options* opts, double max_delay_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!CheckMs("max_delay_ms", max_delay_ms, false)) return MULLIGAN_E_INVALID_ARGUMENT;
  opts->impl.backoff.max_delay = MsToDuration(max_delay_ms);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_jitter(mulligan_retry_options* opts, mulligan_jitter_kind kind) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  const int value = static_cast<int>(kind);
  if (value < MULLIGAN_JITTER_NONE || value > MULLIGAN_JITTER_PROPORTIONAL) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "jitter must be a mulligan_jitter_kind (0..3), got %d", value);
  }
  opts->impl.backoff.jitter = static_cast<mulligan::JitterKind>(value);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_jitter_fraction(mulligan_retry_options* opts, double fraction) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!(fraction >= 0 && fraction <= 1)) {  // Also rejects NaN.
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "jitter_fraction must be in [0, 1], got %g",
                    fraction);
  }
  opts->impl.backoff.jitter_fraction = fraction;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_deadline_ms(mulligan_retry_options* opts, double deadline_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!CheckMs("deadline_ms", deadline_ms, true)) return MULLIGAN_E_INVALID_ARGUMENT;
  opts->impl.deadline = MsToDuration(deadline_ms);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_clear_deadline(mulligan_retry_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.deadline.reset();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_attempt_timeout_ms(mulligan_retry_options* opts,
                                                  double attempt_timeout_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!CheckMs("attempt_timeout_ms", attempt_timeout_ms, true)) {
    return MULLIGAN_E_INVALID_ARGUMENT;
  }
  opts->impl.attempt_timeout = MsToDuration(attempt_timeout_ms);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_clear_attempt_timeout(mulligan_retry_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.attempt_timeout.reset();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_retry_after_max_ms(mulligan_retry_options* opts,
                                                  double retry_after_max_ms) {
  MULLIGAN_CAPI_BEGIN
  return SetMs(opts, __func__, "retry_after_max_ms", retry_after_max_ms, false,
               &mulligan::RetryOptions::retry_after_max);
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_retry_after_clamp(mulligan_retry_options* opts, int clamp) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (clamp != 0 && clamp != 1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "retry_after_clamp must be 0 or 1, got %d",
                    clamp);
  }
  opts->impl.retry_after_overflow =
      clamp ? mulligan::RetryAfterOverflow::kClamp : mulligan::RetryAfterOverflow::kStop;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_respect_retry_after(mulligan_retry_options* opts, int respect) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (respect != 0 && respect != 1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "respect_retry_after must be 0 or 1, got %d",
                    respect);
  }
  opts->impl.respect_retry_after = respect != 0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_retryable_statuses(mulligan_retry_options* opts,
                                                  const int* statuses, size_t count) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (statuses == nullptr && count != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "retryable_statuses: statuses is NULL but count is %zu", count);
  }
  std::vector<int> list;
  list.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (statuses[i] < 100 || statuses[i] > 599) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "retryable_statuses[%zu] must be in [100, 599], got %d", i, statuses[i]);
    }
    list.push_back(statuses[i]);
  }
  opts->impl.retryable_statuses = std::move(list);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_retryable_grpc_codes(mulligan_retry_options* opts,
                                                    const int* codes, size_t count) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (codes == nullptr && count != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "retryable_grpc_codes: codes is NULL but count is %zu", count);
  }
  std::vector<int> list;
  list.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (codes[i] < 1 || codes[i] > 16) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "retryable_grpc_codes[%zu] must be a gRPC status in [1, 16], got %d", i,
                      codes[i]);
    }
    list.push_back(codes[i]);
  }
  opts->impl.retryable_grpc_codes = std::move(list);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_retryable_errors(mulligan_retry_options* opts, const int* kinds,
                                                size_t count) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (kinds == nullptr && count != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "retryable_errors: kinds is NULL but count is %zu", count);
  }
  std::vector<mulligan::ErrorKind> list;
  list.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    if (kinds[i] <= MULLIGAN_ERROR_NONE || kinds[i] > MULLIGAN_ERROR_TERMINAL) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "retryable_errors[%zu] must be a mulligan_error_kind in 1..10, got %d", i,
                      kinds[i]);
    }
    list.push_back(static_cast<mulligan::ErrorKind>(kinds[i]));
  }
  opts->impl.retryable_errors = std::move(list);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_seed(mulligan_retry_options* opts, uint64_t seed) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  opts->impl.seed = seed;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

// ---------------------------------------------------------------------------
// Retry policy

int mulligan_retry_policy_create(mulligan_retry_policy** out,
                                 const mulligan_retry_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  if (opts == nullptr) {
    *out = new mulligan_retry_policy{mulligan::RetryPolicy::Default()};
    return MULLIGAN_OK;
  }
  mulligan::Result<mulligan::RetryPolicy> policy = mulligan::RetryPolicy::Create(opts->impl);
  if (!policy.ok()) return SetError(policy.status());
  *out = new mulligan_retry_policy{std::move(policy).value()};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_retry_policy_destroy(mulligan_retry_policy* policy) {
  MULLIGAN_CAPI_BEGIN
  delete policy;
  MULLIGAN_CAPI_END_VOID
}

// ---------------------------------------------------------------------------
// Clocks

int mulligan_clock_create_fake(mulligan_clock** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  *out = new mulligan_clock();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_clock_advance_ms(mulligan_clock* clock, double ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(clock);
  if (!CheckMs("ms", ms, false)) return MULLIGAN_E_INVALID_ARGUMENT;
  clock->impl.Advance(MsToDuration(ms));
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

double mulligan_clock_now_ms(const mulligan_clock* clock) {
  MULLIGAN_CAPI_BEGIN
  const mulligan::TimePoint now =
      clock != nullptr ? clock->impl.Now() : mulligan::SystemClock::Default()->Now();
  return std::chrono::duration<double, std::milli>(now.time_since_epoch()).count();
  MULLIGAN_CAPI_END_RETURN(0.0)
}

void mulligan_clock_destroy(mulligan_clock* clock) {
  MULLIGAN_CAPI_BEGIN
  delete clock;
  MULLIGAN_CAPI_END_VOID
}

// ---------------------------------------------------------------------------
// Retry sessions

int mulligan_retry_session_begin(mulligan_retry_session** out,
                                 const mulligan_retry_policy* policy,
                                 const mulligan_clock* clock, int replay_safe) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(policy);
  const mulligan::Clock* source =
      clock != nullptr ? static_cast<const mulligan::Clock*>(&clock->impl)
                       : mulligan::SystemClock::Default();
  *out = new mulligan_retry_session{policy->impl.Begin(source->Now(), replay_safe != 0), source};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_session_on_outcome(mulligan_retry_session* session,
                                      const mulligan_outcome* outcome,
                                      mulligan_decision* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(session);
  MULLIGAN_CHECK_NOT_NULL(outcome);
  MULLIGAN_CHECK_NOT_NULL(out);
  if (outcome->struct_size < kOutcomeSizeV0_1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->struct_size must be at least %zu (use MULLIGAN_OUTCOME_INIT), "
                    "got %u",
                    kOutcomeSizeV0_1, static_cast<unsigned>(outcome->struct_size));
  }
  if (out->struct_size < kDecisionSizeV0_1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "out->struct_size must be at least %zu (use MULLIGAN_DECISION_INIT), got %u",
                    kDecisionSizeV0_1, static_cast<unsigned>(out->struct_size));
  }
  const int kind = outcome->error_kind;
  if (kind < MULLIGAN_ERROR_NONE || kind > MULLIGAN_ERROR_TERMINAL) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->error_kind must be a mulligan_error_kind (0..10), got %d", kind);
  }
  if (outcome->http_status != 0 && (outcome->http_status < 100 || outcome->http_status > 599)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->http_status must be 0 or in [100, 599], got %d",
                    outcome->http_status);
  }
  if (std::isnan(outcome->retry_after_ms)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->retry_after_ms must be a number (negative for none), got nan");
  }
  if (outcome->request_sent < -1 || outcome->request_sent > 1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->request_sent must be -1, 0 or 1, got %d", outcome->request_sent);
  }
  // grpc_status was appended: read it only from callers compiled with it.
  const bool has_grpc = outcome->struct_size >= offsetof(mulligan_outcome, grpc_status) + sizeof(int);
  const int grpc_status = has_grpc ? outcome->grpc_status : -1;
  if (grpc_status < -1 || grpc_status > 16) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->grpc_status must be -1 or a gRPC status in [0, 16], got %d",
                    grpc_status);
  }

  mulligan::Outcome o;
  o.error = static_cast<mulligan::ErrorKind>(kind);
  o.http_status = outcome->http_status;
  o.grpc_status = grpc_status;
  if (outcome->retry_after_ms >= 0) o.retry_after = MsToDuration(outcome->retry_after_ms);
  if (outcome->request_sent == -1) {
    // The core knows which kinds fail before sending (refused, DNS, connect).
    o.request_sent = o.error == mulligan::ErrorKind::kNone
                         ? true
                         : mulligan::Outcome::Transport(o.error).request_sent;
  } else {
    o.request_sent = outcome->request_sent == 1;
  }

  const mulligan::Decision d = session->impl.OnOutcome(o, session->clock->Now());
  out->action = static_cast<int>(d.action);
  out->delay_ms = DurationToMs(d.delay);
  out->reason = static_cast<int>(d.reason);
  out->classification = static_cast<int>(d.classification);
  out->attempt = d.attempt;
  out->from_retry_after = d.from_retry_after ? 1 : 0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_session_attempt_timeout_ms(const mulligan_retry_session* session,
                                              double* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = -1.0;
  MULLIGAN_CHECK_NOT_NULL(session);
  const std::optional<Duration> timeout = session->impl.AttemptTimeout(session->clock->Now());
  if (timeout.has_value()) *out = DurationToMs(*timeout);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_session_attempts(const mulligan_retry_session* session) {
  MULLIGAN_CAPI_BEGIN
  if (session == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: session must not be NULL", __func__);
    return 0;
  }
  return session->impl.attempts();
  MULLIGAN_CAPI_END_RETURN(0)
}

void mulligan_retry_session_destroy(mulligan_retry_session* session) {
  MULLIGAN_CAPI_BEGIN
  delete session;
  MULLIGAN_CAPI_END_VOID
}

// ---------------------------------------------------------------------------
// Retry-After

int mulligan_retry_after_parse(const char* value, int64_t now_unix_ms, double* out_delay_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out_delay_ms);
  *out_delay_ms = -1.0;
  MULLIGAN_CHECK_NOT_NULL(value);
  // WallTime counts nanoseconds in an int64: keep `now` within +-292 years.
  constexpr int64_t kMaxUnixMs = INT64_MAX / 1000000;
  if (now_unix_ms > kMaxUnixMs || now_unix_ms < -kMaxUnixMs) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "now_unix_ms must be within +-%lld, got %lld",
                    static_cast<long long>(kMaxUnixMs), static_cast<long long>(now_unix_ms));
  }
  const mulligan::WallTime now(
      std::chrono::duration_cast<mulligan::WallTime::duration>(
          std::chrono::milliseconds(now_unix_ms)));
  const std::optional<Duration> delay = mulligan::ParseRetryAfter(value, now);
  if (!delay.has_value()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "not a valid Retry-After value (delay-seconds or HTTP-date): \"%.200s\"",
                    value);
  }
  *out_delay_ms = *delay < Duration::zero() ? 0.0 : DurationToMs(*delay);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

}  // extern "C"
