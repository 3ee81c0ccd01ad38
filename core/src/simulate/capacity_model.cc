// core/src/simulate/capacity_model.cc — the server of capacity C with an
// outage (service_model.h states the rule).
#include <algorithm>
#include <cmath>

#include "mulligan/simulate/service_model.h"

namespace mulligan {
inline namespace v0 {

CapacityModel::CapacityModel(const CapacityModelOptions& options)
    : options_(options),
      per_window_(std::max<int64_t>(
          1, static_cast<int64_t>(std::floor(
                 options.capacity_per_s *
                 std::chrono::duration<double>(options.window).count())))) {}

ServiceAnswer CapacityModel::Serve(Duration arrival, uint32_t /*client*/) {
  ServiceAnswer answer;
  answer.done = arrival + options_.latency;
  if (arrival >= options_.outage_start &&
      arrival < options_.outage_start + options_.outage_duration) {
    answer.during_outage = true;
    answer.outcome = Outcome::Http(503);
    return answer;
  }
  const int64_t window = arrival.count() / options_.window.count();
  if (window != window_index_) {
    window_index_ = window;
    served_in_window_ = 0;
  }
  if (served_in_window_ < per_window_) {
    ++served_in_window_;
    answer.outcome = Outcome::Success();
  } else {
    answer.overloaded = true;
    answer.outcome = Outcome::Http(503);
  }
  return answer;
}

}  // namespace v0
}  // namespace mulligan
