#include "emit/idl_fingerprint.h"

#include <algorithm>
#include <vector>

#include "syntax/schema_parser.h"

namespace structop {
namespace {

/// Bump when the generated C++ of records and enums changes for the same IDL
/// (headers of different structopc versions then do not mix either).
constexpr const char* kFormat = "structop-fingerprint-1";

/// A type as the schema spells it, record and enum names with their C++
/// namespace: `shared::Window`, `int[]`, `shared::Act?`.
std::string spell(const model::Type& type, const model::Module& m) {
  syntax::TypeExpr t;
  switch (type.kind) {
    case model::Type::Kind::Builtin:
      t.base = model::schema_name(type.builtin);
      break;
    case model::Type::Kind::Enum: {
      const model::Enum& e = m.enums[static_cast<size_t>(type.decl)];
      t.base = e.cpp_namespace + "::" + e.name;
      break;
    }
    case model::Type::Kind::Record: {
      const model::Record& r = m.records[static_cast<size_t>(type.decl)];
      t.base = r.cpp_namespace + "::" + r.name;
      break;
    }
  }
  t.alias = type.alias;
  t.suffixes = type.suffixes;
  return syntax::to_schema(t);
}

}  // namespace

uint64_t idl_fingerprint(const model::Module& m, int include) {
  // One line per declaration, items separated by NUL (no name holds one),
  // lines sorted so that reordering declarations changes nothing.
  std::vector<std::string> lines;
  auto item = [](std::string& line, const std::string& text) {
    line += '\0';
    line += text;
  };
  for (const auto& e : m.enums) {
    if (e.include != include) continue;
    std::string line = "enum";
    item(line, e.cpp_namespace + "::" + e.name);
    for (const auto& v : e.values) item(line, v);
    lines.push_back(std::move(line));
  }
  for (const auto& r : m.records) {
    if (r.include != include) continue;
    std::string line = "record";
    item(line, r.cpp_namespace + "::" + r.name);
    for (const auto& f : r.fields) {
      item(line, f.name);
      item(line, spell(f.type, m));
      item(line, f.default_value ? "=" + f.default_value->literal.text : "");
    }
    lines.push_back(std::move(line));
  }
  std::sort(lines.begin(), lines.end());
  std::string text = kFormat;
  for (const auto& line : lines) text += "\n" + line;

  uint64_t hash = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

std::string fingerprint_macro(const std::string& stem) {
  std::string macro = "STRUCTOP_FINGERPRINT_";
  for (char c : stem) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_';
    macro += ok ? c : '_';
  }
  return macro;
}

}  // namespace structop
