// CPU kernels of the in-graph MuJoCo simulations: a batch of MujocoSimulation
// of one task in a TensorFlow resource, stepped on TF's intra-op thread pool
// (one simulation per task). Every bad call becomes an InvalidArgument error
// naming the argument, checked before any simulation is touched, so a failed
// call changes nothing. The scaffolding every simulator family shares is in
// env_batch_kernels.h.
#include <algorithm>
#include <cmath>
#include <exception>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "env_batch_kernels.h"
#include "mujoco_simulation.h"
#include "tsl/platform/denormal.h"

namespace workbench {
namespace {

using ::tensorflow::DEVICE_CPU;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;

class MujocoEnvBatch : public EnvBatch<MujocoSimulation> {
 public:
  // Takes a task already made: a constructor that throws would destroy a
  // reference-counted object whose count is still 1 (a failed check in debug builds).
  explicit MujocoEnvBatch(std::unique_ptr<const MujocoTask> made) : task_holder(std::move(made)), task(*task_holder) {}

  std::string DebugString() const override {
    return "MujocoEnvBatch(" + task.config().task + ", " + std::to_string(size()) + ")";
  }

  const std::unique_ptr<const MujocoTask> task_holder;
  const MujocoTask& task;
};

// MuJoCo's Python bindings install a profiling timer (mjcb_time) when they are
// imported, and mj_step calls it many times per step: measured, it made the
// ops' steps 15 % slower. Physics does not depend on it; the ops switch it
// off before they step (data.timer then stays zero, for Python users too).
void SwitchOffProfilingTimer() {
  if (mjcb_time != nullptr) mjcb_time = nullptr;
}

// TensorFlow's threads flush denormal floats to zero; numpy and MuJoCo in
// Gymnasium's process do not, and a physics value or observation can be a
// denormal (a contact force of 1e-43 on a foreign model). Every piece of
// simulation work runs under DenormalsKept, so that it rounds as Gymnasium's.
using DenormalsKept = tsl::port::ScopedDontFlushDenormal;

// Runs fn(i) for i in [0, n) on the intra-op pool and turns a C++ exception
// into an error. A simulation step takes microseconds to a fraction of a
// millisecond, so items go in blocks of n / (4 x threads): few enough tasks
// to keep the pool's per-task overhead small, enough to balance simulations
// whose steps cost different amounts (contacts).
template <typename Fn>
absl::Status ForEach(OpKernelContext* ctx, int64_t n, Fn fn) {
  SwitchOffProfilingTimer();
  const int threads = ctx->device()->tensorflow_cpu_worker_threads()->workers->NumThreads();
  const int64_t block = std::max<int64_t>(1, n / (4 * std::max(1, threads)));
  return ParallelForEach<DenormalsKept>(ctx, n, tsl::thread::ThreadPool::SchedulingParams::Fixed(block),
                                        "MuJoCo failed", fn);
}

// The task's real-valued settings arrive as a float64 input (TensorFlow has no
// float64 attributes), in the order of PARAMETERS in workbench/envs/mujoco_tasks.py:
// five scalars, then five (low, high) ranges.
constexpr int kNumParameters = 15;

// Simulations per batch at most (an mjData takes tens of kilobytes to megabytes).
constexpr int64_t kMaxBatchSize = 1 << 16;

class MujocoEnvCreateOp : public OpKernel {
 public:
  explicit MujocoEnvCreateOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("task", &config_.task));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("xml_path", &config_.xml_path));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("batch_size", &batch_size_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("frame_skip", &config_.frame_skip));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("max_episode_steps", &config_.max_episode_steps));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("terminate_when_unhealthy", &config_.terminate_when_unhealthy));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("exclude_current_positions_from_observation",
                                     &config_.exclude_current_positions_from_observation));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("include_cfrc_ext_in_observation", &config_.include_cfrc_ext_in_observation));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("include_cinert_in_observation", &config_.include_cinert_in_observation));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("include_cvel_in_observation", &config_.include_cvel_in_observation));
    OP_REQUIRES_OK(ctx,
                   ctx->GetAttr("include_qfrc_actuator_in_observation", &config_.include_qfrc_actuator_in_observation));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("main_body", &config_.main_body));
    OP_REQUIRES(
        ctx, batch_size_ <= kMaxBatchSize,
        absl::InvalidArgumentError(absl::StrCat("batch_size must be at most ", kMaxBatchSize, ", got ", batch_size_)));
    OP_REQUIRES(ctx, config_.frame_skip <= 1000,
                absl::InvalidArgumentError(absl::StrCat("frame_skip must be at most 1000, got ", config_.frame_skip)));
  }

  void Compute(OpKernelContext* ctx) override {
    const std::string problem = CheckMujocoTask(config_.task);
    OP_REQUIRES(ctx, problem.empty(), absl::InvalidArgumentError(absl::StrCat("task '", config_.task, "' ", problem)));
    MujocoTaskConfig config = config_;
    const Tensor& parameters = ctx->input(0);
    OP_REQUIRES(ctx, parameters.dims() == 1 && parameters.dim_size(0) == kNumParameters,
                absl::InvalidArgumentError(absl::StrCat("parameters must be a vector of ", kNumParameters,
                                                        " values, got shape ", parameters.shape().DebugString())));
    const double* values = parameters.flat<double>().data();
    for (int i = 0; i < kNumParameters; ++i) {
      OP_REQUIRES(ctx, !std::isnan(values[i]), absl::InvalidArgumentError(absl::StrCat("parameters[", i, "] is NaN")));
    }
    config.forward_reward_weight = values[0];
    config.ctrl_cost_weight = values[1];
    config.contact_cost_weight = values[2];
    config.healthy_reward = values[3];
    config.reset_noise_scale = values[4];
    OP_REQUIRES(ctx, config.reset_noise_scale >= 0 && std::isfinite(config.reset_noise_scale),
                absl::InvalidArgumentError(
                    absl::StrCat("reset_noise_scale must be finite and >= 0, got ", config.reset_noise_scale)));
    const struct {
      double* out;
      int first;
      const char* name;
    } ranges[] = {{config.healthy_z_range, 5, "healthy_z_range"},
                  {config.healthy_angle_range, 7, "healthy_angle_range"},
                  {config.healthy_state_range, 9, "healthy_state_range"},
                  {config.contact_force_range, 11, "contact_force_range"},
                  {config.contact_cost_range, 13, "contact_cost_range"}};
    for (const auto& range : ranges) {
      range.out[0] = values[range.first];
      range.out[1] = values[range.first + 1];
      OP_REQUIRES(ctx, range.out[0] <= range.out[1],
                  absl::InvalidArgumentError(absl::StrCat(range.name, " must have low <= high, got (", range.out[0],
                                                          ", ", range.out[1], ")")));
    }
    std::unique_ptr<const MujocoTask> task;
    try {
      task = std::make_unique<const MujocoTask>(config);
    } catch (const std::exception& e) {
      ctx->SetStatus(absl::InvalidArgumentError(e.what()));
      return;
    }
    auto* batch = new MujocoEnvBatch(std::move(task));
    ::tensorflow::core::ScopedUnref unref_on_error(batch);
    batch->simulators.resize(batch_size_);
    OP_REQUIRES_OK(ctx, ForEach(ctx, batch_size_,
                                [&](int64_t i) { batch->simulators[i].reset(new MujocoSimulation(&batch->task)); }));
    const mjModel* model = batch->task.model();
    Tensor* sizes = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({4}), &sizes));
    auto s = sizes->vec<int32_t>();
    s(0) = batch->task.observation_size();
    s(1) = model->nu;
    s(2) = model->nq;
    s(3) = model->nv;
    Tensor* ctrl_range = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({model->nu, 2}), &ctrl_range));
    auto r = ctrl_range->matrix<float>();
    for (int i = 0; i < model->nu; ++i) {
      const bool limited = model->actuator_ctrllimited[i];
      r(i, 0) = limited ? static_cast<float>(model->actuator_ctrlrange[2 * i]) : -INFINITY;
      r(i, 1) = limited ? static_cast<float>(model->actuator_ctrlrange[2 * i + 1]) : INFINITY;
    }

    OP_REQUIRES_OK(ctx, PublishBatch(ctx, batch, "workbench_mujoco_env_", 0));
  }

 private:
  MujocoTaskConfig config_;
  int64_t batch_size_ = 0;
};

// Base of the ops that act on an existing batch (EnvBatchOp, with denormals
// kept for the whole call), with the allocation of observation outputs.
class MujocoEnvOp : public EnvBatchOp<MujocoEnvBatch, DenormalsKept> {
 public:
  using EnvBatchOp::EnvBatchOp;

 protected:
  static absl::Status AllocateObservations(OpKernelContext* ctx, int output, MujocoEnvBatch* batch, size_t n,
                                           float** data) {
    Tensor* out = nullptr;
    TF_RETURN_IF_ERROR(
        ctx->allocate_output(output, TensorShape({static_cast<int64_t>(n), batch->task.observation_size()}), &out));
    *data = out->flat<float>().data();
    return absl::OkStatus();
  }
};

class MujocoEnvResetOp : public MujocoEnvOp {
 public:
  using MujocoEnvOp::MujocoEnvOp;

 protected:
  void Run(OpKernelContext* ctx, MujocoEnvBatch* batch, const std::vector<int32_t>& indices) override {
    OP_REQUIRES_OK(ctx, RequireRows(ctx, 2, "seeds", indices.size(), -1));
    auto seeds = ctx->input(2).vec<int64_t>();
    float* observations = nullptr;
    OP_REQUIRES_OK(ctx, AllocateObservations(ctx, 0, batch, indices.size(), &observations));
    const int64_t size = batch->task.observation_size();
    OP_REQUIRES_OK(ctx, ForEach(ctx, indices.size(), [&](int64_t i) {
                     MujocoSimulation* simulation = batch->simulators[indices[i]].get();
                     simulation->Reset(static_cast<uint64_t>(seeds(i)));
                     simulation->WriteObservation(observations + i * size);
                   }));
  }
};

// Steps the simulations; with kObserve, also writes their observations in the
// same task, right after the step.
template <bool kObserve>
class MujocoEnvStepOp : public MujocoEnvOp {
 public:
  using MujocoEnvOp::MujocoEnvOp;

 protected:
  void Run(OpKernelContext* ctx, MujocoEnvBatch* batch, const std::vector<int32_t>& indices) override {
    const size_t n = indices.size();
    const int64_t action_size = batch->task.action_size();
    OP_REQUIRES_OK(ctx, RequireRows(ctx, 2, "actions", n, action_size));
    OP_REQUIRES_OK(ctx, RequireStarted(batch, indices));
    const float* actions = ctx->input(2).flat<float>().data();
    for (size_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < action_size; ++j) {
        OP_REQUIRES(ctx, std::isfinite(actions[i * action_size + j]),
                    absl::InvalidArgumentError(
                        absl::StrCat("actions[", i, ", ", j, "] = ", actions[i * action_size + j], " is not finite")));
      }
    }
    OP_REQUIRES_OK(ctx, RequireNotDone(batch, indices));
    const int64_t rows = static_cast<int64_t>(n);
    Tensor *rewards = nullptr, *terminated = nullptr, *truncated = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({rows}), &rewards));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({rows}), &terminated));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({rows}), &truncated));
    float* observations = nullptr;
    if (kObserve) OP_REQUIRES_OK(ctx, AllocateObservations(ctx, 3, batch, n, &observations));
    const int64_t size = batch->task.observation_size();
    auto r = rewards->vec<float>();
    auto te = terminated->vec<bool>();
    auto tr = truncated->vec<bool>();
    OP_REQUIRES_OK(ctx, ForEach(ctx, n, [&](int64_t i) {
                     MujocoSimulation* simulation = batch->simulators[indices[i]].get();
                     r(i) = static_cast<float>(simulation->Step(actions + i * action_size));
                     te(i) = simulation->terminated();
                     tr(i) = simulation->truncated();
                     if (kObserve) simulation->WriteObservation(observations + i * size);
                   }));
  }
};

class MujocoEnvObservationOp : public MujocoEnvOp {
 public:
  using MujocoEnvOp::MujocoEnvOp;

 protected:
  void Run(OpKernelContext* ctx, MujocoEnvBatch* batch, const std::vector<int32_t>& indices) override {
    OP_REQUIRES_OK(ctx, RequireStarted(batch, indices));
    float* observations = nullptr;
    OP_REQUIRES_OK(ctx, AllocateObservations(ctx, 0, batch, indices.size(), &observations));
    const int64_t size = batch->task.observation_size();
    for (size_t i = 0; i < indices.size(); ++i) {
      batch->simulators[indices[i]]->WriteObservation(observations + i * size);
    }
  }
};

class MujocoEnvStatusOp : public MujocoEnvOp {
 public:
  using MujocoEnvOp::MujocoEnvOp;

 protected:
  void Run(OpKernelContext* ctx, MujocoEnvBatch* batch, const std::vector<int32_t>& indices) override {
    const int64_t n = static_cast<int64_t>(indices.size());
    const TensorShape shape({n});
    Tensor *returns, *lengths, *terminated, *truncated, *unstable, *info;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &returns));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, shape, &lengths));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, shape, &terminated));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, shape, &truncated));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(4, shape, &unstable));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(5, TensorShape({n, kNumInfo}), &info));
    auto terms = info->matrix<double>();
    for (int64_t i = 0; i < n; ++i) {
      const MujocoSimulation& simulation = *batch->simulators[indices[i]];
      returns->vec<double>()(i) = simulation.episode_return();
      lengths->vec<int32_t>()(i) = static_cast<int32_t>(simulation.steps());
      terminated->vec<bool>()(i) = simulation.terminated();
      truncated->vec<bool>()(i) = simulation.truncated();
      unstable->vec<bool>()(i) = simulation.unstable();
      for (int k = 0; k < kNumInfo; ++k) terms(i, k) = simulation.info()[k];
    }
  }
};

class MujocoEnvStateOp : public MujocoEnvOp {
 public:
  using MujocoEnvOp::MujocoEnvOp;

 protected:
  void Run(OpKernelContext* ctx, MujocoEnvBatch* batch, const std::vector<int32_t>& indices) override {
    OP_REQUIRES_OK(ctx, RequireStarted(batch, indices));
    const mjModel* model = batch->task.model();
    const int64_t n = static_cast<int64_t>(indices.size());
    Tensor *qpos, *qvel, *xy;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({n, model->nq}), &qpos));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({n, model->nv}), &qvel));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({n, 2}), &xy));
    for (int64_t i = 0; i < n; ++i) {
      const MujocoSimulation& simulation = *batch->simulators[indices[i]];
      simulation.WriteQpos(qpos->flat<double>().data() + i * model->nq);
      simulation.WriteQvel(qvel->flat<double>().data() + i * model->nv);
      simulation.WriteMainBodyXy(xy->flat<double>().data() + i * 2);
    }
  }
};

class MujocoEnvFeetContactOp : public MujocoEnvOp {
 public:
  using MujocoEnvOp::MujocoEnvOp;

 protected:
  void Run(OpKernelContext* ctx, MujocoEnvBatch* batch, const std::vector<int32_t>& indices) override {
    OP_REQUIRES(ctx, batch->task.feet_error().empty(),
                absl::InvalidArgumentError(
                    absl::StrCat("feet contact of ", batch->task.config().task, ": ", batch->task.feet_error())));
    OP_REQUIRES_OK(ctx, RequireStarted(batch, indices));
    const int64_t n = static_cast<int64_t>(indices.size());
    const int64_t feet = static_cast<int64_t>(batch->task.foot_geoms().size());
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({n, feet}), &out));
    for (int64_t i = 0; i < n; ++i)
      batch->simulators[indices[i]]->WriteFeetContact(out->flat<double>().data() + i * feet);
  }
};

class MujocoEnvSetStateOp : public MujocoEnvOp {
 public:
  using MujocoEnvOp::MujocoEnvOp;

 protected:
  void Run(OpKernelContext* ctx, MujocoEnvBatch* batch, const std::vector<int32_t>& indices) override {
    const mjModel* model = batch->task.model();
    const size_t n = indices.size();
    OP_REQUIRES_OK(ctx, RequireStarted(batch, indices));
    OP_REQUIRES_OK(ctx, RequireRows(ctx, 2, "qpos", n, model->nq));
    OP_REQUIRES_OK(ctx, RequireRows(ctx, 3, "qvel", n, model->nv));
    const double* qpos = ctx->input(2).flat<double>().data();
    const double* qvel = ctx->input(3).flat<double>().data();
    for (int64_t i = 0; i < static_cast<int64_t>(n) * model->nq; ++i) {
      OP_REQUIRES(ctx, std::isfinite(qpos[i]),
                  absl::InvalidArgumentError(
                      absl::StrCat("qpos[", i / model->nq, ", ", i % model->nq, "] = ", qpos[i], " is not finite")));
    }
    for (int64_t i = 0; i < static_cast<int64_t>(n) * model->nv; ++i) {
      OP_REQUIRES(ctx, std::isfinite(qvel[i]),
                  absl::InvalidArgumentError(
                      absl::StrCat("qvel[", i / model->nv, ", ", i % model->nv, "] = ", qvel[i], " is not finite")));
    }
    float* observations = nullptr;
    OP_REQUIRES_OK(ctx, AllocateObservations(ctx, 0, batch, n, &observations));
    const int64_t size = batch->task.observation_size();
    OP_REQUIRES_OK(ctx, ForEach(ctx, n, [&](int64_t i) {
                     MujocoSimulation* simulation = batch->simulators[indices[i]].get();
                     simulation->SetState(qpos + i * model->nq, qvel + i * model->nv);
                     simulation->WriteObservation(observations + i * size);
                   }));
  }
};

REGISTER_KERNEL_BUILDER(Name("Workbench>MujocoEnvCreate").Device(DEVICE_CPU), MujocoEnvCreateOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>MujocoEnvReset").Device(DEVICE_CPU), MujocoEnvResetOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>MujocoEnvStep").Device(DEVICE_CPU), MujocoEnvStepOp<false>);
REGISTER_KERNEL_BUILDER(Name("Workbench>MujocoEnvStepAndObserve").Device(DEVICE_CPU), MujocoEnvStepOp<true>);
REGISTER_KERNEL_BUILDER(Name("Workbench>MujocoEnvObservation").Device(DEVICE_CPU), MujocoEnvObservationOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>MujocoEnvStatus").Device(DEVICE_CPU), MujocoEnvStatusOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>MujocoEnvState").Device(DEVICE_CPU), MujocoEnvStateOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>MujocoEnvSetState").Device(DEVICE_CPU), MujocoEnvSetStateOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>MujocoEnvFeetContact").Device(DEVICE_CPU), MujocoEnvFeetContactOp);

}  // namespace
}  // namespace workbench
