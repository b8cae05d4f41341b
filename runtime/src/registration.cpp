// structop runtime library: registration and calls of generated ops
// (declared in structop/registration.h). Compiled once here, so that a
// generated X.ops.cpp instantiates none of the dispatcher's registration
// templates per op.
#include <structop/convert.h>
#include <structop/registration.h>

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty_like.h>
#include <torch/library.h>

#include <memory>
#include <string>
#include <vector>

namespace structop {
namespace {

/// A boxed kernel given as a function pointer at run time (CppFunction's
/// makeFromBoxedFunction takes it as a template argument, one instantiation
/// per kernel).
class FunctionKernel final : public c10::OperatorKernel {
 public:
  explicit FunctionKernel(BoxedKernel* kernel) : kernel_(kernel) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet ks, torch::jit::Stack* stack) {
    kernel_(op, ks, stack);
  }

 private:
  BoxedKernel* kernel_;
};

/// The identity Meta kernel: output i is `at::empty_like` of flat argument
/// `like[i]`.
class MetaLikeKernel final : public c10::OperatorKernel {
 public:
  explicit MetaLikeKernel(c10::ArrayRef<std::size_t> like) : like_(like.begin(), like.end()) {}
  void operator()(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
    const std::size_t num_args = op.schema().arguments().size();
    const c10::IValue* args = arguments(stack, num_args);
    std::vector<at::Tensor> outputs;
    outputs.reserve(like_.size());
    for (std::size_t slot : like_) outputs.push_back(at::empty_like(args[slot].toTensor()));
    torch::jit::drop(*stack, num_args);
    for (at::Tensor& output : outputs) stack->emplace_back(std::move(output));
  }

 private:
  std::vector<std::size_t> like_;
};

}  // namespace

void define(torch::Library& m, std::initializer_list<const char*> schemas) {
  for (const char* schema : schemas) define(m, schema, {});
}

void define(torch::Library& m, const char* schema, std::initializer_list<at::Tag> tags) {
  // A named vector, so that no torch version takes it for a kernel
  // (Library::def(schema, func) when it is an rvalue, torch 2.13).
  const std::vector<at::Tag> tag_list(tags);
  m.def(torch::schema(schema), tag_list);
}

void impl(torch::Library& m, std::initializer_list<KernelDef> kernels) {
  for (const KernelDef& k : kernels) {
    m.impl(
        k.name,
        torch::CppFunction::makeFromBoxedFunctor(std::make_unique<FunctionKernel>(k.kernel)));
  }
}

void impl_meta_like(torch::Library& m, std::initializer_list<MetaLikeDef> ops) {
  for (const MetaLikeDef& op : ops) {
    m.impl(
        op.name,
        torch::CppFunction::makeFromBoxedFunctor(std::make_unique<MetaLikeKernel>(op.like)));
  }
}

c10::OperatorHandle find_op(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

const c10::OperatorHandle& OpRef::lookup() const {
  // An op's name has no `.`: the first one starts the overload name.
  const std::string_view qualified(name_);
  const std::size_t dot = qualified.find('.');
  const std::string name(qualified.substr(0, dot));
  const std::string overload(dot == std::string_view::npos ? "" : qualified.substr(dot + 1));
  auto fresh = std::make_unique<const c10::OperatorHandle>(find_op(name.c_str(), overload.c_str()));
  const c10::OperatorHandle* first = nullptr;
  // Another thread may have looked it up meanwhile: keep the first. The kept
  // handle is never freed (as a function-local static would be at exit,
  // possibly after the dispatcher's own statics).
  if (handle_.compare_exchange_strong(first, fresh.get(), std::memory_order_acq_rel)) {
    return *fresh.release();
  }
  return *first;
}

namespace detail {

void drop(torch::jit::Stack& stack, std::size_t count) {
  torch::jit::drop(stack, count);
}

}  // namespace detail

CallStack::CallStack(std::size_t num_args) {
  stack_.reserve(num_args);
}

CallStack::~CallStack() = default;

void CallStack::dispatch(const OpRef& op) {
  op.get().callBoxed(stack_);
}

const c10::IValue* enum_ivalues(const c10::string_view* names, std::size_t count) {
  auto* spellings = new c10::IValue[count];
  for (std::size_t i = 0; i < count; ++i) {
    spellings[i] = c10::IValue(std::string(names[i].data(), names[i].size()));
  }
  return spellings;
}

void check_lengths(
    const ArgPath& where,
    std::initializer_list<std::pair<const char*, std::size_t>> leaves) {
  const std::size_t n = leaves.size() ? leaves.begin()->second : 0;
  bool same = true;
  for (const auto& leaf : leaves) same &= leaf.second == n;
  if (same) return;
  std::string lengths;
  for (const auto& leaf : leaves) {
    lengths += (lengths.empty() ? "" : ", ") + std::string(leaf.first) + ": " +
               std::to_string(leaf.second);
  }
  TORCH_CHECK_VALUE(
      false,
      where.op(),
      ": ",
      where.str(),
      ": its leaves' lists have different lengths (",
      lengths,
      "); each holds one entry per record");
}

void check_optional_record(
    const ArgPath& where,
    const c10::IValue* leaves,
    std::initializer_list<const char*> leaf_paths,
    std::initializer_list<std::size_t> required) {
  const char* const* paths = leaf_paths.begin();
  const std::size_t witness = *required.begin();
  // The messages (where.str()) are built only when a check fails: this runs
  // on every call of an op with an optional record.
  if (leaves[witness].isNone()) {
    for (std::size_t i = 0; i < leaf_paths.size(); ++i) {
      TORCH_CHECK_VALUE(
          leaves[i].isNone(),
          where.op(),
          ": ",
          where.str(),
          ".",
          paths[i],
          " is given but ",
          where.str(),
          ".",
          paths[witness],
          " is None, which means ",
          where.str(),
          " is None; give all of ",
          where.str(),
          "'s leaves or none");
    }
    return;
  }
  for (std::size_t i : required) {
    TORCH_CHECK_VALUE(
        !leaves[i].isNone(),
        where.op(),
        ": ",
        where.str(),
        ".",
        paths[i],
        " is None but ",
        where.str(),
        " is given (",
        where.str(),
        ".",
        paths[witness],
        " is not None); a given ",
        where.str(),
        " needs every field that is not optional");
  }
}

}  // namespace structop
