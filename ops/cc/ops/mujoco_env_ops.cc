// Op registrations of the in-graph MuJoCo simulations. A batch of simulations
// of one task lives in a TensorFlow resource made by MujocoEnvCreate; the
// other ops touch only the simulations at `indices`, so episodes of different
// lengths never wait for each other. Free a batch with DestroyResourceOp.
#include <vector>

#include "tensorflow/core/framework/common_shape_fns.h"
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"
#include "indexed_shapes.h"

namespace workbench {
namespace {

using ::tensorflow::shape_inference::InferenceContext;

constexpr int64_t kUnknown = InferenceContext::kUnknownDim;

const std::vector<int64_t> kPerIndex = {};     // [n]
const std::vector<int64_t> kRow = {kUnknown};  // [n, size]
const std::vector<int64_t> kInfo = {10};       // [n, info terms]
const std::vector<int64_t> kXy = {2};          // [n, 2]

REGISTER_OP("Workbench>MujocoEnvCreate")
    .Input("parameters: float64")
    .Output("handle: resource")
    .Output("sizes: int32")
    .Output("ctrl_range: float32")
    .Attr("task: string")
    .Attr("xml_path: string")
    .Attr("batch_size: int >= 1")
    .Attr("frame_skip: int >= 1")
    .Attr("max_episode_steps: int >= 0 = 1000")
    .Attr("terminate_when_unhealthy: bool = true")
    .Attr("exclude_current_positions_from_observation: bool = true")
    .Attr("include_cfrc_ext_in_observation: bool = true")
    .Attr("include_cinert_in_observation: bool = true")
    .Attr("include_cvel_in_observation: bool = true")
    .Attr("include_qfrc_actuator_in_observation: bool = true")
    .Attr("main_body: int >= 0 = 1")
    .SetIsStateful()
    .SetShapeFn([](InferenceContext* c) {
      c->set_output(0, c->Scalar());
      c->set_output(1, c->Vector(4));
      c->set_output(2, c->Matrix(kUnknown, 2));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Creates batch_size simulations of the Gymnasium v5 task `task` on the MJCF
model at xml_path (a resource). parameters (float64 [15]): forward_reward_weight,
ctrl_cost_weight, contact_cost_weight, healthy_reward, reset_noise_scale, then
the (low, high) pairs healthy_z_range, healthy_angle_range, healthy_state_range,
contact_force_range, contact_cost_range. sizes: observation size, action size,
nq, nv. ctrl_range: [action size, 2], the actuators' control ranges.
max_episode_steps = 0 means no limit.
)doc");

REGISTER_OP("Workbench>MujocoEnvReset")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("seeds: int64")
    .Output("observations: float32")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kRow}, {1}))
    .Doc("Starts a new episode in each simulation of indices, its reset noise drawn from seeds; returns observations.");

REGISTER_OP("Workbench>MujocoEnvStep")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("actions: float32")
    .Output("rewards: float32")
    .Output("terminated: bool")
    .Output("truncated: bool")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kPerIndex, kPerIndex, kPerIndex}, {2}))
    .Doc(R"doc(
One step (frame_skip physics steps) of each simulation of indices with actions
[n, action size]; terminated by the task's health rule, truncated at
max_episode_steps or when the simulation went unstable.
)doc");

REGISTER_OP("Workbench>MujocoEnvStepAndObserve")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("actions: float32")
    .Output("rewards: float32")
    .Output("terminated: bool")
    .Output("truncated: bool")
    .Output("observations: float32")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kPerIndex, kPerIndex, kPerIndex, kRow}, {2}))
    .Doc("MujocoEnvStep, then MujocoEnvObservation of the same simulations, in one pass.");

REGISTER_OP("Workbench>MujocoEnvObservation")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("observations: float32")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kRow}))
    .Doc("The observations [n, observation size] in Gymnasium v5's layout for the task.");

REGISTER_OP("Workbench>MujocoEnvStatus")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("returns: float64")
    .Output("lengths: int32")
    .Output("terminated: bool")
    .Output("truncated: bool")
    .Output("unstable: bool")
    .Output("info: float64")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kPerIndex, kPerIndex, kPerIndex, kPerIndex, kPerIndex, kInfo}))
    .Doc(R"doc(
Episode return and length (steps), the end flags, and the info terms of the
last step [n, 10]: x_position, y_position, x_velocity, y_velocity,
z_distance_from_origin, distance_from_origin, reward_forward, reward_ctrl,
reward_contact, reward_survive (NaN where the task has no such term).
)doc");

REGISTER_OP("Workbench>MujocoEnvState")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("qpos: float64")
    .Output("qvel: float64")
    .Output("main_body_xy: float64")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kRow, kRow, kXy}))
    .Doc("The physics state (qpos [n, nq], qvel [n, nv]) and the main body's world (x, y) [n, 2].");

REGISTER_OP("Workbench>MujocoEnvFeetContact")
    .Input("handle: resource")
    .Input("indices: int32")
    .Output("feet_contact: float64")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kRow}))
    .Doc(R"doc(
Per foot of the task (Hopper 1; Walker2d, HalfCheetah, Humanoid 2; Ant 4), the
share of the episode's steps that ended with that foot touching the ground (a
contact between the foot's geom and a geom of the world body), counted inside
each step [n, feet]; 0 before the first step. An error for a task without feet.
)doc");

REGISTER_OP("Workbench>MujocoEnvSetState")
    .Input("handle: resource")
    .Input("indices: int32")
    .Input("qpos: float64")
    .Input("qvel: float64")
    .Output("observations: float32")
    .SetIsStateful()
    .SetShapeFn(IndexedShapes({kRow}, {2, 2}))
    .Doc("Puts each simulation of indices in the state (qpos, qvel), runs mj_forward; returns observations.");

}  // namespace
}  // namespace workbench
