// Escaping of user text (docs, string defaults, file names) for every context
// structopc writes it into: one function per context, each stating what it
// guarantees. User text reaches generated code only through these; the rules
// are summed up in docs/generated-code.md ("Escaping").
//
// Shared conventions: the input is UTF-8 (a byte that is not part of
// well-formed UTF-8 can only come from a file name); "hazards" are the
// characters that make code display differently from what it compiles to or
// end a line for some tool: the bidirectional controls U+202A-U+202E and
// U+2066-U+2069, the marks U+200E, U+200F and U+061C, and the line
// separators U+0085, U+2028 and U+2029. Every function escapes control
// characters (C0, DEL, C1) and hazards; none writes a raw line break except
// python_docstring where asked.
#pragma once

#include <string>
#include <string_view>

namespace structop {

/// A C++ string literal whose bytes are exactly `value`: `"a\"b"`. Plain
/// ASCII is written as it is; `"`, `\`, `\n`, `\r`, `\t` get their escapes,
/// every other byte outside printable ASCII (UTF-8 included, so that no
/// source or execution character set can change it) becomes a three-digit
/// octal escape (`\000`, `\342\200\256`: no following digit can join it),
/// and `??` becomes `?\?` (no trigraph).
std::string cpp_string_literal(std::string_view value);

/// `text` as the text of one line comment in C++ (`//`, `///`) or Python
/// (`#`): readable, not byte-exact, and unable to end or extend the comment.
/// Line breaks, tabs and other control characters become visible escapes
/// (`\n`, `\r`, `\t`, `\x1b`), hazards `<U+202E>`, stray bytes `\xff`;
/// trigraphs are broken (`?\?/`); trailing spaces are dropped and a
/// trailing backslash becomes `\x5c` (it would continue the comment onto the
/// next line). Other UTF-8 stays as it is.
std::string comment_text(std::string_view text);

/// A Python string literal whose value is exactly `value` (as `str`):
/// `"a\"b"`. `"`, `\`, `\n`, `\r`, `\t` get their escapes, other control
/// characters `\xNN`, hazards `\uNNNN`; other UTF-8 stays as it is; a byte
/// that is not UTF-8 cannot be in a `str` and becomes `\ufffd`.
std::string python_string_literal(std::string_view value);

/// A `"""` docstring whose value is exactly `value`, with the escapes of
/// python_string_literal except that a `"` is escaped only where it would
/// close the docstring (before another `"` and at the end). Line breaks are
/// `\n` escapes, so the docstring is one physical line and does not take the
/// indentation of the block it is in; with `line_breaks` they are real line
/// breaks (only for a docstring that starts in column 0, a module's), and a
/// space before one is `\x20`.
/// Python 3.13+ still cleans the value (see python_keeps_docstring).
std::string python_docstring(std::string_view value, bool line_breaks = false);

/// Whether every Python keeps `value` as a docstring's value unchanged.
/// Python 3.13+ cleans docstrings: it expands tabs, strips leading spaces
/// from the first line and the common indentation of the others. Where this
/// is false, set `__doc__` from a python_string_literal instead.
bool python_keeps_docstring(std::string_view value);

/// A string literal of torch's function schema that torch's schema parser
/// reads back as exactly `value`: `"a\"b"`. `"`, `\`, `\n`, `\t` get their
/// escapes; every other byte outside printable ASCII becomes a three-digit
/// octal escape (`\015` for CR, `\000` for NUL, `\342\200\256` for U+202E),
/// which torch reads as that byte (it has no `\r`, `\x` or `\u`). The
/// literal is printable ASCII, so the schema is safe in a raw C++ string.
std::string schema_string_literal(std::string_view value);

/// A JSON string (RFC 8259) whose value is exactly `value`: `"`, `\`, `\b`,
/// `\f`, `\n`, `\r`, `\t` get their escapes, other control characters and
/// hazards `\u00NN`; other UTF-8 stays as it is; a byte that is not UTF-8
/// becomes `\ufffd`.
std::string json_string_literal(std::string_view value);

/// `text` for a terminal (diagnostics, `--explain`): what it shows is what
/// the text holds, and nothing in it can drive the terminal. Control
/// characters become visible escapes (`\r`, `\t`, `\x1b`; line breaks too,
/// unless `line_breaks`), hazards `<U+202E>`, stray bytes `\xff`; a
/// backslash stays as it is (the text is for reading, not for parsing back).
std::string terminal_text(std::string_view text, bool line_breaks = false);

}  // namespace structop
