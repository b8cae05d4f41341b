// The comparison of two versions of an IDL (compat/compat.h: compare) as one
// class whose member functions live in one file per concern; internal to compat/:
//   compat.cpp          run(), ops, outputs, op facts, dispatch, records and enums
//   compare_slots.cpp   parameters: lowered slots, adopted parameters, renames
#pragma once

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <set>
#include "base/diagnostics.h"
#include "check/describe.h"
#include "check/names.h"
#include "compat/compat.h"
#include "lower/lowering.h"

namespace structop::compat::comparing {

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
inline std::string base_schema_type(const model::Type& type) {
  model::Type t = type;
  t.alias.reset();
  return schema_type(t);
}

inline std::string quoted(const std::string& s) {
  return "`" + s + "`";
}

/// `cfg.w` (`cfg__w`), or `x` when the path is the lowered name.
inline std::string slot_label(const lower::Slot& s) {
  return s.path == s.name ? quoted(s.path) : fmt::format("`{}` (`{}`)", s.path, s.name);
}

class Comparison {
 public:
  Comparison(const Version& o, const Version& n) : old_(o), new_(n) {}

  std::vector<Change> run();

 private:
  void add(
      ChangeClass cls,
      Span span,
      const std::string& op,
      std::string message,
      std::string hint = {});

  /// A change of the op as a whole: "op `f` was removed".
  void add_op(
      ChangeClass cls,
      Span span,
      const std::string& op,
      const std::string& what,
      std::string hint = {});

  // ---- ops -------------------------------------------------------------------

  void removed_op(
      const lower::LoweredOp& l,
      const std::map<std::string, const lower::LoweredOp*>& new_ops);

  void compare_op(const lower::LoweredOp& o, const lower::LoweredOp& n);

  // Lowered arguments: torch matches an old call or saved program to the new
  // schema argument by argument, so each old argument must keep its index,
  // name, kind (positional or keyword-only), type, annotation and default;
  // new arguments come last, with a default.
  void compare_slots(const lower::LoweredOp& o, const lower::LoweredOp& n);

  /// Lowered names to flat slots on each side, and which new slots an old
  /// one has matched (compare_slots' bookkeeping).
  struct SlotIndex {
    std::map<std::string, size_t> old_names, new_names;
    std::vector<bool> new_seen;
  };

  /// Old slot `i`: kept (maybe moved), renamed in place, or removed.
  void old_slot(const lower::LoweredOp& o, const lower::LoweredOp& n, size_t i, SlotIndex& index);

  /// Old slot `os` whose new argument at the same index has another name.
  void renamed_slot(
      const lower::LoweredOp& o,
      const lower::Slot& os,
      const lower::LoweredOp& n,
      const lower::Slot& ns);

  /// New slot `j`, which no old slot matched: compatible only last, with a default.
  void new_slot(
      const lower::LoweredOp& n,
      size_t j,
      const std::map<std::string, size_t>& old_index);

  /// Plain parameters of OLD that NEW regroups into a record parameter with
  /// pinned lowered names (adopting records, docs/evolution.md): one
  /// compatible change per record parameter; the slots keep their flat facts,
  /// compared as usual, but not their paths.
  void adopted_params(
      const lower::LoweredOp& o,
      const lower::LoweredOp& n,
      const std::map<std::string, size_t>& old_index,
      const std::vector<bool>& /*new_seen*/);

  static std::string record_of_leaf(const Side& side, const model::Param& p, const lower::Slot& s);

  /// One argument present in both versions (same name, or renamed in place).
  void compare_slot(
      const lower::LoweredOp& o,
      const lower::Slot& os,
      const lower::LoweredOp& n,
      const lower::Slot& ns);

  /// compare_slot: the schema type and its alias annotation.
  void slot_type(const lower::Slot& os, const lower::Slot& ns, Span at, const std::string& label);

  /// compare_slot: the schema default (for a slot whose type kept or widened).
  void slot_default(
      const lower::Slot& os,
      const lower::Slot& ns,
      Span at,
      const std::string& label);

  /// The default only the record APIs apply, of a slot the schema shows none for (SPEC 3.5).
  void record_api_default(const lower::Slot& os, const lower::Slot& ns, Span at);

  /// The records along a leaf's unchanged path, and its declared type.
  void record_api_types(
      const lower::LoweredOp& o,
      const lower::Slot& os,
      const lower::LoweredOp& n,
      const lower::Slot& ns,
      Span at,
      bool same_schema_type);

  /// A record or enum that the same leaf reaches under another name.
  void renamed_type(const char* what, const std::string& from, const std::string& to, Span at);

  /// A leaf whose pinned lowered name stayed while its path changed: the
  /// part of the path that differs, reported once per op.
  void renamed_path(const lower::Slot& os, const lower::LoweredOp& n, const lower::Slot& ns);

  void compare_outputs(const lower::LoweredOp& o, const lower::LoweredOp& n);

  void compare_op_facts(const lower::LoweredOp& o, const lower::LoweredOp& n);

  void compare_dispatch(const model::Op& oop, const model::Op& nop, Span at);

  // ---- records and enums of the file ------------------------------------------

  void compare_records();

  void compare_enums();

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

}  // namespace structop::compat::comparing
