// Reference kernels of lists.ops.yaml.
//
// Demonstrates: list fields arriving as std::vector (Tensor[], float[],
// bool[], Tensor?[], int[]) with their empty-list and list defaults, checks
// that name the offending field, a Tensor[] output with a custom meta kernel,
// a backward taking one gradient per output piece, and enum lists arriving as
// std::vector<Reduce> (already checked: an invalid string never reaches the
// kernel).
#include "lists.ops.h"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/custom_function.h>

namespace multi {

// ---------------------------------------------------------------------------
// mix: x + sum_i enabled[i] * weights[i] * (tensors[i] + offsets[i])
// ---------------------------------------------------------------------------

at::Tensor kernels::mix(const at::Tensor& x, const MixCfg& cfg) {
  const size_t n = cfg.tensors.size();
  TORCH_CHECK(
      cfg.weights.empty() || cfg.weights.size() == n,
      "multi::mix: cfg.weights has ",
      cfg.weights.size(),
      " entries for ",
      n,
      " tensors (give one per tensor, or none)");
  TORCH_CHECK(
      cfg.enabled.empty() || cfg.enabled.size() == n,
      "multi::mix: cfg.enabled has ",
      cfg.enabled.size(),
      " entries for ",
      n,
      " tensors (give one per tensor, or none)");
  TORCH_CHECK(
      cfg.offsets.empty() || cfg.offsets.size() == n,
      "multi::mix: cfg.offsets has ",
      cfg.offsets.size(),
      " entries for ",
      n,
      " tensors (give one per tensor, or none)");
  at::Tensor out = x.clone();
  for (size_t i = 0; i < n; ++i) {
    if (!cfg.enabled.empty() && !cfg.enabled[i]) continue;
    const double weight = cfg.weights.empty() ? 1.0 : cfg.weights[i];
    const bool has_offset = !cfg.offsets.empty() && cfg.offsets[i].has_value();
    out.add_(has_offset ? cfg.tensors[i] + *cfg.offsets[i] : cfg.tensors[i], weight);
  }
  return out;
}

// The shapes the gradients are summed to (an input list's tensors broadcast
// against x), and the weights: all a backward needs.
void kernels::mix_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& /*x*/,
    const MixCfg& cfg,
    const at::Tensor& /*output*/) {
  std::vector<at::Tensor> saved = cfg.tensors;
  for (const c10::optional<at::Tensor>& offset : cfg.offsets) {
    saved.push_back(offset.value_or(at::Tensor()));
  }
  ctx->save_for_backward(saved);
  std::vector<double> weights(cfg.tensors.size(), 1.0);
  for (size_t i = 0; i < cfg.tensors.size(); ++i) {
    const bool on = cfg.enabled.empty() || cfg.enabled[i];
    weights[i] = on ? (cfg.weights.empty() ? 1.0 : cfg.weights[i]) : 0.0;
  }
  ctx->saved_data["weights"] = weights;  // 0.0: not enabled
}

// One gradient per tensor of cfg.tensors and cfg.offsets (c10::nullopt where
// a tensor is disabled, or an offset absent or not needed).
mix_grads kernels::mix_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const std::vector<at::Tensor> saved = ctx->get_saved_variables();
  const std::vector<double> weights = ctx->saved_data["weights"].toDoubleVector();
  const size_t n = weights.size();
  const auto grad = [&](size_t i, const at::Tensor& input, bool needed) -> structop::Grad {
    if (!input.defined() || weights[i] == 0.0 || !needed) return c10::nullopt;
    return (grad_output * weights[i]).sum_to_size(input.sizes());
  };
  std::vector<structop::Grad> tensors, offsets;
  for (size_t i = 0; i < n; ++i) {
    tensors.push_back(
        grad(i, saved[i], structop::needs_input_grad(ctx, mix_grad_slot::cfg_tensors, i)));
  }
  for (size_t i = 0; n + i < saved.size(); ++i) {
    offsets.push_back(
        grad(i, saved[n + i], structop::needs_input_grad(ctx, mix_grad_slot::cfg_offsets, i)));
  }
  return {
      /*x=*/grad_output,
      /*cfg=*/{/*tensors=*/std::move(tensors), /*offsets=*/std::move(offsets)}};
}

// ---------------------------------------------------------------------------
// blend: a list of records (Term[]); one gradient record per term
// ---------------------------------------------------------------------------

at::Tensor kernels::blend(const at::Tensor& x, const std::vector<Term>& terms) {
  at::Tensor out = x.clone();
  for (const Term& term : terms) {
    out.add_(term.b ? term.w + *term.b : term.w, term.scale);
  }
  return out;
}

void kernels::blend_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& /*x*/,
    const std::vector<Term>& terms,
    const at::Tensor& /*output*/) {
  std::vector<at::Tensor> saved;  // for their shapes: w, then b (undefined if absent)
  std::vector<double> scales;
  for (const Term& term : terms) {
    saved.push_back(term.w);
    saved.push_back(term.b.value_or(at::Tensor()));
    scales.push_back(term.scale);
  }
  ctx->save_for_backward(saved);
  ctx->saved_data["scales"] = scales;
}

blend_grads kernels::blend_backward(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& grad_output) {
  const std::vector<at::Tensor> saved = ctx->get_saved_variables();
  const std::vector<double> scales = ctx->saved_data["scales"].toDoubleVector();
  std::vector<TermGrad> terms;
  for (size_t i = 0; i < scales.size(); ++i) {
    const at::Tensor& w = saved[2 * i];
    const at::Tensor& b = saved[2 * i + 1];
    const at::Tensor g = grad_output * scales[i];
    terms.push_back(
        {/*w=*/g.sum_to_size(w.sizes()),
         /*b=*/b.defined() ? structop::Grad(g.sum_to_size(b.sizes())) : c10::nullopt});
  }
  return {/*x=*/grad_output, /*terms=*/std::move(terms)};
}

// ---------------------------------------------------------------------------
// chunk: a Tensor[] output
// ---------------------------------------------------------------------------

std::vector<at::Tensor> kernels::chunk(const at::Tensor& x, const ChunkCfg& cfg) {
  std::vector<at::Tensor> pieces = at::split_with_sizes_symint(x, cfg.sizes, cfg.dim);
  // The schema promises new tensors (no alias annotation), so no views of x.
  for (at::Tensor& piece : pieces) piece = piece.clone();
  return pieces;
}

std::vector<at::Tensor> kernels::chunk_meta(const at::Tensor& x, const ChunkCfg& cfg) {
  std::vector<at::Tensor> pieces;
  for (const at::Tensor& view : at::split_with_sizes_symint(x, cfg.sizes, cfg.dim)) {
    pieces.push_back(at::empty_like(view));
  }
  return pieces;
}

void kernels::chunk_setup_context(
    torch::autograd::AutogradContext* ctx,
    const at::Tensor& /*x*/,
    const ChunkCfg& cfg,
    const std::vector<at::Tensor>& /*output*/) {
  ctx->saved_data["dim"] = cfg.dim;
}

// Missing piece gradients arrive as zeros (the bridge fills them in).
chunk_grads kernels::chunk_backward(
    torch::autograd::AutogradContext* ctx,
    const std::vector<at::Tensor>& grad_output) {
  return {/*x=*/at::cat(grad_output, ctx->saved_data["dim"].toInt())};
}

// ---------------------------------------------------------------------------
// pad: constant padding; the meta kernel computes the padded shape
// ---------------------------------------------------------------------------

at::Tensor kernels::pad(const at::Tensor& x, const PadCfg& cfg) {
  return at::constant_pad_nd_symint(x, cfg.pad, cfg.value);
}

at::Tensor kernels::pad_meta(const at::Tensor& x, const PadCfg& cfg) {
  TORCH_CHECK(
      cfg.pad.size() % 2 == 0 && cfg.pad.size() / 2 <= static_cast<size_t>(x.dim()),
      "multi::pad: cfg.pad must hold (before, after) pairs for at most ",
      x.dim(),
      " dimensions, got ",
      cfg.pad.size(),
      " values");
  // Symbolic sizes (sym_sizes, empty_symint): under torch.compile(dynamic=True)
  // both x's sizes and cfg.pad may be symbols.
  std::vector<c10::SymInt> sizes = x.sym_sizes().vec();
  for (size_t i = 0; i < cfg.pad.size() / 2; ++i) {
    sizes[sizes.size() - 1 - i] += cfg.pad[2 * i] + cfg.pad[2 * i + 1];
  }
  return at::empty_symint(sizes, x.options());
}

// ---------------------------------------------------------------------------
// center: enum lists (Reduce[] field, Reduce[]? parameter)
// ---------------------------------------------------------------------------

namespace {

/// `how` of t along `dim` (kept, size 1), or of all of t for nullopt.
at::Tensor reduced(const at::Tensor& t, Reduce how, c10::optional<int64_t> dim) {
  switch (how) {
    case Reduce::sum:
      return dim ? t.sum(*dim, /*keepdim=*/true) : t.sum();
    case Reduce::max:
      return dim ? std::get<0>(t.max(*dim, /*keepdim=*/true)) : t.max();
    case Reduce::mean:
      return dim ? t.mean(*dim, /*keepdim=*/true) : t.mean();
  }
  TORCH_CHECK(false, "multi::center: unknown Reduce value");
}

}  // namespace

at::Tensor kernels::center(
    const at::Tensor& x,
    const CenterCfg& cfg,
    const c10::optional<std::vector<Reduce>>& then) {
  TORCH_CHECK(
      cfg.steps.size() == cfg.dims.size(),
      "multi::center: cfg.steps has ",
      cfg.steps.size(),
      " entries for ",
      cfg.dims.size(),
      " dims (give one per dim)");
  at::Tensor out = x.clone();  // a new tensor even with no steps (no alias of x)
  for (size_t i = 0; i < cfg.steps.size(); ++i) {
    out = out - reduced(out, cfg.steps[i], cfg.dims[i]);
  }
  if (then) {
    for (Reduce how : *then) out = out - reduced(out, how, c10::nullopt);
  }
  return out;
}

}  // namespace multi
