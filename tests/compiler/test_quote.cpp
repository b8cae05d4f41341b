// Unit tests of the escapers (base/quote): one per context user text reaches.
// Round trips through real parsers: schema literals through structopc's own
// schema parser here (it reads what torch's does); Python literals and
// docstrings in quote_roundtrip_test.py; torch itself in hostile_text_test.py.
#include "catch2.h"

#include "base/diagnostics.h"
#include "base/quote.h"
#include "syntax/schema_parser.h"

using namespace structop;

namespace {

/// Text with every kind of hostile character: quotes, backslashes, line
/// breaks, tab, NUL, ESC, DEL, C1 (NEL), a trigraph, bidi controls, a line
/// separator, and plain non-ASCII.
const std::string kHostile = std::string("a\"b\\c\nd\re\tf") + '\0' +
                             "g\x1b[31mh\x7f\xc2\x85i?\?/j\xe2\x80\xae"
                             "k\xe2\x81\xa6l\xe2\x80\xa8m\xc3\xa9\\";

/// The schema parser's reading of a string literal.
std::optional<std::string> parse_schema_string(const std::string& literal) {
  SourceManager sources;
  int id = sources.add("t.ops.yaml", literal);
  Diagnostics diags(sources);
  syntax::TextOrigin origin{Span{id, 1, 1, 1}, true};
  auto lit = syntax::parse_literal(literal, origin, diags, "test");
  if (!lit || lit->kind != syntax::Literal::Kind::String) return std::nullopt;
  return lit->string_value;
}

/// Whether `text` holds a byte outside printable ASCII.
bool has_unprintable(const std::string& text) {
  for (char c : text) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("cpp_string_literal: exact bytes, printable ASCII only", "[quote]") {
  CHECK(cpp_string_literal("plain") == R"("plain")");
  CHECK(cpp_string_literal("a\"b\\c\nd\re\tf") == R"("a\"b\\c\nd\re\tf")");
  // Octal escapes of three digits: a following digit does not join them.
  CHECK(
      cpp_string_literal(std::string(
          "\x01"
          "a\x01"
          "7",
          4)) == R"("\001a\0017")");
  CHECK(cpp_string_literal(std::string("\0", 1)) == R"("\000")");
  // UTF-8 as bytes: no source or execution character set can change them.
  CHECK(cpp_string_literal("\xc3\xa9") == R"("\303\251")");
  CHECK(cpp_string_literal("x\xe2\x80\xae") == R"("x\342\200\256")");
  // No `??` in the literal, so no trigraph.
  CHECK(cpp_string_literal("?\?/") == R"("?\?/")");
  CHECK(cpp_string_literal("???") == R"("?\?\?")");
  CHECK_FALSE(has_unprintable(cpp_string_literal(kHostile)));
  CHECK(cpp_string_literal(kHostile).find("??") == std::string::npos);
}

TEST_CASE("comment_text cannot end or extend a line comment", "[quote]") {
  CHECK(comment_text("plain text") == "plain text");
  CHECK(comment_text("x\r#error injected\r") == R"(x\r#error injected\r)");
  CHECK(comment_text("a\nb") == R"(a\nb)");
  CHECK(comment_text("tab\there") == R"(tab\there)");
  CHECK(comment_text(std::string("nul\0", 4)) == R"(nul\x00)");
  CHECK(comment_text("esc\x1b[0m") == R"(esc\x1b[0m)");
  // A trailing backslash (also before trailing spaces) would continue the comment.
  CHECK(comment_text("ends in \\") == R"(ends in \x5c)");
  CHECK(comment_text("ends in \\   ") == R"(ends in \x5c)");
  CHECK(comment_text("a \\ inside") == R"(a \ inside)");
  CHECK(comment_text("trailing   ") == "trailing");
  // Trigraphs are broken, other question marks stay.
  CHECK(comment_text("what?\?/") == R"(what?\?/)");
  CHECK(comment_text("?\?= ?\?( ?\?-") == R"(?\?= ?\?( ?\?-)");
  CHECK(comment_text("why?? really?") == "why?? really?");
  // Hazards get a visible name; other UTF-8 stays.
  CHECK(
      comment_text("a\xe2\x80\xae"
                   "b") == "a<U+202E>b");
  CHECK(
      comment_text("\xe2\x81\xa6"
                   "x\xe2\x81\xa9") == "<U+2066>x<U+2069>");
  CHECK(
      comment_text("l\xe2\x80\xa8"
                   "s\xc2\x85"
                   "n") == "l<U+2028>s<U+0085>n");
  CHECK(
      comment_text("caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80") ==
      "caf\xc3\xa9 \xe2\x86\x92 \xf0\x9f\x98\x80");
  // A byte that is not UTF-8 (a file name can hold one).
  CHECK(comment_text("bad\xff") == R"(bad\xff)");
  // `??` + `=` of a code point whose low byte is `=` is not a trigraph.
  CHECK(comment_text("??\xc4\xbd") == "??\xc4\xbd");

  const std::string hostile = comment_text(kHostile);
  CHECK(hostile.find_first_of("\r\n") == std::string::npos);
  CHECK(hostile.back() != '\\');
  CHECK(hostile.find("\xe2\x80\xae") == std::string::npos);
  CHECK(hostile.find("?\?/") == std::string::npos);
}

TEST_CASE("python_string_literal: escapes, hazards, stray bytes", "[quote]") {
  CHECK(python_string_literal("plain") == R"("plain")");
  CHECK(python_string_literal("a\"b\\c\nd\re\tf") == R"("a\"b\\c\nd\re\tf")");
  CHECK(
      python_string_literal(std::string(
          "\0"
          "1",
          2)) == R"("\x001")");  // \x takes two digits
  CHECK(python_string_literal("\x7f\xc2\x85") == R"("\x7f\x85")");
  CHECK(
      python_string_literal("\xe2\x80\xae"
                            "x") == R"("\u202ex")");
  CHECK(python_string_literal("\\N{DASH} \\u0041 \\x41") == R"("\\N{DASH} \\u0041 \\x41")");
  CHECK(python_string_literal("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
  CHECK(python_string_literal("\xff") == R"("\ufffd")");
}

TEST_CASE("python_docstring: a `\"\"\"` literal on one line", "[quote]") {
  CHECK(python_docstring("Plain.") == R"("""Plain.""")");
  CHECK(python_docstring("Two\nlines.") == R"("""Two\nlines.""")");
  // `"` is escaped only where it would close the docstring.
  CHECK(python_docstring(R"(say "hi" now)") == R"("""say "hi" now""")");
  CHECK(python_docstring(R"(q""" x)") == R"("""q\"\"" x""")");
  CHECK(python_docstring(R"(ends in ")") == R"("""ends in \"""")");
  CHECK(python_docstring("ends in \\") == R"("""ends in \\""")");
  CHECK(python_docstring("\\N{x} \\u \\t") == R"("""\\N{x} \\u \\t""")");
  CHECK(python_docstring(std::string("nul\0", 4)) == R"("""nul\x00""")");
  CHECK(python_docstring("tab\tcr\r") == R"("""tab\tcr\r""")");
  CHECK(python_docstring("bidi\xe2\x80\xae") == R"("""bidi\u202e""")");
  // Line breaks kept (a module docstring, in column 0); a blank before one is visible.
  CHECK(python_docstring("a\nb \nc\n", true) == "\"\"\"a\nb\\x20\nc\n\"\"\"");
  CHECK(python_docstring("a\r\nb", true) == "\"\"\"a\\r\nb\"\"\"");
}

TEST_CASE("python_keeps_docstring mirrors Python 3.13's docstring cleaning", "[quote]") {
  CHECK(python_keeps_docstring("One line."));
  CHECK(python_keeps_docstring(""));
  CHECK(python_keeps_docstring("First.\n\nSecond\n  indented"));  // a later line starts in column 0
  CHECK(python_keeps_docstring("First.\n   \n"));                 // blank lines do not count
  CHECK_FALSE(python_keeps_docstring("a\tb"));                    // tabs are expanded
  CHECK_FALSE(python_keeps_docstring(" leading"));                // first line stripped
  CHECK_FALSE(python_keeps_docstring("First.\n  all\n  indented"));  // common indentation removed
  CHECK_FALSE(python_keeps_docstring("First.\n\n    x"));
}

TEST_CASE("schema_string_literal: printable ASCII that torch reads back exactly", "[quote]") {
  CHECK(schema_string_literal("plain") == R"("plain")");
  CHECK(schema_string_literal("a\"b\\c") == R"("a\"b\\c")");
  CHECK(schema_string_literal("l1\nl2\tx") == R"("l1\nl2\tx")");
  // torch's lexer has no \r, \x or \u: three octal digits instead.
  CHECK(schema_string_literal("a\rb") == R"("a\015b")");
  CHECK(
      schema_string_literal(std::string(
          "a\0"
          "7",
          3)) == R"("a\0007")");
  CHECK(schema_string_literal("\x7f") == R"("\177")");
  CHECK(schema_string_literal("\xe2\x80\xae") == R"("\342\200\256")");
  CHECK(schema_string_literal("\xc3\xa9") == R"("\303\251")");
  CHECK(schema_string_literal("?\?/'") == R"("??/'")");

  const std::string hostile = schema_string_literal(kHostile);
  CHECK_FALSE(has_unprintable(hostile));
  CHECK(parse_schema_string(hostile) == kHostile);
  for (int byte = 0; byte < 256; ++byte) {
    const std::string one(1, static_cast<char>(byte));
    CHECK(parse_schema_string(schema_string_literal(one)) == one);
  }
}

TEST_CASE("json_string_literal: RFC 8259 escapes", "[quote]") {
  CHECK(json_string_literal("plain") == R"("plain")");
  CHECK(json_string_literal("a\"b\\c\nd\re\tf\bg\fh") == R"("a\"b\\c\nd\re\tf\bg\fh")");
  CHECK(json_string_literal(std::string("\0\x1f\x7f", 3)) == R"("\u0000\u001f\u007f")");
  CHECK(
      json_string_literal("\xc2\x85\xe2\x80\xa8\xe2\x80\xa9\xe2\x80\xae") ==
      R"("\u0085\u2028\u2029\u202e")");
  CHECK(json_string_literal("caf\xc3\xa9") == "\"caf\xc3\xa9\"");
  CHECK(json_string_literal("\xff") == R"("\ufffd")");
}

TEST_CASE("terminal_text: visible escapes, line breaks only where asked", "[quote]") {
  CHECK(terminal_text("plain `x` \\ \"q\"") == "plain `x` \\ \"q\"");
  CHECK(terminal_text("a\nb\rc\td") == R"(a\nb\rc\td)");
  CHECK(terminal_text("a\nb", /*line_breaks=*/true) == "a\nb");
  CHECK(terminal_text(std::string("\x1b[31m\0\x7f", 7)) == R"(\x1b[31m\x00\x7f)");
  CHECK(terminal_text("\xc2\x9b\xe2\x80\xae\xe2\x81\xa9") == "<U+009B><U+202E><U+2069>");
  CHECK(terminal_text("caf\xc3\xa9 \xff") == "caf\xc3\xa9 \\xff");
}
