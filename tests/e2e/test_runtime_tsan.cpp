// The runtime's own code under ThreadSanitizer, from 8 threads at once.
//
// libtorch is not built with -fsanitize=thread, so what TSan can judge is the
// code compiled here: the runtime headers (runtime/include/structop), the
// runtime library's sources (runtime/src, compiled into this executable with
// TSan) and the generated enum declarations they serve. This executable links libtorch only
// for what those headers call into (c10::Error for the messages, c10::IValue
// and c10::List, torch's type singletons), never runs an ATen operator, the
// dispatcher or the autograd engine (their threads and memory are libtorch's:
// tests/e2e/test_threads.cpp runs the generated ops under threads, without
// TSan). What runs here, each thread checking its results:
//   - parse_enum / try_parse_enum / enum_name / to_string of generated enums,
//     and parse_enum's error (a c10::ValueError naming the ArgPath);
//   - ArgPath chains built and printed;
//   - convert.h: to_value / to_flat between flat arguments and field values;
//   - the BackwardDef registry (detail::remember / recall, runtime/src/
//     autograd.cpp: a mutex-guarded map with per-thread caches), many ops
//     alternating;
//   - structop::Grad and grad_list with "no gradient" slots;
//   - structop::OpRef (the C++ call API's op): the threads' first get() of
//     the same OpRefs race (looking ops up reads the dispatcher's table,
//     libtorch's); every thread gets the one handle each keeps.
// Exit status 0 and no TSan report: TSan makes a race exit with status 66.
#include <structop/autograd_bridge.h>
#include <structop/convert.h>
#include <structop/registration.h>
#include <structop/runtime.h>

#include <ATen/core/ivalue.h>

#include "attention.ops.h"
#include "common.ops.h"
#include "weights.ops.h"

#include <atomic>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kThreads = 8;
constexpr int kRounds = 2000;
constexpr int kDefs = 24;

std::atomic<int> failures{0};

void expect(bool ok, const char* what) {
  if (!ok) {
    failures.fetch_add(1);
    std::fprintf(stderr, "test_runtime_tsan: FAILED: %s\n", what);
  }
}

template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const c10::ValueError& e) {
    return e.what_without_backtrace();
  }
  return "<no error>";
}

// BackwardDefs of kDefs ops, as generated X.ops.cpp files define them.
structop::variable_list no_backward(
    torch::autograd::AutogradContext*,
    const structop::variable_list&) {
  return {};
}
void no_setup_context(torch::autograd::AutogradContext*, c10::IValue*, const c10::IValue*) {}
const char* const kPaths[] = {"x", "cfg.inner.w"};
const std::size_t kSlots[] = {0, 1};
std::vector<std::string> def_names;
std::vector<structop::BackwardDef> defs;

// Ops of libtorch (registered when it loads), as a generated adapter's
// `static inline structop::OpRef handle{...}`.
structop::OpRef add_op{"aten::add.Tensor"};
structop::OpRef mul_op{"aten::mul.Tensor"};
structop::OpRef relu_op{"aten::relu"};

void op_refs() {
  const c10::OperatorHandle* first[] = {&add_op.get(), &mul_op.get(), &relu_op.get()};
  expect(first[0]->schema().name() == "aten::add", "OpRef add");
  expect(first[0]->schema().overload_name() == "Tensor", "OpRef add overload");
  expect(first[1]->schema().name() == "aten::mul", "OpRef mul");
  expect(first[2]->schema().name() == "aten::relu", "OpRef relu");
  expect(&add_op.get() == first[0] && &relu_op.get() == first[2], "OpRef keeps its handle");
}

void enums(int round) {
  using weights::MaskType;
  const MaskType all[] = {MaskType::full, MaskType::causal, MaskType::sliding_window};
  const MaskType m = all[round % 3];
  expect(structop::parse_enum<MaskType>(weights::to_string(m)) == m, "parse_enum(to_string)");
  expect(!structop::try_parse_enum<attention::MaskMode>("full"), "try_parse_enum of a non-value");
  expect(
      structop::try_parse_enum<nn::Activation>("silu") == nn::Activation::silu,
      "try_parse_enum");
  expect(structop::enum_name(attention::MaskMode::none) == "none", "enum_name");

  const structop::ArgPath cfg("weights::op", "cfg");
  const structop::ArgPath inner(cfg, "inner");
  const structop::ArgPath mode(inner, "mode");
  expect(mode.str() == "cfg.inner.mode", "ArgPath::str");
  expect(
      error_of([&] { structop::parse_enum<MaskType>("diag", mode); }) ==
          "weights::op: cfg.inner.mode: invalid value \"diag\" for MaskType; expected one of: "
          "full, causal, sliding_window",
      "parse_enum error with a path");
  expect(
      error_of([] { structop::parse_enum<nn::Activation>(""); }) ==
          "invalid value \"\" for Activation; expected one of: relu, gelu, silu",
      "parse_enum error");
  expect(
      structop::parse_optional_enum<attention::MaskMode>(c10::string_view("causal"), cfg) ==
          attention::MaskMode::causal,
      "parse_optional_enum");
  expect(
      structop::optional_enum_name(c10::optional<nn::Activation>(nn::Activation::relu)) == "relu",
      "optional_enum_name");
}

void conversions(int round) {
  const std::vector<int64_t> sizes = {round, 2, 3};
  expect(
      structop::to_value<std::vector<int64_t>>(at::IntArrayRef(sizes)) == sizes,
      "IntArrayRef -> vector");
  const std::string text = "mode" + std::to_string(round);
  expect(structop::to_value<std::string>(c10::string_view(text)) == text, "string_view -> string");
  const c10::List<bool> flags = structop::to_flat<const c10::List<bool>&>(
      std::vector<bool>{true, false});
  expect(
      structop::to_value<std::vector<bool>>(flags) == std::vector<bool>{true, false},
      "bool list round trip");
  const c10::optional<std::vector<double>> none;
  expect(!structop::to_flat<c10::OptionalArrayRef<double>>(none).has_value(), "optional list None");
  const c10::optional<std::vector<double>> some = std::vector<double>{1.5};
  const auto flat = structop::to_flat<c10::OptionalArrayRef<double>>(some);
  expect(
      structop::to_value<c10::optional<std::vector<double>>>(flat) == some,
      "optional list round trip");
}

void registry(int thread, int round) {
  // Different threads walk the ops in different orders; each op's name comes
  // back from the registry, and the per-thread cache never mixes two ops up.
  const int i = (round * (thread + 1) + thread) % kDefs;
  const c10::IValue& name = structop::detail::remember(defs[i]);
  expect(name.isString() && name.toStringRef() == def_names[i], "remember");
  const c10::IValue copy = name;  // a node keeps a copy
  expect(&structop::detail::recall(def_names[i]) == &defs[i], "recall");
  expect(copy.toStringRef() == def_names[i], "the name a node keeps");
}

void grads() {
  weights::op_grads g{at::Tensor(), {{c10::nullopt, at::Tensor()}}};
  auto list =
      structop::grad_list(std::move(g.x), std::move(g.cfg.inner.w), std::move(g.cfg.inner.b));
  expect(list.size() == 3 && !list[0].defined() && !list[2].defined(), "grad_list of no gradients");
}

}  // namespace

int main() {
  def_names.reserve(kDefs);
  defs.reserve(kDefs);
  for (int i = 0; i < kDefs; ++i) def_names.push_back("tsan::op" + std::to_string(i));
  for (int i = 0; i < kDefs; ++i)
    defs.push_back(
        {def_names[i].c_str(), kPaths, kSlots, nullptr, 2, &no_setup_context, &no_backward});

  std::atomic<int> waiting{kThreads};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&waiting, t] {
      waiting.fetch_sub(1);
      while (waiting.load() > 0) std::this_thread::yield();
      op_refs();  // first: the threads' first lookups race
      for (int round = 0; round < kRounds; ++round) {
        enums(round);
        conversions(round);
        registry(t, round);
        grads();
      }
    });
  }
  for (auto& th : threads) th.join();
  {
    // One handle per OpRef, whichever thread's lookup won.
    const c10::OperatorHandle* add = &add_op.get();
    std::atomic<int> same{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < kThreads; ++t)
      readers.emplace_back([&] { same.fetch_add(&add_op.get() == add ? 1 : 0); });
    for (auto& th : readers) th.join();
    expect(same.load() == kThreads, "OpRef: one handle for every thread");
  }
  // The registry knows every op once.
  for (int i = 0; i < kDefs; ++i) {
    expect(&structop::detail::recall(def_names[i]) == &defs[i], "recall after the threads");
  }
  if (failures.load() != 0) return 1;
  std::printf("test_runtime_tsan: %d threads x %d rounds OK\n", kThreads, kRounds);
  return 0;
}
