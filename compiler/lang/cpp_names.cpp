#include "lang/cpp_names.h"

#include <algorithm>
#include <cctype>
#include <iterator>

#include "lang/word_list.h"

namespace structop::lang {

bool is_implementation_reserved(std::string_view name) {
  return name.size() >= 2 && name[0] == '_' &&
         (name[1] == '_' || std::isupper(static_cast<unsigned char>(name[1])));
}

bool is_predefined_macro(std::string_view name) {
  if (!name.empty() && name[0] >= 'A' && name[0] <= 'Z') {  // the prefixes' first letters
    for (std::string_view prefix : {"AT_", "C10_", "CAFFE2_", "STRUCTOP_", "TORCH_"}) {
      if (name.substr(0, prefix.size()) == prefix) return true;
    }
  }
  static const WordList kMacros({
#include "lang/lists/cpp_macros.inc"
  });
  return kMacros.contains(name);
}

bool is_global_name(std::string_view name) {
  static const WordList kNames({
#include "lang/lists/cpp_globals.inc"
  });
  return kNames.contains(name);
}

bool is_taken_cpp_namespace(std::string_view name) {
  static constexpr std::string_view kTaken[] =
      {"std", "at", "c10", "torch", "caffe2", "structop", "kernels"};
  return std::find(std::begin(kTaken), std::end(kTaken), name) != std::end(kTaken);
}

}  // namespace structop::lang
