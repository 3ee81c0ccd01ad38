// mulligan/simulate/event_queue.h — the virtual time of `mulligan simulate`:
// a discrete-event queue that drives a FakeClock. (Added in 0.6.)
//
// Every pending event is (time, client, kind, copy): "client `client` acts at
// virtual time `time`". The queue is a binary heap (std::push_heap /
// std::pop_heap over a vector) ordered by time, then client id, then kind,
// then copy, so events at the same instant run in client order and a run is
// reproducible bit for bit. A client's answers come before its own attempt at
// the same instant (0.6, for hedging: a copy answered exactly when the hedging
// delay runs out wins before a hedge starts; a client that retries never has
// both pending at once). Pop advances the FakeClock to the popped event's time, so the
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
  // The service's answer to the attempt in flight (hedging: to copy `copy`)
  // arrives.
  kAnswer = 1,
  // Ask the pipeline to admit the next attempt (after a retry wait), or the
  // hedged call whether its next copy may start (after a hedging delay).
  kAttempt = 2,
};

// One pending event. (Added in 0.6.)
struct SimEvent {
  Duration time = Duration::zero();  // virtual ns since the start of the run
  uint32_t client = 0;
  SimEventKind kind = SimEventKind::kStartCall;
  // kAnswer of a hedged call: the copy answered (1-based); 0 otherwise.
  // (Added in 0.6.)
  uint8_t copy = 0;
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
