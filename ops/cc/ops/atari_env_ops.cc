// Op registrations of the in-graph Atari emulators. A batch of emulators of
// one game lives in a TensorFlow resource made by AtariEnvCreate; the other
// ops touch only the emulators at `indices`, so episodes of different lengths
// never wait for each other. Free a batch with DestroyResourceOp.
#include <vector>

#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace workbench {
namespace {

using ::tensorflow::shape_inference::DimensionHandle;
using ::tensorflow::shape_inference::DimensionOrConstant;
using ::tensorflow::shape_inference::InferenceContext;
using ::tensorflow::shape_inference::ShapeHandle;

constexpr int64_t kUnknown = InferenceContext::kUnknownDim;

// Shape function of the ops on a batch: input 1 (indices) is a vector of n;
// input 2, when `per_index_input`, is a vector of n too (seeds, actions);
// output i has shape [n] + output_tails[i].
auto IndexedShapes(std::vector<std::vector<int64_t>> output_tails, bool per_index_input) {
  return [output_tails, per_index_input](InferenceContext* c) -> absl::Status {
    ShapeHandle indices;
    TF_RETURN_IF_ERROR(c->WithRank(c->input(1), 1, &indices));
    const DimensionHandle n = c->Dim(indices, 0);
    if (per_index_input) {
      ShapeHandle values;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(2), 1, &values));
      DimensionHandle merged;
      TF_RETURN_IF_ERROR(c->Merge(c->Dim(values, 0), n, &merged));
    }
    for (size_t i = 0; i < output_tails.size(); ++i) {
      std::vector<DimensionHandle> dims = {n};
      for (int64_t d : output_tails[i]) dims.push_back(c->MakeDim(DimensionOrConstant(d)));
      c->set_output(static_cast<int>(i), c->MakeShape(dims));
    }
    return absl::OkStatus();
  };
}

const std::vector<int64_t> kPerIndex = {};                                // [n]
const std::vector<int64_t> kFrameStack = {kUnknown, kUnknown, kUnknown};  // [n, size, size, stack]

REGISTER_OP("Workbench>AtariEnvCreate")
    .Output("handle: resource")
    .Output("action_set: int32")
    .Attr("rom_path: string")
    .Attr("batch_size: int >= 1")
    .Attr("frame_skip: int >= 1 = 4")
    .Attr("noop_max: int >= 0 = 30")
    .Attr("repeat_action_probability: float = 0.0")
    .Attr("max_episode_frames: int >= 0 = 0")
    .Attr("fire_reset: bool = true")
    .Attr("screen_size: int >= 1 = 84")
    .Attr("stack_size: int >= 1 = 4")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->Scalar());
      c->set_output(1, c->Vector(InferenceContext::kUnknownDim));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Creates batch_size emulators of the ROM at rom_path (a resource) and returns
the game's minimal action set (ALE action ids). Actions given to AtariEnvStep
are indices into that set. max_episode_frames = 0 means no cap.
)doc");

REGISTER_OP("Workbench>AtariEnvReset")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("seeds: int64")
    .Output("done: bool")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kPerIndex}, true))
    .Doc(R"doc(
Starts a new episode in each emulator of indices, seeded by seeds; done is true
where the episode already ended during the reset (a frame cap below the no-ops).
)doc");

REGISTER_OP("Workbench>AtariEnvStep")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("actions: int32")
    .Output("rewards: float32")
    .Output("done: bool")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kPerIndex, kPerIndex}, true))
    .Doc(R"doc(
One agent step (frame_skip frames) of each emulator of indices; rewards are
summed over the frames, unclipped; done is game over or the frame cap.
)doc");

REGISTER_OP("Workbench>AtariEnvStepAndObserve")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("actions: int32")
    .Output("rewards: float32")
    .Output("done: bool")
    .Output("observations: uint8")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kPerIndex, kPerIndex, kFrameStack}, true))
    .Doc("AtariEnvStep, then AtariEnvObservation of the same emulators, in one pass.");

REGISTER_OP("Workbench>AtariEnvObservation")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("observations: uint8")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kFrameStack}, false))
    .Doc("The preprocessed frame stacks [n, screen_size, screen_size, stack_size].");

REGISTER_OP("Workbench>AtariEnvScreen")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("rgb: uint8")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({{kUnknown, kUnknown, 3}}, false))
    .Doc("The RGB screens [n, height, width, 3] of the last emulated frame (210x160 for most games).");

REGISTER_OP("Workbench>AtariEnvRam")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("ram: uint8")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({{128}}, false))
    .Doc("The console RAM [n, 128].");

REGISTER_OP("Workbench>AtariEnvStatus")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("lives: int32")
    .Output("episode_frames: int32")
    .Output("episode_return: float32")
    .Output("done: bool")
    .Output("truncated: bool")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kPerIndex, kPerIndex, kPerIndex, kPerIndex, kPerIndex}, false))
    .Doc(R"doc(
Per emulator of indices: lives, frames since the reset (no-ops included), the
episode's summed reward, done, and whether done came from the frame cap.
)doc");

}  // namespace
}  // namespace workbench
