// Kernels for demo.ops.yaml with mistakes that must not compile (SCENARIOS row
// 21), and a runtime version mismatch. run_compile_fail.py compiles this file once per STRUCTOP_CASE, with the
// flags of a user's kernel file, and checks that the compiler names the field.
//
// Only demo.ops.h (light) is included, so each compile takes a few seconds.
#include "demo.ops.h"

namespace demo {

#if STRUCTOP_CASE == 0
// Control: correct, must compile (proves the flags are right).
op_grads kernels::op_backward(torch::autograd::AutogradContext* /*ctx*/,
                              const at::Tensor& grad_output) {
  return {grad_output, {{grad_output, c10::nullopt}}};
}

#elif STRUCTOP_CASE == 1
// Leaves out the slot for cfg.inner.b.
op_grads kernels::op_backward(torch::autograd::AutogradContext* /*ctx*/,
                              const at::Tensor& grad_output) {
  return {grad_output, {{grad_output}}};
}

#elif STRUCTOP_CASE == 2
// Misspells cfg.inner.b as `bias` (designated initializers).
op_grads kernels::op_backward(torch::autograd::AutogradContext* /*ctx*/,
                              const at::Tensor& grad_output) {
  return op_grads{.x = grad_output,
                  .cfg = WeightCfgGrad{.inner = InnerGrad{.w = grad_output, .bias = grad_output}}};
}

#elif STRUCTOP_CASE == 3
// Misspells a field of the grads record when filling it in afterwards.
op_grads kernels::op_backward(torch::autograd::AutogradContext* /*ctx*/,
                              const at::Tensor& grad_output) {
  op_grads grads{grad_output, {{grad_output, grad_output}}};
  grads.cfg.inner.weight = grad_output.mul(2);
  return grads;
}

#elif STRUCTOP_CASE == 4
// Misspells a field of the input record in setup_context.
void kernels::op_setup_context(torch::autograd::AutogradContext* /*ctx*/, const at::Tensor& /*x*/,
                               const WeightCfg& cfg, const at::Tensor& /*output*/) {
  (void)cfg.inner.weight;
}

#elif STRUCTOP_CASE == 5
// A file generated for another runtime version.
STRUCTOP_REQUIRE_RUNTIME_VERSION(2);

#endif

}  // namespace demo
