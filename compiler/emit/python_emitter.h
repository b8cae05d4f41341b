// X_ops.py, shared by its parts: python_emitter.cpp (the module: prologue,
// imports, __all__, epilogue), python_records.cpp (enums, record dataclasses,
// grad records), python_ops.cpp (per op a structop_runtime.Op and the typed
// function it decorates) and python_kernels.cpp (what Python kernels need:
// the Op's kernel options, the flat outputs in record form).
//
// Every expression that can break is built as Code with its lists (calls,
// displays, parameters), which the printer lays out as ruff format does
// (CodePrinter::Language::Python), so the module passes `ruff format
// --check` as generated.
#pragma once

#include <string>
#include <vector>

#include "check/model.h"
#include "emit/code_printer.h"
#include "emit/emitters.h"
#include "lower/lowered.h"

namespace structop {
namespace python {

/// A Python string literal whose value is exactly `value`
/// (python_string_literal), in the quotes ruff format chooses: `"a"`, or
/// `'a"b'` for a text with more `"` than `'`.
std::string quoted(std::string_view value);
/// `callee(a, b)`.
Code call(const std::string& callee, std::vector<Code> args);
/// A tuple display: `()`, `(a,)`, `(a, b)`.
Code tuple(std::vector<Code> items);
/// A list display: `[a, b]`.
Code list(std::vector<Code> items);
/// A dict display from `key: value` items: `{"a": a}`.
Code dict(std::vector<Code> items);
/// `(a if condition else b)`.
Code conditional(const Code& a, const Code& condition, const Code& b);
/// `(a if c1 or c2 ... else b)`: once broken, one condition per line.
Code conditional(const Code& a, const std::vector<Code>& any_of, const Code& b);
/// A docstring (real line breaks), or an assignment `__doc__ = "..."` (by
/// `owner.__doc__` when `owner` is given) where Python would clean the text
/// of a docstring (python_keeps_docstring).
Code docstring(const std::string& text);
bool keeps_docstring(const std::string& text);
/// `owner.__doc__ = "..."` (`__doc__ = ...` without an owner).
Code doc_assignment(const std::string& owner, const std::string& text);

/// What the parts of X_ops.py read: the module, its lowered form, and the
/// Python spellings of types, checks and values.
class Module {
 public:
  explicit Module(const EmitInput& in) : in(in), m(in.module) {}

  const EmitInput& in;
  const model::Module& m;

  const model::Record& record(const model::Type& t) const {
    return m.records[static_cast<size_t>(t.decl)];
  }
  const model::Enum& enum_of(const model::Type& t) const {
    return m.enums[static_cast<size_t>(t.decl)];
  }
  const lower::RecordLayout& layout(int decl) const {
    return in.lowered.records[static_cast<size_t>(decl)];
  }
  /// `"ns::op.overload"` as a Python string literal.
  std::string qualified(const lower::LoweredOp& lo) const;

  /// Type hint; `param` widens enums to accept their strings, and lists to
  /// any sequence (tuples too); returned lists are lists.
  std::string hint(const model::Type& t, bool param) const;
  /// The return hint of an op function.
  std::string return_hint(const lower::LoweredOp& lo) const;
  /// Whether any type hint names `typing` (else the module does not import it).
  bool uses_typing() const;
  /// The check (structop_runtime) that explains a failed call.
  Code check_spec(const model::Type& t) const;
  /// A value (lowering decided what it means) as a Python expression. Lists
  /// become tuples in signatures (immutable) and lists in dataclass factories.
  Code literal(const lower::Value& v, bool as_list) const;
};

/// A doc as the generated `__doc__`s hold it: without trailing line breaks.
std::string doc_text(std::string_view doc);

/// `getattr(v, "_value_", v)`: an enum member's value, a plain str, which
/// torch parses faster than the member (a str subclass); a str or None
/// stays as it is.
Code enum_str(const std::string& value);
/// Whether a flat call passes a leaf of this type (its type as the record
/// field declares it) as enum_str: one enum value, optional or not. (Enum
/// lists pass their members.)
/// A dynamic leaf's flat value (model::Type::dynamic): `_rt.dynamic_float(value)`
/// or `_rt.dynamic_int(value)`, the 0-dim CPU tensor the schema takes.
Code dynamic_flat(const model::Type& leaf, const Code& value);
bool passes_enum_str(const model::Type& leaf);

/// The attribute that holds a record's flat values: its leaves in slot
/// order (the values a flat call passes: enum values as enum_str, None for
/// the leaves of an absent optional record), a tuple its __init__ sets once
/// (the record is frozen), which the op functions splat instead of reading
/// each leaf. Only records with no list of records at any depth have it:
/// such a list may change after the record is made.
inline constexpr const char* kFlatAttr = "_structop_flat";
/// The attribute that holds a record's guard key: the values of its value
/// leaves (lower::RecordLayout::value_leaves) as one frozenset, or None
/// (_rt.value_key), set with kFlatAttr by records that have value leaves.
/// Traced code reads those leaves from it (_rt.traced_flat), so that Dynamo
/// guards them with one equality check.
inline constexpr const char* kKeyAttr = "_structop_key";
inline bool has_flat_tuple(const lower::RecordLayout& layout) {
  return !layout.has_record_list && !layout.leaves.empty();
}
/// `*value._structop_flat`, a record's flat values splatted into a tuple or
/// call; for an optional record (`optional`), the `leaves` Nones when it is
/// absent: `*(value._structop_flat if value is not None else (None, None))`.
Code splat_flat(const std::string& value, bool optional, size_t leaves);

/// The enums and records the IDL declares (not its includes'), each with
/// its grad record where it takes gradients.
void enum_class(CodePrinter& p, const Module& mod, const model::Enum& e);
void record_class(CodePrinter& p, const Module& mod, const model::Record& r);

/// The op's structop_runtime.Op (what the IDL says of it, as data) and the
/// typed function it decorates; before them, with records among the
/// returns, record_results.
void op_function(CodePrinter& p, const Module& mod, const lower::LoweredOp& lo);

/// For Python kernels, what structop_runtime needs to know of the op beyond
/// its schema, parameters and slot map, as keyword arguments of its Op:
/// grads, meta, backward, results, tags.
std::vector<Code> kernel_options(const Module& mod, const lower::LoweredOp& lo);

/// With records among the returns: `_<op>_results`, the flat outputs in
/// record form (the op function returns it; with `backward`, the output
/// gradients too), and `_<op>_outputs`, a Python kernel's result as the
/// flat outputs.
void record_results(CodePrinter& p, const Module& mod, const lower::LoweredOp& lo);

}  // namespace python
}  // namespace structop
