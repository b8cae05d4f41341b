// X_ops.py's op functions: per op one structop_runtime.Op holding what the
// IDL says of the op, as data, and the typed function it decorates, which
// flattens its records in slot order and calls the op:
//
//   _op_op = _rt.Op(_IDL_STEM, "ns::op(...) -> Tensor", ((param, check), ...),
//                   {path: slot, ...}, grads=..., meta=..., backward=True)
//
//
//   @_op_op.function
//   def op(x: torch.Tensor, cfg: Cfg) -> torch.Tensor:
//       try:
//           if _rt.is_dynamo_compiling():
//               return (
//                   _op_op.overload(x, *cfg._structop_flat)
//                   if _rt.FLAT_IN_GRAPH
//                   else _op_op.overload(x, cfg.w, ...)
//               )
//           args = (x, *cfg._structop_flat)
//           if _rt.has_torch_function(args):
//               return _op_op.overload(*args)
//           return _op_op.boxed(*args)
//       except (AttributeError, TypeError, RuntimeError) as error:
//           return _op_op.failed(error, op, (x, cfg), {})
//
// A record parameter passes its record's flat values (kFlatAttr, set once by
// the record's __post_init__), leaf by leaf only where its record has none
// (a list of records inside) or the parameter is keyword-only; without
// one, the function reads each leaf and makes one conditional call:
// `(_op_op.overload if _rt.is_dynamo_compiling() or
// _rt.has_torch_function(args) else _op_op.boxed)(*args)`.
// Op.function gives the function slot_map, schema, annotations and the
// Python-kernel API; the runtime builds a Python kernel's record form from
// the same data (the checks, the records' fields, the slot map's order).
// An eager call with no __torch_function__ to honour (no tensor subclass in
// the arguments or their tensor lists, no TorchFunctionMode) calls the op's
// dispatcher entry directly (Op.boxed), skipping OpOverload.__call__'s frame
// and torch's own, costlier check; torch.compile and torch.export trace the
// OpOverload. An op with keyword-only or no arguments calls OpOverload._op
// (Op.eager), which makes the check itself. Only when the call fails does
// Op.failed bind the op (then calls the function again) or walk the
// arguments to explain which parameter or field path has the wrong type.
#include <algorithm>

#include <fmt/format.h>

#include "check/names.h"
#include "emit/naming.h"
#include "emit/python_emitter.h"

namespace structop {
namespace python {
namespace {

/// Whether the flat call passes slot `s` as enum_str: a leaf of enum type,
/// optional or in a list of records, whose value is one enum member or str.
bool enum_value_leaf(const lower::Slot& s) {
  return passes_enum_str(s.list_depth ? s.declared_type : s.type);
}

/// `(None if cfg is None or cfg.inner is None else cfg.inner.w)`: a leaf
/// below optional records (Slot::optional_at), None when one is absent.
Code optional_leaf(const lower::Slot& s, bool as_str) {
  const std::vector<std::string>& parts = s.api_segments;
  std::vector<std::string> absent;
  for (size_t k : s.optional_at) {
    absent.push_back(fmt::format(
        "{} is None",
        fmt::join(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(k + 1), ".")));
  }
  return conditional(
      "None",
      fmt::format("{}", fmt::join(absent, " or ")),
      as_str ? enum_str(s.api_path) : Code(s.api_path));
}

/// The leaves of lists of records (Slot::list_depth), one list per leaf,
/// filled by one loop per list of records (cheaper than a comprehension per
/// leaf, which builds a function and a frame):
///
///   args_1 = []
///   args_2 = []
///   for r in cfg.layers:
///       args_1.append(r.w)
///       args_2.append(getattr(r.mode, "_value_", r.mode))
struct ListLeaves {
  Code loops;                       // the statements, one per line
  std::vector<std::string> locals;  // per slot: its list's local, or empty
};

ListLeaves list_leaves(const lower::LoweredOp& lo) {
  ListLeaves out;
  out.locals.resize(lo.slots.size());
  std::vector<std::string> lists;  // the lists of records, in slot order
  std::vector<std::vector<std::pair<std::string, Code>>> appends;
  for (size_t k = 0; k < lo.slots.size(); ++k) {
    const lower::Slot& s = lo.slots[k];
    if (!s.list_depth) continue;
    const std::vector<std::string>& parts = s.api_segments;
    const auto end = parts.begin() + static_cast<std::ptrdiff_t>(1 + *s.list_depth);
    const std::string list = fmt::format("{}", fmt::join(parts.begin(), end, "."));
    const std::string item = fmt::format("{}.{}", lo.locals.item, fmt::join(end, parts.end(), "."));
    out.locals[k] = fmt::format("{}_{}", lo.locals.args, k);
    const size_t at = static_cast<size_t>(
        std::find(lists.begin(), lists.end(), list) - lists.begin());
    if (at == lists.size()) {
      lists.push_back(list);
      appends.emplace_back();
    }
    appends[at].emplace_back(out.locals[k], enum_value_leaf(s) ? enum_str(item) : Code(item));
  }
  std::vector<Code> lines;
  for (size_t l = 0; l < lists.size(); ++l) {
    for (const auto& [local, value] : appends[l]) lines.push_back(local + " = []");
    lines.push_back("for " + lo.locals.item + " in " + lists[l] + ":");
    for (const auto& [local, value] : appends[l]) {
      lines.push_back("    " + call(local + ".append", {value}));
    }
  }
  for (const Code& line : lines) out.loops += (out.loops.empty() ? Code() : Code("\n")) + line;
  return out;
}

/// A record parameter the flat call passes as its record's flat values
/// (kFlatAttr), splatted: `*cfg._structop_flat`, or for an optional record
/// `*(cfg._structop_flat if cfg is not None else (None, None))`; empty when
/// the parameter is no such record (a list of records, keyword-only, or a
/// record without the tuple).
Code flat_splat(const Module& mod, const lower::LoweredOp& lo, size_t param) {
  const model::Param& p = mod.m.ops[lo.op].params[param];
  if (p.kwarg_only || !(p.type.is_plain_record() || p.type.is_optional_record()) ||
      !has_flat_tuple(mod.layout(p.type.decl))) {
    return {};
  }
  const std::string& name = lo.api_params[param].name;
  const Code flat = name + "." + kFlatAttr;
  if (p.type.is_plain_record()) return "*" + flat;
  return "*" + conditional(
                   flat,
                   name + " is not None",
                   tuple(std::vector<Code>(mod.layout(p.type.decl).leaves.size(), "None")));
}

/// The flat call's arguments: one per slot, or (`splat_records`) a record
/// parameter's flat values at once (flat_splat); keyword-only slots by name
/// (one named like a Python keyword, `from`, through `**{"from": from_}`);
/// `lists`: list_leaves' locals.
std::vector<Code> flat_arguments(
    const Module& mod,
    const lower::LoweredOp& lo,
    const std::vector<std::string>& lists,
    bool splat_records) {
  std::vector<Code> args, keyword_named;
  for (size_t k = 0; k < lo.slots.size(); ++k) {
    const lower::Slot& s = lo.slots[k];
    if (Code splat = splat_records ? flat_splat(mod, lo, s.param) : Code(); !splat.empty()) {
      args.push_back(splat);
      while (k + 1 < lo.slots.size() && lo.slots[k + 1].param == s.param) ++k;
      continue;
    }
    const bool as_str = enum_value_leaf(s);
    const Code access = s.list_depth             ? Code(lists[k])
                        : !s.optional_at.empty() ? optional_leaf(s, as_str)
                        : as_str                 ? enum_str(s.api_path)
                                                 : Code(s.api_path);
    if (s.kwarg_only && lang::is_python_keyword(s.name)) {
      keyword_named.push_back(quoted(s.name) + ": " + access);
    } else {
      args.push_back(s.kwarg_only ? s.name + "=" + access : access);
    }
  }
  if (!keyword_named.empty()) args.push_back("**" + dict(keyword_named));
  return args;
}

/// The op function's call: `args = (...)` and the call of the op with it,
/// or the call alone (`tuple` empty); where a record parameter passes its
/// flat values, first the call Dynamo traces (`traced`, else empty):
///
///   if _rt.is_dynamo_compiling():
///       return (
///           _op_op.overload(x, *cfg._structop_flat)
///           if _rt.FLAT_IN_GRAPH
///           else _op_op.overload(x, cfg.w, ...)
///       )
///
/// _rt.FLAT_IN_GRAPH says which of the two costs Dynamo fewer guards with
/// this torch (structop_runtime/_loading.py).
struct FlatCall {
  Code traced;
  Code tuple;
  Code call;
  /// With `traced`, one check left (has_torch_function(args)): the call as
  /// statements instead, `if check: return overload(*args)`, then
  /// `return boxed(*args)` (`call` then calls boxed).
  Code check;
  Code overload;
};

bool splats_a_record(const Module& mod, const lower::LoweredOp& lo) {
  for (size_t pi = 0; pi < lo.api_params.size(); ++pi) {
    if (!flat_splat(mod, lo, pi).empty()) return true;
  }
  return false;
}

FlatCall flat_call(
    const Module& mod,
    const lower::LoweredOp& lo,
    const std::string& handle,
    const std::vector<std::string>& lists) {
  const std::vector<Code> arguments = flat_arguments(mod, lo, lists, true);
  Code traced;
  if (splats_a_record(mod, lo)) {
    const std::string overload = handle + ".overload";
    traced = conditional(
        call(overload, arguments),
        "_rt.FLAT_IN_GRAPH",
        call(overload, flat_arguments(mod, lo, lists, false)));
  }
  // Op.boxed takes positional arguments only, and an empty tuple would hide
  // an active TorchFunctionMode from has_torch_function.
  const bool boxed = !lo.slots.empty() &&
                     std::none_of(lo.slots.begin(), lo.slots.end(), [](const auto& s) {
                       return s.kwarg_only;
                     });
  if (!boxed) {
    return {
        traced,
        {},
        (traced.empty()
             ? conditional(handle + ".overload", "_rt.is_dynamo_compiling()", handle + ".eager")
             : Code(handle + ".eager")) +
            "(" + Code::list(arguments) + ")",
        {},
        {}};
  }
  const std::string& args = lo.locals.args;
  std::vector<Code> checks;
  if (traced.empty()) checks.push_back("_rt.is_dynamo_compiling()");
  checks.push_back(call("_rt.has_torch_function", {args}));
  for (size_t i = 0; i < lo.slots.size(); ++i) {
    if (!lo.slots[i].tensor_list) continue;
    // An absent list (None) has no tensor to check.
    const Code list = lists[i].empty() ? Code(fmt::format("{}[{}] or ()", args, i))
                                       : Code(lists[i]);
    checks.push_back(call("_rt.has_torch_function", {list}));
  }
  if (!traced.empty() && checks.size() == 1) {
    return {
        traced,
        args + " = " + tuple(arguments),
        handle + ".boxed(*" + args + ")",
        checks[0],
        handle + ".overload(*" + args + ")"};
  }
  return {
      traced,
      args + " = " + tuple(arguments),
      conditional(handle + ".overload", checks, handle + ".boxed") + "(*" + args + ")",
      {},
      {}};
}

/// `_rt.Op(_IDL_STEM, schema, checks, slot_map, ...)`: what the IDL says of
/// the op, as data (`doc`: the function's doc, passed where a docstring
/// would not keep it).
Code op_declaration(const Module& mod, const lower::LoweredOp& lo, const std::string& doc) {
  const model::Op& op = mod.m.ops[lo.op];
  std::vector<Code> checks, api_names, slot_map;
  bool renamed = false;
  for (size_t pi = 0; pi < op.params.size(); ++pi) {
    const model::Param& param = op.params[pi];
    checks.push_back(tuple({quoted(param.name), mod.check_spec(param.type)}));
    api_names.push_back(quoted(lo.api_params[pi].name));
    renamed |= lo.api_params[pi].name != param.name;
  }
  for (const auto& s : lo.slots) slot_map.push_back(quoted(s.path) + ": " + quoted(s.name));

  std::vector<Code> args = {
      "_IDL_STEM",
      quoted(mod.m.namespace_ + "::" + lo.schema),
      tuple(checks),
      dict(slot_map)};
  if (renamed) args.push_back("api_names=" + tuple(api_names));
  for (Code& option : kernel_options(mod, lo)) args.push_back(std::move(option));
  if (!op.annotations.empty()) {
    std::vector<Code> annotations;
    for (const auto& a : op.annotations) annotations.push_back(quoted(a));
    args.push_back("annotations=" + tuple(annotations));
  }
  // Where Python would clean a docstring's text (keeps_docstring), Op.function
  // sets `__doc__` from the text itself.
  if (!keeps_docstring(doc)) args.push_back("doc=" + quoted(doc));
  return call("_rt.Op", args);
}

}  // namespace

void op_function(CodePrinter& p, const Module& mod, const lower::LoweredOp& lo) {
  const model::Op& op = mod.m.ops[lo.op];
  const std::string name = api_name(lo.cpp_name);
  if (lo.has_record_return) record_results(p, mod, lo);

  // def op(x: torch.Tensor, cfg: WeightCfg, *, k: int = 1) -> torch.Tensor
  std::vector<Code> params, positional, keyword;
  for (const auto& param : op.params) {
    if (param.kwarg_only && keyword.empty()) params.push_back("*");
    const lower::ApiParam& api = lo.api_params[static_cast<size_t>(&param - op.params.data())];
    Code spelled = api.name + ": " + mod.hint(param.type, true);
    if (api.default_value) spelled += " = " + mod.literal(*api.default_value, false);
    params.push_back(spelled);
    // How Op.failed calls the function again: as it was called.
    if (param.kwarg_only) {
      keyword.push_back(quoted(api.name) + ": " + api.name);
    } else {
      positional.push_back(api.name);
    }
  }
  std::string doc = doc_text(op.doc);
  if (!doc.empty()) doc += "\n\n";
  doc += fmt::format(
      "Calls torch.ops.{}.{}, whose lowered schema is\n{}",
      mod.m.namespace_,
      lo.qualified_name,
      lo.schema);

  const std::string handle = "_" + name + "_op";
  const ListLeaves lists = list_leaves(lo);
  const FlatCall flat = flat_call(mod, lo, handle, lists.locals);
  const auto results = [&](const Code& call_) {
    return lo.has_record_return ? call("_" + name + "_results", {call_}) : call_;
  };
  p.line();
  p.line();
  p.emit(
      {{"op", handle + " = " + op_declaration(mod, lo, doc)},
       {"decorator", "@" + handle + ".function"},
       {"def",
        "def " + name + "(" + Code::list(params, ListKind::Params) + ") -> " + mod.return_hint(lo) +
            ":"},
       {"doc", keeps_docstring(doc) ? docstring(doc) : Code()},
       {"lists", lists.loops},
       {"traced",
        flat.traced.empty() ? Code()
                            : "if _rt.is_dynamo_compiling():\n    return " + results(flat.traced)},
       {"flat", flat.tuple},
       {"call",
        (flat.check.empty()
             ? Code()
             : "if " + flat.check + ":\n    return " + results(flat.overload) + "\n") +
            "return " + results(flat.call)},
       {"error", lo.locals.error},
       {"failed",
        "return " +
            call(handle + ".failed", {lo.locals.error, name, tuple(positional), dict(keyword)})}},
      R"py(
    $op$


    $decorator$
    $def$
        $doc$
        try:
            $lists$
            $traced$
            $flat$
            $call$
        except (AttributeError, TypeError, RuntimeError) as $error$:
            $failed$
  )py");
}

}  // namespace python
}  // namespace structop
