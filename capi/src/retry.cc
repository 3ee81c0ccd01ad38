// capi/src/retry.cc — the retry part of the C ABI (mulligan_retry.h): the
// enumerations shared with the engine, retry options, policies, sessions, the
// Retry-After parser and mulligan_retry_call(), as thin extern "C" shims over
// mulligan::RetryPolicy / RetrySession / ParseRetryAfter and the pipeline's
// Call (mulligan::Pipeline, core/include/mulligan/pipeline/).
//
// Setters validate their single value at once (so the error names the call
// that was wrong); mulligan_retry_policy_create validates the whole set again
// through RetryPolicy::Create.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan/pipeline/pipeline.h"
#include "mulligan/retry/backoff.h"
#include "mulligan/retry/retry_after.h"
#include "mulligan/telemetry/metrics.h"

namespace mulligan {
namespace capi_internal {

int OutcomeFromC(const mulligan_outcome* in, Outcome* out) {
  if (int rc = CheckStructSize("outcome", in->struct_size, kOutcomeSizeV0_1,
                               "MULLIGAN_OUTCOME_INIT")) {
    return rc;
  }
  const int kind = in->error_kind;
  if (kind < MULLIGAN_ERROR_NONE || kind > MULLIGAN_ERROR_TRUNCATED) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->error_kind must be a mulligan_error_kind (0..11), got %d", kind);
  }
  if (in->http_status != 0 && (in->http_status < 100 || in->http_status > 599)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->http_status must be 0 or in [100, 599], got %d", in->http_status);
  }
  if (std::isnan(in->retry_after_ms)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->retry_after_ms must be a number (negative for none), got nan");
  }
  if (in->request_sent < -1 || in->request_sent > 1) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->request_sent must be -1, 0 or 1, got %d", in->request_sent);
  }
  // grpc_status was appended: read it only from callers compiled with it.
  const bool has_grpc = in->struct_size >= offsetof(mulligan_outcome, grpc_status) + sizeof(int);
  const int grpc_status = has_grpc ? in->grpc_status : -1;
  if (grpc_status < -1 || grpc_status > 16) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "outcome->grpc_status must be -1 or a gRPC status in [0, 16], got %d",
                    grpc_status);
  }

  Outcome o;
  o.error = static_cast<ErrorKind>(kind);
  o.http_status = in->http_status;
  o.grpc_status = grpc_status;
  if (in->retry_after_ms >= 0) o.retry_after = internal::DurationFromMillis(in->retry_after_ms);
  if (in->request_sent == -1) {
    // The core knows which kinds fail before sending (refused, DNS, connect).
    o.request_sent = o.error == ErrorKind::kNone ? true : Outcome::Transport(o.error).request_sent;
  } else {
    o.request_sent = in->request_sent == 1;
  }
  *out = o;
  return MULLIGAN_OK;
}

int CheckDecision(const mulligan_decision* out) {
  return CheckStructSize("out", out->struct_size, kDecisionSizeV0_1, "MULLIGAN_DECISION_INIT");
}

void DecisionToC(const Decision& d, mulligan_decision* out) {
  out->action = static_cast<int>(d.action);
  out->delay_ms = DurationToMs(d.delay);
  out->reason = static_cast<int>(d.reason);
  out->classification = static_cast<int>(d.classification);
  out->attempt = d.attempt;
  out->from_retry_after = d.from_retry_after ? 1 : 0;
}

}  // namespace capi_internal
}  // namespace mulligan

namespace {

using mulligan::Duration;
using mulligan::capi_internal::CheckMs;
using mulligan::capi_internal::CheckStructSize;
using mulligan::capi_internal::DecisionToC;
using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::kOutcomeSizeV0_1;
using mulligan::capi_internal::OutcomeFromC;
using mulligan::capi_internal::SetError;
using mulligan::internal::DurationFromMillis;

// The C enums are the core's values: the shim converts with a cast.
#define MULLIGAN_SAME(c_value, cxx_value) \
  static_assert(static_cast<int>(c_value) == static_cast<int>(cxx_value), #c_value)

using mulligan::BackoffKind;
MULLIGAN_SAME(MULLIGAN_BACKOFF_CONSTANT, BackoffKind::kConstant);
MULLIGAN_SAME(MULLIGAN_BACKOFF_LINEAR, BackoffKind::kLinear);
MULLIGAN_SAME(MULLIGAN_BACKOFF_EXPONENTIAL, BackoffKind::kExponential);
MULLIGAN_SAME(MULLIGAN_BACKOFF_DECORRELATED, BackoffKind::kDecorrelated);

using mulligan::JitterKind;
MULLIGAN_SAME(MULLIGAN_JITTER_NONE, JitterKind::kNone);
MULLIGAN_SAME(MULLIGAN_JITTER_FULL, JitterKind::kFull);
MULLIGAN_SAME(MULLIGAN_JITTER_EQUAL, JitterKind::kEqual);
MULLIGAN_SAME(MULLIGAN_JITTER_PROPORTIONAL, JitterKind::kProportional);

using mulligan::ErrorKind;
MULLIGAN_SAME(MULLIGAN_ERROR_NONE, ErrorKind::kNone);
MULLIGAN_SAME(MULLIGAN_ERROR_CONNECTION_REFUSED, ErrorKind::kConnectionRefused);
MULLIGAN_SAME(MULLIGAN_ERROR_CONNECTION_RESET, ErrorKind::kConnectionReset);
MULLIGAN_SAME(MULLIGAN_ERROR_DNS_FAILURE, ErrorKind::kDnsFailure);
MULLIGAN_SAME(MULLIGAN_ERROR_CONNECT_TIMEOUT, ErrorKind::kConnectTimeout);
MULLIGAN_SAME(MULLIGAN_ERROR_TIMEOUT, ErrorKind::kTimeout);
MULLIGAN_SAME(MULLIGAN_ERROR_TLS, ErrorKind::kTlsError);
MULLIGAN_SAME(MULLIGAN_ERROR_INVALID_URL, ErrorKind::kInvalidUrl);
MULLIGAN_SAME(MULLIGAN_ERROR_TRANSPORT, ErrorKind::kTransport);
MULLIGAN_SAME(MULLIGAN_ERROR_RETRYABLE, ErrorKind::kRetryable);
MULLIGAN_SAME(MULLIGAN_ERROR_TERMINAL, ErrorKind::kTerminal);
MULLIGAN_SAME(MULLIGAN_ERROR_TRUNCATED, ErrorKind::kTruncated);

using mulligan::StopReason;
MULLIGAN_SAME(MULLIGAN_STOP_NONE, StopReason::kNone);
MULLIGAN_SAME(MULLIGAN_STOP_SUCCEEDED, StopReason::kSucceeded);
MULLIGAN_SAME(MULLIGAN_STOP_TERMINAL, StopReason::kTerminal);
MULLIGAN_SAME(MULLIGAN_STOP_ATTEMPTS_EXHAUSTED, StopReason::kAttemptsExhausted);
MULLIGAN_SAME(MULLIGAN_STOP_DEADLINE, StopReason::kDeadline);
MULLIGAN_SAME(MULLIGAN_STOP_RETRY_AFTER_TOO_LONG, StopReason::kRetryAfterTooLong);
MULLIGAN_SAME(MULLIGAN_STOP_NOT_REPLAY_SAFE, StopReason::kNotReplaySafe);
MULLIGAN_SAME(MULLIGAN_STOP_CIRCUIT_OPEN, StopReason::kCircuitOpen);
MULLIGAN_SAME(MULLIGAN_STOP_STOP_CONDITION, StopReason::kStopCondition);
MULLIGAN_SAME(MULLIGAN_STOP_BUDGET, StopReason::kBudget);
MULLIGAN_SAME(MULLIGAN_STOP_THROTTLED, StopReason::kThrottled);
MULLIGAN_SAME(MULLIGAN_STOP_BULKHEAD_FULL, StopReason::kBulkheadFull);
MULLIGAN_SAME(MULLIGAN_STOP_RATE_LIMITED, StopReason::kRateLimited);

using Action = mulligan::Decision::Action;
MULLIGAN_SAME(MULLIGAN_ACTION_RETRY, Action::kRetry);
MULLIGAN_SAME(MULLIGAN_ACTION_STOP, Action::kStop);

using mulligan::Classification;
MULLIGAN_SAME(MULLIGAN_CLASSIFICATION_SUCCESS, Classification::kSuccess);
MULLIGAN_SAME(MULLIGAN_CLASSIFICATION_RETRYABLE, Classification::kRetryable);
MULLIGAN_SAME(MULLIGAN_CLASSIFICATION_TERMINAL, Classification::kTerminal);

#undef MULLIGAN_SAME

// Shared body of the duration setters.
int SetMs(mulligan_retry_options* opts, const char* func, const char* name, double ms,
          bool positive, Duration mulligan::RetryOptions::*field) {
  if (opts == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: opts must not be NULL", func);
  }
  if (!CheckMs(name, ms, positive)) return MULLIGAN_E_INVALID_ARGUMENT;
  opts->impl.*field = DurationFromMillis(ms);
  return MULLIGAN_OK;
}


// ---------------------------------------------------------------------------
// mulligan_retry_call: what the caller's options say, and the loop over the
// pipeline's Call (core/include/mulligan/pipeline/call.h). Every decision --
// retry or stop, what the breaker records, what the metrics count -- is the
// Call's; this file only turns C into C++ and back, and waits.

// The first published sizes of the caller-owned structs. metrics_name came
// later in 0.1, breaker_per_attempt in 0.2: callers compiled before pass a
// smaller struct_size, and those fields are not read.
constexpr size_t kCallOptionsSizeV0_1 = offsetof(mulligan_retry_call_options, metrics_name);
constexpr size_t kCallOptionsSizeWithMetrics =
    offsetof(mulligan_retry_call_options, metrics_name) + sizeof(const char*);
constexpr size_t kCallOptionsSizeWithPerAttempt =
    offsetof(mulligan_retry_call_options, breaker_per_attempt) + sizeof(int);
constexpr size_t kCallInfoSizeV0_1 = sizeof(mulligan_retry_call_info);

using AttemptFn = int (*)(int attempt_number, mulligan_outcome* out, void* user_data);

// The parts of the borrowed pipeline a mulligan_retry_call runs through.
// Reads `opts` (struct_size already checked) as far as its size goes.
int ReadCallOptions(const mulligan_retry_call_options* opts, mulligan::Pipeline::Parts* parts) {
  if (opts == nullptr) return MULLIGAN_OK;
  if (opts->clock != nullptr) parts->clock = &opts->clock->impl;
  if (opts->breaker != nullptr) parts->breaker = opts->breaker->impl.get();
  // breaker_record_each_attempt is the 0.1 spelling of breaker_per_attempt:
  // either turns it on.
  parts->breaker_per_attempt =
      opts->breaker_record_each_attempt != 0 ||
      (opts->struct_size >= kCallOptionsSizeWithPerAttempt && opts->breaker_per_attempt != 0);
  if (opts->struct_size >= kCallOptionsSizeWithMetrics && opts->metrics_name != nullptr) {
    if (opts->metrics_name[0] == '\0') {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "opts->metrics_name must not be empty (NULL reports no metrics)");
    }
    // Looked up once per call (a hash look-up under the registry's mutex).
    parts->metrics = mulligan::MetricsRegistry::Default().Get(opts->metrics_name);
  }
  return MULLIGAN_OK;
}

// The status mulligan_retry_call returns for the decision that stopped it
// (the 0.1 contract), with its last error.
int StopStatus(const mulligan::Decision& d) {
  switch (d.reason) {
    case mulligan::StopReason::kSucceeded:
      return MULLIGAN_OK;
    case mulligan::StopReason::kTerminal:
      return SetError(MULLIGAN_E_UNAVAILABLE, "attempt %d failed with a terminal outcome",
                      d.attempt);
    case mulligan::StopReason::kDeadline:
      return SetError(MULLIGAN_E_DEADLINE_EXCEEDED,
                      "the deadline ended the retries after %d attempt(s)", d.attempt);
    default:
      return SetError(MULLIGAN_E_RETRIES_EXHAUSTED, "gave up after %d attempt(s): %s", d.attempt,
                      mulligan::StopReasonName(d.reason));
  }
}

// Steps `call` until it stops: admit, run the caller's attempt, record, wait
// through the clock. Fills the loop's part of `result` and returns the status.
int RunRetryCall(mulligan::Call& call, mulligan::Clock& clock, AttemptFn attempt,
                 void* user_data, mulligan_retry_call_info* result) {
  for (;;) {
    const mulligan::AttemptAdmission admission = call.Admit(clock.Now());
    if (admission.refused()) {
      result->circuit_open = 1;
      result->retry_in_ms = DurationToMs(admission.retry_in);
      return SetError(call.RefusalStatus());
    }
    mulligan_outcome outcome = MULLIGAN_OUTCOME_INIT;
    const int rc = attempt(admission.attempt, &outcome, user_data);  // C code: cannot throw
    mulligan::Outcome o;
    const int invalid = rc != 0 ? MULLIGAN_E_CALLBACK : OutcomeFromC(&outcome, &o);
    if (invalid != MULLIGAN_OK) {
      // Ends the call as a failure and frees a probe slot (the permit is
      // recorded as ignored). As in 0.1, the aborted attempt is not counted
      // among the attempts made, so none is in flight.
      call.Abandon(clock.Now(), 0);
      if (rc == 0) return invalid;  // The last error names the bad outcome field.
      return SetError(MULLIGAN_E_CALLBACK, "the attempt callback returned %d (attempt %d)", rc,
                      admission.attempt);
    }
    const mulligan::Decision decision = call.Record(o, clock.Now());
    if (!decision.retry()) {
      result->stop_reason = static_cast<int>(decision.reason);
      DecisionToC(decision, &result->last_decision);
      return StopStatus(decision);
    }
    clock.SleepFor(decision.delay);
  }
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------------------
// Enumerations shared with the engine

const char* mulligan_error_kind_str(int kind) {
  MULLIGAN_CAPI_BEGIN
  if (kind < MULLIGAN_ERROR_NONE || kind > MULLIGAN_ERROR_TRUNCATED) return "unknown";
  return mulligan::ErrorKindName(static_cast<mulligan::ErrorKind>(kind));
  MULLIGAN_CAPI_END_RETURN("unknown")
}

const char* mulligan_stop_reason_str(int reason) {
  MULLIGAN_CAPI_BEGIN
  if (reason < MULLIGAN_STOP_NONE || reason > MULLIGAN_STOP_STOP_CONDITION) return "unknown";
  return mulligan::StopReasonName(static_cast<mulligan::StopReason>(reason));
  MULLIGAN_CAPI_END_RETURN("unknown")
}

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
  opts->impl.backoff.base = DurationFromMillis(base_delay_ms);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_multiplier(mulligan_retry_options* opts, double multiplier) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!(std::isfinite(multiplier) && multiplier >= 0)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "multiplier must be a finite number >= 0, got %.17g", multiplier);
  }
  opts->impl.backoff.multiplier = multiplier;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_retry_options_set_max_delay_ms(mulligan_retry_options* opts, double max_delay_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(opts);
  if (!CheckMs("max_delay_ms", max_delay_ms, false)) return MULLIGAN_E_INVALID_ARGUMENT;
  opts->impl.backoff.max_delay = DurationFromMillis(max_delay_ms);
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
    // %.17g: a value just above 1 must not read as "got 1".
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "jitter_fraction must be in [0, 1], got %.17g",
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
  opts->impl.deadline = DurationFromMillis(deadline_ms);
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
  opts->impl.attempt_timeout = DurationFromMillis(attempt_timeout_ms);
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
    if (kinds[i] <= MULLIGAN_ERROR_NONE || kinds[i] > MULLIGAN_ERROR_TRUNCATED) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "retryable_errors[%zu] must be a mulligan_error_kind in 1..11, got %d", i,
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
// Retry sessions

int mulligan_retry_session_begin(mulligan_retry_session** out,
                                 const mulligan_retry_policy* policy,
                                 const mulligan_clock* clock, int replay_safe) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(policy);
  const mulligan::Clock* source = mulligan::capi_internal::ClockOf(clock);
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
  // The sizes first (as in 0.1), then the outcome's fields.
  if (int rc = CheckStructSize("outcome", outcome->struct_size, kOutcomeSizeV0_1,
                               "MULLIGAN_OUTCOME_INIT")) {
    return rc;
  }
  if (int rc = mulligan::capi_internal::CheckDecision(out)) return rc;
  mulligan::Outcome o;
  if (int rc = OutcomeFromC(outcome, &o)) return rc;
  DecisionToC(session->impl.OnOutcome(o, session->clock->Now()), out);
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

// ---------------------------------------------------------------------------
// Retry call

int mulligan_retry_call(const mulligan_retry_policy* policy, AttemptFn attempt, void* user_data,
                        const mulligan_retry_call_options* opts,
                        mulligan_retry_call_info* info) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(policy);
  MULLIGAN_CHECK_NOT_NULL(attempt);
  if (opts != nullptr) {
    if (int rc = CheckStructSize("opts", opts->struct_size, kCallOptionsSizeV0_1,
                                 "MULLIGAN_RETRY_CALL_OPTIONS_INIT")) {
      return rc;
    }
  }
  if (info != nullptr) {
    if (int rc = CheckStructSize("info", info->struct_size, kCallInfoSizeV0_1,
                                 "MULLIGAN_RETRY_CALL_INFO_INIT")) {
      return rc;
    }
  }
  // A pipeline over the borrowed parts: no allocation, as the core's RetryCall.
  mulligan::Pipeline::Parts parts;
  parts.policy = &policy->impl;
  parts.clock = mulligan::SystemClock::Default();
  if (int rc = ReadCallOptions(opts, &parts)) return rc;
  const mulligan::Pipeline pipeline(parts);
  mulligan::Clock& clock = pipeline.clock();
  mulligan::Call call = pipeline.Begin(clock.Now());

  mulligan_retry_call_info result = MULLIGAN_RETRY_CALL_INFO_INIT;
  const int rc = RunRetryCall(call, clock, attempt, user_data, &result);
  result.attempts = call.attempts();
  result.total_delay_ms = DurationToMs(call.total_delay());
  result.elapsed_ms = DurationToMs(clock.Now() - call.start());
  if (info != nullptr) {
    // Copy only what the caller's struct holds (it only grows at the end).
    result.struct_size = info->struct_size;
    std::memcpy(info, &result, std::min<size_t>(info->struct_size, sizeof(result)));
  }
  return rc;
  MULLIGAN_CAPI_END
}

}  // extern "C"
