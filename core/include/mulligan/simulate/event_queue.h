// mulligan/simulate/event_queue.h — the virtual time of `mulligan simulate`:
// a discrete-event queue that drives a FakeClock. (Added in 0.6.)
//
// Every pending event is (time, client, kind): "client `client` acts at
// virtual time `time`". The queue is a binary heap (std::push_heap /
// std::pop_heap over a vector) ordered by time, then client id, then kind, so
// events at the same instant run in client order and a run is reproducible
// bit for bit. Pop advances the FakeClock to the popped event's time, so the
// engine parts that read the clock (a ratio budget's window, a breaker's
// reset timeout) see virtual time; time never moves backwards.
//
// Times are virtual nanoseconds since the start of the run (Duration).
//
// Thread-safety: not thread-safe; one queue belongs to one run.
#ifndef MULLIGAN_SIMULATE_EVENT_QUEUE_H_
#define MULLIGAN_SIMULATE_EVENT_QUEUE_H_

#include <cstdint>
#include <vector>

#include "mulligan/base/clock.h"

namespace mulligan {
inline namespace v0 {

// What a client does when its event comes up. (Added in 0.6.)
enum class SimEventKind : uint8_t {
  // Begin the client's next logical call, then admit its first attempt.
  kStartCall = 0,
  // Ask the pipeline to admit the next attempt (after a retry wait).
  kAttempt = 1,
  // The service's answer to the attempt in flight arrives.
  kAnswer = 2,
};

// One pending event. (Added in 0.6.)
struct SimEvent {
  Duration time = Duration::zero();  // virtual ns since the start of the run
  uint32_t client = 0;
  SimEventKind kind = SimEventKind::kStartCall;
};

// The event heap and the virtual clock it drives. (Added in 0.6.)
class EventQueue {
 public:
  // `clock` is advanced by Pop; its reading at construction is time zero.
  // REQUIRES: `clock` outlives the queue and nothing else advances it.
  explicit EventQueue(FakeClock* clock);

  // Schedules an event. An event in the past (before the current virtual
  // time) is scheduled at the current time instead.
  void Push(SimEvent event);
  // Removes and returns the earliest event and advances the clock to its
  // time. REQUIRES: !empty().
  SimEvent Pop();
  bool empty() const { return heap_.empty(); }
  size_t size() const { return heap_.size(); }
  // The current virtual time (ns since the start) and the clock's reading.
  Duration now() const { return now_; }
  TimePoint NowPoint() const { return origin_ + now_; }
  // Preallocates room for `n` pending events.
  void Reserve(size_t n) { heap_.reserve(n); }

 private:
  FakeClock* clock_;
  TimePoint origin_;
  Duration now_ = Duration::zero();
  std::vector<SimEvent> heap_;
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SIMULATE_EVENT_QUEUE_H_
