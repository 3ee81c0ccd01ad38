// capi/src/hedging.cc — the hedging part of the C ABI (mulligan_hedging.h):
// hedging policies and hedged calls, thin extern "C" shims over
// mulligan::HedgingPolicy and mulligan::HedgedCall (core/include/mulligan/
// hedging/hedging.h). Every decision is the HedgedCall's; this file checks
// the C input, converts it, and converts the answers back. (Added in 0.6.)

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <utility>

#include "capi_internal.h"
#include "internal/saturating.h"
#include "mulligan/hedging/hedging.h"

struct mulligan_hedging_policy {
  std::shared_ptr<mulligan::HedgingPolicy> impl;
};

struct mulligan_hedged_call {
  mulligan::HedgedCall impl;
};

namespace {

using mulligan::capi_internal::CallOptionsFromC;
using mulligan::capi_internal::CheckStructSize;
using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::OutcomeFromC;
using mulligan::capi_internal::Reset;
using mulligan::capi_internal::SetError;
using mulligan::capi_internal::TimePointFromMs;
using mulligan::capi_internal::TimePointToMs;

// The C enums are the core's.
static_assert(MULLIGAN_HEDGE_START ==
                  static_cast<int>(mulligan::HedgeAdmission::Action::kStart), "");
static_assert(MULLIGAN_HEDGE_WAIT == static_cast<int>(mulligan::HedgeAdmission::Action::kWait),
              "");
static_assert(MULLIGAN_HEDGE_NO_MORE ==
                  static_cast<int>(mulligan::HedgeAdmission::Action::kNoMore), "");
static_assert(MULLIGAN_HEDGE_ACCOUNTING_FULL ==
                  static_cast<int>(mulligan::HedgeAccounting::kFull), "");
static_assert(MULLIGAN_HEDGE_ACCOUNTING_GATE_ONLY ==
                  static_cast<int>(mulligan::HedgeAccounting::kGateOnly), "");
static_assert(MULLIGAN_MAX_HEDGED_ATTEMPTS == mulligan::kMaxHedgedAttempts, "");

// The first published sizes of the caller-initialised structs (0.6).
constexpr size_t kOptionsSizeV0_6 = sizeof(mulligan_hedging_options);
constexpr size_t kAdmissionSizeV0_6 = sizeof(mulligan_hedge_admission);
constexpr size_t kDecisionSizeV0_6 = sizeof(mulligan_hedge_decision);

// Converts the caller's options; the core validates them (its messages name
// the field), but for the delay in ms and a NaN quantile, checked here.
int OptionsFromC(const mulligan_hedging_options* in, mulligan::HedgingOptions* out) {
  if (in == nullptr) return MULLIGAN_OK;
  if (int rc = CheckStructSize("opts", in->struct_size, kOptionsSizeV0_6,
                               "MULLIGAN_HEDGING_OPTIONS_INIT")) {
    return rc;
  }
  out->max_attempts = in->max_attempts;
  // Checked here so that the message names the C field and its unit (the
  // core's names hedging_delay in seconds).
  if (!std::isfinite(in->hedging_delay_ms) || in->hedging_delay_ms < 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "hedging: hedging_delay_ms must be a finite number >= 0, got %g",
                    in->hedging_delay_ms);
  }
  out->hedging_delay = mulligan::internal::DurationFromMillis(in->hedging_delay_ms);
  if (std::isnan(in->delay_quantile)) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "hedging: delay_quantile must be 0 (none) or in (0, 1], got nan");
  }
  if (in->delay_quantile != 0.0) out->delay_quantile = in->delay_quantile;
  out->quantile_window = in->quantile_window;
  out->quantile_min_samples = in->quantile_min_samples;
  return MULLIGAN_OK;
}

// Converts a step's now_ms, which must not be before the call began.
int StepTime(const mulligan::HedgedCall& call, double now_ms, mulligan::TimePoint* now) {
  if (!TimePointFromMs("now_ms", now_ms, now)) return MULLIGAN_E_INVALID_ARGUMENT;
  if (*now < call.start()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "now_ms must not be before the call began (%.3f ms), got %.3f ms; read "
                    "every now_ms from the pipeline's clock (mulligan_pipeline_now_ms)",
                    TimePointToMs(call.start()), now_ms);
  }
  return MULLIGAN_OK;
}

void AdmissionToC(const mulligan::HedgeAdmission& a, mulligan_hedge_admission* out) {
  out->action = static_cast<int>(a.action);
  out->copy = a.start() ? a.copy : 0;
  out->timeout_ms = a.start() && a.timeout ? DurationToMs(*a.timeout) : -1.0;
  out->next_start_ms = a.wait() ? TimePointToMs(a.next_start) : 0.0;
  out->reason = static_cast<int>(a.reason);
  out->retry_in_ms = DurationToMs(a.retry_in);
}

void DecisionToC(const mulligan::HedgeDecision& d, mulligan_hedge_decision* out) {
  out->finished = d.finished ? 1 : 0;
  out->winner = d.winner;
  out->reason = static_cast<int>(d.reason);
  out->classification = static_cast<int>(d.classification);
  // At most max_attempts - 1 <= 4 copies are ever cancelled at once.
  const size_t n = std::min<size_t>(d.cancel.size(), MULLIGAN_MAX_HEDGED_ATTEMPTS);
  out->cancel_count = static_cast<int>(n);
  for (size_t i = 0; i < n; ++i) out->cancel[i] = d.cancel[i];
}

// The getters' NULL handling: records the error and returns true.
bool NullCall(const mulligan_hedged_call* call, const char* func) {
  if (call != nullptr) return false;
  SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: call must not be NULL", func);
  return true;
}

// Ends `call` (not NULL) before its outcome is known, by `end`
// (HedgedCall::Abandon: counted failed; HedgedCall::Cancel: cancelled).
int EndEarly(mulligan_hedged_call* call, double now_ms,
             void (mulligan::HedgedCall::*end)(mulligan::TimePoint)) {
  mulligan::TimePoint now;
  if (int rc = StepTime(call->impl, now_ms, &now)) return rc;
  (call->impl.*end)(now);
  return MULLIGAN_OK;
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------------------
// Policies

int mulligan_hedging_policy_create(mulligan_hedging_policy** out,
                                   const mulligan_hedging_options* opts) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::HedgingOptions options;
  if (int rc = OptionsFromC(opts, &options)) return rc;
  auto created = mulligan::HedgingPolicy::Create(options);
  if (!created.ok()) return SetError(created.status());
  *out = new mulligan_hedging_policy{std::move(created).value()};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_hedging_policy_destroy(mulligan_hedging_policy* policy) {
  MULLIGAN_CAPI_BEGIN
  delete policy;
  MULLIGAN_CAPI_END_VOID
}

double mulligan_hedging_policy_current_delay_ms(const mulligan_hedging_policy* policy) {
  MULLIGAN_CAPI_BEGIN
  if (policy == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: policy must not be NULL", __func__);
    return 0.0;
  }
  return DurationToMs(policy->impl->CurrentDelay());
  MULLIGAN_CAPI_END_RETURN(0.0)
}

// ---------------------------------------------------------------------------
// Hedged calls

int mulligan_hedged_call_begin(mulligan_hedged_call** out, const mulligan_hedging_policy* policy,
                               const mulligan_pipeline* pipeline, double now_ms,
                               const mulligan_call_options* opts, int accounting) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(policy);
  MULLIGAN_CHECK_NOT_NULL(pipeline);
  mulligan::TimePoint now;
  if (!TimePointFromMs("now_ms", now_ms, &now)) return MULLIGAN_E_INVALID_ARGUMENT;
  mulligan::CallOptions options;
  if (int rc = CallOptionsFromC(opts, &options)) return rc;
  if (accounting != MULLIGAN_HEDGE_ACCOUNTING_FULL &&
      accounting != MULLIGAN_HEDGE_ACCOUNTING_GATE_ONLY) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "accounting must be MULLIGAN_HEDGE_ACCOUNTING_FULL (0) or _GATE_ONLY (1), "
                    "got %d",
                    accounting);
  }
  // The allocation happens before Begin runs (C++17 [expr.new]), so a failed
  // one counts no call as started.
  *out = new mulligan_hedged_call{policy->impl->Begin(
      *pipeline->impl, now, options, static_cast<mulligan::HedgeAccounting>(accounting))};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_hedged_call_admit(mulligan_hedged_call* call, double now_ms,
                               mulligan_hedge_admission* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckStructSize("out", out->struct_size, kAdmissionSizeV0_6,
                               "MULLIGAN_HEDGE_ADMISSION_INIT")) {
    return rc;
  }
  const mulligan_hedge_admission init = MULLIGAN_HEDGE_ADMISSION_INIT;
  Reset(out, init);
  MULLIGAN_CHECK_NOT_NULL(call);
  mulligan::TimePoint now;
  if (int rc = StepTime(call->impl, now_ms, &now)) return rc;
  AdmissionToC(call->impl.Admit(now), out);
  // The first copy refused by the breaker ends the call: say so as
  // mulligan_call_admit does (asking again gives the same answer).
  const mulligan::Status refusal = call->impl.RefusalStatus();
  if (!refusal.ok()) return SetError(refusal);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_hedged_call_record(mulligan_hedged_call* call, int copy,
                                const mulligan_outcome* outcome, double now_ms,
                                mulligan_hedge_decision* out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  if (int rc = CheckStructSize("out", out->struct_size, kDecisionSizeV0_6,
                               "MULLIGAN_HEDGE_DECISION_INIT")) {
    return rc;
  }
  const mulligan_hedge_decision init = MULLIGAN_HEDGE_DECISION_INIT;
  Reset(out, init);
  MULLIGAN_CHECK_NOT_NULL(call);
  MULLIGAN_CHECK_NOT_NULL(outcome);
  if (copy < 1 || copy > MULLIGAN_MAX_HEDGED_ATTEMPTS) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "copy must be in [1, %d], got %d",
                    MULLIGAN_MAX_HEDGED_ATTEMPTS, copy);
  }
  mulligan::TimePoint now;
  if (int rc = StepTime(call->impl, now_ms, &now)) return rc;
  mulligan::Outcome o;
  if (int rc = OutcomeFromC(outcome, &o)) return rc;
  DecisionToC(call->impl.Record(copy, o, now), out);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_hedged_call_abandon(mulligan_hedged_call* call, double now_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(call);
  return EndEarly(call, now_ms, &mulligan::HedgedCall::Abandon);
  MULLIGAN_CAPI_END
}

int mulligan_hedged_call_cancel(mulligan_hedged_call* call, double now_ms) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(call);
  return EndEarly(call, now_ms, &mulligan::HedgedCall::Cancel);
  MULLIGAN_CAPI_END
}

void mulligan_hedged_call_destroy(mulligan_hedged_call* call) {
  MULLIGAN_CAPI_BEGIN
  delete call;  // ~HedgedCall abandons an unfinished call.
  MULLIGAN_CAPI_END_VOID
}

int mulligan_hedged_call_started(const mulligan_hedged_call* call) {
  MULLIGAN_CAPI_BEGIN
  if (NullCall(call, __func__)) return 0;
  return call->impl.started();
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_hedged_call_running(const mulligan_hedged_call* call) {
  MULLIGAN_CAPI_BEGIN
  if (NullCall(call, __func__)) return 0;
  return call->impl.running();
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_hedged_call_cancelled(const mulligan_hedged_call* call) {
  MULLIGAN_CAPI_BEGIN
  if (NullCall(call, __func__)) return 0;
  return call->impl.cancelled();
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_hedged_call_winner(const mulligan_hedged_call* call) {
  MULLIGAN_CAPI_BEGIN
  if (NullCall(call, __func__)) return 0;
  return call->impl.winner();
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_hedged_call_finished(const mulligan_hedged_call* call) {
  MULLIGAN_CAPI_BEGIN
  if (NullCall(call, __func__)) return 0;
  return call->impl.finished() ? 1 : 0;
  MULLIGAN_CAPI_END_RETURN(0)
}

}  // extern "C"
