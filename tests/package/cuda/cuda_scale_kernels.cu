// The CUDA kernel of cuda_scale.ops.yaml, compiled by nvcc through
// structop.load. It uses c10 only (no libc10_cuda), so it links against a
// CPU-only torch too, which has no CUDA tensors to call it with; the test
// checks that it compiles, links and registers.
#include "cuda_scale.ops.h"

#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>

#include <cuda_runtime.h>

namespace jit_cuda {
namespace {

__global__ void scale_floats(const float* x, float* y, int64_t n, float factor) {
  const int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  if (i < n) y[i] = x[i] * factor;
}

}  // namespace

at::Tensor kernels::scale_cuda(const at::Tensor& x, const ScaleCfg& cfg) {
  TORCH_CHECK(
      x.is_cuda() && x.scalar_type() == at::kFloat && x.is_contiguous(),
      "jit_cuda::scale (CUDA): x must be a contiguous float CUDA tensor");
  at::Tensor y = at::empty_like(x);
  const int64_t n = x.numel();
  const int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  if (n > 0) {
    scale_floats<<<blocks, threads>>>(
        x.data_ptr<float>(),
        y.data_ptr<float>(),
        n,
        static_cast<float>(cfg.factor));
  }
  TORCH_CHECK(cudaGetLastError() == cudaSuccess, "jit_cuda::scale (CUDA): launch failed");
  return y;
}

}  // namespace jit_cuda
