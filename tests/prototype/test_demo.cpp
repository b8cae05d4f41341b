// C++ tests of the prototype generated code (demo.ops.h / demo.ops.cpp) and the
// structop runtime, through the C++ call API and the flat dispatcher op.
#define CATCH_CONFIG_MAIN
// Prefixed macros: Debian's c10 includes glog, whose CHECK() would replace Catch's.
#define CATCH_CONFIG_PREFIX_ALL
#include <catch2/catch.hpp>

#include "demo.ops.h"

#include <ATen/ATen.h>
#include <ATen/SequenceNumber.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/function.h>

#include <string>

namespace {

using torch::autograd::variable_list;

/// x, w, b of shape [2, 3] and a WeightCfg holding w and b.
struct Inputs {
  at::Tensor x = at::randn({2, 3}, at::kDouble);
  at::Tensor w = at::randn({2, 3}, at::kDouble);
  at::Tensor b = at::randn({2, 3}, at::kDouble);

  explicit Inputs(bool requires_grad = false) {
    for (auto* t : {&x, &w, &b}) t->requires_grad_(requires_grad);
  }
  demo::WeightCfg cfg(double scale = 1.0, demo::MaskType mode = demo::MaskType::causal) const {
    return demo::WeightCfg{{w, b}, scale, mode};
  }
};

bool close(const at::Tensor& a, const at::Tensor& b) {
  return at::allclose(a, b);
}

/// The message of what `fn` throws as c10::Error, without the C++ backtrace.
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const c10::Error& e) {
    return e.what_without_backtrace();
  }
  return "<no error>";
}

}  // namespace

CATCH_TEST_CASE("records have the IDL defaults") {
  demo::WeightCfg cfg;
  CATCH_CHECK(cfg.scale == 1.0);
  CATCH_CHECK(cfg.mode == demo::MaskType::causal);
  CATCH_CHECK_FALSE(cfg.inner.w.defined());
}

CATCH_TEST_CASE("enums convert to and from their IDL spelling") {
  CATCH_CHECK(demo::to_string(demo::MaskType::sliding_window) == "sliding_window");
  CATCH_CHECK(structop::parse_enum<demo::MaskType>("full") == demo::MaskType::full);
  CATCH_CHECK_FALSE(structop::try_parse_enum<demo::MaskType>("Full").has_value());
  CATCH_CHECK_THAT(error_of([] { structop::parse_enum<demo::MaskType>("diag"); }),
                   Catch::Contains("expected one of: full, causal, sliding_window"));
}

CATCH_TEST_CASE("forward values through the C++ call API") {
  Inputs in;
  CATCH_CHECK(close(demo::op(in.x, in.cfg(2.5)), (in.x * in.w + in.b) * 2.5));
  CATCH_CHECK(close(demo::op(in.x, in.cfg()), in.x * in.w + in.b));  // default scale

  auto [sum, prod] = demo::two(in.x, in.w, in.cfg(3.0));
  CATCH_CHECK(close(sum, (in.x + in.w) * 3.0 + in.w));
  CATCH_CHECK(close(prod, in.x * in.w * in.b));

  // fwd_only adds the enum's index: proves the string round trip picks the value.
  const at::Tensor base = in.x * in.w + in.b;
  CATCH_CHECK(close(demo::fwd_only(in.x, in.cfg(1.0, demo::MaskType::full)), base));
  CATCH_CHECK(close(demo::fwd_only(in.x, in.cfg(1.0, demo::MaskType::sliding_window)), base + 2));
}

CATCH_TEST_CASE("ops run on meta tensors: outputs echo the first tensor inputs") {
  const auto meta = at::TensorOptions().device(at::kMeta).dtype(at::kFloat);
  const at::Tensor x = at::empty({4, 5}, meta);
  const at::Tensor a = at::empty({7}, meta.dtype(at::kHalf));
  const demo::WeightCfg cfg{{at::empty({4, 5}, meta), at::empty({4, 5}, meta)}};

  const at::Tensor y = demo::op(x, cfg);
  CATCH_CHECK(y.is_meta());
  CATCH_CHECK(y.sizes() == x.sizes());

  auto [sum, prod] = demo::two(x, a, cfg);
  CATCH_CHECK(sum.sizes() == x.sizes());
  CATCH_CHECK(prod.sizes() == a.sizes());
  CATCH_CHECK(prod.scalar_type() == at::kHalf);

  CATCH_CHECK(demo::fwd_only(x, cfg).is_meta());
  demo::scale_(x, cfg);  // no-op on meta
}

CATCH_TEST_CASE("gradients flow to x and to the tensor fields of the record") {
  Inputs in(true);
  const double scale = 1.5;
  const at::Tensor y = demo::op(in.x, in.cfg(scale));
  CATCH_REQUIRE(y.grad_fn());
  CATCH_CHECK(y.grad_fn()->name() == "demo::op_backward");

  const at::Tensor g = at::randn({2, 3}, at::kDouble);
  const variable_list grads = torch::autograd::grad({y}, {in.x, in.w, in.b}, {g});
  CATCH_CHECK(close(grads[0], g * scale * in.w));
  CATCH_CHECK(close(grads[1], g * scale * in.x));
  CATCH_CHECK(close(grads[2], g * scale));
}

CATCH_TEST_CASE("only inputs that require grad get one") {
  Inputs in;
  in.w.requires_grad_(true);
  const at::Tensor y = demo::op(in.x, in.cfg(2.0));
  const variable_list grads = torch::autograd::grad({y.sum()}, {in.w});
  CATCH_CHECK(close(grads[0], 2.0 * in.x));
}

CATCH_TEST_CASE("two outputs, kwarg-only record: backward gets one grad per output") {
  Inputs in(true);
  const double scale = 3.0;
  auto [sum, prod] = demo::two(in.x, in.w, in.cfg(scale));
  CATCH_REQUIRE(sum.grad_fn() == prod.grad_fn());

  const at::Tensor gs = at::randn({2, 3}, at::kDouble);
  const at::Tensor gp = at::randn({2, 3}, at::kDouble);
  // inputs: a = x, b = w, cfg.inner.w = w, cfg.inner.b = b (w is used twice)
  const variable_list grads = torch::autograd::grad({sum, prod}, {in.x, in.w, in.b}, {gs, gp});
  CATCH_CHECK(close(grads[0], gs * scale + gp * in.w * in.b));
  CATCH_CHECK(close(grads[1], (gs * scale + gp * in.x * in.b) + gs));
  CATCH_CHECK(close(grads[2], gp * in.x * in.w));
}

CATCH_TEST_CASE("an unused output's gradient arrives as zeros") {
  Inputs in(true);
  auto [sum, prod] = demo::two(in.x, in.w, in.cfg(2.0));
  (void)prod;
  const variable_list grads = torch::autograd::grad({sum.sum()}, {in.x, in.b}, {}, true, false,
                                                    /*allow_unused=*/true);
  CATCH_CHECK(close(grads[0], at::full({2, 3}, 2.0, at::kDouble)));
  CATCH_CHECK(close(grads[1], at::zeros({2, 3}, at::kDouble)));
}

CATCH_TEST_CASE("fast path: no autograd state when nothing needs a gradient") {
  CATCH_SECTION("no input requires grad") {
    Inputs in;
    const uint64_t nodes_before = at::sequence_number::peek();
    const at::Tensor y = demo::op(in.x, in.cfg());
    CATCH_CHECK_FALSE(y.grad_fn());
    CATCH_CHECK_FALSE(y.requires_grad());
    CATCH_CHECK(at::sequence_number::peek() == nodes_before);  // no Node was constructed
  }
  CATCH_SECTION("grad mode off") {
    Inputs in(true);
    c10::NoGradGuard no_grad;
    const uint64_t nodes_before = at::sequence_number::peek();
    auto [sum, prod] = demo::two(in.x, in.w, in.cfg());
    CATCH_CHECK_FALSE(sum.requires_grad());
    CATCH_CHECK_FALSE(prod.grad_fn());
    CATCH_CHECK(at::sequence_number::peek() == nodes_before);
  }
}

CATCH_TEST_CASE("saved tensors are freed after backward, as with autograd::Function") {
  Inputs in(true);
  const at::Tensor loss = demo::op(in.x, in.cfg()).sum();
  loss.backward();
  CATCH_CHECK_THAT(error_of([&] { loss.backward(); }), Catch::Contains("second time"));
}

CATCH_TEST_CASE("a wrongly shaped gradient is reported with its original path") {
  // w broadcasts in the forward; the demo backward does not reduce, so it
  // returns a [2, 3] gradient for the [3] input cfg.inner.w.
  const at::Tensor x = at::randn({2, 3}, at::kDouble);
  const at::Tensor w = at::randn({3}, at::kDouble).requires_grad_();
  const at::Tensor b = at::randn({2, 3}, at::kDouble);
  const at::Tensor loss = demo::op(x, demo::WeightCfg{{w, b}}).sum();
  CATCH_CHECK(error_of([&] { loss.backward(); }) ==
              "demo::op: gradient for cfg.inner.w has shape [2, 3] but the input has shape [3]");
}

CATCH_TEST_CASE("a gradient of the wrong dtype is reported with its original path") {
  // x * w promotes to double, so the backward returns a double grad for float w.
  const at::Tensor x = at::randn({2, 3}, at::kDouble);
  const at::Tensor w = at::randn({2, 3}, at::kFloat).requires_grad_();
  const at::Tensor b = at::randn({2, 3}, at::kDouble);
  const at::Tensor loss = demo::op(x, demo::WeightCfg{{w, b}}).sum();
  CATCH_CHECK(error_of([&] { loss.backward(); }) ==
              "demo::op: gradient for cfg.inner.w has dtype Double but the input has dtype Float");
}

CATCH_TEST_CASE("an invalid enum string through the flat op lists the valid values") {
  Inputs in;
  auto flat_op = c10::Dispatcher::singleton()
                     .findSchemaOrThrow("demo::op", "")
                     .typed<at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                       double, c10::string_view)>();
  const std::string message = error_of([&] { flat_op.call(in.x, in.w, in.b, 1.0, "diagonal"); });
  CATCH_CHECK(message ==
              "demo::op: cfg.mode: invalid value \"diagonal\" for MaskType; "
              "expected one of: full, causal, sliding_window");
  CATCH_CHECK(close(flat_op.call(in.x, in.w, in.b, 1.0, "full"), in.x * in.w + in.b));
}

CATCH_TEST_CASE("mutation of record tensors is visible to the caller") {
  Inputs in;
  const at::Tensor w0 = in.w.clone();
  const at::Tensor b0 = in.b.clone();
  const auto version = in.w._version();
  const demo::WeightCfg cfg = in.cfg(4.0);
  demo::scale_(in.x, cfg);
  CATCH_CHECK(close(in.w, w0 * 4.0));
  CATCH_CHECK(close(in.b, b0 + in.x));
  CATCH_CHECK(in.w._version() == version + 1);  // autograd sees the in-place update
}

CATCH_TEST_CASE("the lowered schemas are registered as declared") {
  const auto& schema = c10::Dispatcher::singleton().findSchemaOrThrow("demo::scale_", "").schema();
  CATCH_CHECK(c10::toString(schema) ==
              "demo::scale_(Tensor x, Tensor(a!) cfg__inner__w, Tensor(b!) cfg__inner__b, "
              "float cfg__scale=1., str cfg__mode=\"causal\") -> ()");
}
