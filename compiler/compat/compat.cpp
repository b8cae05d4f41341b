#include "compat/compat.h"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "base/diagnostics.h"
#include "check/describe.h"
#include "check/names.h"
#include "lower/lowering.h"

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

namespace {

constexpr auto kFlat = ChangeClass::BreaksFlat;
constexpr auto kApi = ChangeClass::BreaksRecordApi;
constexpr auto kCompatible = ChangeClass::Compatible;

/// One version's facts that the comparison needs, found from its models.
class Side {
 public:
  explicit Side(const Version& v) : m(v.module), lo(v.lowered) {}

  const model::Module& m;
  const lower::LoweredModule& lo;

  const model::Op& op(const lower::LoweredOp& l) const { return m.ops[l.op]; }

  /// The record field a path of field indices reaches from record `decl`.
  const model::Field& field(int decl, const std::vector<size_t>& fields) const {
    const model::Field* f = nullptr;
    for (size_t i : fields) {
      f = &m.records[static_cast<size_t>(decl)].fields[i];
      decl = f->type.decl;
    }
    return *f;
  }

  /// Where slot `s` is declared: its parameter, or the leaf's record field.
  Span slot_span(const lower::LoweredOp& l, const lower::Slot& s) const {
    const model::Param& p = op(l).params[s.param];
    return s.from_record() ? field(p.type.decl, s.fields).span : p.span;
  }

  /// Where output `o` is declared: its return, or the leaf's record field.
  Span output_span(const lower::LoweredOp& l, const lower::Output& o) const {
    const model::Return& r = op(l).returns[o.ret];
    return o.fields.empty() ? r.span : field(r.type.decl, o.fields).span;
  }

  /// The leaf's type in the record API (what its field or parameter
  /// declares, without alias annotations): `Mode`, `float`.
  std::string api_type(const lower::Slot& s) const {
    model::Type t = s.from_record() ? s.declared_type : s.type;
    t.alias.reset();
    return describe_type(t, m);
  }

  /// The records a slot's path goes through: `cfg: Cfg`, `cfg.inner: Inner`.
  std::vector<std::string> record_chain(const lower::LoweredOp& l, const lower::Slot& s) const {
    std::vector<std::string> out;
    const model::Param& p = op(l).params[s.param];
    if (!p.type.is_record()) return out;
    int decl = p.type.decl;
    out.push_back(m.records[static_cast<size_t>(decl)].name);
    for (size_t k = 0; k + 1 < s.fields.size(); ++k) {
      decl = m.records[static_cast<size_t>(decl)].fields[s.fields[k]].type.decl;
      out.push_back(m.records[static_cast<size_t>(decl)].name);
    }
    return out;
  }

  /// Whether some op's slot has enum `e`'s values as a `str` argument.
  bool enum_in_schema(size_t e) const {
    for (const auto& l : lo.ops) {
      for (const auto& s : l.slots)
        if (s.type.is_enum() && static_cast<size_t>(s.type.decl) == e) return true;
    }
    return false;
  }
};

/// The schema type without alias annotation: `Tensor` for `Tensor(a!)`.
std::string base_schema_type(const model::Type& type) {
  model::Type t = type;
  t.alias.reset();
  return schema_type(t);
}

std::string quoted(const std::string& s) {
  return "`" + s + "`";
}

/// `cfg.w` (`cfg__w`), or `x` when the path is the lowered name.
std::string slot_label(const lower::Slot& s) {
  return s.path == s.name ? quoted(s.path) : fmt::format("`{}` (`{}`)", s.path, s.name);
}

class Comparison {
 public:
  Comparison(const Version& o, const Version& n) : old_(o), new_(n) {}

  std::vector<Change> run() {
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

 private:
  void add(
      ChangeClass cls,
      Span span,
      const std::string& op,
      std::string message,
      std::string hint = {}) {
    if (!op.empty()) message = fmt::format("op `{}`: {}", op, message);
    changes_.push_back({cls, span, op, std::move(message), std::move(hint)});
    slot_keys_.push_back(slot_key_);
  }

  /// A change of the op as a whole: "op `f` was removed".
  void add_op(
      ChangeClass cls,
      Span span,
      const std::string& op,
      const std::string& what,
      std::string hint = {}) {
    changes_.push_back({cls, span, op, fmt::format("op `{}` {}", op, what), std::move(hint)});
    slot_keys_.push_back(slot_key_);
  }

  // ---- ops -------------------------------------------------------------------

  void removed_op(
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

  void compare_op(const lower::LoweredOp& o, const lower::LoweredOp& n) {
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

  // Lowered arguments: torch matches an old call or saved program to the new
  // schema argument by argument, so each old argument must keep its index,
  // name, kind (positional or keyword-only), type, annotation and default;
  // new arguments come last, with a default.
  void compare_slots(const lower::LoweredOp& o, const lower::LoweredOp& n) {
    std::map<std::string, size_t> old_index, new_index;
    for (size_t i = 0; i < o.slots.size(); ++i) old_index[o.slots[i].name] = i;
    for (size_t i = 0; i < n.slots.size(); ++i) new_index[n.slots[i].name] = i;
    std::vector<bool> new_seen(n.slots.size(), false);
    adopted_params(o, n, old_index, new_seen);
    for (size_t i = 0; i < o.slots.size(); ++i) {
      const lower::Slot& os = o.slots[i];
      slot_key_ = i;
      auto it = new_index.find(os.name);
      if (it == new_index.end()) {
        // Renamed: the new argument at its index is not an old one.
        if (i < n.slots.size() && !old_index.count(n.slots[i].name)) {
          const lower::Slot& ns = n.slots[i];
          new_seen[i] = true;
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
          continue;
        }
        add(kFlat,
            old_.slot_span(o, os),
            op_,
            fmt::format("lowered argument {} at flat slot {} was removed", slot_label(os), i),
            "keep it (with a default, if callers should stop passing it), or give the new "
            "signature its own overload");
        continue;
      }
      const size_t j = it->second;
      const lower::Slot& ns = n.slots[j];
      slot_key_ = j;
      new_seen[j] = true;
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
    for (size_t j = 0; j < n.slots.size(); ++j) {
      if (new_seen[j] || old_index.count(n.slots[j].name)) continue;
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
  }

  /// Plain parameters of OLD that NEW regroups into a record parameter with
  /// pinned lowered names (adopting records, docs/evolution.md): one
  /// compatible change per record parameter; the slots keep their flat facts,
  /// compared as usual, but not their paths.
  void adopted_params(
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

  static std::string record_of_leaf(const Side& side, const model::Param& p, const lower::Slot& s) {
    int decl = p.type.decl;
    for (size_t k = 0; k + 1 < s.fields.size(); ++k)
      decl = side.m.records[static_cast<size_t>(decl)].fields[s.fields[k]].type.decl;
    return side.m.records[static_cast<size_t>(decl)].name;
  }

  /// One argument present in both versions (same name, or renamed in place).
  void compare_slot(
      const lower::LoweredOp& o,
      const lower::Slot& os,
      const lower::LoweredOp& n,
      const lower::Slot& ns) {
    const Span at = new_.slot_span(n, ns);
    const std::string label = slot_label(ns);
    const std::string old_type = base_schema_type(os.type), new_type = base_schema_type(ns.type);
    if (old_type != new_type) {
      if (new_type == old_type + "?") {
        add(kCompatible,
            at,
            op_,
            fmt::format(
                "lowered argument {} widened from `{}` to `{}`",
                label,
                old_type,
                new_type));
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
    if (!os.kwarg_only && ns.kwarg_only) {
      add(kFlat,
          at,
          op_,
          fmt::format("lowered argument {} became keyword-only: positional calls fail", label),
          "keep it positional (before `*`)");
    } else if (os.kwarg_only && !ns.kwarg_only) {
      add(kCompatible,
          at,
          op_,
          fmt::format("lowered argument {} is no longer keyword-only", label));
    }
    if (old_type != new_type && new_type != old_type + "?") {
      // A default of another type is part of the retyping already reported.
    } else if (os.schema_default && !ns.schema_default) {
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
      // Defaults only the record APIs apply (SPEC 3.5).
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
    // The record API: where the leaf is, and the types along its path.
    if (os.name == ns.name && os.path != ns.path && !adopted_slots_.count(ns.name))
      renamed_path(os, n, ns);
    if (os.path == ns.path) {
      const std::vector<std::string> oc = old_.record_chain(o, os), nc = new_.record_chain(n, ns);
      for (size_t k = 0; k < oc.size() && k < nc.size(); ++k) {
        if (oc[k] != nc[k]) renamed_type("record", oc[k], nc[k], at);
      }
      const std::string ot = old_.api_type(os), nt = new_.api_type(ns);
      if (ot != nt && old_type == new_type) {
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
                  new_type),
              "keep the declared type");
        }
      }
    }
  }

  /// A record or enum that the same leaf reaches under another name.
  void renamed_type(const char* what, const std::string& from, const std::string& to, Span at) {
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

  /// A leaf whose pinned lowered name stayed while its path changed: the
  /// part of the path that differs, reported once per op.
  void renamed_path(const lower::Slot& os, const lower::LoweredOp& n, const lower::Slot& ns) {
    std::vector<std::string> a = model::split_path(os.api_path), b = model::split_path(ns.api_path);
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

  void compare_outputs(const lower::LoweredOp& o, const lower::LoweredOp& n) {
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

  void compare_op_facts(const lower::LoweredOp& o, const lower::LoweredOp& n) {
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

  void compare_dispatch(const model::Op& oop, const model::Op& nop, Span at) {
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

  // ---- records and enums of the file ------------------------------------------

  void compare_records() {
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

  void compare_enums() {
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
                  removal == kFlat ? ": the `str` arguments it lowers to reject the old string"
                                   : ""),
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

  Side old_, new_;
  std::vector<Change> changes_;
  /// Per change, the flat slot it is about (to order an op's argument changes).
  std::vector<size_t> slot_keys_;
  size_t slot_key_ = 0;
  std::string op_;  // the op being compared
  std::set<std::string> adopted_slots_;
  std::set<std::pair<std::string, std::string>> renamed_prefixes_, renamed_types_;
  std::set<std::string> renamed_decls_;  // records and enums renamed somewhere
};

}  // namespace

std::vector<Change> compare(const Version& old_version, const Version& new_version) {
  return Comparison(old_version, new_version).run();
}

}  // namespace structop::compat
