// core/src/simulate/occ_model.cc — the optimistic-concurrency resource
// (service_model.h states the conflict rule).
#include "mulligan/simulate/service_model.h"

namespace mulligan {
inline namespace v0 {

ServiceAnswer OccModel::Serve(Duration arrival, uint32_t /*client*/) {
  const int64_t slot = arrival.count() / slot_.count();
  ServiceAnswer answer;
  answer.done = Duration((slot + 1) * slot_.count());
  if (slot != won_slot_) {
    won_slot_ = slot;  // the first arrival of the slot wins the write
    answer.outcome = Outcome::Success();
  } else {
    answer.outcome = Outcome::Failure(/*retryable=*/true);
  }
  return answer;
}

}  // namespace v0
}  // namespace mulligan
