#include "load/idl_reader.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "base/duplicates.h"
#include "base/quote.h"
#include "load/mapping_walker.h"
#include "syntax/schema_parser.h"

namespace structop {
namespace {

using load::MappingWalker;
using syntax::Name;
// Keys and keywords are compared as `"..."sv`: lengths first, no strlen.
using namespace std::string_view_literals;

/// The keys each mapping of the IDL may have (empty: any name).
const std::vector<std::string> kFileKeys =
    {"namespace", "cpp_namespace", "include", "doc", "enums", "records", "ops"};
const std::vector<std::string> kEnumKeys = {"values", "doc"};
const std::vector<std::string> kRecordKeys = {"fields", "doc"};
const std::vector<std::string> kFieldKeys = {"type", "default", "doc", "schema_name", "dynamic"};
const std::vector<std::string> kOpKeys =
    {"func", "mutates", "dynamic", "backward", "meta", "dispatch", "tags", "annotations", "doc"};
const std::vector<std::string> kAnyKey = {};

class IdlReader {
 public:
  IdlReader(const YamlDocument& doc, int file_id, Diagnostics& diags)
      : doc_(doc), file_id_(file_id), diags_(diags), walker_(doc, diags) {}

  void read(syntax::IdlFile* out) {
    out->file_id = file_id_;
    const YamlNode& root = doc_.node(doc_.root);
    if (!root.is_mapping()) {
      diags_.error(
          root.span,
          fmt::format("an IDL file must be a mapping, found {}", describe(root)),
          "start the file with `namespace: NAME`");
      return;
    }
    bool has_namespace = false;
    bool clean =
        walker_.walk(root, kFileKeys, "the file", [&](const Name& key, const YamlNode& value) {
          if (key.text == "namespace"sv) {
            has_namespace = true;  // a bad one is reported by read_identifier
            read_identifier(value, "namespace", &out->namespace_);
          } else if (key.text == "cpp_namespace"sv) {
            Name ns;
            if (read_cpp_namespace(value, &ns)) out->cpp_namespace = ns;
          } else if (key.text == "include"sv) {
            read_includes(value, &out->includes);
          } else if (key.text == "doc"sv) {
            read_doc(value, &out->doc);
          } else if (key.text == "enums"sv) {
            read_enums(value, &out->enums);
          } else if (key.text == "records"sv) {
            read_records(value, &out->records);
          } else if (key.text == "ops"sv) {
            read_ops(value, &out->ops);
          }
        });
    if (!has_namespace && clean) {
      diags_.error(
          Span{file_id_, root.span.line, root.span.column, 1},
          "missing required key `namespace`",
          "add `namespace: NAME`; the ops become torch.ops.NAME.*");
    }
  }

 private:
  // ---- scalars -------------------------------------------------------------

  bool expect_scalar(const YamlNode& node, const char* what) {
    if (node.is_scalar()) return true;
    if (node.alias) return false;  // already reported
    diags_.error(
        node.span,
        fmt::format("{} must be a single value, found {}", what, describe(node)));
    return false;
  }

  bool read_identifier(const YamlNode& node, const char* what, Name* out) {
    if (!expect_scalar(node, what)) return false;
    if (!is_identifier(node.value)) {
      diags_.error(
          node.span,
          fmt::format("{} `{}` is not a valid identifier", what, node.value),
          "use letters, digits and `_`, not starting with a digit");
      return false;
    }
    *out = Name{node.value, node.span};
    return true;
  }

  bool read_cpp_namespace(const YamlNode& node, Name* out) {
    if (!expect_scalar(node, "cpp_namespace")) return false;
    std::string_view s = node.value;
    size_t start = 0;
    while (true) {
      size_t end = s.find("::", start);
      if (!is_identifier(s.substr(start, end == std::string_view::npos ? end : end - start))) {
        diags_.error(
            node.span,
            fmt::format("cpp_namespace `{}` is not a C++ namespace name", s),
            "use identifiers separated by `::`, e.g. `mylib::ops`");
        return false;
      }
      if (end == std::string_view::npos) break;
      start = end + 2;
    }
    *out = Name{node.value, node.span};
    return true;
  }

  void read_doc(const YamlNode& node, std::string* out) {
    if (node.kind == YamlNode::Kind::Null) return;
    if (!expect_scalar(node, "doc")) return;
    if (out) *out = node.value;
  }

  bool read_bool(const YamlNode& node, const char* what, bool* out) {
    if (node.alias) return false;
    if (node.is_scalar() && !node.quoted) {
      if (node.value == "true"sv || node.value == "True"sv) return *out = true, true;
      if (node.value == "false"sv || node.value == "False"sv) return *out = false, true;
    }
    diags_.error(
        node.span,
        fmt::format(
            "{} must be `true` or `false`, found {}",
            what,
            node.is_scalar() ? "`" + node.value + "`" : describe(node)));
    return false;
  }

  /// A list of names; a single scalar is accepted as a one-element list.
  void read_name_list(const YamlNode& node, const char* what, std::vector<Name>* out) {
    if (node.is_scalar()) {
      out->push_back({node.value, node.span});
      return;
    }
    if (!node.is_sequence()) {
      if (!node.alias)
        diags_.error(node.span, fmt::format("{} must be a list, found {}", what, describe(node)));
      return;
    }
    for (int child : doc_.children(node)) {
      const YamlNode& item = doc_.node(child);
      if (expect_scalar(item, what)) out->push_back({item.value, item.span});
    }
  }

  static syntax::TextOrigin origin_of(const YamlNode& node) { return {node.span, node.verbatim}; }

  /// `annotations:`: a list of strings, passed on to tools as they are. A
  /// plain scalar that YAML reads as another type (`1`, `true`, `null`) is
  /// not a string to every YAML reader, so it must be quoted.
  void read_annotations(const YamlNode& node, std::vector<std::string>* out) {
    if (node.alias) return;  // already reported
    if (!node.is_sequence()) {
      diags_.error(
          node.span,
          fmt::format("`annotations` must be a list of strings, found {}", describe(node)),
          node.is_scalar() && short_printable(node.value)
              ? fmt::format("write a list: `annotations: [{}]`", yaml_quoted(node.value))
              : std::string("write a list of strings: `annotations: [\"text\", ...]`"));
      return;
    }
    for (int child : doc_.children(node)) {
      const YamlNode& item = doc_.node(child);
      if (item.alias) continue;
      if (item.is_scalar() && (item.quoted || !yaml_non_string(item.value))) {
        out->push_back(item.value);
        continue;
      }
      if (item.is_scalar()) {
        diags_.error(
            item.span,
            fmt::format(
                "an annotation must be a string, found `{}`, which YAML reads as {}",
                item.value,
                yaml_non_string(item.value)),
            fmt::format("quote it: {}", yaml_quoted(item.value)));
      } else if (item.kind == YamlNode::Kind::Null) {
        diags_.error(
            item.span,
            "an annotation must be a string, found null (an empty item, `~` or `null`)",
            "remove the item, or quote the text: \"null\"");
      } else {
        diags_.error(
            item.span,
            fmt::format("an annotation must be a string, found {}", describe(item)),
            "write each annotation as one string (structured data as text, e.g. "
            "\"key=value\")");
      }
    }
  }

  /// What YAML's core schema reads a plain scalar as, if not a string:
  /// "a null", "a boolean", "a number"; else null.
  static const char* yaml_non_string(std::string_view v) {
    if (v.empty() || v == "~" || v == "null" || v == "Null" || v == "NULL") return "a null";
    for (const char* b : {"true", "True", "TRUE", "false", "False", "FALSE"}) {
      if (v == b) return "a boolean";
    }
    return yaml_number(v) ? "a number" : nullptr;
  }

  /// A YAML 1.2 core schema int or float: `1`, `-2`, `0x1f`, `0o17`, `1.5`,
  /// `.5`, `1e-5`, `.inf`, `-.Inf`, `.nan`.
  static bool yaml_number(std::string_view v) {
    auto digits = [](std::string_view s, auto is_digit) {
      return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) {
        return is_digit(static_cast<unsigned char>(c));
      });
    };
    auto decimal = [](unsigned char c) { return std::isdigit(c) != 0; };
    if (v.size() > 2 && v[0] == '0' && (v[1] == 'x' || v[1] == 'o')) {
      return v[1] == 'x'
                 ? digits(v.substr(2), [](unsigned char c) { return std::isxdigit(c) != 0; })
                 : digits(v.substr(2), [](unsigned char c) { return c >= '0' && c <= '7'; });
    }
    std::string_view s = v;
    if (!s.empty() && (s[0] == '-' || s[0] == '+')) s.remove_prefix(1);
    for (const char* special : {".inf", ".Inf", ".INF"}) {
      if (s == special) return true;
    }
    if (v == ".nan" || v == ".NaN" || v == ".NAN") return true;
    // [0-9]* (. [0-9]*)? ([eE] [-+]? [0-9]+)?, with a digit before the exponent.
    size_t i = 0;
    bool mantissa = false;
    while (i < s.size() && decimal(s[i])) ++i, mantissa = true;
    if (i < s.size() && s[i] == '.') {
      ++i;
      while (i < s.size() && decimal(s[i])) ++i, mantissa = true;
    }
    if (!mantissa) return false;
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (i < s.size() && (s[i] == '-' || s[i] == '+')) ++i;
      if (!digits(s.substr(i), decimal)) return false;
      i = s.size();
    }
    return i == s.size();
  }

  /// Short printable ASCII, which a hint may quote.
  static bool short_printable(std::string_view text) {
    return text.size() <= 60 &&
           std::all_of(text.begin(), text.end(), [](char c) { return c >= 0x20 && c < 0x7f; });
  }

  /// `text` as a double-quoted YAML string, for hints.
  static std::string yaml_quoted(std::string_view text) {
    std::string out = "\"";
    for (char c : text) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    return out + "\"";
  }

  // ---- sections ------------------------------------------------------------

  void read_includes(const YamlNode& node, std::vector<Name>* out) {
    read_name_list(node, "include", out);
  }

  void read_enums(const YamlNode& node, std::vector<syntax::EnumDecl>* out) {
    if (!node.is_mapping()) {
      if (node.kind != YamlNode::Kind::Null) {  // (an alias is Null)
        diags_.error(
            node.span,
            fmt::format("`enums` must be a mapping of enum names, found {}", describe(node)),
            "write `enums: {Mode: [a, b]}`");
      }
      return;
    }
    walker_.walk(node, kAnyKey, "enums", [&](const Name& name, const YamlNode& value) {
      syntax::EnumDecl e;
      if (!check_decl_name(name, "enum")) return;
      e.name = name;
      // From here on the enum is kept even if broken (marked incomplete), so
      // its uses do not also report "unknown type".
      const YamlNode* values = &value;
      if (value.is_mapping()) {
        values = nullptr;
        bool clean = walker_.walk(
            value,
            kEnumKeys,
            fmt::format("enum `{}`", name.text).c_str(),
            [&](const Name& key, const YamlNode& v) {
              if (key.text == "values"sv)
                values = &v;
              else
                read_doc(v, &e.doc);
            });
        if (!values) {
          if (clean) {
            diags_.error(
                name.span,
                fmt::format("enum `{}` has no `values`", name.text),
                "write `values: [a, b]`");
          }
          e.incomplete = true;
          out->push_back(std::move(e));
          return;
        }
      }
      if (values->alias) {
        e.incomplete = true;
      } else if (
          values->kind == YamlNode::Kind::Null ||
          (values->is_sequence() && doc_.children(*values).empty())) {
        // The checker reports empty enums (with the decl), so keep it.
      } else if (!values->is_sequence()) {
        diags_.error(
            values->span,
            fmt::format(
                "values of enum `{}` must be a list of names, found {}",
                name.text,
                describe(*values)),
            "write `[a, b, c]`");
        e.incomplete = true;
      } else {
        for (int child : doc_.children(*values)) {
          const YamlNode& item = doc_.node(child);
          Name v;
          if (read_identifier(item, "enum value", &v)) {
            e.values.push_back(v);
          } else {
            e.incomplete = true;
          }
        }
      }
      out->push_back(std::move(e));
    });
  }

  bool check_decl_name(const Name& name, const char* what) {
    if (is_identifier(name.text)) return true;
    diags_.error(
        name.span,
        fmt::format("{} name `{}` is not a valid identifier", what, name.text),
        "use letters, digits and `_`, not starting with a digit");
    return false;
  }

  void read_records(const YamlNode& node, std::vector<syntax::RecordDecl>* out) {
    if (!node.is_mapping()) {
      if (node.kind != YamlNode::Kind::Null) {
        diags_.error(
            node.span,
            fmt::format("`records` must be a mapping of record names, found {}", describe(node)));
      }
      return;
    }
    walker_.walk(node, kAnyKey, "records", [&](const Name& name, const YamlNode& value) {
      if (!check_decl_name(name, "record")) return;
      syntax::RecordDecl r;
      r.name = name;
      // From here on the record is kept even if broken (marked incomplete),
      // so its uses do not also report "unknown type".
      if (!value.is_mapping()) {
        diags_.error(
            value.kind == YamlNode::Kind::Null ? name.span : value.span,
            fmt::format(
                "record `{}` must be a mapping with `fields`, found {}",
                name.text,
                describe(value)),
            "write `fields: {name: TYPE, ...}`");
        r.incomplete = true;
        out->push_back(std::move(r));
        return;
      }
      bool has_fields = false;
      bool clean = walker_.walk(
          value,
          kRecordKeys,
          fmt::format("record `{}`", name.text).c_str(),
          [&](const Name& key, const YamlNode& v) {
            if (key.text == "doc"sv) {
              read_doc(v, &r.doc);
            } else {
              has_fields = true;
              if (!read_fields(r.name, v, &r.fields)) r.incomplete = true;
            }
          });
      if (!has_fields) {
        if (clean) {
          diags_.error(
              name.span,
              fmt::format("record `{}` has no `fields`", name.text),
              "write `fields: {name: TYPE, ...}`");
        }
        r.incomplete = true;
      }
      out->push_back(std::move(r));
    });
  }

  /// Reads the fields of `record`; false if any could not be read (reported).
  bool read_fields(const Name& record, const YamlNode& node, std::vector<syntax::FieldDecl>* out) {
    if (!node.is_mapping()) {
      if (node.alias) return false;
      diags_.error(
          node.span,
          fmt::format(
              "fields of record `{}` must be a mapping, found {}",
              record.text,
              describe(node)),
          "write `fields: {name: TYPE, ...}`");
      return false;
    }
    std::string where = fmt::format("fields of record `{}`", record.text);
    bool all_read = true;
    bool clean =
        walker_.walk(node, kAnyKey, where.c_str(), [&](const Name& name, const YamlNode& value) {
          if (!check_decl_name(name, "field")) {
            all_read = false;
            return;
          }
          syntax::FieldDecl f;
          f.name = name;
          std::string what = fmt::format("field `{}.{}`", record.text, name.text);
          bool ok = false;
          if (value.is_scalar()) {
            ok = syntax::parse_field_spec(
                value.value,
                origin_of(value),
                diags_,
                &f.type,
                &f.default_value,
                what);
          } else if (value.is_mapping()) {
            ok = read_long_field(record, value, &f);
          } else if (value.kind == YamlNode::Kind::Null) {
            diags_.error(
                name.span,
                fmt::format("{} has no type", what),
                "write `name: TYPE` or `name: TYPE = DEFAULT`");
          } else {
            diags_.error(
                value.span,
                fmt::format(
                    "{} must be `TYPE`, `TYPE = DEFAULT` or a mapping, found {}",
                    what,
                    describe(value)),
                "for a list type write `T[]`");
          }
          if (ok) {
            out->push_back(std::move(f));
          } else {
            all_read = false;
          }
        });
    return all_read && clean;
  }

  bool read_long_field(const Name& record, const YamlNode& node, syntax::FieldDecl* f) {
    const YamlNode* type = nullptr;
    const YamlNode* def = nullptr;
    const YamlNode* pin = nullptr;
    bool dynamic = false;
    bool dynamic_read = true;
    const std::string what = fmt::format("field `{}.{}`", record.text, f->name.text);
    bool clean =
        walker_.walk(node, kFieldKeys, what.c_str(), [&](const Name& key, const YamlNode& v) {
          if (key.text == "type"sv)
            type = &v;
          else if (key.text == "default"sv)
            def = &v;
          else if (key.text == "schema_name"sv)
            pin = &v;
          else if (key.text == "dynamic"sv) {
            dynamic_read = read_bool(v, "dynamic", &dynamic);
            if (dynamic) f->dynamic = v.span;
          } else
            read_doc(v, &f->doc);
        });
    if (!clean || !dynamic_read)
      return false;  // e.g. `defualt:`; reported, and the field would be wrong without it
    if (!type || type->kind == YamlNode::Kind::Null) {
      diags_.error(
          type ? type->span : f->name.span,
          fmt::format("{} has no type", what),
          "add `type: TYPE`");
      return false;
    }
    if (!expect_scalar(*type, "a field type")) return false;
    std::optional<syntax::Literal> none;
    if (!syntax::parse_field_spec(type->value, origin_of(*type), diags_, &f->type, &none, what))
      return false;
    if (none) {
      diags_.error(
          none->span,
          "in the long form the default goes under `default:`",
          fmt::format("write `default: {}`", none->text));
      return false;
    }
    if (pin) {
      if (!expect_scalar(*pin, "`schema_name`")) return false;
      if (!is_identifier(pin->value)) {
        diags_.error(
            pin->span,
            fmt::format("{}: `schema_name` `{}` is not a valid identifier", what, pin->value),
            "use letters, digits and `_`, not starting with a digit (a lowered parameter name)");
        return false;
      }
      f->schema_name = Name{pin->value, pin->span};
    }
    if (def) {
      f->default_is_yaml_string = def->is_scalar() && def->quoted;
      auto lit = read_default(*def, what);
      if (!lit) return false;
      f->default_value = std::move(*lit);
    }
    return true;
  }

  /// A long-form default: a schema literal, a quoted YAML string (the string
  /// itself; its schema spelling is re-quoted), a YAML list (`[1, 2]`) or a
  /// YAML mapping (`{w_scale: 2.0}`, a record default).
  std::optional<syntax::Literal> read_default(const YamlNode& node, const std::string& what) {
    if (node.is_sequence()) return read_list_default(node, what);
    if (node.is_mapping()) return read_record_default(node, what);
    if (node.kind == YamlNode::Kind::Null) {
      diags_.error(
          node.span,
          fmt::format("{} has an empty default", what),
          "write `None` for an optional field");
      return std::nullopt;
    }
    if (!expect_scalar(node, "a default value")) return std::nullopt;
    if (node.quoted) {
      syntax::Literal lit;
      lit.kind = syntax::Literal::Kind::String;
      lit.string_value = node.value;
      lit.text = schema_string_literal(node.value);
      lit.span = node.span;
      return lit;
    }
    return syntax::parse_literal(node.value, origin_of(node), diags_, what);
  }

  /// A long-form record default written as a YAML mapping: field names to
  /// defaults of any form (YAML's own nesting limit bounds the recursion).
  std::optional<syntax::Literal> read_record_default(
      const YamlNode& node,
      const std::string& what) {
    syntax::Literal record;
    record.kind = syntax::Literal::Kind::Record;
    record.span = node.span;
    bool ok = true;
    const std::string where = fmt::format("the default of {}", what);
    ok &= walker_.walk(node, kAnyKey, where.c_str(), [&](const Name& key, const YamlNode& value) {
      auto lit = read_default(value, what);
      if (!lit) {
        ok = false;
        return;
      }
      record.keys.push_back(key);
      record.items.push_back(std::move(*lit));
    });
    if (!ok) return std::nullopt;
    record.text = "{";
    for (size_t i = 0; i < record.items.size(); ++i)
      record.text += (i ? ", " : "") + record.keys[i].text + ": " + record.items[i].text;
    record.text += "}";
    return record;
  }

  /// A long-form default written as a YAML list; each item is a default of
  /// the forms read_default takes, but not a list.
  std::optional<syntax::Literal> read_list_default(const YamlNode& node, const std::string& what) {
    syntax::Literal list;
    list.kind = syntax::Literal::Kind::List;
    list.span = node.span;
    for (int child : doc_.children(node)) {
      const YamlNode& item = doc_.node(child);
      std::optional<syntax::Literal> lit;
      if (!item.is_sequence()) {  // a YAML list is not read: its items would be reported first
        lit = read_default(item, what);
        if (!lit) return std::nullopt;
      }
      if (!lit || lit->kind == syntax::Literal::Kind::List) {
        diags_.error(item.span, fmt::format("{}: nested lists are not valid default values", what));
        return std::nullopt;
      }
      list.items.push_back(std::move(*lit));
    }
    list.text = "[";
    for (size_t i = 0; i < list.items.size(); ++i)
      list.text += (i ? ", " : "") + list.items[i].text;
    list.text += "]";
    return list;
  }

  void read_ops(const YamlNode& node, std::vector<syntax::OpDecl>* out) {
    if (!node.is_sequence()) {
      if (node.kind != YamlNode::Kind::Null) {
        diags_.error(
            node.span,
            fmt::format("`ops` must be a list, found {}", describe(node)),
            "write each op as `- func: name(ARGS) -> RETURNS`");
      }
      return;
    }
    out->reserve(out->size() + node.child_count);
    for (int child : doc_.children(node)) {
      const YamlNode& item = doc_.node(child);
      if (item.alias) continue;  // already reported
      if (!item.is_mapping()) {
        diags_.error(
            item.span,
            fmt::format("each op must be a mapping with `func:`, found {}", describe(item)),
            "write `- func: name(ARGS) -> RETURNS`");
        continue;
      }
      syntax::OpDecl op;
      bool has_func = false;
      bool func_ok = false;
      bool clean = walker_.walk(item, kOpKeys, "an op", [&](const Name& key, const YamlNode& v) {
        if (key.text == "func"sv) {
          has_func = true;
          if (!expect_scalar(v, "func")) return;
          op.func_span = v.span;
          auto sig = syntax::parse_func(v.value, origin_of(v), diags_);
          if (sig) {
            op.sig = std::move(*sig);
            func_ok = true;
          }
        } else if (key.text == "mutates"sv) {
          read_name_list(v, "mutates", &op.mutates);
        } else if (key.text == "dynamic"sv) {
          read_name_list(v, "dynamic", &op.dynamic);
        } else if (key.text == "backward"sv) {
          read_bool(v, "backward", &op.backward);
        } else if (key.text == "meta"sv) {
          read_meta(v, &op.meta);
        } else if (key.text == "dispatch"sv) {
          read_name_list(v, "dispatch", &op.dispatch);
        } else if (key.text == "tags"sv) {
          read_name_list(v, "tags", &op.tags);
        } else if (key.text == "annotations"sv) {
          read_annotations(v, &op.annotations);
        } else {
          read_doc(v, &op.doc);
        }
      });
      if (!has_func && clean) {
        diags_.error(item.span, "op has no `func:`", "write `func: name(ARGS) -> RETURNS`");
      }
      if (func_ok) out->push_back(std::move(op));
    }
  }

  void read_meta(const YamlNode& node, syntax::MetaDecl* meta) {
    meta->span = node.span;
    if (node.alias) return;
    if (node.is_scalar() && !node.quoted &&
        (node.value == "identity"sv || node.value == "custom"sv)) {
      meta->kind = node.value == "identity"sv ? syntax::MetaDecl::Kind::Identity
                                              : syntax::MetaDecl::Kind::Custom;
      return;
    }
    if (node.is_sequence()) {
      meta->kind = syntax::MetaDecl::Kind::Names;
      read_name_list(node, "meta", &meta->names);
      return;
    }
    diags_.error(
        node.span,
        "`meta` must be `identity`, `custom` or a list of parameter names",
        "e.g. `meta: [q, q]` makes both outputs take `q`'s shape, dtype and device");
  }

  const YamlDocument& doc_;
  int file_id_;
  Diagnostics& diags_;
  MappingWalker walker_;
};

}  // namespace

bool is_identifier(std::string_view s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
  }
  return true;
}

void read_idl(const YamlDocument& doc, int file_id, Diagnostics& diags, syntax::IdlFile* out) {
  IdlReader(doc, file_id, diags).read(out);
}

}  // namespace structop
