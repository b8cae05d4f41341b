// Per-op facts the three C++ emitters (header, source, stubs) share: the
// spelled signature of the record-form API, output and kernel names, the
// tensor slots that take part in autograd.
#pragma once

#include <string>
#include <vector>

#include "check/model.h"
#include "emit/cpp_types.h"
#include "lower/lowered.h"

namespace structop {

/// One kernel the user writes for an op's forward: `op` (all devices) or
/// `op_cpu` for `dispatch: [CPU]`.
struct CppKernel {
  std::string name;          // `op`, `op_cpu`
  std::string dispatch_key;  // `CompositeExplicitAutograd`, `CPU`, ...
};

/// The C++ view of one lowered op.
class CppOp {
 public:
  CppOp(const model::Module& module, const lower::LoweredOp& lowered, const CppTypes& types);

  const model::Op& op() const { return op_; }
  const lower::LoweredOp& lowered() const { return lo_; }

  /// `op` / `op_overload`: the C++ identifier.
  const std::string& name() const { return name_; }
  /// `demo::op.overload` as the dispatcher names it (for messages).
  std::string qualified() const;

  /// The record-form parameters: `const at::Tensor& x`, `const WeightCfg& cfg`,
  /// with C++ default arguments for a trailing run of defaulted parameters.
  std::vector<std::string> params(bool with_defaults) const;
  /// The argument list forwarding those parameters: `x, cfg`.
  std::string args() const;
  /// The return type: `at::Tensor`, `void`, `std::tuple<...>`.
  std::string return_type() const { return return_type_; }

  /// Output names for setup_context: named returns keep their name, else
  /// `output` / `output0`, `output1`...
  const std::vector<std::string>& output_names() const { return output_names_; }
  /// `const at::Tensor& sum`, `const at::Tensor& prod`.
  std::vector<std::string> output_params(const std::string& prefix) const;

  /// The forward kernels the user writes.
  const std::vector<CppKernel>& kernels() const { return kernels_; }

  /// Indices of the slots that take part in autograd (Tensor / Tensor? leaves).
  const std::vector<size_t>& grad_slots() const { return grad_slots_; }
  /// The original parameters that hold at least one grad slot.
  std::vector<size_t> grad_params() const;

  /// The C++ expression reading a slot from record-form arguments: `cfg.inner.w`.
  std::string slot_access(const lower::Slot& s) const;

  /// A backward with a single `Tensor[]` output takes all output grads as one vector.
  bool list_output() const;

 private:
  const model::Module& m_;
  const model::Op& op_;
  const lower::LoweredOp& lo_;
  const CppTypes& types_;
  std::string name_;
  std::string return_type_;
  std::vector<std::string> output_names_;
  std::vector<CppKernel> kernels_;
  std::vector<size_t> grad_slots_;
};

/// setup_context's parameters: ctx, the inputs in record form, the outputs.
std::vector<std::string> setup_context_params(const CppOp& op);
/// backward's parameters: ctx and one gradient per output (or one vector).
std::vector<std::string> backward_params(const CppOp& op);

/// `head(a, b)`, or one parameter per line when that is longer than a line.
std::string signature(const std::string& head, const std::vector<std::string>& params);

}  // namespace structop
