// What the kernels of every simulator family share (Atari's emulators,
// MuJoCo's simulations): a batch of simulators in a TensorFlow resource, its
// creation and publication under a fresh name, the base of the ops that act on
// an existing batch (look it up, lock it, check `indices`), the argument checks
// those ops repeat, and a ParallelFor over the intra-op pool that turns a C++
// exception into an error. A family's kernels file keeps only what is its own:
// the create op's attributes and the per-simulator work of each op.
//
// Errors are absl::Status values made with absl::*Error(absl::StrCat(...)),
// the one error idiom of ops/cc (TensorFlow deprecates its errors:: helpers);
// every message names the argument.
#ifndef WORKBENCH_OPS_CC_KERNELS_ENV_BATCH_KERNELS_H_
#define WORKBENCH_OPS_CC_KERNELS_ENV_BATCH_KERNELS_H_

#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/resource_mgr.h"
#include "tensorflow/core/framework/tensor.h"
#include "tensorflow/core/framework/tensor_shape.h"

namespace workbench {

// A batch of simulators of type `Simulator` (each with started() and done()),
// one call at a time (mu); the family's shared state lives in a subclass.
template <typename Simulator>
class EnvBatch : public ::tensorflow::ResourceBase {
 public:
  int64_t size() const { return static_cast<int64_t>(simulators.size()); }

  std::vector<std::unique_ptr<Simulator>> simulators;
  std::mutex mu;  // one call at a time per batch
};

// No per-block setup (the default of ParallelForEach's and EnvBatchOp's Guard).
struct NoGuard {};

// Runs fn(i) for i in [0, n) on the intra-op pool, blocks scheduled by
// `params`, with a Guard constructed per block (a thread-local setting); a C++
// exception thrown by fn becomes an InternalError "<failure>: <what>".
template <typename Guard = NoGuard, typename Fn>
absl::Status ParallelForEach(::tensorflow::OpKernelContext* ctx, int64_t n,
                             const tsl::thread::ThreadPool::SchedulingParams& params, const char* failure, Fn fn) {
  std::mutex error_mu;
  std::string error;
  auto* workers = ctx->device()->tensorflow_cpu_worker_threads()->workers;
  workers->ParallelFor(n, params, [&](int64_t begin, int64_t end) {
    Guard guard;
    (void)guard;
    for (int64_t i = begin; i < end; ++i) {
      try {
        fn(i);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(error_mu);
        error = e.what();
      }
    }
  });
  if (!error.empty()) return absl::InternalError(absl::StrCat(failure, ": ", error));
  return absl::OkStatus();
}

// Registers `batch` with the resource manager under a fresh name starting with
// `prefix` (taking one reference) and writes its handle to output `output`.
template <typename Batch>
absl::Status PublishBatch(::tensorflow::OpKernelContext* ctx, Batch* batch, const char* prefix, int output) {
  static std::atomic<int64_t> counter{0};
  const std::string container = ctx->resource_manager()->default_container();
  const std::string name = prefix + std::to_string(counter.fetch_add(1));
  batch->Ref();  // the resource manager takes this reference
  TF_RETURN_IF_ERROR(ctx->resource_manager()->Create(container, name, batch));
  ::tensorflow::Tensor* handle = nullptr;
  TF_RETURN_IF_ERROR(ctx->allocate_output(output, ::tensorflow::TensorShape({}), &handle));
  handle->scalar<::tensorflow::ResourceHandle>()() = ::tensorflow::MakeResourceHandle<Batch>(ctx, container, name);
  return absl::OkStatus();
}

// Checks that input `input` is a matrix [n, columns] (a vector [n] when columns < 0).
inline absl::Status RequireRows(::tensorflow::OpKernelContext* ctx, int input, const char* name, size_t n,
                                int64_t columns) {
  const ::tensorflow::Tensor& t = ctx->input(input);
  const bool ok = columns < 0 ? t.dims() == 1 && static_cast<size_t>(t.dim_size(0)) == n
                              : t.dims() == 2 && static_cast<size_t>(t.dim_size(0)) == n && t.dim_size(1) == columns;
  if (ok) return absl::OkStatus();
  if (columns < 0) {
    return absl::InvalidArgumentError(absl::StrCat(name, " must be a vector with one value per index (", n,
                                                   "), got shape ", t.shape().DebugString()));
  }
  return absl::InvalidArgumentError(absl::StrCat(name, " must have shape [", n, ", ", columns,
                                                 "] (one row per index), got ", t.shape().DebugString()));
}

// Base of the ops that act on an existing batch of type Batch (an EnvBatch):
// looks it up (input 0), locks it, checks `indices` (input 1: a vector of
// distinct values in [0, batch size)) and calls Run. A Guard is held for the
// whole call (a thread-local setting the family's work needs).
template <typename Batch, typename Guard = NoGuard>
class EnvBatchOp : public ::tensorflow::OpKernel {
 public:
  explicit EnvBatchOp(::tensorflow::OpKernelConstruction* ctx) : ::tensorflow::OpKernel(ctx) {}

  void Compute(::tensorflow::OpKernelContext* ctx) final {
    Guard guard;
    (void)guard;
    ::tensorflow::core::RefCountPtr<Batch> batch;
    OP_REQUIRES_OK(ctx, ::tensorflow::LookupResource(ctx, ::tensorflow::HandleFromInput(ctx, 0), &batch));
    std::lock_guard<std::mutex> lock(batch->mu);
    const ::tensorflow::Tensor& indices_tensor = ctx->input(1);
    OP_REQUIRES(ctx, indices_tensor.dims() == 1,
                absl::InvalidArgumentError(
                    absl::StrCat("indices must be a vector, got shape ", indices_tensor.shape().DebugString())));
    const int64_t size = batch->size();
    std::vector<bool> seen(size, false);
    std::vector<int32_t> indices(indices_tensor.NumElements());
    for (size_t i = 0; i < indices.size(); ++i) {
      const int32_t index = indices_tensor.vec<int32_t>()(i);
      OP_REQUIRES(
          ctx, index >= 0 && index < size,
          absl::InvalidArgumentError(absl::StrCat("indices[", i, "] = ", index, " is out of range [0, ", size, ")")));
      OP_REQUIRES(ctx, !seen[index],
                  absl::InvalidArgumentError(absl::StrCat("indices[", i, "] = ", index, " is repeated")));
      seen[index] = true;
      indices[i] = index;
    }
    Run(ctx, batch.get(), indices);
  }

 protected:
  virtual void Run(::tensorflow::OpKernelContext* ctx, Batch* batch, const std::vector<int32_t>& indices) = 0;

  // Every index's simulator has been reset at least once.
  static absl::Status RequireStarted(const Batch* batch, const std::vector<int32_t>& indices) {
    for (size_t i = 0; i < indices.size(); ++i) {
      if (!batch->simulators[indices[i]]->started()) {
        return absl::InvalidArgumentError(
            absl::StrCat("indices[", i, "] = ", indices[i], " has not been reset yet; reset it first"));
      }
    }
    return absl::OkStatus();
  }

  // No index's simulator is at the end of its episode.
  static absl::Status RequireNotDone(const Batch* batch, const std::vector<int32_t>& indices) {
    for (size_t i = 0; i < indices.size(); ++i) {
      if (batch->simulators[indices[i]]->done()) {
        return absl::InvalidArgumentError(
            absl::StrCat("indices[", i, "] = ", indices[i], " is at the end of its episode; reset it before stepping"));
      }
    }
    return absl::OkStatus();
  }
};

}  // namespace workbench

#endif  // WORKBENCH_OPS_CC_KERNELS_ENV_BATCH_KERNELS_H_
