#include "base/quote.h"

#include <algorithm>
#include <vector>

#include <fmt/format.h>

#include "base/source.h"

namespace structop {
namespace {

/// One character of UTF-8 text, or one byte that is not part of well-formed UTF-8.
struct Char {
  char32_t code = 0;       // the code point (the byte's value when !utf8)
  std::string_view bytes;  // as it is in the text
  bool utf8 = true;
};

/// The code point of the well-formed UTF-8 character of `len` bytes at `text[i]`.
char32_t decode(std::string_view text, size_t i, size_t len) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[i + k]); };
  if (len == 1) return byte(0);
  char32_t code = byte(0) & (0xFF >> (len + 1));
  for (size_t k = 1; k < len; ++k) code = (code << 6) | (byte(k) & 0x3F);
  return code;
}

/// Calls `f(chars, i)` for each character of `text`; `chars[i]` is the current one.
template <typename F>
void for_each_char(std::string_view text, F f) {
  std::vector<Char> chars;
  for (size_t i = 0; i < text.size();) {
    const size_t len = utf8_char_length(text, i);
    Char c;
    c.bytes = text.substr(i, len ? len : 1);
    if (len == 0) {
      c.code = static_cast<unsigned char>(c.bytes[0]);
      c.utf8 = false;
    } else {
      c.code = decode(text, i, len);
    }
    chars.push_back(c);
    i += c.bytes.size();
  }
  for (size_t i = 0; i < chars.size(); ++i) f(chars, i);
}

/// C0 controls, DEL and C1 controls.
bool is_control(char32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0x9F);
}

/// Characters that make code display differently from what it compiles to,
/// or that end a line for some tools (see quote.h).
bool is_hazard(char32_t c) {
  return (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) || c == 0x200E ||
         c == 0x200F || c == 0x061C || c == 0x0085 || c == 0x2028 || c == 0x2029;
}

/// Appends the visible form of a character a reader must see for what it is
/// (a line break, tab or other control `\n`/`\t`/`\x1b`, a hazard
/// `<U+202E>`, a stray byte `\xff`) and returns true; false for others.
/// Shared by comment_text and terminal_text.
bool append_visible_escape(char32_t code, bool utf8, std::string& out) {
  // A stray byte is 0x80 or above, never one of these three.
  switch (code) {
    case '\n':
      out += "\\n";
      return true;
    case '\r':
      out += "\\r";
      return true;
    case '\t':
      out += "\\t";
      return true;
    default:
      break;
  }
  if (!utf8 || code < 0x20 || code == 0x7F) {
    out += fmt::format("\\x{:02x}", static_cast<unsigned>(code));
  } else if (is_control(code) || is_hazard(code)) {
    out += fmt::format("<U+{:04X}>", static_cast<unsigned>(code));
  } else {
    return false;
  }
  return true;
}

/// The escapes C++, Python and JSON share; nullptr for other characters.
const char* common_escape(char32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return nullptr;
  }
}

/// `\xNN` for a control character below U+0100, else `\uNNNN` (Python).
std::string python_escape(char32_t c) {
  return c < 0x100 ? fmt::format("\\x{:02x}", static_cast<unsigned>(c))
                   : fmt::format("\\u{:04x}", static_cast<unsigned>(c));
}

/// The body of a Python string literal or docstring; `quote_needed(chars, i)`
/// tells whether a `"` must be escaped, `line_breaks` whether `\n` stays raw.
template <typename QuoteNeeded>
std::string python_body(std::string_view value, QuoteNeeded quote_needed, bool line_breaks) {
  std::string out;
  for_each_char(value, [&](const std::vector<Char>& chars, size_t i) {
    const Char& c = chars[i];
    if (!c.utf8) {
      out += "\\ufffd";
    } else if (c.code == '"' && !quote_needed(chars, i)) {
      out += '"';
    } else if (c.code == '\n' && line_breaks) {
      out += '\n';
    } else if (c.code == ' ' && line_breaks && i + 1 < chars.size() && chars[i + 1].code == '\n') {
      out += "\\x20";  // trailing blanks of a line are easily lost
    } else if (const char* e = common_escape(c.code)) {
      out += e;
    } else if (is_control(c.code) || is_hazard(c.code)) {
      out += python_escape(c.code);
    } else {
      out += c.bytes;
    }
  });
  return out;
}

}  // namespace

std::string cpp_string_literal(std::string_view value) {
  std::string out = "\"";
  for (size_t i = 0; i < value.size(); ++i) {
    const char c = value[i];
    const auto byte = static_cast<unsigned char>(c);
    if (const char* e = common_escape(byte)) {
      out += e;
    } else if (byte < 0x20 || byte >= 0x7F) {
      // Always three digits: a following digit cannot join the escape (a
      // `\x` escape runs on over every hex digit).
      out += fmt::format("\\{:03o}", byte);
    } else {
      out += c == '?' && i > 0 && value[i - 1] == '?' ? "\\?" : std::string(1, c);
    }
  }
  return out + "\"";
}

std::string comment_text(std::string_view text) {
  size_t end = text.find_last_not_of(' ');
  text = end == std::string_view::npos ? std::string_view() : text.substr(0, end + 1);
  std::string out;
  for_each_char(text, [&](const std::vector<Char>& chars, size_t i) {
    const Char& c = chars[i];
    if (append_visible_escape(c.code, c.utf8, out)) return;
    if (c.code == '\\' && i + 1 == chars.size()) {
      out += "\\x5c";
    } else if (
        c.code == '?' && i > 0 && chars[i - 1].code == '?' && i + 1 < chars.size() &&
        chars[i + 1].code < 0x80 &&
        std::string_view("=/'()!<>-").find(static_cast<char>(chars[i + 1].code)) !=
            std::string_view::npos) {
      out += "\\?";
    } else {
      out += c.bytes;
    }
  });
  return out;
}

std::string python_string_literal(std::string_view value) {
  auto always = [](const std::vector<Char>&, size_t) { return true; };
  return "\"" + python_body(value, always, false) + "\"";
}

std::string python_docstring(std::string_view value, bool line_breaks) {
  // `"` closes the docstring only as the first of three, or right before the closing `"""`.
  auto closes = [](const std::vector<Char>& chars, size_t i) {
    return i + 1 == chars.size() || chars[i + 1].code == '"';
  };
  return "\"\"\"" + python_body(value, closes, line_breaks) + "\"\"\"";
}

bool python_keeps_docstring(std::string_view value) {
  // Mirrors _PyCompile_CleanDoc (CPython 3.13): the value is kept when it
  // has no tab, its first line no leading space, and some line after the
  // first that is not blank (only spaces) starts without a space.
  if (value.find('\t') != std::string_view::npos) return false;
  if (!value.empty() && value[0] == ' ') return false;
  size_t start = value.find('\n');
  bool indented_only = false;  // every non-blank later line starts with a space
  while (start != std::string_view::npos) {
    const size_t begin = start + 1;
    const size_t next = value.find('\n', begin);
    const std::string_view line = value.substr(
        begin,
        next == std::string_view::npos ? next : next - begin);
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string_view::npos) {
      if (first == 0) return true;
      indented_only = true;
    }
    start = next;
  }
  return !indented_only;
}

std::string schema_string_literal(std::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    const auto byte = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (byte < 0x20 || byte >= 0x7F) {
      out += fmt::format("\\{:03o}", byte);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string json_string_literal(std::string_view value) {
  std::string out = "\"";
  for_each_char(value, [&](const std::vector<Char>& chars, size_t i) {
    const Char& c = chars[i];
    if (!c.utf8) {
      out += "\\ufffd";
    } else if (const char* e = common_escape(c.code)) {
      out += e;
    } else if (c.code == '\b') {
      out += "\\b";
    } else if (c.code == '\f') {
      out += "\\f";
    } else if (is_control(c.code) || is_hazard(c.code)) {
      out += fmt::format("\\u{:04x}", static_cast<unsigned>(c.code));
    } else {
      out += c.bytes;
    }
  });
  return out + "\"";
}

std::string terminal_text(std::string_view text, bool line_breaks) {
  // Most text is printable ASCII (and line breaks where they stay).
  if (std::all_of(text.begin(), text.end(), [&](char ch) {
        return (ch >= 0x20 && ch < 0x7F) || (ch == '\n' && line_breaks);
      })) {
    return std::string(text);
  }
  std::string out;
  out.reserve(text.size() + 16);
  for (size_t i = 0; i < text.size();) {
    const auto byte = static_cast<unsigned char>(text[i]);
    const size_t len = utf8_char_length(text, i);
    if (len == 0) {
      append_visible_escape(byte, false, out);
      ++i;
      continue;
    }
    const char32_t code = decode(text, i, len);
    if (code == '\n' && line_breaks) {
      out += '\n';
    } else if (!append_visible_escape(code, true, out)) {
      out.append(text.substr(i, len));
    }
    i += len;
  }
  return out;
}

}  // namespace structop
