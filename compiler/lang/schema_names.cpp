#include "lang/schema_names.h"

#include <algorithm>
#include <iterator>

namespace structop::lang {

bool is_schema_keyword(std::string_view name) {
  // Every word torch 2.6's schema parser refuses as an op, overload,
  // parameter or return name, by length: a name is compared with the few
  // words as long as it (the checker asks for every name it sees).
  static constexpr std::string_view kWords2[] = {"as", "if", "in", "is", "or"};
  static constexpr std::string_view kWords3[] = {"and", "def", "del", "for", "not"};
  static constexpr std::string_view kWords4[] = {"None", "True", "elif", "else", "pass", "with"};
  static constexpr std::string_view kWords5[] = {"False", "break", "class", "raise", "while"};
  static constexpr std::string_view kWords6[] = {"assert", "global", "import", "return"};
  static constexpr std::string_view kWords8[] = {"Ellipsis", "NoneType", "continue"};
  // (The first letters are compared before whole words: most names match
  // none, and a comparison of equal lengths is a call to memcmp.)
  auto in = [&](const auto& words) {
    return std::any_of(std::begin(words), std::end(words), [&](std::string_view w) {
      return w.front() == name.front() && w == name;
    });
  };
  switch (name.size()) {
    case 2:
      return in(kWords2);
    case 3:
      return in(kWords3);
    case 4:
      return in(kWords4);
    case 5:
      return in(kWords5);
    case 6:
      return in(kWords6);
    case 8:
      return in(kWords8);
    default:
      return false;
  }
}

}  // namespace structop::lang
