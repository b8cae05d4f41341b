// The CUDA forward kernel of rms_norm.ops.yaml (`dispatch: [CPU, CUDA]`):
//
//   y[r, :] = x[r, :] * rsqrt(mean(x[r, :]^2) + eps) * weight
//
// over the rows r of x viewed as [rows, D]. One thread block per row (a grid
// stride over rows when there are more rows than blocks): each thread sums
// the squares of a strided slice of its row in float (double for double
// input), the block reduces the partial sums in shared memory, then every
// thread scales its slice. Float, double, half and bfloat16 inputs; the
// weight has x's dtype. The CPU kernel and the backward are in
// rms_norm_kernels.cpp (the backward is written with ATen ops and runs on
// CUDA tensors as it is).
//
// Built by nvcc when Meson finds it (idl_examples/meson.build); without it the
// ATen version in rms_norm_kernels.cpp serves the CUDA key instead.
//
// Device and stream: the kernel runs on x's device (c10::DeviceGuard) and on
// torch's current stream for it, found through c10's device-generic stream
// API (c10::Stream::native_handle, torch 2.7 and later), so the file needs
// libc10 only, never libc10_cuda: it compiles and links against CPU-only
// builds of torch as well (the machines that build this project's CI have no
// GPU; a CPU-only torch has no CUDA tensors to call it with). Torch 2.6 has no
// native_handle(); there the kernel uses the legacy default stream, which is
// torch's current stream unless the program sets another.
#include "rms_norm.ops.h"

#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <c10/core/DeviceGuard.h>
#include <c10/core/Stream.h>
#include <c10/core/impl/VirtualGuardImpl.h>

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

namespace nn::norm {
namespace {

constexpr int kThreads = 256;  // threads per block (a multiple of the warp size)

/// The type sums of squares accumulate in: float for 16- and 32-bit inputs.
template <class T>
struct Accumulate {
  using type = float;
};
template <>
struct Accumulate<double> {
  using type = double;
};

/// Normalises rows [blockIdx.x, rows) in steps of gridDim.x; `weight` may be null.
template <class T>
__global__ void rms_norm_rows(
    const T* __restrict__ x,
    const T* __restrict__ weight,
    T* __restrict__ y,
    int64_t rows,
    int64_t dim,
    double eps) {
  using Acc = typename Accumulate<T>::type;
  __shared__ Acc partial[kThreads];
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const T* in = x + row * dim;
    T* out = y + row * dim;

    Acc sum = 0;
    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
      const Acc v = static_cast<Acc>(in[i]);
      sum += v * v;
    }
    partial[threadIdx.x] = sum;
    __syncthreads();
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
      if (threadIdx.x < stride) partial[threadIdx.x] += partial[threadIdx.x + stride];
      __syncthreads();
    }
    const Acc inv_rms = Acc(1) / sqrt(partial[0] / static_cast<Acc>(dim) + static_cast<Acc>(eps));
    __syncthreads();  // everyone has read partial[0] before the next row reuses it

    for (int64_t i = threadIdx.x; i < dim; i += blockDim.x) {
      Acc v = static_cast<Acc>(in[i]) * inv_rms;
      if (weight != nullptr) v *= static_cast<Acc>(weight[i]);
      out[i] = static_cast<T>(v);
    }
  }
}

template <class S, class = void>
struct HasNativeHandle : std::false_type {};
template <class S>
struct HasNativeHandle<S, std::void_t<decltype(std::declval<const S&>().native_handle())>>
    : std::true_type {};

/// Torch's current stream on `device` (a template so that the branch a torch
/// version lacks is not compiled).
template <class S = c10::Stream>
cudaStream_t current_stream(c10::Device device) {
  if constexpr (HasNativeHandle<S>::value) {
    const S stream = c10::impl::VirtualGuardImpl(device.type()).getStream(device);
    return static_cast<cudaStream_t>(stream.native_handle());
  } else {
    return nullptr;  // the legacy default stream
  }
}

}  // namespace

at::Tensor kernels::rms_norm_cuda(const at::Tensor& x, const RmsNormCfg& cfg) {
  TORCH_CHECK(x.is_cuda(), "nn::rms_norm (CUDA): x must be a CUDA tensor, got ", x.device());
  TORCH_CHECK(x.dim() >= 1, "nn::rms_norm: x must have at least one dimension");
  const at::Tensor weight = cfg.weight.value_or(at::Tensor());
  if (weight.defined()) {
    TORCH_CHECK(
        weight.device() == x.device(),
        "nn::rms_norm: cfg.weight is on ",
        weight.device(),
        " but x is on ",
        x.device());
    TORCH_CHECK(
        weight.scalar_type() == x.scalar_type(),
        "nn::rms_norm: cfg.weight has dtype ",
        weight.scalar_type(),
        " but x has ",
        x.scalar_type());
    TORCH_CHECK(
        weight.dim() == 1 && weight.size(0) == x.size(-1),
        "nn::rms_norm: cfg.weight must have shape [",
        x.size(-1),
        "], got ",
        weight.sizes());
  }

  const c10::DeviceGuard guard(x.device());
  const cudaStream_t stream = current_stream(x.device());

  const at::Tensor input = x.contiguous();
  const at::Tensor scale = weight.defined() ? weight.contiguous() : weight;
  at::Tensor output = at::empty_like(input);
  const int64_t dim = input.size(-1);
  const int64_t rows = dim == 0 ? 0 : input.numel() / dim;
  if (rows == 0) return output;

  // One block per row, at most 65535 * 32 blocks; the kernel strides over the rest.
  const unsigned blocks = static_cast<unsigned>(std::min<int64_t>(rows, 65535 * 32));
  AT_DISPATCH_FLOATING_TYPES_AND2(
      at::kHalf,
      at::kBFloat16,
      input.scalar_type(),
      "rms_norm_cuda",
      [&] {
        rms_norm_rows<scalar_t><<<blocks, kThreads, 0, stream>>>(
            input.const_data_ptr<scalar_t>(),
            scale.defined() ? scale.const_data_ptr<scalar_t>() : nullptr,
            output.mutable_data_ptr<scalar_t>(),
            rows,
            dim,
            cfg.eps);
      });
  const cudaError_t launched = cudaGetLastError();
  TORCH_CHECK(
      launched == cudaSuccess,
      "nn::rms_norm (CUDA): kernel launch failed: ",
      cudaGetErrorString(launched));
  return output;
}

}  // namespace nn::norm
