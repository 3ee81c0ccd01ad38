// mulligan/base/random.h — the seedable pseudo-random source behind jitter.
//
// xoshiro256** (Blackman and Vigna, "Scrambled linear pseudorandom number
// generators", 2021) seeded through splitmix64, with doubles formed from the top
// 53 bits. Both are fully specified, so a seed gives the same sequence on every
// platform and compiler (std::uniform_real_distribution does not promise that),
// which is what lets the C++, C and Python suites share backoff vectors.
// Not cryptographic: idempotency keys use the OS CSPRNG (see idempotency.h).

#ifndef MULLIGAN_BASE_RANDOM_H_
#define MULLIGAN_BASE_RANDOM_H_

#include <cstdint>

namespace mulligan {
inline namespace v0 {

// Thread-safety: not thread-safe; give each thread or session its own.
class Random {
 public:
  // Seeds the state from `seed` through splitmix64.
  explicit Random(uint64_t seed);
  // Returns a generator seeded from std::random_device.
  static Random FromEntropy();

  // Returns the next 64 random bits.
  uint64_t NextU64();
  // Returns a double uniformly distributed in [0, 1).
  double NextDouble();
  // Returns a double uniformly distributed in [low, high) (low when low >= high).
  double Uniform(double low, double high);

 private:
  uint64_t state_[4];
};

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_BASE_RANDOM_H_
