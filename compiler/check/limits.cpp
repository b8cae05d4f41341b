#include "check/limits.h"

#include <algorithm>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace structop {
namespace {

/// `a + b`, stopping at the largest value instead of wrapping around.
uint64_t add(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/// `a * b`, likewise.
uint64_t mul(uint64_t a, uint64_t b) {
  return b != 0 && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/// The first and last characters of a long name, for messages.
std::string abridged(const std::string& name) {
  if (name.size() <= 60) return name;
  return name.substr(0, 40) + "..." + name.substr(name.size() - 12);
}

/// `name__inner` for messages: long parts shortened, the whole at most
/// about 100 bytes.
std::string example_path(const std::string& name, const std::string& inner) {
  std::string out = name.size() <= 20 ? name : name.substr(0, 16) + "...";
  out += "__" + inner;
  if (out.size() <= 100) return out;
  out.resize(96);
  while (!out.empty() && out.back() == '.') out.pop_back();
  return out + "...";
}

class IdentifierCheck {
 public:
  explicit IdentifierCheck(Diagnostics& diags) : diags_(diags) {}

  void file(const syntax::IdlFile& f) {
    name(f.namespace_, "the namespace");
    if (f.cpp_namespace) name(*f.cpp_namespace, "the C++ namespace");
    for (const auto& e : f.enums) {
      name(e.name, "enum name");
      for (const auto& v : e.values) name(v, "enum value");
    }
    for (const auto& r : f.records) {
      name(r.name, "record name");
      for (const auto& field : r.fields) {
        name(field.name, "field name");
        if (field.schema_name) name(*field.schema_name, "schema name");
        type(field.type);
        if (field.default_value) literal(*field.default_value);
      }
    }
    for (const auto& op : f.ops) {
      name(op.sig.name, "op name");
      name(op.sig.overload, "overload name");
      for (const auto& p : op.sig.params) {
        name(p.name, "parameter name");
        type(p.type);
        if (p.default_value) literal(*p.default_value);
      }
      for (const auto& r : op.sig.returns) {
        name(r.name, "return name");
        type(r.type);
      }
      for (const auto& m : op.mutates) path(m);
      for (const auto& m : op.meta.names) path(m);
      for (const auto& d : op.dispatch) name(d, "dispatch key");
      for (const auto& t : op.tags) name(t, "tag");
    }
  }

  bool ok() const { return ok_; }

 private:
  void report(Span span, const std::string& what, size_t size, size_t limit) {
    diags_.error(
        span,
        fmt::format("{} is {} bytes long; names are limited to {} bytes", what, size, limit),
        "choose a shorter name");
    ok_ = false;
  }

  void name(const syntax::Name& n, const char* what) {
    if (n.text.size() > kMaxIdentifierLength)
      report(
          n.span,
          fmt::format("{} `{}`", what, abridged(n.text)),
          n.text.size(),
          kMaxIdentifierLength);
  }

  void type(const syntax::TypeExpr& t) {
    if (t.base.size() > kMaxIdentifierLength)
      report(
          t.span,
          fmt::format("type name `{}`", abridged(t.base)),
          t.base.size(),
          kMaxIdentifierLength);
  }

  // A default names an enum value or a constant (`causal`, `[a, b]`).
  // Nested lists are rejected later; their items are not looked at.
  void literal(const syntax::Literal& l) {
    auto check = [&](const syntax::Literal& item) {
      if (item.kind == syntax::Literal::Kind::Identifier &&
          item.string_value.size() > kMaxIdentifierLength) {
        report(
            item.span,
            fmt::format("default `{}`", abridged(item.string_value)),
            item.string_value.size(),
            kMaxIdentifierLength);
      }
    };
    check(l);
    if (l.kind == syntax::Literal::Kind::List) {
      for (const auto& item : l.items) check(item);
    }
  }

  // `mutates:` and `meta:` name parameters, field paths and lowered names.
  void path(const syntax::Name& n) {
    if (n.text.size() > kMaxLoweredNameLength)
      report(n.span, fmt::format("`{}`", abridged(n.text)), n.text.size(), kMaxLoweredNameLength);
  }

  Diagnostics& diags_;
  bool ok_ = true;
};

/// What a record (or an op parameter) flattens to.
struct Flattened {
  uint64_t leaves = 0;
  uint64_t bytes = 0;     // lowered names + kFlattenedBytesPerLeaf per leaf
  uint64_t longest = 0;   // the longest lowered name, relative to the record
  std::string example;    // that name, abridged
  bool reported = false;  // a name in it is too long, reported already
};

class FlattenedCheck {
 public:
  FlattenedCheck(const model::Module& module, Diagnostics& diags)
      : module_(module), diags_(diags) {}

  void run() {
    // Records are in dependency order: a nested record is done before.
    records_.reserve(module_.records.size());
    for (const auto& r : module_.records) {
      Flattened out;
      for (const auto& f : r.fields) {
        Flattened part = flatten(f.name, f.type);
        if (!part.reported && part.longest > kMaxLoweredNameLength) {
          report_long(f.span, fmt::format("field `{}.{}`", r.name, abridged(f.name)), part);
          part.reported = true;
        }
        merge(&out, part);
      }
      if (add_total(out.bytes, r.span, [&] { return fmt::format("record `{}`", r.name); })) return;
      records_.push_back(std::move(out));
    }
    // An op's total is all it needs; a plain parameter is one leaf named as
    // itself, never too long (its name is an identifier, checked before).
    static_assert(kMaxIdentifierLength <= kMaxLoweredNameLength);
    for (const auto& op : module_.ops) {
      uint64_t bytes = 0;
      for (const auto& p : op.params) {
        if (!p.type.is_record()) {
          bytes = add(bytes, p.name.size() + kFlattenedBytesPerLeaf);
          continue;
        }
        Flattened part = flatten(p.name, p.type);
        if (!part.reported && part.longest > kMaxLoweredNameLength) {
          report_long(
              p.span,
              fmt::format("parameter `{}` of op `{}`", abridged(p.name), op.qualified_name()),
              part);
        }
        bytes = add(bytes, part.bytes);
      }
      if (add_total(bytes, op.name_span, [&] {
            return fmt::format("op `{}`", op.qualified_name());
          }))
        return;
    }
  }

 private:
  /// A field or parameter named `name` of type `type`.
  Flattened flatten(const std::string& name, const model::Type& type) const {
    Flattened out;
    if (!type.is_record()) {
      out.leaves = 1;
      out.bytes = name.size() + kFlattenedBytesPerLeaf;
      out.longest = name.size();
      out.example = name;
      return out;
    }
    const Flattened& inner = records_.at(static_cast<size_t>(type.decl));
    const uint64_t prefix = name.size() + 2;  // `name__`
    out.leaves = inner.leaves;
    out.bytes = add(inner.bytes, mul(inner.leaves, prefix));
    out.longest = add(inner.longest, prefix);
    out.example = example_path(name, inner.example);
    out.reported = inner.reported;
    return out;
  }

  static void merge(Flattened* out, const Flattened& part) {
    out->leaves = add(out->leaves, part.leaves);
    out->bytes = add(out->bytes, part.bytes);
    out->reported |= part.reported;
    if (part.longest > out->longest) {
      out->longest = part.longest;
      out->example = part.example;
    }
  }

  void report_long(Span span, const std::string& what, const Flattened& part) {
    long_reported_ = true;
    diags_.error(
        span,
        fmt::format(
            "{} lowers to a name of {} bytes (`{}`); lowered names are limited to {} bytes",
            what,
            part.longest,
            part.example,
            kMaxLoweredNameLength),
        "shorten the field names along the path or flatten some of the nesting");
  }

  /// Adds `bytes` to the total; reports and returns true once it is over.
  /// `where()` names what reached it (spelled only for the report).
  template <typename Where>
  bool add_total(uint64_t bytes, Span span, const Where& where) {
    total_ = add(total_, bytes);
    // Names too long make the total too big as well: one error is enough.
    if (total_ <= kMaxFlattenedBytes || long_reported_) return false;
    diags_.error(
        span,
        fmt::format(
            "the records and ops of this file flatten to more than {} MiB (reached at {}); the "
            "generated code would be too large",
            kMaxFlattenedBytes >> 20,
            where()),
        fmt::format(
            "every leaf of a record or op counts its lowered name plus {} bytes; use fewer or "
            "shallower records, or split the ops into several IDL files",
            kFlattenedBytesPerLeaf));
    return true;
  }

  const model::Module& module_;
  Diagnostics& diags_;
  std::vector<Flattened> records_;
  uint64_t total_ = 0;
  bool long_reported_ = false;
};

}  // namespace

bool check_identifier_lengths(const LoadedIdl& idl, Diagnostics& diags) {
  IdentifierCheck check(diags);
  for (const auto& f : idl.files) check.file(f);
  return check.ok();
}

void check_flattened_size(const model::Module& module, Diagnostics& diags) {
  FlattenedCheck(module, diags).run();
}

}  // namespace structop
