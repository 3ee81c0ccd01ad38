// core/src/base/clock.cc — the system clock and the fake clock.
#include "mulligan/base/clock.h"

#include <thread>

namespace mulligan {
inline namespace v0 {

TimePoint SystemClock::Now() const { return std::chrono::steady_clock::now(); }

WallTime SystemClock::WallNow() const { return std::chrono::system_clock::now(); }

void SystemClock::SleepFor(Duration duration) {
  if (duration <= Duration::zero()) return;  // no system call for a zero wait
  std::this_thread::sleep_for(duration);
}

SystemClock* SystemClock::Default() {
  // Leaked on purpose: usable from static destructors of other objects.
  static SystemClock* const instance = new SystemClock();
  return instance;
}

namespace {
// 2024-01-01T00:00:00Z in seconds since the Unix epoch.
constexpr int64_t kDefaultWallStartUnixSeconds = 1704067200;
}  // namespace

FakeClock::FakeClock()
    : FakeClock(WallTime(std::chrono::seconds(kDefaultWallStartUnixSeconds))) {}

FakeClock::FakeClock(WallTime wall_start)
    : FakeClock(TimePoint(std::chrono::seconds(1000)), wall_start) {}

FakeClock::FakeClock(TimePoint start, WallTime wall_start)
    : start_(start), wall_start_(wall_start) {}

TimePoint FakeClock::Now() const {
  return start_ + Duration(offset_.load(std::memory_order_acquire));
}

WallTime FakeClock::WallNow() const {
  return wall_start_ +
         std::chrono::duration_cast<WallTime::duration>(
             Duration(offset_.load(std::memory_order_acquire)));
}

void FakeClock::SleepFor(Duration duration) {
  if (duration <= Duration::zero()) return;
  offset_.fetch_add(duration.count(), std::memory_order_acq_rel);
}

}  // namespace v0
}  // namespace mulligan
