// structop runtime: conversions between the flat arguments torch's dispatcher
// passes (c10::string_view, at::IntArrayRef, c10::List<bool>, ...) and the
// value types of record fields (std::string, std::vector<int64_t>, ...).
// Generated adapters spell both directions with the target type:
//
//   structop::to_value<std::vector<int64_t>>(cfg__sizes)      // flat -> field
//   structop::to_flat<at::IntArrayRef>(cfg.sizes)              // field -> flat
//
// Adapters read flat arguments from the dispatcher's stack as the dispatcher
// would pass them (structop::arg, registration.h): lists may arrive as owning
// vectors (`std::vector<int64_t>` for an `at::IntArrayRef`,
// `c10::OptionalArray<int64_t>` for an `at::OptionalIntArrayRef`), which
// convert too.
//
// to_flat may return an owning temporary (a c10::List) that converts to the
// flat type at the call; it lives until the end of the full expression, i.e.
// the dispatcher call. SymInt fields are c10::SymInt (SymInt[]: a vector of
// them), as the dispatcher passes them, so symbolic sizes under torch.compile
// reach kernels unchanged.
#pragma once

#include <structop/runtime.h>

#include <ATen/core/List.h>
#include <ATen/core/ivalue.h>
#include <c10/core/SymInt.h>
#include <c10/core/SymIntArrayRef.h>
#include <c10/util/OptionalArrayRef.h>

#include <array>
#include <string>
#include <type_traits>
#include <vector>

namespace structop {
namespace convert {

template <class T>
struct tag {};

// Overloads are ranked so the exact conversions win over the generic ones.
template <int N>
struct rank : rank<N - 1> {};
template <>
struct rank<0> {};

// ---- flat argument -> field value ------------------------------------------

template <class T>
T value_of(tag<T>, const T& same, rank<0>) {
  return same;
}

inline std::string value_of(tag<std::string>, c10::string_view s, rank<1>) {
  return std::string(s.data(), s.size());
}

template <class T>
std::vector<T> value_of(tag<std::vector<T>>, c10::ArrayRef<T> list, rank<1>) {
  return list.vec();
}

template <class T, class E>
std::vector<T> value_of(tag<std::vector<T>>, const c10::List<E>& list, rank<1>) {
  std::vector<T> out;
  out.reserve(list.size());
  for (size_t i = 0; i < list.size(); ++i) out.push_back(list.get(i));
  return out;
}

template <class T>
std::vector<T> value_of(tag<std::vector<T>>, const std::vector<T>& list, rank<1>) {
  return list;
}

template <class T, class F>
c10::optional<T> value_of(tag<c10::optional<T>>, const c10::optional<F>& flat, rank<1>) {
  if (!flat.has_value()) return c10::nullopt;
  return value_of(tag<T>{}, *flat, rank<2>{});
}

template <class T>
c10::optional<std::vector<T>> value_of(
    tag<c10::optional<std::vector<T>>>,
    const c10::OptionalArrayRef<T>& flat,
    rank<1>) {
  if (!flat.has_value()) return c10::nullopt;
  return flat->vec();
}

// What the dispatcher's unboxing makes of an optional list argument on its
// stack (generated adapters read flat arguments from the stack).
template <class T>
c10::optional<std::vector<T>> value_of(
    tag<c10::optional<std::vector<T>>>,
    const c10::OptionalArray<T>& flat,
    rank<1>) {
  return flat.list;
}

// ---- field value -> flat argument ------------------------------------------

// A dynamic number: the 0-dim CPU tensor it came in, or a new one.
template <class T>
at::Tensor flat_of(tag<at::Tensor>, const Dynamic<T>& value, rank<1>) {
  return value.to_tensor();
}

template <class F, class V>
const V& flat_of(tag<F>, const V& value, rank<0>) {
  return value;  // converts implicitly at the call (vector -> ArrayRef, ...)
}

inline c10::string_view flat_of(tag<c10::string_view>, const std::string& s, rank<1>) {
  return s;
}

template <class E, class V>
c10::List<E> flat_of(tag<c10::List<E>>, const std::vector<V>& v, rank<1>) {
  c10::List<E> list;
  list.reserve(v.size());
  for (const auto& item : v) list.push_back(item);
  return list;
}

// A list gather() built as the c10::List the dispatcher's stack holds: passed
// on as it is (the boxed call pushes it without a copy).
template <class F, class E>
c10::List<E> flat_of(tag<F>, c10::List<E>&& list, rank<2>) {
  return std::move(list);
}

template <class F, class V>
c10::optional<F> flat_of(tag<c10::optional<F>>, const c10::optional<V>& value, rank<1>) {
  if (!value.has_value()) return c10::nullopt;
  return F(flat_of(tag<F>{}, *value, rank<2>{}));
}

template <class T>
c10::OptionalArrayRef<T> flat_of(
    tag<c10::OptionalArrayRef<T>>,
    const c10::optional<std::vector<T>>& v,
    rank<1>) {
  if (!v.has_value()) return c10::nullopt;
  return c10::ArrayRef<T>(*v);
}

}  // namespace convert

/// The record field value of type `T` for a flat argument.
template <class T, class F>
T to_value(const F& flat) {
  return convert::value_of(convert::tag<T>{}, flat, convert::rank<2>{});
}

/// The flat argument of type `F` (as the dispatcher spells it, possibly
/// `const ...&`) for a record field value.
template <class F, class V>
decltype(auto) to_flat(V&& value) {
  using Flat = std::remove_cv_t<std::remove_reference_t<F>>;
  return convert::flat_of(convert::tag<Flat>{}, std::forward<V>(value), convert::rank<2>{});
}

namespace convert {
// The item types whose lists the dispatcher's stack holds as a c10::List of
// the same C++ type (`Tensor[]`, `Tensor?[]`, `float[]`, `int[]`, `bool[]`).
template <class T>
constexpr bool is_stack_list_item = std::is_same_v<T, at::Tensor> ||
                                    std::is_same_v<T, c10::optional<at::Tensor>> ||
                                    std::is_same_v<T, double> || std::is_same_v<T, int64_t> ||
                                    std::is_same_v<T, bool>;
}  // namespace convert

/// One leaf across a list of records, copied: `gather(cfgs, &Cfg::inner,
/// &Inner::w)` is `{cfgs[0].inner.w, cfgs[1].inner.w, ...}`. How the C++ call
/// API flattens `std::vector<R>` into the leaf's list: a c10::List where the
/// stack holds one (pushed as it is), else a std::vector.
template <class Item, class... Members>
auto gather(const std::vector<Item>& items, Members... members) {
  using Leaf = std::decay_t<decltype(detail::member(std::declval<const Item&>(), members...))>;
  std::conditional_t<convert::is_stack_list_item<Leaf>, c10::List<Leaf>, std::vector<Leaf>> out;
  out.reserve(items.size());
  for (const Item& item : items) out.push_back(detail::member(item, members...));
  return out;
}

/// Optional enums: `None` or a valid spelling.
template <class E>
c10::optional<E> parse_optional_enum(
    const c10::optional<c10::string_view>& text,
    const ArgPath& where) {
  if (!text.has_value()) return c10::nullopt;
  return parse_enum<E>(*text, where);
}

template <class E>
c10::optional<c10::string_view> optional_enum_name(const c10::optional<E>& value) {
  if (!value.has_value()) return c10::nullopt;
  return enum_name(*value);
}

/// A new array of the `str` IValues of an enum's `count` spellings, never
/// freed (in the runtime library, so that the IValue constructors and
/// destructors stay out of generated files).
const c10::IValue* enum_ivalues(const c10::string_view* names, std::size_t count);

/// The `str` IValue of `value`'s spelling, as the C++ call API pushes it:
/// made once per enumerator, so a call copies a reference where it would
/// allocate and copy the string. Never freed (a call may come from another
/// static's destructor).
template <class E>
C10_NOINLINE const c10::IValue& enum_ivalue(E value) {
  static const c10::IValue* const spellings = enum_ivalues(
      EnumTraits<E>::names.data(),
      EnumTraits<E>::names.size());
  return spellings[static_cast<std::size_t>(value)];
}

/// As enum_ivalue; `None` for an empty optional.
template <class E>
c10::IValue optional_enum_ivalue(const c10::optional<E>& value) {
  if (!value.has_value()) return c10::IValue();
  return enum_ivalue(*value);
}

/// Enum lists (`E[]`, lowered to `str[]`): every spelling must be valid; the
/// error names the item, e.g. `demo::op: cfg.modes[1]: invalid value ...`.
template <class E>
std::vector<E> parse_enum_list(const std::vector<std::string>& texts, const ArgPath& where) {
  std::vector<E> out;
  out.reserve(texts.size());
  for (std::size_t i = 0; i < texts.size(); ++i) {
    if (auto value = try_parse_enum<E>(texts[i])) {
      out.push_back(*value);
      continue;
    }
    detail::throw_invalid_enum(&where, i, EnumTraits<E>::type_name, texts[i], EnumTraits<E>::names);
  }
  return out;
}

/// `E[]?` (lowered to `str[]?`): `None` or a list of valid spellings.
template <class E>
c10::optional<std::vector<E>> parse_optional_enum_list(
    const c10::optional<c10::List<std::string>>& texts,
    const ArgPath& where) {
  if (!texts.has_value()) return c10::nullopt;
  return parse_enum_list<E>(texts->vec(), where);
}

/// The spellings of an enum list, as its `str[]` flat argument.
template <class E>
std::vector<std::string> enum_name_list(const std::vector<E>& values) {
  std::vector<std::string> out;
  out.reserve(values.size());
  for (E value : values) {
    const c10::string_view name = enum_name(value);
    out.emplace_back(name.data(), name.size());
  }
  return out;
}

template <class E>
c10::optional<c10::List<std::string>> optional_enum_name_list(
    const c10::optional<std::vector<E>>& values) {
  if (!values.has_value()) return c10::nullopt;
  return c10::List<std::string>(enum_name_list(*values));
}

}  // namespace structop
