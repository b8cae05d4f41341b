// The consumer's kernel, written against the generated header.
#include "consumer.ops.h"

#include <ATen/ATen.h>

namespace consumer::kernels {

at::Tensor smooth(const at::Tensor& x, const SmoothCfg& cfg) {
  at::Tensor out = x * (cfg.kernel.weights.sum() * cfg.kernel.gain);
  if (cfg.clamp) out = out.clamp(-*cfg.clamp, *cfg.clamp);
  return out;
}

}  // namespace consumer::kernels
