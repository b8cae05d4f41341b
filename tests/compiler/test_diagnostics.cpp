// Unit tests of base/: source positions, the diagnostics sink and its GCC-style
// rendering, and the "did you mean" helpers.
#include <string>
#include <vector>

#include "catch2.h"

#include "base/diagnostics.h"
#include "base/source.h"
#include "test_support.h"

using namespace structop;
using structop::testing::contains;
using structop::testing::yaml;

TEST_CASE("SourceFile maps byte offsets to 1-based lines and columns", "[base]") {
  SourceFile f("a.ops.yaml", "ab\ncde\n\nf");
  Span s = f.span_at(7, 0, 3);
  CHECK(s.file == 7);
  CHECK(s.line == 1);
  CHECK(s.column == 1);
  CHECK(s.length == 3);
  s = f.span_at(0, 4);  // 'd'
  CHECK(s.line == 2);
  CHECK(s.column == 2);
  CHECK(s.length == 1);  // lengths below 1 become 1
  s = f.span_at(0, 8);   // 'f' after an empty line
  CHECK(s.line == 4);
  CHECK(s.column == 1);
  CHECK(f.line_text(2) == "cde");
  CHECK(f.line_text(3).empty());
  CHECK(f.line_text(4) == "f");
  CHECK(f.line_text(0).empty());
  CHECK(f.line_text(5).empty());
}

TEST_CASE("span_at with a line hint agrees with the search, in any order", "[base]") {
  std::string text;
  for (int i = 0; i < 40; ++i) text += std::string(static_cast<size_t>(i % 4), 'x') + "\n";
  SourceFile f("a", text);
  // Growing offsets (the parser's), then jumps back, far ahead and past the end.
  std::vector<size_t> offsets;
  for (size_t o = 0; o <= text.size() + 2; ++o) offsets.push_back(o);
  for (size_t o : {50, 3, 70, 0, 69, 12, 1000}) offsets.push_back(o);
  size_t hint = 0;
  for (size_t o : offsets) {
    const Span with = f.span_at(0, o, 1, &hint);
    const Span plain = f.span_at(0, o);
    CAPTURE(o);
    CHECK(with.line == plain.line);
    CHECK(with.column == plain.column);
    CHECK(hint == static_cast<size_t>(plain.line - 1));
  }
  hint = 999;  // a hint past the last line is ignored
  CHECK(f.span_at(0, 5, 1, &hint).line == 3);
}

TEST_CASE("line_text drops CR of CRLF line ends", "[base]") {
  SourceFile f("a", "x: 1\r\ny: 2\r\n");
  CHECK(f.line_text(1) == "x: 1");
  CHECK(f.line_text(2) == "y: 2");
}

TEST_CASE("utf8_char_length accepts well-formed UTF-8 only", "[base]") {
  CHECK(utf8_char_length("a", 0) == 1);
  CHECK(utf8_char_length("\xC3\xA9", 0) == 2);          // é
  CHECK(utf8_char_length("\xE2\x82\xAC", 0) == 3);      // €
  CHECK(utf8_char_length("\xF0\x9F\x98\x80", 0) == 4);  // 😀
  CHECK(utf8_char_length("\xC3", 0) == 0);              // truncated
  CHECK(utf8_char_length("\xC0\xAF", 0) == 0);          // overlong '/'
  CHECK(utf8_char_length("\xE0\x80\xAF", 0) == 0);      // overlong, 3 bytes
  CHECK(utf8_char_length("\xED\xA0\x80", 0) == 0);      // a UTF-16 surrogate
  CHECK(utf8_char_length("\xF4\x90\x80\x80", 0) == 0);  // above U+10FFFF
  CHECK(utf8_char_length("\x80", 0) == 0);              // stray continuation byte
  CHECK(utf8_char_length("\xFF", 0) == 0);
  CHECK(
      utf8_char_length(
          "\xE2\x82"
          "a",
          0) == 0);                      // bad continuation
  CHECK(utf8_char_length("a", 1) == 0);  // past the end
}

namespace {

struct Sink {
  SourceManager sources;
  Diagnostics diags{sources};
  int add(const std::string& path, const std::string& text) { return sources.add(path, text); }
};

}  // namespace

TEST_CASE("an error renders GCC-style with the line, a caret and a hint", "[base]") {
  Sink s;
  int id = s.add("demo.ops.yaml", yaml(R"(
      records:
        Cfg:
          fields:
            scale: flaot = 1.0
  )"));
  s.diags.error(Span{id, 4, 14, 5}, "unknown type `flaot`", "did you mean `float`?");
  CHECK(s.diags.has_errors());
  CHECK(s.diags.error_count() == 1);
  CHECK(
      s.diags.render() ==
      "demo.ops.yaml:4:14: error: unknown type `flaot`\n"
      " 4 |       scale: flaot = 1.0\n"
      "   |              ^~~~~\n"
      "hint: did you mean `float`?\n");
}

TEST_CASE(
    "a span without a line names only the file; one without a file names structopc",
    "[base]") {
  Sink s;
  int id = s.add("empty.ops.yaml", "");
  s.diags.error(Span{id, 0, 0, 1}, "file is empty");
  s.diags.error(Span{}, "something global");
  std::string out = s.diags.render();
  CHECK(contains(out, "empty.ops.yaml: error: file is empty\n"));
  CHECK(contains(out, "structopc: error: something global\n"));
  CHECK_FALSE(contains(out, " | "));
}

TEST_CASE("the caret keeps tabs so it lines up under the excerpt", "[base]") {
  Sink s;
  int id = s.add("t", "\tx:\tbad\n");
  s.diags.error(Span{id, 1, 5, 3}, "msg");
  CHECK(contains(s.diags.render(), " 1 | \tx:\tbad\n   | \t  \t^~~\n"));
}

TEST_CASE("carets count characters, not bytes, before them and under the span", "[base]") {
  Sink s;
  int id = s.add("t", "namespace: d\xC3\xA9mo x\n");
  s.diags.error(Span{id, 1, 12, 5}, "not an identifier");  // `démo`: 5 bytes, 4 characters
  s.diags.error(Span{id, 1, 18, 1}, "after it");
  std::string out = s.diags.render();
  CHECK(contains(out, "   |            ^~~~\n"));
  CHECK(contains(out, "   |                 ^\n"));
}

TEST_CASE("an excerpt shows control and invalid bytes as `?`", "[base]") {
  Sink s;
  int id = s.add("t", std::string("a\x1b[31mb\xFFz\x7f!", 11));
  s.diags.error(Span{id, 1, 10, 1}, "msg");
  CHECK(contains(s.diags.render(), " 1 | a?[31mb?z?!\n   |          ^\n"));
}

TEST_CASE("an excerpt shows bidi controls as `?` and the caret still lines up", "[base]") {
  Sink s;
  // U+202E (3 bytes) and U+2066 before the span: one `?` each, one pad column each.
  int id = s.add(
      "t",
      "a\xE2\x80\xAE\xE2\x81\xA6"
      "bad z\n");
  s.diags.error(Span{id, 1, 8, 3}, "msg");
  CHECK(contains(s.diags.render(), " 1 | a??bad z\n   |    ^~~\n"));
}

TEST_CASE("messages, hints and paths cannot drive the terminal", "[base]") {
  Sink s;
  int id = s.add("in\x1b[2Jput\n.ops.yaml", "x\n");
  s.diags.error(
      Span{id, 1, 1, 1},
      "unknown type `a\x1b]0;title\x07\rb\xE2\x80\xAE`",
      "did you mean `c\nd:1:1: error: fake`?");
  std::string out = s.diags.render();
  CHECK(contains(
      out,
      "in\\x1b[2Jput\\n.ops.yaml:1:1: error: unknown type `a\\x1b]0;title\\x07\\rb<U+202E>`\n"));
  CHECK(contains(out, "hint: did you mean `c\\nd:1:1: error: fake`?\n"));
  CHECK_FALSE(contains(out, "\x1b"));
  CHECK_FALSE(contains(out, "\r"));
}

TEST_CASE("a very long line is cut to a window around the caret", "[base]") {
  Sink s;
  std::string line = std::string(5000, 'a') + "XYZ" + std::string(5000, 'b');
  int id = s.add("t", line + "\n");
  s.diags.error(Span{id, 1, 5001, 3}, "here");
  std::string out = s.diags.render();
  CHECK(out.size() < 600);
  CHECK(contains(out, "t:1:5001: error: here\n"));
  // The excerpt starts and ends with "..." and the caret sits under XYZ.
  size_t excerpt = out.find(" 1 | ...");
  REQUIRE(excerpt != std::string::npos);
  size_t xyz = out.find("XYZ", excerpt);
  size_t caret_line = out.find('\n', excerpt) + 1;
  size_t caret = out.find('^', caret_line);
  REQUIRE(xyz != std::string::npos);
  REQUIRE(caret != std::string::npos);
  CHECK(caret - caret_line == xyz - excerpt);
  CHECK(out.compare(caret, 3, "^~~") == 0);
  CHECK(contains(out, "bbb...\n"));
}

TEST_CASE("a caret past the end of the line sits just after it", "[base]") {
  Sink s;
  int id = s.add("t", "ab\n");
  s.diags.error(Span{id, 1, 9, 4}, "end");
  CHECK(contains(s.diags.render(), " 1 | ab\n   |   ^\n"));
}

TEST_CASE("diagnostics are ordered by file and position; notes stay with their error", "[base]") {
  Sink s;
  int a = s.add("a", "1\n2\n3\n");
  int b = s.add("b", "x\n");
  s.diags.error(Span{b, 1, 1, 1}, "in b");
  s.diags.error(Span{a, 3, 1, 1}, "a3");
  s.diags.note(Span{a, 1, 1, 1}, "note of a3");
  s.diags.error(Span{a, 2, 1, 1}, "a2");
  std::string out = s.diags.render();
  size_t a2 = out.find("error: a2"), a3 = out.find("error: a3"),
         note = out.find("note: note of a3"), inb = out.find("error: in b");
  REQUIRE(a2 != std::string::npos);
  REQUIRE(a3 != std::string::npos);
  REQUIRE(note != std::string::npos);
  REQUIRE(inb != std::string::npos);
  CHECK(a2 < a3);
  CHECK(a3 < note);
  CHECK(note < inb);
  CHECK(s.diags.error_count() == 3);
}

TEST_CASE("the same diagnostic reported twice is shown once", "[base]") {
  Sink s;
  int id = s.add("t", "x\n");
  s.diags.error(Span{id, 1, 1, 1}, "same", "hint");
  s.diags.error(Span{id, 1, 1, 1}, "same", "hint");
  std::string out = s.diags.render();
  CHECK(out.find("error: same") == out.rfind("error: same"));
}

TEST_CASE("after 100 errors the rest are counted, not kept", "[base]") {
  Sink s;
  int id = s.add("t", "x\n");
  for (int i = 0; i < 250; ++i) {
    s.diags.error(Span{id, 1, 1, 1}, "error " + std::to_string(i));
    s.diags.note(Span{id, 1, 1, 1}, "note " + std::to_string(i));
  }
  CHECK(s.diags.error_count() == 250);
  CHECK(s.diags.items().size() == 2 * Diagnostics::kMaxKeptErrors);
  std::string out = s.diags.render();
  CHECK(contains(out, "error: error 99\n"));
  CHECK(contains(out, "note: note 99\n"));
  CHECK_FALSE(contains(out, "error: error 100\n"));
  CHECK_FALSE(contains(out, "note: note 100\n"));
  CHECK(contains(out, "structopc: note: 150 more errors not shown\n"));
}

TEST_CASE("headline has no excerpt", "[base]") {
  Sink s;
  int id = s.add("f.ops.yaml", "abc\n");
  s.diags.error(Span{id, 1, 2, 1}, "m");
  CHECK(s.diags.headline(s.diags.items()[0]) == "f.ops.yaml:1:2: error: m");
}

TEST_CASE("closest_match finds plausible typos only", "[base]") {
  std::vector<std::string> types = {"Tensor", "int", "float", "bool", "ScalarType"};
  CHECK(closest_match("flaot", types) == "float");    // a swap is one edit
  CHECK(closest_match("tensor", types) == "Tensor");  // case-insensitive
  CHECK(closest_match("Tensr", types) == "Tensor");
  CHECK(closest_match("ScalarTyp", types) == "ScalarType");
  CHECK(closest_match("AttentionSettings", types).empty());
  CHECK(closest_match("x", types).empty());
  CHECK(closest_match("anything", {}).empty());
  // The distance is cut off early only where no later row can come back under the limit.
  CHECK(closest_match("abcdefghji", {"abcdefghij"}) == "abcdefghij");
  CHECK(closest_match("zzcdefghij", {"abcdefghij", "zbcdefghij"}) == "zbcdefghij");
  CHECK(closest_match(std::string(200, 'a'), {std::string(300, 'a')}).empty());
  CHECK(
      closest_match(std::string(200, 'a'), {std::string(199, 'a') + "b"}) ==
      std::string(199, 'a') + "b");
}

TEST_CASE("quoted_list joins names with commas and `and`", "[base]") {
  CHECK(quoted_list({}).empty());
  CHECK(quoted_list({"a"}) == "`a`");
  CHECK(quoted_list({"a", "b"}) == "`a` and `b`");
  CHECK(quoted_list({"a", "b", "c"}) == "`a`, `b` and `c`");
}
