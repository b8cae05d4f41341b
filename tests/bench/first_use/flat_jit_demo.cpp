// idl_examples/jit's op flattened by hand, as a user writes it for
// torch.utils.cpp_extension.load without structop (first_use.py's baseline):
// the record's fields as separate arguments, the schema by hand, a CPU
// kernel and an autograd.Function with the same math as jit_demo_kernels.cpp.
#include <torch/extension.h>

namespace {

at::Tensor scale_shift(
    const at::Tensor& x,
    const at::Tensor& w,
    const at::Tensor& b,
    double scale) {
  return x.mul(w).add(b).mul(scale);
}

class ScaleShift : public torch::autograd::Function<ScaleShift> {
 public:
  static at::Tensor forward(
      torch::autograd::AutogradContext* ctx,
      const at::Tensor& x,
      const at::Tensor& w,
      const at::Tensor& b,
      double scale) {
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x, w});
    ctx->saved_data["scale"] = scale;
    static auto op = c10::Dispatcher::singleton()
                         .findSchemaOrThrow("flat_jit_demo::scale_shift", "")
                         .typed<decltype(scale_shift)>();
    return op.call(x, w, b, scale);
  }

  static torch::autograd::variable_list backward(
      torch::autograd::AutogradContext* ctx,
      torch::autograd::variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor g = grads[0].mul(ctx->saved_data["scale"].toDouble());
    return {
        ctx->needs_input_grad(0) ? g.mul(saved[1]) : at::Tensor(),
        ctx->needs_input_grad(1) ? g.mul(saved[0]) : at::Tensor(),
        ctx->needs_input_grad(2) ? g : at::Tensor(),
        at::Tensor(),
    };
  }
};

at::Tensor scale_shift_autograd(
    const at::Tensor& x,
    const at::Tensor& w,
    const at::Tensor& b,
    double scale) {
  return ScaleShift::apply(x, w, b, scale);
}

}  // namespace

TORCH_LIBRARY(flat_jit_demo, m) {
  m.def(
      "scale_shift(Tensor x, Tensor cfg__affine__w, Tensor cfg__affine__b, "
      "float cfg__scale=2.0) -> Tensor");
}

TORCH_LIBRARY_IMPL(flat_jit_demo, CPU, m) {
  m.impl("scale_shift", scale_shift);
}

TORCH_LIBRARY_IMPL(flat_jit_demo, Autograd, m) {
  m.impl("scale_shift", scale_shift_autograd);
}
