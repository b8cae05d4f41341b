// Unit tests of load/yaml_tree: YAML text -> nodes with spans.
#include "catch2.h"

#include "test_support.h"

#include <string>
#include <string_view>

using namespace structop;
using structop::testing::contains;
using structop::testing::run_yaml;
using structop::testing::yaml;

namespace {

/// The value node under `key` of mapping `map` (first occurrence).
const YamlNode& get(const YamlDocument& doc, const YamlNode& map, std::string_view key) {
  for (size_t i = 0; i < map.entry_count(); ++i) {
    if (doc.key(map, i).value == key) return doc.value(map, i);
  }
  throw std::runtime_error("no key " + std::string(key));
}

}  // namespace

TEST_CASE("keys and values keep 1-based line and column", "[yaml]") {
  auto r = run_yaml(yaml(R"(
      namespace: demo
      records:
        Cfg:
          fields:
            scale: float = 1.0
  )"));
  REQUIRE(r.ok);
  REQUIRE(r.errors.empty());
  const YamlDocument& d = r.doc;
  const YamlNode& root = d.node(d.root);
  REQUIRE(root.is_mapping());
  REQUIRE(root.entry_count() == 2);
  CHECK(d.key(root, 0).span.line == 1);
  CHECK(d.key(root, 0).span.column == 1);
  CHECK(d.key(root, 0).span.length == 9);  // `namespace`
  CHECK(d.value(root, 0).value == "demo");
  CHECK(d.value(root, 0).span.line == 1);
  CHECK(d.value(root, 0).span.column == 12);
  const YamlNode& fields = get(d, get(d, get(d, root, "records"), "Cfg"), "fields");
  REQUIRE(fields.is_mapping());
  const YamlNode& key = d.key(fields, 0);
  const YamlNode& value = d.value(fields, 0);
  CHECK(key.value == "scale");
  CHECK(key.span.line == 5);
  CHECK(key.span.column == 7);
  CHECK(value.value == "float = 1.0");
  CHECK(value.span.line == 5);
  CHECK(value.span.column == 14);
  CHECK(value.span.length == 11);
  CHECK(value.verbatim);
  CHECK_FALSE(value.quoted);
}

TEST_CASE("quoted scalars start after the quote and are marked quoted", "[yaml]") {
  auto r = run_yaml(yaml(R"(
      a: "x y"
      b: 'it''s'
      c: "esc\tape"
      d: plain
  )"));
  REQUIRE(r.ok);
  const YamlDocument& d = r.doc;
  const YamlNode& root = d.node(d.root);
  const YamlNode& a = get(d, root, "a");
  CHECK(a.value == "x y");
  CHECK(a.quoted);
  CHECK(a.verbatim);
  CHECK(a.span.column == 5);  // after `"`
  CHECK(a.span.length == 3);
  // `''` decodes to one quote, so offsets into the value no longer match the
  // source: the span shrinks to the start and is not verbatim.
  const YamlNode& b = get(d, root, "b");
  CHECK(b.value == "it's");
  CHECK(b.quoted);
  CHECK_FALSE(b.verbatim);
  CHECK(b.span.column == 5);
  CHECK(b.span.length == 1);
  const YamlNode& c = get(d, root, "c");
  CHECK(c.value == "esc\tape");
  CHECK_FALSE(c.verbatim);
  CHECK_FALSE(get(d, root, "d").quoted);
}

TEST_CASE("folded and block scalars are not verbatim", "[yaml]") {
  auto r = run_yaml(yaml(R"(
      f: op(Tensor x,
         Tensor y) -> Tensor
      g: |
        line one
        line two
  )"));
  REQUIRE(r.ok);
  const YamlDocument& d = r.doc;
  const YamlNode& root = d.node(d.root);
  const YamlNode& f = get(d, root, "f");
  CHECK(f.value == "op(Tensor x, Tensor y) -> Tensor");
  CHECK_FALSE(f.verbatim);
  CHECK(f.span.line == 1);
  CHECK(f.span.column == 4);
  const YamlNode& g = get(d, root, "g");
  CHECK(g.value == "line one\nline two\n");
  CHECK(g.quoted);  // a block scalar is never a number or a bool
  CHECK_FALSE(g.verbatim);
}

TEST_CASE("sequences keep items in order with spans; mappings keep duplicate keys", "[yaml]") {
  auto r = run_yaml(yaml(R"(
      list: [a, bb, ccc]
      k: 1
      k: 2
      empty:
  )"));
  REQUIRE(r.ok);
  const YamlDocument& d = r.doc;
  const YamlNode& root = d.node(d.root);
  CHECK(root.entry_count() == 4);
  CHECK(d.value(root, 1).value == "1");
  CHECK(d.value(root, 2).value == "2");
  CHECK(d.value(root, 3).kind == YamlNode::Kind::Null);
  const YamlNode& list = get(d, root, "list");
  REQUIRE(list.is_sequence());
  REQUIRE(d.children(list).size() == 3);
  CHECK(d.node(d.children(list)[1]).value == "bb");
  CHECK(d.node(d.children(list)[1]).span.column == 11);
  CHECK(d.node(d.children(list)[2]).span.length == 3);
  CHECK(std::string(describe(list)) == "a list");
  CHECK(std::string(describe(root)) == "a mapping");
  CHECK(std::string(describe(d.value(root, 3))) == "empty");
  CHECK(std::string(describe(d.value(root, 1))) == "a scalar");
}

TEST_CASE("an alias is reported once and never expanded", "[yaml]") {
  auto r = run_yaml(yaml(R"(
      a: &x [1, 2]
      b: *x
  )"));
  CHECK(r.ok);  // a tree is still built, so later phases find more errors
  CHECK(
      r.errors ==
      "t.yaml:2:4: error: YAML aliases (`*name`) are not supported in structop IDL files\n"
      " 2 | b: *x\n"
      "   |    ^\n"
      "hint: write the value out in full\n");
  const YamlNode& root = r.doc.node(r.doc.root);
  const YamlNode& b = get(r.doc, root, "b");
  CHECK(b.alias);
  CHECK(b.kind == YamlNode::Kind::Null);
  CHECK_FALSE(get(r.doc, root, "a").alias);
}

TEST_CASE("a billion-laughs alias bomb stays cheap", "[yaml]") {
  std::string text = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i < 10; ++i) {
    text += "a" + std::to_string(i) + ": &a" + std::to_string(i) + " [";
    for (int k = 0; k < 10; ++k) text += (k ? ", *a" : "*a") + std::to_string(i - 1);
    text += "]\n";
  }
  auto r = run_yaml(text);
  CHECK(r.doc.nodes.size() < 200);
  CHECK(r.diags->error_count() == 90);
}

TEST_CASE("empty and whitespace-only files are reported as empty", "[yaml]") {
  for (const char* text : {"", "   \n\t\n", "# only a comment\n"}) {
    auto r = run_yaml(text);
    CHECK_FALSE(r.ok);
    CHECK(
        r.errors ==
        "t.yaml: error: file is empty\n"
        "hint: an IDL file needs at least `namespace: NAME`\n");
  }
}

TEST_CASE("a second document is an error at its `---`", "[yaml]") {
  auto r = run_yaml(yaml(R"(
      a: 1
      ---
      b: 2
  )"));
  CHECK(r.ok);
  CHECK(contains(r.errors, "t.yaml:2:1: error: file contains more than one YAML document\n"));
}

TEST_CASE("syntax errors carry yaml-cpp's position and a hint", "[yaml]") {
  auto r = run_yaml(yaml(R"(
      ops:
        - func: op(Tensor x) -> Tensor
         backward: true
  )"));
  CHECK_FALSE(r.ok);
  CHECK(contains(r.errors, "t.yaml:3:4: error: invalid YAML: end of sequence not found\n"));
  CHECK(contains(r.errors, "hint: check the indentation"));
}

TEST_CASE("NUL bytes and invalid UTF-8 are rejected before parsing", "[yaml]") {
  auto nul = run_yaml(std::string("a: 1\nb: \0\n", 10));
  CHECK_FALSE(nul.ok);
  CHECK(contains(
      nul.errors,
      "t.yaml:2:4: error: file contains a NUL byte; an IDL file must be UTF-8 text\n"));
  auto bad = run_yaml("a: 1\nb: caf\xE9\n");  // Latin-1 é
  CHECK_FALSE(bad.ok);
  CHECK(contains(bad.errors, "t.yaml:2:7: error: file is not valid UTF-8 (byte 0xE9)"));
  CHECK(contains(bad.errors, " 2 | b: caf?\n"));
  auto good = run_yaml("a: caf\xC3\xA9\n");
  CHECK(good.ok);
  CHECK(good.errors.empty());
}

TEST_CASE("deep nesting is an error, not a stack overflow", "[yaml]") {
  auto r = run_yaml("a: " + std::string(100000, '['));
  CHECK_FALSE(r.ok);
  CHECK(contains(r.errors, "error: YAML nesting is too deep (more than "));
}

TEST_CASE("size and node limits stop hostile input early", "[yaml]") {
  YamlLimits small;
  small.max_bytes = 100;
  auto big = run_yaml("doc: " + std::string(200, 'x') + "\n", small);
  CHECK_FALSE(big.ok);
  CHECK(contains(
      big.errors,
      "t.yaml: error: file is too large: structop IDL files are limited to 100 bytes\n"));

  YamlLimits few;
  few.max_nodes = 10;
  auto many = run_yaml("a: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]\n", few);
  CHECK_FALSE(many.ok);
  CHECK(contains(many.errors, "error: file has more than 10 YAML nodes\n"));
  CHECK(many.doc.nodes.size() <= 10);

  YamlLimits defaults;
  CHECK(defaults.max_bytes == 4u << 20);
  CHECK(defaults.max_nodes == 500000);
}

TEST_CASE("yaml() gives a raw string's YAML as the file would hold it", "[yaml][test-support]") {
  CHECK(yaml(R"(
      namespace: d
      records:
        R:

          doc: x
  )") == "namespace: d\nrecords:\n  R:\n\n    doc: x\n");
  // Spaces on a blank line do not count; `)"` after the text: no last line break.
  CHECK(yaml("\n    a:\n   \n      b: 1") == "a:\n\n  b: 1");
  CHECK(yaml("\n") == "");
  CHECK_THROWS_AS(yaml("a: 1\n"), std::invalid_argument);
  CHECK_THROWS_AS(yaml("\n  a:\n\t b: 1\n"), std::invalid_argument);
}
