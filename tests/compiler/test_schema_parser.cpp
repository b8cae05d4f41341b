// Unit tests of the schema grammar (syntax/schema_parser).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "catch2.h"

#include "base/diagnostics.h"
#include "syntax/schema_parser.h"
#include "test_support.h"

using namespace structop;
using structop::testing::contains;

namespace {

struct Parsed {
  std::optional<syntax::FuncSig> sig;
  std::string errors;
};

Parsed parse(const std::string& text) {
  SourceManager sources;
  int id = sources.add("t.ops.yaml", text);
  Diagnostics diags(sources);
  syntax::TextOrigin origin{Span{id, 1, 1, 1}, true};
  Parsed p;
  p.sig = syntax::parse_func(text, origin, diags);
  p.errors = diags.render();
  return p;
}

/// The rendered error of a bad func line (must fail).
std::string error_of(const std::string& text) {
  Parsed p = parse(text);
  CHECK_FALSE(p.sig);
  return p.errors;
}

struct Field {
  bool ok = false;
  syntax::TypeExpr type;
  std::optional<syntax::Literal> default_value;
  std::string errors;
};

Field field(const std::string& text, std::string_view context = {}) {
  SourceManager sources;
  int id = sources.add("t.ops.yaml", text);
  Diagnostics diags(sources);
  syntax::TextOrigin origin{Span{id, 1, 1, 1}, true};
  Field f;
  f.ok = syntax::parse_field_spec(text, origin, diags, &f.type, &f.default_value, context);
  f.errors = diags.render();
  return f;
}

/// The default literal of `f(T x=LITERAL) -> ()`.
syntax::Literal literal(const std::string& type, const std::string& lit) {
  Parsed p = parse("f(" + type + " x=" + lit + ") -> ()");
  INFO(p.errors);
  REQUIRE(p.sig);
  REQUIRE(p.sig->params[0].default_value);
  return *p.sig->params[0].default_value;
}

}  // namespace

TEST_CASE("func with overload, kwarg-only params, defaults and named returns") {
  auto p = parse(
      "attn.fast(Tensor q, Tensor? bias=None, *, float scale=1e-5, int[2] k=1) -> (Tensor out, "
      "Tensor lse)");
  REQUIRE(p.errors.empty());
  const auto& sig = *p.sig;
  CHECK(sig.name.text == "attn");
  CHECK(sig.overload.text == "fast");
  REQUIRE(sig.params.size() == 4);
  CHECK_FALSE(sig.params[1].kwarg_only);
  CHECK(sig.params[2].kwarg_only);
  CHECK(sig.params[2].default_value->kind == syntax::Literal::Kind::Float);
  CHECK(sig.params[2].default_value->float_value == Catch::Approx(1e-5));
  CHECK(sig.params[2].default_value->text == "1e-5");
  CHECK(syntax::to_schema(sig.params[3].type) == "int[2]");
  REQUIRE(sig.returns.size() == 2);
  CHECK(sig.returns[1].name.text == "lse");
}

TEST_CASE("alias annotations round-trip") {
  auto p = parse("f(Tensor(a!) x, Tensor(a -> *) y, Tensor(a|b) z, Tensor(b)[] w) -> Tensor(a!)");
  REQUIRE(p.errors.empty());
  CHECK(syntax::to_schema(p.sig->params[0].type) == "Tensor(a!)");
  CHECK(syntax::to_schema(p.sig->params[1].type) == "Tensor(a -> *)");
  CHECK(syntax::to_schema(p.sig->params[2].type) == "Tensor(a|b)");
  CHECK(syntax::to_schema(p.sig->params[3].type) == "Tensor(b)[]");
}

TEST_CASE("string defaults decode escapes in both quote styles") {
  auto p = parse(R"(f(str a="x\"y", str b='it\'s', str c="back\\slash") -> ())");
  REQUIRE(p.errors.empty());
  CHECK(p.sig->params[0].default_value->string_value == "x\"y");
  CHECK(p.sig->params[1].default_value->string_value == "it's");
  CHECK(p.sig->params[2].default_value->string_value == "back\\slash");
}

TEST_CASE("a malformed func points at the offending column") {
  auto p = parse("op(Tensor x Tensor y) -> Tensor");
  CHECK_FALSE(p.sig);
  CHECK(
      p.errors.find("t.ops.yaml:1:13: error: op `op`: expected `,` or `)` in the parameter list, "
                    "found `Tensor`") != std::string::npos);
}

TEST_CASE("every type form of the schema round-trips through to_schema", "[syntax]") {
  const char* types[] = {
      "Tensor",
      "Tensor?",
      "Tensor[]",
      "Tensor?[]",
      "int[2]",
      "int[]?",
      "SymInt[1]",
      "Tensor(a)",
      "Tensor(a!)",
      "Tensor(a!)[]",
      "Tensor(a -> *)",
      "Tensor(a|b)",
      "Tensor(a! -> a|b)",
      "Tensor(b)[](a)",
      "Tensor(*)",
      "MyRecord",
      "ScalarType?",
      "Generator?"};
  for (const char* t : types) {
    Parsed p = parse(std::string("f(") + t + " x) -> ()");
    INFO(t << "\n" << p.errors);
    REQUIRE(p.sig);
    CHECK(syntax::to_schema(p.sig->params[0].type) == t);
  }
}

TEST_CASE("suffixes apply left to right; fixed list sizes are kept", "[syntax]") {
  Parsed p = parse("f(Tensor?[3] x) -> ()");
  REQUIRE(p.sig);
  const auto& t = p.sig->params[0].type;
  REQUIRE(t.suffixes.size() == 2);
  CHECK(t.suffixes[0].kind == syntax::TypeSuffix::Kind::Optional);
  CHECK(t.suffixes[1].kind == syntax::TypeSuffix::Kind::List);
  CHECK(t.suffixes[1].size == 3);
  CHECK(t.span.column == 3);
  CHECK(t.span.length == 10);
}

TEST_CASE("Suffixes keeps two in place and any number on the heap", "[syntax]") {
  // Five suffixes with their list sizes 0..4 and an alias on the fourth.
  syntax::Suffixes s;
  for (int64_t i = 0; i < 5; ++i) {
    syntax::TypeSuffix suffix{syntax::TypeSuffix::Kind::List, i, nullptr};
    if (i == 3) suffix.alias = std::make_shared<const syntax::AliasAnnotation>();
    s.push_back(suffix);
    REQUIRE(s.size() == static_cast<size_t>(i + 1));
    CHECK(s.back().size == i);
  }
  auto sizes = [](const syntax::Suffixes& x) {
    std::vector<int64_t> out;
    for (const auto& suffix : x) out.push_back(suffix.size);
    return out;
  };
  CHECK(sizes(s) == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(s[3].alias);
  syntax::Suffixes copy = s;
  CHECK(sizes(copy) == sizes(s));
  CHECK(copy[3].alias == s[3].alias);  // shared, not copied
  // Back down through the boundary, where the last two move back in place.
  for (int64_t i = 4; i >= 1; --i) {
    s.pop_back();
    CHECK(s.size() == static_cast<size_t>(i));
    CHECK(s.back().size == i - 1);
  }
  CHECK(sizes(copy) == std::vector<int64_t>{0, 1, 2, 3, 4});  // the copy is its own
  syntax::Suffixes moved = std::move(copy);
  CHECK(sizes(moved) == std::vector<int64_t>{0, 1, 2, 3, 4});
  CHECK(copy.empty());  // NOLINT(bugprone-use-after-move): documented as emptied
  moved = s;            // heap -> in place
  CHECK(sizes(moved) == std::vector<int64_t>{0});
  s.pop_back();
  CHECK(s.empty());
  CHECK(s.begin() == s.end());
}

TEST_CASE("return forms", "[syntax]") {
  auto returns = [](const std::string& r) {
    Parsed p = parse("f(Tensor x) -> " + r);
    INFO(p.errors);
    REQUIRE(p.sig);
    std::vector<std::string> out;
    for (const auto& ret : p.sig->returns)
      out.push_back(syntax::to_schema(ret.type) + ":" + ret.name.text);
    return out;
  };
  CHECK(returns("()").empty());
  CHECK(returns("Tensor") == std::vector<std::string>{"Tensor:"});
  CHECK(returns("Tensor[]") == std::vector<std::string>{"Tensor[]:"});
  CHECK(returns("(Tensor, Tensor)") == std::vector<std::string>{"Tensor:", "Tensor:"});
  CHECK(
      returns("(Tensor a, Tensor(b!) b)") == std::vector<std::string>{"Tensor:a", "Tensor(b!):b"});
  CHECK(returns("Tensor(a)") == std::vector<std::string>{"Tensor(a):"});
  CHECK(returns("(int, bool flag)") == std::vector<std::string>{"int:", "bool:flag"});
}

TEST_CASE("literals of every kind", "[syntax]") {
  using K = syntax::Literal::Kind;
  CHECK(literal("Tensor?", "None").kind == K::None);
  CHECK(literal("bool", "True").bool_value);
  CHECK(literal("bool", "False").kind == K::Bool);
  CHECK_FALSE(literal("bool", "False").bool_value);
  CHECK(literal("int", "-2").int_value == -2);
  CHECK(literal("int", "0").kind == K::Int);
  CHECK(literal("int", "9223372036854775807").int_value == INT64_MAX);
  CHECK(literal("float", "1e-5").float_value == Catch::Approx(1e-5));
  CHECK(literal("float", "1E+3").float_value == Catch::Approx(1000));
  CHECK(literal("float", ".5").float_value == Catch::Approx(0.5));
  CHECK(literal("float", "-.5").float_value == Catch::Approx(-0.5));
  CHECK(literal("float", "-1.5").kind == K::Float);
  CHECK(literal("float", "2.").kind == K::Float);
  CHECK(literal("str", "\"a,b\"").string_value == "a,b");
  CHECK(literal("str", "''").string_value.empty());
  CHECK(literal("str", "\"tab\\there\"").string_value == "tab\there");
  CHECK(literal("ScalarType", "float32").kind == K::Identifier);
  CHECK(literal("ScalarType", "float32").string_value == "float32");
  auto list = literal("int[]", "[1, -2,3]");
  CHECK(list.kind == K::List);
  REQUIRE(list.items.size() == 3);
  CHECK(list.items[1].int_value == -2);
  CHECK(list.text == "[1, -2,3]");  // spelling kept for the schema
  CHECK(literal("int[]", "[]").items.empty());
  CHECK(literal("float", "1e-05").text == "1e-05");
}

TEST_CASE("literal spans point at the literal", "[syntax]") {
  auto lit = literal("int[]", "[1, 2]");
  CHECK(lit.span.column == 11);
  CHECK(lit.span.length == 6);
  CHECK(lit.items[1].span.column == 15);
}

TEST_CASE("bad literals are errors at the literal", "[syntax]") {
  CHECK(contains(
      error_of("f(int x=1x) -> ()"),
      "t.ops.yaml:1:9: error: op `f`: `1x` is not a number\n"));
  CHECK(contains(error_of("f(float x=1.5f) -> ()"), "error: op `f`: `1.5f` is not a number\n"));
  CHECK(contains(
      error_of("f(int x=99999999999999999999) -> ()"),
      "error: op `f`: number `99999999999999999999` is out of range\n"));
  CHECK(contains(
      error_of("f(str x=\"a\\qb\") -> ()"),
      "t.ops.yaml:1:11: error: op `f`: unsupported escape `\\q` in string literal\n"));
  CHECK(contains(
      error_of("f(int[] x=[1, [2]]) -> ()"),
      "t.ops.yaml:1:15: error: op `f`: nested lists are not valid default values\n"));
  CHECK(contains(
      error_of("f(int[] x=[1 2]) -> ()"),
      "t.ops.yaml:1:14: error: op `f`: expected `,` or `]` in the list, found `2`\n"));
  CHECK(contains(
      error_of("f(int x=) -> ()"),
      "t.ops.yaml:1:9: error: op `f`: expected a default value, found `)`\n"));
}

TEST_CASE("a deeply nested list default fails fast instead of recursing", "[syntax]") {
  std::string text = "f(int[] x=" + std::string(200000, '[') + ") -> ()";
  CHECK(contains(
      error_of(text),
      "t.ops.yaml:1:12: error: op `f`: nested lists are not valid default values\n"));
}

TEST_CASE("record defaults: `{field: value, ...}`, nested, with spans", "[syntax]") {
  using K = syntax::Literal::Kind;
  auto lit = literal("Cfg", "{scale: 2.0, inner: {k: 7, modes: [a, b]}}");
  CHECK(lit.kind == K::Record);
  CHECK(lit.text == "{scale: 2.0, inner: {k: 7, modes: [a, b]}}");
  REQUIRE(lit.keys.size() == 2);
  REQUIRE(lit.items.size() == 2);
  CHECK(lit.keys[0].text == "scale");
  CHECK(lit.keys[0].span.column == 10);
  CHECK(lit.items[0].float_value == Catch::Approx(2.0));
  CHECK(lit.keys[1].text == "inner");
  const syntax::Literal& inner = lit.items[1];
  CHECK(inner.kind == K::Record);
  CHECK(inner.span.column == 29);
  REQUIRE(inner.keys.size() == 2);
  CHECK(inner.keys[1].text == "modes");
  CHECK(inner.items[1].kind == K::List);
  CHECK(inner.items[1].items[1].string_value == "b");
  CHECK(literal("Cfg", "{}").kind == K::Record);
  CHECK(literal("Cfg", "{}").keys.empty());
  CHECK(literal("Cfg", "{ a : 1 }").keys[0].text == "a");
}

TEST_CASE("bad record defaults are errors at the offending token", "[syntax]") {
  CHECK(contains(
      error_of("f(Cfg x={1: 2}) -> ()"),
      "t.ops.yaml:1:10: error: op `f`: expected a field name in the record default, found `1`\n"
      " 1 | f(Cfg x={1: 2}) -> ()\n"
      "   |          ^\n"
      "hint: a record default is written `{field: value, ...}`\n"));
  CHECK(contains(
      error_of("f(Cfg x={a 1}) -> ()"),
      "t.ops.yaml:1:12: error: op `f`: expected `:` after field `a`, found `1`\n"));
  CHECK(contains(
      error_of("f(Cfg x={a: 1 b: 2}) -> ()"),
      "t.ops.yaml:1:15: error: op `f`: expected `,` or `}` in the record default, found `b`\n"));
  CHECK(contains(
      error_of("f(Cfg x={a: 1,}) -> ()"),
      "t.ops.yaml:1:15: error: op `f`: expected a field name in the record default, found `}`\n"));
  CHECK(contains(
      error_of("f(Cfg x={a: }) -> ()"),
      "t.ops.yaml:1:13: error: op `f`: expected a default value, found `}`\n"));
  CHECK(contains(
      error_of("f(Cfg x={a: 1) -> ()"),
      "t.ops.yaml:1:14: error: op `f`: expected `,` or `}` in the record default, found `)`\n"));
}

TEST_CASE("a deeply nested record default fails fast instead of recursing", "[syntax]") {
  std::string deep;
  for (int i = 0; i < 100000; ++i) deep += "{a: ";
  CHECK(contains(
      error_of("f(Cfg x=" + deep + ") -> ()"),
      "t.ops.yaml:1:409: error: op `f`: record defaults nest more than 100 levels deep here\n"));
  // 100 levels are fine.
  std::string ok;
  for (int i = 0; i < 99; ++i) ok += "{a: ";
  ok += "{}" + std::string(99, '}');
  CHECK(literal("Cfg", ok).kind == syntax::Literal::Kind::Record);
}

TEST_CASE("malformed func lines put the caret on the offending token", "[syntax]") {
  SECTION("missing ->") {
    CHECK(
        error_of("op(Tensor x) Tensor") ==
        "t.ops.yaml:1:14: error: op `op`: expected `->` and the return types after `)`\n"
        " 1 | op(Tensor x) Tensor\n"
        "   |              ^~~~~~\n"
        "hint: an op without results is written `-> ()`\n");
  }
  SECTION("missing parameter name") {
    CHECK(
        error_of("op(Tensor x, float, int n) -> Tensor") ==
        "t.ops.yaml:1:19: error: op `op`: expected a parameter name after type `float`, found `,`\n"
        " 1 | op(Tensor x, float, int n) -> Tensor\n"
        "   |                   ^\n"
        "hint: parameters are written `TYPE name`, e.g. `Tensor x`\n");
  }
  SECTION("bad alias annotation") {
    CHECK(contains(
        error_of("op(Tensor(!) x) -> Tensor"),
        "t.ops.yaml:1:11: error: op `op`: expected an alias set name, found `!`\n"));
    CHECK(contains(
        error_of("op(Tensor(a! x) -> Tensor"),
        "t.ops.yaml:1:14: error: op `op`: expected `)` to close the alias annotation, "
        "found `x`\n"));
  }
  SECTION("unterminated string: underlined to the end") {
    CHECK(
        error_of("op(Tensor x, str m=\"fast) -> Tensor") ==
        "t.ops.yaml:1:20: error: op `op`: unterminated string literal\n"
        " 1 | op(Tensor x, str m=\"fast) -> Tensor\n"
        "   |                    ^~~~~~~~~~~~~~~~\n"
        "hint: close it with the same quote\n");
  }
  SECTION("other shapes") {
    CHECK(contains(
        error_of("(Tensor x) -> Tensor"),
        "t.ops.yaml:1:1: error: expected an operator name, found `(`\n"));
    CHECK(contains(
        error_of("op.(Tensor x) -> Tensor"),
        "t.ops.yaml:1:4: error: expected an overload name after `.`, found `(`\n"));
    CHECK(contains(
        error_of("op Tensor x) -> Tensor"),
        "t.ops.yaml:1:4: error: op `op`: expected `(` after the operator name, found `Tensor`\n"));
    CHECK(contains(
        error_of("op(Tensor x, *, *, int y) -> ()"),
        "t.ops.yaml:1:17: error: op `op`: `*` appears twice in the parameter list\n"));
    CHECK(contains(
        error_of("op(Tensor x, *) -> ()"),
        "t.ops.yaml:1:14: error: op `op`: `*` must be followed by keyword-only parameters\n"));
    CHECK(contains(
        error_of("op(Tensor x) -> Tensor out junk"),
        "t.ops.yaml:1:28: error: op `op`: unexpected `junk` after the return types\n"));
    CHECK(contains(
        error_of("op(Tensor x) -> (Tensor a Tensor b)"),
        "t.ops.yaml:1:27: error: op `op`: expected `,` or `)` in the return list, found "
        "`Tensor`\n"));
    CHECK(contains(
        error_of("op(Tensor x"),
        "t.ops.yaml:1:12: error: op `op`: expected `,` or `)` in the parameter list, "
        "found end of text\n"));
    CHECK(contains(error_of("op(int[x] a) -> ()"), "error: op `op`: expected `]`, found `x`\n"));
    CHECK(contains(
        error_of("op(int[-1] a) -> ()"),
        "error: op `op`: list size must be a non-negative integer, found `-1`\n"));
  }
  SECTION("tuple and dict types get a hint") {
    CHECK(
        error_of("op(Tensor x, Tuple(int, int) b) -> ()") ==
        "t.ops.yaml:1:14: error: op `op`: tuple types are not supported\n"
        " 1 | op(Tensor x, Tuple(int, int) b) -> ()\n"
        "   |              ^~~~~\n"
        "hint: use a list `T[]` or separate fields\n");
    CHECK(contains(
        error_of("op(Tensor x, Dict(str, int) b) -> ()"),
        "t.ops.yaml:1:14: error: op `op`: dict types are not supported\n"));
    CHECK(contains(
        error_of("op(Tensor x, (int, int) b) -> ()"),
        "t.ops.yaml:1:14: error: op `op`: tuple types are not supported\n"));
  }
  SECTION("a non-ASCII character is one token") {
    CHECK(contains(
        error_of("op(Tensor x, float \xC3\xA9) -> ()"),
        "t.ops.yaml:1:20: error: op `op`: expected a parameter name after type `float`, "
        "found `\xC3\xA9`\n"));
  }
}

TEST_CASE("keyword-only parameters and keyword names", "[syntax]") {
  Parsed p = parse("can_cast(ScalarType from, *, ScalarType to, bool class=False) -> bool");
  REQUIRE(p.sig);
  REQUIRE(p.sig->params.size() == 3);
  CHECK(p.sig->params[0].name.text == "from");
  CHECK_FALSE(p.sig->params[0].kwarg_only);
  CHECK(p.sig->params[1].kwarg_only);
  CHECK(p.sig->params[2].name.text == "class");
  CHECK(p.sig->params[2].kwarg_only);
}

TEST_CASE("field specs: type with optional default; context prefixes errors", "[syntax]") {
  auto f = field("float = 1.0");
  REQUIRE(f.ok);
  CHECK(f.type.base == "float");
  CHECK(f.default_value->text == "1.0");
  CHECK(f.default_value->span.column == 9);
  auto g = field("Tensor?[]");
  REQUIRE(g.ok);
  CHECK_FALSE(g.default_value);
  auto bad = field("int = 1 2", "field `R.x`");
  CHECK_FALSE(bad.ok);
  CHECK(contains(
      bad.errors,
      "t.ops.yaml:1:9: error: field `R.x`: unexpected `2` after the field type\n"));
  auto tuple = field("(int, int)", "field `R.t`");
  CHECK(contains(
      tuple.errors,
      "t.ops.yaml:1:1: error: field `R.t`: tuple types are not supported\n"));
}

TEST_CASE("lone literals (long-form defaults)", "[syntax]") {
  SourceManager sources;
  int id = sources.add("t", "x");
  Diagnostics diags(sources);
  syntax::TextOrigin origin{Span{id, 1, 1, 1}, true};
  auto lit = syntax::parse_literal("[1.5, 2]", origin, diags);
  REQUIRE(lit);
  CHECK(lit->items.size() == 2);
  CHECK_FALSE(syntax::parse_literal("1 2", origin, diags, "field `R.x`"));
  CHECK(contains(diags.render(), "error: field `R.x`: unexpected `2` after the default value\n"));
}

TEST_CASE("text that is not verbatim reports at its start", "[syntax]") {
  SourceManager sources;
  int id = sources.add("t.ops.yaml", "ops: x\n");
  Diagnostics diags(sources);
  syntax::TextOrigin folded{Span{id, 1, 6, 1}, false};
  CHECK_FALSE(syntax::parse_func("op(Tensor x) Tensor", folded, diags));
  CHECK(contains(diags.render(), "t.ops.yaml:1:6: error: op `op`: expected `->`"));
}

TEST_CASE("string defaults read octal escapes as torch does", "[syntax]") {
  auto p = parse(R"(f(str a="cr\015lf\012", str b="\000\377") -> ())");
  REQUIRE(p.errors.empty());
  CHECK(p.sig->params[0].default_value->string_value == "cr\rlf\n");
  CHECK(p.sig->params[1].default_value->string_value == std::string("\0\xff", 2));
  CHECK(contains(error_of(R"(f(str a="\01x") -> ())"), "octal escape `\\01` needs three digits"));
  CHECK(contains(error_of(R"(f(str a="\01x") -> ())"), "hint: write `\\001`"));
  CHECK(contains(error_of(R"(f(str a="\400") -> ())"), "octal escape `\\400` is above `\\377`"));
}

TEST_CASE("an integer with a leading zero is an error", "[syntax]") {
  // C++ reads `010` as octal 8, torch as 10, and Python refuses it.
  CHECK(contains(error_of("f(int a=010) -> ()"), "integer `010` has a leading zero"));
  CHECK(contains(error_of("f(int a=010) -> ()"), "hint: write `10`"));
  CHECK(contains(error_of("f(int a=-00) -> ()"), "hint: write `0`"));
  CHECK(contains(error_of("f(int[] a=[1, 02]) -> ()"), "integer `02` has a leading zero"));
  CHECK(
      parse("f(int a=0, int b=-0, float c=0.5, float d=00.5, float e=1e05) -> ()").errors.empty());
}
