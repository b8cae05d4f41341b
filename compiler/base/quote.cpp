#include "base/quote.h"

#include <cctype>

#include <fmt/format.h>

namespace structop {

std::string quote(std::string_view value, Quoting language) {
  std::string out = "\"";
  for (size_t i = 0; i < value.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(value[i]);
    switch (c) {
      case '"':
        out += "\\\"";
        continue;
      case '\\':
        out += "\\\\";
        continue;
      case '\n':
        out += "\\n";
        continue;
      case '\r':
        out += "\\r";
        continue;
      case '\t':
        out += "\\t";
        continue;
      default:
        break;
    }
    if ((c >= 0x20 && c != 0x7f) || language == Quoting::Schema) {
      out += static_cast<char>(c);
    } else if (language == Quoting::Json) {
      out += fmt::format("\\u{:04x}", c);
    } else {
      out += fmt::format("\\x{:02x}", c);
      // In C++ a hex escape runs on over every hex digit that follows it.
      if (language == Quoting::Cpp && i + 1 < value.size() &&
          std::isxdigit(static_cast<unsigned char>(value[i + 1]))) {
        out += "\" \"";
      }
    }
  }
  return out + "\"";
}

}  // namespace structop
