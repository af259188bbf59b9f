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
// simulation that goes unstable (MuJoCo's bad qpos/qvel/qacc warnings during a
// step, or an observation that is not finite in float32 after a step, a reset
// or a state set from outside) ends its episode, truncated, flagged
// `unstable`; that step's reward is 0 and its observation all zeros.
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
  kXPosition,
  kYPosition,
  kXVelocity,
  kYVelocity,
  kZDistanceFromOrigin,
  kDistanceFromOrigin,
  kRewardForward,
  kRewardCtrl,
  kRewardContact,
  kRewardSurvive,
  kNumInfo
};

// Empty string when `name` is a task of this family, else the reason.
std::string CheckMujocoTask(const std::string& name);

// The mjData arrays an observation reads, and how a value is clipped on the way.
enum class MujocoSource { kQpos, kQvel, kCinert, kCvel, kQfrcActuator, kCfrcExt };
enum class MujocoClip { kNone, kVelocity, kContactForce };  // +-10 (Hopper, Walker2d); contact_force_range (Ant)

// One run of observation values: the flat array `source` from `begin` to its
// end, as Gymnasium's numpy slice array[begin:] reads it: `size` values,
// max(0, length - begin), so a slice that starts past the end is empty.
struct MujocoObservationPart {
  MujocoSource source;
  int begin;
  int size;
  MujocoClip clip;
};

// Every length a simulation of a task reads or writes, derived in one place
// (MujocoTaskLayout) from the compiled model and the task's settings.
struct MujocoLayout {
  int nq = 0, nv = 0, nu = 0, nbody = 0;
  int contact_forces = 0;                          // 6 * nbody values of cfrc_ext
  std::vector<MujocoObservationPart> observation;  // Gymnasium v5's _get_obs(), in order
  int observation_size = 0;                        // the sum of the parts' sizes
};

MujocoLayout MujocoTaskLayout(const mjModel* model, MujocoTaskKind kind, const MujocoTaskConfig& config);

// Empty when the model has every coordinate the task's rules read (Hopper's
// height and angle at qpos[1] and qpos[2], ...); else what the rules need and
// what the model has. Gymnasium's own environment fails on exactly these
// models (an IndexError or a failed unpacking in its reset or step, or a
// negative observation size at creation).
std::string CheckModelFitsTask(const mjModel* model, MujocoTaskKind kind);

class MujocoTask {
 public:
  // Compiles the model (shared by every task of the same path; compiled once
  // per process) and derives its layout. Throws std::runtime_error with
  // MuJoCo's message when the model does not compile, std::invalid_argument
  // when the task's rules do not fit the model.
  explicit MujocoTask(const MujocoTaskConfig& config);

  const MujocoTaskConfig& config() const { return config_; }
  const mjModel* model() const { return model_.get(); }
  MujocoTaskKind kind() const { return kind_; }
  const MujocoLayout& layout() const { return layout_; }
  int observation_size() const { return layout_.observation_size; }
  // The geoms whose contact with the ground (a geom of the world body) counts
  // as a foot touching it, in the order of the feet-contact descriptor
  // (Feet() in mujoco_simulation.cc: Hopper 1, Walker2d, HalfCheetah and
  // Humanoid 2, Ant 4; Swimmer and InvertedPendulum none). feet_error() is
  // empty when every foot geom is in the model, else which one is missing.
  const std::vector<int>& foot_geoms() const { return foot_geoms_; }
  const std::string& feet_error() const { return feet_error_; }
  int action_size() const { return layout_.nu; }
  double dt() const { return model_->opt.timestep * config_.frame_skip; }

 private:
  MujocoTaskConfig config_;
  MujocoTaskKind kind_;
  std::shared_ptr<const mjModel> model_;
  MujocoLayout layout_;
  std::vector<int> foot_geoms_;
  std::string feet_error_;
};

class MujocoSimulation {
 public:
  explicit MujocoSimulation(const MujocoTask* task);
  ~MujocoSimulation();
  MujocoSimulation(const MujocoSimulation&) = delete;
  MujocoSimulation& operator=(const MujocoSimulation&) = delete;

  // Starts an episode: mj_resetData, qpos0 + noise and qvel0 + noise (drawn
  // from SplitMix64(seed): nq values for qpos, then nv for qvel), mj_forward.
  // An episode whose first observation is not finite (a huge reset noise)
  // ends at once as unstable.
  void Reset(uint64_t seed);
  // Puts the physics in the state (qpos [nq], qvel [nv]) and runs mj_forward;
  // the episode's counters are kept. Used by replays and the equivalence tests.
  // A state whose observation is not finite ends the episode as unstable.
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
  // Per foot (MujocoTask::foot_geoms), the share of the episode's steps after
  // which it touched the ground (QDax's feet-contact descriptor); counted at
  // the end of every step; 0 before the first step. [feet]
  void WriteFeetContact(double* out) const;

 private:
  void ComputeObservation();
  // Whether every observation value is finite in float32 (what the ops output).
  bool ObservationFinite() const;
  // Ends the episode, truncated and flagged unstable: zeros observed, info NaN.
  void EndAsUnstable();
  // Gymnasium's state_vector()[i]: qpos then qvel.
  double StateValue(int i) const;
  bool Healthy() const;
  void MassCenterXy(double* xy) const;
  // Adds the step to foot_contact_steps_ of every foot touching the ground now.
  void CountFeetContact();
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
  std::vector<int64_t> foot_contact_steps_;  // per foot, the steps that ended with it on the ground
};

}  // namespace workbench

#endif  // WORKBENCH_OPS_KERNELS_MUJOCO_SIMULATION_H_
