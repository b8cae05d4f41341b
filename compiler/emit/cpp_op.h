// The C++ view of one lowered op, shared by the three C++ emitters (header,
// source, stubs): lowering decided the names, kernels, grad slots and
// defaults; this spells them as C++ types and parameters.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "check/model.h"
#include "emit/code_printer.h"
#include "emit/cpp_types.h"
#include "lower/lowered.h"

namespace structop {

/// One C++ parameter: `const at::Tensor& x = {}`.
struct CppParam {
  std::string type;
  std::string name;
  std::optional<Code> default_value;  // a C++ expression
};

/// `type name` or `type name = default`.
Code spell(const CppParam& p, bool with_default = true);

/// The C++ view of one lowered op.
class CppOp {
 public:
  CppOp(const model::Module& module, const lower::LoweredOp& lowered, const CppTypes& types);

  const model::Op& op() const { return op_; }
  const lower::LoweredOp& lowered() const { return lo_; }
  const lower::CppNames& names() const { return lo_.names; }

  /// `op` / `op_overload`: the C++ identifier.
  const std::string& name() const { return lo_.cpp_name; }
  /// `demo::op.overload` as the dispatcher names it (for messages).
  std::string qualified() const;

  /// The record-form parameters: `const at::Tensor& x`, `const WeightCfg& cfg`;
  /// with `with_defaults`, the C++ default arguments lowering allows.
  std::vector<CppParam> params(bool with_defaults) const;
  /// The return type: `at::Tensor`, `void`, `std::tuple<...>`, a record.
  const std::string& return_type() const { return return_type_; }
  /// The dispatcher's return type for the flat outputs (a returned record's
  /// leaves each an element of the tuple).
  const std::string& flat_return_type() const { return flat_return_type_; }
  const CppTypes& types() const { return types_; }
  /// `const at::Tensor& sum`, `const Stats& stats` (names prefixed).
  std::vector<CppParam> output_params(const std::string& prefix) const;

  /// The forward kernels the user writes.
  const std::vector<lower::Kernel>& kernels() const { return lo_.kernels; }
  const std::vector<size_t>& grad_slots() const { return lo_.grad_slots; }
  const std::vector<size_t>& grad_params() const { return lo_.grad_params; }

  /// How a backward asks whether grad slot `slot` (a C++ expression) needs a
  /// gradient: `ctx->needs_input_grad(slot)`, or with a list grad slot
  /// `structop::needs_input_grad(ctx, slot[, item])` (its per-item form).
  std::string needs_input_grad(const std::string& slot) const;

  /// A backward with a single `Tensor[]` output takes all output grads as one vector.
  bool list_output() const;

 private:
  const model::Module& m_;
  const model::Op& op_;
  const lower::LoweredOp& lo_;
  const CppTypes& types_;
  std::string return_type_;
  std::string flat_return_type_;
};

/// setup_context's parameters: ctx, the inputs in record form, the outputs.
std::vector<CppParam> setup_context_params(const CppOp& op);
/// backward's parameters: ctx and one gradient per output (or one vector).
std::vector<CppParam> backward_params(const CppOp& op);

/// `head(a, b)`, the parameters a list the printer lays out (code_printer.h).
Code signature(const std::string& head, const std::vector<CppParam>& params);

}  // namespace structop
