// core/src/budget/strategy.cc — strategy 4's gates: the retry budget and
// adaptive throttling as pipeline strategies (pipeline/strategy.h).

#include "mulligan/pipeline/call.h"
#include "mulligan/pipeline/strategy.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

BudgetFailure BudgetFailureOf(const Outcome& outcome) {
  if (outcome.error == ErrorKind::kTimeout || outcome.error == ErrorKind::kConnectTimeout) {
    return BudgetFailure::kTimeout;
  }
  if (outcome.error == ErrorKind::kNone && outcome.grpc_status >= 0) {
    if (outcome.grpc_status == 8) return BudgetFailure::kThrottling;          // RESOURCE_EXHAUSTED
    if (outcome.grpc_status == 4) return BudgetFailure::kTimeout;             // DEADLINE_EXCEEDED
    return BudgetFailure::kOther;
  }
  if (outcome.error == ErrorKind::kNone &&
      (outcome.http_status == 429 || outcome.http_status == 503)) {
    return BudgetFailure::kThrottling;
  }
  return BudgetFailure::kOther;
}

void BudgetStrategy::Record(CallState& call, const Outcome& outcome, Decision& decision,
                            TimePoint now) const {
  switch (decision.classification) {
    case Classification::kSuccess:
      if (call.budget_cost < 0) {
        // kRatio deposited at Begin; the others earn lazily.
        if (budget_->kind() != BudgetKind::kRatio) budget_->AddSuccesses(1);
      } else {
        budget_->OnRetriedSuccess(call.budget_cost);
      }
      return;
    case Classification::kTerminal:
      return;
    case Classification::kRetryable:
      break;
  }
  const BudgetFailure kind = BudgetFailureOf(outcome);
  budget_->OnFailure(kind, now);
  if (!decision.retry()) return;
  const int64_t cost = budget_->TryRetry(kind, now);
  if (cost < 0) {
    decision.action = Decision::Action::kStop;
    decision.reason = StopReason::kBudget;
    decision.delay = Duration::zero();
    decision.from_retry_after = false;
    return;
  }
  call.budget_cost = cost;
}

void ThrottleStrategy::Admit(CallState&, TimePoint now, AttemptAdmission& admission) const {
  if (!throttle_->Admit(now)) {
    admission.action = AttemptAdmission::Action::kRefuse;
    admission.reason = StopReason::kThrottled;
  }
}

void ThrottleStrategy::Record(CallState&, const Outcome& outcome, Decision&, TimePoint) const {
  throttle_->Record(outcome);
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
