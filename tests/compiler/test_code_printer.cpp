// Unit tests of emit/code_printer: templates, indentation, and the layout of
// lists where they land (the one place generated code is wrapped).
#include "catch2.h"

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "driver/compile.h"
#include "emit/code_printer.h"
#include "test_support.h"

using structop::CodePrinter;

namespace {

std::string items(int n, const std::string& stem) {
  std::string out;
  for (int i = 0; i < n; ++i) out += (i ? "," : "") + stem + std::to_string(i);
  return out;
}

}  // namespace

TEST_CASE("templates are dedented, substituted and indented", "[printer]") {
  CodePrinter p;
  p.line("namespace a {");
  {
    CodePrinter::Indent in(p);
    p.emit({{"name", "f"}, {"body", "int x = 1;\nreturn x;"}}, R"cc(
      int $name$() {
        $body$
      }
    )cc");
  }
  p.line("}");
  CHECK(p.str() == "namespace a {\n  int f() {\n    int x = 1;\n    return x;\n  }\n}\n");
}

TEST_CASE("a variable given but not used, or used but not given, is an emitter bug", "[printer]") {
  CodePrinter p;
  CHECK_THROWS_AS(p.emit({{"a", "1"}}, "x"), std::logic_error);
  CHECK_THROWS_AS(p.emit({}, "$a$"), std::logic_error);
}

TEST_CASE("a list that fits stays on its line", "[printer]") {
  CodePrinter p;
  p.emit({{"args", "(" + CodePrinter::list({"a", "b", "c"}) + ")"}}, "f$args$;");
  CHECK(p.str() == "f(a, b, c);\n");
  CodePrinter q;
  q.line("g(" + CodePrinter::list({}) + ");");
  CHECK(q.str() == "g();\n");
}

TEST_CASE(
    "a list that does not fit breaks after its opener, one item per line at +4",
    "[printer]") {
  const std::string long_a(40, 'a'), long_b(40, 'b'), long_c(40, 'c');
  CodePrinter p;
  {
    CodePrinter::Indent in(p);
    p.line("return f(" + CodePrinter::list({long_a, long_b, long_c}) + ");");
  }
  CHECK(
      p.str() ==
      "  return f(\n      " + long_a + ",\n      " + long_b + ",\n      " + long_c + ");\n");
  // Each line stays within the limit that the flat form passed.
  for (size_t at = 0, next; at < p.str().size(); at = next + 1) {
    next = p.str().find('\n', at);
    CHECK(next - at <= CodePrinter::kColumns);
  }
}

TEST_CASE("the closer's line counts: a list is measured where it lands", "[printer]") {
  // 96 columns up to the list's end, 99 with the `) {` after it: fits. Two
  // more characters (101 columns) break it.
  const std::string head = "void f(";
  const std::string a(44, 'x'), b(43, 'y');
  CodePrinter p;
  p.line(head + CodePrinter::list({a, b}) + ") {");
  CHECK(p.str() == head + a + ", " + b + ") {\n");
  CodePrinter q;
  q.line(head + CodePrinter::list({a, b + "yy"}) + ") {");
  CHECK(q.str() == "void f(\n    " + a + ",\n    " + b + "yy) {\n");
}

TEST_CASE("nested lists break from the outside in", "[printer]") {
  const structop::Code inner = "g(" +
                               CodePrinter::list({std::string(50, 'p'), std::string(50, 'q')}) +
                               ")";
  CodePrinter p;
  p.line("f(" + CodePrinter::list({"x", inner}) + ");");
  CHECK(
      p.str() == "f(\n    x,\n    g(\n        " + std::string(50, 'p') + ",\n        " +
                     std::string(50, 'q') + "));\n");
}

TEST_CASE(
    "a single item breaks after the opener only where it then fits; else its own list breaks",
    "[printer]") {
  const std::string a(30, 'a'), b(30, 'b'), c(30, 'c'), long_a(42, 'a'), long_b(42, 'b');
  // `held{f(a, b)}` too long on one line (103 columns), `f(a, b)}` fits at +4
  // (95): it moves there.
  CodePrinter fits;
  fits.line(
      "Holder held{" + CodePrinter::list({"f(" + CodePrinter::list({long_a, long_b}) + ")"}) +
      "};");
  CHECK(fits.str() == "Holder held{\n    f(" + long_a + ", " + long_b + ")};\n");
  // `f(a, b, c)}` would not fit at +4 either: `held{f(` stays, f's list breaks.
  CodePrinter nested;
  nested.line(
      "Holder held{" + CodePrinter::list({"f(" + CodePrinter::list({a, b, c}) + ")"}) + "};");
  CHECK(nested.str() == "Holder held{f(\n    " + a + ",\n    " + b + ",\n    " + c + ")};\n");
  // Where even the line up to f's opener would be too long (`push<T>(` then
  // `convert<T>(`: 106 columns), the single item goes on its own line after
  // all, and its list breaks there.
  const std::string t(50, 't');
  CodePrinter deep;
  deep.line(
      "push<" + t + ">(" +
      CodePrinter::list({"convert<" + t + ">(" + CodePrinter::list({"g(" + long_a + ")"}) + ")"}) +
      ");");
  CHECK(deep.str() == "push<" + t + ">(\n    convert<" + t + ">(\n        g(" + long_a + ")));\n");
}

TEST_CASE("a list inside a comment continues as a comment", "[printer]") {
  CodePrinter p;
  p.line("//   return {" + CodePrinter::list({std::string(45, 'a'), std::string(45, 'b')}) + "};");
  CHECK(
      p.str() == "//   return {\n//       " + std::string(45, 'a') + ",\n//       " +
                     std::string(45, 'b') + "};\n");
}

TEST_CASE(
    "a printer that does not lay out keeps its lists for the printer they land in",
    "[printer]") {
  CodePrinter inner(2, false);
  inner.line("h(" + CodePrinter::list({items(1, "u"), items(1, "v")}) + ");");
  CHECK(inner.code().flat() == "h(u0, v0);\n");
  CHECK(inner.code().has_list());  // still a list
  CodePrinter outer;
  outer.emit({{"body", inner.code().lines().front()}}, "$body$");
  CHECK(outer.str() == "h(u0, v0);\n");
  // Laid out where it lands: at +4 in the outer printer's frame.
  CodePrinter wide(2, false);
  wide.line("h(" + CodePrinter::list({std::string(50, 'u'), std::string(50, 'v')}) + ");");
  CodePrinter framed;
  CodePrinter::Indent in(framed);
  framed.emit({{"body", wide.code().lines().front()}}, "$body$");
  CHECK(
      framed.str() ==
      "  h(\n      " + std::string(50, 'u') + ",\n      " + std::string(50, 'v') + ");\n");
}

TEST_CASE("a long #error breaks after the directive, a short one stays", "[printer]") {
  CodePrinter p;
  p.line("#error \"short\"");
  const std::string message = "\"" + std::string(100, 'm') + "\"";
  p.line("#error " + message);
  CHECK(p.str() == "#error \"short\"\n#error \\\n    " + message + "\n");
}

TEST_CASE(
    "a bare braced list keeps its first item after the brace, the others aligned",
    "[printer]") {
  // As clang-format lays out a C++11 braced list (a registration table).
  const std::string a(50, 'a'), b(50, 'b');
  const structop::Code table = "{" +
                               CodePrinter::list(
                                   {"{" + CodePrinter::list({"\"" + a + "\"", "&f"}) + "}",
                                    "{" + CodePrinter::list({"\"" + b + "\"", "&g"}) + "}"}) +
                               "}";
  CodePrinter p;
  p.line("structop::impl(" + CodePrinter::list({"m", table}) + ");");
  CHECK(
      p.str() ==
      "structop::impl(\n    m,\n    {{\"" + a + "\", &f},\n     {\"" + b + "\", &g}});\n");
  // A type's braces (`T{...}`) break after the brace, as before.
  CodePrinter q;
  q.line("T{" + CodePrinter::list({a, b}) + "};");
  CHECK(q.str() == "T{\n    " + a + ",\n    " + b + "};\n");
}

TEST_CASE(
    "control characters in text are printed as they are, never taken for a list",
    "[printer]") {
  // Found by the fuzzer (tests/fuzz): a long doc line whose YAML escapes
  // spelled the bytes the printer once marked lists with threw "unbalanced
  // list in generated text".
  const std::string doc = "// " + std::string(100, 'd') + " \x01 \x02 \x03 end";
  CodePrinter p;
  p.line(doc);
  CHECK(p.str() == doc + "\n");

  const std::string a = std::string(60, 'a') + "\x03", b = std::string(60, 'b') + "\x01";
  CodePrinter q;
  q.line("f(" + CodePrinter::list({a, b}) + ");");
  CHECK(q.str() == "f(\n    " + a + ",\n    " + b + ");\n");
}

TEST_CASE("a long doc with control characters compiles", "[printer][driver]") {
  const std::string long_line(110, 'x');
  structop::testing::MemoryReader reader{
      {"main.ops.yaml",
       "namespace: demo\n"
       "records:\n"
       "  R:\n"
       "    doc: \"" +
           long_line +
           " \\x01 \\x03 \\x02\"\n"
           "    fields:\n"
           "      w: {type: Tensor, doc: \"\\x03 " +
           long_line +
           "\"}\n"
           "ops:\n"
           "  - func: op(Tensor x, R r) -> Tensor\n"
           "    doc: \"\\x01 " +
           long_line + "\"\n"}};
  structop::CompileOptions options;
  options.input = "main.ops.yaml";
  options.emit = {
      structop::OutputKind::Header,
      structop::OutputKind::Source,
      structop::OutputKind::Stubs,
      structop::OutputKind::Python,
      structop::OutputKind::Json};
  const structop::CompileResult r = structop::compile(options, reader);
  CHECK(r.diagnostics == "");
  REQUIRE(r.ok);
  CHECK(r.outputs.size() == 5);
}

// ---- Python: ruff format's layout ----------------------------------------

namespace {

using structop::Code;
using structop::ListKind;

/// One Python line laid out by a printer of Python, at `indent` spaces.
std::string python(const Code& line, int indent = 0) {
  CodePrinter p(4, true, CodePrinter::Language::Python);
  std::vector<std::unique_ptr<CodePrinter::Indent>> frames;
  for (int i = 0; i < indent; i += 4) frames.push_back(std::make_unique<CodePrinter::Indent>(p));
  p.emit({{"line", line}}, "$line$");
  return p.str();
}

}  // namespace

TEST_CASE("Python: a call that does not fit puts its arguments on one line at +4", "[printer]") {
  const std::string a(45, 'a'), b(45, 'b');
  CHECK(python("f(" + Code::list({a, b}) + ")") == "f(" + a + ", " + b + ")\n");
  CHECK(
      python("x = function(" + Code::list({a, b}) + ")") ==
      "x = function(\n    " + a + ", " + b + "\n)\n");
  // Where they do not fit there either, one per line with a trailing comma.
  const std::string c(45, 'c');
  CHECK(
      python("x = function(" + Code::list({a, b, c}) + ")") ==
      "x = function(\n    " + a + ",\n    " + b + ",\n    " + c + ",\n)\n");
}

TEST_CASE("Python: a display breaks one item per line", "[printer]") {
  const std::string a(50, 'a'), b(50, 'b');
  CHECK(
      python("x = (" + Code::list({a, b}, ListKind::Tuple) + ")") ==
      "x = (\n    " + a + ",\n    " + b + ",\n)\n");
  CHECK(python("x = (" + Code::list({"a"}, ListKind::Tuple) + ")") == "x = (a,)\n");
  CHECK(python("x = [" + Code::list({}, ListKind::Display) + "]") == "x = []\n");
}

TEST_CASE("Python: a def's lone parameter gets a trailing comma", "[printer]") {
  const std::string a(100, 'a');
  CHECK(
      python("def f(" + Code::list({a + ": int"}, ListKind::Params) + ") -> None:") ==
      "def f(\n    " + a + ": int,\n) -> None:\n");
}

TEST_CASE("Python: items break in their turn, the closer's line keeps the tail", "[printer]") {
  const std::string a(40, 'a'), b(40, 'b'), c(40, 'c');
  const Code inner = "g(" + Code::list({a, b, c}) + ")";
  CHECK(
      python("return f(" + Code::list({"x", inner}) + ")", 4) ==
      "    return f(\n        x,\n        g(\n            " + a + ",\n            " + b +
          ",\n            " + c + ",\n        ),\n    )\n");
  // A lone argument that does not fit breaks itself, without a comma after it.
  CHECK(
      python("f(" + Code::list({inner}) + ")") ==
      "f(\n    g(\n        " + a + ",\n        " + b + ",\n        " + c + ",\n    )\n)\n");
}

TEST_CASE("Python: clauses go on one line at +4, else one per line", "[printer]") {
  const std::string a(38, 'a'), b(38, 'b');
  const Code comprehension = "[" +
                             Code::list({"f(" + a + ")", "for x in " + b}, ListKind::Clauses) + "]";
  CHECK(
      python("return " + comprehension, 4) ==
      "    return [\n        f(" + a + ") for x in " + b + "\n    ]\n");
  CHECK(
      python("return " + comprehension, 24) ==
      std::string(24, ' ') + "return [\n" + std::string(28, ' ') + "f(" + a + ")\n" +
          std::string(28, ' ') + "for x in " + b + "\n" + std::string(24, ' ') + "]\n");
}

TEST_CASE("Python: an assignment's string moves into parentheses where that fits", "[printer]") {
  const std::string text = "\"" + std::string(90, 's') + "\"";
  CHECK(
      python("f.__doc__ = " + Code::list({text}, ListKind::Parenthesized)) ==
      "f.__doc__ = (\n    " + text + "\n)\n");
  const std::string longer = "\"" + std::string(100, 's') + "\"";
  CHECK(
      python("f.__doc__ = " + Code::list({longer}, ListKind::Parenthesized)) ==
      "f.__doc__ = " + longer + "\n");
  CHECK(
      python("f.__doc__ = " + Code::list({"\"s\""}, ListKind::Parenthesized)) ==
      "f.__doc__ = \"s\"\n");
}
