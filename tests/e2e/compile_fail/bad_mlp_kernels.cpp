// Kernels for idl_examples/mlp.ops.yaml with mistakes three records deep
// that must not compile (SCENARIOS row 21), against the GENERATED mlp.ops.h:
//   mlp_grads { structop::Grad x; MlpCfgGrad cfg; }
//   MlpCfgGrad { LinearGrad fc1; LinearGrad fc2; }
//   LinearGrad { structop::Grad weight; structop::Grad bias; LoraGrad lora; }
//   LoraGrad { structop::Grad a; structop::Grad b; }
#include "mlp.ops.h"

namespace nn::mlp {

#if STRUCTOP_CASE == 0
// Control: every slot given (None as c10::nullopt or at::Tensor()) compiles.
mlp_grads kernels::mlp_backward(
    torch::autograd::AutogradContext* /*ctx*/,
    const at::Tensor& grad_output) {
  return {
      grad_output,
      {{grad_output, c10::nullopt, {at::Tensor(), at::Tensor()}},
       {grad_output, c10::nullopt, {c10::nullopt, c10::nullopt}}}};
}

#elif STRUCTOP_CASE == \
    1  // expect: a gradient slot was left out; LoraGrad::b | a gradient slot was left out; field 'b'
// Leaves out cfg.fc2.lora.b.
mlp_grads kernels::mlp_backward(
    torch::autograd::AutogradContext* /*ctx*/,
    const at::Tensor& grad_output) {
  return {
      grad_output,
      {{grad_output, c10::nullopt, {at::Tensor(), at::Tensor()}},
       {grad_output, c10::nullopt, {c10::nullopt}}}};
}

#elif STRUCTOP_CASE == 2  // expect: alpha; LoraGrad
// Misspells cfg.fc1.lora.a as `alpha`.
mlp_grads kernels::mlp_backward(
    torch::autograd::AutogradContext* /*ctx*/,
    const at::Tensor& grad_output) {
  mlp_grads grads{
      grad_output,
      {{grad_output, c10::nullopt, {at::Tensor(), at::Tensor()}},
       {grad_output, c10::nullopt, {at::Tensor(), at::Tensor()}}}};
  grads.cfg.fc1.lora.alpha = grad_output;
  return grads;
}

#elif STRUCTOP_CASE == 3  // expect: residual_scale; MlpCfgGrad
// Asks for a gradient of a float field: grad records only have tensor fields.
mlp_grads kernels::mlp_backward(
    torch::autograd::AutogradContext* /*ctx*/,
    const at::Tensor& grad_output) {
  mlp_grads grads{
      grad_output,
      {{grad_output, c10::nullopt, {at::Tensor(), at::Tensor()}},
       {grad_output, c10::nullopt, {at::Tensor(), at::Tensor()}}}};
  grads.cfg.residual_scale = grad_output;
  return grads;
}
#endif

}  // namespace nn::mlp
