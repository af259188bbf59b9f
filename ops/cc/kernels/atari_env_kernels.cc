// CPU kernels of the in-graph Atari emulators: a batch of AtariEmulator in a
// TensorFlow resource, stepped on TF's intra-op thread pool (one emulator per
// task). Every bad call becomes an InvalidArgument error naming the argument,
// checked before any emulator is touched, so a failed call changes nothing.
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "atari_emulator.h"
#include "frame_preprocessing.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/resource_mgr.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"

namespace workbench {
namespace {

using ::tensorflow::DEVICE_CPU;
using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::TensorShape;
using ::tensorflow::errors::InvalidArgument;

class AtariEnvBatch : public ::tensorflow::ResourceBase {
 public:
  explicit AtariEnvBatch(const AtariConfig& config) : config(config) {}

  std::string DebugString() const override {
    return "AtariEnvBatch(" + config.rom_path + ", " + std::to_string(emulators.size()) + ")";
  }

  const AtariConfig config;
  std::unique_ptr<const FrameResizer> resizer;  // from the game's screen size to screen_size
  std::vector<std::unique_ptr<AtariEmulator>> emulators;
  std::mutex mu;  // one call at a time per batch
};

// Emulators per batch at most (each holds an ALE instance of about a megabyte).
constexpr int64_t kMaxBatchSize = 1 << 16;

// Cost hint of one emulator step, reset or ROM load: far above any block size,
// so every emulator is a task of its own, balanced dynamically.
constexpr int64_t kEmulatorCost = 1000000;

// Runs fn(i) for i in [0, n) on the intra-op pool and turns a C++ exception
// into an error. cost_per_item: kEmulatorCost, or a copy's bytes.
template <typename Fn>
absl::Status ForEach(OpKernelContext* ctx, int64_t n, int64_t cost_per_item, Fn fn) {
  std::mutex error_mu;
  std::string error;
  auto* workers = ctx->device()->tensorflow_cpu_worker_threads()->workers;
  auto run = [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      try {
        fn(i);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(error_mu);
        error = e.what();
      }
    }
  };
  if (cost_per_item >= kEmulatorCost) {
    workers->ParallelFor(n, tsl::thread::ThreadPool::SchedulingParams::Fixed(1), run);
  } else {  // copies: let the pool pick block sizes from the cost
    workers->ParallelFor(n, cost_per_item, run);
  }
  if (!error.empty()) return ::tensorflow::errors::Internal("ALE failed: ", error);
  return absl::OkStatus();
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
                InvalidArgument("repeat_action_probability must be in [0, 1], got ", p));
    OP_REQUIRES(ctx, config_.screen_size <= 1024,
                InvalidArgument("screen_size must be at most 1024, got ", config_.screen_size));
    OP_REQUIRES(ctx, config_.stack_size <= 64,
                InvalidArgument("stack_size must be at most 64, got ", config_.stack_size));
    OP_REQUIRES(ctx, batch_size_ <= kMaxBatchSize,
                InvalidArgument("batch_size must be at most ", kMaxBatchSize, ", got ", batch_size_));
    OP_REQUIRES(ctx, config_.max_episode_frames <= INT32_MAX,
                InvalidArgument("max_episode_frames must fit in int32, got ", config_.max_episode_frames));
  }

  void Compute(OpKernelContext* ctx) override {
    const std::string problem = CheckRom(config_.rom_path);
    OP_REQUIRES(ctx, problem.empty(), InvalidArgument("rom_path '", config_.rom_path, "' ", problem));

    auto* batch = new AtariEnvBatch(config_);
    ::tensorflow::core::ScopedUnref unref_on_error(batch);
    batch->emulators.resize(batch_size_);
    // The first emulator tells the screen size (210x160 for most games, 250x160
    // for a few); the others load in parallel (a ROM takes tens of milliseconds).
    OP_REQUIRES_OK(ctx, ForEach(ctx, 1, kEmulatorCost, [&](int64_t) {
                     batch->emulators[0].reset(new AtariEmulator(batch->config, nullptr));
                   }));
    const AtariEmulator& first = *batch->emulators[0];
    const int64_t pixels = static_cast<int64_t>(first.screen_height()) * first.screen_width();
    OP_REQUIRES(ctx, pixels > 0 && pixels * 255 < (int64_t{1} << 24),
                ::tensorflow::errors::Unimplemented("rom_path '", config_.rom_path, "' has a ", first.screen_height(),
                                                    "x", first.screen_width(), " screen, too large for the resize"));
    batch->resizer.reset(new FrameResizer(first.screen_height(), first.screen_width(), config_.screen_size,
                                          config_.screen_size));
    batch->emulators[0]->set_resizer(batch->resizer.get());
    OP_REQUIRES_OK(ctx, ForEach(ctx, batch_size_ - 1, kEmulatorCost, [&](int64_t i) {
                     batch->emulators[i + 1].reset(new AtariEmulator(batch->config, batch->resizer.get()));
                   }));
    Tensor* action_set = nullptr;
    const std::vector<int>& actions = batch->emulators[0]->action_set();
    OP_REQUIRES_OK(ctx, ctx->allocate_output(1, TensorShape({static_cast<int64_t>(actions.size())}),
                                             &action_set));
    for (size_t a = 0; a < actions.size(); ++a) action_set->vec<int32_t>()(a) = actions[a];

    static std::atomic<int64_t> counter{0};
    const std::string container = ctx->resource_manager()->default_container();
    const std::string name = "workbench_atari_env_" + std::to_string(counter.fetch_add(1));
    batch->Ref();  // the resource manager takes this reference
    OP_REQUIRES_OK(ctx, ctx->resource_manager()->Create(container, name, batch));
    Tensor* handle = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({}), &handle));
    handle->scalar<::tensorflow::ResourceHandle>()() =
        ::tensorflow::MakeResourceHandle<AtariEnvBatch>(ctx, container, name);
  }

 private:
  AtariConfig config_;
  int64_t batch_size_ = 0;
};

// Base of the ops that act on an existing batch: looks it up, locks it and
// checks `indices` (input 1): a vector of distinct values in [0, batch_size).
class AtariEnvOp : public OpKernel {
 public:
  explicit AtariEnvOp(OpKernelConstruction* ctx) : OpKernel(ctx) {}

  void Compute(OpKernelContext* ctx) final {
    ::tensorflow::core::RefCountPtr<AtariEnvBatch> batch;
    OP_REQUIRES_OK(ctx, ::tensorflow::LookupResource(ctx, ::tensorflow::HandleFromInput(ctx, 0), &batch));
    std::lock_guard<std::mutex> lock(batch->mu);
    const Tensor& indices_tensor = ctx->input(1);
    OP_REQUIRES(ctx, indices_tensor.dims() == 1,
                InvalidArgument("indices must be a vector, got shape ", indices_tensor.shape().DebugString()));
    const int64_t size = static_cast<int64_t>(batch->emulators.size());
    std::vector<bool> seen(size, false);
    std::vector<int32_t> indices(indices_tensor.NumElements());
    for (size_t i = 0; i < indices.size(); ++i) {
      const int32_t index = indices_tensor.vec<int32_t>()(i);
      OP_REQUIRES(ctx, index >= 0 && index < size,
                  InvalidArgument("indices[", i, "] = ", index, " is out of range [0, ", size, ")"));
      OP_REQUIRES(ctx, !seen[index], InvalidArgument("indices[", i, "] = ", index, " is repeated"));
      seen[index] = true;
      indices[i] = index;
    }
    Run(ctx, batch.get(), indices);
  }

 protected:
  virtual void Run(OpKernelContext* ctx, AtariEnvBatch* batch, const std::vector<int32_t>& indices) = 0;

  static absl::Status RequireStarted(AtariEnvBatch* batch, const std::vector<int32_t>& indices) {
    for (size_t i = 0; i < indices.size(); ++i) {
      if (!batch->emulators[indices[i]]->started()) {
        return InvalidArgument("indices[", i, "] = ", indices[i], " has not been reset yet; reset it first");
      }
    }
    return absl::OkStatus();
  }

  // Checks that input `input` is a vector with one value per index.
  static absl::Status RequirePerIndex(OpKernelContext* ctx, int input, const char* name, size_t n) {
    const Tensor& t = ctx->input(input);
    if (t.dims() != 1 || static_cast<size_t>(t.dim_size(0)) != n) {
      return InvalidArgument(name, " must be a vector with one value per index (", n, "), got shape ",
                             t.shape().DebugString());
    }
    return absl::OkStatus();
  }
};

class AtariEnvResetOp : public AtariEnvOp {
 public:
  using AtariEnvOp::AtariEnvOp;

 protected:
  void Run(OpKernelContext* ctx, AtariEnvBatch* batch, const std::vector<int32_t>& indices) override {
    OP_REQUIRES_OK(ctx, RequirePerIndex(ctx, 2, "seeds", indices.size()));
    auto seeds = ctx->input(2).vec<int64_t>();
    Tensor* done = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(indices.size())}), &done));
    auto d = done->vec<bool>();
    OP_REQUIRES_OK(ctx, ForEach(ctx, indices.size(), kEmulatorCost, [&](int64_t i) {
                     AtariEmulator* emulator = batch->emulators[indices[i]].get();
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
    OP_REQUIRES_OK(ctx, RequirePerIndex(ctx, 2, "actions", n));
    OP_REQUIRES_OK(ctx, RequireStarted(batch, indices));
    auto actions = ctx->input(2).vec<int32_t>();
    const int num_actions = static_cast<int>(batch->emulators[0]->action_set().size());
    for (size_t i = 0; i < n; ++i) {
      OP_REQUIRES(ctx, actions(i) >= 0 && actions(i) < num_actions,
                  InvalidArgument("actions[", i, "] = ", actions(i), " is not an action of this game: ",
                                  "its minimal action set has ", num_actions, " actions [0, ", num_actions, ")"));
      OP_REQUIRES(ctx, !batch->emulators[indices[i]]->done(),
                  InvalidArgument("indices[", i, "] = ", indices[i],
                                  " is at the end of its episode; reset it before stepping"));
    }
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
                     AtariEmulator* emulator = batch->emulators[indices[i]].get();
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
    OP_REQUIRES_OK(ctx, ctx->allocate_output(
                            0, TensorShape({static_cast<int64_t>(indices.size()), size, size, stack}), &out));
    uint8_t* data = out->flat<uint8_t>().data();
    const int64_t per_item = size * size * stack;
    OP_REQUIRES_OK(ctx, ForEach(ctx, indices.size(), per_item * 4, [&](int64_t i) {
                     batch->emulators[indices[i]]->WriteObservation(data + i * per_item);
                   }));
  }
};

class AtariEnvScreenOp : public AtariEnvOp {
 public:
  using AtariEnvOp::AtariEnvOp;

 protected:
  void Run(OpKernelContext* ctx, AtariEnvBatch* batch, const std::vector<int32_t>& indices) override {
    const AtariEmulator& first = *batch->emulators[0];
    const int64_t h = first.screen_height(), w = first.screen_width();
    Tensor* out = nullptr;
    OP_REQUIRES_OK(ctx, ctx->allocate_output(0, TensorShape({static_cast<int64_t>(indices.size()), h, w, 3}), &out));
    uint8_t* data = out->flat<uint8_t>().data();
    OP_REQUIRES_OK(ctx, ForEach(ctx, indices.size(), h * w * 12, [&](int64_t i) {
                     batch->emulators[indices[i]]->WriteScreenRgb(data + i * h * w * 3);
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
    for (size_t i = 0; i < indices.size(); ++i) batch->emulators[indices[i]]->WriteRam(data + i * kRam);
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
      const AtariEmulator& emulator = *batch->emulators[indices[i]];
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
