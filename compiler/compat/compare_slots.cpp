#include "compat/comparison.h"

namespace structop::compat::comparing {

void Comparison::compare_slots(const lower::LoweredOp& o, const lower::LoweredOp& n) {
  SlotIndex index;
  for (size_t i = 0; i < o.slots.size(); ++i) index.old_names[o.slots[i].name] = i;
  for (size_t i = 0; i < n.slots.size(); ++i) index.new_names[n.slots[i].name] = i;
  index.new_seen.assign(n.slots.size(), false);
  adopted_params(o, n, index.old_names, index.new_seen);
  for (size_t i = 0; i < o.slots.size(); ++i) old_slot(o, n, i, index);
  for (size_t j = 0; j < n.slots.size(); ++j) {
    if (index.new_seen[j] || index.old_names.count(n.slots[j].name)) continue;
    new_slot(n, j, index.old_names);
  }
}

void Comparison::old_slot(
    const lower::LoweredOp& o,
    const lower::LoweredOp& n,
    size_t i,
    SlotIndex& index) {
  const lower::Slot& os = o.slots[i];
  slot_key_ = i;
  auto it = index.new_names.find(os.name);
  if (it == index.new_names.end()) {
    // Renamed: the new argument at its index is not an old one.
    if (i < n.slots.size() && !index.old_names.count(n.slots[i].name)) {
      index.new_seen[i] = true;
      renamed_slot(o, os, n, n.slots[i]);
      return;
    }
    add(kFlat,
        old_.slot_span(o, os),
        op_,
        fmt::format("lowered argument {} at flat slot {} was removed", slot_label(os), i),
        "keep it (with a default, if callers should stop passing it), or give the new "
        "signature its own overload");
    return;
  }
  const size_t j = it->second;
  const lower::Slot& ns = n.slots[j];
  slot_key_ = j;
  index.new_seen[j] = true;
  if (i != j) {
    add(kFlat,
        new_.slot_span(n, ns),
        op_,
        fmt::format(
            "{} moved from flat slot {} to {}: positional calls and saved programs pass "
            "another argument there",
            quoted(ns.path == os.path ? ns.path : os.path),
            i,
            j),
        "keep the flat order: add new fields and parameters last, with a default");
  }
  compare_slot(o, os, n, ns);
}

void Comparison::renamed_slot(
    const lower::LoweredOp& o,
    const lower::Slot& os,
    const lower::LoweredOp& n,
    const lower::Slot& ns) {
  std::string hint = "keep the old name, or give the new signature its own overload";
  if (ns.from_record()) {
    const model::Param& p = new_.op(n).params[ns.param];
    hint = fmt::format(
        "pin the old name: `schema_name: {}` on field `{}.{}`",
        os.name,
        record_of_leaf(new_, p, ns),
        new_.field(p.type.decl, ns.fields).name);
  }
  add(kFlat,
      new_.slot_span(n, ns),
      op_,
      fmt::format(
          "lowered argument {} was renamed to {}: calls that pass it by name fail",
          slot_label(os),
          slot_label(ns)),
      hint);
  compare_slot(o, os, n, ns);
}

void Comparison::new_slot(
    const lower::LoweredOp& n,
    size_t j,
    const std::map<std::string, size_t>& old_index) {
  const lower::Slot& ns = n.slots[j];
  slot_key_ = j;
  bool trailing = true;
  for (size_t k = j + 1; k < n.slots.size(); ++k) trailing &= !old_index.count(n.slots[k].name);
  if (!trailing) {
    add(kFlat,
        new_.slot_span(n, ns),
        op_,
        fmt::format(
            "new lowered argument {} at flat slot {}, before existing arguments",
            slot_label(ns),
            j),
        "add the field last with a default (new fields of a record go after its last field, "
        "new parameters after the last parameter)");
  } else if (!ns.schema_default) {
    add(kFlat,
        new_.slot_span(n, ns),
        op_,
        fmt::format(
            "new lowered argument {} has no default{}: calls and saved programs that do not "
            "pass it fail",
            slot_label(ns),
            ns.default_value ? " in the schema (a positional argument after it has none)" : ""),
        ns.default_value ? "make it keyword-only (after `*`), or add it after the arguments "
                           "without default"
                         : "give it a default (`TYPE = DEFAULT`, or `default:`)");
  } else {
    add(kCompatible,
        new_.slot_span(n, ns),
        op_,
        fmt::format(
            "new lowered argument {} with default `{}`",
            slot_label(ns),
            *ns.schema_default));
  }
}

void Comparison::adopted_params(
    const lower::LoweredOp& o,
    const lower::LoweredOp& n,
    const std::map<std::string, size_t>& old_index,
    const std::vector<bool>& /*new_seen*/) {
  const model::Op& nop = new_.op(n);
  for (size_t p = 0; p < nop.params.size(); ++p) {
    if (!nop.params[p].type.is_record()) continue;
    std::vector<std::string> plain;
    bool adopted = true;
    for (const auto& s : n.slots) {
      if (s.param != p) continue;
      auto it = old_index.find(s.name);
      if (it == old_index.end()) continue;
      if (o.slots[it->second].from_record()) adopted = false;
      plain.push_back(o.slots[it->second].path);
    }
    if (!adopted || plain.empty()) continue;
    for (const auto& s : n.slots) {
      if (s.param == p) adopted_slots_.insert(s.name);
    }
    add(kCompatible,
        nop.params[p].span,
        op_,
        fmt::format(
            "{} {} {} of record parameter `{}` (`{}`); the lowered names are pinned, so the "
            "flat schema keeps {}",
            plain.size() == 1 ? "parameter" : "parameters",
            quoted_list(plain),
            plain.size() == 1 ? "is now a field" : "are now fields",
            nop.params[p].name,
            describe_type(nop.params[p].type, new_.m),
            plain.size() == 1 ? "it" : "them"));
  }
}

std::string Comparison::record_of_leaf(
    const Side& side,
    const model::Param& p,
    const lower::Slot& s) {
  int decl = p.type.decl;
  for (size_t k = 0; k + 1 < s.fields.size(); ++k)
    decl = side.m.records[static_cast<size_t>(decl)].fields[s.fields[k]].type.decl;
  return side.m.records[static_cast<size_t>(decl)].name;
}

void Comparison::compare_slot(
    const lower::LoweredOp& o,
    const lower::Slot& os,
    const lower::LoweredOp& n,
    const lower::Slot& ns) {
  const Span at = new_.slot_span(n, ns);
  const std::string label = slot_label(ns);
  const std::string old_type = base_schema_type(os.type), new_type = base_schema_type(ns.type);
  slot_type(os, ns, at, label);
  if (!os.kwarg_only && ns.kwarg_only) {
    add(kFlat,
        at,
        op_,
        fmt::format("lowered argument {} became keyword-only: positional calls fail", label),
        "keep it positional (before `*`)");
  } else if (os.kwarg_only && !ns.kwarg_only) {
    add(kCompatible, at, op_, fmt::format("lowered argument {} is no longer keyword-only", label));
  }
  // A default of another type is part of the retyping already reported.
  if (old_type == new_type || new_type == old_type + "?") slot_default(os, ns, at, label);
  // The record API: where the leaf is, and the types along its path.
  if (os.name == ns.name && os.path != ns.path && !adopted_slots_.count(ns.name))
    renamed_path(os, n, ns);
  if (os.path == ns.path) record_api_types(o, os, n, ns, at, old_type == new_type);
}

void Comparison::slot_type(
    const lower::Slot& os,
    const lower::Slot& ns,
    Span at,
    const std::string& label) {
  const std::string old_type = base_schema_type(os.type), new_type = base_schema_type(ns.type);
  if (old_type != new_type) {
    if (new_type == old_type + "?") {
      add(kCompatible,
          at,
          op_,
          fmt::format("lowered argument {} widened from `{}` to `{}`", label, old_type, new_type));
    } else if (os.type.dynamic != ns.type.dynamic) {
      // `dynamic: true` added or removed: the number travels as a 0-dim
      // tensor (or no longer does); programs saved with the other type break.
      add(kFlat,
          at,
          op_,
          fmt::format(
              "lowered argument {} {} dynamic: its type changed from `{}` to `{}`",
              label,
              ns.type.dynamic ? "became" : "is no longer",
              old_type,
              new_type),
          "saved programs (torch.export, AOTInductor) pass the old type: export them again, "
          "or give the dynamic version its own overload");
    } else {
      add(kFlat,
          at,
          op_,
          fmt::format(
              "lowered argument {} changed type from `{}` to `{}`",
              label,
              old_type,
              new_type),
          "keep the type; give the new type its own overload");
    }
  } else if (os.schema_type != ns.schema_type) {
    add(kFlat,
        at,
        op_,
        fmt::format(
            "the alias annotation of {} changed from `{}` to `{}`: what the op mutates or "
            "aliases is part of its schema",
            label,
            os.schema_type,
            ns.schema_type),
        "keep `mutates:` and the annotations; give an op with other mutations its own name or "
        "overload (an in-place form is usually `op_`)");
  }
}

void Comparison::slot_default(
    const lower::Slot& os,
    const lower::Slot& ns,
    Span at,
    const std::string& label) {
  if (os.schema_default && !ns.schema_default) {
    add(kFlat,
        at,
        op_,
        fmt::format(
            "the default `{}` of lowered argument {} was removed{}: calls and saved programs "
            "that left it out fail",
            *os.schema_default,
            label,
            ns.default_value ? " from the schema (a later positional argument has none)" : ""),
        "keep the default");
  } else if (os.schema_default && ns.schema_default && *os.schema_default != *ns.schema_default) {
    add(kFlat,
        at,
        op_,
        fmt::format(
            "the default of lowered argument {} changed from `{}` to `{}`: calls and saved "
            "programs that left it out silently get the new value",
            label,
            *os.schema_default,
            *ns.schema_default),
        "keep the old default; give the new behaviour its own overload or a new argument");
  } else if (!os.schema_default && ns.schema_default) {
    add(kCompatible,
        at,
        op_,
        fmt::format("lowered argument {} gained the default `{}`", label, *ns.schema_default));
  } else if (!os.schema_default && !ns.schema_default) {
    record_api_default(os, ns, at);
  }
}

void Comparison::record_api_default(const lower::Slot& os, const lower::Slot& ns, Span at) {
  const std::string od = os.default_value ? describe_default(*os.default_value) : "";
  const std::string nd = ns.default_value ? describe_default(*ns.default_value) : "";
  if (!od.empty() && od != nd) {
    add(kApi,
        at,
        op_,
        nd.empty() ? fmt::format(
                         "the record API's default `{}` of `{}` was removed (the schema "
                         "shows none)",
                         od,
                         ns.path)
                   : fmt::format(
                         "the record API's default of `{}` changed from `{}` to `{}` (the "
                         "schema shows none)",
                         ns.path,
                         od,
                         nd),
        "keep the old default");
  } else if (od.empty() && !nd.empty()) {
    add(kCompatible,
        at,
        op_,
        fmt::format("`{}` gained the default `{}` in the record API", ns.path, nd));
  }
}

void Comparison::record_api_types(
    const lower::LoweredOp& o,
    const lower::Slot& os,
    const lower::LoweredOp& n,
    const lower::Slot& ns,
    Span at,
    bool same_schema_type) {
  const std::vector<std::string> oc = old_.record_chain(o, os), nc = new_.record_chain(n, ns);
  for (size_t k = 0; k < oc.size() && k < nc.size(); ++k) {
    if (oc[k] != nc[k]) renamed_type("record", oc[k], nc[k], at);
  }
  const std::string ot = old_.api_type(os), nt = new_.api_type(ns);
  if (ot == nt || !same_schema_type) return;
  if (os.type.is_enum() && ns.type.is_enum()) {
    renamed_type("enum", ot, nt, at);
  } else {
    add(kApi,
        at,
        op_,
        fmt::format(
            "`{}` is a `{}` in the record API, was `{}` (the schema type `{}` is unchanged)",
            ns.path,
            nt,
            ot,
            base_schema_type(ns.type)),
        "keep the declared type");
  }
}

void Comparison::renamed_type(
    const char* what,
    const std::string& from,
    const std::string& to,
    Span at) {
  if (!renamed_types_.insert({from, to}).second) return;
  renamed_decls_.insert(from);
  for (const auto& r : new_.m.records)
    if (r.name == to) at = r.span;
  for (const auto& e : new_.m.enums)
    if (e.name == to) at = e.span;
  add(kApi,
      at,
      op_,
      fmt::format(
          "{} `{}` was renamed to `{}` (the schema is unchanged): code that names `{}` no "
          "longer compiles",
          what,
          from,
          to,
          from),
      fmt::format("keep the name `{}`", from));
}

void Comparison::renamed_path(
    const lower::Slot& os,
    const lower::LoweredOp& n,
    const lower::Slot& ns) {
  std::vector<std::string> a = os.api_segments, b = ns.api_segments;
  while (a.size() > 1 && b.size() > 1 && a.back() == b.back()) {
    a.pop_back();
    b.pop_back();
  }
  const std::string from = fmt::format("{}", fmt::join(a, ".")),
                    to = fmt::format("{}", fmt::join(b, "."));
  if (!renamed_prefixes_.insert({from, to}).second) return;
  add(kApi,
      new_.slot_span(n, ns),
      op_,
      fmt::format(
          "`{}` is now `{}` in the C++ and Python APIs; {}, so the schema is unchanged",
          from,
          to,
          from == os.api_path ? fmt::format("the lowered name `{}` is pinned", ns.name)
                              : std::string("the lowered names are pinned")),
      fmt::format("keep the name `{}`", from));
}

}  // namespace structop::compat::comparing
