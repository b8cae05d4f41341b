// Overhead of the generated code (bench.ops.cpp) against hand-written baselines.
//
// Every op computes x + w * b (at::addcmul) on tiny tensors, so the numbers are
// the cost of the call path:
//   call/*       C++ call of the 8-leaf record op vs a hand-written flat
//                TORCH_LIBRARY op with the same kernel, both via the dispatcher
//   fwd_bwd/*    forward + backward through the generated autograd bridge vs a
//                torch::autograd::Function registered as the op's Autograd
//                kernel (the dispatcher tutorial's way)
//   no_grad/*    a `backward: true` op called with no input requiring grad vs
//                the same op registered without autograd (and the Function op)
//   fwd_graph/*  the forward alone with inputs requiring grad (graph node built
//                and freed, no backward): the bridge without the engine's cost
// run_benchmarks.py turns the medians into ratios.
#include "bench.ops.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <benchmark/benchmark.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/custom_function.h>
#include <torch/library.h>

namespace {

constexpr int64_t kSize = 8;  // elements per tensor: overhead dominates

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

}  // namespace

// ===========================================================================
// Kernels of bench.ops.yaml (what a user writes into the stubs)
// ===========================================================================

namespace bench {

at::Tensor kernels::rec8(const at::Tensor& x, const Cfg8& cfg) {
  return at::addcmul(x, cfg.w, cfg.b);
}

at::Tensor kernels::rec8_grad(const at::Tensor& x, const Cfg8& cfg) {
  return at::addcmul(x, cfg.w, cfg.b);
}

void kernels::rec8_grad_setup_context(AutogradContext* ctx, const at::Tensor& /*x*/,
                                      const Cfg8& cfg, const at::Tensor& /*output*/) {
  ctx->save_for_backward({cfg.w, cfg.b});
}

rec8_grad_grads kernels::rec8_grad_backward(AutogradContext* ctx, const at::Tensor& grad_output) {
  const auto saved = ctx->get_saved_variables();
  return {/*x=*/grad_output, /*cfg=*/{/*w=*/grad_output * saved[1], /*b=*/grad_output * saved[0]}};
}

}  // namespace bench

// ===========================================================================
// Hand-written baselines: the flat schema, registered the tutorial way
// ===========================================================================

namespace bench_ref {

using flat8_signature = at::Tensor(const at::Tensor&, const at::Tensor&, const at::Tensor&, double,
                                   double, double, bool, int64_t, c10::string_view);

at::Tensor flat8_kernel(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                        double /*scale*/, double /*shift*/, double /*eps*/, bool /*flag*/,
                        int64_t /*steps*/, c10::string_view /*mode*/) {
  return at::addcmul(x, w, b);
}

c10::TypedOperatorHandle<flat8_signature> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<flat8_signature>();
}

// Not inlined into the benchmark loop, like the generated call API (which
// lives in bench.ops.cpp): both sides pay one call before the dispatcher.
C10_NOINLINE at::Tensor flat8(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  static const auto op = handle("bench_ref::flat8");
  return op.call(x, w, b, 1.0, 0.0, 1e-5, false, 1, "a");
}

C10_NOINLINE at::Tensor flat8_fn(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b) {
  static const auto op = handle("bench_ref::flat8_fn");
  return op.call(x, w, b, 1.0, 0.0, 1e-5, false, 1, "a");
}

/// The autograd kernel of flat8_fn, as in PyTorch's dispatcher tutorial.
class Flat8Function : public torch::autograd::Function<Flat8Function> {
 public:
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& w,
                            const at::Tensor& b, double scale, double shift, double eps, bool flag,
                            int64_t steps, c10::string_view mode) {
    static const auto op = handle("bench_ref::flat8_fn");
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({w, b});
    return op.call(x, w, b, scale, shift, eps, flag, steps, mode);
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& g = grads[0];
    return {g, g * saved[1], g * saved[0], {}, {}, {}, {}, {}, {}};
  }
};

at::Tensor flat8_fn_autograd(const at::Tensor& x, const at::Tensor& w, const at::Tensor& b,
                             double scale, double shift, double eps, bool flag, int64_t steps,
                             c10::string_view mode) {
  return Flat8Function::apply(x, w, b, scale, shift, eps, flag, steps, mode);
}

}  // namespace bench_ref

TORCH_LIBRARY(bench_ref, m) {
  m.def(
      R"(flat8(Tensor x, Tensor w, Tensor b, float scale=1.0, float shift=0.0, float eps=1e-05, bool flag=False, int steps=1, str mode="a") -> Tensor)");
  m.def(
      R"(flat8_fn(Tensor x, Tensor w, Tensor b, float scale=1.0, float shift=0.0, float eps=1e-05, bool flag=False, int steps=1, str mode="a") -> Tensor)");
}

TORCH_LIBRARY_IMPL(bench_ref, CompositeExplicitAutograd, m) {
  m.impl("flat8", TORCH_FN(bench_ref::flat8_kernel));
  m.impl("flat8_fn", TORCH_FN(bench_ref::flat8_kernel));
}

TORCH_LIBRARY_IMPL(bench_ref, Autograd, m) {
  m.impl("flat8_fn", TORCH_FN(bench_ref::flat8_fn_autograd));
}

// ===========================================================================
// Benchmarks
// ===========================================================================

namespace {

struct Inputs {
  at::Tensor x, w, b, grad;
  explicit Inputs(bool requires_grad)
      : x(at::randn({kSize}).requires_grad_(requires_grad)),
        w(at::randn({kSize}).requires_grad_(requires_grad)),
        b(at::randn({kSize}).requires_grad_(requires_grad)),
        grad(at::ones({kSize})) {}
  bench::Cfg8 cfg() const { return bench::Cfg8{w, b}; }
};

template <class Call>
void run_forward(benchmark::State& state, bool requires_grad, Call call) {
  const Inputs in(requires_grad);
  const bench::Cfg8 cfg = in.cfg();
  for (auto _ : state) benchmark::DoNotOptimize(call(in, cfg));
}

template <class Call>
void run_forward_graph(benchmark::State& state, Call call) {
  const Inputs in(true);
  const bench::Cfg8 cfg = in.cfg();
  for (auto _ : state) benchmark::DoNotOptimize(call(in, cfg));
}

template <class Call>
void run_forward_backward(benchmark::State& state, Call call) {
  const Inputs in(true);
  const bench::Cfg8 cfg = in.cfg();
  for (auto _ : state) {
    const at::Tensor y = call(in, cfg);
    benchmark::DoNotOptimize(torch::autograd::grad({y}, {in.x, in.w, in.b}, {in.grad}));
  }
}

at::Tensor generated_rec8(const Inputs& in, const bench::Cfg8& cfg) {
  return bench::rec8(in.x, cfg);
}
at::Tensor generated_rec8_grad(const Inputs& in, const bench::Cfg8& cfg) {
  return bench::rec8_grad(in.x, cfg);
}
at::Tensor flat8(const Inputs& in, const bench::Cfg8&) {
  return bench_ref::flat8(in.x, in.w, in.b);
}
at::Tensor flat8_fn(const Inputs& in, const bench::Cfg8&) {
  return bench_ref::flat8_fn(in.x, in.w, in.b);
}

void call_generated_record(benchmark::State& s) {
  run_forward(s, false, generated_rec8);
}
void call_handwritten_flat(benchmark::State& s) {
  run_forward(s, false, flat8);
}

void fwd_bwd_generated_bridge(benchmark::State& s) {
  run_forward_backward(s, generated_rec8_grad);
}
void fwd_bwd_autograd_function(benchmark::State& s) {
  run_forward_backward(s, flat8_fn);
}

void fwd_graph_generated_bridge(benchmark::State& s) {
  run_forward_graph(s, generated_rec8_grad);
}
void fwd_graph_autograd_function(benchmark::State& s) {
  run_forward_graph(s, flat8_fn);
}

void no_grad_generated_bridge(benchmark::State& s) {
  run_forward(s, false, generated_rec8_grad);
}
void no_grad_without_autograd(benchmark::State& s) {
  run_forward(s, false, generated_rec8);
}
void no_grad_autograd_function(benchmark::State& s) {
  run_forward(s, false, flat8_fn);
}

}  // namespace

BENCHMARK(call_generated_record)->Name("call/generated_record");
BENCHMARK(call_handwritten_flat)->Name("call/handwritten_flat");
BENCHMARK(fwd_bwd_generated_bridge)->Name("fwd_bwd/generated_bridge");
BENCHMARK(fwd_bwd_autograd_function)->Name("fwd_bwd/autograd_function");
BENCHMARK(fwd_graph_generated_bridge)->Name("fwd_graph/generated_bridge");
BENCHMARK(fwd_graph_autograd_function)->Name("fwd_graph/autograd_function");
BENCHMARK(no_grad_generated_bridge)->Name("no_grad/generated_bridge");
BENCHMARK(no_grad_without_autograd)->Name("no_grad/without_autograd");
BENCHMARK(no_grad_autograd_function)->Name("no_grad/autograd_function");

BENCHMARK_MAIN();
