// structop runtime, light part: what every generated X.ops.h needs.
//
// Kernel sources include X.ops.h, so this header stays light: ATen's Tensor, c10
// utilities and the standard library only, no autograd, dispatcher or
// torch/library.h. The registration side lives in structop/registration.h.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/ArrayRef.h>
#include <c10/util/Exception.h>
#include <c10/util/Optional.h>
#include <c10/util/string_view.h>

#include <array>
#include <cstddef>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

/// Version of the interface between generated code and this runtime. Bumped
/// whenever generated code of one version would not work with another.
#define STRUCTOP_RUNTIME_VERSION 14

#define STRUCTOP_STRINGIFY_IMPL(x) #x
#define STRUCTOP_STRINGIFY(x) STRUCTOP_STRINGIFY_IMPL(x)

/// Generated files start with `STRUCTOP_REQUIRE_RUNTIME_VERSION(N);` where N is
/// the runtime version their structopc targets, so a file generated for another
/// runtime fails to compile with this message instead of an obscure one.
#define STRUCTOP_REQUIRE_RUNTIME_VERSION(version) \
  static_assert(                                                                            \
      (version) == STRUCTOP_RUNTIME_VERSION,                                                \
      "structop: this file was generated for structop runtime version " #version            \
      ", but structop/runtime.h is version " STRUCTOP_STRINGIFY(                            \
          STRUCTOP_RUNTIME_VERSION) "; regenerate it with the structopc that matches this " \
                                    "runtime")

// Kernel headers declare op_setup_context / op_backward with this type; only
// the files that call its methods need <torch/csrc/autograd/custom_function.h>.
namespace torch {
namespace autograd {
struct AutogradContext;
}  // namespace autograd
}  // namespace torch

namespace structop {

// ---------------------------------------------------------------------------
// Where a flat argument came from
// ---------------------------------------------------------------------------

/// The original location of a flat (lowered) argument: the op and the path of
/// parameter and record fields leading to it, e.g. `demo::op` / `cfg.inner.w`.
///
/// Adapters build these on the stack while unflattening (a few pointers, no
/// allocation); the path text is assembled only when an error is raised. A child
/// refers to its parent, so a path must not outlive the expression that built it.
class ArgPath {
 public:
  /// The top-level parameter `param` of `op` (e.g. "demo::op", "cfg").
  constexpr ArgPath(const char* op, const char* param) noexcept
      : op_(op), parent_(nullptr), name_(param) {}
  /// The field `field` of the record at `parent`.
  constexpr ArgPath(const ArgPath& parent, const char* field) noexcept
      : op_(parent.op_), parent_(&parent), name_(field) {}

  /// The qualified op name, e.g. "demo::op".
  constexpr const char* op() const noexcept { return op_; }

  /// The dotted original path, e.g. "cfg.inner.w". (Out of line, in the
  /// runtime library: it runs only when an error is raised.)
  std::string str() const;

 private:
  const char* op_;
  const ArgPath* parent_;
  const char* name_;
};

// ---------------------------------------------------------------------------
// String enums
// ---------------------------------------------------------------------------

/// Specialised by generated headers for each IDL enum:
///
///   template <> struct structop::EnumTraits<demo::MaskType> {
///     static constexpr const char* type_name = "MaskType";
///     static constexpr std::array<c10::string_view, 3> names{
///         {"full", "causal", "sliding_window"}};
///   };
///
/// `names[i]` is the spelling of the enumerator whose value is `i` (generated
/// enums list their values in IDL order without initialisers).
template <class E>
struct EnumTraits;

/// The IDL spelling of `value`, e.g. "causal". Also what the lowered `str`
/// argument carries.
template <class E>
constexpr c10::string_view enum_name(E value) {
  return EnumTraits<E>::names[static_cast<std::size_t>(value)];
}

/// The enumerator spelled `text`, or nullopt.
template <class E>
c10::optional<E> try_parse_enum(c10::string_view text) noexcept {
  const auto& names = EnumTraits<E>::names;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == text) return static_cast<E>(i);
  }
  return c10::nullopt;
}

namespace detail {

/// Throws the c10::ValueError of an invalid enum spelling `text`:
/// `demo::op: cfg.modes[1]: invalid value "diag" for MaskType; expected one
/// of: full, causal, sliding_window`; the context comes from `where` (if not
/// null) and `item` (an item of an enum list). In the runtime library, so that
/// a generated file does not compile the message's code for each enum.
[[noreturn]] void throw_invalid_enum(
    const ArgPath* where,
    c10::optional<std::size_t> item,
    const char* type_name,
    c10::string_view text,
    c10::ArrayRef<c10::string_view> names);

}  // namespace detail

/// The enumerator spelled `text`; throws c10::ValueError (a c10::Error; Python's
/// ValueError) listing the valid spellings otherwise.
template <class E>
E parse_enum(c10::string_view text) {
  if (auto value = try_parse_enum<E>(text)) return *value;
  detail::throw_invalid_enum(
      nullptr,
      c10::nullopt,
      EnumTraits<E>::type_name,
      text,
      EnumTraits<E>::names);
}

/// As parse_enum(text), for the flat argument at `where`; the message names the
/// op and the original path: `demo::op: cfg.mode: invalid value "diag" for
/// MaskType; expected one of: full, causal, sliding_window`.
template <class E>
E parse_enum(c10::string_view text, const ArgPath& where) {
  if (auto value = try_parse_enum<E>(text)) return *value;
  detail::throw_invalid_enum(
      &where,
      c10::nullopt,
      EnumTraits<E>::type_name,
      text,
      EnumTraits<E>::names);
}

// ---------------------------------------------------------------------------
// Dynamic numbers
// ---------------------------------------------------------------------------

namespace detail {
/// Reads the 0-dim CPU tensor of a dynamic value at `where` into `*value`;
/// false when its value is not known (a meta, fake or functional tensor:
/// torch is tracing the op). Throws c10::ValueError naming `where` for a
/// tensor that is not 0-dim or not on the CPU. Never synchronizes a stream.
bool read_dynamic(const at::Tensor& tensor, const ArgPath& where, double* value);
bool read_dynamic(const at::Tensor& tensor, const ArgPath& where, int64_t* value);
/// A new 0-dim CPU tensor (float64, int64) holding `value`.
at::Tensor dynamic_tensor(double value);
at::Tensor dynamic_tensor(int64_t value);
[[noreturn]] void throw_unknown_dynamic();
}  // namespace detail

/// An IDL `int` or `float` declared `dynamic: true`: a number that varies
/// from call to call. The schema carries it as a 0-dim CPU tensor, so that
/// torch.compile makes it a graph input instead of a constant it guards on;
/// records, kernels and the C++ call API hold it as this wrapper, which reads
/// as the number (`double s = cfg.scale;`, `x * cfg.scale`) and is made from
/// one (`cfg.scale = 2.0;`).
///
/// While torch traces the op (torch.compile, torch.export, a meta kernel) the
/// number is not known: value() throws, and tensor() is what a kernel or a
/// setup_context computes with, e.g. `ctx->saved_data["scale"] = cfg.scale.tensor();`
/// for a backward that follows the value under torch.compile.
template <class T>
class Dynamic {
  static_assert(
      std::is_same_v<T, double> || std::is_same_v<T, int64_t>,
      "structop::Dynamic holds a double or an int64_t");

 public:
  Dynamic(T value = T()) noexcept : value_(value), known_(true) {}  // NOLINT: implicit

  /// The value of the 0-dim CPU tensor `tensor` (the flat argument at `where`).
  static Dynamic from_tensor(at::Tensor tensor, const ArgPath& where) {
    Dynamic d;
    d.known_ = detail::read_dynamic(tensor, where, &d.value_);
    d.tensor_ = std::move(tensor);
    return d;
  }

  /// The number; throws while torch traces the op (its value is not known then).
  T value() const {
    if (!known_) detail::throw_unknown_dynamic();
    return value_;
  }
  operator T() const { return value(); }                         // NOLINT: implicit
  operator c10::Scalar() const { return c10::Scalar(value()); }  // NOLINT: implicit
  /// Whether value() is known (false while torch traces the op).
  bool known() const noexcept { return known_; }

  /// The 0-dim CPU tensor the op received (undefined for a Dynamic made from
  /// a number): what a backward computes with so that torch.compile follows
  /// the value.
  const at::Tensor& tensor() const noexcept { return tensor_; }
  /// tensor(), or a new 0-dim CPU tensor holding the number: the flat argument.
  at::Tensor to_tensor() const {
    return tensor_.defined() ? tensor_ : detail::dynamic_tensor(value_);
  }

 private:
  T value_;
  bool known_;
  at::Tensor tensor_;
};

/// The kernels' form of the dynamic value at `where` (structop::to_value's
/// counterpart for a dynamic leaf, with the path for its errors).
template <class T>
Dynamic<T> to_dynamic(const at::Tensor& tensor, const ArgPath& where) {
  return Dynamic<T>::from_tensor(tensor, where);
}

// ---------------------------------------------------------------------------
// Gradient slots
// ---------------------------------------------------------------------------

namespace detail {
template <class T>
constexpr bool always_false = false;
}  // namespace detail

/// One gradient slot of a generated grad record (`op_grads`, `WeightCfgGrad`).
///
/// Built implicitly from the gradient tensor; an undefined tensor (`at::Tensor()`)
/// or `c10::nullopt` means "no gradient" (Python's None), so every slot is filled
/// the same way: `return {grad_x, {{grad_w, c10::nullopt}}};`.
///
/// Why a wrapper and not a bare at::Tensor: at::Tensor is default-constructible,
/// so with bare tensors `return {grad_x, {{grad_w}}};` would compile and silently
/// drop the gradient of `cfg.inner.b`. A Grad cannot be default-constructed: its
/// only default constructor is a template whose instantiation fails with the
/// message below, so a forgotten slot is a compile error at the `return` (GCC's
/// -Wextra also names the member: "missing initializer for member
/// 'demo::InnerGrad::b'"), and a misspelled field is an unknown member. A deleted
/// default constructor would also work, but "use of deleted function" does not
/// say what to do.
class Grad {
 public:
  /// The gradient for this slot; undefined means no gradient.
  Grad(at::Tensor grad) noexcept : tensor_(std::move(grad)) {}  // NOLINT: implicit
  /// No gradient for this slot.
  Grad(c10::nullopt_t) noexcept {}  // NOLINT: implicit

  /// Not constructible: every slot of a grad record must be given explicitly.
  template <class SlotLeftOut = void>
  Grad() {
    static_assert(
        detail::always_false<SlotLeftOut>,
        "structop: a gradient slot was left out of a grads record; give every "
        "slot a value in declaration order (at::Tensor() or c10::nullopt for "
        "\"no gradient\")");
  }

  bool defined() const noexcept { return tensor_.defined(); }
  const at::Tensor& tensor() const& noexcept { return tensor_; }
  at::Tensor tensor() && noexcept { return std::move(tensor_); }

 private:
  at::Tensor tensor_;
};

// ---------------------------------------------------------------------------
// Lists of records: one list per leaf
// ---------------------------------------------------------------------------

/// Checks that the leaves' lists of the list of records at `where`
/// (`std::vector<R>` lowered to one list per leaf) have one length
/// (`{name, length}` per leaf, `name` the leaf's path inside the record);
/// throws naming them when they differ: `demo::op: cfgs: its leaves' lists
/// have different lengths (w: 3, scale: 2); each holds one entry per record`.
void check_lengths(
    const ArgPath& where,
    std::initializer_list<std::pair<const char*, std::size_t>> leaves);

namespace detail {
template <class T>
T& member(T& object) {
  return object;
}
template <class T, class M, class C, class... Rest>
auto& member(T& object, M C::* first, Rest... rest) {
  return member(object.*first, rest...);
}
}  // namespace detail

/// One gradient slot across a list of grad records, moved out:
/// `take_grads(grads.cfgs, &CfgGrad::inner, &InnerGrad::w)`. How a generated
/// backward maps `std::vector<RGrad>` onto the list slot of one tensor leaf.
template <class GradItem, class... Members>
std::vector<Grad> take_grads(std::vector<GradItem>& items, Members... members) {
  std::vector<Grad> out;
  out.reserve(items.size());
  for (GradItem& item : items) out.push_back(std::move(detail::member(item, members...)));
  return out;
}

/// Whether the backward of the op that made `ctx` must compute the gradient of
/// grad slot `slot` (an `<op>_grad_slot` constant): ctx->needs_input_grad for
/// the slot's edge. For a list slot (`Tensor[]`, `Tensor?[]`): whether any of
/// its tensors needs one, or with `item`, whether that tensor does.
bool needs_input_grad(torch::autograd::AutogradContext* ctx, std::size_t slot);
bool needs_input_grad(torch::autograd::AutogradContext* ctx, std::size_t slot, std::size_t item);

}  // namespace structop
