// The README's main job, C++ side: calls weights::op (idl_examples/weights.ops.yaml)
// through the generated C++ API and prints the result and the gradients that
// flowed back into the record's tensor fields.
#include "weights.ops.h"

#include <ATen/ATen.h>

#include <iostream>
#include <sstream>
#include <string>

namespace {

/// "[7.5, 13.5, 19.5]" for a 1-d tensor.
std::string values(const at::Tensor& t) {
  std::ostringstream out;
  out << "[";
  const at::Tensor c = t.detach().contiguous().to(at::kDouble);
  for (int64_t i = 0; i < c.numel(); ++i) out << (i ? ", " : "") << c[i].item<double>();
  out << "]";
  return out.str();
}

}  // namespace

int main() {
  at::Tensor x = at::arange(1, 4, at::kFloat);
  weights::WeightCfg cfg;  // scale = 1.0 and mode = causal by default
  cfg.inner.w = at::full({3}, 2.0).requires_grad_();
  cfg.inner.b = at::full({3}, 0.5).requires_grad_();
  cfg.scale = 3.0;

  at::Tensor out = weights::op(x, cfg);  // (x * w + b) * scale, through the dispatcher
  out.sum().backward();

  std::cout << "weights::op(x, cfg{inner{w, b}, scale=3})  [C++ call API]\n"
            << "  x          = " << values(x) << "\n"
            << "  out        = " << values(out) << "\n"
            << "  w.grad     = " << values(cfg.inner.w.grad()) << "\n"
            << "  b.grad     = " << values(cfg.inner.b.grad()) << "\n";
  return 0;
}
