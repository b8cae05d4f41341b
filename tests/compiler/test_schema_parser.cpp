// Unit tests of the schema grammar (syntax/schema_parser).
#include <catch2/catch.hpp>

#include "base/diagnostics.h"
#include "syntax/schema_parser.h"

using namespace structop;

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

}  // namespace

TEST_CASE("func with overload, kwarg-only params, defaults and named returns") {
  auto p = parse("attn.fast(Tensor q, Tensor? bias=None, *, float scale=1e-5, int[2] k=1) -> (Tensor out, Tensor lse)");
  REQUIRE(p.errors.empty());
  const auto& sig = *p.sig;
  CHECK(sig.name.text == "attn");
  CHECK(sig.overload.text == "fast");
  REQUIRE(sig.params.size() == 4);
  CHECK_FALSE(sig.params[1].kwarg_only);
  CHECK(sig.params[2].kwarg_only);
  CHECK(sig.params[2].default_value->kind == syntax::Literal::Kind::Float);
  CHECK(sig.params[2].default_value->float_value == Approx(1e-5));
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
  CHECK(syntax::quote_schema_string("x\"y") == R"("x\"y")");
}

TEST_CASE("a malformed func points at the offending column") {
  auto p = parse("op(Tensor x Tensor y) -> Tensor");
  CHECK_FALSE(p.sig);
  CHECK(p.errors.find("t.ops.yaml:1:13: error: expected `,` or `)` in the parameter list, found `Tensor`") !=
        std::string::npos);
}
