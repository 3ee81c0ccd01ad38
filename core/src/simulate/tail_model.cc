// core/src/simulate/tail_model.cc — the server with a latency tail
// (service_model.h states the rule). (Added in 0.6.)
#include "mulligan/simulate/service_model.h"

namespace mulligan {
inline namespace v0 {

ServiceAnswer TailModel::Serve(Duration arrival, uint32_t /*client*/) {
  ++received_;
  ServiceAnswer answer;
  const bool slow = options_.tail_every > 0 ? received_ % options_.tail_every == 0
                                            : random_.NextDouble() < options_.tail_fraction;
  answer.done = arrival + (slow ? options_.tail_latency : options_.latency);
  answer.outcome = Outcome::Success();
  return answer;
}

}  // namespace v0
}  // namespace mulligan
