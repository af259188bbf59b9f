// Registration and shape functions of the population ops.
//
// PopulationMatmul: y[b] = act(x[b] @ weights[indices[b]] + biases[indices[b]])
// PopulationConv2D: the same with x[b] an image and its rows the patches
//   (im2col, built on the fly) of a convolution.
// Perturbed*: member b's weights replaced by
//   weights[parents[b]] + sigmas[b] * factor_a[b] @ factor_b[b]^T
// (a rank-R perturbation, EGGROLL) and its bias by
//   biases[parents[b]] + sigmas[b] * bias_noise[b].
// The kernels live in ../kernels/; the math in population_matmul_cpu.cc.
#include <string>

#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace workbench {
namespace {

using ::tensorflow::shape_inference::DimensionHandle;
using ::tensorflow::shape_inference::InferenceContext;
using ::tensorflow::shape_inference::ShapeHandle;

// Checks the rank of a named input; unknown ranks pass (checked again at run
// time by the kernel).
absl::Status CheckRank(InferenceContext* c, ShapeHandle shape, const char* name, int min_rank, int max_rank,
                       const char* layout) {
  if (!InferenceContext::RankKnown(shape)) return absl::OkStatus();
  const int rank = InferenceContext::Rank(shape);
  if (rank < min_rank || rank > max_rank) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be ", layout, ", got shape ", c->DebugString(shape)));
  }
  return absl::OkStatus();
}

// Merges two dimensions that must agree; the error names both arguments.
absl::Status MergeNamed(InferenceContext* c, DimensionHandle a, DimensionHandle b, const std::string& what,
                        DimensionHandle* out) {
  if (!c->Merge(a, b, out).ok()) {
    return absl::InvalidArgumentError(absl::StrCat(what, " disagree: ", c->DebugString(a), " vs ", c->DebugString(b)));
  }
  return absl::OkStatus();
}

// Output size of one spatial dimension (as tf.nn.conv2d), or -1 if unknown.
int64_t ConvOutputSize(int64_t input, int64_t kernel, int64_t stride, bool same) {
  if (input < 0) return -1;
  if (same) return (input + stride - 1) / stride;
  return input >= kernel ? (input - kernel) / stride + 1 : 0;
}

absl::Status PopulationMatmulShape(InferenceContext* c, bool perturbed, bool conv) {
  ShapeHandle x = c->input(0);
  ShapeHandle weights = c->input(1);
  ShapeHandle indices = c->input(2);
  const char* indices_name = perturbed ? "parents" : "indices";
  if (conv) {
    TF_RETURN_IF_ERROR(CheckRank(c, x, "x", 4, 4, "[batch, height, width, channels]"));
  } else {
    TF_RETURN_IF_ERROR(CheckRank(c, x, "x", 2, 3, "[batch, K] or [batch, rows, K]"));
  }
  TF_RETURN_IF_ERROR(CheckRank(c, weights, "weights", 3, 3, "[slots, K, N]"));
  TF_RETURN_IF_ERROR(CheckRank(c, indices, indices_name, 1, 1, "[batch]"));
  TF_RETURN_IF_ERROR(c->WithRankAtLeast(x, 2, &x));
  TF_RETURN_IF_ERROR(c->WithRank(weights, 3, &weights));
  TF_RETURN_IF_ERROR(c->WithRank(indices, 1, &indices));

  DimensionHandle slots = c->Dim(weights, 0);
  if (InferenceContext::ValueKnown(slots) && InferenceContext::Value(slots) == 0) {
    return absl::InvalidArgumentError("weights has 0 slots; a population needs at least one slot");
  }
  DimensionHandle batch, depth;
  TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(x, 0), c->Dim(indices, 0),
                                absl::StrCat("x.shape[0] and ", indices_name, ".shape[0] (batch)"), &batch));
  std::vector<int32_t> kernel_size, strides;
  std::string padding;
  if (conv) {
    TF_RETURN_IF_ERROR(c->GetAttr("kernel_size", &kernel_size));
    TF_RETURN_IF_ERROR(c->GetAttr("strides", &strides));
    TF_RETURN_IF_ERROR(c->GetAttr("padding", &padding));
    if (kernel_size.size() != 2 || strides.size() != 2 || kernel_size[0] < 1 || kernel_size[1] < 1 || strides[0] < 1 ||
        strides[1] < 1) {
      return absl::InvalidArgumentError("kernel_size and strides must each be two positive integers");
    }
    DimensionHandle channels = c->Dim(x, 3);
    DimensionHandle patch = c->UnknownDim();
    if (InferenceContext::ValueKnown(channels)) {
      patch = c->MakeDim(int64_t{kernel_size[0]} * kernel_size[1] * InferenceContext::Value(channels));
    }
    TF_RETURN_IF_ERROR(
        MergeNamed(c, patch, c->Dim(weights, 1), "kernel_h * kernel_w * x.shape[3] and weights.shape[1] (K)", &depth));
  } else {
    TF_RETURN_IF_ERROR(
        MergeNamed(c, c->Dim(x, -1), c->Dim(weights, 1), "x.shape[-1] and weights.shape[1] (K)", &depth));
  }
  DimensionHandle cols = c->Dim(weights, 2);

  std::vector<ShapeHandle> biases;
  TF_RETURN_IF_ERROR(c->input("biases", &biases));
  for (ShapeHandle bias : biases) {
    TF_RETURN_IF_ERROR(CheckRank(c, bias, "biases", 2, 2, "[slots, N]"));
    TF_RETURN_IF_ERROR(c->WithRank(bias, 2, &bias));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(bias, 0), slots, "biases.shape[0] and weights.shape[0] (slots)", &slots));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(bias, 1), cols, "biases.shape[1] and weights.shape[2] (N)", &cols));
  }

  if (perturbed) {
    ShapeHandle sigmas = c->input(3);
    ShapeHandle factor_a = c->input(4);
    ShapeHandle factor_b = c->input(5);
    TF_RETURN_IF_ERROR(CheckRank(c, sigmas, "sigmas", 1, 1, "[batch]"));
    TF_RETURN_IF_ERROR(CheckRank(c, factor_a, "factor_a", 3, 3, "[batch, K, rank]"));
    TF_RETURN_IF_ERROR(CheckRank(c, factor_b, "factor_b", 3, 3, "[batch, N, rank]"));
    TF_RETURN_IF_ERROR(c->WithRank(sigmas, 1, &sigmas));
    TF_RETURN_IF_ERROR(c->WithRank(factor_a, 3, &factor_a));
    TF_RETURN_IF_ERROR(c->WithRank(factor_b, 3, &factor_b));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(sigmas, 0), batch, "sigmas.shape[0] and batch", &batch));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(factor_a, 0), batch, "factor_a.shape[0] and batch", &batch));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(factor_b, 0), batch, "factor_b.shape[0] and batch", &batch));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(factor_a, 1), depth, "factor_a.shape[1] and K", &depth));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(factor_b, 1), cols, "factor_b.shape[1] and N", &cols));
    DimensionHandle rank;
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(factor_a, 2), c->Dim(factor_b, 2),
                                  "factor_a.shape[2] and factor_b.shape[2] (rank)", &rank));
    std::vector<ShapeHandle> bias_noise;
    TF_RETURN_IF_ERROR(c->input("bias_noise", &bias_noise));
    for (ShapeHandle noise : bias_noise) {
      TF_RETURN_IF_ERROR(CheckRank(c, noise, "bias_noise", 2, 2, "[batch, N]"));
      TF_RETURN_IF_ERROR(c->WithRank(noise, 2, &noise));
      TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(noise, 0), batch, "bias_noise.shape[0] and batch", &batch));
      TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(noise, 1), cols, "bias_noise.shape[1] and N", &cols));
    }
  }

  if (conv) {
    const bool same = padding == "SAME";
    const int64_t out_h = ConvOutputSize(InferenceContext::Value(c->Dim(x, 1)), kernel_size[0], strides[0], same);
    const int64_t out_w = ConvOutputSize(InferenceContext::Value(c->Dim(x, 2)), kernel_size[1], strides[1], same);
    c->set_output(0, c->MakeShape({batch, out_h < 0 ? c->UnknownDim() : c->MakeDim(out_h),
                                   out_w < 0 ? c->UnknownDim() : c->MakeDim(out_w), cols}));
  } else if (InferenceContext::RankKnown(x) && InferenceContext::Rank(x) == 2) {
    c->set_output(0, c->MakeShape({batch, cols}));
  } else if (InferenceContext::RankKnown(x)) {
    c->set_output(0, c->MakeShape({batch, c->Dim(x, 1), cols}));
  } else {
    c->set_output(0, c->UnknownShape());
  }
  return absl::OkStatus();
}

}  // namespace

REGISTER_OP("Workbench>PopulationMatmul")
    .Input("x: float")
    .Input("weights: T")
    .Input("indices: int32")
    .Input("biases: num_biases * T")
    .Output("y: float")
    .Attr("T: {float, bfloat16}")
    .Attr("num_biases: int >= 0 = 0")
    .Attr("relu: bool = false")
    .SetShapeFn([](InferenceContext* c) { return PopulationMatmulShape(c, /*perturbed=*/false, /*conv=*/false); })
    .Doc(R"doc(
Matmul of a batch against per-member weights: y[b] = x[b] @ weights[indices[b]].

Rows that share a slot share the reads of its weights. Accumulates in float32.
x: [batch, K] or [batch, rows, K].
weights: [slots, K, N], float32 or bfloat16.
indices: [batch] slot of each row, in [0, slots).
biases: zero or one tensor [slots, N] added to the product.
relu: apply max(0, .) to the result.
y: [batch, N] or [batch, rows, N].
)doc");

REGISTER_OP("Workbench>PerturbedPopulationMatmul")
    .Input("x: float")
    .Input("weights: T")
    .Input("parents: int32")
    .Input("sigmas: float")
    .Input("factor_a: float")
    .Input("factor_b: float")
    .Input("biases: num_biases * T")
    .Input("bias_noise: num_bias_noise * float")
    .Output("y: float")
    .Attr("T: {float, bfloat16}")
    .Attr("num_biases: int >= 0 = 0")
    .Attr("num_bias_noise: int >= 0 = 0")
    .Attr("relu: bool = false")
    .SetShapeFn([](InferenceContext* c) { return PopulationMatmulShape(c, /*perturbed=*/true, /*conv=*/false); })
    .Doc(R"doc(
Population matmul with low-rank perturbed members (EGGROLL):
y[b] = x[b] @ weights[parents[b]] + sigmas[b] * (x[b] @ factor_a[b]) @ factor_b[b]^T
       (+ biases[parents[b]] + sigmas[b] * bias_noise[b]).
Members that share a parent share its weight reads; no member's weights are
materialised.
)doc");

REGISTER_OP("Workbench>PopulationConv2D")
    .Input("x: TX")
    .Input("weights: T")
    .Input("indices: int32")
    .Input("biases: num_biases * T")
    .Output("y: float")
    .Attr("T: {float, bfloat16}")
    .Attr("TX: {float, uint8}")
    .Attr("input_scale: float = 1.0")
    .Attr("num_biases: int >= 0 = 0")
    .Attr("kernel_size: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID'}")
    .Attr("relu: bool = false")
    .SetShapeFn([](InferenceContext* c) { return PopulationMatmulShape(c, /*perturbed=*/false, /*conv=*/true); })
    .Doc(R"doc(
2-D convolution (NHWC, as tf.nn.conv2d) of image x[b] with the filters of slot
indices[b]. weights: [slots, kernel_h * kernel_w * channels, filters], the
im2col flattening of [kernel_h, kernel_w, channels, filters].
y: [batch, out_height, out_width, filters]. x may be uint8 (e.g. Atari frames):
it is read as float(x) * input_scale; float32 x needs input_scale = 1.
)doc");

REGISTER_OP("Workbench>PerturbedPopulationConv2D")
    .Input("x: TX")
    .Input("weights: T")
    .Input("parents: int32")
    .Input("sigmas: float")
    .Input("factor_a: float")
    .Input("factor_b: float")
    .Input("biases: num_biases * T")
    .Input("bias_noise: num_bias_noise * float")
    .Output("y: float")
    .Attr("T: {float, bfloat16}")
    .Attr("TX: {float, uint8}")
    .Attr("input_scale: float = 1.0")
    .Attr("num_biases: int >= 0 = 0")
    .Attr("num_bias_noise: int >= 0 = 0")
    .Attr("kernel_size: list(int)")
    .Attr("strides: list(int)")
    .Attr("padding: {'SAME', 'VALID'}")
    .Attr("relu: bool = false")
    .SetShapeFn([](InferenceContext* c) { return PopulationMatmulShape(c, /*perturbed=*/true, /*conv=*/true); })
    .Doc(R"doc(
PopulationConv2D with low-rank perturbed members (see
PerturbedPopulationMatmul); factor_a is [batch, kernel_h * kernel_w * channels, rank].
)doc");

}  // namespace workbench
