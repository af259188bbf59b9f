// Op registrations of the in-graph Atari emulators. A batch of emulators of
// one game lives in a TensorFlow resource made by AtariEnvCreate; the other
// ops touch only the emulators at `indices`, so episodes of different lengths
// never wait for each other. Free a batch with DestroyResourceOp.
#include <vector>

#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "indexed_shapes.h"

namespace workbench {
namespace {

using ::tensorflow::shape_inference::InferenceContext;

constexpr int64_t kUnknown = InferenceContext::kUnknownDim;

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
    .SetShapeFn(IndexedShapes({kPerIndex}, {1}))
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
    .SetShapeFn(IndexedShapes({kPerIndex, kPerIndex}, {1}))
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
    .SetShapeFn(IndexedShapes({kPerIndex, kPerIndex, kFrameStack}, {1}))
    .Doc("AtariEnvStep, then AtariEnvObservation of the same emulators, in one pass.");

REGISTER_OP("Workbench>AtariEnvObservation")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("observations: uint8")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kFrameStack}))
    .Doc("The preprocessed frame stacks [n, screen_size, screen_size, stack_size].");

REGISTER_OP("Workbench>AtariEnvScreen")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("rgb: uint8")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({{kUnknown, kUnknown, 3}}))
    .Doc("The RGB screens [n, height, width, 3] of the last emulated frame (210x160 for most games).");

REGISTER_OP("Workbench>AtariEnvRam")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("ram: uint8")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({{128}}))
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
    .SetShapeFn(IndexedShapes({kPerIndex, kPerIndex, kPerIndex, kPerIndex, kPerIndex}))
    .Doc(R"doc(
Per emulator of indices: lives, frames since the reset (no-ops included), the
episode's summed reward, done, and whether done came from the frame cap.
)doc");

}  // namespace
}  // namespace workbench
