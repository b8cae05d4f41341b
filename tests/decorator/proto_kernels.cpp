// C++ kernels for the ops of proto_ops_module.py, compiled against the IDL
// that `python -m structop idl proto_ops_module` exports (test
// decorator-export-cpp): the same math as the Python prototype.
#include "proto.ops.h"

#include <ATen/ATen.h>

namespace proto {

at::Tensor kernels::rms_norm(const at::Tensor& x, const NormCfg& cfg) {
  return x * at::rsqrt(x.pow(2).mean(-1, /*keepdim=*/true) + cfg.eps) * cfg.weight;
}

at::Tensor kernels::gate(const at::Tensor& x, const Gate& gate, double scale) {
  at::Tensor y = x * at::sigmoid(gate.g);
  if (gate.bias) y = y + *gate.bias;
  return y * scale;
}

}  // namespace proto
