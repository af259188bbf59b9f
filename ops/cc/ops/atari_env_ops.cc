// Op registrations of the in-graph Atari emulators. A batch of emulators of
// one game lives in a TensorFlow resource made by AtariEnvCreate; the other
// ops touch only the emulators at `indices`, so episodes of different lengths
// never wait for each other. Free a batch with DestroyResourceOp.
#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace workbench {
namespace {

using ::tensorflow::shape_inference::DimensionHandle;
using ::tensorflow::shape_inference::InferenceContext;
using ::tensorflow::shape_inference::ShapeHandle;

// indices must be a vector; returns its length.
absl::Status IndicesLength(InferenceContext* c, int input, DimensionHandle* n) {
  ShapeHandle indices;
  TF_RETURN_IF_ERROR(c->WithRank(c->input(input), 1, &indices));
  *n = c->Dim(indices, 0);
  return absl::OkStatus();
}

// A per-index input (seeds, actions) must be a vector as long as indices.
absl::Status MatchesIndices(InferenceContext* c, int input, DimensionHandle n) {
  ShapeHandle values;
  TF_RETURN_IF_ERROR(c->WithRank(c->input(input), 1, &values));
  DimensionHandle merged;
  return c->Merge(c->Dim(values, 0), n, &merged);
}

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
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      DimensionHandle n;
      TF_RETURN_IF_ERROR(IndicesLength(c, 1, &n));
      return MatchesIndices(c, 2, n);
    })
    .Doc("Starts a new episode in each emulator of indices, seeded by seeds.");

REGISTER_OP("Workbench>AtariEnvStep")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("actions: int32")
    .Output("rewards: float32")
    .Output("done: bool")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      DimensionHandle n;
      TF_RETURN_IF_ERROR(IndicesLength(c, 1, &n));
      TF_RETURN_IF_ERROR(MatchesIndices(c, 2, n));
      c->set_output(0, c->Vector(n));
      c->set_output(1, c->Vector(n));
      return absl::OkStatus();
    })
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
    .SetShapeFn([](InferenceContext* c) {
      DimensionHandle n;
      TF_RETURN_IF_ERROR(IndicesLength(c, 1, &n));
      TF_RETURN_IF_ERROR(MatchesIndices(c, 2, n));
      c->set_output(0, c->Vector(n));
      c->set_output(1, c->Vector(n));
      c->set_output(2, c->MakeShape({n, c->UnknownDim(), c->UnknownDim(), c->UnknownDim()}));
      return absl::OkStatus();
    })
    .Doc("AtariEnvStep, then AtariEnvObservation of the same emulators, in one pass.");

REGISTER_OP("Workbench>AtariEnvObservation")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("observations: uint8")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      DimensionHandle n;
      TF_RETURN_IF_ERROR(IndicesLength(c, 1, &n));
      c->set_output(0, c->MakeShape({n, c->UnknownDim(), c->UnknownDim(), c->UnknownDim()}));
      return absl::OkStatus();
    })
    .Doc("The preprocessed frame stacks [n, screen_size, screen_size, stack_size].");

REGISTER_OP("Workbench>AtariEnvScreen")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("rgb: uint8")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      DimensionHandle n;
      TF_RETURN_IF_ERROR(IndicesLength(c, 1, &n));
      c->set_output(0, c->MakeShape({n, c->UnknownDim(), c->UnknownDim(), 3}));
      return absl::OkStatus();
    })
    .Doc("The RGB screens [n, height, width, 3] of the last emulated frame (210x160 for most games).");

REGISTER_OP("Workbench>AtariEnvRam")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("ram: uint8")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      DimensionHandle n;
      TF_RETURN_IF_ERROR(IndicesLength(c, 1, &n));
      c->set_output(0, c->MakeShape({n, 128}));
      return absl::OkStatus();
    })
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
    .SetShapeFn([](InferenceContext* c) {
      DimensionHandle n;
      TF_RETURN_IF_ERROR(IndicesLength(c, 1, &n));
      for (int i = 0; i < 5; ++i) c->set_output(i, c->Vector(n));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Per emulator of indices: lives, frames since the reset (no-ops included), the
episode's summed reward, done, and whether done came from the frame cap.
)doc");

}  // namespace
}  // namespace workbench
