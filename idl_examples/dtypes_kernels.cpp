// Reference kernels of dtypes.ops.yaml.
//
// Demonstrates: ScalarType and Device fields arriving as at::ScalarType and
// at::Device, a record-only op whose tensor is built from the record's
// values, custom meta kernels for results whose dtype differs from the
// input's, an op that is another's with other defaults, and a parameter
// named `from` in the IDL (`from_` in the schema and in C++).
#include "dtypes.ops.h"

#include <ATen/ATen.h>

namespace dtypes {

at::Tensor kernels::cast(const at::Tensor& x, const CastCfg& cfg) {
  return x.to(cfg.device, cfg.dtype, /*non_blocking=*/false, /*copy=*/true);
}

// On Meta the result stays on Meta; only the dtype changes.
at::Tensor kernels::cast_meta(const at::Tensor& x, const CastCfg& cfg) {
  return at::empty_like(x, x.options().dtype(cfg.dtype));
}

// With no tensor argument the op dispatches to this kernel whatever `device`
// is; FakeTensorMode (torch.compile) calls it with device=meta.
at::Tensor kernels::full(const FillCfg& cfg, at::Device device) {
  return at::full_symint(cfg.sizes, cfg.value, at::TensorOptions().dtype(cfg.dtype).device(device));
}

// Reached only when the Meta key is selected explicitly, e.g. by a tracer.
at::Tensor kernels::full_meta(const FillCfg& cfg, at::Device /*device*/) {
  return at::empty_symint(cfg.sizes, at::TensorOptions().dtype(cfg.dtype).device(at::kMeta));
}

// The op differs from cast only in its default for cfg, which the APIs and
// the schema apply: the kernels are cast's. (Qualified: unqualified, `cast(x,
// cfg)` also finds the call API dtypes::cast through CastCfg, and is ambiguous.)
at::Tensor kernels::to_half(const at::Tensor& x, const CastCfg& cfg) {
  return kernels::cast(x, cfg);
}

at::Tensor kernels::to_half_meta(const at::Tensor& x, const CastCfg& cfg) {
  return kernels::cast_meta(x, cfg);
}

at::Tensor kernels::cast_checked(const at::Tensor& x, at::ScalarType from_, at::ScalarType to) {
  TORCH_CHECK_VALUE(
      x.scalar_type() == from_,
      "dtypes::cast_checked: x has dtype ",
      x.scalar_type(),
      " but `from` is ",
      from_);
  TORCH_CHECK_VALUE(
      at::canCast(from_, to),
      "dtypes::cast_checked: ",
      from_,
      " cannot be cast to ",
      to,
      " safely");
  return x.to(to, /*non_blocking=*/false, /*copy=*/true);
}

at::Tensor kernels::cast_checked_meta(
    const at::Tensor& x,
    at::ScalarType /*from_*/,
    at::ScalarType to) {
  return at::empty_like(x, x.options().dtype(to));
}

}  // namespace dtypes
