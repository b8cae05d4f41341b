#include "compat/compat.h"

#include "compat/comparison.h"

namespace structop::compat {

const char* class_label(ChangeClass cls) {
  switch (cls) {
    case ChangeClass::BreaksFlat:
      return "breaking: flat schema";
    case ChangeClass::BreaksRecordApi:
      return "breaking: record API";
    case ChangeClass::Compatible:
      return "compatible";
  }
  return "?";
}

namespace comparing {

std::vector<Change> Comparison::run() {
  if (old_.m.namespace_ != new_.m.namespace_) {
    add(kFlat,
        new_.m.namespace_span,
        "",
        fmt::format(
            "the namespace changed from `{}` to `{}`: every op moves (`torch.ops.{}.*` is now "
            "`torch.ops.{}.*`)",
            old_.m.namespace_,
            new_.m.namespace_,
            old_.m.namespace_,
            new_.m.namespace_),
        "keep the namespace; put new ops in a new IDL file if they need another one");
  }
  if (old_.m.cpp_namespace != new_.m.cpp_namespace) {
    add(kApi,
        new_.m.namespace_span,
        "",
        fmt::format(
            "the C++ namespace changed from `{}` to `{}`",
            old_.m.cpp_namespace,
            new_.m.cpp_namespace),
        "keep `cpp_namespace`");
  }
  std::map<std::string, const lower::LoweredOp*> new_ops;
  for (const auto& l : new_.lo.ops) new_ops[l.qualified_name] = &l;
  std::set<std::string> old_names;
  for (const auto& l : old_.lo.ops) {
    old_names.insert(l.qualified_name);
    auto it = new_ops.find(l.qualified_name);
    if (it == new_ops.end()) {
      removed_op(l, new_ops);
    } else {
      compare_op(l, *it->second);
    }
  }
  for (const auto& l : new_.lo.ops) {
    if (old_names.count(l.qualified_name)) continue;
    add_op(kCompatible, new_.op(l).name_span, l.qualified_name, "is new");
  }
  compare_records();
  compare_enums();
  return std::move(changes_);
}

void Comparison::add(
    ChangeClass cls,
    Span span,
    const std::string& op,
    std::string message,
    std::string hint) {
  if (!op.empty()) message = fmt::format("op `{}`: {}", op, message);
  changes_.push_back({cls, span, op, std::move(message), std::move(hint)});
  slot_keys_.push_back(slot_key_);
}

void Comparison::add_op(
    ChangeClass cls,
    Span span,
    const std::string& op,
    const std::string& what,
    std::string hint) {
  changes_.push_back({cls, span, op, fmt::format("op `{}` {}", op, what), std::move(hint)});
  slot_keys_.push_back(slot_key_);
}

void Comparison::removed_op(
    const lower::LoweredOp& l,
    const std::map<std::string, const lower::LoweredOp*>& new_ops) {
  const model::Op& op = old_.op(l);
  const bool other_overloads = std::any_of(new_ops.begin(), new_ops.end(), [&](const auto& kv) {
    return new_.op(*kv.second).name == op.name;
  });
  add_op(
      kFlat,
      op.name_span,
      l.qualified_name,
      op.overload.empty() || !other_overloads ? "was removed"
                                              : "was removed (an overload; others remain)",
      "keep the op (it may call a new one); give a new signature its own overload, e.g. "
      "`" +
          op.name + ".v2(...)`");
}

void Comparison::compare_op(const lower::LoweredOp& o, const lower::LoweredOp& n) {
  op_ = n.qualified_name;
  renamed_prefixes_.clear();
  renamed_types_.clear();
  adopted_slots_.clear();
  // (The record API's parameter order is the flat order's: a reordering
  // always moves lowered arguments, so it needs no rule of its own.)
  // Argument changes in NEW's flat order (removals at their old slot).
  const size_t first = changes_.size();
  compare_slots(o, n);
  std::vector<size_t> order(changes_.size() - first);
  for (size_t k = 0; k < order.size(); ++k) order[k] = first + k;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return slot_keys_[a] < slot_keys_[b];
  });
  std::vector<Change> sorted;
  for (size_t k : order) sorted.push_back(std::move(changes_[k]));
  std::move(sorted.begin(), sorted.end(), changes_.begin() + static_cast<std::ptrdiff_t>(first));
  slot_key_ = 0;
  compare_outputs(o, n);
  compare_op_facts(o, n);
}

void Comparison::compare_outputs(const lower::LoweredOp& o, const lower::LoweredOp& n) {
  const size_t common = std::min(o.outputs.size(), n.outputs.size());
  for (size_t i = 0; i < common; ++i) {
    const lower::Output &oo = o.outputs[i], &no = n.outputs[i];
    const Span at = new_.output_span(n, no);
    if (oo.schema_type != no.schema_type) {
      add(kFlat,
          at,
          op_,
          fmt::format(
              "output {} changed type from `{}` to `{}`",
              i,
              oo.schema_type,
              no.schema_type),
          "give the new return type its own overload");
    }
    if (oo.schema_type != no.schema_type) continue;
    if (oo.name != no.name) {
      add(kFlat,
          at,
          op_,
          fmt::format(
              "output {} was renamed from `{}` to `{}` in the schema",
              i,
              oo.name.empty() ? "(unnamed)" : oo.name,
              no.name.empty() ? "(unnamed)" : no.name),
          no.pinned || oo.name.empty() || no.name.empty()
              ? "keep the return's name"
              : fmt::format("keep the name, or pin it: `schema_name: {}`", oo.name));
    } else if (oo.api_path != no.api_path) {
      add(kApi,
          at,
          op_,
          fmt::format(
              "output `{}` is now `{}` in the C++ and Python APIs (the schema is unchanged)",
              oo.api_path,
              no.api_path),
          "keep the return's and fields' names");
    }
  }
  for (size_t i = common; i < n.outputs.size(); ++i) {
    add(kFlat,
        new_.output_span(n, n.outputs[i]),
        op_,
        fmt::format(
            "output {}{} was added: callers unpack a different number of results",
            i,
            n.outputs[i].name.empty() ? "" : " `" + n.outputs[i].name + "`"),
        "give the new results their own overload (`" + new_.op(n).name + ".v2`)");
  }
  for (size_t i = common; i < o.outputs.size(); ++i) {
    add(kFlat,
        old_.output_span(o, o.outputs[i]),
        op_,
        fmt::format(
            "output {}{} was removed: callers unpack a different number of results",
            i,
            o.outputs[i].name.empty() ? "" : " `" + o.outputs[i].name + "`"),
        "keep returning it, or give the new signature its own overload");
  }
}

void Comparison::compare_op_facts(const lower::LoweredOp& o, const lower::LoweredOp& n) {
  const model::Op &oop = old_.op(o), &nop = new_.op(n);
  const Span at = nop.name_span;
  if (oop.backward && !nop.backward) {
    add_op(
        kFlat,
        at,
        op_,
        "no longer has a backward (`backward: true` was removed): gradients through it fail",
        "keep `backward: true`");
  } else if (!oop.backward && nop.backward) {
    add_op(kCompatible, at, op_, "now has a backward (`backward: true`)");
  }
  compare_dispatch(oop, nop, at);
  for (const auto& t : oop.tags) {
    if (std::find(nop.tags.begin(), nop.tags.end(), t) == nop.tags.end()) {
      add(kFlat,
          at,
          op_,
          fmt::format(
              "the tag `{}` was removed: torch.compile and export read tags from the schema",
              t),
          "keep the tag");
    }
  }
  for (const auto& t : nop.tags) {
    if (std::find(oop.tags.begin(), oop.tags.end(), t) == oop.tags.end())
      add(kCompatible, at, op_, fmt::format("new tag `{}`", t));
  }
  if (oop.doc != nop.doc) add(kCompatible, at, op_, "the doc changed");
  if (oop.annotations != nop.annotations) add(kCompatible, at, op_, "the annotations changed");
}

void Comparison::compare_dispatch(const model::Op& oop, const model::Op& nop, Span at) {
  if (nop.dispatch.empty()) {
    if (!oop.dispatch.empty())
      add_op(kCompatible, at, op_, "now has one kernel for every device (was `dispatch:`)");
    return;
  }
  std::vector<std::string> lost, gained;
  if (oop.dispatch.empty()) {
    add_op(
        kFlat,
        at,
        op_,
        fmt::format(
            "now runs only on {} (was every device): calls on other devices fail",
            quoted_list(nop.dispatch)),
        "keep a kernel for every device, or list every key callers use");
    return;
  }
  for (const auto& k : oop.dispatch) {
    if (std::find(nop.dispatch.begin(), nop.dispatch.end(), k) == nop.dispatch.end())
      lost.push_back(k);
  }
  for (const auto& k : nop.dispatch) {
    if (std::find(oop.dispatch.begin(), oop.dispatch.end(), k) == oop.dispatch.end())
      gained.push_back(k);
  }
  if (!lost.empty()) {
    add_op(
        kFlat,
        at,
        op_,
        fmt::format("no longer has a kernel for {}: calls there fail", quoted_list(lost)),
        "keep those `dispatch:` keys");
  }
  if (!gained.empty())
    add_op(kCompatible, at, op_, fmt::format("has a new kernel for {}", quoted_list(gained)));
}

void Comparison::compare_records() {
  std::map<std::string, const model::Record*> now;
  for (const auto& r : new_.m.records) now[r.name] = &r;
  for (const auto& r : old_.m.records) {
    auto it = now.find(r.name);
    if (it == now.end()) {
      if (renamed_decls_.count(r.name)) continue;
      add(kApi,
          r.span,
          "",
          fmt::format("record `{}` was removed: code that names it no longer compiles", r.name),
          "keep the record");
      continue;
    }
    const model::Record& nr = *it->second;
    if (r.doc != nr.doc)
      add(kCompatible, nr.span, "", fmt::format("the doc of record `{}` changed", r.name));
    for (const auto& f : r.fields) {
      for (const auto& nf : nr.fields) {
        if (nf.name == f.name && nf.doc != f.doc) {
          add(kCompatible,
              nf.span,
              "",
              fmt::format("the doc of field `{}.{}` changed", r.name, f.name));
        }
      }
    }
  }
}

void Comparison::compare_enums() {
  std::map<std::string, size_t> now;
  for (size_t i = 0; i < new_.m.enums.size(); ++i) now[new_.m.enums[i].name] = i;
  for (const auto& e : old_.m.enums) {
    auto it = now.find(e.name);
    if (it == now.end()) {
      if (renamed_decls_.count(e.name)) continue;
      add(kApi,
          e.span,
          "",
          fmt::format("enum `{}` was removed: code that names it no longer compiles", e.name),
          "keep the enum");
      continue;
    }
    const model::Enum& ne = new_.m.enums[it->second];
    const ChangeClass removal = new_.enum_in_schema(it->second) ? kFlat : kApi;
    auto has = [](const model::Enum& en, const std::string& v) {
      return std::find(en.values.begin(), en.values.end(), v) != en.values.end();
    };
    std::set<size_t> renamed_to;
    for (size_t i = 0; i < e.values.size(); ++i) {
      const std::string& v = e.values[i];
      if (has(ne, v)) continue;
      // Renamed: the new value at its index is not an old one.
      if (i < ne.values.size() && !has(e, ne.values[i])) {
        renamed_to.insert(i);
        add(removal,
            ne.value_spans[i],
            "",
            fmt::format(
                "value `{}` of enum `{}` was renamed to `{}`{}",
                v,
                e.name,
                ne.values[i],
                removal == kFlat ? ": the `str` arguments it lowers to reject the old string" : ""),
            fmt::format("keep `{}`, and add `{}` as a new value", v, ne.values[i]));
        continue;
      }
      add(removal,
          e.value_spans[i],
          "",
          fmt::format(
              "value `{}` of enum `{}` was removed{}",
              v,
              e.name,
              removal == kFlat ? ": the `str` arguments it lowers to reject it" : ""),
          fmt::format("keep `{}` (a kernel may treat it like another value)", v));
    }
    for (size_t i = 0; i < ne.values.size(); ++i) {
      if (has(e, ne.values[i]) || renamed_to.count(i)) continue;
      add(kCompatible,
          ne.value_spans[i],
          "",
          fmt::format("new value `{}` of enum `{}`", ne.values[i], e.name));
    }
    if (e.doc != ne.doc)
      add(kCompatible, ne.span, "", fmt::format("the doc of enum `{}` changed", e.name));
  }
}

}  // namespace comparing

std::vector<Change> compare(const Version& old_version, const Version& new_version) {
  return comparing::Comparison(old_version, new_version).run();
}

}  // namespace structop::compat
