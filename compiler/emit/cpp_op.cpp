#include "emit/cpp_op.h"

#include <fmt/format.h>

#include "emit/code_printer.h"

namespace structop {

Code spell(const CppParam& p, bool with_default) {
  Code out = p.type + " " + p.name;
  if (with_default && p.default_value) out += " = " + *p.default_value;
  return out;
}

CppOp::CppOp(const model::Module& module, const lower::LoweredOp& lowered, const CppTypes& types)
    : m_(module), op_(module.ops[lowered.op]), lo_(lowered), types_(types) {
  std::vector<model::Type> outs;
  for (const auto& r : lo_.api_returns) outs.push_back(r.type);
  return_type_ = types_.return_type(outs);
  std::vector<model::Type> flat;
  for (const auto& o : lo_.outputs) flat.push_back(o.type);
  flat_return_type_ = types_.return_type(flat);
}

std::string CppOp::qualified() const {
  return m_.namespace_ + "::" + lo_.qualified_name;
}

std::vector<CppParam> CppOp::params(bool with_defaults) const {
  std::vector<CppParam> out;
  for (const auto& p : lo_.api_params) {
    CppParam param{types_.param_type(p.type), p.name, std::nullopt};
    if (with_defaults && p.cpp_default)
      param.default_value = types_.value(p.type, *p.default_value);
    out.push_back(std::move(param));
  }
  return out;
}

std::vector<CppParam> CppOp::output_params(const std::string& prefix) const {
  std::vector<CppParam> out;
  for (const auto& r : lo_.api_returns) {
    out.push_back(
        {fmt::format("const {}&", types_.output_type(r.type)), prefix + r.name, std::nullopt});
  }
  return out;
}

std::vector<CppParam> setup_context_params(const CppOp& op) {
  std::vector<CppParam> out = {
      {"torch::autograd::AutogradContext*", op.lowered().locals.ctx, std::nullopt}};
  for (auto& p : op.params(false)) out.push_back(std::move(p));
  for (auto& o : op.output_params("")) out.push_back(std::move(o));
  return out;
}

std::vector<CppParam> backward_params(const CppOp& op) {
  std::vector<CppParam> out = {
      {"torch::autograd::AutogradContext*", op.lowered().locals.ctx, std::nullopt}};
  if (op.list_output()) {
    out.push_back(
        {"const std::vector<at::Tensor>&",
         "grad_" + op.lowered().api_returns[0].name,
         std::nullopt});
    return out;
  }
  // A returned record's gradients come as its grad record (every leaf of a
  // record a differentiable op returns is a Tensor).
  for (const auto& r : op.lowered().api_returns) {
    out.push_back(
        {fmt::format(
             "const {}&",
             r.type.is_record() ? op.types().grad_type(r.type) : op.types().output_type(r.type)),
         "grad_" + r.name,
         std::nullopt});
  }
  return out;
}

Code signature(const std::string& head, const std::vector<CppParam>& params) {
  std::vector<Code> spelled;
  for (const auto& p : params) spelled.push_back(spell(p));
  return head + "(" + Code::list(spelled) + ")";
}

bool CppOp::list_output() const {
  return lo_.api_returns.size() == 1 && lo_.api_returns[0].type.is_list();
}

std::string CppOp::needs_input_grad(const std::string& slot) const {
  // (The context's name is lowering's: `ctx` unless a parameter has it.)
  const std::string& ctx = lo_.locals.ctx;
  return lo_.has_grad_list ? "structop::needs_input_grad(" + ctx + ", " + slot + "[, item])"
                           : ctx + "->needs_input_grad(" + slot + ")";
}

}  // namespace structop
