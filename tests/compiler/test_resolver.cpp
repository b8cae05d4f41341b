// Unit tests of check/: name resolution, types by use, defaults, record order
// and cycles, op checks. Run through load + resolve on in-memory files.
#include "catch2.h"

#include "check/describe.h"
#include "test_support.h"

#include <algorithm>
#include <string>
#include <string_view>

using namespace structop;
using structop::testing::contains;
using structop::testing::run_front_end;
using structop::testing::yaml;

namespace {

/// Errors of a file with `records:` / `ops:` bodies under `namespace: d`.
std::string errors_of(const std::string& body) {
  return run_front_end("namespace: d\n" + body).errors;
}

/// Errors of a file whose one op is `func`, on line 3:
///     namespace: d
///     ops:
///       - func: FUNC
std::string errors_of_func(const std::string& func) {
  const std::string head = yaml(R"(
      ops:
        - func: )");
  return errors_of(head + func + "\n");
}

const model::Record& record(const model::Module& m, std::string_view name) {
  for (const auto& r : m.records) {
    if (r.name == name) return r;
  }
  throw std::runtime_error("no record " + std::string(name));
}

const model::Op& op(const model::Module& m, std::string_view name) {
  for (const auto& o : m.ops) {
    if (o.qualified_name() == name) return o;
  }
  throw std::runtime_error("no op " + std::string(name));
}

}  // namespace

TEST_CASE("module facts: namespace, cpp_namespace default, stem", "[resolver]") {
  auto fe = run_front_end(yaml(R"(
      namespace: demo
      ops:
        - func: op(Tensor x) -> Tensor
  )"));
  REQUIRE(fe.ok());
  CHECK(fe.module.namespace_ == "demo");
  CHECK(fe.module.cpp_namespace == "demo");
  CHECK(fe.module.stem == "main");
  CHECK(fe.module.source_path == "main.ops.yaml");
  auto ns = run_front_end(yaml(R"(
      namespace: demo
      cpp_namespace: my::ops
  )"));
  CHECK(ns.module.cpp_namespace == "my::ops");
}

TEST_CASE("records come in dependency order whatever the declaration order", "[resolver]") {
  auto fe = run_front_end(yaml(R"(
      namespace: d
      records:
        Outer: {fields: {mid: Mid, s: float = 1.0}}
        Mid: {fields: {inner: Inner, leaf: Inner}}
        Inner: {fields: {w: Tensor}}
        Solo: {fields: {n: int = 1}}
  )"));
  REQUIRE(fe.ok());
  std::vector<std::string> order;
  for (const auto& r : fe.module.records) order.push_back(r.name);
  CHECK(order == std::vector<std::string>{"Inner", "Mid", "Outer", "Solo"});
  const auto& outer = record(fe.module, "Outer");
  REQUIRE(outer.fields.size() == 2);
  CHECK(outer.fields[0].type.is_record());
  CHECK(fe.module.records[static_cast<size_t>(outer.fields[0].type.decl)].name == "Mid");
  CHECK(outer.has_tensor_leaf);
  CHECK_FALSE(outer.all_defaulted);
  CHECK_FALSE(record(fe.module, "Solo").has_tensor_leaf);
  CHECK(record(fe.module, "Solo").all_defaulted);
}

TEST_CASE("has_tensor_leaf and all_defaulted look through nesting and optionals", "[resolver]") {
  auto fe = run_front_end(yaml(R"(
      namespace: d
      records:
        A: {fields: {t: 'Tensor? = None'}}
        B: {fields: {a: A, n: int = 2}}
        C: {fields: {l: 'Tensor[]'}}
        D: {fields: {b: B, s: str}}
  )"));
  REQUIRE(fe.ok());
  CHECK(record(fe.module, "A").has_tensor_leaf);
  CHECK(record(fe.module, "A").all_defaulted);
  CHECK(record(fe.module, "B").has_tensor_leaf);
  CHECK(record(fe.module, "B").all_defaulted);
  CHECK(record(fe.module, "C").has_tensor_leaf);
  CHECK_FALSE(record(fe.module, "C").all_defaulted);
  CHECK_FALSE(record(fe.module, "D").all_defaulted);
}

TEST_CASE("defaults are checked against their types and canonicalized", "[resolver]") {
  auto fe = run_front_end(yaml(R"(
      namespace: d
      enums: {Mode: [fast, exact]}
      records:
        R:
          fields:
            f: float = 1
            m: Mode = exact
            ms: {type: Mode, default: "fast"}
            dt: ScalarType = half
            dt2: ScalarType = bfloat16
            lay: Layout = strided
            mf: MemoryFormat = channels_last
            dev: Device = "cuda:1"
            s: Scalar = 2.5
            red: int = Mean
            li: int[] = [1, 2]
            fixed: int[2] = 3
            ol: Tensor?[] = [None]
            on: float? = None
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const auto& fields = record(fe.module, "R").fields;
  auto constant = [&](size_t i) { return fields[i].default_value->constant; };
  CHECK(fields[0].default_value->literal.text == "1");
  CHECK(constant(1) == "exact");
  CHECK(constant(2) == "fast");
  CHECK(constant(3) == "float16");  // an alias becomes the canonical name
  CHECK(constant(4) == "bfloat16");
  CHECK(constant(5) == "strided");
  CHECK(constant(6) == "channels_last");
  CHECK(constant(7) == "cuda:1");
  CHECK(describe_default(*fields[8].default_value) == "2.5");
  CHECK(fields[9].default_value->literal.string_value == "Mean");
  CHECK(fields[10].default_value->literal.items.size() == 2);
  CHECK(fields[11].default_value->literal.int_value == 3);
  CHECK(fields[12].default_value->item_constants.size() == 1);
  CHECK(fields[13].default_value->literal.kind == syntax::Literal::Kind::None);
}

TEST_CASE("defaults that do not fit are errors naming the field and the fix", "[resolver]") {
  struct Case {
    const char* field;
    const char* message;
    const char* hint;
  };
  const Case cases[] = {
      {"a: int = 1.5",
       "default `1.5` does not fit field `R.a` of type `int`",
       "write an integer, e.g. `1` or `-2`"},
      {"a: bool = 1",
       "default `1` does not fit field `R.a` of type `bool`",
       "write `True` or `False`"},
      {"a: str = hello",
       "default `hello` does not fit field `R.a` of type `str`",
       "quote it: `\"hello\"`"},
      {"a: Tensor = 0",
       "default `0` does not fit field `R.a` of type `Tensor`",
       "a tensor's only default is `None`, on a `Tensor?`"},
      {"a: float = None",
       "default `None` does not fit field `R.a` of type `float`",
       "make the type optional (`float?`) to allow `None`"},
      {"a: float = \"x\"",
       "default `\"x\"` does not fit field `R.a` of type `float`",
       "write a number, e.g. `1.0` or `1e-5`"},
      {"a: int[] = 1",
       "default `1` does not fit field `R.a` of type `int[]`",
       "write a list, e.g. `[1, 2]` or `[]`"},
      {"a: int[] = [1, x]",
       "default `x` does not fit field `R.a` of type `int`",
       "write an integer, e.g. `1` or `-2`"},
      {"a: ScalarType = flaot32",
       "default `flaot32` does not fit field `R.a` of type `ScalarType`",
       "did you mean `float32`?"},
      {"a: Layout = 3",
       "default `3` does not fit field `R.a` of type `Layout`",
       "valid values are `strided` and `sparse_coo`"},
      {"a: Device = \"gpu\"",
       "default `\"gpu\"` does not fit field `R.a` of type `Device`",
       "unknown device type `gpu` (expected e.g. `cpu`, `cuda`, `cuda:1`, `meta`)"},
      {"a: Device = \"cuda:x\"",
       "default `\"cuda:x\"` does not fit field `R.a` of type `Device`",
       "device index `x` is not a non-negative integer"},
      {"a: Scalar = \"s\"",
       "default `\"s\"` does not fit field `R.a` of type `Scalar`",
       "write a number or `True`/`False`"},
      {"a: SymInt = -4611686018427387905",
       "default `-4611686018427387905` does not fit field `R.a` of type `SymInt`",
       "a SymInt holds integers from -2^62 (-4611686018427387904) up; use `int` for smaller ones"},
      {"a: DeviceIndex = 128",
       "default `128` does not fit field `R.a` of type `DeviceIndex`",
       "write a device index from -1 to 127"},
  };
  const std::string head = yaml(R"(
      records:
        R:
          fields:
  )");
  for (const Case& c : cases) {
    std::string errors = errors_of(head + "      " + c.field + "\n");
    INFO(c.field << "\n" << errors);
    CHECK(contains(errors, std::string("error: ") + c.message + "\n"));
    CHECK(contains(errors, std::string("hint: ") + c.hint + "\n"));
  }
}

TEST_CASE("enum defaults must be values of the enum", "[resolver]") {
  std::string errors = errors_of(yaml(R"(
      enums: {MaskType: [full, causal, sliding_window]}
      records: {R: {fields: {m: MaskType = casual, n: MaskType = 3}}}
  )"));
  CHECK(contains(
      errors,
      "main.ops.yaml:3:38: error: default `casual` of field `R.m` is not a value of "
      "enum `MaskType`\n"));
  CHECK(contains(
      errors,
      "hint: did you mean `causal`? valid values are `full`, `causal` and `sliding_window`\n"));
  CHECK(contains(errors, "error: default `3` does not fit field `R.n` of type `MaskType`\n"));
  CHECK(contains(
      errors,
      "hint: write one of the values of `MaskType`: `full`, `causal` and `sliding_window`\n"));
}

TEST_CASE("enum declarations: empty and duplicate values", "[resolver]") {
  std::string errors = errors_of(yaml(R"(
      enums:
        E: []
        F: [a, b, a]
      records: {R: {fields: {e: E = x, f: F = b}}}
  )"));
  CHECK(contains(errors, "main.ops.yaml:3:3: error: enum `E` has no values\n"));
  CHECK(contains(errors, "main.ops.yaml:4:13: error: enum `F` lists `a` twice\n"));
  CHECK(contains(errors, "main.ops.yaml:4:7: note: first listed here\n"));
  // Uses of the empty enum are not blamed a second time.
  CHECK_FALSE(contains(errors, "R.e"));
}

TEST_CASE("unknown types: suggestions, hints, or where to define them", "[resolver]") {
  CHECK(contains(
      errors_of("records: {R: {fields: {a: flaot}}}\n"),
      "main.ops.yaml:2:27: error: field `R.a`: unknown type `flaot`\n"));
  CHECK(
      contains(errors_of("records: {R: {fields: {a: flaot}}}\n"), "hint: did you mean `float`?\n"));
  CHECK(contains(
      errors_of(yaml(R"(
          records: {Cfg: {fields: {a: int}}}
          ops:
            - func: op(Tensor x, Cfgg c) -> Tensor
      )")),
      "hint: did you mean `Cfg`?\n"));
  std::string none = errors_of(yaml(R"(
      ops:
        - func: op(Tensor x, AttentionSettings c) -> Tensor
  )"));
  CHECK(contains(
      none,
      "main.ops.yaml:3:24: error: parameter `c` of op `op`: unknown type `AttentionSettings`\n"));
  CHECK(contains(
      none,
      "hint: define it under `records:` or `enums:`, or include the file that does\n"));
  CHECK(contains(
      errors_of("records: {R: {fields: {a: double}}}\n"),
      "hint: the schema's floating-point type is `float` (a C++ double)\n"));
  CHECK(contains(
      errors_of("records: {R: {fields: {a: List}}}\n"),
      "hint: write a list as `T[]`, e.g. `int[]`\n"));
  CHECK(contains(
      errors_of("records: {R: {fields: {a: Optional}}}\n"),
      "hint: write an optional as `T?`"));
  CHECK(contains(
      errors_of("records: {R: {fields: {a: string}}}\n"),
      "hint: the schema's string type is `str`\n"));
}

TEST_CASE("types by use: fields, params, returns", "[resolver]") {
  CHECK(contains(
      errors_of("records: {R: {fields: {g: Generator}}}\n"),
      "error: field `R.g`: `Generator` cannot be a record field\n"));
  CHECK(contains(
      errors_of("records: {R: {fields: {t: Tensor(a!)}}}\n"),
      "error: field `R.t`: alias annotations are not allowed in record fields\n"));
  CHECK(contains(
      errors_of(yaml(R"(
          ops:
            - func: op(int(a) x) -> ()
      )")),
      "error: parameter `x` of op `op`: alias annotations apply only to `Tensor`\n"));
  CHECK(contains(
      errors_of("records: {R: {fields: {t: 'int?"
                "?'}}}\n"),
      "error: field `R.t`: `int?"
      "?` is optional twice\n"));
  CHECK(contains(
      errors_of("records: {R: {fields: {t: 'int[][]'}}}\n"),
      "error: field `R.t`: nested lists like `int[][]` are not schema types\n"));
  // Returned records: leaves of type Tensor, int, float, bool, nested.
  CHECK(errors_of(yaml(R"(
      records: {S: {fields: {m: Tensor, n: int, f: float, b: bool}}, T: {fields: {s: S}}}
      ops:
        - func: stats(Tensor x) -> (S a, T b)
          meta: custom
  )"))
            .empty());
  std::string ret = errors_of(yaml(R"(
      records: {S: {fields: {m: 'Tensor?'}}}
      ops:
        - func: stats(Tensor x) -> S
  )"));
  CHECK(contains(
      ret,
      "main.ops.yaml:4:30: error: record `S` cannot be a return type: field `S.m` has type "
      "`Tensor?`\n"));
  CHECK(contains(
      ret,
      "hint: a returned record may hold only fields of type Tensor, int, float and bool, and "
      "records of those; return the others as separate outputs\n"));
  CHECK(contains(
      errors_of(yaml(R"(
          records: {I: {fields: {w: Tensor}}, S: {fields: {i: 'I[]'}}}
          ops:
            - func: stats(Tensor x) -> S
      )")),
      "error: record `S` cannot be a return type: field `S.i` has type `I[]`\n"));
  CHECK(contains(
      errors_of(yaml(R"(
          records: {S: {fields: {m: Tensor}}}
          ops:
            - func: stats(Tensor x) -> S[]
      )")),
      "error: a return of op `stats` has type `S[]`; a record can be returned only as itself\n"));
  CHECK(contains(
      errors_of(yaml(R"(
          enums: {E: [a]}
          ops:
            - func: f(Tensor x) -> E
      )")),
      "error: enum `E` cannot be a return type\n"));
  CHECK(errors_of(yaml(R"(
      enums: {E: [a]}
      records: {R: {fields: {e: 'E[]', f: 'E[]?'}}}
  )"))
            .empty());
  const std::string optional_items = errors_of(yaml(R"(
      enums: {E: [a]}
      records: {R: {fields: {e: 'E?[]'}}}
  )"));
  CHECK(
      contains(optional_items, "error: field `R.e`: lists of optional enums are not supported\n"));
  CHECK(contains(
      optional_items,
      "hint: use `E[]` (a list of values) or `E[]?` (an optional list)\n"));
  CHECK(contains(
      errors_of(yaml(R"(
          enums: {E: [a]}
          records: {R: {fields: {e: 'E[2]'}}}
      )")),
      "error: field `R.e`: enum lists have no fixed size\n"));
  // Lists of records (`L[]`) and optional records (`L?`) are supported;
  // optional and fixed-size lists of records are not, nor lists of optional
  // records, nor items with leaves whose list is not a schema type, nor a
  // list of records inside one.
  CHECK(errors_of(yaml(R"(
      records:
        L: {fields: {w: Tensor, b: 'Tensor?', n: int, e: str}}
        N: {fields: {ls: 'L[]'}}
      ops:
        - func: op(Tensor x, L[] ls, N n) -> Tensor
  )"))
            .empty());
  std::string lists = errors_of(yaml(R"(
      records:
        L: {fields: {w: Tensor}}
        N: {fields: {ls: 'L[]?'}}
      ops:
        - func: op(Tensor x, L?[] o, L[3] f) -> Tensor
  )"));
  CHECK(contains(
      lists,
      "error: field `N.ls` has type `L[]?`, but fixed-size or optional lists of records and "
      "lists of optional records are not supported\n"));
  CHECK(contains(lists, "hint: use a plain `L`, an optional `L?` or a list `L[]`\n"));
  CHECK(contains(
      lists,
      "error: parameter `o` of op `op` has type `L?[]`, but fixed-size or optional lists of "
      "records and lists of optional records are not supported\n"));
  CHECK(contains(lists, "error: parameter `f` of op `op` has type `L[3]`, but fixed-size"));
  // Optional records: they need a leaf that is never None (the presence
  // witness), hold no list of records, and default only to None.
  CHECK(errors_of(yaml(R"(
      records:
        I: {fields: {w: Tensor, k: 'int?'}}
        R: {fields: {i: 'I?', s: float}}
      ops:
        - func: op(Tensor x, R? r=None, I? i=None) -> Tensor
  )"))
            .empty());
  CHECK(contains(
      errors_of(yaml(R"(
          records:
            I: {fields: {w: Tensor}}
            R: {fields: {i: 'I?', k: 'int?'}}
          ops:
            - func: op(Tensor x, R? r=None) -> Tensor
      )")),
      "error: parameter `r` of op `op` has type `R?`, but every leaf of record `R` may be None"));
  CHECK(contains(
      errors_of(yaml(R"(
          records:
            I: {fields: {w: Tensor}}
            R: {fields: {is: 'I[]'}}
          ops:
            - func: op(Tensor x, R? r) -> Tensor
      )")),
      "but `R.is` is a list of records, which an optional record cannot hold\n"));
  CHECK(contains(
      errors_of(yaml(R"(
          records:
            I: {fields: {w: Tensor, s: float = 1.0}}
          ops:
            - func: "op(Tensor x, I? i={s: 2.0}) -> Tensor"
      )")),
      "hint: an optional record defaults only to `None`"));
  std::string leaves = errors_of(yaml(R"(
      records:
        L: {fields: {w: Tensor, o: 'float?'}}
        M: {fields: {x: Tensor}}
        N: {fields: {ms: 'M[]'}}
      ops:
        - func: op(Tensor x, L[] ls, N[] ns, M[] d=[]) -> Tensor
  )"));
  CHECK(contains(
      leaves,
      "error: parameter `ls` of op `op` has type `L[]`, but field `L.o` has type `float?`: a list "
      "of records is one list per leaf, and torch's schemas have no list of that type\n"));
  CHECK(contains(
      leaves,
      "error: parameter `ns` of op `op` has type `N[]`, but field `N.ms` is a "
      "list of records"));
  CHECK(contains(
      errors_of(yaml(R"(
          records: {M: {fields: {x: Tensor}}}
          ops:
            - func: "op(Tensor x, M[] d=[{x: None}]) -> Tensor"
      )")),
      "hint: a list of records can only default to `[]`\n"));
  std::string record_none = errors_of(yaml(R"(
      records: {R: {fields: {w: Tensor}}}
      ops:
        - func: op(Tensor x, R r=None) -> Tensor
  )"));
  CHECK(contains(
      record_none,
      "error: default `None` does not fit parameter `r` of op `op` of type `R`\n"));
  CHECK(contains(
      record_none,
      "hint: a record default sets fields by name: `{field: value, ...}`, or `{}` for the "
      "defaults `R` declares\n"));
}

TEST_CASE("record defaults set fields by name, checked field by field", "[resolver]") {
  auto fe = run_front_end(yaml(R"(
      namespace: d
      enums: {Mode: [fast, exact]}
      records:
        I: {fields: {k: int, scale: float = 1.0, mode: Mode = fast, dtype: ScalarType = float32}}
        R:
          fields:
            i: 'I = {k: 3, mode: exact}'
            j: {type: I, default: {dtype: half, k: 4}}
        Top: {fields: {r: R, n: int = 0}}
      ops:
        - func: "op(Tensor x, R r={j: {k: 5}}, I i={k: 1}) -> Tensor"
        - func: implicit(Tensor x, R r) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const model::Record& r = record(fe.module, "R");
  CHECK(r.all_defaulted);  // its fields have defaults, although I has a required field
  CHECK_FALSE(record(fe.module, "I").all_defaulted);
  CHECK(record(fe.module, "Top").all_defaulted);
  const model::Default& i = *r.fields[0].default_value;
  // Checked and canonicalized per field, in field order.
  REQUIRE(i.record_fields == std::vector<size_t>{0, 2});
  CHECK(i.record_values[1].constant == "exact");
  const model::Default& j = *r.fields[1].default_value;
  REQUIRE(j.record_fields == std::vector<size_t>{0, 3});  // k, then dtype
  CHECK(j.record_values[1].constant == "float16");
  CHECK(j.record_value(3) == &j.record_values[1]);
  CHECK(j.record_value(1) == nullptr);
  const model::Op& o = op(fe.module, "op");
  REQUIRE(o.params[1].default_value);
  CHECK(o.params[1].default_value->record_fields == std::vector<size_t>{1});
  CHECK_FALSE(o.params[1].implicit_default);  // it has an explicit one
  CHECK(o.params[2].default_value);
  CHECK(op(fe.module, "implicit").params[1].implicit_default);
}

TEST_CASE("record defaults that do not fit are errors at the field", "[resolver]") {
  const std::string decls = yaml(R"(
      enums: {Mode: [fast, exact]}
      records:
        I: {fields: {k: int, scale: float = 1.0, mode: Mode = fast, w: 'Tensor? = None'}}
  )");
  auto field_error = [&](const std::string& def) {
    return errors_of(decls + "  R: {fields: {i: 'I = " + def + "'}}\n");
  };
  std::string unknown = field_error("{k: 1, scael: 2.0}");
  CHECK(contains(
      unknown,
      "main.ops.yaml:5:31: error: record `I` has no field `scael` (in the default of field "
      "`R.i`)\n"));
  CHECK(contains(unknown, "hint: did you mean `scale`?\n"));
  CHECK(contains(
      field_error("{k: 1, zzz: 2}"),
      "hint: its fields are `k`, `scale`, `mode` and `w`\n"));
  std::string twice = field_error("{k: 1, k: 2}");
  CHECK(contains(
      twice,
      "main.ops.yaml:5:31: error: the default of field `R.i` sets field `k` twice\n"));
  CHECK(contains(twice, "main.ops.yaml:5:25: note: `k` is first set here\n"));
  std::string unset = field_error("{scale: 2.0}");
  CHECK(contains(
      unset,
      "main.ops.yaml:5:24: error: the default of field `R.i` leaves field `I.k` unset, and it has "
      "no default\n"));
  CHECK(contains(unset, "hint: set it: `k: VALUE`\n"));
  std::string wrong = field_error("{k: 1.5, mode: slow}");
  CHECK(contains(
      wrong,
      "main.ops.yaml:5:28: error: default `1.5` does not fit field `I.k` of type `int`\n"));
  CHECK(contains(
      wrong,
      "main.ops.yaml:5:39: error: default `slow` of field `I.mode` is not a value of enum "
      "`Mode`\n"));
  CHECK(contains(
      field_error("{k: 1, w: {}}"),
      "error: default `{}` does not fit field `I.w` of type `Tensor?`\n"));
  CHECK(contains(
      errors_of(decls + "  R: {fields: {n: 'int = {k: 1}'}}\n"),
      "hint: `{field: value, ...}` is the default of a record; this type takes a schema "
      "literal\n"));
  CHECK(contains(
      errors_of(decls + "  R: {fields: {i: I = 3}}\n"),
      "error: default `3` does not fit field `R.i` of type `I`\n"));
  // A record with a required tensor has no default at all.
  CHECK(contains(
      errors_of(yaml(R"(
          records:
            T: {fields: {w: Tensor}}
            R: {fields: {t: 'T = {}'}}
      )")),
      "error: the default of field `R.t` leaves field `T.w` unset, and it has no default\n"));
  // Parameters are checked the same way.
  CHECK(contains(
      errors_of(decls + yaml(R"(
          ops:
            - func: "op(Tensor x, I i={k: True}) -> Tensor"
      )")),
      "error: default `True` does not fit field `I.k` of type `int`\n"));
}

TEST_CASE("declarations: built-in names, reserved names, duplicates", "[resolver]") {
  std::string builtin = errors_of(yaml(R"(
      records:
        Device: {fields: {i: int = 0}}
      enums:
        float: [a]
  )"));
  CHECK(contains(
      builtin,
      "main.ops.yaml:3:3: error: `Device` is a built-in type and cannot be redefined\n"));
  CHECK(contains(
      builtin,
      "main.ops.yaml:5:3: error: `float` is a built-in type and cannot be redefined\n"));
  CHECK(contains(
      errors_of(yaml(R"(
          records:
            Dict: {fields: {i: int}}
      )")),
      "error: `Dict` is reserved and cannot name a record or enum\n"));
  std::string dup = errors_of(yaml(R"(
      enums:
        X: [a]
      records:
        X: {fields: {i: int}}
  )"));
  CHECK(contains(dup, "main.ops.yaml:5:3: error: `X` is already defined\n"));
  CHECK(contains(dup, "main.ops.yaml:3:3: note: `X` first defined here\n"));
}

TEST_CASE("record cycles are reported once with the path", "[resolver]") {
  std::string direct = errors_of(yaml(R"(
      records:
        Node: {fields: {v: Tensor, next: Node}}
  )"));
  CHECK(contains(
      direct,
      "main.ops.yaml:3:36: error: record `Node` contains itself: Node.next -> Node\n"));
  std::string two = errors_of(yaml(R"(
      records:
        A: {fields: {b: B}}
        B: {fields: {a: A}}
  )"));
  CHECK(
      two ==
      "main.ops.yaml:4:19: error: record `A` contains itself: A.b -> B.a -> A\n"
      " 4 |   B: {fields: {a: A}}\n"
      "   |                   ^\n"
      "hint: records are values and cannot nest themselves; break the cycle\n");
  std::string three = errors_of(yaml(R"(
      records:
        A: {fields: {b: B}}
        B: {fields: {c: C}}
        C: {fields: {a: A, x: int}}
  )"));
  CHECK(contains(three, "error: record `A` contains itself: A.b -> B.c -> C.a -> A\n"));
}

TEST_CASE("a broken record is not blamed again where it is used", "[resolver]") {
  std::string errors = errors_of(yaml(R"(
      records:
        Bad: {fields: {x: flaot}}
        Outer: {fields: {b: Bad}}
      ops:
        - func: op(Tensor x, Outer o, Bad b) -> Tensor
  )"));
  CHECK(
      errors ==
      "main.ops.yaml:3:21: error: field `Bad.x`: unknown type `flaot`\n"
      " 3 |   Bad: {fields: {x: flaot}}\n"
      "   |                     ^~~~~\n"
      "hint: did you mean `float`?\n");
}

TEST_CASE("nesting depth and leaf counts are bounded", "[resolver]") {
  SECTION("a chain of 100 records is fine") {
    std::string text = yaml(R"(
        namespace: d
        records:
          R0: {fields: {x: Tensor}}
    )");
    for (int i = 1; i < 100; ++i) {
      text += "  R" + std::to_string(i) + ": {fields: {r: R" + std::to_string(i - 1) + "}}\n";
    }
    text += yaml(R"(
        ops:
          - func: op(Tensor x, R99 c) -> Tensor
    )");
    auto fe = run_front_end(text);
    REQUIRE(fe.ok());
    CHECK(fe.op("op").slots.back().path.size() == std::string("c").size() + 99 * 2 + 2);
  }
  SECTION("deeper than 100 is an error, reported once") {
    std::string text = yaml(R"(
        namespace: d
        records:
          R0: {fields: {x: Tensor}}
    )");
    for (int i = 1; i < 1500; ++i) {
      text += "  R" + std::to_string(i) + ": {fields: {r: R" + std::to_string(i - 1) + "}}\n";
    }
    auto fe = run_front_end(text);
    CHECK(fe.diags->error_count() == 1);
    CHECK(contains(
        fe.errors,
        "error: field `R100.r`: records nest more than 100 levels deep here\n"));
  }
  SECTION("doubling records cannot blow up the lowering") {
    std::string text = yaml(R"(
        namespace: d
        records:
          R0: {fields: {x: Tensor}}
    )");
    for (int i = 1; i < 40; ++i) {
      std::string prev = "R" + std::to_string(i - 1);
      text += "  R" + std::to_string(i) + ": {fields: {a: " + prev + ", b: " + prev + "}}\n";
    }
    text += yaml(R"(
        ops:
          - func: op(Tensor x, R39 c) -> Tensor
    )");
    auto fe = run_front_end(text);
    CHECK(fe.diags->error_count() == 1);
    CHECK(contains(
        fe.errors,
        "error: record `R17` has more than 100000 leaf fields (counting every nested record)\n"));
  }
  SECTION("an op may lower to at most 100000 parameters") {
    std::string text = yaml(R"(
        namespace: d
        records:
          R0: {fields: {x: Tensor}}
    )");
    for (int i = 1; i <= 16; ++i) {
      std::string prev = "R" + std::to_string(i - 1);
      text += "  R" + std::to_string(i) + ": {fields: {a: " + prev + ", b: " + prev + "}}\n";
    }
    text += yaml(R"(
        ops:
          - func: op(Tensor x, R16 c, R16 d) -> Tensor
    )");
    auto fe = run_front_end(text);
    CHECK(contains(
        fe.errors,
        "error: op `op` lowers to 131073 parameters; at most 100000 are supported\n"));
  }
  SECTION("all ops together may lower to at most 200000 parameters") {
    std::string text = yaml(R"(
        namespace: d
        records:
          R0: {fields: {x: Tensor}}
    )");
    for (int i = 1; i <= 15; ++i) {
      std::string prev = "R" + std::to_string(i - 1);
      text += "  R" + std::to_string(i) + ": {fields: {a: " + prev + ", b: " + prev + "}}\n";
    }
    text += "ops:\n";
    for (int i = 0; i < 10; ++i)
      text += "  - func: op" + std::to_string(i) + "(Tensor x, R15 c) -> Tensor\n";
    auto fe = run_front_end(text);
    CHECK(fe.diags->error_count() == 1);
    CHECK(contains(
        fe.errors,
        "error: the ops of this file lower to more than 200000 parameters in total "
        "(reached at op `op6`)\n"));
  }
}

TEST_CASE("positional parameters with defaults come last", "[resolver]") {
  std::string errors = errors_of(yaml(R"(
      ops:
        - func: op(Tensor x, float s=1.0, Tensor y) -> Tensor
  )"));
  CHECK(
      errors ==
      "main.ops.yaml:3:44: error: parameter `y` of op `op` has no default but follows `s`, which "
      "has one\n"
      " 3 |   - func: op(Tensor x, float s=1.0, Tensor y) -> Tensor\n"
      "   |                                            ^\n"
      "hint: give `y` a default, move it before `s`, or make it keyword-only after `*`\n");
  // Keyword-only parameters may come in any order.
  CHECK(errors_of(yaml(R"(
      ops:
        - func: op(Tensor x, *, float s=1.0, Tensor y) -> Tensor
  )"))
            .empty());
  // A record whose fields all have defaults counts as defaulted only where
  // callers could omit it (nothing required after it)...
  CHECK(errors_of(yaml(R"(
      records: {D: {fields: {n: int = 1}}}
      ops:
        - func: op(Tensor x, float s=1.0, D d, int k=1) -> Tensor
  )"))
            .empty());
  CHECK(contains(
      errors_of(yaml(R"(
          records: {D: {fields: {n: int = 1}}}
          ops:
            - func: op(Tensor x, float s=1.0, D d, Tensor y) -> Tensor
      )")),
      "error: parameter `d` of op `op` has no default but follows `s`, which has one\n"));
  // ...and one with a required field does not.
  CHECK(contains(
      errors_of(yaml(R"(
          records: {R: {fields: {n: int}}}
          ops:
            - func: op(Tensor x, float s=1.0, R r) -> Tensor
      )")),
      "error: parameter `r` of op `op` has no default but follows `s`, which has one\n"));
}

TEST_CASE("implicit defaults of all-defaulted record parameters", "[resolver]") {
  auto fe = run_front_end(yaml(R"(
      namespace: d
      records:
        D: {fields: {n: int = 1, m: {type: float, default: 2.0}}}
        R: {fields: {n: int}}
      ops:
        - func: tail(Tensor x, D d) -> Tensor
        - func: before_required(Tensor x, D d, Tensor y) -> Tensor
        - func: before_default(Tensor x, D d, int k=3) -> Tensor
        - func: kwarg(Tensor x, *, D d, Tensor y) -> Tensor
        - func: required(Tensor x, R r) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  CHECK(op(fe.module, "tail").params[1].implicit_default);
  CHECK_FALSE(op(fe.module, "before_required").params[1].implicit_default);
  CHECK(op(fe.module, "before_default").params[1].implicit_default);
  CHECK(op(fe.module, "kwarg").params[1].implicit_default);
  CHECK_FALSE(op(fe.module, "required").params[1].implicit_default);
}

TEST_CASE("parameter names: duplicates; keyword names are fine", "[resolver]") {
  std::string dup = errors_of(yaml(R"(
      ops:
        - func: op(Tensor x, Tensor x) -> Tensor
  )"));
  CHECK(contains(dup, "main.ops.yaml:3:31: error: parameter `x` of op `op` is declared twice\n"));
  CHECK(contains(dup, "main.ops.yaml:3:21: note: first declared here\n"));
  auto fe = run_front_end(yaml(R"(
      namespace: d
      ops:
        - func: can_cast(ScalarType from, ScalarType to) -> bool
          meta: custom
  )"));
  CHECK(fe.ok());
}

TEST_CASE("dispatch keys", "[resolver]") {
  auto fe = run_front_end(yaml(R"(
      namespace: d
      ops:
        - func: op(Tensor x) -> Tensor
          dispatch: [CUDA, CPU]
  )"));
  REQUIRE(fe.ok());
  CHECK(fe.module.ops[0].dispatch == std::vector<std::string>{"CUDA", "CPU"});
  std::string errors = errors_of(yaml(R"(
      ops:
        - func: op(Tensor x) -> Tensor
          dispatch: [CPU, CUDa, Meta, CPU, GPU, Xyz]
  )"));
  CHECK(contains(errors, "main.ops.yaml:4:21: error: op `op`: unknown dispatch key `CUDa`\n"));
  CHECK(contains(errors, "error: op `op`: `Meta` is not a dispatch key here\n"));
  CHECK(contains(
      errors,
      "hint: Meta kernels come from `meta:` (identity, a list of names, or `custom`)\n"));
  CHECK(contains(errors, "error: op `op` lists dispatch key `CPU` twice\n"));
  CHECK(contains(errors, "error: op `op`: unknown dispatch key `GPU`\n"));
  CHECK(contains(errors, "hint: did you mean `CUDA`?\n"));
  CHECK(contains(errors, "error: op `op`: unknown dispatch key `Xyz`\n"));
  CHECK(contains(errors, "hint: valid keys are `CPU`, `CUDA`, "));
}

TEST_CASE("tags: torch's operator tags, in IDL order", "[resolver]") {
  auto fe = run_front_end(yaml(R"(
      namespace: d
      ops:
        - func: op(Tensor x) -> Tensor
          tags: [pt2_compliant_tag, needs_fixed_stride_order]
  )"));
  REQUIRE(fe.ok());
  CHECK(
      fe.module.ops[0].tags ==
      std::vector<std::string>{"pt2_compliant_tag", "needs_fixed_stride_order"});
  std::string errors = errors_of(yaml(R"(
      ops:
        - func: op(Tensor x) -> Tensor
          tags: [pt2_compliant, core, core, qqqqqqqqqqqq]
  )"));
  CHECK(contains(errors, "main.ops.yaml:4:12: error: op `op`: unknown tag `pt2_compliant`\n"));
  CHECK(contains(errors, "hint: did you mean `pt2_compliant_tag`?\n"));
  CHECK(contains(errors, "error: op `op` lists tag `core` twice\n"));
  CHECK(contains(errors, "error: op `op`: unknown tag `qqqqqqqqqqqq`\n"));
  CHECK(contains(errors, "hint: torch's operator tags are `core`, `cudagraph_unsafe`, "));
}

TEST_CASE("backward: true needs tensors in and only tensors out, and no mutation", "[resolver]") {
  CHECK(contains(
      errors_of(yaml(R"(
          records: {S: {fields: {n: int}}}
          ops:
            - func: make(S s, int m) -> Tensor
              backward: true
      )")),
      "main.ops.yaml:4:11: error: op `make` has `backward: true` but no input that takes a "
      "gradient\n"));
  std::string rets = errors_of(yaml(R"(
      ops:
        - func: op(Tensor x) -> (Tensor y, int n)
          backward: true
  )"));
  CHECK(contains(
      rets,
      "main.ops.yaml:3:38: error: op `op` has `backward: true`, so it may return only "
      "`Tensor`, `Tensor[]` or records of tensors\n"));
  CHECK(contains(
      errors_of(yaml(R"(
          records: {S: {fields: {m: Tensor, n: int}}}
          ops:
            - func: op(Tensor x) -> S s
              backward: true
              meta: custom
      )")),
      "error: op `op` has `backward: true`, so a record it returns may hold only tensors, but "
      "`S.n` is not a `Tensor`\n"));
  CHECK(errors_of(yaml(R"(
      records: {S: {fields: {m: Tensor}}}
      ops:
        - func: op(Tensor x) -> S s
          backward: true
  )"))
            .empty());
  CHECK(contains(
      errors_of(yaml(R"(
          ops:
            - func: op(Tensor x) -> ()
              backward: true
      )")),
      "error: op `op` has `backward: true` but returns nothing\n"));
  CHECK(contains(
      errors_of(yaml(R"(
          records: {S: {fields: {m: Tensor}}}
          ops:
            - func: op(Tensor x, S s) -> Tensor
              backward: true
              mutates: [s]
      )")),
      "main.ops.yaml:6:15: error: op `op`: `backward: true` together with `mutates:` is not "
      "supported\n"));
  // A record with a tensor leaf is a tensor input.
  CHECK(errors_of(yaml(R"(
      records: {S: {fields: {m: Tensor}}}
      ops:
        - func: op(S s) -> Tensor
          backward: true
  )"))
            .empty());
  // `Tensor`, `Tensor?`, `Tensor[]` and `Tensor?[]` take gradients
  // (model::Type::takes_grad); an optional list `Tensor[]?` does not, so an
  // op whose only tensors are one is rejected rather than generating an
  // autograd bridge without edges.
  CHECK(errors_of(yaml(R"(
      ops:
        - func: op(Tensor[] xs) -> Tensor[]
          backward: true
          meta: custom
  )"))
            .empty());
  CHECK(errors_of(yaml(R"(
      records: {S: {fields: {m: "Tensor?[]"}}}
      ops:
        - func: op(S s) -> Tensor
          backward: true
          meta: custom
  )"))
            .empty());
  CHECK(contains(
      errors_of(yaml(R"(
          ops:
            - func: op(Tensor[]? xs) -> Tensor
              backward: true
              meta: custom
      )")),
      "error: op `op` has `backward: true` but no input that takes a gradient"));
  CHECK(contains(
      errors_of(yaml(R"(
          records: {S: {fields: {m: "Tensor[]?"}}}
          ops:
            - func: op(S s) -> Tensor
              backward: true
      )")),
      "hint: only `Tensor`, `Tensor?`, `Tensor[]` and `Tensor?[]` take gradients"));
}

TEST_CASE("op names: duplicates and C++ name clashes", "[resolver]") {
  std::string dup = errors_of(yaml(R"(
      ops:
        - func: op(Tensor x) -> Tensor
        - func: op(Tensor x, Tensor y) -> Tensor
  )"));
  CHECK(contains(dup, "main.ops.yaml:4:11: error: op `op` is declared twice\n"));
  CHECK(contains(dup, "main.ops.yaml:3:11: note: first declared here\n"));
  CHECK(errors_of(yaml(R"(
      ops:
        - func: op(Tensor x) -> Tensor
        - func: op.two(Tensor x, Tensor y) -> Tensor
  )"))
            .empty());
  std::string clash = errors_of(yaml(R"(
      ops:
        - func: op.x(Tensor x) -> Tensor
        - func: op_x(Tensor x) -> Tensor
  )"));
  CHECK(
      clash ==
      "main.ops.yaml:4:11: error: ops `op.x` and `op_x` would both be called `op_x` in C++ and "
      "Python\n"
      " 4 |   - func: op_x(Tensor x) -> Tensor\n"
      "   |           ^~~~\n"
      "hint: rename one of them\n"
      "main.ops.yaml:3:11: note: `op.x` is declared here\n"
      " 3 |   - func: op.x(Tensor x) -> Tensor\n"
      "   |           ^~\n");
  // Three ops of one C++ name: the repeat is reported against its own first
  // declaration, the clash against the first op of that C++ name.
  std::string both = errors_of(yaml(R"(
      ops:
        - func: op_x(Tensor x) -> Tensor
        - func: op.x(Tensor x) -> Tensor
        - func: op.x(Tensor y) -> Tensor
        - func: op(Tensor x) -> Tensor
        - func: op_x.y(Tensor x) -> Tensor
  )"));
  const size_t twice = both.find("main.ops.yaml:5:11: error: op `op.x` is declared twice\n");
  const size_t first = both.find("main.ops.yaml:4:11: note: first declared here\n");
  const size_t same = both.find(
      "main.ops.yaml:4:11: error: ops `op_x` and `op.x` would both be called `op_x` in C++ and "
      "Python\n");
  CHECK(twice != std::string::npos);
  CHECK(first != std::string::npos);
  CHECK(same != std::string::npos);
  CHECK(contains(both, "main.ops.yaml:3:11: note: `op_x` is declared here\n"));
  CHECK(std::count(both.begin(), both.end(), '^') == 4);  // two errors, two notes
}

TEST_CASE("all errors of a file are reported, in source order", "[resolver]") {
  std::string errors = errors_of(yaml(R"(
      enums:
        Mode: [fast, fast]
      records:
        Cfg: {fields: {scale: flaot = 1.0, mode: Mode = slow}}
      ops:
        - func: op(Tensor x, Cfg cfg) -> Tensor
          dispatch: [CPU, GPU]
        - func: bad(Tensor x -> Tensor
        - func: other(Tensor x, Cfgg cfg) -> Tensor
  )"));
  std::vector<std::string> heads;
  for (size_t pos = 0; (pos = errors.find("main.ops.yaml:", pos)) != std::string::npos; ++pos) {
    heads.push_back(errors.substr(pos, errors.find(':', errors.find(':', pos + 14) + 1) - pos));
  }
  CHECK(
      heads == std::vector<std::string>{
                   "main.ops.yaml:3:16",
                   "main.ops.yaml:3:10",
                   "main.ops.yaml:5:25",
                   "main.ops.yaml:5:51",
                   "main.ops.yaml:8:21",
                   "main.ops.yaml:9:24",
                   "main.ops.yaml:10:27"});
  CHECK(contains(
      errors,
      "error: default `slow` of field `Cfg.mode` is not a value of enum `Mode`\n"));
}

TEST_CASE("names: torch's schema words are errors, keywords and macros get a `_`", "[resolver]") {
  // Words torch's schema parser rejects, wherever a name reaches the schema.
  for (const char* word : {"class", "in", "if", "None", "True", "NoneType", "with"}) {
    INFO(word);
    const std::string w = word;
    CHECK(contains(
        errors_of_func("op(Tensor " + w + ") -> Tensor"),
        "error: parameter `" + w + "` of op `op`: torch's schema parser reserves the word"));
    CHECK(contains(
        errors_of_func(w + "(Tensor x) -> Tensor"),
        "error: op `" + w + "`: torch's schema parser reserves"));
    CHECK(contains(
        errors_of("records: {R: {fields: {" + w + ": int}}}\n"),
        "error: field `R." + w + "`: torch's schema parser reserves"));
  }
  // Keywords torch accepts, and macros, are fine: they get a trailing `_`.
  for (const char* word : {"from", "lambda", "errno", "NULL", "EOF", "INT64_MIN", "linux"}) {
    INFO(word);
    const std::string w = word;
    CHECK(errors_of_func("op(Tensor x, int " + w + "=0) -> Tensor").empty());
    CHECK(lang::api_spelling(w) == w + "_");
  }
  CHECK(lang::api_spelling("TORCH_CHECK") == "TORCH_CHECK_");
  CHECK(lang::api_spelling("errno_") == "errno_");
  CHECK(lang::api_spelling("N") == "N");
  CHECK(contains(
      errors_of(yaml(R"(
          ops:
            - func: op.default(Tensor x) -> Tensor
      )")),
      "`default` cannot be an overload name"));
}

TEST_CASE("names: generated names cannot be taken", "[resolver]") {
  CHECK(contains(
      errors_of(yaml(R"(
          records:
            R: {fields: {w: Tensor}}
            RGrad: {fields: {w: Tensor}}
      )")),
      "error: record `RGrad` cannot be called `RGrad` in generated code: that is already the "
      "grad record of record `R`"));
  // Without a tensor, R has no grad record.
  CHECK(errors_of(yaml(R"(
      records:
        R: {fields: {n: int}}
        RGrad: {fields: {n: int}}
  )"))
            .empty());
  CHECK(contains(
      errors_of(yaml(R"(
          records: {op_grads: {fields: {n: int}}}
          ops:
            - func: op(Tensor x) -> Tensor
              backward: true
      )")),
      "record `op_grads` cannot be called `op_grads`"));
  for (const char* name : {"kernels", "torch", "typing", "load_library", "str"}) {
    INFO(name);
    CHECK(contains(
        errors_of_func(name + std::string("(Tensor x) -> Tensor")),
        std::string("op `") + name + "` cannot be called"));
  }
  CHECK(contains(
      errors_of(yaml(R"(
          ops:
            - func: f(Tensor x, Tensor _f_op) -> Tensor
      )")),
      "would hide `_f_op`, a global the generated Python function uses"));
  CHECK(contains(
      errors_of("enums: {E: [a, mro]}\n"),
      "Python's enum.Enum cannot have a member `mro`"));
}
