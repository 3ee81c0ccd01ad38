// xoshiro256** seeded by splitmix64 (reference code: prng.di.unimi.it, public domain).
#include "mulligan/base/random.h"

#include <random>

namespace mulligan {
inline namespace v0 {
namespace {

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

inline uint64_t RotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

}  // namespace

Random::Random(uint64_t seed) {
  uint64_t s = seed;
  for (uint64_t& word : state_) word = SplitMix64(s);
}

Random Random::FromEntropy() {
  std::random_device device;
  uint64_t seed = (static_cast<uint64_t>(device()) << 32) ^ device();
  return Random(seed);
}

uint64_t Random::NextU64() {
  const uint64_t result = RotateLeft(state_[1] * 5, 7) * 9;
  const uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = RotateLeft(state_[3], 45);
  return result;
}

double Random::NextDouble() {
  // The top 53 bits scaled by 2^-53: every value a multiple of 2^-53 in [0, 1).
  return static_cast<double>(NextU64() >> 11) * 0x1.0p-53;
}

double Random::Uniform(double low, double high) {
  if (!(low < high)) return low;
  return low + (high - low) * NextDouble();
}

}  // namespace v0
}  // namespace mulligan
