// The lowered model: each op as torch's dispatcher sees it (a flat schema)
// plus the slot map that ties every flat parameter back to the original
// parameter or record field it came from. Emitters read this and the
// checked model; tests and tools read it through `--emit json`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check/model.h"

namespace structop::lower {

/// A default value, typed: lowering decides what a default means once
/// (`int[2] x=1` is the list `[1, 1]`, ATen's `Mean` is the int 1, an enum
/// value is its index), and each emitter prints it in its own language.
struct Value {
  enum class Kind {
    None,      // `None`
    Bool,      // bool_value
    Int,       // int_value
    Float,     // text: the literal as written (`1e-5`, `.5`), valid in C++ and Python
    Str,       // text: the string's value
    Enum,      // decl (Module::enums), text: the value's name
    Constant,  // constant_type (ScalarType, Layout, MemoryFormat), text: canonical name (`float32`)
    Device,    // text: `cpu`, `cuda:0`
    List,      // items
    Record,    // decl (Module::records); items and given, see below
  };
  Kind kind = Kind::None;
  bool bool_value = false;
  int64_t int_value = 0;
  std::string text;
  int decl = -1;
  model::Builtin constant_type = model::Builtin::ScalarType;
  /// List: the items. Record: empty when every field keeps the default its
  /// record declares (`{}`); else one value per field of the record, what
  /// the default gives it (set, or declared: an all-defaulted record field
  /// without a default of its own is a Record value with no items), and in
  /// `given` whether the default sets it (`{w_scale: 2.0}` sets one).
  std::vector<Value> items;
  std::vector<bool> given;
};

/// The typed value of `d`, a default that fits `type` (checked); `module`
/// gives the fields of a record default.
Value typed_default(const model::Module& module, const model::Type& type, const model::Default& d);

/// One leaf of a record, the same for every parameter of that record type.
struct RecordLeaf {
  std::vector<size_t> fields;  // field indices from the record down to the leaf
  std::string path;            // `inner.w`
  std::string name;            // `inner__w`: the schema's spelling after `param__`
  /// `name` is a field's `schema_name:`, the whole lowered name (no `param__`).
  bool pinned = false;
  /// Inside a list-of-records field: how many of `fields` lie above the list
  /// (1: `fields[0]` is the list field); `type` is then a list.
  std::optional<size_t> list_depth;
  model::Type type;
  /// `path`'s segments, `inner`, `w`: emitters never split `path`.
  std::vector<std::string> segments;
};

/// One field of a record, with the leaves it flattens to.
struct RecordField {
  std::string api_name;  // `from_` for a keyword
  std::optional<Value> default_value;
  size_t first_leaf = 0;  // into RecordLayout::leaves
  size_t leaf_count = 0;
};

/// How a record flattens: its leaves depth first, and which of them each
/// field covers.
struct RecordLayout {
  std::vector<RecordLeaf> leaves;
  std::vector<RecordField> fields;  // parallel to model::Record::fields
  /// Some leaf is an enum: unflattening it can fail and names the leaf's path.
  bool has_enum_leaf = false;
  /// Some leaf is dynamic (model::Type::dynamic): unflattening it reads a
  /// 0-dim tensor and names the leaf's path when that is wrong.
  bool has_dynamic_leaf = false;
  /// Some field (at any depth) is a list of records: unflattening checks
  /// that its leaves' lists have one length, and names them if not.
  bool has_record_list = false;
  /// Some field (at any depth) is an optional record: unflattening checks
  /// that its leaves agree, and names them if not.
  bool has_optional_record = false;
  /// Some leaf takes a gradient (model::Type::takes_grad): the record has a grad record.
  bool takes_grad = false;
  /// The leaves that are never None when the record is given (a type that is
  /// not optional, outside optional records inside it), in leaf order. When
  /// the record is optional (`R?`), the first is its presence witness: the
  /// record is absent exactly when that leaf is None, and then every leaf
  /// must be None; when it is present, every one of these must be given.
  std::vector<size_t> required_leaves;
  /// The leaves that hold one value compared with `==` (int, float, bool,
  /// str or an enum, optional or not; not SymInt, which torch.compile may
  /// make symbolic, not dynamic, which it must not guard, and not in a
  /// list), in leaf order. The Python record
  /// guards them under torch.compile as one value (`_structop_key`).
  std::vector<size_t> value_leaves;
  /// The Python record's `__init__`: its `self` parameter and its local,
  /// named so that no field (a parameter there) hides them.
  struct InitNames {
    std::string self;  // `self`
    std::string flat;  // `flat`: the flat values
  } init;
  /// The C++ call API's flatten_<R> (lang::flatten_name), which pushes the
  /// record's leaves: its parameters, named so that they hide no record or
  /// enum (a leaf in a list of records spells its record's type).
  struct FlattenNames {
    std::string stack;  // `stack`: the structop::CallStack
    std::string value;  // `value`: the record
  } flatten;
};

/// One flat parameter of the lowered schema.
struct Slot {
  std::string name;  // lowered name: `cfg__inner__w`
  /// `name` is pinned by the leaf field's `schema_name:` (not built from the path).
  bool pinned = false;
  /// A parameter named like a Python keyword (`from`): `name` is the APIs'
  /// spelling, `from_`, since torch.fx binds a custom op's arguments by name
  /// and cannot bind a keyword (torch.compile, opcheck).
  bool python_keyword = false;
  /// Its C++ spelling: `cfg_inner_w` (unique in the op, no `__`). A plain
  /// parameter's, like its api_path and segments, is made with the API
  /// facts (LowerOptions::api_facts; --check does not need them).
  std::string cpp_name;
  std::string path;      // original path: `cfg.inner.w` (`x` for a plain parameter)
  std::string api_path;  // the same as the C++ and Python APIs spell it (`from` -> `from_`)
  /// The segments of `path` and `api_path` (`cfg`, `inner`, `w`): emitters
  /// take these and never split a dotted path. Made with the API facts
  /// (LowerOptions::api_facts; --check does not need them).
  std::vector<std::string> segments;
  std::vector<std::string> api_segments;
  size_t param = 0;            // index of the original parameter in model::Op::params
  std::vector<size_t> fields;  // field indices from the parameter's record to the leaf
  /// A leaf of a list of records: how many of `fields` lie above the list
  /// (0: the parameter is the list `Rec[] cfgs`; 1: `fields[0]` is a list
  /// field, ...). `type` is then the leaf's type as a list (`Tensor` ->
  /// `Tensor[]`), one item per record of the list.
  std::optional<size_t> list_depth;
  /// Below optional records (`R?`), where they are: k means the value
  /// reached after k of `fields` (0: the parameter `R? cfg` itself; 1: the
  /// field `fields[0]`, `cfg.inner: Inner?`). Then `type` is optional (`w:
  /// Tensor` gives `Tensor?`), None when any of them is absent.
  std::vector<size_t> optional_at;
  model::Type type;  // the leaf's type (enums stay enums; see schema_type)
  /// The type its record field declares: `type` before a list of records or
  /// an optional record above it made it a list or optional.
  model::Type declared_type;
  /// As in the schema: `Tensor(a!)`, `str`, `float?`. Printed with the
  /// schema (LowerOptions::keep_ops; --check does not print it).
  std::string schema_type;
  /// What the IDL declares (the APIs apply it), in the checked model; null if none.
  const model::Default* default_value = nullptr;
  std::optional<std::string>
      schema_default;  // what the schema shows, when it can (see apply_schema_defaults)
  bool kwarg_only = false;
  /// Listed in the op's `mutates:` (print_schema gives it a fresh `(x!)`).
  bool mutated = false;
  /// The op writes it: `mutated`, or declared with a write alias (`Tensor(a!)`).
  bool written = false;
  /// The default as a value, when there is one.
  std::optional<Value> value;
  /// A `Tensor`, `Tensor?`, `Tensor[]` or `Tensor?[]` leaf that can receive
  /// a gradient (model::Type::takes_grad, the one rule).
  bool takes_grad = false;
  /// A takes_grad list (`Tensor[]`, `Tensor?[]`): one graph edge and one
  /// gradient per tensor of the list, their number known per call.
  bool grad_list = false;
  /// A list (or optional list) of tensors (`Tensor[]`, `Tensor?[]`,
  /// `Tensor[]?`): torch looks for __torch_function__ on each of its items,
  /// so the Python function checks them too before its unchecked call.
  bool tensor_list = false;

  bool from_record() const { return !fields.empty(); }
};

/// One output of the lowered schema: a return of the IDL, or one leaf of a
/// returned record (`-> Stats stats` gives `Tensor stats__mean, Tensor
/// stats__var`; unnamed, `Tensor mean, Tensor var`).
struct Output {
  std::string name;  // may be empty
  /// `name` is pinned by the leaf field's `schema_name:`.
  bool pinned = false;
  model::Type type;
  std::string schema_type;     // printed with the schema, as Slot::schema_type
  size_t ret = 0;              // index of the IDL's return (model::Op::returns, ApiReturn)
  std::vector<size_t> fields;  // a record leaf: field indices from the record down to it
  std::string api_path;        // `stats.mean` in the APIs (ApiReturn::name for a plain return)
  std::string member_path;     // the same below the record, `.mean` (empty for a plain return)
};

/// A return of the record-form APIs (kernels, C++ call API, Python).
struct ApiReturn {
  /// Its name in the C++ and Python APIs: the IDL name, else `output` /
  /// `output0`, `output1`..., never one of the op's parameter names.
  std::string name;
  model::Type type;         // a plain record, or the output's type
  size_t first_output = 0;  // into LoweredOp::outputs
  size_t output_count = 1;  // the record's leaves
};

/// A parameter of the record-form APIs (C++ call API, kernels, Python).
struct ApiParam {
  std::string name;  // `from_` for a keyword
  model::Type type;
  /// What the APIs fill in when the caller leaves it out: the IDL default, or
  /// Kind::Record for an implicitly defaulted record; none when required.
  std::optional<Value> default_value;
  bool kwarg_only = false;
  /// In the trailing run of defaulted parameters, so C++ can give it a
  /// default argument.
  bool cpp_default = false;
};

/// One forward kernel the user writes: `op` (every device), or one per
/// `dispatch:` key (`op_cpu` for CPU).
struct Kernel {
  std::string name;
  std::optional<std::string> dispatch_key;  // none: registered for every device
};

/// The C++ names generated for one op; none contains `__` (reserved in C++).
/// Composed names move a trailing `_` of the op's name to the end:
/// `scale_` gives `scale_meta_`.
struct CppNames {
  std::string meta;           // kernels::<op>_meta (`meta: custom`)
  std::string setup_context;  // kernels::<op>_setup_context
  std::string backward;       // kernels::<op>_backward
  std::string grads;          // <op>_grads: what backward returns
  std::string grad_slot;      // <op>_grad_slot: index of each grad slot
  std::string adapter;        // op_<op>: the generated adapter (X.ops.cpp)
};

/// The generated functions' own parameters and locals that a parameter or
/// output could hide: numbered where one takes their name (`ctx2`). Made
/// with the API facts (LowerOptions::api_facts), like every name here.
struct LocalNames {
  std::string ctx;    // `ctx`: setup_context's and backward's AutogradContext*
  std::string error;  // `error`: the caught exception in the Python function
  std::string args;   // `args`: the Python function's flat arguments, a tuple
  /// `r`: the Python function's loop variable over a list of records; the
  /// list of a leaf across it is the local `<args>_<k>` (k: its slot's index).
  std::string item;
  /// `override`: the eager call's flag from _rt.record_columns: some value of
  /// the lists of records may define __torch_function__.
  std::string override;
  /// `stack`: the C++ call API function's structop::CallStack.
  std::string stack;
};

struct LoweredOp {
  size_t op = 0;  // index into model::Module::ops
  /// `op.overload` and `op_overload` (the C++ and Python identifier); set
  /// for the ops kept (LowerOptions::keep_ops).
  std::string qualified_name;
  std::string cpp_name;
  CppNames names;
  LocalNames locals;
  std::vector<Slot> slots;
  std::vector<Output> outputs;
  std::vector<ApiReturn> api_returns;  // parallel to model::Op::returns
  /// Some return is a record: the adapter flattens the kernels' results.
  bool has_record_return = false;
  std::vector<ApiParam> api_params;  // parallel to model::Op::params
  std::vector<Kernel> kernels;
  /// The slots that take a gradient, in slot order (the graph node's edges:
  /// one per slot, or one per tensor of a grad_list slot).
  std::vector<size_t> grad_slots;
  /// Some grad slot is a list (Slot::grad_list).
  bool has_grad_list = false;
  /// The parameters holding at least one grad slot, in parameter order.
  std::vector<size_t> grad_params;
  /// For identity / listed meta: per output, the slot whose metadata it copies.
  std::vector<size_t> meta_sources;
  /// Whether the op writes to an input (`mutates:`, or `Tensor(a!)` in the
  /// func line): autograd must then bump the version counters of those inputs.
  bool writes_inputs = false;
  /// The lowered schema without namespace: `op(Tensor x, Tensor cfg__w) -> Tensor`.
  std::string schema;
};

struct LoweredModule {
  std::vector<RecordLayout> records;  // parallel to model::Module::records
  std::vector<LoweredOp> ops;         // parallel to model::Module::ops
};

/// lang::join_identifier (lang/api_names.h).
std::string join_identifier(const std::vector<std::string>& parts);

}  // namespace structop::lower
