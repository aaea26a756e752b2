// A portable seeded generator for fixture weights: the same seed gives the same bytes on every
// machine and compiler, because it uses only integer arithmetic and one exact int->double scaling.
#pragma once

#include <cstdint>
#include <string_view>

namespace glm5c::fixture {

inline uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// FNV-1a of a name, to derive independent streams per tensor.
inline uint64_t hashName(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s)
    h = (h ^ c) * 0x100000001b3ull;
  return h;
}

// xoshiro256** (Blackman & Vigna), seeded through splitmix64.
class Rng {
public:
  Rng(uint64_t seed, uint64_t stream) {
    uint64_t st = seed ^ (stream * 0xd1342543de82ef95ull);
    for (uint64_t &w : s_)
      w = splitmix64(st);
  }
  uint64_t next() {
    uint64_t result = rotl(s_[1] * 5, 7) * 9;
    uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }
  // Uniform in [0, 1) with 53 random bits (exact).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }
  // Approximately standard normal: the Irwin-Hall sum of twelve 16-bit uniforms, centred.
  // Integer sum, then one exact scaling: bit-identical everywhere (no libm). Mean 0, variance
  // 1 - 2^-32; the tails stop at +-6, which random test weights never miss.
  double normal() {
    uint64_t a = next(), b = next(), c = next();
    int64_t sum = 0;
    for (uint64_t w : {a, b, c})
      sum += static_cast<int64_t>((w & 0xffff) + ((w >> 16) & 0xffff) + ((w >> 32) & 0xffff) +
                                  (w >> 48));
    // Each 16-bit uniform has mean 32767.5; twelve have mean 393210 and variance ~65536^2.
    return static_cast<double>(2 * sum - 786420) * (1.0 / 131072.0);
  }

private:
  static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
  uint64_t s_[4];
};

} // namespace glm5c::fixture
