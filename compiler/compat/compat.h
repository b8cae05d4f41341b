// Phase "compat": compares two versions of an IDL (`structopc --compat OLD
// NEW`) on their checked and lowered models, op by op, and lists every change
// with its class: breaking for flat callers and saved programs (the lowered
// schema torch sees changed), breaking for the record API only (the generated
// C++ and Python APIs changed, the schema did not), or compatible. The rules
// are in docs/evolution.md; each has a breaking and a compatible pair in
// tests/compat/.
#pragma once

#include <string>
#include <vector>

#include "base/source.h"
#include "check/model.h"
#include "lower/lowered.h"

namespace structop::compat {

/// What a change means for existing users of the op.
enum class ChangeClass {
  /// Callers through torch.ops, saved torch.export programs and TorchScript
  /// models that used the old schema break or change meaning.
  BreaksFlat,
  /// The lowered schema is unchanged; code written against the generated
  /// record APIs (X.ops.h, X_ops.py) no longer compiles or runs as before.
  BreaksRecordApi,
  Compatible,
};

/// One change between OLD and NEW.
struct Change {
  ChangeClass cls = ChangeClass::Compatible;
  /// In NEW, or in OLD for what NEW no longer has.
  Span span;
  /// The op it belongs to (`name.overload`), empty for a change of the file
  /// (namespace, records, enums): `--allow` accepts an op's breaks.
  std::string op;
  std::string message;
  /// What to do instead, where a compatible form exists.
  std::string hint;
};

/// One side of the comparison: a file's checked model and its lowering.
struct Version {
  const model::Module& module;
  const lower::LoweredModule& lowered;
};

/// Every change from `old_version` to `new_version`, op by op in OLD's
/// order (then NEW's new ops), then the file's records and enums.
/// Identical inputs give no change.
std::vector<Change> compare(const Version& old_version, const Version& new_version);

/// `breaking: flat schema`, `breaking: record API`, `compatible`.
const char* class_label(ChangeClass cls);

}  // namespace structop::compat
