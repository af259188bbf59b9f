// Population matmul math, free of TensorFlow kernel plumbing: a problem
// description and the CPU functor that plans and runs it on a thread pool.
#ifndef WORKBENCH_OPS_KERNELS_POPULATION_MATMUL_H_
#define WORKBENCH_OPS_KERNELS_POPULATION_MATMUL_H_

#include <cstdint>
#include <functional>

#include "Eigen/Core"

namespace workbench {

// A convolution seen as a matmul: row r of member b is the patch of output
// position r (row-major over [out_height, out_width]) of image x[b]
// [height, width, channels], flattened as [kernel_h, kernel_w, channels] and
// zero outside the image. Patches are built on the fly in cache-sized blocks;
// nothing im2col-sized is written to memory.
struct ConvGeometry {
  bool enabled = false;
  int64_t height = 0, width = 0, channels = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1;
  int64_t pad_top = 0, pad_left = 0, out_height = 0, out_width = 0;
};

// All pointers are dense row-major buffers. Optional inputs are nullptr.
template <typename T>
struct PopulationMatmulProblem {
  const float* x = nullptr;  // [batch, rows, depth], or images (conv)
  // Convolutions only: uint8 images instead of x, read as float(x) * x_scale.
  const uint8_t* x_uint8 = nullptr;
  float x_scale = 1.0f;
  const T* weights = nullptr;      // [slots, depth, cols]
  const int32_t* slots = nullptr;  // [batch], validated in [0, num_slots)
  const T* bias = nullptr;         // [num_slots, cols] or nullptr
  // Low-rank perturbation of member b: sigmas[b] * factor_a[b] @ factor_b[b]^T.
  const float* sigmas = nullptr;      // [batch] or nullptr (no perturbation)
  const float* factor_a = nullptr;    // [batch, depth, rank]
  const float* factor_b = nullptr;    // [batch, cols, rank]
  const float* bias_noise = nullptr;  // [batch, cols] or nullptr
  int64_t batch = 0, rows = 0, depth = 0, cols = 0, num_slots = 0, rank = 0;
  bool relu = false;
  ConvGeometry conv;   // rows, depth derive from it when enabled
  float* y = nullptr;  // [batch, rows, cols]
};

// Runs fn(begin, end) over [0, total) in parallel, returning when all is done.
using ParallelFor = std::function<void(int64_t total, const std::function<void(int64_t, int64_t)>& fn)>;

// Computes problem.y. `num_threads` only guides how finely work is split.
template <typename T>
void RunPopulationMatmul(const PopulationMatmulProblem<T>& problem, int num_threads, const ParallelFor& parallel_for);

extern template void RunPopulationMatmul<float>(const PopulationMatmulProblem<float>&, int, const ParallelFor&);
extern template void RunPopulationMatmul<Eigen::bfloat16>(const PopulationMatmulProblem<Eigen::bfloat16>&, int,
                                                          const ParallelFor&);

}  // namespace workbench

#endif  // WORKBENCH_OPS_KERNELS_POPULATION_MATMUL_H_
