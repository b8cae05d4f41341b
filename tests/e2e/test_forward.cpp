// End-to-end tests of the generated code, forward side: every example op of
// idl_examples/ called through its generated C++ call API (record form) and
// through the flat dispatcher op, checked against ATen references. The
// SCENARIOS.md row each test covers is in its name and tag.
//
// Gradients are in test_autograd.cpp; Python callers in test_examples.py.
#include "e2e_support.h"

#include "attention.ops.h"
#include "compose.ops.h"
#include "dtypes.ops.h"
#include "lists.ops.h"
#include "mlp.ops.h"
#include "mutation.ops.h"
#include "rms_norm.ops.h"
#include "sampling.ops.h"
#include "weights.ops.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include <cmath>
#include <limits>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

using e2e::close;
using e2e::error_of;
using e2e::f64;
using e2e::on_meta;

namespace {

const c10::FunctionSchema& schema_of(const char* name, const char* overload = "") {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload).schema();
}

/// Softmax attention written independently of the kernel: masks from tril/triu.
std::tuple<at::Tensor, at::Tensor> reference_attention(
    const at::Tensor& q,
    const at::Tensor& k,
    const at::Tensor& v,
    double scale,
    const std::string& mask,
    int64_t window,
    const at::Tensor& bias) {
  const int64_t lq = q.size(-2), lk = k.size(-2);
  at::Tensor s = at::matmul(q, k.transpose(-2, -1)) * scale;
  if (bias.defined()) s = s + bias;
  const at::Tensor ones = at::ones({lq, lk}, at::kBool);
  at::Tensor visible = ones;
  if (mask != "none") visible = ones.tril(lk - lq);
  if (mask == "sliding_window") visible = visible.logical_and(ones.triu(lk - lq - window + 1));
  s = s.masked_fill(visible.logical_not(), -std::numeric_limits<double>::infinity());
  return {at::matmul(at::softmax(s, -1), v), at::logsumexp(s, -1)};
}

}  // namespace

// ---------------------------------------------------------------------------
// Row 1: forward-only op, several tensor inputs, several outputs, Tensor[]
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 1: forward-only op with several tensor inputs and a tuple output", "[row1]") {
  const at::Tensor a = at::randn({2, 3}, f64());
  const at::Tensor b = at::randn({4}, f64());
  auto [ca, cb] = compose::clamp_pair(a, -0.5, 0.5, b);
  CATCH_CHECK(close(ca, a.clamp(-0.5, 0.5)));
  CATCH_CHECK(close(cb, b.clamp(-0.5, 0.5)));
}

CATCH_TEST_CASE("row 1: a Tensor[] output", "[row1]") {
  const at::Tensor x = at::randn({2, 7}, f64());
  multi::ChunkCfg cfg;
  cfg.sizes = {3, 4};
  const std::vector<at::Tensor> pieces = multi::chunk(x, cfg);
  CATCH_REQUIRE(pieces.size() == 2);
  CATCH_CHECK(close(pieces[0], x.narrow(1, 0, 3)));
  CATCH_CHECK(close(pieces[1], x.narrow(1, 3, 4)));
  CATCH_CHECK_FALSE(pieces[0].is_alias_of(x));  // new tensors, as the schema promises
  cfg.sizes = {1, 1};
  cfg.dim = 0;
  CATCH_CHECK(multi::chunk(x, cfg).size() == 2);
}

CATCH_TEST_CASE("row 1: two named outputs (attention out and lse)", "[row1][row10][row11]") {
  const at::Tensor q = at::randn({2, 3, 5, 4}, f64());
  const at::Tensor k = at::randn({2, 3, 7, 4}, f64());
  const at::Tensor v = at::randn({2, 3, 7, 6}, f64());
  auto [out, lse] = attention::attention(q, k, v);  // AttnCfg and bias left out: defaults
  auto [ref_out, ref_lse] = reference_attention(q, k, v, 0.5, "causal", 256, at::Tensor());
  CATCH_CHECK(close(out, ref_out));
  CATCH_CHECK(close(lse, ref_lse));

  // Every mask mode arrives in the kernel as the enum the caller chose.
  attention::AttnCfg cfg;
  cfg.scale = 0.3;
  for (auto [mode, name] :
       {std::pair{attention::MaskMode::none, "none"},
        std::pair{attention::MaskMode::sliding_window, "sliding_window"}}) {
    cfg.mask = mode;
    cfg.window = 3;
    const at::Tensor bias = at::randn({5, 7}, f64());
    auto [o, l] = attention::attention(q, k, v, cfg, bias);  // row 11: Tensor? given
    auto [ro, rl] = reference_attention(q, k, v, 0.3, name, 3, bias);
    CATCH_CHECK(close(o, ro));
    CATCH_CHECK(close(l, rl));
  }
}

// ---------------------------------------------------------------------------
// Row 2: names and overloads as declared
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 2: ops are registered under their namespace, name and overload", "[row2]") {
  CATCH_CHECK(schema_of("weights::op").name() == "weights::op");
  const c10::FunctionSchema& gated = schema_of("nn::rms_norm", "gated");
  CATCH_CHECK(gated.overload_name() == "gated");
  CATCH_CHECK(gated.arguments().back().name() == "gate");
  CATCH_CHECK(schema_of("nn::rms_norm").arguments().size() == 3);
  // Two IDL files are fragments of one torch namespace.
  CATCH_CHECK(schema_of("nn::mlp").name() == "nn::mlp");
  // The lowered schema, as structopc printed it into the header comment.
  std::ostringstream text;
  text << schema_of("weights::op");
  CATCH_CHECK(
      text.str() ==
      "weights::op(Tensor x, Tensor cfg__inner__w, Tensor cfg__inner__b, "
      "float cfg__scale=1., str cfg__mode=\"causal\") -> Tensor");
  // A parameter named like a Python keyword is from_ in the schema too (docs/idl.md).
  CATCH_CHECK(schema_of("dtypes::cast_checked").arguments()[1].name() == "from_");

  // The overload runs its own kernel, and dispatch: [CPU, CUDA] registered both keys.
  const at::Tensor x = at::randn({2, 4}, f64());
  const at::Tensor gate = at::randn({2, 4}, f64());
  CATCH_CHECK(close(nn::norm::rms_norm_gated(x, {}, gate), nn::norm::rms_norm(x) * at::silu(gate)));
  const auto& handle = c10::Dispatcher::singleton().findSchemaOrThrow("nn::rms_norm", "");
  CATCH_CHECK(handle.hasKernelForDispatchKey(c10::DispatchKey::CPU));
  CATCH_CHECK(handle.hasKernelForDispatchKey(c10::DispatchKey::CUDA));
  CATCH_CHECK_FALSE(handle.hasKernelForDispatchKey(c10::DispatchKey::CompositeExplicitAutograd));
}

// ---------------------------------------------------------------------------
// Row 3: meta kernels on device='meta'
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 3: identity meta, also with non-tensor parameters in between", "[row3]") {
  const at::Tensor x = at::empty({2, 3}, on_meta());
  const at::Tensor out = weights::op(x, weights::WeightCfg{{x, x}, 2.0, weights::MaskType::full});
  CATCH_CHECK(out.is_meta());
  CATCH_CHECK(out.sizes() == x.sizes());

  auto [a, b] = compose::clamp_pair(
      at::empty({2, 3}, on_meta()),
      0.0,
      1.0,
      at::empty({5}, on_meta().dtype(at::kFloat)));
  CATCH_CHECK((a.is_meta() && b.is_meta()));
  CATCH_CHECK(a.sizes() == at::IntArrayRef{2, 3});
  CATCH_CHECK(b.sizes() == at::IntArrayRef{5});
  CATCH_CHECK(b.scalar_type() == at::kFloat);
}

CATCH_TEST_CASE("row 3: meta listed as parameter names (rotary: [q, k])", "[row3]") {
  const at::Tensor q = at::empty({1, 2, 5, 8}, on_meta());
  const at::Tensor k = at::empty({1, 2, 9, 8}, on_meta());
  auto [q_out, k_out] = attention::rotary(q, k);
  CATCH_CHECK(q_out.sizes() == q.sizes());
  CATCH_CHECK(k_out.sizes() == k.sizes());
}

CATCH_TEST_CASE("row 3: custom meta kernels match the CPU kernels' shapes", "[row3]") {
  auto shapes_match = [](const at::Tensor& meta, const at::Tensor& cpu) {
    return meta.is_meta() && meta.sizes() == cpu.sizes() && meta.scalar_type() == cpu.scalar_type();
  };
  // attention: out [B, H, Lq, Dv], lse [B, H, Lq]
  const at::Tensor q = at::randn({1, 2, 5, 4}, f64());
  const at::Tensor k = at::randn({1, 2, 7, 4}, f64());
  const at::Tensor v = at::randn({1, 2, 7, 3}, f64());
  auto [out, lse] = attention::attention(q, k, v);
  auto [m_out, m_lse] = attention::attention(q.to(at::kMeta), k.to(at::kMeta), v.to(at::kMeta));
  CATCH_CHECK(shapes_match(m_out, out));
  CATCH_CHECK(shapes_match(m_lse, lse));

  // Tensor[] output
  const at::Tensor x = at::randn({3, 6}, f64());
  multi::ChunkCfg chunk;
  chunk.sizes = {1, 5};
  const auto pieces = multi::chunk(x, chunk);
  const auto meta_pieces = multi::chunk(x.to(at::kMeta), chunk);
  CATCH_REQUIRE(meta_pieces.size() == 2);
  CATCH_CHECK(shapes_match(meta_pieces[1], pieces[1]));

  // a record-dependent shape and dtype
  CATCH_CHECK(shapes_match(multi::pad(x.to(at::kMeta)), multi::pad(x)));
  dtypes::CastCfg cast;
  cast.dtype = at::kHalf;
  CATCH_CHECK(shapes_match(dtypes::cast(x.to(at::kMeta), cast), dtypes::cast(x, cast)));
  CATCH_CHECK(shapes_match(optim::l2_penalty(x.to(at::kMeta)), optim::l2_penalty(x)));
  nn::Linear layer;
  layer.weight = at::randn({2, 6}, f64());
  CATCH_CHECK(shapes_match(
      nn::mlp::linear(x.to(at::kMeta), {layer.weight.to(at::kMeta)}),
      nn::mlp::linear(x, layer)));
}

CATCH_TEST_CASE("row 3 and 4: a record-only op's custom meta kernel", "[row3][row4]") {
  dtypes::FillCfg cfg;
  cfg.sizes = {2, 5};
  cfg.dtype = at::kLong;
  // No tensor argument selects Meta; a tracer selects it explicitly.
  const auto full =
      c10::Dispatcher::singleton()
          .findSchemaOrThrow("dtypes::full", "")
          .typed<at::Tensor(c10::SymIntArrayRef, double, at::ScalarType, at::Device)>();
  const at::Tensor meta = full.redispatch(
      c10::DispatchKeySet(c10::DispatchKey::Meta),
      cfg.sizes,
      cfg.value,
      cfg.dtype,
      at::Device("cpu"));
  CATCH_CHECK(meta.is_meta());
  CATCH_CHECK(meta.sizes() == at::IntArrayRef{2, 5});
  CATCH_CHECK(meta.scalar_type() == at::kLong);
}

// ---------------------------------------------------------------------------
// Row 4: record-only op; record mixed with tensors
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 4: a record-only op builds its tensor from record values", "[row4][row9]") {
  dtypes::FillCfg cfg;
  cfg.sizes = {2, 3};
  cfg.value = 1.5;
  const at::Tensor t = dtypes::full(cfg);
  CATCH_CHECK(close(t, at::full({2, 3}, 1.5, at::kFloat)));  // defaults: float32 on cpu
  CATCH_CHECK(t.device() == at::Device("cpu"));

  cfg.dtype = at::kDouble;
  const at::Tensor m = dtypes::full(cfg, at::Device(at::kMeta));
  CATCH_CHECK(m.is_meta());
  CATCH_CHECK(m.scalar_type() == at::kDouble);
}

// ---------------------------------------------------------------------------
// Rows 5 and 8: nested records, defaults
// ---------------------------------------------------------------------------

namespace {

at::Tensor reference_linear(const at::Tensor& x, const nn::Linear& l) {
  at::Tensor y = at::matmul(x, l.weight.t());
  if (l.bias) y = y + *l.bias;
  if (l.lora.a) y = y + l.lora.scale * at::matmul(at::matmul(x, l.lora.a->t()), l.lora.b->t());
  return y;
}

nn::Linear random_linear(int64_t in, int64_t out, bool bias, int64_t rank) {
  nn::Linear l;
  l.weight = at::randn({out, in}, f64());
  if (bias) l.bias = at::randn({out}, f64());
  if (rank > 0) {
    l.lora.a = at::randn({rank, in}, f64());
    l.lora.b = at::randn({out, rank}, f64());
    l.lora.scale = 0.5;
  }
  return l;
}

}  // namespace

CATCH_TEST_CASE("row 5: records nested three levels with sibling scalars", "[row5]") {
  const at::Tensor x = at::randn({3, 4}, f64());
  nn::mlp::MlpCfg cfg{
      random_linear(4, 8, true, 2),
      random_linear(8, 4, false, 2),
      nn::Activation::silu,
      0.5};
  const at::Tensor ref = reference_linear(at::silu(reference_linear(x, cfg.fc1)), cfg.fc2) +
                         0.5 * x;
  CATCH_CHECK(close(nn::mlp::mlp(x, cfg), ref));

  // The flat schema carries the full lowered names.
  std::vector<std::string> names;
  for (const auto& arg : schema_of("nn::mlp").arguments()) names.push_back(arg.name());
  CATCH_CHECK(
      names == std::vector<std::string>{
                   "x",
                   "cfg__fc1__weight",
                   "cfg__fc1__bias",
                   "cfg__fc1__lora__a",
                   "cfg__fc1__lora__b",
                   "cfg__fc1__lora__scale",
                   "cfg__fc2__weight",
                   "cfg__fc2__bias",
                   "cfg__fc2__lora__a",
                   "cfg__fc2__lora__b",
                   "cfg__fc2__lora__scale",
                   "cfg__act",
                   "cfg__residual_scale"});
}

CATCH_TEST_CASE("row 8: defaults used when omitted, and overridable", "[row8]") {
  // Scalar field default (weights: scale = 1.0) and its override.
  const at::Tensor x = at::randn({2, 3}, f64());
  const at::Tensor w = at::randn({2, 3}, f64());
  const at::Tensor b = at::randn({2, 3}, f64());
  weights::WeightCfg cfg;
  cfg.inner = {w, b};
  CATCH_CHECK(cfg.scale == 1.0);
  CATCH_CHECK(cfg.mode == weights::MaskType::causal);
  CATCH_CHECK(close(weights::op(x, cfg), x * w + b));
  cfg.scale = 3.0;
  CATCH_CHECK(close(weights::op(x, cfg), (x * w + b) * 3.0));

  // A list default ([1, 1]) and its override.
  CATCH_CHECK(multi::PadCfg{}.pad == std::vector<c10::SymInt>{1, 1});  // SymInt[]: c10::SymInt
  CATCH_CHECK(multi::pad(x).sizes() == at::IntArrayRef{2, 5});
  CATCH_CHECK(
      close(multi::pad(x, {{0, 0, 2, 1}, -1.0}), at::constant_pad_nd(x, {0, 0, 2, 1}, -1.0)));

  // An all-defaulted nested record (Linear.lora) left out as a whole.
  const nn::Linear plain{at::randn({5, 3}, f64()), at::randn({5}, f64())};
  CATCH_CHECK_FALSE(plain.lora.a.has_value());
  CATCH_CHECK(plain.lora.scale == 1.0);
  CATCH_CHECK(close(nn::mlp::linear(x, plain), at::matmul(x, plain.weight.t()) + *plain.bias));

  // An all-defaulted record parameter left out (C++ default argument).
  CATCH_CHECK(close(nn::norm::rms_norm(x), x * at::rsqrt(x.pow(2).mean(-1, true) + 1e-6)));
}

// ---------------------------------------------------------------------------
// Row 6: optional fields; row 11: top-level Tensor?
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 6: optional fields all None, then all set", "[row6][row11]") {
  const at::Tensor logits = at::randn({2, 6}, f64());
  // All None (the record left out) and no mask: the logits unchanged, in a new tensor.
  const at::Tensor same = sampling::process_logits(logits, c10::nullopt);
  CATCH_CHECK(close(same, logits));
  CATCH_CHECK_FALSE(same.is_same(logits));

  sampling::LogitsCfg cfg;
  cfg.bias = at::randn({6}, f64());
  cfg.temperature = 0.5;
  cfg.top_k = 3;
  cfg.suppress = std::vector<int64_t>{0};
  cfg.output = "log_probs";
  cfg.greedy = false;
  const at::Tensor mask = (at::arange(6) < 5).view({1, 6});  // the last token is not allowed
  at::Tensor ref = (logits + *cfg.bias) / 0.5;
  ref = ref.masked_fill(mask.logical_not(), -INFINITY);
  ref.select(1, 0).fill_(-INFINITY);
  const at::Tensor kth = std::get<0>(ref.topk(3, -1)).narrow(-1, 2, 1);
  ref = at::log_softmax(ref.masked_fill(ref < kth, -INFINITY), -1);
  CATCH_CHECK(close(sampling::process_logits(logits, mask, cfg), ref));

  // bool? and str? take part too.
  cfg.greedy = true;
  const at::Tensor one_hot = sampling::process_logits(logits, mask, cfg);
  CATCH_CHECK(close(one_hot.sum(-1), at::ones({2}, f64())));
  cfg.greedy = c10::nullopt;
  cfg.output = "logits";
  CATCH_CHECK_THAT(
      error_of([&] { sampling::process_logits(logits, mask, cfg); }),
      Catch::Matchers::ContainsSubstring("cfg.output must be \"probs\", \"log_probs\" or None"));
}

// ---------------------------------------------------------------------------
// Row 7: list fields
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 7: Tensor[], float[], bool[], Tensor?[] fields and empty lists", "[row7]") {
  const at::Tensor x = at::randn({3}, f64());
  const at::Tensor t0 = at::randn({3}, f64());
  const at::Tensor t1 = at::randn({3}, f64());
  const at::Tensor t2 = at::randn({3}, f64());
  const at::Tensor off = at::randn({3}, f64());

  multi::MixCfg cfg;
  cfg.tensors = {t0, t1, t2};  // weights, enabled, offsets: empty-list defaults
  CATCH_CHECK(close(multi::mix(x, cfg), x + t0 + t1 + t2));

  cfg.weights = {0.5, 2.0, -1.0};
  cfg.enabled = {true, false, true};
  cfg.offsets = {c10::nullopt, c10::nullopt, off};
  CATCH_CHECK(close(multi::mix(x, cfg), x + 0.5 * t0 - (t2 + off)));

  cfg.tensors = {};  // an empty Tensor[]
  cfg.weights = {};
  cfg.enabled = {};
  cfg.offsets = {};
  CATCH_CHECK(close(multi::mix(x, cfg), x));

  cfg.tensors = {t0};
  cfg.weights = {1.0, 2.0};
  CATCH_CHECK_THAT(
      error_of([&] { multi::mix(x, cfg); }),
      Catch::Matchers::ContainsSubstring("cfg.weights has 2 entries for 1 tensors"));
}

CATCH_TEST_CASE(
    "a list of records: a leaf list the caller still holds is read, not emptied",
    "[row7][lists]") {
  // The generated unflatten moves the items out of a leaf list it owns alone
  // (the call API's), and copies them from a list shared with the caller (a
  // boxed caller, a TorchScript constant), which must keep its tensors.
  const at::Tensor x = at::randn({3}, f64());
  const at::Tensor w0 = at::randn({3}, f64());
  const at::Tensor w1 = at::randn({3}, f64());
  c10::List<at::Tensor> ws({w0, w1});
  c10::List<c10::optional<at::Tensor>> bs({c10::nullopt, c10::nullopt});
  c10::List<double> scales({2.0, 0.5});
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow("multi::blend", "");
  for (int call = 0; call < 2; ++call) {
    torch::jit::Stack stack = {x, ws, bs, scales};
    op.callBoxed(stack);
    CATCH_REQUIRE(stack.size() == 1);
    CATCH_CHECK(close(stack[0].toTensor(), x + 2.0 * w0 + 0.5 * w1));
    CATCH_REQUIRE(ws.size() == 2);
    CATCH_CHECK(ws.get(0).is_same(w0));
    CATCH_CHECK(ws.get(1).is_same(w1));
  }
  // The record-form call API (its lists are its own) gives the same.
  CATCH_CHECK(close(
      multi::blend(x, {{w0, c10::nullopt, 2.0}, {w1, c10::nullopt, 0.5}}),
      x + 2.0 * w0 + 0.5 * w1));
}

CATCH_TEST_CASE(
    "optional records: absent, present, nested, and leaves that disagree",
    "[optional]") {
  const at::Tensor x = at::randn({2, 3}, f64());
  const at::Tensor w = at::randn({2, 3}, f64()), b = at::randn({2, 3}, f64());
  const at::Tensor g = at::randn({2, 3}, f64());
  CATCH_CHECK(close(weights::affine(x), x));
  CATCH_CHECK(close(weights::affine(x, weights::Inner{w, b}), x * w + b));
  CATCH_CHECK(close(weights::affine(x, c10::nullopt, weights::Gate{g}), x * g));
  CATCH_CHECK(close(
      weights::affine(x, weights::Inner{w, b}, weights::Gate{g, weights::Inner{w, b}}),
      ((x * w + b) * g) * w + b));
  // The flat schema: every leaf optional, None by default.
  CATCH_CHECK(
      c10::toString(schema_of("weights::affine")) ==
      "weights::affine(Tensor x, Tensor? post__w=None, Tensor? post__b=None, Tensor? gate__g=None, "
      "Tensor? gate__bias__w=None, Tensor? gate__bias__b=None) -> Tensor");
  const c10::OperatorHandle op = c10::Dispatcher::singleton().findSchemaOrThrow(
      "weights::affine",
      "");
  const auto call = [&](torch::jit::Stack stack) { return error_of([&] { op.callBoxed(stack); }); };
  CATCH_CHECK_THAT(
      call({x, c10::IValue(), b, c10::IValue(), c10::IValue(), c10::IValue()}),
      Catch::Matchers::ContainsSubstring(
          "weights::affine: post.b is given but post.w is None, which means post is None; give "
          "all of post's leaves or none"));
  CATCH_CHECK_THAT(
      call({x, w, c10::IValue(), c10::IValue(), c10::IValue(), c10::IValue()}),
      Catch::Matchers::ContainsSubstring(
          "weights::affine: post.b is None but post is given (post.w is not None); a given post "
          "needs every field that is not optional"));
  CATCH_CHECK_THAT(
      call({x, c10::IValue(), c10::IValue(), g, w, c10::IValue()}),
      Catch::Matchers::ContainsSubstring(
          "weights::affine: gate.bias.b is None but gate.bias is given"));
}

CATCH_TEST_CASE(
    "record returns: one output per leaf, the record again in the call API",
    "[returns]") {
  const at::Tensor x = at::randn({2, 5}, f64());
  const at::Tensor mean = x.mean(-1, true);
  auto [centered, stats] = weights::moments(x);
  CATCH_CHECK(close(centered, x - mean));
  CATCH_CHECK(close(stats.mean, mean));
  CATCH_CHECK(close(stats.var, x.var(-1, /*unbiased=*/false, /*keepdim=*/true)));
  CATCH_CHECK(
      c10::toString(schema_of("weights::moments")) ==
      "weights::moments(Tensor x) -> (Tensor centered, Tensor stats__mean, Tensor stats__var)");
  CATCH_CHECK(
      c10::toString(schema_of("weights::extent")) ==
      "weights::extent(Tensor x) -> (Tensor output__peak, int output__dims)");
  // The flat op, boxed: the leaves in field order.
  torch::jit::Stack stack{x};
  c10::Dispatcher::singleton().findSchemaOrThrow("weights::moments", "").callBoxed(&stack);
  CATCH_REQUIRE(stack.size() == 3);
  CATCH_CHECK(close(stack[1].toTensor(), mean));
  CATCH_CHECK(close(stack[2].toTensor(), stats.var));
  // A non-tensor leaf.
  const weights::Extent extent = weights::extent(-3.0 * at::ones({2, 4}, f64()));
  CATCH_CHECK(extent.dims == 2);
  CATCH_CHECK(extent.peak.item<double>() == 3.0);
  // The custom meta kernels return records too.
  auto [m_centered, m_stats] = weights::moments(x.to(at::kMeta));
  CATCH_CHECK(m_centered.is_meta());
  CATCH_CHECK(m_stats.var.sizes() == at::IntArrayRef{2, 1});
  CATCH_CHECK(weights::extent(x.to(at::kMeta)).dims == 2);
}

// ---------------------------------------------------------------------------
// Row 9: ScalarType and Device
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 9: ScalarType and Device fields with defaults, round-tripped", "[row9]") {
  const at::Tensor x = at::randn({2, 2}, f64());
  const dtypes::CastCfg defaults;
  CATCH_CHECK(defaults.dtype == at::kFloat);
  CATCH_CHECK(defaults.device == at::Device("cpu"));
  const at::Tensor y = dtypes::cast(x);
  CATCH_CHECK(y.scalar_type() == at::kFloat);
  CATCH_CHECK(y.device().is_cpu());

  const at::Tensor z = dtypes::cast(x, {at::kBFloat16, at::Device("meta")});
  CATCH_CHECK(z.scalar_type() == at::kBFloat16);
  CATCH_CHECK(z.is_meta());

  // A record default that sets one field (`CastCfg cfg={dtype: float16}`):
  // the C++ API, and the flat schema's leaf defaults (a boxed call without
  // them; ScalarType 5 is Half).
  CATCH_CHECK(dtypes::to_half(x).scalar_type() == at::kHalf);
  CATCH_CHECK(dtypes::to_half(x).device().is_cpu());
  CATCH_CHECK(dtypes::to_half(x, {at::kDouble}).scalar_type() == at::kDouble);
  const auto& to_half = schema_of("dtypes::to_half").arguments();
  CATCH_REQUIRE(to_half.size() == 3);
  CATCH_CHECK(to_half[1].default_value() == c10::IValue(int64_t{5}));
  CATCH_CHECK(to_half[2].default_value().has_value());  // CastCfg's own, "cpu"
  const auto& op = c10::Dispatcher::singleton().findSchemaOrThrow("dtypes::to_half", "");
  torch::jit::Stack stack{x};
  for (size_t i = 1; i < to_half.size(); ++i) stack.push_back(*to_half[i].default_value());
  op.callBoxed(&stack);
  CATCH_CHECK(stack.at(0).toTensor().scalar_type() == at::kHalf);

  // A keyword parameter (`from`, spelled from_ in C++).
  CATCH_CHECK(
      dtypes::cast_checked(y, /*from_=*/at::kFloat, at::kDouble).scalar_type() == at::kDouble);
  CATCH_CHECK_THAT(
      error_of([&] { dtypes::cast_checked(y, at::kFloat, at::kInt); }),
      Catch::Matchers::ContainsSubstring("Float cannot be cast to Int"));
  CATCH_CHECK_THAT(
      error_of([&] { dtypes::cast_checked(y, at::kDouble, at::kDouble); }),
      Catch::Matchers::ContainsSubstring("x has dtype Float but `from` is Double"));
}

// ---------------------------------------------------------------------------
// Row 10: enums
// ---------------------------------------------------------------------------

CATCH_TEST_CASE(
    "row 10: an invalid enum string through the flat op lists the valid values",
    "[row10]") {
  using Signature = std::tuple<at::Tensor, at::Tensor>(
      const at::Tensor&,
      const at::Tensor&,
      const at::Tensor&,
      c10::optional<double>,
      c10::string_view,
      int64_t,
      c10::optional<double>,
      const c10::optional<at::Tensor>&,
      const c10::optional<at::Tensor>&);
  const auto op =
      c10::Dispatcher::singleton().findSchemaOrThrow("attention::attention", "").typed<Signature>();
  const at::Tensor q = at::randn({1, 1, 2, 2}, f64());
  auto call = [&](c10::string_view mask) {
    return op.call(q, q, q, c10::nullopt, mask, 256, c10::nullopt, c10::nullopt, c10::nullopt);
  };
  CATCH_CHECK(close(
      std::get<0>(call("none")),
      std::get<0>(attention::attention(q, q, q, {c10::nullopt, attention::MaskMode::none}))));
  const std::string message = error_of([&] { call("diagonal"); });
  CATCH_CHECK_THAT(
      message,
      Catch::Matchers::ContainsSubstring(
          "attention::attention: cfg.mask: invalid value \"diagonal\" "
          "for MaskMode; expected one of: none, causal, sliding_window"));

  // Enum spellings round-trip through to_string / parse_enum.
  CATCH_CHECK(attention::to_string(attention::MaskMode::sliding_window) == "sliding_window");
  CATCH_CHECK(structop::parse_enum<nn::Activation>("silu") == nn::Activation::silu);
}

CATCH_TEST_CASE("row 10: enum lists, a Reduce[] field and a Reduce[]? parameter", "[row10]") {
  const at::Tensor x = at::randn({3, 4}, f64());
  CATCH_CHECK((multi::CenterCfg{}.steps == std::vector<multi::Reduce>{multi::Reduce::mean}));
  CATCH_CHECK(close(multi::center(x), x - x.mean(-1, /*keepdim=*/true)));

  const multi::CenterCfg cfg{{multi::Reduce::max, multi::Reduce::sum}, {0, 1}};
  at::Tensor want = x - at::amax(x, {0}, /*keepdim=*/true);
  want = want - want.sum(1, /*keepdim=*/true);
  CATCH_CHECK(close(multi::center(x, cfg), want));
  CATCH_CHECK(close(
      multi::center(x, cfg, std::vector<multi::Reduce>{multi::Reduce::mean}),
      want - want.mean()));

  // Through the flat op (str[] cfg__steps, str[]? then): each item is checked.
  const auto& op = c10::Dispatcher::singleton().findSchemaOrThrow("multi::center", "");
  auto call = [&](std::vector<std::string> steps, c10::optional<std::vector<std::string>> then) {
    torch::jit::Stack stack{x, std::move(steps), std::vector<int64_t>{0, 1}};
    stack.emplace_back(then ? c10::IValue(std::move(*then)) : c10::IValue());
    op.callBoxed(stack);
    return stack.back().toTensor();
  };
  CATCH_CHECK(close(call({"max", "sum"}, std::vector<std::string>{"mean"}), want - want.mean()));
  CATCH_CHECK_THAT(
      error_of([&] { call({"sum", "median"}, c10::nullopt); }),
      Catch::Matchers::ContainsSubstring(
          "multi::center: cfg.steps[1]: invalid value \"median\" for Reduce; expected one of: "
          "sum, max, mean"));
  CATCH_CHECK_THAT(
      error_of([&] { call({"sum", "max"}, std::vector<std::string>{"min"}); }),
      Catch::Matchers::ContainsSubstring(
          "multi::center: then[0]: invalid value \"min\" for Reduce"));
}

// ---------------------------------------------------------------------------
// Row 13: ops calling ops
// ---------------------------------------------------------------------------

CATCH_TEST_CASE(
    "row 13: a kernel calls a plain op and a record op through their call APIs",
    "[row13]") {
  const at::Tensor x = at::randn({2, 4}, f64());
  const at::Tensor r = at::randn({2, 4}, f64());
  const at::Tensor w = at::randn({4}, f64());
  at::Tensor out;
  {
    e2e::OpTrace trace;
    out = compose::residual_norm(x, r, w);
    CATCH_CHECK(trace.count("compose::residual_norm") == 1);
    CATCH_CHECK(trace.count("compose::axpy") == 1);  // plain op inside a plain op
    CATCH_CHECK(trace.count("nn::rms_norm") == 1);   // record op inside a plain op
  }
  const at::Tensor h = x + r;
  CATCH_CHECK(close(out, h * at::rsqrt(h.pow(2).mean(-1, true) + 1e-6) * w));

  // A record op inside a record op (mlp calls linear twice).
  nn::mlp::MlpCfg cfg{random_linear(4, 3, true, 0), random_linear(3, 4, true, 0)};
  e2e::OpTrace trace;
  nn::mlp::mlp(x, cfg);
  CATCH_CHECK(trace.count("nn::linear") == 2);
}

// ---------------------------------------------------------------------------
// Row 19: mutation
// ---------------------------------------------------------------------------

CATCH_TEST_CASE("row 19: in-place updates of record tensor fields are visible", "[row19]") {
  // mutates: [state] (a record name: all three tensors)
  const at::Tensor p0 = at::randn({4}, f64());
  const at::Tensor g = at::randn({4}, f64());
  const optim::AdamState state{p0.clone(), at::zeros({4}, f64()), at::zeros({4}, f64())};
  optim::AdamHyper hp;
  hp.lr = 0.1;
  optim::adam_step_(g, state, hp, /*step=*/1);
  const at::Tensor m = 0.1 * g;
  const at::Tensor v = 0.001 * g * g;
  CATCH_CHECK(close(state.exp_avg, m));
  CATCH_CHECK(close(state.exp_avg_sq, v));
  CATCH_CHECK(close(state.param, p0 - 0.1 * (m / 0.1) / ((v / 0.001).sqrt() + 1e-8)));

  // mutates: [ema.average] (a leaf path)
  const optim::Ema ema{at::ones({3}, f64()), 0.75};
  optim::ema_update_(at::full({3}, 5.0, f64()), ema);
  CATCH_CHECK(close(ema.average, at::full({3}, 2.0, f64())));

  // mutates: [stats__mean, stats__var] (lowered names)
  const at::Tensor x = at::randn({8, 3}, f64());
  const optim::BatchStats stats{at::zeros({3}, f64()), at::ones({3}, f64()), 0.5};
  optim::batch_stats_update_(x, stats);
  CATCH_CHECK(close(stats.mean, 0.5 * x.mean(0)));
  CATCH_CHECK(close(stats.var, 0.5 + 0.5 * x.var(0)));
}

CATCH_TEST_CASE("row 19: each mutated leaf has its own write alias in the schema", "[row19]") {
  auto written = [](const char* op) {
    std::vector<std::string> names;
    for (const auto& arg : schema_of(op).arguments()) {
      if (arg.alias_info() && arg.alias_info()->isWrite()) names.push_back(arg.name());
    }
    return names;
  };
  CATCH_CHECK(
      written("optim::adam_step_") ==
      std::vector<std::string>{"state__param", "state__exp_avg", "state__exp_avg_sq"});
  CATCH_CHECK(written("optim::ema_update_") == std::vector<std::string>{"ema__average"});
  CATCH_CHECK(
      written("optim::batch_stats_update_") ==
      std::vector<std::string>{"stats__mean", "stats__var"});
  CATCH_CHECK(written("weights::op").empty());
}
