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

/// One flat parameter of the lowered schema.
struct Slot {
  std::string name;             // lowered name: `cfg__inner__w`
  std::string path;             // original path: `cfg.inner.w` (`x` for a plain parameter)
  size_t param = 0;             // index of the original parameter in model::Op::params
  std::vector<size_t> fields;   // field indices from the parameter's record to the leaf
  model::Type type;             // the leaf's type (enums stay enums; see schema_type)
  std::string schema_type;      // as in the schema: `Tensor(a!)`, `str`, `float?`
  /// What the IDL declares (the APIs apply it), in the checked model; null if none.
  const model::Default* default_value = nullptr;
  std::optional<std::string> schema_default;    // what the schema shows, when it can (rule 5)
  bool kwarg_only = false;
  bool mutated = false;
  /// A `Tensor` or `Tensor?` leaf that can receive a gradient.
  bool differentiable = false;

  bool from_record() const { return !fields.empty(); }
};

/// One output of the lowered schema.
struct Output {
  std::string name;  // may be empty
  model::Type type;
  std::string schema_type;
};

struct LoweredOp {
  size_t op = 0;               // index into model::Module::ops
  std::string qualified_name;  // `op.overload`
  std::string cpp_name;        // `op_overload`: the C++ and Python identifier
  std::vector<Slot> slots;
  std::vector<Output> outputs;
  /// For identity / listed meta: per output, the slot whose metadata it copies.
  std::vector<size_t> meta_sources;
  /// Whether the op writes to an input (`mutates:`, or `Tensor(a!)` in the
  /// func line): autograd must then bump the version counters of those inputs.
  bool writes_inputs = false;
  /// The lowered schema without namespace: `op(Tensor x, Tensor cfg__w) -> Tensor`.
  std::string schema;
};

struct LoweredModule {
  std::vector<LoweredOp> ops;  // parallel to model::Module::ops
};

}  // namespace structop::lower
