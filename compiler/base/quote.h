// String literals for every language structopc writes: one escaper, with the
// differences between the languages spelled out in one place.
#pragma once

#include <string>
#include <string_view>

namespace structop {

enum class Quoting {
  Cpp,     // `"a\"b"`; other control characters as `\x1f` (split from a following hex digit)
  Python,  // the same escapes, which Python reads the same way
  Json,    // other control characters as `\u001f`
  Schema,  // torch's schema lexer: `\"`, `\\`, `\n`, `\t`, `\r` only; other bytes as they are
};

/// `value` as a double-quoted string literal of `language`.
std::string quote(std::string_view value, Quoting language);

}  // namespace structop
