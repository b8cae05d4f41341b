// How the generated C++ and Python APIs spell IDL names: one rule for both
// languages, so that a name is the same in each.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace structop::lang {

/// True if `name` is a C++ keyword or alternative token, a Python keyword,
/// or a predefined C/C++ macro (is_predefined_macro: `errno`, `NULL`,
/// `linux`): such names get a trailing `_` in the generated APIs.
bool is_reserved_word(std::string_view name);

/// `name` as the generated C++ and Python APIs spell it: a reserved word
/// gets a trailing `_` (`from` -> `from_`); the schema keeps the IDL name.
std::string api_spelling(const std::string& name);
std::string api_spelling(std::string&& name);

/// Joins C++ identifier parts with `_` without creating `__`: a trailing
/// `_` of a part moves to the end (`scale_` + `meta` -> `scale_meta_`).
std::string join_identifier(const std::vector<std::string>& parts);
std::string join_identifier(std::initializer_list<std::string_view> parts);
/// join_identifier into `out` (its memory reused).
void join_identifier_into(std::string& out, std::initializer_list<std::string_view> parts);

/// `base`, or `base2`, `base3`... : the first not in `taken`.
std::string first_free(const std::string& base, const std::vector<std::string>& taken);

}  // namespace structop::lang
