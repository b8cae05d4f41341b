// Unit tests of load/idl_reader: the YAML tree -> the IDL syntax tree, with
// the IDL's keys, short and long forms, and errors pointing at the right place.
#include "catch2.h"

#include "load/idl_reader.h"
#include "syntax/schema_parser.h"
#include "test_support.h"

using namespace structop;
using structop::testing::contains;
using structop::testing::yaml;

namespace {

struct Read {
  std::unique_ptr<SourceManager> sources = std::make_unique<SourceManager>();
  std::unique_ptr<Diagnostics> diags = std::make_unique<Diagnostics>(*sources);
  syntax::IdlFile file;
  std::string errors;
};

Read read(const std::string& text) {
  Read r;
  int id = r.sources->add("t.ops.yaml", text);
  YamlDocument doc;
  if (load_yaml(*r.sources, id, *r.diags, &doc)) read_idl(doc, id, *r.diags, &r.file);
  r.errors = r.diags->render();
  return r;
}

}  // namespace

TEST_CASE("a complete file reads into the syntax tree", "[reader]") {
  auto r = read(yaml(R"(
      namespace: demo
      cpp_namespace: demo::ops
      include: [common.ops.yaml, other.ops.yaml]
      doc: The demo ops.
      enums:
        MaskType: [full, causal]
        Backend:
          values: [auto, flash]
          doc: Which backend.
      records:
        Cfg:
          doc: A config.
          fields:
            w: Tensor
            scale: float = 1.0
            mode:
              type: MaskType
              default: causal
              doc: The mask.
            name:
              type: str
              default: "a b"
      ops:
        - func: op(Tensor x, Cfg cfg) -> Tensor
          backward: true
          doc: Does it.
        - func: scale_(Tensor x, Cfg cfg) -> ()
          mutates: [cfg, cfg.w]
          dispatch: [CPU, CUDA]
          meta: custom
        - func: two(Tensor q, Tensor k) -> (Tensor a, Tensor b)
          meta: [q, k]
  )"));
  REQUIRE(r.errors.empty());
  const syntax::IdlFile& f = r.file;
  CHECK(f.namespace_.text == "demo");
  CHECK(f.namespace_.span.column == 12);
  REQUIRE(f.cpp_namespace);
  CHECK(f.cpp_namespace->text == "demo::ops");
  REQUIRE(f.includes.size() == 2);
  CHECK(f.includes[1].text == "other.ops.yaml");
  CHECK(f.includes[1].span.line == 3);
  CHECK(f.includes[1].span.column == 28);

  REQUIRE(f.enums.size() == 2);
  CHECK(f.enums[0].name.text == "MaskType");
  REQUIRE(f.enums[0].values.size() == 2);
  CHECK(f.enums[0].values[1].text == "causal");
  CHECK(f.enums[0].values[1].span.column == 20);
  CHECK(f.enums[1].name.text == "Backend");
  CHECK(f.enums[1].doc == "Which backend.");
  REQUIRE(f.enums[1].values.size() == 2);
  CHECK_FALSE(f.enums[1].incomplete);

  REQUIRE(f.records.size() == 1);
  const syntax::RecordDecl& cfg = f.records[0];
  CHECK(cfg.doc == "A config.");
  CHECK_FALSE(cfg.incomplete);
  REQUIRE(cfg.fields.size() == 4);
  CHECK(cfg.fields[0].name.text == "w");
  CHECK(syntax::to_schema(cfg.fields[0].type) == "Tensor");
  CHECK_FALSE(cfg.fields[0].default_value);
  CHECK(cfg.fields[1].default_value->text == "1.0");
  CHECK(cfg.fields[1].default_value->span.line == 15);
  CHECK(cfg.fields[1].default_value->span.column == 22);
  CHECK(cfg.fields[2].type.base == "MaskType");
  CHECK(cfg.fields[2].type.span.line == 17);
  CHECK(cfg.fields[2].type.span.column == 15);
  CHECK(cfg.fields[2].default_value->kind == syntax::Literal::Kind::Identifier);
  CHECK(cfg.fields[2].doc == "The mask.");
  CHECK_FALSE(cfg.fields[2].default_is_yaml_string);
  // A quoted long-form default is the YAML string itself, re-quoted for the schema.
  CHECK(cfg.fields[3].default_is_yaml_string);
  CHECK(cfg.fields[3].default_value->string_value == "a b");
  CHECK(cfg.fields[3].default_value->text == "\"a b\"");

  REQUIRE(f.ops.size() == 3);
  CHECK(f.ops[0].sig.name.text == "op");
  CHECK(f.ops[0].backward);
  CHECK(f.ops[0].doc == "Does it.");
  CHECK(f.ops[0].meta.kind == syntax::MetaDecl::Kind::Identity);
  CHECK(f.ops[0].func_span.line == 24);
  CHECK(f.ops[0].func_span.column == 11);
  REQUIRE(f.ops[1].mutates.size() == 2);
  CHECK(f.ops[1].mutates[1].text == "cfg.w");
  CHECK(f.ops[1].mutates[1].span.column == 20);
  REQUIRE(f.ops[1].dispatch.size() == 2);
  CHECK(f.ops[1].dispatch[1].text == "CUDA");
  CHECK(f.ops[1].meta.kind == syntax::MetaDecl::Kind::Custom);
  CHECK_FALSE(f.ops[1].backward);
  CHECK(f.ops[2].meta.kind == syntax::MetaDecl::Kind::Names);
  REQUIRE(f.ops[2].meta.names.size() == 2);
  CHECK(f.ops[2].meta.names[1].text == "k");
}

TEST_CASE("positions inside func strings map to source columns", "[reader]") {
  SECTION("plain scalar") {
    auto r = read(yaml(R"(
        namespace: d
        ops:
          - func: op(Tensor x, float y=1.0) -> Tensor
    )"));
    REQUIRE(r.errors.empty());
    const auto& sig = r.file.ops[0].sig;
    CHECK(sig.name.span.column == 11);
    CHECK(sig.params[1].type.span.column == 24);
    CHECK(sig.params[1].name.span.column == 30);
    CHECK(sig.params[1].default_value->span.column == 32);
    CHECK(sig.params[1].default_value->span.length == 3);
  }
  SECTION("single-quoted scalar: columns shift past the quote") {
    auto r = read(yaml(R"(
        namespace: d
        ops:
          - func: 'op(Tensor x, float y) -> Tensor'
    )"));
    REQUIRE(r.errors.empty());
    CHECK(r.file.ops[0].sig.params[1].name.span.column == 31);
  }
  SECTION("an error inside a double-quoted func points at the bad token") {
    auto r = read(yaml(R"(
        namespace: d
        ops:
          - func: "op(Tensor x, str s='a') Tensor"
    )"));
    CHECK(contains(
        r.errors,
        "t.ops.yaml:3:36: error: op `op`: expected `->` and the return types after `)`\n"));
    CHECK(contains(
        r.errors,
        " 3 |   - func: \"op(Tensor x, str s='a') Tensor\"\n"
        "   |                                    ^~~~~~\n"));
  }
  SECTION("a folded func cannot map columns, so errors point at its start") {
    auto r = read(yaml(R"(
        namespace: d
        ops:
          - func: op(Tensor x,
              Tensor y) Tensor
    )"));
    CHECK(contains(r.errors, "t.ops.yaml:3:11: error: op `op`: expected `->`"));
  }
}

TEST_CASE("short and long field forms", "[reader]") {
  auto r = read(yaml(R"(
      namespace: d
      records:
        R:
          fields:
            a: int[2] = [1, 2]
            b: {type: 'float?', default: None}
            c:
              type: str
              default: plain
  )"));
  REQUIRE(r.errors.empty());
  const auto& fields = r.file.records[0].fields;
  REQUIRE(fields.size() == 3);
  CHECK(syntax::to_schema(fields[0].type) == "int[2]");
  CHECK(fields[0].default_value->kind == syntax::Literal::Kind::List);
  CHECK(fields[0].default_value->items.size() == 2);
  CHECK(syntax::to_schema(fields[1].type) == "float?");
  CHECK(fields[1].default_value->kind == syntax::Literal::Kind::None);
  // An unquoted long-form default is a schema literal (here an identifier,
  // which the checker rejects for a str).
  CHECK(fields[2].default_value->kind == syntax::Literal::Kind::Identifier);
  CHECK_FALSE(fields[2].default_is_yaml_string);
}

TEST_CASE("record defaults: a YAML mapping in the long form, a literal in the short", "[reader]") {
  using K = syntax::Literal::Kind;
  auto r = read(yaml(R"(
      namespace: d
      records:
        R:
          fields:
            a: {type: I, default: {k: 3, name: "x y", sizes: [1, 2], inner: {m: fast}}}
            b: "I = {k: 4}"
            c:
              type: I
              default:
                k: 5
  )"));
  REQUIRE(r.errors.empty());
  const auto& fields = r.file.records[0].fields;
  REQUIRE(fields.size() == 3);
  const syntax::Literal& a = *fields[0].default_value;
  CHECK(a.kind == K::Record);
  CHECK(a.text == "{k: 3, name: \"x y\", sizes: [1, 2], inner: {m: fast}}");
  REQUIRE(a.keys.size() == 4);
  CHECK(a.keys[0].text == "k");
  CHECK(a.keys[0].span.line == 5);
  CHECK(a.keys[0].span.column == 30);
  CHECK(a.items[0].int_value == 3);
  CHECK(a.items[1].kind == K::String);  // quoted in YAML: the string itself
  CHECK(a.items[1].string_value == "x y");
  CHECK(a.items[2].kind == K::List);
  CHECK(a.items[3].kind == K::Record);
  CHECK(a.items[3].keys[0].text == "m");
  CHECK(a.items[3].items[0].kind == K::Identifier);
  CHECK(fields[1].default_value->kind == K::Record);
  CHECK(fields[1].default_value->items[0].int_value == 4);
  CHECK(fields[2].default_value->text == "{k: 5}");
  CHECK_FALSE(fields[0].default_is_yaml_string);

  auto dup = read(yaml(R"(
      namespace: d
      records:
        R:
          fields:
            a: {type: I, default: {k: 1, k: 2}}
  )"));
  CHECK(contains(dup.errors, "error: duplicate key `k` in the default of field `R.a`\n"));
  auto empty = read(yaml(R"(
      namespace: d
      records:
        R:
          fields:
            a: {type: I, default: {k: }}
  )"));
  CHECK(contains(empty.errors, "error: field `R.a` has an empty default\n"));
}

TEST_CASE("long field form errors", "[reader]") {
  SECTION("no type") {
    auto r = read(yaml(R"(
        namespace: d
        records:
          R:
            fields:
              a: {default: 1}
    )"));
    CHECK(contains(r.errors, "t.ops.yaml:5:7: error: field `R.a` has no type\n"));
    CHECK(contains(r.errors, "hint: add `type: TYPE`\n"));
    CHECK(r.file.records[0].incomplete);
  }
  SECTION("default written into the type") {
    auto r = read(yaml(R"(
        namespace: d
        records:
          R:
            fields:
              a: {type: int = 1}
    )"));
    CHECK(contains(
        r.errors,
        "t.ops.yaml:5:23: error: in the long form the default goes under `default:`\n"));
    CHECK(contains(r.errors, "hint: write `default: 1`\n"));
  }
  SECTION("empty default") {
    auto r = read(yaml(R"(
        namespace: d
        records:
          R:
            fields:
              a:
                type: int
                default:
    )"));
    CHECK(contains(r.errors, "error: field `R.a` has an empty default\n"));
  }
  SECTION("misspelled key: reported once, with a suggestion") {
    auto r = read(yaml(R"(
        namespace: d
        records:
          R:
            fields:
              a:
                tpye: int
    )"));
    CHECK(
        r.errors ==
        "t.ops.yaml:6:9: error: unknown key `tpye` in field `R.a`\n"
        " 6 |         tpye: int\n"
        "   |         ^~~~\n"
        "hint: did you mean `type`?\n");
  }
  SECTION("a bad default names the field") {
    auto r = read(yaml(R"(
        namespace: d
        records:
          R:
            fields:
              a: {type: int, default: 1 2}
    )"));
    CHECK(contains(
        r.errors,
        "t.ops.yaml:5:33: error: field `R.a`: unexpected `2` after the default value\n"));
    auto nested = read(yaml(R"(
        namespace: d
        records:
          R:
            fields:
              a: {type: 'int[]', default: [1, [2]]}
    )"));
    CHECK(contains(
        nested.errors,
        "t.ops.yaml:5:39: error: field `R.a`: nested lists are not valid default values\n"));
  }
  SECTION("a YAML list is a list default; quoted items are strings") {
    auto r = read(yaml(R"(
        namespace: d
        records:
          R:
            fields:
              a: {type: 'int[]', default: [1, -2]}
              b: {type: 'str[]', default: [x, "y z"]}
              c: {type: 'int[]', default: []}
    )"));
    REQUIRE(r.errors.empty());
    const auto& fields = r.file.records[0].fields;
    CHECK(fields[0].default_value->kind == syntax::Literal::Kind::List);
    CHECK(fields[0].default_value->text == "[1, -2]");
    CHECK(fields[0].default_value->items[1].int_value == -2);
    CHECK(fields[1].default_value->items[0].kind == syntax::Literal::Kind::Identifier);
    CHECK(fields[1].default_value->items[1].kind == syntax::Literal::Kind::String);
    CHECK(fields[1].default_value->text == "[x, \"y z\"]");
    CHECK(fields[2].default_value->items.empty());
    CHECK(fields[2].default_value->text == "[]");
  }
}

TEST_CASE("field spec errors name the field", "[reader]") {
  auto r = read(yaml(R"(
      namespace: d
      records:
        R:
          fields:
            a: int =
            b: (int, int)
  )"));
  CHECK(contains(
      r.errors,
      "t.ops.yaml:5:15: error: field `R.a`: expected a default value, found end of text\n"));
  CHECK(contains(r.errors, "t.ops.yaml:6:10: error: field `R.b`: tuple types are not supported\n"));
  CHECK(r.file.records[0].incomplete);
  CHECK(r.file.records[0].fields.empty());
}

TEST_CASE("enum short and long forms; bad values", "[reader]") {
  auto r = read(yaml(R"(
      namespace: d
      enums:
        A: [x, y]
        B: {values: [p], doc: B doc}
        C: [ok, 1bad, 'with space']
        D: {values: 3}
        E: {doc: none}
        F: []
  )"));
  const auto& enums = r.file.enums;
  REQUIRE(enums.size() == 6);
  CHECK(enums[0].values.size() == 2);
  CHECK(enums[1].doc == "B doc");
  CHECK(enums[2].values.size() == 1);
  CHECK(enums[2].incomplete);
  CHECK(
      contains(r.errors, "t.ops.yaml:5:11: error: enum value `1bad` is not a valid identifier\n"));
  CHECK(contains(
      r.errors,
      "t.ops.yaml:5:18: error: enum value `with space` is not a valid identifier\n"));
  CHECK(contains(
      r.errors,
      "t.ops.yaml:6:15: error: values of enum `D` must be a list of names, found a scalar\n"));
  CHECK(enums[3].incomplete);
  CHECK(contains(r.errors, "t.ops.yaml:7:3: error: enum `E` has no `values`\n"));
  CHECK(enums[4].incomplete);
  // An empty list is the checker's to report (it knows the declaration).
  CHECK_FALSE(enums[5].incomplete);
  CHECK_FALSE(contains(r.errors, "`F`"));
}

TEST_CASE("unknown keys get a suggestion or the list of valid keys", "[reader]") {
  SECTION("top level") {
    auto r = read(yaml(R"(
        namespace: d
        record: {}
    )"));
    CHECK(contains(r.errors, "t.ops.yaml:2:1: error: unknown key `record` in the file\n"));
    CHECK(contains(r.errors, "hint: did you mean `records`?\n"));
  }
  SECTION("no close match lists every key") {
    auto r = read(yaml(R"(
        namespace: d
        xyzzy: 1
    )"));
    CHECK(contains(
        r.errors,
        "hint: valid keys are `namespace`, `cpp_namespace`, `include`, `doc`, `enums`, "
        "`records` and `ops`\n"));
  }
  SECTION("record: the missing `fields` is not reported as well") {
    auto r = read(yaml(R"(
        namespace: d
        records:
          R:
            feilds: {a: int}
    )"));
    CHECK(
        r.errors ==
        "t.ops.yaml:4:5: error: unknown key `feilds` in record `R`\n"
        " 4 |     feilds: {a: int}\n"
        "   |     ^~~~~~\n"
        "hint: did you mean `fields`?\n");
    REQUIRE(r.file.records.size() == 1);
    CHECK(r.file.records[0].incomplete);
  }
  SECTION("op") {
    auto r = read(yaml(R"(
        namespace: d
        ops:
          - func: op(Tensor x) -> Tensor
            mutate: [x]
    )"));
    CHECK(contains(r.errors, "t.ops.yaml:4:5: error: unknown key `mutate` in an op\n"));
    CHECK(contains(r.errors, "hint: did you mean `mutates`?\n"));
    CHECK(r.file.ops.size() == 1);
  }
  SECTION("op without func: a misspelled `func` is the only error") {
    auto r = read(yaml(R"(
        namespace: d
        ops:
          - fnuc: op(Tensor x) -> Tensor
    )"));
    CHECK(contains(r.errors, "error: unknown key `fnuc` in an op\n"));
    CHECK_FALSE(contains(r.errors, "no `func:`"));
  }
  SECTION("enum long form") {
    auto r = read(yaml(R"(
        namespace: d
        enums:
          E:
            value: [a]
    )"));
    CHECK(
        r.errors ==
        "t.ops.yaml:4:5: error: unknown key `value` in enum `E`\n"
        " 4 |     value: [a]\n"
        "   |     ^~~~~\n"
        "hint: did you mean `values`?\n");
  }
}

TEST_CASE("duplicate keys are errors with a note at the first", "[reader]") {
  auto r = read(yaml(R"(
      namespace: d
      records:
        R:
          fields:
            a: int
            a: float
  )"));
  CHECK(contains(r.errors, "t.ops.yaml:6:7: error: duplicate key `a` in fields of record `R`\n"));
  CHECK(contains(r.errors, "t.ops.yaml:5:7: note: `a` first appears here\n"));
  REQUIRE(r.file.records[0].fields.size() == 1);
  CHECK(syntax::to_schema(r.file.records[0].fields[0].type) == "int");
}

TEST_CASE("duplicate keys in a big mapping are found as in a small one", "[reader]") {
  // Over 32 entries the duplicate search sorts instead of looking back.
  std::string fields;
  for (int i = 0; i < 40; ++i) fields += "      f" + std::to_string(i) + ": int\n";
  fields += "      f7: float\n";
  fields += "      f39: float\n";
  auto r = read(yaml(R"(
      namespace: d
      records:
        R:
          fields:
  )") + fields);
  CHECK(contains(r.errors, "t.ops.yaml:45:7: error: duplicate key `f7` in fields of record `R`\n"));
  CHECK(contains(r.errors, "t.ops.yaml:12:7: note: `f7` first appears here\n"));
  CHECK(
      contains(r.errors, "t.ops.yaml:46:7: error: duplicate key `f39` in fields of record `R`\n"));
  CHECK(contains(r.errors, "t.ops.yaml:44:7: note: `f39` first appears here\n"));
  REQUIRE(r.file.records[0].fields.size() == 40);
  CHECK(syntax::to_schema(r.file.records[0].fields[7].type) == "int");
}

TEST_CASE("namespace checks", "[reader]") {
  SECTION("missing") {
    auto r = read("ops: []\n");
    CHECK(contains(r.errors, "t.ops.yaml:1:1: error: missing required key `namespace`\n"));
  }
  SECTION("not an identifier: reported once") {
    auto r = read("namespace: my-ops\n");
    CHECK(
        r.errors ==
        "t.ops.yaml:1:12: error: namespace `my-ops` is not a valid identifier\n"
        " 1 | namespace: my-ops\n"
        "   |            ^~~~~~\n"
        "hint: use letters, digits and `_`, not starting with a digit\n");
  }
  SECTION("cpp_namespace") {
    CHECK(read(yaml(R"(
        namespace: d
        cpp_namespace: a::b::c
    )"))
              .errors.empty());
    CHECK(contains(
        read(yaml(R"(
            namespace: d
            cpp_namespace: 'a::'
        )"))
            .errors,
        "error: cpp_namespace `a::` is not a C++ namespace name\n"));
    CHECK(contains(
        read(yaml(R"(
            namespace: d
            cpp_namespace: ::a
        )"))
            .errors,
        "error: cpp_namespace `::a` is not a C++ namespace name\n"));
  }
}

TEST_CASE("wrong shapes are reported with what was found", "[reader]") {
  CHECK(contains(
      read(yaml(R"(
          - a
          - b
      )"))
          .errors,
      "t.ops.yaml:1:1: error: an IDL file must be a mapping, found a list\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          ops: {a: 1}
      )"))
          .errors,
      "error: `ops` must be a list, found a mapping\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          ops: [3]
      )"))
          .errors,
      "error: each op must be a mapping with `func:`, found a scalar\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          records: [a]
      )"))
          .errors,
      "error: `records` must be a mapping of record names, found a list\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          enums: 3
      )"))
          .errors,
      "error: `enums` must be a mapping of enum names, found a scalar\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          records:
            R: 3
      )"))
          .errors,
      "error: record `R` must be a mapping with `fields`, found a scalar\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          records:
            R: {fields: [a]}
      )"))
          .errors,
      "error: fields of record `R` must be a mapping, found a list\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          records:
            R: {fields: {a: [int]}}
      )"))
          .errors,
      "error: field `R.a` must be `TYPE`, `TYPE = DEFAULT` or a mapping, found a list\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          records:
            R: {fields: {a: }}
      )"))
          .errors,
      "error: field `R.a` has no type\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          records:
            1R: {fields: {a: int}}
      )"))
          .errors,
      "error: record name `1R` is not a valid identifier\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          ops:
            - {func: 'f(Tensor x) -> Tensor', backward: yes}
      )"))
          .errors,
      "error: backward must be `true` or `false`, found `yes`\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          ops:
            - {func: 'f(Tensor x) -> Tensor', meta: other}
      )"))
          .errors,
      "error: `meta` must be `identity`, `custom` or a list of parameter names\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          ops:
            - {func: 'f(Tensor x) -> Tensor', dispatch: {a: 1}}
      )"))
          .errors,
      "error: dispatch must be a list, found a mapping\n"));
  CHECK(contains(
      read(yaml(R"(
          namespace: d
          ops:
            - {doc: x}
      )"))
          .errors,
      "error: op has no `func:`\n"));
}

TEST_CASE("a single name is accepted where a list is expected", "[reader]") {
  auto r = read(yaml(R"(
      namespace: d
      include: a.ops.yaml
      ops:
        - {func: 'f_(Tensor x) -> ()', mutates: x, dispatch: CPU}
  )"));
  REQUIRE(r.errors.empty());
  CHECK(r.file.includes.size() == 1);
  CHECK(r.file.ops[0].mutates.size() == 1);
  CHECK(r.file.ops[0].dispatch.size() == 1);
}

TEST_CASE("YAML aliases are reported once; their surroundings are not blamed", "[reader]") {
  auto r = read(yaml(R"(
      namespace: d
      records:
        A:
          fields: &f {x: int}
        B:
          fields: *f
  )"));
  CHECK(
      r.errors ==
      "t.ops.yaml:6:13: error: YAML aliases (`*name`) are not supported in structop IDL files\n"
      " 6 |     fields: *f\n"
      "   |             ^\n"
      "hint: write the value out in full\n");
  REQUIRE(r.file.records.size() == 2);
  CHECK_FALSE(r.file.records[0].incomplete);
  CHECK(r.file.records[1].incomplete);
}

TEST_CASE("is_identifier", "[reader]") {
  CHECK(is_identifier("a"));
  CHECK(is_identifier("_a1"));
  CHECK_FALSE(is_identifier(""));
  CHECK_FALSE(is_identifier("1a"));
  CHECK_FALSE(is_identifier("a-b"));
  CHECK_FALSE(is_identifier("a b"));
  CHECK_FALSE(is_identifier("d\xC3\xA9mo"));
}

TEST_CASE("annotations: a list of strings, kept as written", "[reader]") {
  auto r = read(yaml(R"(
      namespace: d
      ops:
        - func: 'f(Tensor x) -> Tensor'
          annotations: [inductor.fallback, 'cost: 2', "1", 'true', "", key=value]
  )"));
  REQUIRE(r.errors.empty());
  CHECK(
      r.file.ops[0].annotations ==
      std::vector<std::string>{"inductor.fallback", "cost: 2", "1", "true", "", "key=value"});
  auto empty = read(yaml(R"(
      namespace: d
      ops:
        - {func: 'f(Tensor x) -> Tensor', annotations: []}
  )"));
  REQUIRE(empty.errors.empty());
  CHECK(empty.file.ops[0].annotations.empty());
}

TEST_CASE("annotations that are not a list of strings", "[reader]") {
  auto at = [](const std::string& value) {
    const std::string head = yaml(R"(
        namespace: d
        ops:
          - func: 'f(Tensor x) -> Tensor'
            annotations: )");
    return read(head + value + "\n").errors;
  };
  // Not a list: the hint quotes a short value.
  CHECK(contains(
      at("fast"),
      "t.ops.yaml:4:18: error: `annotations` must be a list of strings, found a scalar\n"));
  CHECK(contains(at("fast"), "hint: write a list: `annotations: [\"fast\"]`\n"));
  CHECK(
      contains(at("{a: 1}"), "error: `annotations` must be a list of strings, found a mapping\n"));
  CHECK(contains(at("{a: 1}"), "hint: write a list of strings: `annotations: [\"text\", ...]`\n"));
  CHECK(contains(at(""), "error: `annotations` must be a list of strings, found empty\n"));
  // Items YAML reads as another type, each reported where it is.
  std::string errors = at("[ok, 1, -2.5e3, 0x1F, .inf, true, null, ~]");
  CHECK(contains(
      errors,
      "t.ops.yaml:4:23: error: an annotation must be a string, found `1`, which YAML reads as a "
      "number\n"));
  CHECK(contains(errors, "hint: quote it: \"1\"\n"));
  CHECK(contains(errors, "found `-2.5e3`, which YAML reads as a number\n"));
  CHECK(contains(errors, "found `0x1F`, which YAML reads as a number\n"));
  CHECK(contains(errors, "found `.inf`, which YAML reads as a number\n"));
  CHECK(contains(errors, "found `true`, which YAML reads as a boolean\n"));
  CHECK(!contains(errors, "`ok`"));
  CHECK(contains(
      errors,
      "t.ops.yaml:4:52: error: an annotation must be a string, found null (an empty item, `~` or "
      "`null`)\n"));
  CHECK(contains(errors, "t.ops.yaml:4:58: error: an annotation must be a string, found null"));
  CHECK(contains(
      at("[[a, b], {k: v}]"),
      "t.ops.yaml:4:19: error: an annotation must be a string, found a list\n"));
  CHECK(
      contains(at("[[a, b], {k: v}]"), "error: an annotation must be a string, found a mapping\n"));
  // Not numbers: YAML reads these as strings.
  auto plain = read(yaml(R"(
      namespace: d
      ops:
        - func: 'f(Tensor x) -> Tensor'
          annotations: [1.2.3, 1e, 0x, yes, 12abc, -, .5x]
  )"));
  CHECK(plain.errors.empty());
  CHECK(plain.file.ops[0].annotations.size() == 7);
}
