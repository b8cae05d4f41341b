#include "lang/api_names.h"

#include <algorithm>

#include <fmt/format.h>

#include "lang/cpp_names.h"
#include "lang/word_list.h"

namespace structop::lang {

bool is_reserved_word(std::string_view name) {
  // One list for both languages' keywords: this runs for every name the
  // compiler emits.
  static const WordList kKeywords({
#include "lang/lists/python_keywords.inc"
      ,
#include "lang/lists/cpp_keywords.inc"
  });
  return kKeywords.contains(name) || is_predefined_macro(name);
}

std::string api_spelling(const std::string& name) {
  return is_reserved_word(name) ? name + "_" : name;
}

std::string api_spelling(std::string&& name) {
  if (is_reserved_word(name)) name += '_';
  return std::move(name);
}

namespace {
template <typename Part>
void join_parts(std::string& out, const Part* begin, const Part* end) {
  out.clear();
  size_t size = 1;  // a trailing `_`
  for (const Part* part = begin; part != end; ++part) size += std::string_view(*part).size() + 1;
  out.reserve(size);
  bool trailing = false;
  for (const Part* part = begin; part != end; ++part) {
    std::string_view p = *part;
    if (!out.empty()) {
      while (!p.empty() && p.front() == '_') p.remove_prefix(1);
    }
    const size_t last = p.find_last_not_of('_');
    if (last != std::string_view::npos && last + 1 < p.size()) {
      trailing = true;
      p = p.substr(0, last + 1);
    }
    if (p.empty()) continue;
    if (!out.empty()) out += '_';
    out += p;
  }
  if (trailing) out += '_';
}
}  // namespace

std::string join_identifier(const std::vector<std::string>& parts) {
  std::string out;
  join_parts(out, parts.data(), parts.data() + parts.size());
  return out;
}

std::string join_identifier(std::initializer_list<std::string_view> parts) {
  std::string out;
  join_parts(out, parts.begin(), parts.end());
  return out;
}

void join_identifier_into(std::string& out, std::initializer_list<std::string_view> parts) {
  join_parts(out, parts.begin(), parts.end());
}

std::string first_free(const std::string& base, const std::vector<std::string>& taken) {
  std::string name = base;
  for (int n = 2; std::find(taken.begin(), taken.end(), name) != taken.end(); ++n)
    name = fmt::format("{}{}", base, n);
  return name;
}

}  // namespace structop::lang
