// SplitMix64: the random stream of the simulators' own randomness (Atari no-op
// counts and sticky actions, MuJoCo reset noise), seeded per episode so that
// an episode depends only on its seed and actions, on every machine and thread
// count. workbench/envs/rng.py mirrors it bit for bit in Python.
#ifndef WORKBENCH_OPS_KERNELS_SPLITMIX64_H_
#define WORKBENCH_OPS_KERNELS_SPLITMIX64_H_

#include <cmath>
#include <cstdint>

namespace workbench {

class SplitMix64 {
 public:
  void Seed(uint64_t seed) { state_ = seed; }
  uint64_t Next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // A double in [0, 1) from the top 53 bits.
  double Uniform() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  // A standard normal draw from two uniforms (Box-Muller, cosine branch only):
  // sqrt(-2 log(1 - u1)) * cos(2 pi u2), with the C library's log and cos.
  double Normal() {
    const double u1 = Uniform(), u2 = Uniform();
    return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(6.283185307179586 * u2);
  }

 private:
  uint64_t state_ = 0;
};

}  // namespace workbench

#endif  // WORKBENCH_OPS_KERNELS_SPLITMIX64_H_
