// mulligan/base/clock.h — injectable time: a monotonic clock, a wall clock, and a fake.
//
// The engine never reads time by itself: policies and sessions take `now` as an
// argument. The convenience loops (RetryCall, HttpClient) read a Clock and wait
// through it, so a FakeClock makes a whole retry chain run instantly and
// reproducibly in tests (Polly's TimeProvider, tenacity's patched sleep).

#ifndef MULLIGAN_BASE_CLOCK_H_
#define MULLIGAN_BASE_CLOCK_H_

#include <atomic>
#include <chrono>

namespace mulligan {
inline namespace v0 {

// All durations in the C++ API are nanoseconds held in std::chrono types.
using Duration = std::chrono::nanoseconds;
// Monotonic time (for deadlines, elapsed time, waits).
using TimePoint = std::chrono::steady_clock::time_point;
// Calendar time (only to interpret HTTP-date values such as Retry-After).
using WallTime = std::chrono::system_clock::time_point;

// The source of time for the convenience loops.
//
// Thread-safety: implementations must be safe to call from many threads.
class Clock {
 public:
  virtual ~Clock() = default;
  // Returns the current monotonic time.
  virtual TimePoint Now() const = 0;
  // Returns the current calendar time.
  virtual WallTime WallNow() const = 0;
  // Blocks the calling thread for `duration` (a FakeClock advances instead).
  // A zero or negative duration returns at once without a system call.
  virtual void SleepFor(Duration duration) = 0;
};

// The real clocks: std::chrono::steady_clock, system_clock and this_thread::sleep_for.
class SystemClock final : public Clock {
 public:
  TimePoint Now() const override;
  WallTime WallNow() const override;
  void SleepFor(Duration duration) override;
  // Returns the process-wide instance (never null, never destroyed).
  static SystemClock* Default();
};

// A clock that only moves when told to. SleepFor(d) advances it by d at once,
// so code that waits through the clock runs without real sleeping.
//
// The monotonic reading starts at `start` (default: a fixed arbitrary point,
// 1000 s after the steady clock's epoch) and the wall reading at `wall_start`
// (default: 2024-01-01T00:00:00Z); both advance together.
//
// Thread-safety: all methods are thread-safe (atomic).
class FakeClock final : public Clock {
 public:
  FakeClock();
  explicit FakeClock(WallTime wall_start);
  // Starts the monotonic reading at `start` and the wall reading at
  // `wall_start` (a front door that reads `now` as float seconds, such as
  // Python's mulligan.testing.FakeClock, starts both where it likes).
  FakeClock(TimePoint start, WallTime wall_start);

  TimePoint Now() const override;
  WallTime WallNow() const override;
  // Advances the clock by `duration` (negative durations are ignored).
  void SleepFor(Duration duration) override;
  // Same as SleepFor: moves both readings forward by `duration`.
  void Advance(Duration duration) { SleepFor(duration); }
  // Total time slept through SleepFor/Advance since construction.
  Duration TotalSlept() const { return Duration(offset_.load(std::memory_order_acquire)); }

 private:
  TimePoint start_;
  WallTime wall_start_;
  std::atomic<Duration::rep> offset_{0};
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_BASE_CLOCK_H_
