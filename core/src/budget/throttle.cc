// core/src/budget/throttle.cc — the SRE book's client-side adaptive
// throttling (budget/throttle.h).

#include "mulligan/budget/throttle.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <random>
#include <string>

#include "internal/format.h"

namespace mulligan {
inline namespace v0 {

Status ValidateThrottleOptions(const ThrottleOptions& options) {
  std::string prefix = "throttle";
  if (!options.name.empty()) prefix += " '" + options.name + "'";
  if (options.window < std::chrono::milliseconds(1)) {
    return InvalidArgumentError(prefix + ": window must be >= 1 ms, got " +
                                internal::FormatSeconds(options.window));
  }
  if (!(options.k >= 1.0) || !std::isfinite(options.k)) {
    return InvalidArgumentError(
        prefix + ": k must be >= 1 and finite (with k < 1 a healthy backend is throttled), got " +
        internal::FormatDouble(options.k));
  }
  return OkStatus();
}

bool IsOverloadAnswer(const Outcome& outcome) {
  if (outcome.overload) return true;
  if (outcome.error == ErrorKind::kConnectionRefused) return true;
  if (outcome.error == ErrorKind::kNone && outcome.grpc_status >= 0) {
    return outcome.grpc_status == 8 || outcome.grpc_status == 14;
  }
  return outcome.error == ErrorKind::kNone &&
         (outcome.http_status == 429 || outcome.http_status == 503);
}

namespace {
std::mutex& SharedMutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::string, std::shared_ptr<AdaptiveThrottle>, std::less<>>& SharedMap() {
  static auto* map = new std::map<std::string, std::shared_ptr<AdaptiveThrottle>, std::less<>>();
  return *map;
}
constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;
}  // namespace

Result<std::shared_ptr<AdaptiveThrottle>> AdaptiveThrottle::Create(
    const ThrottleOptions& options) {
  Status status = ValidateThrottleOptions(options);
  if (!status.ok()) return status;
  uint64_t seed = 0;
  if (options.seed) {
    seed = *options.seed;
  } else {
    std::random_device device;
    seed = (static_cast<uint64_t>(device()) << 32) ^ device();
  }
  return std::shared_ptr<AdaptiveThrottle>(new AdaptiveThrottle(options, seed));
}

Result<std::shared_ptr<AdaptiveThrottle>> AdaptiveThrottle::Shared(
    const ThrottleOptions& options) {
  if (options.name.empty()) {
    return InvalidArgumentError("throttle: name must not be empty for a shared throttle");
  }
  std::lock_guard<std::mutex> lock(SharedMutex());
  auto& map = SharedMap();
  auto found = map.find(options.name);
  if (found != map.end()) return found->second;
  Result<std::shared_ptr<AdaptiveThrottle>> made = Create(options);
  if (!made.ok()) return made.status();
  map.emplace(options.name, made.value());
  return made;
}

void AdaptiveThrottle::ClearShared() {
  std::lock_guard<std::mutex> lock(SharedMutex());
  SharedMap().clear();
}

AdaptiveThrottle::AdaptiveThrottle(const ThrottleOptions& options, uint64_t seed)
    : options_(options), requests_(options.window), accepts_(options.window), rng_(seed) {}

double AdaptiveThrottle::NextDouble() {
  // splitmix64 (Steele, Lea and Flood, 2014) over an atomic state: each
  // draw advances the state by the golden gamma, then mixes it.
  uint64_t z = rng_.fetch_add(kGolden, std::memory_order_relaxed) + kGolden;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  z ^= z >> 31;
  return static_cast<double>(z >> 11) * (1.0 / 9007199254740992.0);
}

void AdaptiveThrottle::Fold(TimePoint now) {
  const uint64_t n = pending_.Drain();
  if (n != 0) accepts_.Add(now, static_cast<int64_t>(n));
}

int64_t AdaptiveThrottle::Accepts(TimePoint now) {
  Fold(now);
  return accepts_.Sum(now);
}

double AdaptiveThrottle::Probability(TimePoint now) {
  Fold(now);
  const double requests = static_cast<double>(requests_.Sum(now));
  const double accepts = static_cast<double>(accepts_.Sum(now));
  return std::max(0.0, (requests - options_.k * accepts) / (requests + 1.0));
}

bool AdaptiveThrottle::Admit(TimePoint now) {
  const double p = Probability(now);
  requests_.Add(now, 1);
  if (p <= 0.0) return true;
  if (NextDouble() < p) {
    rejected_.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

void AdaptiveThrottle::Record(const Outcome& outcome) {
  if (!IsOverloadAnswer(outcome)) pending_.Add(1);
}

}  // namespace v0
}  // namespace mulligan
