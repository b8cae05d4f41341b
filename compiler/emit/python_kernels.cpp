// X_ops.py's glue for Python kernels: the Python-kernel facts of an op as
// keyword arguments of its structop_runtime.Op (kernel_options), and with
// records among the returns `_<op>_results` and `_<op>_outputs`. The record
// form of a kernel's arguments is the runtime's (RecordForm), from the Op's
// checks, the records' `_structop_fields` and the slot map's order.
#include <fmt/format.h>

#include "check/names.h"
#include "emit/naming.h"
#include "emit/python_emitter.h"

namespace structop {
namespace python {
namespace {

/// Flat output `k` in `_<op>_results`: `_flat[k]`, or `_flat` itself when
/// the op has one output (torch then returns it bare).
std::string flat_output(const lower::LoweredOp& lo, size_t k) {
  return lo.outputs.size() == 1 ? std::string("_flat") : fmt::format("_flat[{}]", k);
}

/// One value, or several as a tuple.
Code one_or_tuple(std::vector<Code> values) {
  return values.size() == 1 ? values[0] : tuple(std::move(values));
}

/// The record form of one op's flat outputs.
class RecordForm {
 public:
  RecordForm(const Module& mod, const lower::LoweredOp& lo) : mod_(mod), lo_(lo) {}

  /// `Stats(mean=_flat[1], var=_flat[2])`: the returned record `type` from
  /// the flat outputs `*next` on; with `grad_toggle`, `(StatsGrad if _grad
  /// else Stats)(...)`.
  Code record_result(const model::Type& type, size_t* next, bool grad_toggle) const {
    const model::Record& r = mod_.record(type);
    const lower::RecordLayout& layout = mod_.layout(type.decl);
    std::vector<Code> fields;
    for (size_t fi = 0; fi < r.fields.size(); ++fi) {
      const model::Field& f = r.fields[fi];
      const Code value = f.type.is_record() ? record_result(f.type, next, grad_toggle)
                                            : Code(flat_output(lo_, (*next)++));
      fields.push_back(layout.fields[fi].api_name + "=" + value);
    }
    std::string cls = api_name(r.name);
    if (grad_toggle)
      cls = fmt::format("({} if _grad else {})", api_name(lang::grad_record_name(r)), cls);
    return call(cls, fields);
  }

 private:
  const Module& mod_;
  const lower::LoweredOp& lo_;
};

}  // namespace

void record_results(CodePrinter& p, const Module& mod, const lower::LoweredOp& lo) {
  const model::Op& op = mod.m.ops[lo.op];
  const std::string name = api_name(lo.cpp_name);
  const RecordForm form(mod, lo);
  std::vector<Code> results, checks, outputs;
  for (const lower::ApiReturn& r : lo.api_returns) {
    size_t next = r.first_output;
    results.push_back(
        r.type.is_record() ? form.record_result(r.type, &next, op.backward)
                           : Code(flat_output(lo, r.first_output)));
    checks.push_back(
        tuple({quoted(r.name), r.type.is_record() ? api_name(mod.record(r.type).name) : "None"}));
  }
  for (const auto& o : lo.outputs) outputs.push_back(fmt::format("_r[{}]{}", o.ret, o.member_path));
  const std::string qualified = mod.m.namespace_ + "::" + lo.qualified_name;
  p.line();
  p.line();
  p.emit(
      {{"name", name},
       {"grad", op.backward ? ", _grad=False" : ""},
       {"results_doc",
        docstring(
            op.backward
                ? qualified + "'s flat outputs in record form; with _grad, its output gradients,\n"
                              "records as their grad records."
                : qualified + "'s flat outputs in record form.")},
       {"results", "return " + one_or_tuple(results)},
       {"outputs_doc",
        docstring("A Python kernel's result (record form) as torch's flat outputs.")},
       {"returned", "_r = " + call("_rt.returned", {mod.qualified(lo), "_result", tuple(checks)})},
       {"outputs", "return " + one_or_tuple(outputs)}},
      R"py(
    def _$name$_results(_flat$grad$):
        $results_doc$
        $results$


    def _$name$_outputs(_result):
        $outputs_doc$
        $returned$
        $outputs$
  )py");
}

std::vector<Code> kernel_options(const Module& mod, const lower::LoweredOp& lo) {
  const model::Op& op = mod.m.ops[lo.op];
  const std::string name = api_name(lo.cpp_name);
  std::vector<Code> options;
  if (op.backward) {
    std::vector<Code> grads;
    for (size_t si : lo.grad_slots) {
      grads.push_back(tuple({quoted(lo.slots[si].api_path), quoted(lo.slots[si].name)}));
    }
    options.push_back("grads=" + tuple(grads));
  }
  if (op.meta != model::MetaKind::Custom) {
    std::vector<Code> sources;
    for (size_t si : lo.meta_sources) sources.push_back(quoted(lo.slots[si].name));
    options.push_back("meta=" + tuple(sources));
  }
  if (op.backward) options.push_back("backward=True");
  if (lo.has_record_return)
    options.push_back("results=" + tuple({"_" + name + "_outputs", "_" + name + "_results"}));
  if (!op.tags.empty()) {
    std::vector<Code> tags;
    for (const auto& t : op.tags) tags.push_back(quoted(t));
    options.push_back("tags=" + tuple(tags));
  }
  return options;
}

}  // namespace python
}  // namespace structop
