// core/src/simulate/event_queue.cc — the discrete-event heap (event_queue.h).
#include "mulligan/simulate/event_queue.h"

#include <algorithm>

namespace mulligan {
inline namespace v0 {
namespace {

// std::push_heap keeps the largest element first: "later" is the "less".
// Ordered by (time, client, kind, copy); the last three compared as one word.
inline bool Later(const SimEvent& a, const SimEvent& b) {
  if (a.time != b.time) return a.time > b.time;
  const uint64_t ka =
      (uint64_t{a.client} << 16) | (uint64_t{static_cast<uint8_t>(a.kind)} << 8) | a.copy;
  const uint64_t kb =
      (uint64_t{b.client} << 16) | (uint64_t{static_cast<uint8_t>(b.kind)} << 8) | b.copy;
  return ka > kb;
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
