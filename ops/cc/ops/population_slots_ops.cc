// Registration of AssignSlots: writes whole member slots of a population
// weight variable in place.
//
// A population model keeps every member's weights in one variable
// [slots, ...]. TensorFlow's own partial writes (scatter updates, sliced
// assigns) switch a variable to "copy-on-read" mode for good, after which
// every read copies the whole variable: for a model of 32 members that is
// 128 MB or more per inference call. AssignSlots writes the rows in place
// under the variable's lock instead, copying the buffer first only when a
// tensor still aliases it (copy-on-write, as dense assignments do), so reads
// stay zero-copy.
#include "tensorflow/core/framework/op.h"
#include "tensorflow/core/framework/shape_inference.h"

namespace workbench {
namespace {

REGISTER_OP("Workbench>AssignSlots")
    .Input("resource: resource")
    .Input("slots: int32")
    .Input("values: T")
    .Attr("T: {float, bfloat16}")
    .SetShapeFn([](::tensorflow::shape_inference::InferenceContext* c) {
      ::tensorflow::shape_inference::ShapeHandle unused;
      TF_RETURN_IF_ERROR(c->WithRank(c->input(1), 1, &unused));
      TF_RETURN_IF_ERROR(c->WithRankAtLeast(c->input(2), 1, &unused));
      return absl::OkStatus();
    })
    .Doc(R"doc(
Writes values[i] into slot slots[i] of the variable `resource` ([S, ...]), in place.
slots: distinct indices in [0, S). values: [len(slots), ...] with the variable's trailing shape and dtype.
)doc");

}  // namespace
}  // namespace workbench
