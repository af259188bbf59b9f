// Gymnasium v5's locomotion rules on MuJoCo's C API; see mujoco_simulation.h.
#include "mujoco_simulation.h"

#include "debug_checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <mutex>
#include <stdexcept>

namespace workbench {
namespace {

// Each task with what its rules read from the model: at least `min_nq`
// position coordinates and `min_state` values of (qpos, qvel) (`reads` says
// which). workbench/envs/mujoco_tasks.py states the same needs for the Python
// layer; tests/test_mujoco_env.py checks both against Gymnasium.
struct TaskName {
  const char* id;
  MujocoTaskKind kind;
  int min_nq;
  int min_state;
  const char* reads;
};

constexpr TaskName kTasks[] = {
    {"HalfCheetah-v5", MujocoTaskKind::kHalfCheetah, 1, 1, "the x position at qpos[0]"},
    {"Hopper-v5", MujocoTaskKind::kHopper, 3, 3, "the x position, height and angle at qpos[0], qpos[1] and qpos[2]"},
    {"Walker2d-v5", MujocoTaskKind::kWalker2d, 3, 3,
     "the x position, height and angle at qpos[0], qpos[1] and qpos[2]"},
    {"Ant-v5", MujocoTaskKind::kAnt, 2, 3,
     "the x and y position at qpos[0] and qpos[1] and the height as the third value of (qpos, qvel)"},
    {"Humanoid-v5", MujocoTaskKind::kHumanoid, 3, 3,
     "the x and y position and the height at qpos[0], qpos[1] and qpos[2]"},
    {"Swimmer-v5", MujocoTaskKind::kSwimmer, 2, 2, "the x and y position at qpos[0] and qpos[1]"},
    {"InvertedPendulum-v5", MujocoTaskKind::kInvertedPendulum, 0, 2,
     "the pole angle as the second value of (qpos, qvel)"},
};

// The foot geoms of each task's Gymnasium model, in the order of the
// feet-contact descriptor (QDax's "uni" tasks: Hopper 1, Walker2d 2, Ant 4);
// FEET in workbench/envs/mujoco/tasks.py says the same for the Python layer.
struct TaskFeet {
  MujocoTaskKind kind;
  std::vector<const char*> geoms;
};

const std::vector<TaskFeet>& Feet() {
  static const std::vector<TaskFeet> feet = {
      {MujocoTaskKind::kHopper, {"foot_geom"}},
      {MujocoTaskKind::kWalker2d, {"foot_geom", "foot_left_geom"}},
      {MujocoTaskKind::kHalfCheetah, {"bfoot", "ffoot"}},
      {MujocoTaskKind::kAnt, {"left_ankle_geom", "right_ankle_geom", "third_ankle_geom", "fourth_ankle_geom"}},
      {MujocoTaskKind::kHumanoid, {"right_foot", "left_foot"}},
  };
  return feet;
}

const TaskName& FindTask(MujocoTaskKind kind) {
  for (const TaskName& task : kTasks) {
    if (task.kind == kind) return task;
  }
  return kTasks[0];  // unreachable: every kind is in the table
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// numpy's pairwise summation (np.sum of a contiguous array), in the type T:
// below 8 values a plain loop from -0; up to 128 eight accumulators; above,
// halves rounded to multiples of 8.
template <typename T>
T PairwiseSum(const T* a, int64_t n) {
  if (n < 8) {
    T sum = -0.0;
    for (int64_t i = 0; i < n; ++i) sum += a[i];
    return sum;
  }
  if (n <= 128) {
    T r[8];
    for (int j = 0; j < 8; ++j) r[j] = a[j];
    int64_t i = 8;
    for (; i < n - (n % 8); i += 8) {
      for (int j = 0; j < 8; ++j) r[j] += a[i + j];
    }
    T sum = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
    for (; i < n; ++i) sum += a[i];
    return sum;
  }
  int64_t half = n / 2;
  half -= half % 8;
  return PairwiseSum(a, half) + PairwiseSum(a + half, n - half);
}

// weight * np.sum(np.square(values)) with float32 values, as numpy computes it
// (NEP 50: the Python float weight is cast to float32).
float Float32SquaredSum(const float* values, int n, double weight) {
  std::vector<float> squares(n);
  for (int i = 0; i < n; ++i) squares[i] = values[i] * values[i];
  return static_cast<float>(weight) * PairwiseSum(squares.data(), n);
}

double SquaredSum(const double* values, int64_t n) {
  std::vector<double> squares(n);
  for (int64_t i = 0; i < n; ++i) squares[i] = values[i] * values[i];
  return PairwiseSum(squares.data(), n);
}

double Clip(double value, const double range[2]) {
  return value < range[0] ? range[0] : (value > range[1] ? range[1] : value);
}

// One compiled model per path and process (compiling takes milliseconds to
// tens of them, and MuJoCo's compiler warnings then appear once).
std::shared_ptr<const mjModel> CompiledModel(const std::string& path) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<const mjModel>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto model = cache[path].lock()) return model;
  char error[1024] = "";
  mjModel* raw = mj_loadXML(path.c_str(), nullptr, error, sizeof(error));
  if (raw == nullptr) throw std::runtime_error("MuJoCo could not compile " + path + ": " + error);
  std::shared_ptr<const mjModel> model(raw, [](const mjModel* m) { mj_deleteModel(const_cast<mjModel*>(m)); });
  cache[path] = model;
  return model;
}

constexpr int kInstabilityWarnings[] = {mjWARN_BADQPOS, mjWARN_BADQVEL, mjWARN_BADQACC};

}  // namespace

std::string CheckMujocoTask(const std::string& name) {
  for (const TaskName& task : kTasks) {
    if (name == task.id) return "";
  }
  std::string known;
  for (const TaskName& task : kTasks) known += std::string(known.empty() ? "" : ", ") + task.id;
  return "is not a MuJoCo task of this library (known: " + known + ")";
}

MujocoLayout MujocoTaskLayout(const mjModel* m, MujocoTaskKind kind, const MujocoTaskConfig& config) {
  MujocoLayout layout;
  layout.nq = m->nq;
  layout.nv = m->nv;
  layout.nu = m->nu;
  layout.nbody = m->nbody;
  layout.contact_forces = 6 * m->nbody;
  auto add = [&layout](MujocoSource source, int length, int begin, MujocoClip clip = MujocoClip::kNone) {
    const int size = std::max(0, length - begin);  // numpy's array[begin:]
    layout.observation.push_back({source, begin, size, clip});
    layout.observation_size += size;
  };
  int skipped = 0;  // exclude_current_positions_from_observation: qpos[1:] (planar) or qpos[2:]
  if (config.exclude_current_positions_from_observation && kind != MujocoTaskKind::kInvertedPendulum) {
    const bool planar =
        kind == MujocoTaskKind::kHalfCheetah || kind == MujocoTaskKind::kHopper || kind == MujocoTaskKind::kWalker2d;
    skipped = planar ? 1 : 2;
  }
  const bool clip_velocities = kind == MujocoTaskKind::kHopper || kind == MujocoTaskKind::kWalker2d;
  add(MujocoSource::kQpos, m->nq, skipped);
  add(MujocoSource::kQvel, m->nv, 0, clip_velocities ? MujocoClip::kVelocity : MujocoClip::kNone);
  if (kind == MujocoTaskKind::kAnt && config.include_cfrc_ext_in_observation) {
    add(MujocoSource::kCfrcExt, 6 * m->nbody, 6, MujocoClip::kContactForce);  // bodies 1..
  }
  if (kind == MujocoTaskKind::kHumanoid) {
    if (config.include_cinert_in_observation) add(MujocoSource::kCinert, 10 * m->nbody, 10);
    if (config.include_cvel_in_observation) add(MujocoSource::kCvel, 6 * m->nbody, 6);
    if (config.include_qfrc_actuator_in_observation) add(MujocoSource::kQfrcActuator, m->nv, 6);
    if (config.include_cfrc_ext_in_observation) add(MujocoSource::kCfrcExt, 6 * m->nbody, 6);
  }
  return layout;
}

std::string CheckModelFitsTask(const mjModel* m, MujocoTaskKind kind) {
  const TaskName& task = FindTask(kind);
  if (m->nq >= task.min_nq && m->nq + m->nv >= task.min_state) return "";
  std::string need = "at least " + std::to_string(task.min_nq) + " position coordinates (nq)";
  if (task.min_state > task.min_nq) {
    need = (task.min_nq > 0 ? need + " and " : std::string("")) + "at least " + std::to_string(task.min_state) +
           " values of (qpos, qvel)";
  }
  return std::string(task.id) + "'s rules read " + task.reads + ", so the model needs " + need +
         "; it has nq = " + std::to_string(m->nq) + ", nv = " + std::to_string(m->nv);
}

MujocoTask::MujocoTask(const MujocoTaskConfig& config) : config_(config) {
  const std::string problem = CheckMujocoTask(config.task);
  if (!problem.empty()) throw std::invalid_argument("task '" + config.task + "' " + problem);
  for (const TaskName& task : kTasks) {
    if (config.task == task.id) kind_ = task.kind;
  }
  model_ = CompiledModel(config.xml_path);
  const mjModel* m = model_.get();
  const std::string misfit = CheckModelFitsTask(m, kind_);
  if (!misfit.empty()) throw std::invalid_argument("xml_file " + config.xml_path + " does not fit the task: " + misfit);
  if (config.main_body < 0 || config.main_body >= m->nbody) {
    throw std::invalid_argument("main_body " + std::to_string(config.main_body) + " is not a body of the model (0.." +
                                std::to_string(m->nbody - 1) + ")");
  }
  layout_ = MujocoTaskLayout(m, kind_, config);
  for (const TaskFeet& task_feet : Feet()) {
    if (task_feet.kind != kind_) continue;
    for (const char* name : task_feet.geoms) {
      const int geom = mj_name2id(m, mjOBJ_GEOM, name);
      if (geom < 0 && feet_error_.empty()) feet_error_ = std::string("the model has no geom named '") + name + "'";
      foot_geoms_.push_back(geom);
    }
  }
  if (foot_geoms_.empty()) feet_error_ = "the task " + config.task + " has no feet";
}

MujocoSimulation::MujocoSimulation(const MujocoTask* task)
    : task_(task), model_(task->model()), data_(mj_makeData(task->model())) {
  if (data_ == nullptr) throw std::runtime_error("MuJoCo could not allocate the simulation data");
  observation_.resize(task->observation_size());
  for (double& value : info_) value = kNaN;
  foot_contact_steps_.assign(task->foot_geoms().size(), 0);
}

MujocoSimulation::~MujocoSimulation() { mj_deleteData(data_); }

void MujocoSimulation::Reset(uint64_t seed) {
  const MujocoTaskConfig& config = task_->config();
  const MujocoTaskKind kind = task_->kind();
  rng_.Seed(seed);
  mj_resetData(model_, data_);
  const double scale = config.reset_noise_scale, low = -scale, high = scale;
  std::vector<double> qpos(model_->nq), qvel(model_->nv);
  for (int i = 0; i < model_->nq; ++i) qpos[i] = model_->qpos0[i] + (low + (high - low) * rng_.Uniform());
  const bool normal_velocities = kind == MujocoTaskKind::kHalfCheetah || kind == MujocoTaskKind::kAnt;
  for (int i = 0; i < model_->nv; ++i) {
    qvel[i] = 0.0 + (normal_velocities ? scale * rng_.Normal() : low + (high - low) * rng_.Uniform());
  }
  started_ = true;
  terminated_ = truncated_ = unstable_ = false;
  steps_ = 0;
  episode_return_ = 0.0;
  std::fill(foot_contact_steps_.begin(), foot_contact_steps_.end(), 0);
  SetState(qpos.data(), qvel.data());
  if (unstable_) return;  // SetState ended the episode: info stays NaN
  for (double& value : info_) value = kNaN;
  StepInfo(kNaN, kNaN, kNaN, kNaN);
}

void MujocoSimulation::SetState(const double* qpos, const double* qvel) {
  for (int i = 0; i < model_->nq; ++i) data_->qpos[i] = qpos[i];
  for (int i = 0; i < model_->nv; ++i) data_->qvel[i] = qvel[i];
  mj_forward(model_, data_);
  ComputeObservation();
  if (!ObservationFinite()) EndAsUnstable();
}

bool MujocoSimulation::ObservationFinite() const {
  bool finite = true;
  for (double value : observation_) finite &= std::isfinite(static_cast<float>(value));
  return finite;
}

void MujocoSimulation::EndAsUnstable() {
  unstable_ = truncated_ = true;
  for (double& value : observation_) value = 0.0;
  for (double& value : info_) value = kNaN;
}

double MujocoSimulation::StateValue(int i) const {
  WORKBENCH_DCHECK(i >= 0 && i < model_->nq + model_->nv, "state index outside (qpos, qvel)");
  return i < model_->nq ? data_->qpos[i] : data_->qvel[i - model_->nq];
}

void MujocoSimulation::MassCenterXy(double* xy) const {
  // np.einsum("b,bj->j", body_mass, xipos) / body_mass.sum(), first two coordinates.
  double total = PairwiseSum(model_->body_mass, model_->nbody);
  for (int j = 0; j < 2; ++j) {
    double sum = 0.0;
    for (int b = 0; b < model_->nbody; ++b) sum += model_->body_mass[b] * data_->xipos[3 * b + j];
    xy[j] = sum / total;
  }
}

double MujocoSimulation::Step(const float* action) {
  const MujocoTaskConfig& config = task_->config();
  const MujocoTaskKind kind = task_->kind();
  const int nu = model_->nu;
  double before[2] = {0.0, 0.0};
  switch (kind) {
    case MujocoTaskKind::kAnt:
      before[0] = data_->xpos[3 * config.main_body];
      before[1] = data_->xpos[3 * config.main_body + 1];
      break;
    case MujocoTaskKind::kHumanoid:
      MassCenterXy(before);
      break;
    default:
      before[0] = model_->nq > 0 ? data_->qpos[0] : 0.0;  // InvertedPendulum reads neither
      before[1] = model_->nq > 1 ? data_->qpos[1] : 0.0;
  }
  for (int i = 0; i < nu; ++i) data_->ctrl[i] = action[i];
  int warnings[3];
  for (int k = 0; k < 3; ++k) warnings[k] = data_->warning[kInstabilityWarnings[k]].number;
  for (int frame = 0; frame < config.frame_skip && !unstable_; ++frame) {
    mj_step(model_, data_);
    for (int k = 0; k < 3; ++k) unstable_ |= data_->warning[kInstabilityWarnings[k]].number != warnings[k];
  }
  mj_rnePostConstraint(model_, data_);
  ++steps_;
  if (!unstable_) CountFeetContact();
  ComputeObservation();
  if (config.max_episode_steps > 0 && steps_ >= config.max_episode_steps) truncated_ = true;
  if (unstable_ || !ObservationFinite()) {  // the episode ends here: nothing earned, zeros observed (never NaN)
    EndAsUnstable();
    return 0.0;
  }

  const double dt = task_->dt();
  double after[2] = {0.0, 0.0};
  switch (kind) {
    case MujocoTaskKind::kAnt:
      after[0] = data_->xpos[3 * config.main_body];
      after[1] = data_->xpos[3 * config.main_body + 1];
      break;
    case MujocoTaskKind::kHumanoid:
      MassCenterXy(after);
      break;
    default:
      after[0] = model_->nq > 0 ? data_->qpos[0] : 0.0;  // InvertedPendulum reads neither
      after[1] = model_->nq > 1 ? data_->qpos[1] : 0.0;
  }
  const double x_velocity = (after[0] - before[0]) / dt;
  const double y_velocity = (after[1] - before[1]) / dt;
  double reward = 0.0, forward = kNaN, ctrl = kNaN, contact = kNaN, survive = kNaN;
  switch (kind) {
    case MujocoTaskKind::kHalfCheetah:
    case MujocoTaskKind::kSwimmer: {
      forward = config.forward_reward_weight * x_velocity;
      const float ctrl_cost = Float32SquaredSum(action, nu, config.ctrl_cost_weight);
      reward = forward - ctrl_cost;
      ctrl = -ctrl_cost;
      break;
    }
    case MujocoTaskKind::kHopper:
    case MujocoTaskKind::kWalker2d: {
      forward = config.forward_reward_weight * x_velocity;
      survive = static_cast<double>(Healthy()) * config.healthy_reward;
      const float ctrl_cost = Float32SquaredSum(action, nu, config.ctrl_cost_weight);
      reward = (forward + survive) - ctrl_cost;
      ctrl = -ctrl_cost;
      terminated_ = !Healthy() && config.terminate_when_unhealthy;
      break;
    }
    case MujocoTaskKind::kAnt: {
      forward = x_velocity * config.forward_reward_weight;
      survive = static_cast<double>(Healthy()) * config.healthy_reward;
      const float ctrl_cost = Float32SquaredSum(action, nu, config.ctrl_cost_weight);
      std::vector<double> forces(task_->layout().contact_forces);
      for (size_t i = 0; i < forces.size(); ++i) forces[i] = Clip(data_->cfrc_ext[i], config.contact_force_range);
      const double contact_cost = config.contact_cost_weight * SquaredSum(forces.data(), forces.size());
      reward = (forward + survive) - (ctrl_cost + contact_cost);
      ctrl = -ctrl_cost;
      contact = -contact_cost;
      terminated_ = !Healthy() && config.terminate_when_unhealthy;
      break;
    }
    case MujocoTaskKind::kHumanoid: {
      forward = config.forward_reward_weight * x_velocity;
      survive = static_cast<double>(Healthy()) * config.healthy_reward;
      const double ctrl_cost = config.ctrl_cost_weight * SquaredSum(data_->ctrl, nu);
      const double contact_cost =
          Clip(config.contact_cost_weight * SquaredSum(data_->cfrc_ext, task_->layout().contact_forces),
               config.contact_cost_range);
      reward = (forward + survive) - (ctrl_cost + contact_cost);
      ctrl = -ctrl_cost;
      contact = -contact_cost;
      terminated_ = !Healthy() && config.terminate_when_unhealthy;
      break;
    }
    case MujocoTaskKind::kInvertedPendulum: {
      terminated_ = !Healthy();
      reward = terminated_ ? 0.0 : 1.0;
      survive = reward;
      break;
    }
  }
  info_[kXVelocity] = x_velocity;
  info_[kYVelocity] = y_velocity;
  StepInfo(forward, ctrl, contact, survive);
  episode_return_ += reward;
  return reward;
}

void MujocoSimulation::StepInfo(double reward_forward, double reward_ctrl, double reward_contact,
                                double reward_survive) {
  const MujocoTaskKind kind = task_->kind();
  const double* qpos = data_->qpos;
  const bool planar_xy =
      kind == MujocoTaskKind::kSwimmer || kind == MujocoTaskKind::kAnt || kind == MujocoTaskKind::kHumanoid;
  if (kind != MujocoTaskKind::kInvertedPendulum) info_[kXPosition] = qpos[0];
  if (planar_xy) {
    info_[kYPosition] = qpos[1];
    info_[kDistanceFromOrigin] = std::sqrt(qpos[0] * qpos[0] + qpos[1] * qpos[1]);
  } else {
    info_[kYVelocity] = kNaN;
  }
  if (kind == MujocoTaskKind::kHopper || kind == MujocoTaskKind::kWalker2d) {
    info_[kZDistanceFromOrigin] = qpos[1] - model_->qpos0[1];
  }
  if (kind == MujocoTaskKind::kInvertedPendulum) info_[kXVelocity] = kNaN;
  info_[kRewardForward] = reward_forward;
  info_[kRewardCtrl] = reward_ctrl;
  info_[kRewardContact] = reward_contact;
  info_[kRewardSurvive] = reward_survive;
}

bool MujocoSimulation::Healthy() const {
  const MujocoTaskConfig& config = task_->config();
  const double* qpos = data_->qpos;
  switch (task_->kind()) {
    case MujocoTaskKind::kHopper: {
      const double z = qpos[1], angle = qpos[2];
      bool healthy_state = true;
      for (int i = 2; i < model_->nq + model_->nv; ++i) {
        const double value = StateValue(i);
        healthy_state &= config.healthy_state_range[0] < value && value < config.healthy_state_range[1];
      }
      return healthy_state && config.healthy_z_range[0] < z && z < config.healthy_z_range[1] &&
             config.healthy_angle_range[0] < angle && angle < config.healthy_angle_range[1];
    }
    case MujocoTaskKind::kWalker2d: {
      const double z = qpos[1], angle = qpos[2];
      return config.healthy_z_range[0] < z && z < config.healthy_z_range[1] && config.healthy_angle_range[0] < angle &&
             angle < config.healthy_angle_range[1];
    }
    case MujocoTaskKind::kAnt: {
      bool finite = true;
      for (int i = 0; i < model_->nq + model_->nv; ++i) finite &= std::isfinite(StateValue(i));
      const double z = StateValue(2);  // Gymnasium's state_vector()[2]: qpos[2], or a velocity on small models
      return finite && config.healthy_z_range[0] <= z && z <= config.healthy_z_range[1];
    }
    case MujocoTaskKind::kHumanoid:
      return config.healthy_z_range[0] < qpos[2] && qpos[2] < config.healthy_z_range[1];
    case MujocoTaskKind::kInvertedPendulum: {
      bool finite = true;
      for (double value : observation_) finite &= std::isfinite(value);
      return finite && !(std::fabs(observation_[1]) > 0.2);
    }
    default:
      return true;
  }
}

void MujocoSimulation::ComputeObservation() {
  const MujocoTaskConfig& config = task_->config();
  const MujocoLayout& layout = task_->layout();
  WORKBENCH_DCHECK(observation_.size() == static_cast<size_t>(layout.observation_size),
                   "observation buffer of another size than the layout");
  double* out = observation_.data();
  double* const end = out + observation_.size();
  for (const MujocoObservationPart& part : layout.observation) {
    const double* source = nullptr;
    int length = 0;
    switch (part.source) {
      case MujocoSource::kQpos:
        source = data_->qpos, length = layout.nq;
        break;
      case MujocoSource::kQvel:
        source = data_->qvel, length = layout.nv;
        break;
      case MujocoSource::kCinert:
        source = data_->cinert, length = 10 * layout.nbody;
        break;
      case MujocoSource::kCvel:
        source = data_->cvel, length = 6 * layout.nbody;
        break;
      case MujocoSource::kQfrcActuator:
        source = data_->qfrc_actuator, length = layout.nv;
        break;
      case MujocoSource::kCfrcExt:
        source = data_->cfrc_ext, length = layout.contact_forces;
        break;
    }
    WORKBENCH_DCHECK(part.size == 0 || part.begin + part.size <= length, "observation part reads past its array");
    WORKBENCH_DCHECK(part.size <= end - out, "observation part written past the buffer");
    for (int i = part.begin; i < part.begin + part.size; ++i) {
      const double value = source[i];
      switch (part.clip) {
        case MujocoClip::kNone:
          *out++ = value;
          break;
        case MujocoClip::kVelocity:
          *out++ = value < -10.0 ? -10.0 : (value > 10.0 ? 10.0 : value);
          break;
        case MujocoClip::kContactForce:
          *out++ = Clip(value, config.contact_force_range);
          break;
      }
    }
  }
  WORKBENCH_DCHECK(out == end, "observation shorter than the layout");
}

void MujocoSimulation::WriteObservation(float* out) const {
  // `out` holds observation_size() floats: the kernels allocate [n, task.observation_size()].
  for (size_t i = 0; i < observation_.size(); ++i) out[i] = static_cast<float>(observation_[i]);
}

void MujocoSimulation::WriteQpos(double* out) const {
  for (int i = 0; i < model_->nq; ++i) out[i] = data_->qpos[i];
}

void MujocoSimulation::WriteQvel(double* out) const {
  for (int i = 0; i < model_->nv; ++i) out[i] = data_->qvel[i];
}

void MujocoSimulation::CountFeetContact() {
  const std::vector<int>& feet = task_->foot_geoms();
  for (size_t f = 0; f < feet.size(); ++f) {
    if (feet[f] < 0) continue;
    for (int c = 0; c < data_->ncon; ++c) {
      const mjContact& contact = data_->contact[c];
      const int a = contact.geom[0], b = contact.geom[1];
      const int other = a == feet[f] ? b : (b == feet[f] ? a : -1);
      if (other >= 0 && model_->geom_bodyid[other] == 0) {  // the foot against a geom of the world: the ground
        ++foot_contact_steps_[f];
        break;
      }
    }
  }
}

void MujocoSimulation::WriteFeetContact(double* out) const {
  for (size_t f = 0; f < foot_contact_steps_.size(); ++f) {
    out[f] = steps_ > 0 ? static_cast<double>(foot_contact_steps_[f]) / static_cast<double>(steps_) : 0.0;
  }
}

void MujocoSimulation::WriteMainBodyXy(double* out) const {
  const int body = task_->config().main_body;
  out[0] = data_->xpos[3 * body];
  out[1] = data_->xpos[3 * body + 1];
}

}  // namespace workbench
