// The shape function every simulator family's batch ops share (Atari's
// emulators, MuJoCo's simulations): input 0 is the batch's handle, input 1
// `indices` a vector of n; the inputs after it have one row per index.
#ifndef WORKBENCH_OPS_CC_OPS_INDEXED_SHAPES_H_
#define WORKBENCH_OPS_CC_OPS_INDEXED_SHAPES_H_

#include <vector>

#include "tensorflow/core/framework/shape_inference.h"

namespace workbench {

// Shape function of an op on a batch: input 1 (indices) is a vector of n;
// input 2 + k has rank row_ranks[k] and n rows (seeds and Atari's actions are
// vectors [n], MuJoCo's actions and states matrices [n, size]); output i has
// shape [n] + output_tails[i] (kUnknownDim for a size known only at run time).
inline auto IndexedShapes(std::vector<std::vector<int64_t>> output_tails, std::vector<int> row_ranks = {}) {
  using ::tensorflow::shape_inference::DimensionHandle;
  using ::tensorflow::shape_inference::DimensionOrConstant;
  using ::tensorflow::shape_inference::InferenceContext;
  using ::tensorflow::shape_inference::ShapeHandle;
  return [output_tails, row_ranks](InferenceContext* c) -> absl::Status {
    const int row_inputs = static_cast<int>(row_ranks.size());
    if (c->num_inputs() != 2 + row_inputs) {
      return absl::InternalError(
          absl::StrCat("shape function expects ", 2 + row_inputs, " inputs, the op has ", c->num_inputs()));
    }
    ShapeHandle indices;
    TF_RETURN_IF_ERROR(c->WithRank(c->input(1), 1, &indices));
    DimensionHandle n = c->Dim(indices, 0);
    for (int k = 0; k < row_inputs; ++k) {
      ShapeHandle rows;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(2 + k), row_ranks[k], &rows));
      TF_RETURN_IF_ERROR(c->Merge(c->Dim(rows, 0), n, &n));
    }
    for (size_t i = 0; i < output_tails.size(); ++i) {
      std::vector<DimensionHandle> dims = {n};
      for (int64_t d : output_tails[i]) dims.push_back(c->MakeDim(DimensionOrConstant(d)));
      c->set_output(static_cast<int>(i), c->MakeShape(dims));
    }
    return absl::OkStatus();
  };
}

}  // namespace workbench

#endif  // WORKBENCH_OPS_CC_OPS_INDEXED_SHAPES_H_
