// core/src/limits/redis_rate_limiter.cc — the GCRA cells of a shared rate
// limiter in Redis: two Lua scripts (acquire, penalize), one key and one
// round trip each (limits/redis_rate_limiter.h).

#include "mulligan/limits/redis_rate_limiter.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

namespace mulligan {
inline namespace v0 {
namespace {

// ARGV: now_us, interval_us, tolerance_us, bound_us (-1: unbounded).
// Replies {1, wait_us} admitted after wait_us (the slot is taken), or
// {0, wait_us} refused (nothing written). The rule of rate_limiter.h:
//   tat = max(TAT, now); wait = max(0, tat - tau - now);
//   wait <= bound: TAT = tat + T (expiring when it passes).
// Not retry-safe: a second run takes a second slot.
const RedisScript& AcquireScript() {
  static const RedisScript* script = new RedisScript(R"lua(
local now = tonumber(ARGV[1])
local t = tonumber(ARGV[2])
local tau = tonumber(ARGV[3])
local bound = tonumber(ARGV[4])
local tat = tonumber(redis.call('GET', KEYS[1]) or now) or now
if tat < now then tat = now end
local wait = tat - tau - now
if wait < 0 then wait = 0 end
if bound >= 0 and wait > bound then return {0, wait} end
local new = tat + t
redis.call('SET', KEYS[1], string.format('%.0f', new), 'PX', math.ceil((new - now) / 1000))
return {1, wait}
)lua");
  return *script;
}

// ARGV: now_us, target_us. TAT = max(TAT, target) (Penalize). Safe to repeat.
const RedisScript& PenalizeScript() {
  static const RedisScript* script = new RedisScript(R"lua(
local now = tonumber(ARGV[1])
local target = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or 0) or 0
if target <= tat or target <= now then return 0 end
redis.call('SET', KEYS[1], string.format('%.0f', target), 'PX', math.ceil((target - now) / 1000))
return 1
)lua",
                                                     /*retry_safe=*/true);
  return *script;
}

// Nanoseconds to the nearest microsecond (halves up), for positive values.
int64_t RoundMicros(int64_t ns) {
  if (ns >= std::numeric_limits<int64_t>::max() - 500) return ns / 1000;
  return (ns + 500) / 1000;
}

int64_t FloorMicros(Duration d) {
  const int64_t ns = d.count();
  return ns >= 0 ? ns / 1000 : -((-ns + 999) / 1000);
}

std::string Escape(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (const char c : name) {
    if (c == '%') {
      out += "%25";
    } else if (c == ':') {
      out += "%3A";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

std::string CellName(std::string_view name, std::string_view key) {
  std::string cell = Escape(name);
  if (!key.empty()) {
    cell.push_back(':');
    cell.append(key.data(), key.size());
  }
  return cell;
}

class RedisRateCells final : public RateLimiterBackend {
 public:
  explicit RedisRateCells(std::shared_ptr<RedisState> state) : state_(std::move(state)) {
    // The wall reading is bracketed by two monotonic ones and the tightest
    // of a few brackets kept: a thread preempted between two readings would
    // otherwise shift this process's time scale by the preemption.
    Clock& clock = state_->clock();
    Duration best = Duration::max();
    for (int i = 0; i < 5 && best > std::chrono::microseconds(1); ++i) {
      const TimePoint before = clock.Now();
      const WallTime wall = clock.WallNow();
      const TimePoint after = clock.Now();
      if (after - before < best) {
        best = after - before;
        anchor_ = before + (after - before) / 2;
        anchor_wall_us_ = FloorMicros(wall.time_since_epoch());
      }
    }
  }

  Result<RateDecision> Acquire(const RateCellRequest& r) override {
    const int64_t interval_us = std::max<int64_t>(1, RoundMicros(r.interval_ns));
    const int64_t bound_us = r.max_wait_ns == std::numeric_limits<int64_t>::max()
                                 ? -1
                                 : r.max_wait_ns / 1000;  // a partial microsecond is no wait
    Result<RedisValue> reply = state_->Eval(
        AcquireScript(), {state_->Key("limiter", CellName(r.name, r.key))},
        {std::to_string(UnixMicros(r.now)), std::to_string(interval_us),
         std::to_string(RoundMicros(r.tolerance_ns)), std::to_string(bound_us)});
    if (!reply.ok()) return reply.status();
    const RedisValue& v = reply.value();
    if (v.type != RedisValue::Type::kArray || v.elements.size() != 2 ||
        v.elements[0].type != RedisValue::Type::kInteger ||
        v.elements[1].type != RedisValue::Type::kInteger) {
      return StateUnavailableError("redis at " + state_->endpoint() +
                                   ": the rate limiter script answered an unexpected reply");
    }
    RateDecision d;
    const Duration wait = std::chrono::microseconds(std::max<int64_t>(0, v.elements[1].integer));
    d.admitted = v.elements[0].integer == 1;
    if (d.admitted) {
      d.wait = wait;
    } else {
      d.retry_in = wait;
    }
    return d;
  }

  Status Penalize(std::string_view name, std::string_view key, TimePoint until,
                  int64_t tolerance_ns) override {
    const int64_t now_us = UnixMicros(state_->clock().Now());
    const int64_t target_us = UnixMicros(until) + RoundMicros(tolerance_ns);
    Result<RedisValue> reply =
        state_->Eval(PenalizeScript(), {state_->Key("limiter", CellName(name, key))},
                     {std::to_string(now_us), std::to_string(target_us)});
    return reply.ok() ? OkStatus() : reply.status();
  }

  const char* kind() const override { return "redis"; }

 private:
  int64_t UnixMicros(TimePoint now) const { return anchor_wall_us_ + FloorMicros(now - anchor_); }

  std::shared_ptr<RedisState> state_;
  TimePoint anchor_;
  int64_t anchor_wall_us_ = 0;
};

}  // namespace

std::string RedisRateLimiterKey(const RedisState& state, std::string_view name,
                                std::string_view key) {
  return state.Key("limiter", CellName(name, key));
}

Result<std::shared_ptr<RateLimiterBackend>> CreateRedisRateLimiterBackend(
    std::shared_ptr<RedisState> state) {
  if (state == nullptr) return InvalidArgumentError("rate limiter state must not be null");
  return std::shared_ptr<RateLimiterBackend>(std::make_shared<RedisRateCells>(std::move(state)));
}

Result<std::shared_ptr<RateLimiter>> CreateRedisRateLimiter(std::shared_ptr<RedisState> state,
                                                            RateLimiterOptions options) {
  if (state == nullptr) return InvalidArgumentError("rate limiter state must not be null");
  if (Status s = ValidateSharedName(options.name); !s.ok()) return s;
  options.backend = std::make_shared<RedisRateCells>(std::move(state));
  return RateLimiter::Create(options);
}

}  // namespace v0
}  // namespace mulligan
