// Reference kernel of sampling.ops.yaml: a logits processor.
//
// Demonstrates: every optional field kind as it arrives in C++
// (c10::optional<double / int64_t / at::Tensor / std::vector<int64_t> /
// std::string / bool>), and a top-level `Tensor?` parameter.
#include "sampling.ops.h"

#include <ATen/ATen.h>

#include <limits>

namespace sampling {

at::Tensor kernels::process_logits(
    const at::Tensor& logits,
    const c10::optional<at::Tensor>& mask,
    const LogitsCfg& cfg) {
  constexpr double kMinusInf = -std::numeric_limits<double>::infinity();
  at::Tensor x = cfg.bias ? logits + *cfg.bias : logits.clone();
  if (cfg.temperature) {
    TORCH_CHECK_VALUE(
        *cfg.temperature > 0,
        "sampling::process_logits: cfg.temperature must be > 0, got ",
        *cfg.temperature);
    x = x / *cfg.temperature;
  }
  if (mask) x = x.masked_fill(mask->logical_not(), kMinusInf);
  if (cfg.suppress && !cfg.suppress->empty()) {
    const at::Tensor ids = at::tensor(*cfg.suppress, x.options().dtype(at::kLong));
    x = x.index_fill(-1, ids, kMinusInf);
  }
  if (cfg.top_k) {
    TORCH_CHECK_VALUE(
        *cfg.top_k > 0 && *cfg.top_k <= x.size(-1),
        "sampling::process_logits: cfg.top_k must be in [1, ",
        x.size(-1),
        "], got ",
        *cfg.top_k);
    const at::Tensor kth = std::get<0>(x.topk(*cfg.top_k, -1)).narrow(-1, *cfg.top_k - 1, 1);
    x = x.masked_fill(x < kth, kMinusInf);
  }
  if (cfg.output) {
    if (*cfg.output == "probs") {
      x = at::softmax(x, -1);
    } else if (*cfg.output == "log_probs") {
      x = at::log_softmax(x, -1);
    } else {
      TORCH_CHECK_VALUE(
          false,
          "sampling::process_logits: cfg.output must be \"probs\", "
          "\"log_probs\" or None, got \"",
          *cfg.output,
          "\"");
    }
  }
  if (cfg.greedy.value_or(false)) {
    x = at::zeros_like(x).scatter_(-1, x.argmax(-1, /*keepdim=*/true), 1.0);
  }
  return x;
}

}  // namespace sampling
