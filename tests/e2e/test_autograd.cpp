// End-to-end tests of the generated code, autograd side: gradients through
// the generated Autograd kernels and the examples' hand-written backwards,
// compared with hand-derived values or with autograd through an ATen
// reference of the same forward. The SCENARIOS.md row each test covers is in
// its name and tag.
#include "e2e_support.h"

#include "attention.ops.h"
#include "compose.ops.h"
#include "grad_errors.ops.h"
#include "lists.ops.h"
#include "mlp.ops.h"
#include "mutation.ops.h"
#include "rms_norm.ops.h"
#include "weights.ops.h"

#include <ATen/SequenceNumber.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <limits>
#include <string>
#include <vector>

using e2e::close;
using e2e::error_of;
using e2e::f64;
using torch::autograd::variable_list;

namespace {

at::Tensor leaf(at::IntArrayRef sizes) {
  return at::randn(sizes, f64()).requires_grad_();
}

/// d loss / d inputs; an input the loss does not depend on gets an undefined tensor.
variable_list grads(const at::Tensor& loss, const variable_list& inputs) {
  return torch::autograd::grad(
      {loss},
      inputs,
      /*grad_outputs=*/{},
      /*retain_graph=*/false,
      /*create_graph=*/false,
      /*allow_unused=*/true);
}

/// The same gradients, of an ATen reference of the forward on detached copies.
template <class Fn>
variable_list reference_grads(const variable_list& inputs, Fn&& loss_of) {
  variable_list copies;
  for (const auto& t : inputs) copies.push_back(t.detach().clone().requires_grad_());
  return grads(loss_of(copies), copies);
}

bool all_close(const variable_list& a, const variable_list& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].defined() != b[i].defined()) return false;
    if (a[i].defined() && !close(a[i], b[i], 1e-6, 1e-8)) {
      CATCH_UNSCOPED_INFO("gradient " << i << " differs:\n" << a[i] << "\nvs\n" << b[i]);
      return false;
    }
  }
  return true;
}

}  // namespace

// ---------------------------------------------------------------------------
// Row 14: one input, several inputs, several outputs
// ---------------------------------------------------------------------------

CATCH_TEST_CASE(
    "row 14: backward for one input (a record without tensors adds no slot)",
    "[row14][row15]") {
  // optim::Penalty has no tensor field: the grads record holds `w` only.
  static_assert(sizeof(optim::l2_penalty_grads) == sizeof(structop::Grad));
  const at::Tensor w = leaf({3, 2});
  const at::Tensor loss = optim::l2_penalty(w, {/*lambda_=*/0.3});
  CATCH_CHECK(close(grads(loss, {w})[0], 0.6 * w.detach()));
}

CATCH_TEST_CASE("row 14: backward for several inputs", "[row14]") {
  const at::Tensor from = leaf({4});
  const at::Tensor to = leaf({4});
  const at::Tensor g = at::randn({4}, f64());
  const variable_list lerp_grads = grads((compose::lerp(from, to, 0.25) * g).sum(), {from, to});
  CATCH_CHECK(close(lerp_grads[0], 0.75 * g));
  CATCH_CHECK(close(lerp_grads[1], 0.25 * g));

  const variable_list axpy_grads = grads((compose::axpy(from, to, -2.0) * g).sum(), {from, to});
  CATCH_CHECK(close(axpy_grads[0], -2.0 * g));
  CATCH_CHECK(close(axpy_grads[1], g));
}

namespace {

/// Attention with every option, as plain ATen ops (autograd gives the reference gradient).
std::tuple<at::Tensor, at::Tensor> reference_attention(
    const variable_list& in,
    double scale,
    double softcap) {
  const at::Tensor &q = in[0], &k = in[1], &v = in[2], &slopes = in[3], &bias = in[4];
  const int64_t lq = q.size(-2), lk = k.size(-2);
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) * scale;
  s = softcap * at::tanh(s / softcap) + bias;
  const at::Tensor dist =
      (at::arange(lq, f64()).unsqueeze(1) + double(lk - lq) - at::arange(lk, f64())).abs();
  s = s - slopes.view({-1, 1, 1}) * dist;
  const at::Tensor visible = at::ones({lq, lk}, at::kBool).tril(lk - lq);
  s = s.masked_fill(visible.logical_not(), -std::numeric_limits<double>::infinity());
  return {at::matmul(at::softmax(s, -1), v), at::logsumexp(s, -1)};
}

}  // namespace

CATCH_TEST_CASE(
    "row 14 and 12: several outputs, kwarg-only record with a tensor field",
    "[row14][row12][row15]") {
  const variable_list in = {
      leaf({2, 3, 4, 5}),
      leaf({2, 3, 6, 5}),
      leaf({2, 3, 6, 2}),
      leaf({3}),
      leaf({4, 6})};  // q, k, v, cfg.alibi_slopes, bias
  const at::Tensor g_out = at::randn({2, 3, 4, 2}, f64());
  const at::Tensor g_lse = at::randn({2, 3, 4}, f64());

  attention::AttnCfg cfg;
  cfg.scale = 0.4;
  cfg.softcap = 2.0;
  cfg.alibi_slopes = in[3];
  auto [out, lse] = attention::attention(in[0], in[1], in[2], cfg, in[4]);
  CATCH_CHECK(out.grad_fn()->name() == "attention::attention_backward");
  const variable_list got = grads((out * g_out).sum() + (lse * g_lse).sum(), in);

  const variable_list want = reference_grads(in, [&](const variable_list& c) {
    auto [o, l] = reference_attention(c, 0.4, 2.0);
    return (o * g_out).sum() + (l * g_lse).sum();
  });
  CATCH_CHECK(all_close(got, want));

  // Only one output used: the other's gradient arrives as zeros.
  auto [out2, lse2] = attention::attention(in[0], in[1], in[2], cfg, in[4]);
  (void)out2;
  const variable_list lse_only = grads(lse2.sum(), {in[2]});
  CATCH_CHECK(close(lse_only[0], at::zeros_like(in[2])));  // v only affects out
}

// ---------------------------------------------------------------------------
// Row 15: record inputs: grads per field, nested, some with none
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 15: gradients for tensor fields two records deep", "[row15]") {
  const at::Tensor x = leaf({2, 3});
  const at::Tensor w = leaf({2, 3});
  const at::Tensor b = leaf({2, 3});
  const at::Tensor g = at::randn({2, 3}, f64());
  const at::Tensor y = weights::op(x, weights::WeightCfg{{w, b}, 1.5});
  CATCH_CHECK(y.grad_fn()->name() == "weights::op_backward");
  const variable_list got = grads((y * g).sum(), {x, w, b});
  CATCH_CHECK(close(got[0], 1.5 * g * w.detach()));  // d/dx
  CATCH_CHECK(close(got[1], 1.5 * g * x.detach()));  // d/d cfg.inner.w
  CATCH_CHECK(close(got[2], 1.5 * g));               // d/d cfg.inner.b
}

CATCH_TEST_CASE("row 15: only the fields that require grad get one", "[row15]") {
  const at::Tensor x = leaf({2, 3});
  const at::Tensor w = at::randn({2, 3}, f64());  // no grad wanted
  const at::Tensor b = leaf({2, 3});
  const at::Tensor y = weights::op(x, weights::WeightCfg{{w, b}, 2.0});
  const variable_list got = grads(y.sum(), {x, b});
  CATCH_CHECK(close(got[0], 2.0 * w));
  CATCH_CHECK(close(got[1], at::full({2, 3}, 2.0, f64())));
}

CATCH_TEST_CASE(
    "row 15: nested three levels; optional tensors that are None get no gradient",
    "[row15][row5]") {
  // fc1 without LoRA, fc2 without bias: those slots are None.
  const variable_list in = {
      leaf({5, 4}),  // x
      leaf({6, 4}),
      leaf({6}),  // fc1.weight, fc1.bias
      leaf({4, 6}),
      leaf({2, 6}),
      leaf({4, 2})};  // fc2.weight, fc2.lora.a, .b
  nn::mlp::MlpCfg cfg;
  cfg.fc1.weight = in[1];
  cfg.fc1.bias = in[2];
  cfg.fc2.weight = in[3];
  cfg.fc2.lora.a = in[4];
  cfg.fc2.lora.b = in[5];
  cfg.fc2.lora.scale = 0.5;
  cfg.act = nn::Activation::gelu;
  cfg.residual_scale = 2.0;
  const at::Tensor g = at::randn({5, 4}, f64());
  const variable_list got = grads((nn::mlp::mlp(in[0], cfg) * g).sum(), in);

  const variable_list want = reference_grads(in, [&](const variable_list& c) {
    const at::Tensor h = at::gelu(at::matmul(c[0], c[1].t()) + c[2]);
    const at::Tensor y = at::matmul(h, c[3].t()) +
                         0.5 * at::matmul(at::matmul(h, c[4].t()), c[5].t()) + 2.0 * c[0];
    return (y * g).sum();
  });
  CATCH_CHECK(all_close(got, want));
}

// ---------------------------------------------------------------------------
// Row 16: two tensors around a record
// ---------------------------------------------------------------------------

CATCH_TEST_CASE(
    "row 16: tensors before and after a record each get their own gradient",
    "[row16][row2]") {
  const variable_list in = {leaf({3, 4}), leaf({4}), leaf({3, 4})};  // x, cfg.weight, gate
  nn::norm::RmsNormCfg cfg;
  cfg.weight = in[1];
  cfg.eps = 1e-3;
  const at::Tensor g = at::randn({3, 4}, f64());
  const variable_list got = grads((nn::norm::rms_norm_gated(in[0], cfg, in[2]) * g).sum(), in);
  const variable_list want = reference_grads(in, [&](const variable_list& c) {
    const at::Tensor n = c[0] * at::rsqrt(c[0].pow(2).mean(-1, true) + 1e-3) * c[1];
    return (n * at::silu(c[2]) * g).sum();
  });
  CATCH_CHECK(all_close(got, want));

  // Without the optional weight (None), x still gets its gradient.
  const variable_list x_only = {leaf({3, 4})};
  const at::Tensor y = nn::norm::rms_norm(x_only[0]);
  const variable_list want_x = reference_grads(x_only, [](const variable_list& c) {
    return (c[0] * at::rsqrt(c[0].pow(2).mean(-1, true) + 1e-6)).pow(3).sum();
  });
  CATCH_CHECK(all_close(grads(y.pow(3).sum(), x_only), want_x));
}

// ---------------------------------------------------------------------------
// Row 17: a backward calling a registered op
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 17: a backward that calls another generated op", "[row17]") {
  const at::Tensor a = leaf({3});
  const at::Tensor b = leaf({3});
  const at::Tensor y = compose::mul(a, b);
  variable_list got;
  {
    e2e::OpTrace trace;
    got = torch::autograd::grad(
        {y.sum()},
        {a, b},
        {},
        /*retain_graph=*/true,
        /*create_graph=*/true);
    CATCH_CHECK(trace.count("compose::mul") == 2);  // mul_backward: one call per input
  }
  CATCH_CHECK(close(got[0].detach(), b.detach()));
  CATCH_CHECK(close(got[1].detach(), a.detach()));
  // The gradient is itself differentiable (the backward's mul recorded a graph).
  CATCH_REQUIRE(got[0].requires_grad());
  CATCH_CHECK(close(grads(got[0].sum(), {b})[0], at::ones({3}, f64())));
}

// ---------------------------------------------------------------------------
// Tensor[] output
// ---------------------------------------------------------------------------

CATCH_TEST_CASE(
    "row 1: backward of a Tensor[] output; unused pieces count as zeros",
    "[row1][row14]") {
  const at::Tensor x = leaf({2, 5});
  multi::ChunkCfg cfg;
  cfg.sizes = {2, 3};
  const std::vector<at::Tensor> pieces = multi::chunk(x, cfg);
  CATCH_REQUIRE(pieces.size() == 2);
  CATCH_CHECK(pieces[0].grad_fn() == pieces[1].grad_fn());  // one graph node, two outputs
  const at::Tensor g = at::randn({2, 3}, f64());
  const at::Tensor got = grads((pieces[1] * g).sum(), {x})[0];
  CATCH_CHECK(close(got, at::cat({at::zeros({2, 2}, f64()), g}, 1)));
}

// ---------------------------------------------------------------------------
// Tensor[] and Tensor?[] inputs: one gradient per tensor
// ---------------------------------------------------------------------------

namespace {

/// mix's forward in ATen: x + sum_i w[i] * (tensors[i] + offsets[i]).
at::Tensor mix_reference(
    const variable_list& in,  // x, tensors..., offsets...
    size_t n,
    const std::vector<double>& weights,
    const std::vector<bool>& enabled,
    const std::vector<bool>& has_offset) {
  at::Tensor out = in[0].clone();
  size_t next_offset = 1 + n;
  for (size_t i = 0; i < n; ++i) {
    at::Tensor term = in[1 + i];
    if (has_offset[i]) term = term + in[next_offset++];
    if (enabled[i]) out = out + weights[i] * term;
  }
  return out;
}

}  // namespace

CATCH_TEST_CASE(
    "Tensor[] and Tensor?[] fields: one gradient per tensor, broadcasting summed back",
    "[row14][lists]") {
  const at::Tensor x = leaf({2, 3});
  const at::Tensor a = leaf({2, 3});
  const at::Tensor b = leaf({3});  // broadcast against x
  const at::Tensor c = leaf({2, 3});
  const at::Tensor oa = leaf({1, 3});
  const at::Tensor oc = leaf({2, 3});
  multi::MixCfg cfg;
  cfg.tensors = {a, b, c};
  cfg.weights = {2.0, -0.5, 3.0};
  cfg.enabled = {true, true, false};  // c is disabled: its gradient is zero
  cfg.offsets = {oa, c10::nullopt, oc};
  const at::Tensor g = at::randn({2, 3}, f64());
  const variable_list inputs = {x, a, b, c, oa, oc};
  const variable_list got = grads((multi::mix(x, cfg) * g).sum(), inputs);
  const variable_list want = reference_grads(inputs, [&](const variable_list& in) {
    return (mix_reference(in, 3, cfg.weights, {true, true, false}, {true, false, true}) * g).sum();
  });
  // Disabled: no gradient from the backward (c10::nullopt), none from the reference.
  CATCH_CHECK_FALSE(got[3].defined());
  CATCH_CHECK_FALSE(got[5].defined());
  CATCH_CHECK(all_close(got, want));
  CATCH_CHECK(got[2].sizes() == b.sizes());
}

CATCH_TEST_CASE("a list of records: one gradient record per item", "[row14][lists]") {
  const at::Tensor x = leaf({2, 3});
  const at::Tensor w1 = leaf({2, 3});
  const at::Tensor b1 = leaf({1, 3});
  const at::Tensor w2 = leaf({3});
  const std::vector<multi::Term> terms = {{w1, b1, 2.0}, {w2, c10::nullopt, -0.5}};
  const at::Tensor g = at::randn({2, 3}, f64());
  const variable_list inputs = {x, w1, b1, w2};
  const variable_list got = grads((multi::blend(x, terms) * g).sum(), inputs);
  const variable_list want = reference_grads(inputs, [&](const variable_list& in) {
    return ((in[0] + 2.0 * (in[1] + in[2]) - 0.5 * in[3]) * g).sum();
  });
  CATCH_CHECK(all_close(got, want));
  CATCH_CHECK(close(multi::blend(x, {}), x));
}

CATCH_TEST_CASE(
    "optional records: gradients for the tensors of present ones",
    "[row14][optional]") {
  const at::Tensor x = leaf({2, 3}), w = leaf({2, 3}), b = leaf({2, 3});
  const at::Tensor g = leaf({2, 3}), w2 = leaf({2, 3}), b2 = leaf({2, 3});
  const at::Tensor go = at::randn({2, 3}, f64());
  // Everything present.
  const variable_list all = {x, w, b, g, w2, b2};
  const variable_list got = grads(
      (weights::affine(x, weights::Inner{w, b}, weights::Gate{g, weights::Inner{w2, b2}}) * go)
          .sum(),
      all);
  const variable_list want = reference_grads(all, [&](const variable_list& in) {
    return ((((in[0] * in[1] + in[2]) * in[3]) * in[4] + in[5]) * go).sum();
  });
  CATCH_CHECK(all_close(got, want));
  // post absent, gate without bias: only x and g get gradients.
  const variable_list some = grads(
      (weights::affine(x, c10::nullopt, weights::Gate{g}) * go).sum(),
      all);
  CATCH_CHECK(close(some[0], go * g.detach()));
  CATCH_CHECK(close(some[3], go * x.detach()));
  CATCH_CHECK_FALSE(some[1].defined());
  CATCH_CHECK_FALSE(some[4].defined());
  // Nothing present: the output is a copy of x.
  CATCH_CHECK(close(grads((weights::affine(x) * go).sum(), {x})[0], go));
}

CATCH_TEST_CASE(
    "record returns: the backward takes the output gradients as a grad record",
    "[returns]") {
  const at::Tensor x = leaf({3, 4});
  const at::Tensor gc = at::randn({3, 4}, f64());
  const at::Tensor gm = at::randn({3, 1}, f64()), gv = at::randn({3, 1}, f64());
  auto [centered, stats] = weights::moments(x);
  CATCH_CHECK(stats.var.grad_fn() == centered.grad_fn());  // one node, three outputs
  const variable_list got = grads(
      (centered * gc).sum() + (stats.mean * gm).sum() + (stats.var * gv).sum(),
      {x});
  const variable_list want = reference_grads({x}, [&](const variable_list& in) {
    const at::Tensor mean = in[0].mean(-1, true);
    const at::Tensor c = in[0] - mean;
    return (c * gc).sum() + (mean * gm).sum() + ((c * c).mean(-1, true) * gv).sum();
  });
  CATCH_CHECK(all_close(got, want));
  // Only one leaf used: the others' gradients arrive as zeros.
  auto [c2, s2] = weights::moments(x);
  (void)c2;
  const variable_list var_only = grads((s2.var * gv).sum(), {x});
  const variable_list var_want = reference_grads({x}, [&](const variable_list& in) {
    const at::Tensor c = in[0] - in[0].mean(-1, true);
    return ((c * c).mean(-1, true) * gv).sum();
  });
  CATCH_CHECK(all_close(var_only, var_want));
}

CATCH_TEST_CASE(
    "Tensor[]: only the tensors that require grad get one; an empty list has no edge",
    "[row14][lists]") {
  const at::Tensor x = at::randn({3}, f64());
  const at::Tensor a = at::randn({3}, f64());  // no grad
  const at::Tensor b = leaf({3});
  multi::MixCfg cfg;
  cfg.tensors = {a, b};
  const at::Tensor y = multi::mix(x, cfg);
  CATCH_REQUIRE(y.grad_fn() != nullptr);
  CATCH_CHECK(y.grad_fn()->num_outputs() == 3);  // x, tensors[0], tensors[1]; offsets empty
  CATCH_CHECK(close(grads(y.sum(), {b})[0], at::ones({3}, f64())));
  // No tensor of the op requires grad: no node.
  cfg.tensors = {a};
  CATCH_CHECK(multi::mix(x, cfg).grad_fn() == nullptr);
}

CATCH_TEST_CASE("Tensor[]: a wrong number of gradients names the list", "[row22][lists]") {
  const at::Tensor x = leaf({2, 3});
  const std::vector<at::Tensor> xs = {leaf({2, 3}), leaf({2, 3})};
  const at::Tensor ok = e2e_fixtures::list_grads(x, xs, 0);
  const variable_list got = grads(ok.sum(), {x, xs[0], xs[1]});
  CATCH_CHECK(close(got[2], at::ones({2, 3}, f64())));
  const at::Tensor y = e2e_fixtures::list_grads(x, xs, 1);
  CATCH_CHECK_THAT(
      error_of([&] { grads(y.sum(), {x, xs[0], xs[1]}); }),
      Catch::Matchers::ContainsSubstring("e2e_fixtures::list_grads: backward returned 1 gradient "
                                         "for xs, but the input list has 2 tensors"));
}

CATCH_TEST_CASE("Tensor[]: a gradient of the wrong shape is reported as xs[1]", "[row22][lists]") {
  const at::Tensor x = leaf({2, 3});
  const std::vector<at::Tensor> xs = {leaf({2, 3}), leaf({2, 3})};
  const at::Tensor y = e2e_fixtures::list_grads(x, xs, 2);
  CATCH_CHECK_THAT(
      error_of([&] { grads(y.sum(), {x, xs[0], xs[1]}); }),
      Catch::Matchers::ContainsSubstring("e2e_fixtures::list_grads: gradient for xs[1] has shape "
                                         "[3] but the input has shape [2, 3]"));
}

// ---------------------------------------------------------------------------
// The fast path: no autograd state when no gradient is needed
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("no grad_fn with grad mode off or no input requiring grad", "[row14]") {
  const at::Tensor x = at::randn({2, 3}, f64());
  const at::Tensor w = leaf({2, 3});
  const weights::WeightCfg cfg{{w, x}};
  CATCH_CHECK(weights::op(x, cfg).grad_fn() != nullptr);
  {
    at::NoGradGuard no_grad;
    const uint64_t nodes_before = at::sequence_number::peek();
    const at::Tensor y = weights::op(x, cfg);
    CATCH_CHECK(y.grad_fn() == nullptr);
    CATCH_CHECK_FALSE(y.requires_grad());
    CATCH_CHECK(at::sequence_number::peek() == nodes_before);  // no graph node was even built
  }
  const uint64_t nodes_before = at::sequence_number::peek();
  const at::Tensor y = weights::op(x, weights::WeightCfg{{x, x}});
  CATCH_CHECK(y.grad_fn() == nullptr);
  CATCH_CHECK_FALSE(y.requires_grad());
  CATCH_CHECK(at::sequence_number::peek() == nodes_before);
}

CATCH_TEST_CASE("saved tensors are freed after backward, as with autograd::Function", "[row14]") {
  const at::Tensor x = leaf({2, 3});
  const at::Tensor w = leaf({2, 3});
  const at::Tensor loss = weights::op(x, weights::WeightCfg{{w, w}}).sum();
  loss.backward();  // op_setup_context saved x and cfg.inner.w
  CATCH_CHECK_THAT(
      error_of([&] { loss.backward(); }),
      Catch::Matchers::ContainsSubstring("second time"));
}

// ---------------------------------------------------------------------------
// Row 22: run-time errors name the original path
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 22: a gradient of the wrong shape is reported as cfg.inner.w", "[row22]") {
  const at::Tensor x = leaf({2, 3});
  const at::Tensor w = leaf({2, 3});
  const at::Tensor y = e2e_fixtures::wrong_shape(x, {{w, w.detach()}});
  const std::string message = error_of([&] { grads(y.sum(), {x, w}); });
  CATCH_CHECK_THAT(
      message,
      Catch::Matchers::ContainsSubstring("e2e_fixtures::wrong_shape: gradient for cfg.inner.w "
                                         "has shape [3] but the input has shape [2, 3]"));
}

CATCH_TEST_CASE("row 22: a gradient of the wrong dtype is reported as cfg.inner.w", "[row22]") {
  const at::Tensor x = leaf({2, 3});
  const at::Tensor w = leaf({2, 3});
  const at::Tensor y = e2e_fixtures::wrong_dtype(x, {{w, w.detach()}});
  CATCH_CHECK_THAT(
      error_of([&] { grads(y.sum(), {x, w}); }),
      Catch::Matchers::ContainsSubstring(
          "e2e_fixtures::wrong_dtype: gradient for cfg.inner.w has dtype "
          "Float but the input has dtype Double"));
  // Not required: a wrong gradient for an input that needs none is dropped unchecked.
  const at::Tensor y2 = e2e_fixtures::wrong_dtype(x, {{w.detach(), w.detach()}});
  CATCH_CHECK(close(grads(y2.sum(), {x})[0], w.detach()));
}
