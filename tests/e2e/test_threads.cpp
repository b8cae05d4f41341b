// End-to-end, under threads: generated ops called from 8 threads at once
// give the same results as from one thread. Each thread runs the same work
// several times: the C++ call API (records, enums, defaults; an op whose
// kernel calls another op), the flat dispatcher op, backward (a graph node
// per call, the BackwardDef registry), structop::parse_enum and its errors.
//
// Registered twice in tests/e2e/meson.build: in e2e_cpp, and alone
// (`[threads]`) as e2e_threads, so that in a fresh process the threads make
// the first calls of every op concurrently (the function-local operator
// handles, the first graph nodes of each op).
#include "e2e_support.h"

#include "attention.ops.h"
#include "mlp.ops.h"
#include "rms_norm.ops.h"
#include "weights.ops.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/csrc/autograd/autograd.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

using e2e::close;
using e2e::error_of;
using e2e::f64;

namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 10;

/// Inputs, made once on the main thread (the random generator is shared).
struct Inputs {
  at::Tensor x = at::randn({3, 4}, f64());
  at::Tensor w = at::randn({3, 4}, f64());
  at::Tensor b = at::randn({3, 4}, f64());
  at::Tensor q = at::randn({1, 2, 3, 4}, f64());
  at::Tensor k = at::randn({1, 2, 5, 4}, f64());
  at::Tensor v = at::randn({1, 2, 5, 4}, f64());
  at::Tensor norm_weight = at::randn({4}, f64());
  at::Tensor fc1 = at::randn({6, 4}, f64());
  at::Tensor fc1_bias = at::randn({6}, f64());
  at::Tensor fc2 = at::randn({4, 6}, f64());
};

/// What one thread computes: tensors and texts, compared with those of the
/// single-threaded run.
struct Results {
  std::vector<at::Tensor> tensors;
  std::vector<std::string> texts;
};

/// The gradients of sum(outputs) with respect to `inputs`.
std::vector<at::Tensor> grads_of(
    const std::vector<at::Tensor>& outputs,
    const std::vector<at::Tensor>& inputs) {
  at::Tensor loss = outputs[0].sum();
  for (size_t i = 1; i < outputs.size(); ++i) loss = loss + outputs[i].sum();
  return torch::autograd::grad({loss}, inputs);
}

std::vector<at::Tensor> requiring_grad(std::vector<at::Tensor> tensors) {
  for (auto& t : tensors) t = t.detach().requires_grad_(true);
  return tensors;
}

Results work(const Inputs& in) {
  Results r;
  auto keep = [&r](const std::vector<at::Tensor>& ts) {
    for (const auto& t : ts) r.tensors.push_back(t.detach());
  };

  // Forward through the call API: records, an enum field, defaults.
  const weights::WeightCfg wcfg{{in.w, in.b}, 1.5, weights::MaskType::sliding_window};
  keep({weights::op(in.x, wcfg)});
  attention::AttnCfg acfg;
  acfg.mask = attention::MaskMode::sliding_window;
  acfg.window = 2;
  auto [out, lse] = attention::attention(in.q, in.k, in.v, acfg);
  keep({out, lse});
  keep({nn::norm::rms_norm(in.x, {in.norm_weight, 1e-5})});
  nn::mlp::MlpCfg mcfg{{in.fc1, in.fc1_bias}, {in.fc2}};
  mcfg.act = nn::Activation::silu;
  keep({nn::mlp::mlp(in.x, mcfg)});  // its kernel calls nn::linear

  // The flat op, as Python would call it.
  static const auto flat = c10::Dispatcher::singleton()
                               .findSchemaOrThrow("weights::op", "")
                               .typed<at::Tensor(
                                   const at::Tensor&,
                                   const at::Tensor&,
                                   const at::Tensor&,
                                   double,
                                   c10::string_view)>();
  keep({flat.call(in.x, in.w, in.b, 0.5, "full")});
  r.texts.push_back(error_of([&] { flat.call(in.x, in.w, in.b, 0.5, "diagonal"); }));

  // Backward: one graph node per call.
  {
    auto xs = requiring_grad({in.x, in.w, in.b});
    keep(grads_of({weights::op(xs[0], weights::WeightCfg{{xs[1], xs[2]}, 2.0})}, xs));
  }
  {
    auto qs = requiring_grad({in.q, in.k, in.v});
    auto [o, l] = attention::attention(qs[0], qs[1], qs[2], acfg);
    keep(grads_of({o, l}, qs));
  }
  {
    auto xs = requiring_grad({in.x, in.norm_weight});
    keep(grads_of({nn::norm::rms_norm(xs[0], {xs[1]})}, xs));
  }
  {
    auto ps = requiring_grad({in.x, in.fc1, in.fc1_bias, in.fc2});
    keep(grads_of({nn::mlp::mlp(ps[0], nn::mlp::MlpCfg{{ps[1], ps[2]}, {ps[3]}})}, ps));
  }

  // Enums: parsing, names, the error for a value that is not one.
  for (const char* name : {"full", "causal", "sliding_window"}) {
    r.texts.emplace_back(weights::to_string(structop::parse_enum<weights::MaskType>(name)));
  }
  r.texts.emplace_back(attention::to_string(structop::parse_enum<attention::MaskMode>("none")));
  r.texts.emplace_back(nn::to_string(structop::parse_enum<nn::Activation>("gelu")));
  r.texts.push_back(error_of([] { structop::parse_enum<nn::Activation>("tanh"); }));
  r.texts.push_back(error_of([] {
    structop::parse_enum<attention::MaskMode>(
        "diag",
        structop::ArgPath(structop::ArgPath("attention::attention", "cfg"), "mask"));
  }));
  return r;
}

void check_same(const Results& got, const Results& expected) {
  CATCH_REQUIRE(got.tensors.size() == expected.tensors.size());
  for (size_t i = 0; i < got.tensors.size(); ++i) {
    CATCH_INFO("tensor " << i);
    CATCH_CHECK(close(got.tensors[i], expected.tensors[i]));
  }
  CATCH_CHECK(got.texts == expected.texts);
}

}  // namespace

CATCH_TEST_CASE(
    "generated ops from 8 threads at once give the single-threaded results",
    "[threads]") {
  const Inputs in;

  // The threads start together, before anything on this thread called an op.
  std::vector<std::vector<Results>> per_thread(kThreads);
  std::vector<std::string> failures(kThreads);
  std::atomic<int> waiting{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      waiting.fetch_sub(1);
      while (waiting.load() > 0) std::this_thread::yield();
      try {
        for (int round = 0; round < kRounds; ++round) per_thread[t].push_back(work(in));
      } catch (const std::exception& e) {
        failures[t] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();

  const Results expected = work(in);
  // The texts are the expected ones, not just equal among themselves.
  CATCH_CHECK(
      expected.texts[0] ==
      "weights::op: cfg.mode: invalid value \"diagonal\" for MaskType; expected one of: "
      "full, causal, sliding_window");
  CATCH_CHECK(
      (std::vector<std::string>(expected.texts.begin() + 1, expected.texts.begin() + 6)) ==
      std::vector<std::string>{"full", "causal", "sliding_window", "none", "gelu"});
  CATCH_CHECK(
      expected.texts[6] ==
      "invalid value \"tanh\" for Activation; expected one of: relu, gelu, silu");
  CATCH_CHECK(
      expected.texts[7] ==
      "attention::attention: cfg.mask: invalid value \"diag\" for MaskMode; expected one of: "
      "none, causal, sliding_window");

  for (int t = 0; t < kThreads; ++t) {
    CATCH_INFO("thread " << t);
    CATCH_REQUIRE(failures[t].empty());
    CATCH_REQUIRE(per_thread[t].size() == static_cast<size_t>(kRounds));
    for (const Results& got : per_thread[t]) check_same(got, expected);
  }
}
