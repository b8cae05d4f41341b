// structop runtime, registration part: included only by generated X.ops.cpp.
//
// Every kernel a generated file registers is boxed: a plain function
//
//   void kernel(const c10::OperatorHandle& op, c10::DispatchKeySet ks,
//               torch::jit::Stack* stack);
//
// that reads the op's flat arguments from the dispatcher's stack, and it is
// registered through the non-template functions below, compiled once in the
// runtime library (libstructop_runtime, runtime/src/). So nothing is
// instantiated per op type by registration: the dispatcher's
// unboxed-registration templates (schema inference, the unboxed functor
// wrappers) and the typed call path, which made most of the compile time of a
// generated X.ops.cpp, are not used. The Autograd kernels (the bridge of ops
// with `backward: true`, the not-implemented kernels of the others) are
// runtime classes too, configured per op with data (BackwardDef).
//
// The templates left here are instantiated per C++ type (the dispatcher's
// flat argument types and the ops' return types), not per op.
#pragma once

#include <structop/autograd_bridge.h>
#include <structop/runtime.h>

#include <ATen/core/boxing/impl/make_boxed_from_unboxed_functor.h>
#include <ATen/core/stack.h>
#include <c10/core/DispatchKeySet.h>
#include <c10/macros/Macros.h>
#include <torch/library.h>

#include <atomic>
#include <cstddef>
#include <initializer_list>
#include <tuple>
#include <type_traits>
#include <utility>

namespace structop {

/// The type of a boxed kernel.
using BoxedKernel = void(const c10::OperatorHandle&, c10::DispatchKeySet, torch::jit::Stack*);

// ---------------------------------------------------------------------------
// Registration (compiled in the runtime library)
// ---------------------------------------------------------------------------

// Each function registers a table of ops (the generated TORCH_LIBRARY blocks
// pass one per kind of kernel): one call per block, not one per op, so that a
// generated file compiles a few calls with constant data instead of a call
// per op and dispatch key. An op `name` is "op" or "op.overload".

/// A boxed kernel of op `name`.
struct KernelDef {
  const char* name;
  BoxedKernel* kernel;
};

/// The identity Meta kernel of op `name` (`meta: identity` or `meta:
/// [inputs]`): output `i` is a tensor with the metadata of the flat argument
/// `like[i]` (shape, strides, dtype, device; on Meta tensors no data is
/// allocated). A runtime kernel configured with `like`: no code per op.
struct MetaLikeDef {
  const char* name;
  c10::ArrayRef<std::size_t> like;  // a constant array (the adapter's meta_like)
};

/// The autograd bridge of op `name` (`backward: true`). `def` must outlive
/// the registration (generated code passes a constant).
struct AutogradDef {
  const char* name;
  const BackwardDef* def;
};

/// `m.def(schema)` for each op without tags.
void define(torch::Library& m, std::initializer_list<const char*> schemas);

/// `m.def(schema, tags)`: an op with tags.
void define(torch::Library& m, const char* schema, std::initializer_list<at::Tag> tags);

/// Registers each kernel with the dispatch key of `m` (a TORCH_LIBRARY_IMPL
/// block).
void impl(torch::Library& m, std::initializer_list<KernelDef> kernels);

/// Registers each op's identity Meta kernel (a Meta block).
void impl_meta_like(torch::Library& m, std::initializer_list<MetaLikeDef> ops);

/// Registers each op's autograd bridge (an Autograd block).
void impl_autograd(torch::Library& m, std::initializer_list<AutogradDef> ops);

/// Registers the Autograd kernel of each op without `backward: true`: a
/// backward through what it returned or wrote raises "derivative for NS::op
/// is not implemented" (see runtime/src/no_backward.cpp).
void impl_no_backward(torch::Library& m, std::initializer_list<const char*> names);

/// Registers the ADInplaceOrView kernel of each op without `backward: true`
/// that writes to its arguments: it bumps their version counters.
void impl_bump_written_versions(torch::Library& m, std::initializer_list<const char*> names);

/// The registered op `name` (e.g. "demo::op"); throws when it is not
/// registered.
c10::OperatorHandle find_op(const char* name, const char* overload = "");

/// An op of the C++ call API by its qualified name ("demo::op" or
/// "demo::op.overload"), looked up (find_op) on its first call and kept.
/// Its constructor is constexpr, so a generated file's `static inline OpRef`
/// is initialised at compile time: no guard variable or initialiser per op.
class OpRef {
 public:
  constexpr explicit OpRef(const char* qualified_name) noexcept : name_(qualified_name) {}
  OpRef(const OpRef&) = delete;
  OpRef& operator=(const OpRef&) = delete;

  /// The op's handle; thread-safe. Throws when the op is not registered.
  const c10::OperatorHandle& get() const {
    const c10::OperatorHandle* found = handle_.load(std::memory_order_acquire);
    return found ? *found : lookup();
  }

 private:
  /// The first call's lookup (in the runtime library).
  const c10::OperatorHandle& lookup() const;

  const char* name_;
  mutable std::atomic<const c10::OperatorHandle*> handle_{nullptr};
};

// ---------------------------------------------------------------------------
// Inside a boxed kernel: arguments and outputs on the stack
// ---------------------------------------------------------------------------

/// The first of the `count` arguments on top of `stack`.
inline c10::IValue* arguments(torch::jit::Stack* stack, std::size_t count) {
  return stack->data() + (stack->size() - count);
}

namespace detail {
template <class T>
using ivalue_to = c10::impl::ivalue_to_arg<typename c10::impl::decay_if_not_tensor<T>::type, false>;
/// What `arg<T>` returns (spelled out, so that it can be instantiated once:
/// see the end of this file).
template <class T>
using arg_t = decltype(ivalue_to<T>::call(std::declval<c10::IValue&>()));
}  // namespace detail

/// A flat argument as the dispatcher's C++ type `T` would pass it (the
/// unboxing the dispatcher does for unboxed kernels): `const at::Tensor&`
/// refers into the stack, `at::IntArrayRef` is returned as a vector that lives
/// until the end of the full expression. Other values, and a tensor asked for
/// by value (`at::Tensor`, `c10::optional<at::Tensor>`: a record's leaf, which
/// the record keeps), are moved out of `value`: read each argument once.
template <class T>
C10_NOINLINE detail::arg_t<T> arg(c10::IValue& value) {
  return detail::ivalue_to<T>::call(value);
}

/// A value of the adapter whose destructor is not inlined where the value
/// dies: compiled once per type, not in every op's adapter (the destructors
/// of records, results and grad records were much of a generated file's
/// code). Holds the record parameters (`R`, `R?`, `R[]`) that `with_args`
/// passes to kernels, which take them as `const R&` (the conversion), the
/// kernels' results until they are on the stack (return_outputs), and the
/// grad records of backward kernels.
template <class T>
struct Held {
  T value;

  operator const T&() const& noexcept {  // NOLINT: implicit
    return value;
  }
  C10_NOINLINE ~Held() {}
};

/// Checks that the leaves of an optional record (`R?`), which start at
/// `leaves`, agree. `leaf_paths` names every leaf (`w`, `inner.v`);
/// `required` lists those never None in a given record, the first being the
/// presence witness. Absent (the witness is None): every leaf must be None.
/// Present: every required leaf must be given. Otherwise a ValueError names
/// the leaves that disagree.
void check_optional_record(
    const ArgPath& where,
    const c10::IValue* leaves,
    std::initializer_list<const char*> leaf_paths,
    std::initializer_list<std::size_t> required);

/// A leaf's list in a list of records (unflatten_<R>_list), for the item
/// types the stack holds as a c10::List<Item> (convert::is_stack_list_item):
/// that list itself, taken out of `value`, not copied.
template <class Item>
C10_NOINLINE c10::List<Item> leaf_list(c10::IValue& value) {
  return std::move(value).to<c10::List<Item>>();
}

/// Item `i` of a leaf's list, for the record built from it: moved out when
/// the list has no other owner (the stack's list, taken by leaf_list), copied
/// when it is shared (the autograd bridge's copy of the arguments, a
/// TorchScript constant), which must stay intact.
template <class Item>
Item item(c10::List<Item>& list, std::size_t i) {
  return list.use_count() == 1 ? list.extract(i) : list.get(i);
}
template <class Item>
Item item(std::vector<Item>& list, std::size_t i) {
  return std::move(list[i]);
}

/// An output of the op (on the stack after the forward ran) as the C++ type
/// `T` (`at::Tensor`, `std::vector<at::Tensor>`), left on the stack: a copy
/// sharing the tensors, where `arg` would move the value out.
template <class T>
C10_NOINLINE T output(const c10::IValue& value) {
  return value.to<T>();
}

namespace detail {

/// `stack.emplace_back(value)`. Like every use of the stack's vector, which
/// reallocates and destroys IValues, out of line: the IValue destructor's
/// virtual calls would make GCC compile much of c10's type system in each
/// generated file. Compiled once in the runtime library for the common types
/// (the end of this file).
template <class T>
C10_NOINLINE void push(torch::jit::Stack& stack, T&& value) {
  stack.emplace_back(std::forward<T>(value));
}

/// Drops the `count` values on top of `stack` (in the runtime library).
void drop(torch::jit::Stack& stack, std::size_t count);

/// Pushes a kernel's result (the dispatcher's push_outputs, through push):
/// a value, or each value of a std::tuple; a reference is copied.
template <class T>
void push_outputs(torch::jit::Stack& stack, T&& output) {
  push<std::decay_t<T>>(stack, std::move(output));
}
template <class... T>
void push_outputs(torch::jit::Stack& stack, std::tuple<T...>&& outputs) {
  std::apply([&](auto&... output) { (push<T>(stack, std::forward<T>(output)), ...); }, outputs);
}

}  // namespace detail

/// Replaces the `num_args` arguments on top of `stack` by `outputs` (a value,
/// a std::tuple of them, or nothing for `void`).
template <class Outputs>
C10_NOINLINE void return_outputs(
    torch::jit::Stack* stack,
    std::size_t num_args,
    Outputs&& outputs) {
  detail::drop(*stack, num_args);
  detail::push_outputs(*stack, std::move(outputs));
}
/// As above, for a result held until it is on the stack (moved there).
template <class Outputs>
void return_outputs(torch::jit::Stack* stack, std::size_t num_args, Held<Outputs>&& outputs) {
  return_outputs(stack, num_args, std::move(outputs.value));
}
inline void return_nothing(torch::jit::Stack* stack, std::size_t num_args) {
  detail::drop(*stack, num_args);
}

// ---------------------------------------------------------------------------
// The C++ call API: a boxed call of the op
// ---------------------------------------------------------------------------

namespace detail {

template <class T>
struct is_list : std::false_type {};
template <class E>
struct is_list<c10::List<E>> : std::true_type {};

/// Pushes an argument as the flat type `Param` would box it; a c10::List
/// (gather) or an IValue (a leaf of an optional record, or None) as it is.
template <class Param, class Arg>
void push_arg(torch::jit::Stack& stack, Arg&& arg) {
  if constexpr (std::is_same_v<std::decay_t<Arg>, c10::IValue>) {
    // push<const IValue&> copies, push<IValue> moves: both compiled once in
    // the runtime library, where a copy made here would compile the IValue
    // copy and destructor into every generated file.
    if constexpr (std::is_lvalue_reference_v<Arg>) {
      push<const c10::IValue&>(stack, arg);
    } else {
      push<c10::IValue>(stack, std::move(arg));
    }
  } else if constexpr (is_list<std::decay_t<Arg>>::value) {
    push<std::decay_t<Arg>>(stack, std::decay_t<Arg>(std::forward<Arg>(arg)));
  } else {
    push<Param>(stack, static_cast<Param>(std::forward<Arg>(arg)));
  }
}

/// The outputs on `stack` after a call, moved out (the CallStack drops them).
template <class T>
struct Pop {
  static T call(torch::jit::Stack& stack) { return std::move(stack.back()).to<T>(); }
};
template <>
struct Pop<void> {
  static void call(torch::jit::Stack&) {}
};
template <class... T>
struct Pop<std::tuple<T...>> {
  template <std::size_t... I>
  static std::tuple<T...> take(c10::IValue* first, std::index_sequence<I...>) {
    return std::tuple<T...>(std::move(first[I]).to<T>()...);
  }
  static std::tuple<T...> call(torch::jit::Stack& stack) {
    return take(arguments(&stack, sizeof...(T)), std::index_sequence_for<T...>{});
  }
};

template <class Outputs>
C10_NOINLINE Outputs pop_outputs(torch::jit::Stack& stack) {
  return Pop<Outputs>::call(stack);
}

}  // namespace detail

/// A boxed call of an op, as the C++ call API makes it: the flat arguments
/// pushed in schema order (a record's leaves by the generated flatten_<R>),
/// then `call`. Its constructor (which reserves `num_args` values),
/// destructor and `dispatch` are in the runtime library (see detail::push).
class CallStack {
 public:
  explicit CallStack(std::size_t num_args);
  ~CallStack();
  CallStack(const CallStack&) = delete;
  CallStack& operator=(const CallStack&) = delete;

  /// Pushes the next argument as the flat schema's C++ type `Param` (the
  /// dispatcher's) boxes it.
  template <class Param, class Arg>
  void push(Arg&& arg) {
    detail::push_arg<Param>(stack_, std::forward<Arg>(arg));
  }

  /// Calls `op` with the arguments pushed and returns its outputs as
  /// `Outputs` (the flat return type: a value, a std::tuple, or void).
  template <class Outputs>
  Outputs call(const OpRef& op) {
    dispatch(op);
    return detail::pop_outputs<Outputs>(stack_);
  }

 private:
  void dispatch(const OpRef& op);

  torch::jit::Stack stack_;
};

}  // namespace structop

// ---------------------------------------------------------------------------
// Compiled once, in the runtime library (runtime/src/instantiations.cpp):
// the templates above for the dispatcher's common flat types and the common
// outputs. A generated X.ops.cpp then generates no code for them (they were
// most of the code of a file with few ops); other types are instantiated
// where they are used, as before.
// ---------------------------------------------------------------------------

// The flat argument types (CppTypes::flat_type) of every example and golden.
#define STRUCTOP_COMMON_FLAT_TYPES(X, KIND)            \
  X(KIND, const at::Tensor&)                           \
  X(KIND, const c10::optional<at::Tensor>&)            \
  X(KIND, at::TensorList)                              \
  X(KIND, const c10::List<c10::optional<at::Tensor>>&) \
  X(KIND, double)                                      \
  X(KIND, int64_t)                                     \
  X(KIND, bool)                                        \
  X(KIND, c10::SymInt)                                 \
  X(KIND, c10::string_view)                            \
  X(KIND, c10::optional<c10::string_view>)             \
  X(KIND, c10::optional<double>)                       \
  X(KIND, c10::optional<int64_t>)                      \
  X(KIND, c10::optional<bool>)                         \
  X(KIND, at::IntArrayRef)                             \
  X(KIND, c10::SymIntArrayRef)                         \
  X(KIND, at::ArrayRef<double>)                        \
  X(KIND, const c10::List<bool>&)                      \
  X(KIND, at::ScalarType)                              \
  X(KIND, at::Device)

#define STRUCTOP_FLAT_TYPE_INSTANTIATION(KIND, T) \
  KIND detail::arg_t<T> arg<T>(c10::IValue&);     \
  KIND void detail::push<T>(torch::jit::Stack&, std::add_rvalue_reference_t<T>);

/// The one list of what the runtime library instantiates: KIND is `extern
/// template` here, `template` in runtime/src/instantiations.cpp.
#define STRUCTOP_RUNTIME_INSTANTIATIONS(KIND)                                                     \
  STRUCTOP_COMMON_FLAT_TYPES(STRUCTOP_FLAT_TYPE_INSTANTIATION, KIND)                              \
  KIND detail::arg_t<at::Tensor> arg<at::Tensor>(c10::IValue&);                                   \
  KIND detail::arg_t<c10::optional<at::Tensor>> arg<c10::optional<at::Tensor>>(c10::IValue&);     \
  KIND void detail::push<at::Tensor>(torch::jit::Stack&, at::Tensor&&);                           \
  KIND void detail::push<std::vector<at::Tensor>>(torch::jit::Stack&, std::vector<at::Tensor>&&); \
  KIND void detail::push<c10::IValue>(torch::jit::Stack&, c10::IValue&&);                         \
  KIND void detail::push<const c10::IValue&>(torch::jit::Stack&, const c10::IValue&);             \
  KIND void return_outputs<at::Tensor>(torch::jit::Stack*, std::size_t, at::Tensor&&);            \
  KIND struct Held<at::Tensor>;                                                                   \
  KIND at::Tensor output<at::Tensor>(const c10::IValue&);                                         \
  KIND at::Tensor detail::pop_outputs<at::Tensor>(torch::jit::Stack&);

namespace structop {
STRUCTOP_RUNTIME_INSTANTIATIONS(extern template)
}  // namespace structop
