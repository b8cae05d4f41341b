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
#include <functional>

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

/// Per parameter, how the flat call can pass it at once: its record's flat
/// values splatted (splat_flat); empty where it cannot (not a record or an
/// optional one, keyword-only, or a record without the tuple).
std::vector<Code> record_splats(const Module& mod, const lower::LoweredOp& lo) {
  const model::Op& op = mod.m.ops[lo.op];
  std::vector<Code> splats(op.params.size());
  for (size_t pi = 0; pi < op.params.size(); ++pi) {
    const model::Param& p = op.params[pi];
    if (p.kwarg_only || !(p.type.is_plain_record() || p.type.is_optional_record())) continue;
    const lower::RecordLayout& layout = mod.layout(p.type.decl);
    if (!has_flat_tuple(layout)) continue;
    splats[pi] =
        splat_flat(lo.api_params[pi].name, p.type.is_optional_record(), layout.leaves.size());
  }
  return splats;
}

/// The flat call's arguments: one per slot, or a record parameter's flat
/// values at once where `splats` (record_splats; null: none) has them;
/// keyword-only slots by name (one named like a Python keyword, `from`,
/// through `**{"from": from_}`); `lists`: list_leaves' locals.
std::vector<Code> flat_arguments(
    const lower::LoweredOp& lo,
    const std::vector<std::string>& lists,
    const std::vector<Code>* splats) {
  std::vector<Code> args, keyword_named;
  for (size_t k = 0; k < lo.slots.size(); ++k) {
    const lower::Slot& s = lo.slots[k];
    if (splats && !(*splats)[s.param].empty()) {
      args.push_back((*splats)[s.param]);
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

/// The op function's statements after the lists' loops: `args = (...)` and
/// the call of the op with it (`tuple` empty: the call alone), each `return`
/// through `results` (a record return's conversion). Where a record
/// parameter passes its flat values, first the call Dynamo traces, then the
/// eager call (one check: an `if`, which ruff lays out as printed):
///
///   if _rt.is_dynamo_compiling():
///       return (
///           _op_op.overload(x, *cfg._structop_flat)
///           if _rt.FLAT_IN_GRAPH
///           else _op_op.overload(x, cfg.w, ...)
///       )
///   args = (x, *cfg._structop_flat)
///   if _rt.has_torch_function(args):
///       return _op_op.overload(*args)
///   return _op_op.boxed(*args)
///
/// _rt.FLAT_IN_GRAPH says which of the two costs Dynamo fewer guards with
/// this torch (structop_runtime/_loading.py).
struct FlatCall {
  Code traced;  // `if _rt.is_dynamo_compiling(): return ...`, or empty
  Code tuple;
  Code call;  // the statements that call the op
};

FlatCall flat_call(
    const Module& mod,
    const lower::LoweredOp& lo,
    const std::string& handle,
    const std::vector<std::string>& lists,
    const std::function<Code(const Code&)>& results) {
  const std::vector<Code> splats = record_splats(mod, lo);
  const bool splat = std::any_of(splats.begin(), splats.end(), [](const Code& c) {
    return !c.empty();
  });
  const std::vector<Code> arguments = flat_arguments(lo, lists, &splats);
  const std::string overload = handle + ".overload";
  FlatCall out;
  if (splat) {
    out.traced = "if _rt.is_dynamo_compiling():\n    return " +
                 results(conditional(
                     call(overload, arguments),
                     "_rt.FLAT_IN_GRAPH",
                     call(overload, flat_arguments(lo, lists, nullptr))));
  }
  // Op.boxed takes positional arguments only, and an empty tuple would hide
  // an active TorchFunctionMode from has_torch_function.
  const bool boxed = !lo.slots.empty() &&
                     std::none_of(lo.slots.begin(), lo.slots.end(), [](const auto& s) {
                       return s.kwarg_only;
                     });
  if (!boxed) {
    const Code callee = splat
                            ? Code(handle + ".eager")
                            : conditional(overload, "_rt.is_dynamo_compiling()", handle + ".eager");
    out.call = "return " + results(callee + "(" + Code::list(arguments) + ")");
    return out;
  }
  const std::string& args = lo.locals.args;
  std::vector<Code> checks;
  if (!splat) checks.push_back("_rt.is_dynamo_compiling()");
  checks.push_back(call("_rt.has_torch_function", {args}));
  for (size_t i = 0; i < lo.slots.size(); ++i) {
    if (!lo.slots[i].tensor_list) continue;
    // An absent list (None) has no tensor to check.
    const Code list = lists[i].empty() ? Code(fmt::format("{}[{}] or ()", args, i))
                                       : Code(lists[i]);
    checks.push_back(call("_rt.has_torch_function", {list}));
  }
  out.tuple = args + " = " + tuple(arguments);
  const std::string spread = "(*" + args + ")";
  if (checks.size() == 1) {
    out.call = "if " + checks[0] + ":\n    return " + results(overload + spread) + "\nreturn " +
               results(handle + ".boxed" + spread);
  } else {
    out.call = "return " + results(conditional(overload, checks, handle + ".boxed") + spread);
  }
  return out;
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
  const FlatCall flat = flat_call(mod, lo, handle, lists.locals, [&](const Code& call_) {
    return lo.has_record_return ? call("_" + name + "_results", {call_}) : call_;
  });
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
       {"traced", flat.traced},
       {"flat", flat.tuple},
       {"call", flat.call},
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
