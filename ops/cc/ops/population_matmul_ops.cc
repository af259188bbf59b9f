// Registration and shape functions of the population matmul ops.
//
// PopulationMatmul: y[b] = act(x[b] @ weights[indices[b]] + biases[indices[b]])
// PerturbedPopulationMatmul: the same with member b's weights replaced by
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
absl::Status CheckRank(InferenceContext* c, ShapeHandle shape,
                       const char* name, int min_rank, int max_rank,
                       const char* layout) {
  if (!InferenceContext::RankKnown(shape)) return absl::OkStatus();
  const int rank = InferenceContext::Rank(shape);
  if (rank < min_rank || rank > max_rank) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " must be ", layout, ", got shape ",
                     c->DebugString(shape)));
  }
  return absl::OkStatus();
}

// Merges two dimensions that must agree; the error names both arguments.
absl::Status MergeNamed(InferenceContext* c, DimensionHandle a,
                        DimensionHandle b, const std::string& what,
                        DimensionHandle* out) {
  if (!c->Merge(a, b, out).ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " disagree: ", c->DebugString(a), " vs ",
                     c->DebugString(b)));
  }
  return absl::OkStatus();
}

absl::Status PopulationMatmulShape(InferenceContext* c, bool perturbed) {
  ShapeHandle x = c->input(0);
  ShapeHandle weights = c->input(1);
  ShapeHandle indices = c->input(2);
  const char* indices_name = perturbed ? "parents" : "indices";
  TF_RETURN_IF_ERROR(
      CheckRank(c, x, "x", 2, 3, "[batch, K] or [batch, rows, K]"));
  TF_RETURN_IF_ERROR(CheckRank(c, weights, "weights", 3, 3, "[slots, K, N]"));
  TF_RETURN_IF_ERROR(CheckRank(c, indices, indices_name, 1, 1, "[batch]"));
  TF_RETURN_IF_ERROR(c->WithRankAtLeast(x, 2, &x));
  TF_RETURN_IF_ERROR(c->WithRank(weights, 3, &weights));
  TF_RETURN_IF_ERROR(c->WithRank(indices, 1, &indices));

  DimensionHandle slots = c->Dim(weights, 0);
  if (InferenceContext::ValueKnown(slots) && InferenceContext::Value(slots) == 0) {
    return absl::InvalidArgumentError(
        "weights has 0 slots; a population needs at least one slot");
  }
  DimensionHandle batch, depth;
  TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(x, 0), c->Dim(indices, 0),
                                absl::StrCat("x.shape[0] and ", indices_name,
                                             ".shape[0] (batch)"),
                                &batch));
  TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(x, -1), c->Dim(weights, 1),
                                "x.shape[-1] and weights.shape[1] (K)",
                                &depth));
  DimensionHandle cols = c->Dim(weights, 2);

  std::vector<ShapeHandle> biases;
  TF_RETURN_IF_ERROR(c->input("biases", &biases));
  for (ShapeHandle bias : biases) {
    TF_RETURN_IF_ERROR(CheckRank(c, bias, "biases", 2, 2, "[slots, N]"));
    TF_RETURN_IF_ERROR(c->WithRank(bias, 2, &bias));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(bias, 0), slots,
                                  "biases.shape[0] and weights.shape[0] (slots)",
                                  &slots));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(bias, 1), cols,
                                  "biases.shape[1] and weights.shape[2] (N)",
                                  &cols));
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
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(sigmas, 0), batch,
                                  "sigmas.shape[0] and batch", &batch));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(factor_a, 0), batch,
                                  "factor_a.shape[0] and batch", &batch));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(factor_b, 0), batch,
                                  "factor_b.shape[0] and batch", &batch));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(factor_a, 1), depth,
                                  "factor_a.shape[1] and K", &depth));
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(factor_b, 1), cols,
                                  "factor_b.shape[1] and N", &cols));
    DimensionHandle rank;
    TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(factor_a, 2), c->Dim(factor_b, 2),
                                  "factor_a.shape[2] and factor_b.shape[2] (rank)",
                                  &rank));
    std::vector<ShapeHandle> bias_noise;
    TF_RETURN_IF_ERROR(c->input("bias_noise", &bias_noise));
    for (ShapeHandle noise : bias_noise) {
      TF_RETURN_IF_ERROR(CheckRank(c, noise, "bias_noise", 2, 2, "[batch, N]"));
      TF_RETURN_IF_ERROR(c->WithRank(noise, 2, &noise));
      TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(noise, 0), batch,
                                    "bias_noise.shape[0] and batch", &batch));
      TF_RETURN_IF_ERROR(MergeNamed(c, c->Dim(noise, 1), cols,
                                    "bias_noise.shape[1] and N", &cols));
    }
  }

  if (InferenceContext::RankKnown(x) && InferenceContext::Rank(x) == 2) {
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
    .SetShapeFn([](InferenceContext* c) {
      return PopulationMatmulShape(c, /*perturbed=*/false);
    })
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
    .SetShapeFn([](InferenceContext* c) {
      return PopulationMatmulShape(c, /*perturbed=*/true);
    })
    .Doc(R"doc(
Population matmul with low-rank perturbed members (EGGROLL):
y[b] = x[b] @ weights[parents[b]] + sigmas[b] * (x[b] @ factor_a[b]) @ factor_b[b]^T
       (+ biases[parents[b]] + sigmas[b] * bias_noise[b]).
Members that share a parent share its weight reads; no member's weights are
materialised.
)doc");

}  // namespace workbench
