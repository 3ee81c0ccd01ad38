// capi/src/pipeline.cc — the pipeline part of the C ABI (mulligan_pipeline.h):
// pipeline options, pipelines and their step-by-step calls, thin extern "C"
// shims over mulligan::Pipeline and mulligan::Call (core/include/mulligan/
// pipeline/). Every decision is the Call's; this file checks the C input,
// converts it, and converts the answers back.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <utility>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan/pipeline/pipeline.h"

// struct mulligan_pipeline_options: capi_internal.h (limits.cc sets it too).

// struct mulligan_pipeline: capi_internal.h (hedging.cc begins hedged calls on it).

// struct mulligan_call: capi_internal.h (limits.cc waits on it).

namespace {

using mulligan::capi_internal::CheckDecision;
using mulligan::capi_internal::CheckMs;
using mulligan::capi_internal::CallOptionsFromC;
using mulligan::capi_internal::CheckStructSize;
using mulligan::capi_internal::DecisionToC;
using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::OutcomeFromC;
using mulligan::capi_internal::Reset;
using mulligan::capi_internal::SetError;
using mulligan::capi_internal::TimePointFromMs;
using mulligan::capi_internal::TimePointToMs;

// The C enum is the core's.
static_assert(MULLIGAN_ADMISSION_GO ==
                  static_cast<int>(mulligan::AttemptAdmission::Action::kGo), "");
static_assert(MULLIGAN_ADMISSION_WAIT ==
                  static_cast<int>(mulligan::AttemptAdmission::Action::kWait), "");
static_assert(MULLIGAN_ADMISSION_REFUSE ==
                  static_cast<int>(mulligan::AttemptAdmission::Action::kRefuse), "");

// The first published sizes of the caller-initialised structs (0.2).
constexpr size_t kCallOptionsSizeV0_2 = sizeof(mulligan_call_options);
constexpr size_t kAdmissionSizeV0_2 = sizeof(mulligan_admission);

int CheckOpts(const mulligan_pipeline_options* opts, const char* func) {
  if (opts == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: opts must not be NULL", func);
  }
  return MULLIGAN_OK;
}

// Converts a step's now_ms, which must not be before the call began.
int StepTime(const mulligan::Call& call, double now_ms, mulligan::TimePoint* now) {
  if (!TimePointFromMs("now_ms", now_ms, now)) return MULLIGAN_E_INVALID_ARGUMENT;
  if (*now < call.start()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "now_ms must not be before the call began (%.3f ms), got %.3f ms; read "
                    "every now_ms from the pipeline's clock (mulligan_pipeline_now_ms)",
                    TimePointToMs(call.start()), now_ms);
  }
  return MULLIGAN_OK;
}

// Ends `call` (not NULL) before its outcome is known, by `end` (Call::Abandon: counted
// failed; Call::Cancel: counted cancelled), after checking the arguments.
int EndEarly(mulligan_call* call, double now_ms, int attempts_in_flight,
             void (mulligan::Call::*end)(mulligan::TimePoint, int)) {
  mulligan::TimePoint now;
  if (int rc = StepTime(call->impl, now_ms, &now)) return rc;
  if (attempts_in_flight < 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "attempts_in_flight must be >= 0, got %d",
                    attempts_in_flight);
  }
  (call->impl.*end)(now, attempts_in_flight);
  return MULLIGAN_OK;
}

int Finished(const char* func) {
  return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                  "%s: the call is finished (stopped or abandoned); begin a new call", func);
}

void AdmissionToC(const mulligan::AttemptAdmission& a, mulligan_admission* out) {
  out->action = static_cast<int>(a.action);
  out->attempt = a.attempt;
  out->timeout_ms = a.timeout ? DurationToMs(*a.timeout) : -1.0;
  out->delay_ms = DurationToMs(a.delay);
  out->reason = static_cast<int>(a.reason);
  out->retry_in_ms = DurationToMs(a.retry_in);
  out->use_fallback = a.use_fallback ? 1 : 0;
}

// The getters' NULL handling: records the error and returns 0.
bool NullCall(const mulligan_call* call, const char* func) {
  if (call != nullptr) return false;
  SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: call must not be NULL", func);
  return true;
}

}  // namespace

namespace mulligan {
namespace capi_internal {

int CallOptionsFromC(const mulligan_call_options* in, mulligan::CallOptions* out) {
  if (in == nullptr) return MULLIGAN_OK;
  if (int rc = CheckStructSize("opts", in->struct_size, kCallOptionsSizeV0_2,
                               "MULLIGAN_CALL_OPTIONS_INIT")) {
    return rc;
  }
  if (in->key != nullptr) out->key = in->key;  // Borrowed during Begin only.
  out->replay_safe = in->replay_safe != 0;
  if (!(in->attempt_timeout_ms < 0)) {  // Set (NaN included, which CheckMs refuses).
    if (!CheckMs("opts->attempt_timeout_ms (negative for none)", in->attempt_timeout_ms, true)) {
      return MULLIGAN_E_INVALID_ARGUMENT;
    }
    out->attempt_timeout = mulligan::internal::DurationFromMillis(in->attempt_timeout_ms);
  }
  out->fallback = in->fallback != 0;
  if (in->max_attempts < 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "opts->max_attempts must be >= 0 (0: the policy's), got %d", in->max_attempts);
  }
  out->max_attempts = in->max_attempts;
  out->no_wait = in->no_wait != 0;
  return MULLIGAN_OK;
}

}  // namespace capi_internal
}  // namespace mulligan

extern "C" {

// ---------------------------------------------------------------------------
// Pipeline options

int mulligan_pipeline_options_create(mulligan_pipeline_options** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  *out = new mulligan_pipeline_options();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_pipeline_options_destroy(mulligan_pipeline_options* opts) {
  MULLIGAN_CAPI_BEGIN
  delete opts;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_pipeline_options_set_name(mulligan_pipeline_options* opts, const char* name) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  opts->impl.name = name != nullptr ? name : "";
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_pipeline_options_set_retry(mulligan_pipeline_options* opts,
                                        const mulligan_retry_options* retry) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  opts->impl.retry = retry != nullptr ? retry->impl : mulligan::RetryOptions();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_pipeline_options_set_breaker(mulligan_pipeline_options* opts,
                                          const mulligan_breaker* breaker) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  opts->impl.breaker = breaker != nullptr ? breaker->impl : nullptr;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_pipeline_options_set_breaker_registry(mulligan_pipeline_options* opts,
                                                   const mulligan_breaker_registry* registry) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  opts->impl.breakers = registry != nullptr ? registry->impl : nullptr;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_pipeline_options_set_breaker_per_attempt(mulligan_pipeline_options* opts,
                                                      int breaker_per_attempt) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  opts->impl.breaker_per_attempt = breaker_per_attempt != 0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_pipeline_options_set_report_metrics(mulligan_pipeline_options* opts,
                                                 int report_metrics) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  opts->impl.report_metrics = report_metrics != 0;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_pipeline_options_set_clock(mulligan_pipeline_options* opts,
                                        const mulligan_clock* clock) {
  MULLIGAN_CAPI_BEGIN
  if (int rc = CheckOpts(opts, __func__)) return rc;
  opts->clock = clock != nullptr ? &clock->impl : nullptr;
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

// ---------------------------------------------------------------------------
// Pipelines

int mulligan_pipeline_create(mulligan_pipeline** out, const mulligan_pipeline_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  const mulligan::PipelineOptions defaults;
  auto created = mulligan::Pipeline::Create(opts != nullptr ? opts->impl : defaults);
  if (!created.ok()) return SetError(created.status());
  const mulligan::Clock* clock = opts != nullptr && opts->clock != nullptr
                                     ? opts->clock
                                     : mulligan::SystemClock::Default();
  *out = new mulligan_pipeline{std::move(created).value(), clock};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_pipeline_destroy(mulligan_pipeline* pipeline) {
  MULLIGAN_CAPI_BEGIN
  delete pipeline;
  MULLIGAN_CAPI_END_VOID
}

double mulligan_pipeline_now_ms(const mulligan_pipeline* pipeline) {
  MULLIGAN_CAPI_BEGIN
  if (pipeline == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: pipeline must not be NULL", __func__);
    return 0.0;
  }
  return TimePointToMs(pipeline->clock->Now());
  MULLIGAN_CAPI_END_RETURN(0.0)
}

// ---------------------------------------------------------------------------
// Calls

int mulligan_call_begin(mulligan_call** out, const mulligan_pipeline* pipeline, double now_ms,
                        const mulligan_call_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(pipeline);
  mulligan::TimePoint now;
  if (!TimePointFromMs("now_ms", now_ms, &now)) return MULLIGAN_E_INVALID_ARGUMENT;
  mulligan::CallOptions options;
  if (int rc = CallOptionsFromC(opts, &options)) return rc;
  // The allocation happens before Begin runs (C++17 [expr.new]), so a failed
  // one counts no call as started.
  *out = new mulligan_call{pipeline->impl->Begin(now, options)};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_call_admit(mulligan_call* call, double now_ms, mulligan_admission* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckStructSize("out", out->struct_size, kAdmissionSizeV0_2,
                               "MULLIGAN_ADMISSION_INIT")) {
    return rc;
  }
  const mulligan_admission init = MULLIGAN_ADMISSION_INIT;
  Reset(out, init);
  MULLIGAN_CHECK_NOT_NULL(call);
  mulligan::TimePoint now;
  if (int rc = StepTime(call->impl, now_ms, &now)) return rc;
  // After a refusal the Call answers the same refusal again; after a stop or
  // an abandon it would hand back a stale "go", so that is an error here.
  if (call->impl.finished() && !call->impl.last_admission().refused()) return Finished(__func__);
  const mulligan::AttemptAdmission admission = call->impl.Admit(now);
  AdmissionToC(admission, out);
  if (admission.refused()) return SetError(call->impl.RefusalStatus());
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_call_record(mulligan_call* call, const mulligan_outcome* outcome, double now_ms,
                         mulligan_decision* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckDecision(out)) return rc;
  const mulligan_decision init = MULLIGAN_DECISION_INIT;
  Reset(out, init);
  MULLIGAN_CHECK_NOT_NULL(call);
  MULLIGAN_CHECK_NOT_NULL(outcome);
  mulligan::TimePoint now;
  if (int rc = StepTime(call->impl, now_ms, &now)) return rc;
  if (call->impl.finished()) return Finished(__func__);
  mulligan::Outcome o;
  if (int rc = OutcomeFromC(outcome, &o)) return rc;
  DecisionToC(call->impl.Record(o, now), out);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_call_abandon(mulligan_call* call, double now_ms, int attempts_in_flight) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(call);
  return EndEarly(call, now_ms, attempts_in_flight, &mulligan::Call::Abandon);
  MULLIGAN_CAPI_END
}

void mulligan_call_destroy(mulligan_call* call) {
  MULLIGAN_CAPI_BEGIN
  delete call;  // ~Call abandons an unfinished call.
  MULLIGAN_CAPI_END_VOID
}

int mulligan_call_attempts(const mulligan_call* call) {
  MULLIGAN_CAPI_BEGIN
  if (NullCall(call, __func__)) return 0;
  return call->impl.attempts();
  MULLIGAN_CAPI_END_RETURN(0)
}

double mulligan_call_total_delay_ms(const mulligan_call* call) {
  MULLIGAN_CAPI_BEGIN
  if (NullCall(call, __func__)) return 0.0;
  return DurationToMs(call->impl.total_delay());
  MULLIGAN_CAPI_END_RETURN(0.0)
}

int mulligan_call_finished(const mulligan_call* call) {
  MULLIGAN_CAPI_BEGIN
  if (NullCall(call, __func__)) return 0;
  return call->impl.finished() ? 1 : 0;
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_call_use_fallback(const mulligan_call* call) {
  MULLIGAN_CAPI_BEGIN
  if (NullCall(call, __func__)) return 0;
  const mulligan::Call& c = call->impl;
  if (!c.finished()) return 0;
  // The Call flags the fallback where the call ended: on the refusal (Admit)
  // or on the stop decision (Record); an abandoned call has neither.
  const bool refused = c.last_admission().refused();
  return (refused ? c.last_admission().use_fallback : c.last_decision().use_fallback) ? 1 : 0;
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_call_cancel(mulligan_call* call, double now_ms, int attempts_in_flight) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(call);
  return EndEarly(call, now_ms, attempts_in_flight, &mulligan::Call::Cancel);
  MULLIGAN_CAPI_END
}

}  // extern "C"
