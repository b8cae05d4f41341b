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
/// below optional records (Slot::optional_at), None when one is absent;
/// `value` is what the leaf passes when present.
Code optional_leaf(const lower::Slot& s, const Code& value) {
  const std::vector<std::string>& parts = s.api_segments;
  std::vector<std::string> absent;
  for (size_t k : s.optional_at) {
    absent.push_back(fmt::format(
        "{} is None",
        fmt::join(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(k + 1), ".")));
  }
  return conditional("None", fmt::format("{}", fmt::join(absent, " or ")), value);
}

/// The leaves of lists of records (Slot::list_depth), one list per leaf.
/// Eagerly, a list whose records hold their flat values (kFlatAttr) is taken
/// apart in C (structop_runtime/_native.c: a tuple per flat value of its
/// records, then whether a value may define __torch_function__, or'ed over
/// the lists):
///
///   args_1, args_2, override = _rt.record_columns(cfg.layers, Layer, 2)
///   args_3, override = _rt.record_columns(cfg.heads, Head, 1, override)
///
/// Any other list, and every list that Dynamo traces (it cannot trace C),
/// by one loop per list of records (cheaper than a comprehension per leaf,
/// which builds a function and a frame):
///
///   args_1 = []
///   args_2 = []
///   for r in cfg.layers:
///       args_1.append(r.w)
///       args_2.append(getattr(r.mode, "_value_", r.mode))
struct ListLeaves {
  Code loops;    // every list's loop, one statement per line
  Code columns;  // the eager statements: record_columns where it can, else the loop
  std::vector<std::string> locals;  // per slot: its list's local, or empty
  std::vector<bool> in_columns;     // per slot: its list is taken apart by record_columns
  /// Some list is taken apart by record_columns.
  bool native() const {
    return std::find(in_columns.begin(), in_columns.end(), true) != in_columns.end();
  }
};

/// The record class of the items of the list of records that slot `s`
/// (Slot::list_depth) is a leaf of.
model::Type list_item(const Module& mod, const lower::LoweredOp& lo, const lower::Slot& s) {
  model::Type t = mod.m.ops[lo.op].params[s.param].type;
  for (size_t i = 0; i < *s.list_depth; ++i) t = mod.record(t).fields[s.fields[i]].type;
  return t.inner();
}

ListLeaves list_leaves(const Module& mod, const lower::LoweredOp& lo) {
  ListLeaves out;
  out.locals.resize(lo.slots.size());
  out.in_columns.resize(lo.slots.size());
  struct List {
    std::string expression;                             // `cfg.layers`
    std::vector<std::pair<std::string, Code>> appends;  // per leaf: its local, its value
    std::vector<size_t> slots;                          // per leaf: its slot
    model::Type item;                                   // the records' type
    bool flat = true;                                   // the leaves are the records' flat values
  };
  std::vector<List> lists;  // the lists of records, in slot order
  for (size_t k = 0; k < lo.slots.size(); ++k) {
    const lower::Slot& s = lo.slots[k];
    if (!s.list_depth) continue;
    const std::vector<std::string>& parts = s.api_segments;
    const auto end = parts.begin() + static_cast<std::ptrdiff_t>(1 + *s.list_depth);
    const std::string list = fmt::format("{}", fmt::join(parts.begin(), end, "."));
    const std::string item = fmt::format("{}.{}", lo.locals.item, fmt::join(end, parts.end(), "."));
    out.locals[k] = fmt::format("{}_{}", lo.locals.args, k);
    auto at = std::find_if(lists.begin(), lists.end(), [&](const List& l) {
      return l.expression == list;
    });
    if (at == lists.end()) {
      at = lists.insert(lists.end(), List{list, {}, {}, list_item(mod, lo, s)});
    }
    at->appends.emplace_back(out.locals[k], enum_value_leaf(s) ? enum_str(item) : Code(item));
    at->slots.push_back(k);
    at->flat = at->flat && s.optional_at.empty();
  }
  std::vector<Code> loops, columns;
  for (List& l : lists) {
    std::vector<Code> loop;
    for (const auto& [local, value] : l.appends) loop.push_back(local + " = []");
    loop.push_back("for " + lo.locals.item + " in " + l.expression + ":");
    for (const auto& [local, value] : l.appends) {
      loop.push_back("    " + call(local + ".append", {value}));
    }
    loops.insert(loops.end(), loop.begin(), loop.end());
    // The slots of a list are its records' leaves in leaf order (lowering
    // flattens each record the same way), so they are its flat values.
    const lower::RecordLayout& layout = mod.layout(l.item.decl);
    l.flat = l.flat && has_flat_tuple(layout) && !layout.has_optional_record &&
             layout.leaves.size() == l.appends.size();
    if (!l.flat) {
      columns.insert(columns.end(), loop.begin(), loop.end());
      continue;
    }
    std::vector<Code> targets,
        arguments = {l.expression, mod.hint(l.item, false), std::to_string(l.appends.size())};
    // After the first such list, each passes the flag on.
    if (out.native()) arguments.push_back(lo.locals.override);
    for (const auto& [local, value] : l.appends) targets.push_back(local);
    targets.push_back(lo.locals.override);
    for (size_t k : l.slots) out.in_columns[k] = true;
    columns.push_back(Code::list(targets) + " = " + call("_rt.record_columns", arguments));
  }
  const auto join = [](const std::vector<Code>& lines) {
    Code all;
    for (const Code& line : lines) all += (all.empty() ? Code() : Code("\n")) + line;
    return all;
  };
  out.loops = join(loops);
  out.columns = join(columns);
  return out;
}

/// Per parameter, how the flat call can pass it at once: its record's flat
/// values splatted (splat_flat); empty where it cannot (not a record or an
/// optional one, keyword-only, a record without the tuple or with a dynamic
/// leaf). `traced`:
/// for the call Dynamo traces, where a record with value leaves passes
/// them from its guard key (kKeyAttr), `*_rt.traced_flat(cfg, (2, 3))`.
std::vector<Code> record_splats(const Module& mod, const lower::LoweredOp& lo, bool traced) {
  const model::Op& op = mod.m.ops[lo.op];
  std::vector<Code> splats(op.params.size());
  for (size_t pi = 0; pi < op.params.size(); ++pi) {
    const model::Param& p = op.params[pi];
    if (p.kwarg_only || !(p.type.is_plain_record() || p.type.is_optional_record())) continue;
    const lower::RecordLayout& layout = mod.layout(p.type.decl);
    // A dynamic leaf becomes its tensor at the call, in the call's mode
    // (FakeTensorMode, a TorchDispatchMode), so the record passes it leaf by leaf.
    if (!has_flat_tuple(layout) || layout.has_dynamic_leaf) continue;
    const std::string& name = lo.api_params[pi].name;
    if (traced && p.type.is_plain_record() && !layout.value_leaves.empty()) {
      std::vector<Code> keyed;
      for (size_t leaf : layout.value_leaves) keyed.push_back(std::to_string(leaf));
      splats[pi] = "*" + call("_rt.traced_flat", {name, tuple(keyed)});
      continue;
    }
    splats[pi] = splat_flat(name, p.type.is_optional_record(), layout.leaves.size());
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
    const Code value = as_str           ? enum_str(s.api_path)
                       : s.type.dynamic ? dynamic_flat(s.type, s.api_path)
                                        : Code(s.api_path);
    const Code access = s.list_depth             ? Code(lists[k])
                        : !s.optional_at.empty() ? optional_leaf(s, value)
                                                 : value;
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
    const ListLeaves& list_leaves,
    const std::function<Code(const Code&)>& results) {
  const std::vector<std::string>& lists = list_leaves.locals;
  const std::vector<Code> splats = record_splats(mod, lo, false);
  const bool splat = std::any_of(splats.begin(), splats.end(), [](const Code& c) {
    return !c.empty();
  });
  const std::vector<Code> arguments = flat_arguments(lo, lists, &splats);
  const std::vector<Code> traced_splats = record_splats(mod, lo, true);
  const std::string overload = handle + ".overload";
  // A traced branch of its own where the eager call passes what Dynamo
  // should not read (a record's flat values, on torch < 2.13) or cannot
  // trace (record_columns).
  const bool traced = splat || list_leaves.native();
  FlatCall out;
  if (traced) {
    Code body = "if _rt.is_dynamo_compiling():";
    if (list_leaves.native()) {
      for (const Code& line : list_leaves.loops.lines()) body += "\n    " + line;
    }
    out.traced = body + "\n    return " +
                 results(
                     splat ? conditional(
                                 call(overload, flat_arguments(lo, lists, &traced_splats)),
                                 "_rt.FLAT_IN_GRAPH",
                                 call(overload, flat_arguments(lo, lists, nullptr)))
                           : call(overload, arguments));
  }
  // Op.boxed takes positional arguments only, and an empty tuple would hide
  // an active TorchFunctionMode from has_torch_function.
  const bool boxed = !lo.slots.empty() &&
                     std::none_of(lo.slots.begin(), lo.slots.end(), [](const auto& s) {
                       return s.kwarg_only;
                     });
  if (!boxed) {
    const Code callee = traced
                            ? Code(handle + ".eager")
                            : conditional(overload, "_rt.is_dynamo_compiling()", handle + ".eager");
    out.call = "return " + results(callee + "(" + Code::list(arguments) + ")");
    return out;
  }
  const std::string& args = lo.locals.args;
  std::vector<Code> checks;
  if (!traced) checks.push_back("_rt.is_dynamo_compiling()");
  if (list_leaves.native()) checks.push_back(lo.locals.override);
  checks.push_back(call("_rt.has_torch_function", {args}));
  for (size_t i = 0; i < lo.slots.size(); ++i) {
    if (!lo.slots[i].tensor_list || list_leaves.in_columns[i]) continue;
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
  const ListLeaves lists = list_leaves(mod, lo);
  const FlatCall flat = flat_call(mod, lo, handle, lists, [&](const Code& call_) {
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
       {"lists", lists.native() ? Code() : lists.loops},
       {"traced", flat.traced},
       {"columns", lists.native() ? lists.columns : Code()},
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
            $columns$
            $flat$
            $call$
        except (AttributeError, TypeError, RuntimeError) as $error$:
            $failed$
  )py");
}

}  // namespace python
}  // namespace structop
