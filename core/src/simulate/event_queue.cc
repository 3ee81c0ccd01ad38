// core/src/simulate/event_queue.cc — the discrete-event heap (event_queue.h).
#include "mulligan/simulate/event_queue.h"

#include <algorithm>
#include <tuple>

namespace mulligan {
inline namespace v0 {
namespace {

// std::push_heap keeps the largest element first: "later" is the "less".
bool Later(const SimEvent& a, const SimEvent& b) {
  return std::make_tuple(a.time, a.client, a.kind) > std::make_tuple(b.time, b.client, b.kind);
}

}  // namespace

EventQueue::EventQueue(FakeClock* clock) : clock_(clock), origin_(clock->Now()) {}

void EventQueue::Push(SimEvent event) {
  if (event.time < now_) event.time = now_;
  heap_.push_back(event);
  std::push_heap(heap_.begin(), heap_.end(), Later);
}

SimEvent EventQueue::Pop() {
  std::pop_heap(heap_.begin(), heap_.end(), Later);
  const SimEvent event = heap_.back();
  heap_.pop_back();
  if (event.time > now_) {
    clock_->Advance(event.time - now_);
    now_ = event.time;
  }
  return event;
}

}  // namespace v0
}  // namespace mulligan
