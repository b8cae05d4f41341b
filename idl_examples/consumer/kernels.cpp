// The consumer's kernels, written against the generated headers (both take
// the Kernel1d of filters.ops.h, which they include).
#include "consumer.ops.h"
#include "sharpen.ops.h"

#include <ATen/ATen.h>

namespace consumer::kernels {

at::Tensor smooth(const at::Tensor& x, const SmoothCfg& cfg) {
  at::Tensor out = x * (cfg.kernel.weights.sum() * cfg.kernel.gain);
  if (cfg.clamp) out = out.clamp(-*cfg.clamp, *cfg.clamp);
  return out;
}

}  // namespace consumer::kernels

namespace sharpen::kernels {

at::Tensor sharpen(const at::Tensor& x, const filters::Kernel1d& kernel, double amount) {
  return x * (1.0 + amount * kernel.gain * kernel.weights.sum());
}

}  // namespace sharpen::kernels
