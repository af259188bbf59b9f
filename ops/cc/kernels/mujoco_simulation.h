// One MuJoCo locomotion task of Gymnasium's v5 family (MujocoTask: the compiled
// model and the task's rules) and one running episode of it (MujocoSimulation:
// an mjData with the episode's bookkeeping).
//
// The rules (observation layout, reward terms, termination, reset noise) are
// those of gymnasium/envs/mujoco/*_v5.py, written down in docs/mujoco.md, and
// computed in the same order and precision as Gymnasium computes them for
// float32 actions (numpy's pairwise summation, float32 control costs where
// Gymnasium's are float32), so that an episode equals Gymnasium's step for
// step. Two deliberate differences: the reset noise comes from SplitMix64
// seeded per episode (workbench/envs/mujoco_reference.py draws the same), and a
// simulation that goes unstable (MuJoCo's bad qpos/qvel/qacc warnings or a
// non-finite state) ends its episode, truncated, flagged `unstable`; that
// step's reward is 0 and its observation all zeros.
#ifndef WORKBENCH_OPS_KERNELS_MUJOCO_SIMULATION_H_
#define WORKBENCH_OPS_KERNELS_MUJOCO_SIMULATION_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mujoco/mujoco.h"
#include "splitmix64.h"

namespace workbench {

enum class MujocoTaskKind { kHalfCheetah, kHopper, kWalker2d, kAnt, kHumanoid, kSwimmer, kInvertedPendulum };

// The task's settings: Gymnasium v5's keyword arguments (the Python layer fills
// in every default). Settings a task does not have are ignored.
struct MujocoTaskConfig {
  std::string task;      // Gymnasium id, e.g. "HalfCheetah-v5"
  std::string xml_path;  // the MJCF model
  int frame_skip = 5;
  int64_t max_episode_steps = 1000;  // 0: no limit
  double forward_reward_weight = 1.0;
  double ctrl_cost_weight = 0.1;
  double contact_cost_weight = 0.0;
  double healthy_reward = 1.0;
  bool terminate_when_unhealthy = true;
  double healthy_z_range[2] = {0.0, 0.0};
  double healthy_angle_range[2] = {0.0, 0.0};
  double healthy_state_range[2] = {0.0, 0.0};
  double contact_force_range[2] = {-1.0, 1.0};
  double contact_cost_range[2] = {0.0, 0.0};
  double reset_noise_scale = 0.1;
  bool exclude_current_positions_from_observation = true;
  bool include_cfrc_ext_in_observation = true;
  bool include_cinert_in_observation = true;
  bool include_cvel_in_observation = true;
  bool include_qfrc_actuator_in_observation = true;
  int main_body = 1;
};

// The info terms of a step, in this order (NaN where a task has no such term).
enum MujocoInfo {
  kXPosition, kYPosition, kXVelocity, kYVelocity, kZDistanceFromOrigin, kDistanceFromOrigin,
  kRewardForward, kRewardCtrl, kRewardContact, kRewardSurvive, kNumInfo
};

// Empty string when `name` is a task of this family, else the reason.
std::string CheckMujocoTask(const std::string& name);

class MujocoTask {
 public:
  // Compiles the model (shared by every task of the same path; compiled once
  // per process). Throws std::runtime_error with MuJoCo's message on failure.
  explicit MujocoTask(const MujocoTaskConfig& config);

  const MujocoTaskConfig& config() const { return config_; }
  const mjModel* model() const { return model_.get(); }
  MujocoTaskKind kind() const { return kind_; }
  int observation_size() const { return observation_size_; }
  int action_size() const { return model_->nu; }
  double dt() const { return model_->opt.timestep * config_.frame_skip; }

 private:
  MujocoTaskConfig config_;
  MujocoTaskKind kind_;
  std::shared_ptr<const mjModel> model_;
  int observation_size_ = 0;
};

class MujocoSimulation {
 public:
  explicit MujocoSimulation(const MujocoTask* task);
  ~MujocoSimulation();
  MujocoSimulation(const MujocoSimulation&) = delete;
  MujocoSimulation& operator=(const MujocoSimulation&) = delete;

  // Starts an episode: mj_resetData, qpos0 + noise and qvel0 + noise (drawn
  // from SplitMix64(seed): nq values for qpos, then nv for qvel), mj_forward.
  void Reset(uint64_t seed);
  // Puts the physics in the state (qpos [nq], qvel [nv]) and runs mj_forward;
  // the episode's counters are kept. Used by replays and the equivalence tests.
  void SetState(const double* qpos, const double* qvel);
  // One step: ctrl = action (MuJoCo clamps it to the control range when it
  // computes forces; the control cost uses the action as given), frame_skip
  // mj_steps, mj_rnePostConstraint; returns the reward.
  double Step(const float* action);

  bool started() const { return started_; }
  bool done() const { return terminated_ || truncated_; }
  bool terminated() const { return terminated_; }
  bool truncated() const { return truncated_; }
  bool unstable() const { return unstable_; }
  int64_t steps() const { return steps_; }
  double episode_return() const { return episode_return_; }
  const double* info() const { return info_; }

  // [observation_size] as float32 (computed in double, as Gymnasium does).
  void WriteObservation(float* out) const;
  void WriteQpos(double* out) const;
  void WriteQvel(double* out) const;
  // The (x, y) of the task's main body in the world frame.
  void WriteMainBodyXy(double* out) const;

 private:
  void ComputeObservation();
  bool Healthy() const;
  void MassCenterXy(double* xy) const;
  void StepInfo(double reward_forward, double reward_ctrl, double reward_contact, double reward_survive);

  const MujocoTask* task_;
  const mjModel* model_;
  mjData* data_;
  SplitMix64 rng_;
  std::vector<double> observation_;
  bool started_ = false, terminated_ = false, truncated_ = false, unstable_ = false;
  int64_t steps_ = 0;
  double episode_return_ = 0.0;
  double info_[kNumInfo];
};

}  // namespace workbench

#endif  // WORKBENCH_OPS_KERNELS_MUJOCO_SIMULATION_H_
