#include "check/resolver_impl.h"

namespace structop::resolving {

void Resolver::order_records() {
  std::map<const syntax::RecordDecl*, int> state;  // 1 = on stack, 2 = done
  struct Frame {
    const syntax::RecordDecl* record;
    size_t next_field;  // the field being visited is fields[next_field - 1]
  };
  std::vector<Frame> stack;
  auto finish = [&](const syntax::RecordDecl* r) {
    state[r] = 2;
    auto it = symbols_.find(r->name.text);
    if (it != symbols_.end() && it->second.record_decl == r) {
      it->second.index = static_cast<int>(record_order_.size());
      record_order_.push_back(r);
    }
  };
  for (const auto& file : idl_.files) {
    for (const auto& root : file.records) {
      if (state[&root] != 0) continue;
      state[&root] = 1;
      stack.push_back({&root, 0});
      while (!stack.empty()) {
        Frame& top = stack.back();
        const syntax::RecordDecl* r = top.record;
        if (top.next_field == r->fields.size()) {
          finish(r);
          stack.pop_back();
          continue;
        }
        const syntax::FieldDecl& f = r->fields[top.next_field++];
        const Symbol* s = lookup(f.type.base);
        if (!s || s->kind != Symbol::Kind::Record) continue;
        const syntax::RecordDecl* dep = s->record_decl;
        int& dep_state = state[dep];
        if (dep_state == 1) {
          std::string path;
          bool on = false;
          for (const Frame& frame : stack) {
            if (frame.record == dep) on = true;
            if (!on) continue;
            const syntax::FieldDecl& via = frame.record->fields[frame.next_field - 1];
            path += fmt::format("{}.{} -> ", frame.record->name.text, via.name.text);
          }
          path += dep->name.text;
          diags_.error(
              f.type.span,
              fmt::format("record `{}` contains itself: {}", dep->name.text, path),
              "records are values and cannot nest themselves; break the cycle");
          cyclic_.insert(&f);
          continue;
        }
        if (dep_state == 2) continue;
        dep_state = 1;
        stack.push_back({dep, 0});  // invalidates `top`
      }
    }
  }
}

void Resolver::resolve_enums() {
  for (const auto& file : idl_.files) {
    for (const auto& e : file.enums) {
      auto found = symbols_.find(e.name.text);
      // A duplicate or a reserved name, already reported.
      if (found == symbols_.end() || found->second.enum_decl != &e) continue;
      Symbol& sym = found->second;
      model::Enum out;
      out.name = e.name.text;
      out.cpp_namespace = cpp_namespace_of(file);
      out.doc = e.doc;
      out.span = e.name.span;
      out.from_include = &file != &idl_.files.back();
      out.include = include_index(&file);
      if (e.values.empty() && !e.incomplete) {
        diags_.error(
            e.name.span,
            fmt::format("enum `{}` has no values", e.name.text),
            "list at least one value, e.g. `[a, b]`");
      }
      std::map<std::string, Span> seen;
      for (const auto& v : e.values) {
        auto [it, fresh] = seen.emplace(v.text, v.span);
        if (!fresh) {
          diags_.error(
              v.span,
              fmt::format("enum `{}` lists `{}` twice", e.name.text, v.text),
              "remove the duplicate value");
          diags_.note(it->second, "first listed here");
          continue;
        }
        out.values.push_back(v.text);
        out.value_spans.push_back(v.span);
      }
      // A broken enum stays unresolved (index -1): its uses are skipped
      // quietly instead of reporting "unknown type" or bad defaults.
      if (!e.incomplete && !out.values.empty()) sym.index = static_cast<int>(module_->enums.size());
      module_->enums.push_back(std::move(out));
    }
  }
}

void Resolver::resolve_records() {
  module_->records.resize(record_order_.size());
  record_broken_.assign(record_order_.size(), false);
  record_depth_.assign(record_order_.size(), 1);
  record_leaves_.assign(record_order_.size(), 0);
  for (size_t i = 0; i < record_order_.size(); ++i) resolve_record(i);
}

void Resolver::resolve_record(size_t i) {
  const syntax::RecordDecl* r = record_order_[i];
  const Symbol& sym = symbols_.at(r->name.text);
  model::Record& out = module_->records[i];
  out.name = r->name.text;
  out.cpp_namespace = cpp_namespace_of(*sym.file);
  out.doc = r->doc;
  out.span = r->name.span;
  out.from_include = sym.file != &idl_.files.back();
  out.include = include_index(sym.file);
  out.all_defaulted = true;
  // A broken record (problems already reported) is kept out of ops and
  // other records quietly: the first report is the useful one.
  bool broken = r->incomplete;
  if (r->fields.empty() && !r->incomplete) {
    diags_.error(
        r->name.span,
        fmt::format("record `{}` has no fields", r->name.text),
        "add at least one field");
    broken = true;
  }
  for (const auto& f : r->fields) {
    std::optional<model::Field> field = resolve_field(*r, f);
    if (!field) {
      out.all_defaulted = false;
      broken = true;
      continue;
    }
    add_leaf_facts(i, f, *field, broken);
    out.fields.push_back(std::move(*field));
  }
  if (record_leaves_[i] > kMaxLoweredParams && !broken) {
    diags_.error(
        r->name.span,
        fmt::format(
            "record `{}` has more than {} leaf fields (counting every nested record)",
            r->name.text,
            kMaxLoweredParams),
        "nested records are copied into each field that uses them; pass big data as a Tensor");
    broken = true;
  }
  record_broken_[i] = broken;
}

std::optional<model::Field> Resolver::resolve_field(
    const syntax::RecordDecl& r,
    const syntax::FieldDecl& f) {
  if (cyclic_.count(&f)) return std::nullopt;
  const Subject what = Subject::field(r.name.text, f.name.text);
  auto type = resolve_type(f.type, Use::Field, what);
  if (!type) return std::nullopt;
  model::Field field;
  field.name = f.name.text;
  field.doc = f.doc;
  field.span = f.name.span;
  field.type = std::move(*type);
  if (f.schema_name) {
    if (field.type.is_record()) {
      // A record field has no slot of its own: its leaves do.
      diags_.error(
          f.schema_name->span,
          fmt::format(
              "{} is a record (`{}`): it has no lowered parameter whose name `schema_name` "
              "could pin",
              what.str(),
              describe_type(field.type, *module_)),
          fmt::format(
              "pin the names of the leaf fields of `{}` instead",
              module_->records[static_cast<size_t>(field.type.decl)].name));
    } else {
      field.schema_name = f.schema_name;
    }
  }
  if (f.dynamic && !mark_dynamic(field.type, *f.dynamic, what)) return std::nullopt;
  if (f.default_value) {
    field.default_value = check_default(
        field.type,
        *f.default_value,
        what,
        f.default_is_yaml_string,
        *module_,
        diags_);
    field.bad_default = !field.default_value;
  }
  return field;
}

void Resolver::add_leaf_facts(
    size_t i,
    const syntax::FieldDecl& f,
    const model::Field& field,
    bool& broken) {
  model::Record& out = module_->records[i];
  if (!field.type.is_record()) {
    out.has_tensor_leaf |= field.type.holds_tensor();
    out.takes_grad |= field.type.takes_grad();
    out.all_defaulted &= field.default_value.has_value();
    record_leaves_[i] = std::min(record_leaves_[i] + 1, kLeafCountCap);
    return;
  }
  // Records are ordered, so nested records are complete.
  size_t inner_index = static_cast<size_t>(field.type.decl);
  const model::Record& inner = module_->records[inner_index];
  out.has_tensor_leaf |= inner.has_tensor_leaf;
  out.takes_grad |= inner.takes_grad;
  // A list of records needs a default of its own (`[]`).
  // An optional one is required without one (`= None`).
  out.all_defaulted &= (inner.all_defaulted && field.type.is_plain_record()) ||
                       field.default_value.has_value();
  record_depth_[i] = std::max(record_depth_[i], record_depth_[inner_index] + 1);
  record_leaves_[i] = std::min(record_leaves_[i] + record_leaves_[inner_index], kLeafCountCap);
  if (record_depth_[i] > kMaxRecordDepth && !broken) {
    diags_.error(
        f.type.span,
        fmt::format(
            "{}: records nest more than {} levels deep here",
            Subject::field(out.name, f.name.text),
            kMaxRecordDepth),
        "flatten some of the nesting");
    broken = true;
  }
}

}  // namespace structop::resolving
