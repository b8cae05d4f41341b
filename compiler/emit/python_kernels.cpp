// X_ops.py's glue for Python kernels (structop_runtime.python_kernels): per
// op, `<op>.annotations`, `_<op>_records` (the flat arguments torch passes
// to a Python kernel, back in record form: straight-line code, no
// reflection per call), with records among the returns `_<op>_results` and
// `_<op>_outputs`, and the call that gives the op function register_kernel,
// register_fake and register_autograd.
#include <fmt/format.h>

#include "check/names.h"
#include "emit/naming.h"
#include "emit/python_emitter.h"

namespace structop {
namespace python {
namespace {

/// A flat argument's parameter name in `_<op>_records`: the schema's name
/// (torch passes keyword-only arguments by it), or with a trailing `_` for
/// a Python keyword (structop_runtime renames such keyword arguments).
std::string flat_name(const lower::Slot& s) {
  return model::is_python_keyword(s.name) ? s.name + "_" : s.name;
}

/// The original path of the list of records that slot `s` is a leaf of
/// (`cfg.layers` for `cfg.layers.w`).
std::string list_path(const lower::Slot& s) {
  const std::vector<std::string>& parts = s.segments;
  return fmt::format(
      "{}",
      fmt::join(
          parts.begin(),
          parts.begin() + static_cast<std::ptrdiff_t>(1 + *s.list_depth),
          "."));
}

/// Flat output `k` in `_<op>_results`: `_flat[k]`, or `_flat` itself when
/// the op has one output (torch then returns it bare).
std::string flat_output(const lower::LoweredOp& lo, size_t k) {
  return lo.outputs.size() == 1 ? std::string("_flat") : fmt::format("_flat[{}]", k);
}

/// One value, or several as a tuple.
Code one_or_tuple(std::vector<Code> values) {
  return values.size() == 1 ? values[0] : tuple(std::move(values));
}

/// The record form of one op's flat arguments and outputs.
class RecordForm {
 public:
  RecordForm(const Module& mod, const lower::LoweredOp& lo)
      : mod_(mod), lo_(lo), qualified_(mod.qualified(lo)) {}

  /// The value of one leaf in record form: enums converted from their string.
  Code leaf_value(const lower::Slot& s) const {
    if (!s.type.is_enum()) return flat_name(s);
    const Code convert = call(
        s.type.is_list_or_optional_list() ? "_rt.enum_values" : "_rt.enum_value",
        {api_name(mod_.enum_of(s.type).name), flat_name(s), qualified_, quoted(s.path)});
    if (!s.type.is_optional()) return convert;
    return conditional("None", flat_name(s) + " is None", convert);
  }

  /// A list of records built from its leaves' lists, the slots from `*next`
  /// on: `[Layer(w=l0, scale=l1) for l0, l1 in _rt.zip_leaves(op, path,
  /// (("w", layers__w), ("scale", layers__scale)))]` (zip_leaves checks that
  /// the lists have one length, and names them if not).
  Code record_list_value(const model::Type& type, const std::string& path, size_t* next) const {
    const size_t first = *next;
    size_t item_next = 0;
    std::vector<std::string> names;
    std::vector<Code> leaves;
    const Code item = item_value(type, first, &item_next);
    for (size_t k = 0; k < item_next; ++k) {
      const lower::Slot& s = lo_.slots[first + k];
      names.push_back(fmt::format("l{}", k));
      leaves.push_back(tuple({quoted(s.path.substr(path.size() + 1)), flat_name(s)}));
    }
    *next = first + item_next;
    return comprehension(
        item,
        names.size() == 1 ? names[0] + "," : fmt::format("{}", fmt::join(names, ", ")),
        call("_rt.zip_leaves", {qualified_, quoted(path), tuple(leaves)}));
  }

  /// One item of a list of records from the loop variables `l<k>` (k from
  /// `*next` on; slot `first + k` is leaf k's list).
  Code item_value(const model::Type& type, size_t first, size_t* next) const {
    const model::Record& r = mod_.record(type);
    const lower::RecordLayout& layout = mod_.layout(type.decl);
    std::vector<Code> fields;
    for (size_t fi = 0; fi < r.fields.size(); ++fi) {
      const model::Field& f = r.fields[fi];
      Code value;
      if (f.type.is_record()) {
        value = item_value(f.type, first, next);
      } else {
        const lower::Slot& s = lo_.slots[first + *next];
        value = fmt::format("l{}", (*next)++);
        if (f.type.is_enum()) {
          value = call(
              "_rt.enum_value",
              {api_name(mod_.enum_of(f.type).name), value, qualified_, quoted(s.path)});
        }
      }
      fields.push_back(layout.fields[fi].api_name + "=" + value);
    }
    return call(api_name(r.name), fields);
  }

  /// A record built from its leaves, the slots from `*next` on (depth
  /// first); `path` is its original path (`cfg`, `cfg.inner`). An optional
  /// record (`R?`) is None when its leaves say so (_rt.absent checks that
  /// they agree, as the C++ runtime's structop::check_optional_record).
  Code record_value(const model::Type& type, const std::string& path, size_t* next) const {
    const model::Record& r = mod_.record(type);
    const lower::RecordLayout& layout = mod_.layout(type.decl);
    const size_t first = *next;
    std::vector<Code> fields;
    for (size_t fi = 0; fi < r.fields.size(); ++fi) {
      const model::Field& f = r.fields[fi];
      const Code value = f.type.is_record_list()
                             ? record_list_value(f.type, list_path(lo_.slots[*next]), next)
                         : f.type.is_record()
                             ? record_value(f.type, path + "." + r.fields[fi].name, next)
                             : leaf_value(lo_.slots[(*next)++]);
      fields.push_back(layout.fields[fi].api_name + "=" + value);
    }
    const Code value = call(api_name(r.name), fields);
    if (!type.is_optional_record()) return value;
    std::vector<Code> leaves, required;
    for (size_t k = 0; k < layout.leaves.size(); ++k) {
      leaves.push_back(tuple({quoted(layout.leaves[k].path), flat_name(lo_.slots[first + k])}));
    }
    for (size_t k : layout.required_leaves) required.push_back(std::to_string(k));
    return conditional(
        "None",
        call("_rt.absent", {qualified_, quoted(path), tuple(leaves), tuple(required)}),
        value);
  }

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
      cls = fmt::format("({} if _grad else {})", api_name(model::grad_record_name(r)), cls);
    return call(cls, fields);
  }

 private:
  const Module& mod_;
  const lower::LoweredOp& lo_;
  const std::string qualified_;
};

/// With records among the returns: `_<op>_results`, the flat outputs in
/// record form, and `_<op>_outputs`, a Python kernel's result as the flat
/// outputs.
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

/// What structop_runtime needs to know of the op beyond its schema, as the
/// keyword arguments of python_kernels().
std::vector<Code> kernel_options(const Module& mod, const lower::LoweredOp& lo) {
  const model::Op& op = mod.m.ops[lo.op];
  const std::string name = api_name(lo.cpp_name);
  std::vector<Code> params, options;
  for (size_t pi = 0; pi < op.params.size(); ++pi) {
    const model::Param& p = op.params[pi];
    const std::string cls = p.type.is_record() ? api_name(mod.record(p.type).name) : "";
    params.push_back(tuple(
        {quoted(lo.api_params[pi].name),
         p.type.is_record_list() ? call("_rt.ListOf", {cls})
         : p.type.is_record()    ? Code(cls)
                                 : Code("None")}));
  }
  options.push_back("params=" + tuple(params));
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

}  // namespace

void python_kernels(CodePrinter& p, const Module& mod, const lower::LoweredOp& lo) {
  const model::Op& op = mod.m.ops[lo.op];
  const std::string name = api_name(lo.cpp_name);
  const RecordForm form(mod, lo);

  std::vector<Code> annotations;
  for (const auto& a : op.annotations) annotations.push_back(quoted(a));
  p.line(name + ".annotations = " + tuple(annotations));
  if (lo.has_record_return) record_results(p, mod, lo);

  // def _op_records(x, cfg__w, cfg__scale=1.0, *, k=2):
  std::vector<Code> flat;
  bool star = false;
  for (const auto& s : lo.slots) {
    if (s.kwarg_only && !star) {
      flat.push_back("*");
      star = true;
    }
    Code spelled = flat_name(s);
    if (s.schema_default && s.value) {
      spelled += "=" + (s.value->kind == lower::Value::Kind::Enum ? Code(quoted(s.value->text))
                                                                  : mod.literal(*s.value, false));
    }
    flat.push_back(spelled);
  }
  // return ((x, Cfg(w=cfg__w, scale=cfg__scale)), {"k": k})
  std::vector<Code> args, kwargs;
  size_t next = 0;
  for (size_t pi = 0; pi < op.params.size(); ++pi) {
    const model::Param& param = op.params[pi];
    const Code value = param.type.is_record_list()
                           ? form.record_list_value(param.type, param.name, &next)
                       : param.type.is_record() ? form.record_value(param.type, param.name, &next)
                                                : form.leaf_value(lo.slots[next++]);
    if (param.kwarg_only) {
      kwargs.push_back(quoted(lo.api_params[pi].name) + ": " + value);
    } else {
      args.push_back(value);
    }
  }
  std::vector<Code> registration = {name, "_" + name + "_records", "_IDL_STEM"};
  for (Code& option : kernel_options(mod, lo)) registration.push_back(std::move(option));

  p.line();
  p.line();
  p.emit(
      {{"def", "def _" + name + "_records(" + Code::list(flat, ListKind::Params) + "):"},
       {"doc",
        docstring(
            mod.m.namespace_ + "::" + lo.qualified_name +
            "'s flat arguments, as torch passes them to a Python\n"
            "kernel, in record form: (args, kwargs).")},
       {"return", "return " + tuple({tuple(args), dict(kwargs)})},
       {"registration", call("_rt.python_kernels", registration)}},
      R"py(
    $def$
        $doc$
        $return$


    $registration$
  )py");
}

}  // namespace python
}  // namespace structop
