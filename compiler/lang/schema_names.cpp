#include "lang/schema_names.h"

#include <algorithm>
#include <iterator>

namespace structop::lang {

bool is_schema_keyword(std::string_view name) {
  // Every word torch 2.6's schema parser refuses as an op, overload,
  // parameter or return name.
  static constexpr std::string_view kWords[] = {
      "Ellipsis", "False", "None",   "NoneType", "True",   "and",   "as",
      "assert",   "break", "class",  "continue", "def",    "del",   "elif",
      "else",     "for",   "global", "if",       "import", "in",    "is",
      "not",      "or",    "pass",   "raise",    "return", "while", "with"};
  return std::find(std::begin(kWords), std::end(kWords), name) != std::end(kWords);
}

}  // namespace structop::lang
