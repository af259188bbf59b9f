// AssignSlots kernel: whole-slot writes into a population weight variable
// without switching it to copy-on-read mode (see ../ops/population_slots_ops.cc).
#include <cstring>
#include <vector>

#include "tensorflow/core/framework/bfloat16.h"
#include "tensorflow/core/framework/op_kernel.h"
#include "tensorflow/core/framework/resource_mgr.h"
#include "tensorflow/core/framework/resource_var.h"
#include "tensorflow/core/framework/tensor.h"

namespace workbench {
namespace {

using ::tensorflow::OpKernel;
using ::tensorflow::OpKernelConstruction;
using ::tensorflow::OpKernelContext;
using ::tensorflow::Tensor;
using ::tensorflow::Var;

template <typename T>
class AssignSlotsOp : public OpKernel {
 public:
  explicit AssignSlotsOp(OpKernelConstruction* context) : OpKernel(context) {}

  void Compute(OpKernelContext* context) override {
    const Tensor& slots = context->input(1);
    const Tensor& values = context->input(2);
    OP_REQUIRES(
        context, slots.dims() == 1,
        absl::InvalidArgumentError(absl::StrCat("slots must be a vector, got shape ", slots.shape().DebugString())));
    const int64_t count = slots.dim_size(0);
    OP_REQUIRES(context, values.dims() >= 1 && values.dim_size(0) == count,
                absl::InvalidArgumentError(absl::StrCat("values must be [len(slots)=", count, ", ...], got shape ",
                                                        values.shape().DebugString())));

    tensorflow::core::RefCountPtr<Var> variable;
    OP_REQUIRES_OK(context, tensorflow::LookupResource(context, tensorflow::HandleFromInput(context, 0), &variable));
    tensorflow::mutex_lock lock(*variable->mu());
    Tensor* weights = variable->tensor();
    OP_REQUIRES(context, variable->is_initialized,
                absl::FailedPreconditionError("resource is an uninitialised variable"));
    OP_REQUIRES(context, weights->dtype() == values.dtype(),
                absl::InvalidArgumentError(absl::StrCat("values dtype ", tensorflow::DataTypeString(values.dtype()),
                                                        " differs from the variable's ",
                                                        tensorflow::DataTypeString(weights->dtype()))));
    OP_REQUIRES(context, weights->dims() == values.dims(),
                absl::InvalidArgumentError(absl::StrCat("values shape ", values.shape().DebugString(),
                                                        " must be [len(slots)] + the variable's slot shape, variable ",
                                                        weights->shape().DebugString())));
    for (int d = 1; d < weights->dims(); ++d) {
      OP_REQUIRES(context, weights->dim_size(d) == values.dim_size(d),
                  absl::InvalidArgumentError(absl::StrCat(
                      "values shape ", values.shape().DebugString(),
                      " must be [len(slots)] + the variable's slot shape, variable ", weights->shape().DebugString())));
    }
    const int64_t num_slots = weights->dim_size(0);
    const auto indices = slots.flat<int32_t>();
    std::vector<bool> seen(num_slots, false);
    for (int64_t i = 0; i < count; ++i) {
      const int32_t slot = indices(i);
      OP_REQUIRES(
          context, slot >= 0 && slot < num_slots,
          absl::InvalidArgumentError(absl::StrCat("slots[", i, "] = ", slot, " is out of range [0, ", num_slots, ")")));
      OP_REQUIRES(context, !seen[slot],
                  absl::InvalidArgumentError(absl::StrCat("slots[", i, "] = ", slot, " repeats")));
      seen[slot] = true;
    }
    if (count == 0) return;

    // Copy-on-write: never change a buffer that a tensor handed out earlier still shares.
    if (!variable->copy_on_read_mode.load() && !weights->RefCountIsOne()) {
      Tensor copy;
      OP_REQUIRES_OK(context, context->allocate_temp(weights->dtype(), weights->shape(), &copy));
      std::memcpy(copy.data(), weights->data(), weights->TotalBytes());
      *weights = copy;
    }
    const int64_t row = values.NumElements() / count;
    T* destination = weights->flat<T>().data();
    const T* source = values.flat<T>().data();
    for (int64_t i = 0; i < count; ++i) {
      std::memcpy(destination + indices(i) * row, source + i * row, row * sizeof(T));
    }
  }
};

#define REGISTER(T)                                                                                              \
  REGISTER_KERNEL_BUILDER(Name("Workbench>AssignSlots").Device(::tensorflow::DEVICE_CPU).TypeConstraint<T>("T"), \
                          AssignSlotsOp<T>)
REGISTER(float);
REGISTER(::tensorflow::bfloat16);
#undef REGISTER

}  // namespace
}  // namespace workbench
