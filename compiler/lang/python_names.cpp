#include "lang/python_names.h"

#include "lang/word_list.h"

namespace structop::lang {

bool is_python_keyword(std::string_view name) {
  static const WordList kWords({
#include "lang/lists/python_keywords.inc"
  });
  return kWords.contains(name);
}

}  // namespace structop::lang
