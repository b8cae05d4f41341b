#include "emit/cpp_op.h"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "emit/naming.h"

namespace structop {

CppOp::CppOp(const model::Module& module, const lower::LoweredOp& lowered, const CppTypes& types)
    : m_(module), op_(module.ops[lowered.op]), lo_(lowered), types_(types), name_(api_name(lowered.cpp_name)) {
  std::vector<model::Type> outs;
  for (const auto& o : lo_.outputs) outs.push_back(o.type);
  return_type_ = types_.return_type(outs);

  std::vector<std::string> taken;
  for (const auto& p : op_.params) taken.push_back(api_name(p.name));
  for (size_t i = 0; i < lo_.outputs.size(); ++i) {
    std::string n = !lo_.outputs[i].name.empty() ? api_name(lo_.outputs[i].name)
                    : lo_.outputs.size() == 1     ? "output"
                                                  : fmt::format("output{}", i);
    while (std::find(taken.begin(), taken.end(), n) != taken.end()) n = "out_" + n;
    taken.push_back(n);
    output_names_.push_back(n);
  }

  if (op_.dispatch.empty()) {
    kernels_.push_back({name_, "CompositeExplicitAutograd"});
  } else {
    for (const auto& key : op_.dispatch) {
      std::string lower = key;
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      kernels_.push_back({lo_.cpp_name + "_" + lower, key});
    }
  }
  for (size_t i = 0; i < lo_.slots.size(); ++i) {
    if (lo_.slots[i].differentiable) grad_slots_.push_back(i);
  }
}

std::string CppOp::qualified() const { return m_.namespace_ + "::" + lo_.qualified_name; }

std::vector<std::string> CppOp::params(bool with_defaults) const {
  // C++ default arguments only for the trailing run of parameters that all
  // have one (a keyword-only parameter without default ends the run).
  size_t first_default = op_.params.size();
  if (with_defaults) {
    while (first_default > 0) {
      const model::Param& p = op_.params[first_default - 1];
      if (!p.default_value && !p.implicit_default) break;
      --first_default;
    }
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < op_.params.size(); ++i) {
    const model::Param& p = op_.params[i];
    std::string param = types_.param_type(p.type) + " " + api_name(p.name);
    if (i >= first_default) {
      param += " = " + (p.default_value ? types_.default_value(p.type, *p.default_value) : std::string("{}"));
    }
    out.push_back(std::move(param));
  }
  return out;
}

std::string CppOp::args() const {
  std::string out;
  for (const auto& p : op_.params) out += (out.empty() ? "" : ", ") + api_name(p.name);
  return out;
}

std::vector<std::string> CppOp::output_params(const std::string& prefix) const {
  std::vector<std::string> out;
  for (size_t i = 0; i < lo_.outputs.size(); ++i) {
    out.push_back(fmt::format("const {}& {}{}", types_.output_type(lo_.outputs[i].type), prefix, output_names_[i]));
  }
  return out;
}

std::vector<std::string> setup_context_params(const CppOp& op) {
  std::vector<std::string> out = {"torch::autograd::AutogradContext* ctx"};
  for (auto& p : op.params(false)) out.push_back(std::move(p));
  for (auto& o : op.output_params("")) out.push_back(std::move(o));
  return out;
}

std::vector<std::string> backward_params(const CppOp& op) {
  std::vector<std::string> out = {"torch::autograd::AutogradContext* ctx"};
  if (op.list_output()) {
    out.push_back("const std::vector<at::Tensor>& grad_" + op.output_names()[0]);
  } else {
    for (auto& g : op.output_params("grad_")) out.push_back(std::move(g));
  }
  return out;
}

std::string signature(const std::string& head, const std::vector<std::string>& params) {
  std::string flat = head + "(";
  for (size_t i = 0; i < params.size(); ++i) flat += (i ? ", " : "") + params[i];
  flat += ")";
  if (flat.size() <= 96) return flat;
  std::string out = head + "(";
  for (size_t i = 0; i < params.size(); ++i) out += (i ? ",\n    " : "\n    ") + params[i];
  return out + ")";
}

std::vector<size_t> CppOp::grad_params() const {
  std::vector<size_t> params;
  for (size_t slot : grad_slots_) {
    size_t p = lo_.slots[slot].param;
    if (std::find(params.begin(), params.end(), p) == params.end()) params.push_back(p);
  }
  return params;
}

std::string CppOp::slot_access(const lower::Slot& s) const {
  std::string access = api_name(op_.params[s.param].name);
  const model::Type* t = &op_.params[s.param].type;
  for (size_t f : s.fields) {
    const model::Field& field = m_.records[static_cast<size_t>(t->decl)].fields[f];
    access += "." + api_name(field.name);
    t = &field.type;
  }
  return access;
}

bool CppOp::list_output() const {
  return lo_.outputs.size() == 1 && lo_.outputs[0].type.is_list();
}

}  // namespace structop
