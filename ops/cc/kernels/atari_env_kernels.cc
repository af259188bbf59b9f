// CPU kernels of the in-graph Atari emulators: a batch of AtariEmulator in a
// TensorFlow resource, stepped on TF's intra-op thread pool (one emulator per
// task). Every bad call becomes an InvalidArgument error naming the argument,
// checked before any emulator is touched, so a failed call changes nothing.
// The scaffolding every simulator family shares is in env_batch_kernels.h.
#include <memory>
#include <string>
#include <vector>

#include "atari_emulator.h"
#include "env_batch_kernels.h"
#include "frame_preprocessing.h"

namespace workbench {
namespace {

using ::tensorflow::DEVICE_CPU;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;

class AtariEnvBatch : public EnvBatch<AtariEmulator> {
 public:
  explicit AtariEnvBatch(const AtariConfig& config) : config(config) {}

  std::string DebugString() const override {
    return "AtariEnvBatch(" + config.rom_path + ", " + std::to_string(size()) + ")";
  }

  const AtariConfig config;
  std::unique_ptr<const FrameResizer> resizer;  // from the game's screen size to screen_size
};

// Emulators per batch at most (each holds an ALE instance of about a megabyte).
constexpr int64_t kMaxBatchSize = 1 << 16;

// Cost hint of one emulator step, reset or ROM load: far above any block size,
// so every emulator is a task of its own, balanced dynamically.
constexpr int64_t kEmulatorCost = 1000000;

// Runs fn(i) for i in [0, n) on the intra-op pool and turns a C++ exception
// into an error. cost_per_item: kEmulatorCost (one task per emulator), or a
// copy's bytes (the pool picks block sizes from the cost).
template <typename Fn>
absl::Status ForEach(OpKernelContext* ctx, int64_t n, int64_t cost_per_item, Fn fn) {
  const auto params = cost_per_item >= kEmulatorCost
                          ? tsl::thread::ThreadPool::SchedulingParams::Fixed(1)
                          : tsl::thread::ThreadPool::SchedulingParams::Adaptive(cost_per_item);
  return ParallelForEach(ctx, n, params, "ALE failed", fn);
}

class AtariEnvCreateOp : public OpKernel {
 public:
  explicit AtariEnvCreateOp(OpKernelConstruction* ctx) : OpKernel(ctx) {
    OP_REQUIRES_OK(ctx, ctx->GetAttr("rom_path", &config_.rom_path));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("batch_size", &batch_size_));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("frame_skip", &config_.frame_skip));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("noop_max", &config_.noop_max));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("repeat_action_probability", &config_.repeat_action_probability));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("max_episode_frames", &config_.max_episode_frames));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("fire_reset", &config_.fire_reset));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("screen_size", &config_.screen_size));
    OP_REQUIRES_OK(ctx, ctx->GetAttr("stack_size", &config_.stack_size));
    const float p = config_.repeat_action_probability;
    OP_REQUIRES(ctx, p >= 0.0f && p <= 1.0f,
                absl::InvalidArgumentError(absl::StrCat("repeat_action_probability must be in [0, 1], got ", p)));
    OP_REQUIRES(
        ctx, config_.screen_size <= 1024,
        absl::InvalidArgumentError(absl::StrCat("screen_size must be at most 1024, got ", config_.screen_size)));
    OP_REQUIRES(ctx, config_.stack_size <= 64,
                absl::InvalidArgumentError(absl::StrCat("stack_size must be at most 64, got ", config_.stack_size)));
    OP_REQUIRES(
        ctx, batch_size_ <= kMaxBatchSize,
        absl::InvalidArgumentError(absl::StrCat("batch_size must be at most ", kMaxBatchSize, ", got ", batch_size_)));
    OP_REQUIRES(ctx, config_.max_episode_frames <= INT32_MAX,
                absl::InvalidArgumentError(
                    absl::StrCat("max_episode_frames must fit in int32, got ", config_.max_episode_frames)));
  }

  void Compute(OpKernelContext* ctx) override {
    const std::string problem = CheckRom(config_.rom_path);
    OP_REQUIRES(ctx, problem.empty(),
                absl::InvalidArgumentError(absl::StrCat("rom_path '", config_.rom_path, "' ", problem)));

    auto* batch = new AtariEnvBatch(config_);
    ::tensorflow::core::ScopedUnref unref_on_error(batch);
    batch->simulators.resize(batch_size_);
    // The first emulator tells the screen size (210x160 for most games, 250x160
    // for a few); the others load in parallel (a ROM takes tens of milliseconds).
    OP_REQUIRES_OK(ctx, ForEach(ctx, 1, kEmulatorCost, [&](int64_t) {
                     batch->simulators[0].reset(new AtariEmulator(batch->config, nullptr));
                   }));
    const AtariEmulator& first = *batch->simulators[0];
    const int64_t pixels = static_cast<int64_t>(first.screen_height()) * first.screen_width();
    OP_REQUIRES(ctx, pixels > 0 && pixels * 255 < (int64_t{1} << 24),
                absl::UnimplementedError(absl::StrCat("rom_path '", config_.rom_path, "' has a ", first.screen_height(),
                                                      "x", first.screen_width(), " screen, too large for the resize")));
    batch->resizer.reset(
        new FrameResizer(first.screen_height(), first.screen_width(), config_.screen_size, config_.screen_size));
    batch->simulators[0]->set_resizer(batch->resizer.get());
    OP_REQUIRES_OK(ctx, ForEach(ctx, batch_size_ - 1, kEmulatorCost, [&](int64_t i) {
                     batch->simulators[i + 1].reset(new AtariEmulator(batch->config, batch->resizer.get()));
                   }));
    Tensor* action_set = nullptr;
    const std::vector<int>& actions = batch->simulators[0]->action_set();
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({static_cast<int64_t>(actions.size())}), &action_set));
    for (size_t a = 0; a < actions.size(); ++a) action_set->vec<int32_t>()(a) = actions[a];

    OP_REQUIRES_OK(ctx, PublishBatch(ctx, batch, "workbench_atari_env_", 0));
  }

 private:
  AtariConfig config_;
  int64_t batch_size_ = 0;
};

using AtariEnvOp = EnvBatchOp<AtariEnvBatch>;

class AtariEnvResetOp : public AtariEnvOp {
 public:
  using AtariEnvOp::AtariEnvOp;

 protected:
  void Run(OpKernelContext* ctx, AtariEnvBatch* batch, const std::vector<int32_t>& indices) override {
    OP_REQUIRES_OK(ctx, RequireRows(ctx, 2, "seeds", indices.size(), -1));
    auto seeds = ctx->input(2).vec<int64_t>();
    Tensor* done = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(indices.size())}), &done));
    auto d = done->vec<bool>();
    OP_REQUIRES_OK(ctx, ForEach(ctx, indices.size(), kEmulatorCost, [&](int64_t i) {
                     AtariEmulator* emulator = batch->simulators[indices[i]].get();
                     emulator->Reset(static_cast<uint64_t>(seeds(i)));
                     d(i) = emulator->done();
                   }));
  }
};

// Steps the emulators; with kObserve, also writes their observations in the
// same task, right after the step (one op and one pass fewer per step).
template <bool kObserve>
class AtariEnvStepOp : public AtariEnvOp {
 public:
  using AtariEnvOp::AtariEnvOp;

 protected:
  void Run(OpKernelContext* ctx, AtariEnvBatch* batch, const std::vector<int32_t>& indices) override {
    const size_t n = indices.size();
    OP_REQUIRES_OK(ctx, RequireRows(ctx, 2, "actions", n, -1));
    OP_REQUIRES_OK(ctx, RequireStarted(batch, indices));
    auto actions = ctx->input(2).vec<int32_t>();
    const int num_actions = static_cast<int>(batch->simulators[0]->action_set().size());
    for (size_t i = 0; i < n; ++i) {
      OP_REQUIRES(
          ctx, actions(i) >= 0 && actions(i) < num_actions,
          absl::InvalidArgumentError(absl::StrCat("actions[", i, "] = ", actions(i),
                                                  " is not an action of this game: ", "its minimal action set has ",
                                                  num_actions, " actions [0, ", num_actions, ")")));
    }
    OP_REQUIRES_OK(ctx, RequireNotDone(batch, indices));
    const int64_t rows = static_cast<int64_t>(n);
    Tensor* rewards = nullptr;
    Tensor* done = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({rows}), &rewards));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({rows}), &done));
    uint8_t* observations = nullptr;
    const int64_t size = batch->config.screen_size, stack = batch->config.stack_size;
    if (kObserve) {
      Tensor* out = nullptr;
      OP_REQUIRES_OK(ctx, ctx->allocate_output(2, TensorShape({rows, size, size, stack}), &out));
      observations = out->flat<uint8_t>().data();
    }
    auto r = rewards->vec<float>();
    auto d = done->vec<bool>();
    OP_REQUIRES_OK(ctx, ForEach(ctx, n, kEmulatorCost, [&](int64_t i) {
                     AtariEmulator* emulator = batch->simulators[indices[i]].get();
                     r(i) = emulator->Step(actions(i));
                     d(i) = emulator->done();
                     if (kObserve) emulator->WriteObservation(observations + i * size * size * stack);
                   }));
  }
};

class AtariEnvObservationOp : public AtariEnvOp {
 public:
  using AtariEnvOp::AtariEnvOp;

 protected:
  void Run(OpKernelContext* ctx, AtariEnvBatch* batch, const std::vector<int32_t>& indices) override {
    OP_REQUIRES_OK(ctx, RequireStarted(batch, indices));
    const int64_t size = batch->config.screen_size, stack = batch->config.stack_size;
    Tensor* out = nullptr;
    OP_REQUIRES_OK(
        ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(indices.size()), size, size, stack}), &out));
    uint8_t* data = out->flat<uint8_t>().data();
    const int64_t per_item = size * size * stack;
    OP_REQUIRES_OK(ctx, ForEach(ctx, indices.size(), per_item * 4, [&](int64_t i) {
                     batch->simulators[indices[i]]->WriteObservation(data + i * per_item);
                   }));
  }
};

class AtariEnvScreenOp : public AtariEnvOp {
 public:
  using AtariEnvOp::AtariEnvOp;

 protected:
  void Run(OpKernelContext* ctx, AtariEnvBatch* batch, const std::vector<int32_t>& indices) override {
    const AtariEmulator& first = *batch->simulators[0];
    const int64_t h = first.screen_height(), w = first.screen_width();
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(indices.size()), h, w, 3}), &out));
    uint8_t* data = out->flat<uint8_t>().data();
    OP_REQUIRES_OK(ctx, ForEach(ctx, indices.size(), h * w * 12, [&](int64_t i) {
                     batch->simulators[indices[i]]->WriteScreenRgb(data + i * h * w * 3);
                   }));
  }
};

class AtariEnvRamOp : public AtariEnvOp {
 public:
  using AtariEnvOp::AtariEnvOp;

 protected:
  void Run(OpKernelContext* ctx, AtariEnvBatch* batch, const std::vector<int32_t>& indices) override {
    constexpr int64_t kRam = AtariEmulator::kRamSize;
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(indices.size()), kRam}), &out));
    uint8_t* data = out->flat<uint8_t>().data();
    for (size_t i = 0; i < indices.size(); ++i) batch->simulators[indices[i]]->WriteRam(data + i * kRam);
  }
};

class AtariEnvStatusOp : public AtariEnvOp {
 public:
  using AtariEnvOp::AtariEnvOp;

 protected:
  void Run(OpKernelContext* ctx, AtariEnvBatch* batch, const std::vector<int32_t>& indices) override {
    const TensorShape shape({static_cast<int64_t>(indices.size())});
    Tensor *lives, *frames, *returns, *done, *truncated;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, shape, &lives));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, shape, &frames));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(2, shape, &returns));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(3, shape, &done));
    OP_REQUIRES_OK(ctx, ctx->allocate_output(4, shape, &truncated));
    for (size_t i = 0; i < indices.size(); ++i) {
      const AtariEmulator& emulator = *batch->simulators[indices[i]];
      lives->vec<int32_t>()(i) = emulator.lives();
      frames->vec<int32_t>()(i) = emulator.episode_frame_number();
      returns->vec<float>()(i) = emulator.episode_return();
      done->vec<bool>()(i) = emulator.done();
      truncated->vec<bool>()(i) = emulator.truncated();
    }
  }
};

REGISTER_KERNEL_BUILDER(Name("Workbench>AtariEnvCreate").Device(DEVICE_CPU), AtariEnvCreateOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>AtariEnvReset").Device(DEVICE_CPU), AtariEnvResetOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>AtariEnvStep").Device(DEVICE_CPU), AtariEnvStepOp<false>);
REGISTER_KERNEL_BUILDER(Name("Workbench>AtariEnvStepAndObserve").Device(DEVICE_CPU), AtariEnvStepOp<true>);
REGISTER_KERNEL_BUILDER(Name("Workbench>AtariEnvObservation").Device(DEVICE_CPU), AtariEnvObservationOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>AtariEnvScreen").Device(DEVICE_CPU), AtariEnvScreenOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>AtariEnvRam").Device(DEVICE_CPU), AtariEnvRamOp);
REGISTER_KERNEL_BUILDER(Name("Workbench>AtariEnvStatus").Device(DEVICE_CPU), AtariEnvStatusOp);

}  // namespace
}  // namespace workbench
