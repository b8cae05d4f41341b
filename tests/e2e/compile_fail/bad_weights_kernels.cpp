// Kernels for idl_examples/weights.ops.yaml with mistakes that must not
// compile (SCENARIOS row 21): run_compile_fail.py compiles this file once
// per STRUCTOP_CASE against the GENERATED weights.ops.h, with the flags of a
// user's kernel file, and checks that the compiler names the mistake.
//
// The grads record of `op(Tensor x, WeightCfg cfg)` is
//   op_grads { structop::Grad x; WeightCfgGrad cfg; }
//   WeightCfgGrad { InnerGrad inner; }   InnerGrad { structop::Grad w; structop::Grad b; }
#include "weights.ops.h"

namespace weights {

#if STRUCTOP_CASE == 0
// Control: a correct backward compiles.
op_grads kernels::op_backward(
    torch::autograd::AutogradContext* /*ctx*/,
    const at::Tensor& grad_output) {
  return {grad_output, {{grad_output, c10::nullopt}}};
}

#elif STRUCTOP_CASE == \
    1  // expect: a gradient slot was left out; InnerGrad::b | a gradient slot was left out; field 'b'
// Leaves out the slot for cfg.inner.b.
op_grads kernels::op_backward(
    torch::autograd::AutogradContext* /*ctx*/,
    const at::Tensor& grad_output) {
  return {grad_output, {{grad_output}}};
}

#elif STRUCTOP_CASE == \
    2  // expect: a gradient slot was left out; op_grads::cfg | a gradient slot was left out; field 'cfg'
// Leaves out the whole record parameter.
op_grads kernels::op_backward(
    torch::autograd::AutogradContext* /*ctx*/,
    const at::Tensor& grad_output) {
  return {grad_output};
}

#elif STRUCTOP_CASE == 3  // expect: bias; InnerGrad
// Misspells cfg.inner.b as `bias` in a designated initializer.
op_grads kernels::op_backward(
    torch::autograd::AutogradContext* /*ctx*/,
    const at::Tensor& grad_output) {
  return op_grads{
      .x = grad_output,
      .cfg = WeightCfgGrad{.inner = InnerGrad{.w = grad_output, .bias = grad_output}}};
}

#elif STRUCTOP_CASE == 4  // expect: weight; InnerGrad
// Misspells a field of the grads record when filling it in afterwards.
op_grads kernels::op_backward(
    torch::autograd::AutogradContext* /*ctx*/,
    const at::Tensor& grad_output) {
  op_grads grads{grad_output, {{grad_output, grad_output}}};
  grads.cfg.inner.weight = grad_output.mul(2);
  return grads;
}

#elif STRUCTOP_CASE == 5  // expect: vector; op_grads
// Returns a bare tensor list instead of the grads record.
op_grads kernels::op_backward(
    torch::autograd::AutogradContext* /*ctx*/,
    const at::Tensor& grad_output) {
  return std::vector<at::Tensor>{grad_output, grad_output, grad_output};
}
#endif

}  // namespace weights
