// The random numbers of HMMER 3.3.2's domain definition: Easel's "fast" generator (a
// 32-bit linear congruential generator with Knuth's multiplier), seeded as
// esl_randomness_Init seeds it, and the choice rule of esl_rnd_FChoose. hmmsearch reseeds
// it (default seed 42) before it samples the traces of each multi-domain region, so a
// region's samples depend on the seed and the region only, never on which thread or in
// which order targets were searched.
#pragma once

#include <cstdint>

namespace duet {

class HmmerRandom {
 public:
  explicit HmmerRandom(std::uint32_t seed = 42) { reseed(seed); }

  // Back to the state a fresh generator of `seed` (> 0) has.
  void reseed(std::uint32_t seed) {
    seed_ = seed;
    x_ = mix(seed, 87654321u, 12345678u);
    if (x_ == 0) x_ = 42;
  }
  std::uint32_t seed() const { return seed_; }

  // Uniform on [0, 1).
  double uniform() {
    x_ = x_ * 69069u + 1u;
    return static_cast<double>(x_) / 4294967296.0;
  }

  // An index drawn from the n probabilities p (summing to about 1): the first i whose
  // running sum, in double, divided by the whole sum exceeds one uniform draw.
  int choose(const float* p, int n) {
    double norm = 0.0;
    for (int i = 0; i < n; ++i) norm += p[i];
    const double roll = uniform();
    double sum = 0.0;
    for (int i = 0; i < n; ++i) {
      sum += static_cast<double>(p[i]);
      if (roll < sum / norm) return i;
    }
    return n - 1;  // only for a degenerate p (all zero or NaN)
  }

 private:
  // Bob Jenkins' 96-bit mix, as Easel spreads a seed over the generator's state.
  static std::uint32_t mix(std::uint32_t a, std::uint32_t b, std::uint32_t c) {
    // clang-format off
    a -= b; a -= c; a ^= (c >> 13);
    b -= c; b -= a; b ^= (a << 8);
    c -= a; c -= b; c ^= (b >> 13);
    a -= b; a -= c; a ^= (c >> 12);
    b -= c; b -= a; b ^= (a << 16);
    c -= a; c -= b; c ^= (b >> 5);
    a -= b; a -= c; a ^= (c >> 3);
    b -= c; b -= a; b ^= (a << 10);
    c -= a; c -= b; c ^= (b >> 15);
    // clang-format on
    return c;
  }

  std::uint32_t seed_ = 42, x_ = 0;
};

}  // namespace duet
