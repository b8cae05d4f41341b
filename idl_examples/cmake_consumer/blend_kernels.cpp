// The kernel of blend.ops.yaml.
#include "blend.ops.h"

#include <ATen/core/Tensor.h>

namespace cmake_demo {

at::Tensor kernels::blend(const at::Tensor& a, const at::Tensor& b, const Mix& mix) {
  return a.mul(1.0 - mix.weight).add(b.mul(mix.weight));
}

}  // namespace cmake_demo
