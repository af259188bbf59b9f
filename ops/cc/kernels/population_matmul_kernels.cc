// TensorFlow CPU kernels of the population ops: validate the inputs
// (every bad call becomes an InvalidArgument error naming the argument), then
// hand a PopulationMatmulProblem to the CPU math on TF's intra-op thread pool.
#include <cmath>
#include <algorithm>
#include <string>
#include <vector>

#include "population_matmul.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/register_types.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"

namespace workbench {
namespace {

using ::tensorflow::DEVICE_CPU;
using ::tensorflow::OpInputList;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;

// Checks that `tensor` has exactly `dims` (given names for the message).
absl::Status CheckShape(const Tensor& tensor, const char* name, std::initializer_list<int64_t> dims,
                        const char* layout) {
  bool ok = tensor.dims() == static_cast<int>(dims.size());
  int i = 0;
  for (int64_t d : dims) {
    if (!ok) break;
    ok = tensor.dim_size(i++) == d;
  }
  if (ok) return absl::OkStatus();
  TensorShape expected;
  for (int64_t d : dims) expected.AddDim(d);
  return absl::InvalidArgumentError(absl::StrCat(name, " must have shape ", layout, " = ", expected.DebugString(),
                                                 ", got ", tensor.shape().DebugString()));
}

// Fills the convolution geometry from the image shape and the op's attributes.
absl::Status MakeConvGeometry(const Tensor& x, const std::vector<int32_t>& kernel_size,
                              const std::vector<int32_t>& strides, bool same, ConvGeometry* g) {
  if (x.dims() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat("x must be [batch, height, width, channels], got ", x.shape().DebugString()));
  }
  g->enabled = true;
  g->height = x.dim_size(1);
  g->width = x.dim_size(2);
  g->channels = x.dim_size(3);
  g->kernel_h = kernel_size[0];
  g->kernel_w = kernel_size[1];
  g->stride_h = strides[0];
  g->stride_w = strides[1];
  if (same) {  // as tf.nn.conv2d: the extra padding goes after
    g->out_height = (g->height + g->stride_h - 1) / g->stride_h;
    g->out_width = (g->width + g->stride_w - 1) / g->stride_w;
    g->pad_top = std::max<int64_t>((g->out_height - 1) * g->stride_h + g->kernel_h - g->height, 0) / 2;
    g->pad_left = std::max<int64_t>((g->out_width - 1) * g->stride_w + g->kernel_w - g->width, 0) / 2;
  } else {
    g->out_height = g->height >= g->kernel_h ? (g->height - g->kernel_h) / g->stride_h + 1 : 0;
    g->out_width = g->width >= g->kernel_w ? (g->width - g->kernel_w) / g->stride_w + 1 : 0;
  }
  return absl::OkStatus();
}

template <typename T, bool kPerturbed, bool kConv>
class PopulationMatmulOp : public OpKernel {
 public:
  explicit PopulationMatmulOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("relu", &relu_));
    if (kConv) {
      std::string padding;
      OP_REQUIRES_OK(ctx, ctx->GetAttr("kernel_size", &kernel_size_));
      OP_REQUIRES_OK(ctx, ctx->GetAttr("strides", &strides_));
      OP_REQUIRES_OK(ctx, ctx->GetAttr("padding", &padding));
      OP_REQUIRES(ctx, kernel_size_.size() == 2 && kernel_size_[0] > 0 && kernel_size_[1] > 0,
                  absl::InvalidArgumentError("kernel_size must be two positive integers"));
      OP_REQUIRES(ctx, strides_.size() == 2 && strides_[0] > 0 && strides_[1] > 0,
                  absl::InvalidArgumentError("strides must be two positive integers"));
      same_padding_ = padding == "SAME";
      OP_REQUIRES_OK(ctx, ctx->GetAttr("input_scale", &input_scale_));
      OP_REQUIRES(ctx, std::isfinite(input_scale_),
                  absl::InvalidArgumentError(absl::StrCat("input_scale must be finite, got ", input_scale_)));
    }
  }

  void Compute(OpKernelContext* ctx) override {
    const char* indices_name = kPerturbed ? "parents" : "indices";
    const Tensor& x = ctx->input(0);
    const Tensor& weights = ctx->input(1);
    const Tensor& indices = ctx->input(2);
    PopulationMatmulProblem<T> p;
    if (kConv) {
      OP_REQUIRES_OK(ctx, MakeConvGeometry(x, kernel_size_, strides_, same_padding_, &p.conv));
    } else {
      OP_REQUIRES(ctx, x.dims() == 2 || x.dims() == 3,
                  absl::InvalidArgumentError(
                      absl::StrCat("x must be [batch, K] or [batch, rows, K], got ", x.shape().DebugString())));
    }
    OP_REQUIRES(
        ctx, weights.dims() == 3,
        absl::InvalidArgumentError(absl::StrCat("weights must be [slots, K, N], got ", weights.shape().DebugString())));
    OP_REQUIRES(ctx, weights.dim_size(0) > 0,
                absl::InvalidArgumentError("weights has 0 slots; a population needs at "
                                           "least one slot"));
    p.batch = x.dim_size(0);
    if (kConv) {
      p.rows = p.conv.out_height * p.conv.out_width;
      p.depth = p.conv.kernel_h * p.conv.kernel_w * p.conv.channels;
    } else {
      p.rows = x.dims() == 3 ? x.dim_size(1) : 1;
      p.depth = x.dim_size(x.dims() - 1);
    }
    p.num_slots = weights.dim_size(0);
    p.cols = weights.dim_size(2);
    p.relu = relu_;
    OP_REQUIRES(ctx, weights.dim_size(1) == p.depth,
                absl::InvalidArgumentError(
                    absl::StrCat(kConv ? "kernel_h * kernel_w * channels of x is K=" : "x has K=", p.depth,
                                 " but weights has K=", weights.dim_size(1), " (weights.shape[1])")));
    OP_REQUIRES_OK(ctx, CheckShape(indices, indices_name, {p.batch}, "[batch]"));

    // Slot indices come from callers' data: check every one.
    const auto slots = indices.flat<int32_t>();
    for (int64_t b = 0; b < p.batch; ++b) {
      OP_REQUIRES(
          ctx, slots(b) >= 0 && slots(b) < p.num_slots,
          absl::InvalidArgumentError(absl::StrCat(indices_name, "[", b, "] = ", slots(b), " is out of range [0, ",
                                                  p.num_slots, ") (number of weight slots)")));
    }

    OpInputList biases;
    OP_REQUIRES_OK(ctx, ctx->input_list("biases", &biases));
    OP_REQUIRES(ctx, biases.size() <= 1,
                absl::InvalidArgumentError(absl::StrCat("at most one biases tensor, got ", biases.size())));
    if (biases.size() == 1) {
      OP_REQUIRES_OK(ctx, CheckShape(biases[0], "biases", {p.num_slots, p.cols}, "[slots, N]"));
      p.bias = biases[0].flat<T>().data();
    }

    if (kPerturbed) {
      const Tensor& sigmas = ctx->input(3);
      const Tensor& factor_a = ctx->input(4);
      const Tensor& factor_b = ctx->input(5);
      OP_REQUIRES_OK(ctx, CheckShape(sigmas, "sigmas", {p.batch}, "[batch]"));
      OP_REQUIRES(ctx, factor_a.dims() == 3,
                  absl::InvalidArgumentError(
                      absl::StrCat("factor_a must be [batch, K, rank], got ", factor_a.shape().DebugString())));
      p.rank = factor_a.dim_size(2);
      OP_REQUIRES_OK(ctx, CheckShape(factor_a, "factor_a", {p.batch, p.depth, p.rank}, "[batch, K, rank]"));
      OP_REQUIRES_OK(ctx, CheckShape(factor_b, "factor_b", {p.batch, p.cols, p.rank}, "[batch, N, rank]"));
      OpInputList bias_noise;
      OP_REQUIRES_OK(ctx, ctx->input_list("bias_noise", &bias_noise));
      OP_REQUIRES(ctx, bias_noise.size() <= 1,
                  absl::InvalidArgumentError(absl::StrCat("at most one bias_noise tensor, got ", bias_noise.size())));
      if (bias_noise.size() == 1) {
        OP_REQUIRES_OK(ctx, CheckShape(bias_noise[0], "bias_noise", {p.batch, p.cols}, "[batch, N]"));
        p.bias_noise = bias_noise[0].flat<float>().data();
      }
      p.sigmas = sigmas.flat<float>().data();
      p.factor_a = factor_a.flat<float>().data();
      p.factor_b = factor_b.flat<float>().data();
    }

    TensorShape out_shape = x.shape();
    if (kConv) {
      out_shape.set_dim(1, p.conv.out_height);
      out_shape.set_dim(2, p.conv.out_width);
    }
    out_shape.set_dim(x.dims() - 1, p.cols);
    Tensor* y = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, out_shape, &y));
    if (y->NumElements() == 0) return;
    if (x.dtype() == tensorflow::DT_UINT8) {  // conv only (the op's type constraint)
      p.x_uint8 = x.flat<uint8_t>().data();
      p.x_scale = input_scale_;
    } else {
      OP_REQUIRES(ctx, !kConv || input_scale_ == 1.0f,
                  absl::InvalidArgumentError(absl::StrCat("input_scale applies to uint8 x; float32 x needs "
                                                          "input_scale = 1, got ",
                                                          input_scale_)));
      p.x = x.flat<float>().data();  // images when kConv
    }
    p.weights = weights.flat<T>().data();
    p.slots = slots.data();
    p.y = y->flat<float>().data();

    auto* workers = ctx->device()->tensorflow_cpu_worker_threads();
    auto parallel_for = [workers](int64_t total, const std::function<void(int64_t, int64_t)>& fn) {
      if (total <= 1 || workers->num_threads <= 1) {
        fn(0, total);
        return;
      }
      workers->workers->ParallelFor(total, tsl::thread::ThreadPool::SchedulingParams::Fixed(1), fn);
    };
    RunPopulationMatmul<T>(p, workers->num_threads, parallel_for);
  }

 private:
  bool relu_ = false;
  std::vector<int32_t> kernel_size_, strides_;  // conv only
  bool same_padding_ = true;                    // conv only
  float input_scale_ = 1.0f;                    // conv only: uint8 x's scale
};

#define REGISTER_POPULATION_MATMUL(T)                                                                            \
  REGISTER_KERNEL_BUILDER(Name("Workbench>PopulationMatmul").Device(DEVICE_CPU).TypeConstraint<T>("T"),          \
                          PopulationMatmulOp<T, false, false>);                                                  \
  REGISTER_KERNEL_BUILDER(Name("Workbench>PerturbedPopulationMatmul").Device(DEVICE_CPU).TypeConstraint<T>("T"), \
                          PopulationMatmulOp<T, true, false>);                                                   \
  REGISTER_KERNEL_BUILDER(Name("Workbench>PopulationConv2D").Device(DEVICE_CPU).TypeConstraint<T>("T"),          \
                          PopulationMatmulOp<T, false, true>);                                                   \
  REGISTER_KERNEL_BUILDER(Name("Workbench>PerturbedPopulationConv2D").Device(DEVICE_CPU).TypeConstraint<T>("T"), \
                          PopulationMatmulOp<T, true, true>);

REGISTER_POPULATION_MATMUL(float);
REGISTER_POPULATION_MATMUL(Eigen::bfloat16);

#undef REGISTER_POPULATION_MATMUL

}  // namespace
}  // namespace workbench
