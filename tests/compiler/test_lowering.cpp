// Unit tests of lower/: flattening records into leaves, mutates / meta names, default
// conversion and the printed schema.
#include "catch2.h"

#include <set>

#include "test_support.h"

using namespace structop;
using structop::testing::contains;
using structop::testing::FrontEnd;
using structop::testing::run_front_end;
using structop::testing::yaml;

namespace {

const std::string kPrelude = yaml(R"(
    namespace: demo
    enums:
      MaskType: [full, causal, sliding_window]
    records:
      Inner: {fields: {w: Tensor, b: Tensor}}
      WeightCfg:
        fields:
          inner: Inner
          scale: float = 1.0
          mode: {type: MaskType, default: causal}
      Opt:
        fields:
          eps: float = 1e-5
          causal: bool = False
)");

/// Lowers kPrelude followed by `ops` (the text from `ops:` on, line 16).
FrontEnd lower_ops(const std::string& ops) {
  return run_front_end(kPrelude + ops);
}

/// The lowered schema of the single op in `ops`.
std::string schema_of(const std::string& ops) {
  FrontEnd fe = lower_ops(ops);
  INFO(fe.errors);
  REQUIRE(fe.ok());
  REQUIRE(fe.lowered.ops.size() == 1);
  return fe.lowered.ops[0].schema;
}

std::vector<std::string> names(const lower::LoweredOp& op) {
  std::vector<std::string> out;
  for (const auto& s : op.slots) out.push_back(s.name);
  return out;
}

}  // namespace

TEST_CASE("primitive parameters lower as they are", "[lowering]") {
  CHECK(schema_of(yaml(R"(
      ops:
        - func: op(Tensor x, int n=3, float? s=None, *, str m="a") -> Tensor
  )")) == "op(Tensor x, int n=3, float? s=None, *, str m=\"a\") -> Tensor");
  // Types torch 2.x added to the schema language.
  CHECK(schema_of(yaml(R"(
      ops:
        - func: op(Tensor x, DeviceIndex d=-1) -> SymBool
          meta: custom
  )")) == "op(Tensor x, DeviceIndex d=-1) -> SymBool");
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op.ov(Tensor x, int n) -> (Tensor a, Tensor b)
          meta: [x, x]
  )"));
  REQUIRE(fe.ok());
  const auto& lo = fe.op("op.ov");
  CHECK(lo.cpp_name == "op_ov");
  CHECK(lo.schema == "op.ov(Tensor x, int n) -> (Tensor a, Tensor b)");
  REQUIRE(lo.slots.size() == 2);
  CHECK(lo.slots[1].path == "n");
  CHECK(lo.slots[1].param == 1);
  CHECK_FALSE(lo.slots[1].from_record());
}

TEST_CASE("records lower to their leaves, depth first, at the parameter's position", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, WeightCfg cfg, Tensor y) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const auto& lo = fe.op("op");
  CHECK(
      names(lo) == std::vector<std::string>{
                       "x",
                       "cfg__inner__w",
                       "cfg__inner__b",
                       "cfg__scale",
                       "cfg__mode",
                       "y"});
  CHECK(lo.slots[1].path == "cfg.inner.w");
  CHECK(lo.slots[1].param == 1);
  CHECK(lo.slots[1].fields == std::vector<size_t>{0, 0});
  CHECK(lo.slots[2].fields == std::vector<size_t>{0, 1});
  CHECK(lo.slots[3].fields == std::vector<size_t>{1});
  CHECK(lo.slots[5].param == 2);
  CHECK(lo.slots[1].takes_grad);
  CHECK_FALSE(lo.slots[3].takes_grad);
  // y has no default, so the leaves before it lose theirs in the schema.
  CHECK(
      lo.schema ==
      "op(Tensor x, Tensor cfg__inner__w, Tensor cfg__inner__b, float cfg__scale, str cfg__mode, "
      "Tensor y) -> Tensor");
}

TEST_CASE("optional records lower to optional leaves, None when absent", "[lowering]") {
  const FrontEnd fe = run_front_end(yaml(R"(
      namespace: demo
      records:
        I: {fields: {w: Tensor, k: int = 2}}
        R: {fields: {b: 'Tensor?', s: float = 1.0, i: 'I? = None'}}
      ops:
        - func: op(Tensor x, I? j, R? r=None) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const lower::LoweredOp& op = fe.lowered.ops.at(0);
  CHECK(
      op.schema ==
      "op(Tensor x, Tensor? j__w, int? j__k, Tensor? r__b=None, float? r__s=None, Tensor? "
      "r__i__w=None, int? r__i__k=None) -> Tensor");
  // Where the optional records are on each leaf's path.
  CHECK(op.slots[0].optional_at.empty());
  CHECK(op.slots[1].optional_at == std::vector<size_t>{0});
  CHECK(op.slots[3].optional_at == std::vector<size_t>{0});
  CHECK(op.slots[5].optional_at == std::vector<size_t>{0, 1});
  // Gradients for the tensors, now `Tensor?`.
  CHECK(op.grad_slots == std::vector<size_t>{0, 1, 3, 5});
  // The records' required leaves: the first is the presence witness.
  const auto& records = fe.lowered.records;
  CHECK(records.at(0).required_leaves == std::vector<size_t>{0, 1});  // I: w, k
  CHECK(records.at(1).required_leaves == std::vector<size_t>{1});     // R: s (b, i.* may be None)
}

TEST_CASE("leaves keep the kwarg-only-ness of their parameter", "[lowering]") {
  CHECK(
      schema_of(yaml(R"(
          ops:
            - func: op(Tensor x, *, WeightCfg cfg, Tensor y) -> Tensor
      )")) ==
      "op(Tensor x, *, Tensor cfg__inner__w, Tensor cfg__inner__b, float cfg__scale=1.0, "
      "str cfg__mode=\"causal\", Tensor y) -> Tensor");
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, *, Opt o) -> Tensor
  )"));
  REQUIRE(fe.ok());
  for (const auto& s : fe.op("op").slots) CHECK(s.kwarg_only == (s.path != "x"));
}

TEST_CASE("enum leaves lower to str with the value's string as default", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, WeightCfg cfg) -> Tensor
  )"));
  REQUIRE(fe.ok());
  const auto& mode = fe.slot("op", "cfg__mode");
  CHECK(mode.type.is_enum());  // the slot remembers the enum for the APIs
  CHECK(mode.schema_type == "str");
  REQUIRE(mode.schema_default);
  CHECK(*mode.schema_default == "\"causal\"");
  CHECK(mode.default_value->constant == "causal");
  CHECK(schema_of(yaml(R"(
      ops:
        - func: op(Tensor x, MaskType m=sliding_window, MaskType? n=None) -> Tensor
  )")) == "op(Tensor x, str m=\"sliding_window\", str? n=None) -> Tensor");
}

TEST_CASE("mutates expands names to Tensor leaves with distinct alias sets", "[lowering]") {
  SECTION("a record name: every tensor leaf") {
    CHECK(
        schema_of(yaml(R"(
            ops:
              - func: scale_(Tensor x, WeightCfg cfg) -> ()
                mutates: [cfg]
        )")) ==
        "scale_(Tensor x, Tensor(a!) cfg__inner__w, Tensor(b!) cfg__inner__b, float "
        "cfg__scale=1.0, "
        "str cfg__mode=\"causal\") -> ()");
  }
  SECTION("a dotted leaf path") {
    CHECK(
        schema_of(yaml(R"(
            ops:
              - func: f_(Tensor x, WeightCfg cfg) -> ()
                mutates: [cfg.inner.b]
        )")) ==
        "f_(Tensor x, Tensor cfg__inner__w, Tensor(a!) cfg__inner__b, float cfg__scale=1.0, "
        "str cfg__mode=\"causal\") -> ()");
  }
  SECTION("a sub-record path") {
    FrontEnd fe = lower_ops(yaml(R"(
        ops:
          - func: f_(Tensor x, WeightCfg cfg) -> ()
            mutates: [cfg.inner]
    )"));
    REQUIRE(fe.ok());
    CHECK(fe.slot("f_", "cfg__inner__w").mutated);
    CHECK(fe.slot("f_", "cfg__inner__b").mutated);
    CHECK(fe.slot("f_", "cfg__inner__w").schema_type == "Tensor(a!)");
    CHECK(fe.slot("f_", "cfg__inner__b").schema_type == "Tensor(b!)");
    CHECK_FALSE(fe.slot("f_", "x").mutated);
  }
  SECTION("a lowered name, and a plain tensor parameter") {
    FrontEnd fe = lower_ops(yaml(R"(
        ops:
          - func: f_(Tensor x, WeightCfg cfg) -> ()
            mutates: [cfg__inner__w, x]
    )"));
    REQUIRE(fe.ok());
    CHECK(fe.slot("f_", "x").schema_type == "Tensor(a!)");
    CHECK(fe.slot("f_", "cfg__inner__w").schema_type == "Tensor(b!)");
    CHECK_FALSE(fe.slot("f_", "cfg__inner__b").mutated);
  }
  SECTION("alias letters avoid the ones the func line uses") {
    CHECK(
        schema_of(yaml(R"(
            ops:
              - func: f_(Tensor(a!) x, Tensor(c) y, WeightCfg cfg) -> Tensor(b)
                mutates: [cfg]
                meta: custom
        )")) ==
        "f_(Tensor(a!) x, Tensor(c) y, Tensor(d!) cfg__inner__w, Tensor(e!) cfg__inner__b, float "
        "cfg__scale=1.0, "
        "str cfg__mode=\"causal\") -> Tensor(b)");
  }
  SECTION("written: listed in mutates:, or declared Tensor(a!) in the func line") {
    FrontEnd fe = lower_ops(yaml(R"(
        ops:
          - func: f_(Tensor(a!) x, Tensor(b) y, WeightCfg cfg) -> ()
            mutates: [cfg.inner.w]
    )"));
    REQUIRE(fe.ok());
    CHECK(fe.slot("f_", "x").written);
    CHECK_FALSE(fe.slot("f_", "x").mutated);  // no fresh letter: the func line has one
    CHECK(fe.slot("f_", "cfg__inner__w").written);
    CHECK_FALSE(fe.slot("f_", "y").written);
    CHECK_FALSE(fe.slot("f_", "cfg__inner__b").written);
  }
  SECTION("a leaf already annotated in the func line is left alone") {
    FrontEnd fe = lower_ops(yaml(R"(
        ops:
          - func: f_(Tensor(a!) x) -> ()
            mutates: [x]
    )"));
    REQUIRE(fe.ok());
    CHECK(fe.op("f_").schema == "f_(Tensor(a!) x) -> ()");
  }
  SECTION("more than 26 mutated leaves keep distinct sets") {
    std::string params, mutated;
    for (int i = 0; i < 30; ++i) {
      params += ", Tensor t" + std::to_string(i);
      mutated += ", t" + std::to_string(i);
    }
    std::string idl = "ops:\n";
    idl += "  - func: many_(Tensor x" + params + ") -> ()\n";
    idl += "    mutates: [x" + mutated + "]\n";
    FrontEnd fe = lower_ops(idl);
    REQUIRE(fe.ok());
    std::set<std::string> seen;
    for (const auto& s : fe.op("many_").slots) CHECK(seen.insert(s.schema_type).second);
    CHECK(fe.slot("many_", "x").schema_type == "Tensor(a!)");
    CHECK(fe.slot("many_", "t24").schema_type == "Tensor(z!)");
    CHECK(fe.slot("many_", "t25").schema_type == "Tensor(a1!)");
  }
}

TEST_CASE("mutates errors list the valid names", "[lowering]") {
  FrontEnd unknown = lower_ops(yaml(R"(
      ops:
        - func: f_(Tensor x, WeightCfg cfg) -> ()
          mutates: [cfg.inner.ww]
  )"));
  CHECK(contains(
      unknown.errors,
      "main.ops.yaml:17:15: error: op `f_`: `cfg.inner.ww` in `mutates:` is not a "
      "tensor parameter or field\n"));
  CHECK(contains(
      unknown.errors,
      "hint: did you mean `cfg.inner.w`? valid names are `cfg`, `cfg.inner`, "
      "`cfg.inner.b`, `cfg.inner.w`, "
      "`cfg__inner__b`, `cfg__inner__w` and `x`\n"));
  FrontEnd scalar = lower_ops(yaml(R"(
      ops:
        - func: f_(Tensor x, WeightCfg cfg) -> ()
          mutates: [cfg.scale]
  )"));
  CHECK(contains(
      scalar.errors,
      "error: op `f_`: `cfg.scale` in `mutates:` has type `float`; only tensors can be mutated\n"));
  FrontEnd lowered_scalar = lower_ops(yaml(R"(
      ops:
        - func: f_(Tensor x, WeightCfg cfg) -> ()
          mutates: [cfg__mode]
  )"));
  CHECK(contains(
      lowered_scalar.errors,
      "error: op `f_`: `cfg__mode` in `mutates:` has type `MaskType`; only tensors can "
      "be mutated\n"));
  FrontEnd list = lower_ops(yaml(R"(
      ops:
        - func: f_(Tensor[] xs) -> ()
          mutates: [xs]
  )"));
  CHECK(contains(
      list.errors,
      "error: op `f_`: `xs` is a `Tensor[]`; only `Tensor` and `Tensor?` can be mutated\n"));
  FrontEnd none = lower_ops(yaml(R"(
      ops:
        - func: f_(int n) -> ()
          mutates: [n]
  )"));
  CHECK(contains(none.errors, "hint: this op has no tensor parameters\n"));
}

TEST_CASE("a positional default is dropped when a later positional has none", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, Opt o, WeightCfg cfg) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const auto& lo = fe.op("op");
  CHECK(
      lo.schema ==
      "op(Tensor x, float o__eps, bool o__causal, Tensor cfg__inner__w, Tensor cfg__inner__b, "
      "float cfg__scale=1.0, str cfg__mode=\"causal\") -> Tensor");
  // The IDL's defaults are kept for the APIs.
  const auto& eps = fe.slot("op", "o__eps");
  REQUIRE(eps.default_value);
  CHECK(eps.default_value->literal.text == "1e-5");
  CHECK_FALSE(eps.schema_default);
  CHECK(*fe.slot("op", "cfg__scale").schema_default == "1.0");
}

TEST_CASE("kwarg-only parameters keep their defaults", "[lowering]") {
  CHECK(
      schema_of(yaml(R"(
          ops:
            - func: op(Tensor x, Opt o, Tensor y, *, Opt k, Tensor z) -> Tensor
      )")) ==
      "op(Tensor x, float o__eps, bool o__causal, Tensor y, *, float k__eps=1e-5, bool "
      "k__causal=False, "
      "Tensor z) -> Tensor");
}

TEST_CASE("a default the schema cannot express also drops earlier ones", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, int k=1, str[] names=["a"], int j=2) -> Tensor
  )"));
  REQUIRE(fe.ok());
  CHECK(fe.op("op").schema == "op(Tensor x, int k, str[] names, int j=2) -> Tensor");
  CHECK_FALSE(fe.slot("op", "names").schema_default);
  CHECK(fe.slot("op", "names").default_value);
}

TEST_CASE(
    "all-defaulted record parameters may be omitted: their leaves keep defaults",
    "[lowering]") {
  CHECK(schema_of(yaml(R"(
      ops:
        - func: op(Tensor x, Opt o) -> Tensor
  )")) == "op(Tensor x, float o__eps=1e-5, bool o__causal=False) -> Tensor");
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, Opt o, int k=3) -> Tensor
  )"));
  REQUIRE(fe.ok());
  CHECK(fe.module.ops[0].params[1].implicit_default);
  CHECK(
      fe.op("op").schema ==
      "op(Tensor x, float o__eps=1e-5, bool o__causal=False, int k=3) -> Tensor");
}

TEST_CASE("dtype, layout, memory format and device defaults in the schema", "[lowering]") {
  // Keyword-only, so dropping positional defaults does not apply.
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, *, ScalarType a=float32, ScalarType b=float, ScalarType c=long, ScalarType d=half, ScalarType? e=None, Layout l=strided, Layout s=sparse_coo, MemoryFormat m=contiguous_format, MemoryFormat n=channels_last, Device dev="cuda:1", Device? od="cpu") -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  auto def = [&](const char* name) {
    const auto& s = fe.slot("op", name);
    return s.schema_default ? *s.schema_default : std::string("<none>");
  };
  CHECK(def("a") == "6");      // no torch spelling for `float32`: the ScalarType code
  CHECK(def("b") == "float");  // torch's parser knows `float` and `long`
  CHECK(def("c") == "long");
  CHECK(def("d") == "5");
  CHECK(def("e") == "None");
  CHECK(def("l") == "strided");
  CHECK(def("s") == "1");
  CHECK(def("m") == "contiguous_format");
  CHECK(def("n") == "2");
  CHECK(def("dev") == "\"cuda:1\"");
  // An optional Device's default stays in the APIs only.
  CHECK(def("od") == "<none>");
  CHECK(fe.slot("op", "od").default_value->constant == "cpu");
  CHECK(fe.slot("op", "d").default_value->constant == "float16");

  // Positional: the inexpressible default drops the ones before it.
  FrontEnd pos = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, ScalarType a=float32, Device? od="cpu") -> Tensor
  )"));
  REQUIRE(pos.ok());
  CHECK(pos.op("op").schema == "op(Tensor x, ScalarType a, Device? od) -> Tensor");
}

TEST_CASE("list defaults: numbers and bools in the schema, fixed-size scalars too", "[lowering]") {
  CHECK(
      schema_of(yaml(R"(
          ops:
            - func: op(Tensor x, *, int[] a=[1, 2], float[] b=[], bool[2] c=[True, False], int[2] d=1, str[] e=["x"], Tensor? t=None, int? n=None) -> Tensor
      )")) ==
      "op(Tensor x, *, int[] a=[1, 2], float[] b=[], bool[2] c=[True, False], int[2] d=1, str[] e, "
      "Tensor? t=None, int? n=None) -> Tensor");
}

TEST_CASE("string defaults are re-quoted for the schema", "[lowering]") {
  FrontEnd fe = run_front_end(yaml(R"(
      namespace: d
      records:
        R:
          fields:
            a: str = 'single'
            b: {type: str, default: 'has "quote"'}
      ops:
        - func: op(Tensor x, R r) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  CHECK(
      fe.op("op").schema ==
      "op(Tensor x, str r__a=\"single\", str r__b=\"has \\\"quote\\\"\") -> Tensor");
}

TEST_CASE("string defaults reach the schema in torch's own escapes", "[lowering]") {
  // torch's schema lexer has no `\r` and a raw NUL would end the schema text.
  FrontEnd fe = run_front_end(yaml(R"(
      namespace: d
      records:
        R:
          fields:
            a: str = "x\ry"
            b: {type: str, default: "n\0ul \u202E"}
            c: int[] = [1,
                2]
      ops:
        - func: "op(Tensor x, R r, str s='\\t\t') -> Tensor"
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  CHECK(
      fe.op("op").schema ==
      R"(op(Tensor x, str r__a="x\015y", str r__b="n\000ul \342\200\256", int[] r__c=[1, 2], )"
      R"(str s="\t\t") -> Tensor)");
}

TEST_CASE("a parameter named like a Python keyword is `from_` in the schema too", "[lowering]") {
  // torch.fx binds a custom op's arguments by name and cannot bind `from`.
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: can_cast(ScalarType from, ScalarType to) -> bool
          meta: custom
        - func: f(Tensor lambda, *, Tensor async, int errno=0, int new=1) -> Tensor
          mutates: [lambda, async_]
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  CHECK(fe.op("can_cast").schema == "can_cast(ScalarType from_, ScalarType to) -> bool");
  const lower::Slot& from = fe.slot("can_cast", "from_");
  CHECK(from.python_keyword);
  CHECK(from.path == "from");
  CHECK(from.api_path == "from_");
  CHECK_FALSE(fe.slot("can_cast", "to").python_keyword);
  // Keyword-only too; C++ keywords and macros keep their names in the
  // schema (torch binds them); `mutates:` takes either name.
  CHECK(
      fe.op("f").schema ==
      "f(Tensor(a!) lambda_, *, Tensor(b!) async_, int errno=0, int new=1) -> Tensor");
  CHECK(fe.slot("f", "async_").kwarg_only);
  CHECK_FALSE(fe.slot("f", "errno").python_keyword);
  // Record leaves are `param__field`, never a keyword.
  FrontEnd rec = run_front_end(yaml(R"(
      namespace: d
      records: {R: {fields: {struct: Tensor, lambda: int = 1}}}
      ops:
        - func: op(R from) -> Tensor
  )"));
  REQUIRE(rec.ok());
  CHECK(rec.op("op").schema == "op(Tensor from__struct, int from__lambda=1) -> Tensor");
}

TEST_CASE("a parameter spelled like a keyword plus `_` clashes in the APIs", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, int from, int from_) -> Tensor
  )"));
  CHECK(contains(
      fe.errors,
      "error: op `op`: parameters `from` and `from_` would both be called `from_` in "
      "the schema, C++ and Python\n"));
  CHECK(fe.errors.find("error:") == fe.errors.rfind("error:"));  // once
  // A C++ keyword keeps its schema name: the clash is the APIs' only.
  FrontEnd cpp = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, int errno, int errno_) -> Tensor
  )"));
  CHECK(contains(
      cpp.errors,
      "error: op `op`: parameters `errno` and `errno_` would both be called `errno_` in "
      "C++ and Python\n"));
}

TEST_CASE(
    "a pinned name that is a Python keyword stays, but not with pt2_compliant_tag",
    "[lowering]") {
  const std::string records = yaml(R"(
      namespace: d
      records:
        Range: {fields: {lo: {type: float, schema_name: from}, hi: {type: float, schema_name: to}}}
  )");
  FrontEnd fe = run_front_end(records + yaml(R"(
      ops:
        - func: clamp(Tensor x, Range r) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  CHECK(fe.op("clamp").schema == "clamp(Tensor x, float from, float to) -> Tensor");
  CHECK_FALSE(fe.slot("clamp", "from").python_keyword);
  FrontEnd pt2 = run_front_end(records + yaml(R"(
      ops:
        - func: clamp(Tensor x, Range r) -> Tensor
          tags: [pt2_compliant_tag]
  )"));
  CHECK(
      pt2.errors ==
      "main.ops.yaml:3:51: error: op `clamp` is `pt2_compliant_tag`, but the pinned name `from` "
      "of `r.lo` is a Python keyword: torch.compile binds custom-op arguments by name and "
      "cannot bind it\n"
      " 3 |   Range: {fields: {lo: {type: float, schema_name: from}, hi: {type: float, "
      "schema_name: to}}}\n"
      "   |                                                   ^~~~\n"
      "hint: pin another name (e.g. `from_`), or drop the tag\n"
      "main.ops.yaml:5:33: note: `r.lo` comes from parameter `r`\n"
      " 5 |   - func: clamp(Tensor x, Range r) -> Tensor\n"
      "   |                                 ^\n");
}

TEST_CASE("lowered-name collisions are reported once, without an internal error", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, WeightCfg cfg, float cfg__scale) -> Tensor
  )"));
  CHECK(
      fe.errors ==
      "main.ops.yaml:16:45: error: op `op`: `cfg.scale` and `cfg__scale` both lower to the "
      "parameter name "
      "`cfg__scale`\n"
      " 16 |   - func: op(Tensor x, WeightCfg cfg, float cfg__scale) -> Tensor\n"
      "    |                                             ^~~~~~~~~~\n"
      "hint: record leaves are named `param__field`; rename the field or the parameter\n"
      "main.ops.yaml:16:34: note: `cfg.scale` comes from parameter `cfg`\n"
      " 16 |   - func: op(Tensor x, WeightCfg cfg, float cfg__scale) -> Tensor\n"
      "    |                                  ^~~\n");
  // Inside one record: field `a__b` next to sub-record `a` with field `b`.
  FrontEnd inner = run_front_end(yaml(R"(
      namespace: d
      records:
        A: {fields: {b: int}}
        R: {fields: {a: A, a__b: int}}
      ops:
        - func: op(Tensor x, R r) -> Tensor
  )"));
  CHECK(contains(
      inner.errors,
      "error: op `op`: `r.a.b` and `r.a__b` both lower to the parameter name `r__a__b`\n"));
  CHECK_FALSE(contains(inner.errors, "internal error"));
}

TEST_CASE(
    "meta: identity takes plain tensor parameters first, then record tensor fields",
    "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(int n, Tensor? maybe, WeightCfg cfg, Tensor x) -> (Tensor a, Tensor b)
        - func: one(WeightCfg cfg, Tensor x) -> Tensor
        - func: leaves(WeightCfg cfg) -> (Tensor a, Tensor b)
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const auto& lo = fe.op("op");
  REQUIRE(lo.meta_sources.size() == 2);
  CHECK(lo.slots[lo.meta_sources[0]].name == "x");
  CHECK(lo.slots[lo.meta_sources[1]].name == "cfg__inner__w");
  const auto& one = fe.op("one");
  REQUIRE(one.meta_sources.size() == 1);
  CHECK(one.slots[one.meta_sources[0]].name == "x");
  const auto& leaves = fe.op("leaves");
  REQUIRE(leaves.meta_sources.size() == 2);
  CHECK(leaves.slots[leaves.meta_sources[0]].name == "cfg__inner__w");
  CHECK(leaves.slots[leaves.meta_sources[1]].name == "cfg__inner__b");
  FrontEnd few = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, int n) -> (Tensor a, Tensor b)
  )"));
  CHECK(contains(
      few.errors,
      "error: op `op` has 2 tensor outputs but only 1 plain tensor input for the "
      "default (identity) meta kernel\n"));
  CHECK(contains(
      few.errors,
      "hint: list one input per output under `meta:` (e.g. `meta: [x, x]`), or set "
      "`meta: custom`\n"));
}

TEST_CASE("meta: a list of names, in output order", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor q, WeightCfg cfg) -> (Tensor a, Tensor b, Tensor c)
          meta: [cfg.inner.b, q, cfg__inner__w]
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const auto& lo = fe.op("op");
  REQUIRE(lo.meta_sources.size() == 3);
  CHECK(lo.slots[lo.meta_sources[0]].name == "cfg__inner__b");
  CHECK(lo.slots[lo.meta_sources[1]].name == "q");
  CHECK(lo.slots[lo.meta_sources[2]].name == "cfg__inner__w");
}

TEST_CASE("meta errors", "[lowering]") {
  FrontEnd unknown = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor q, Tensor k) -> (Tensor a, Tensor b)
          meta: [q, kk]
  )"));
  CHECK(contains(
      unknown.errors,
      "main.ops.yaml:17:15: error: op `op`: `kk` in `meta:` is not a tensor parameter or field\n"));
  CHECK(contains(unknown.errors, "hint: did you mean `k`? valid names are `k` and `q`\n"));
  // A record name stands for several tensors, so it cannot be a meta source.
  FrontEnd record = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor q, WeightCfg cfg) -> Tensor
          meta: [cfg]
  )"));
  CHECK(contains(
      record.errors,
      "error: op `op`: `cfg` in `meta:` stands for 2 tensors; name the one each output copies\n"));
  CHECK(contains(
      record.errors,
      "hint: valid names are `cfg.inner.b`, `cfg.inner.w`, `cfg__inner__b`, "
      "`cfg__inner__w` and `q`\n"));
  FrontEnd optional = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor q, Tensor? b) -> Tensor
          meta: [b]
  )"));
  CHECK(contains(
      optional.errors,
      "error: op `op`: `b` in `meta:` has type `Tensor?`; outputs copy the metadata of "
      "a plain `Tensor`\n"));
  CHECK(contains(optional.errors, "hint: valid names are `q`\n"));
  FrontEnd none = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor? b) -> Tensor
          meta: [b]
  )"));
  CHECK(contains(
      none.errors,
      "hint: this op has no plain `Tensor` input to copy metadata from; set `meta: custom`\n"));
  FrontEnd count = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor q, Tensor k) -> (Tensor a, Tensor b)
          meta: [q]
  )"));
  CHECK(contains(
      count.errors,
      "main.ops.yaml:17:12: error: op `op` has 2 tensor outputs but `meta:` lists 1 name\n"));
  FrontEnd non_tensor = lower_ops(yaml(R"(
      ops:
        - func: count(Tensor x) -> int
  )"));
  CHECK(contains(
      non_tensor.errors,
      "main.ops.yaml:16:11: error: op `count` returns `int`, which a default meta "
      "kernel cannot shape\n"));
  CHECK(contains(non_tensor.errors, "hint: set `meta: custom` and write `kernels::count_meta`\n"));
  CHECK(contains(
      lower_ops(yaml(R"(
          ops:
            - func: split(Tensor x) -> Tensor[]
      )"))
          .errors,
      "error: op `split` returns `Tensor[]`, which a default meta kernel cannot shape\n"));
  // meta: custom accepts any returns.
  CHECK(lower_ops(yaml(R"(
      ops:
        - func: count(Tensor x) -> (int, Tensor[])
          meta: custom
  )"))
            .ok());
}

TEST_CASE("outputs and their schema types", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor(a) x) -> (Tensor(a) view, Tensor out)
          meta: [x, x]
  )"));
  REQUIRE(fe.ok());
  const auto& lo = fe.op("op");
  REQUIRE(lo.outputs.size() == 2);
  CHECK(lo.outputs[0].name == "view");
  CHECK(lo.outputs[0].schema_type == "Tensor(a)");
  CHECK(lo.schema == "op(Tensor(a) x) -> (Tensor(a) view, Tensor out)");
  CHECK(schema_of(yaml(R"(
      ops:
        - func: op(Tensor x) -> ()
          meta: custom
  )")) == "op(Tensor x) -> ()");
  CHECK(schema_of(yaml(R"(
      ops:
        - func: op(Tensor x) -> Tensor[]
          meta: custom
  )")) == "op(Tensor x) -> Tensor[]");
}

TEST_CASE("a returned record is one output per leaf, named return__field", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x) -> (Tensor y, Inner cfg, Opt opt)
          meta: custom
        - func: bare(Tensor x) -> Inner
          meta: [x, x]
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const auto& lo = fe.op("op");
  CHECK(
      lo.schema ==
      "op(Tensor x) -> (Tensor y, Tensor cfg__w, Tensor cfg__b, float opt__eps, bool "
      "opt__causal)");
  CHECK(lo.has_record_return);
  REQUIRE(lo.api_returns.size() == 3);
  CHECK(lo.api_returns[1].name == "cfg");
  CHECK(lo.api_returns[1].first_output == 1);
  CHECK(lo.api_returns[1].output_count == 2);
  CHECK(lo.api_returns[2].first_output == 3);
  REQUIRE(lo.outputs.size() == 5);
  CHECK(lo.outputs[2].api_path == "cfg.b");
  CHECK(lo.outputs[2].member_path == ".b");
  CHECK(lo.outputs[2].fields == std::vector<size_t>{1});
  CHECK(lo.outputs[2].ret == 1);
  CHECK(lo.outputs[4].api_path == "opt.causal");
  CHECK(lo.outputs[0].api_path == "y");
  CHECK(lo.outputs[0].fields.empty());
  // Unnamed: `output`; the identity meta shapes each tensor leaf.
  const auto& bare = fe.op("bare");
  CHECK(bare.schema == "bare(Tensor x) -> (Tensor output__w, Tensor output__b)");
  CHECK(bare.meta_sources == std::vector<size_t>{0, 0});
  CHECK(bare.api_returns[0].name == "output");
}

TEST_CASE("returned records: two outputs with one name are an error", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x) -> (Inner a, Tensor a__w)
          meta: custom
  )"));
  CHECK(contains(fe.errors, "error: op `op`: two outputs are named `a__w`\n"));
  CHECK(contains(
      fe.errors,
      "hint: a returned record's leaves are named `return__field`; rename the return or the "
      "field\n"));
}

TEST_CASE("a record-only op and a record with optional and list tensors", "[lowering]") {
  FrontEnd fe = run_front_end(yaml(R"(
      namespace: d
      records: {R: {fields: {t: 'Tensor?', l: 'Tensor[]', o: 'Tensor?[]', n: int = 1}}}
      ops:
        - func: op(R r) -> Tensor
          meta: custom
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  CHECK(
      fe.op("op").schema ==
      "op(Tensor? r__t, Tensor[] r__l, Tensor?[] r__o, int r__n=1) -> Tensor");
  CHECK(fe.slot("op", "r__t").takes_grad);
  CHECK_FALSE(fe.slot("op", "r__t").grad_list);
  CHECK(fe.slot("op", "r__l").takes_grad);
  CHECK(fe.slot("op", "r__l").grad_list);
  CHECK(fe.slot("op", "r__o").takes_grad);
  CHECK(fe.slot("op", "r__o").grad_list);
  CHECK(fe.lowered.records[0].takes_grad);
}

TEST_CASE("schema_type and schema_default helpers", "[lowering]") {
  model::Type t;
  t.kind = model::Type::Kind::Builtin;
  t.builtin = model::Builtin::Float;
  t.suffixes.push_back({syntax::TypeSuffix::Kind::Optional, -1, nullptr});
  CHECK(schema_type(t) == "float?");
  model::Default none;
  none.literal.kind = syntax::Literal::Kind::None;
  none.literal.text = "None";
  CHECK(schema_default(t, none) == std::optional<std::string>("None"));
}

TEST_CASE("a func line with 10,000 parameters lowers", "[lowering]") {
  std::string params;
  for (int i = 0; i < 10000; ++i) params += (i ? ", Tensor p" : "Tensor p") + std::to_string(i);
  std::string idl = "namespace: d\n";
  idl += "ops:\n";
  idl += "  - func: op(" + params + ") -> Tensor\n";
  FrontEnd fe = run_front_end(idl);
  REQUIRE(fe.ok());
  CHECK(fe.op("op").slots.size() == 10000);
  CHECK(fe.op("op").schema.size() > 100000);
}

// ---- facts lowering decides for the emitters ----------------------------------

TEST_CASE("C++ identifiers never contain `__`", "[lowering]") {
  CHECK(lower::join_identifier({"cfg", "inner", "w"}) == "cfg_inner_w");
  CHECK(lower::join_identifier({"scale_", "meta"}) == "scale_meta_");
  CHECK(lower::join_identifier({"add_", "Tensor"}) == "add_Tensor_");
  CHECK(lower::join_identifier({"op", "_private"}) == "op_private");
  CHECK(lower::join_identifier({"x"}) == "x");

  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: scale_(Tensor(a!) x, WeightCfg cfg) -> ()
        - func: add_.Tensor(Tensor(a!) x, Tensor y) -> ()
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const lower::LoweredOp& scale = fe.lowered.ops[0];
  CHECK(scale.cpp_name == "scale_");
  CHECK(scale.names.meta == "scale_meta_");
  CHECK(scale.names.adapter == "op_scale_");
  std::vector<std::string> cpp;
  for (const auto& s : scale.slots) cpp.push_back(s.cpp_name);
  CHECK(
      cpp == std::vector<std::string>{"x", "cfg_inner_w", "cfg_inner_b", "cfg_scale", "cfg_mode"});
  CHECK(scale.slots[1].name == "cfg__inner__w");  // the schema keeps its spelling
  CHECK(scale.slots[1].api_path == "cfg.inner.w");
  CHECK(fe.lowered.ops[1].cpp_name == "add_Tensor_");
}

TEST_CASE("slot C++ names stay unique", "[lowering]") {
  // `a_b` the parameter and `a.b` the field both join to `a_b`.
  FrontEnd fe = run_front_end(yaml(R"(
      namespace: demo
      records:
        A: {fields: {b: float}}
      ops:
        - func: op(Tensor x, A a, float a_b) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const auto& slots = fe.lowered.ops[0].slots;
  REQUIRE(slots.size() == 3);
  CHECK(slots[1].cpp_name == "a_b2");
  CHECK(slots[2].cpp_name == "a_b");
}

TEST_CASE("kernels, grad slots and API parameters are decided by lowering", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, WeightCfg cfg, Opt opt, int n=2) -> Tensor
          backward: true
        - func: dev(Tensor x, Tensor[] xs, Tensor[]? ys, Tensor?[] zs) -> Tensor
          dispatch: [CPU, CUDA]
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const lower::LoweredOp& op = fe.lowered.ops[0];
  REQUIRE(op.kernels.size() == 1);
  CHECK(op.kernels[0].name == "op");
  CHECK_FALSE(op.kernels[0].dispatch_key.has_value());
  CHECK(op.grad_slots == std::vector<size_t>{0, 1, 2});  // x, cfg.inner.w, cfg.inner.b
  CHECK(op.grad_params == std::vector<size_t>{0, 1});
  REQUIRE(op.api_params.size() == 4);
  CHECK_FALSE(op.api_params[1].cpp_default);  // cfg has no default
  CHECK(op.api_params[2].cpp_default);        // opt: every field defaulted
  REQUIRE(op.api_params[2].default_value);
  CHECK(op.api_params[2].default_value->kind == lower::Value::Kind::Record);
  CHECK(op.api_params[3].default_value->kind == lower::Value::Kind::Int);
  CHECK(op.api_returns[0].name == "output");
  CHECK(op.outputs[0].api_path == "output");

  const lower::LoweredOp& dev = fe.lowered.ops[1];
  REQUIRE(dev.kernels.size() == 2);
  CHECK(dev.kernels[0].name == "dev_cpu");
  CHECK(dev.kernels[0].dispatch_key == std::optional<std::string>("CPU"));
  // Lists take one gradient per tensor, except an optional list.
  CHECK(dev.grad_slots == std::vector<size_t>{0, 1, 3});
  CHECK(dev.has_grad_list);
  CHECK_FALSE(dev.slots[0].grad_list);
  CHECK(dev.slots[1].grad_list);
  CHECK_FALSE(dev.slots[2].takes_grad);
  CHECK(dev.slots[3].grad_list);
  CHECK_FALSE(op.has_grad_list);
}

TEST_CASE("record layouts: leaves, offsets, enum and grad facts", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, WeightCfg cfg) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  // Records in dependency order: Inner, WeightCfg, Opt.
  const lower::RecordLayout& cfg = fe.lowered.records[1];
  std::vector<std::string> leaves;
  for (const auto& l : cfg.leaves) leaves.push_back(l.path + "|" + l.name);
  CHECK(
      leaves ==
      std::vector<std::string>{"inner.w|inner__w", "inner.b|inner__b", "scale|scale", "mode|mode"});
  REQUIRE(cfg.fields.size() == 3);
  CHECK(cfg.fields[0].first_leaf == 0);
  CHECK(cfg.fields[0].leaf_count == 2);
  CHECK(cfg.fields[2].first_leaf == 3);
  CHECK(cfg.has_enum_leaf);
  CHECK(cfg.takes_grad);
  CHECK_FALSE(fe.lowered.records[2].takes_grad);  // Opt: no tensor
  REQUIRE(cfg.fields[2].default_value);
  CHECK(cfg.fields[2].default_value->kind == lower::Value::Kind::Enum);
  CHECK(cfg.fields[2].default_value->text == "causal");
}

TEST_CASE("typed defaults: what each default means, decided once", "[lowering]") {
  FrontEnd fe = lower_ops(yaml(R"(
      ops:
        - func: op(Tensor x, int[2] k=1, int r=Mean, float f=.5, str s="a", ScalarType t=float32, Device d="cpu", bool b=True, int? o=None) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const auto& p = fe.lowered.ops[0].api_params;
  using K = lower::Value::Kind;
  REQUIRE(p[1].default_value);
  CHECK(p[1].default_value->kind == K::List);  // `int[2] k=1` is [1, 1]
  REQUIRE(p[1].default_value->items.size() == 2);
  CHECK(p[1].default_value->items[1].int_value == 1);
  CHECK(p[2].default_value->kind == K::Int);  // ATen's `Mean` is 1
  CHECK(p[2].default_value->int_value == 1);
  CHECK(p[3].default_value->kind == K::Float);
  CHECK(p[3].default_value->text == ".5");
  CHECK(p[4].default_value->kind == K::Str);
  CHECK(p[4].default_value->text == "a");
  CHECK(p[5].default_value->kind == K::Constant);
  CHECK(p[5].default_value->text == "float32");
  CHECK(p[6].default_value->kind == K::Device);
  CHECK(p[7].default_value->kind == K::Bool);
  CHECK(p[7].default_value->bool_value);
  CHECK(p[8].default_value->kind == K::None);
}

TEST_CASE(
    "record defaults give their leaves defaults; a record default replaces the record",
    "[lowering]") {
  FrontEnd fe = run_front_end(yaml(R"(
      namespace: demo
      enums: {Mode: [fast, exact]}
      records:
        I: {fields: {k: int, scale: float = 1.0, mode: Mode = fast}}
        R: {fields: {i: 'I = {k: 3, scale: 2.0}', n: int = 7}}
      ops:
        - func: fields(Tensor x, R r) -> Tensor
        - func: "param(Tensor x, R r={i: {k: 5}}) -> Tensor"
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  // The field's default sets the leaves of `i`; `mode` keeps I's own.
  CHECK(
      fe.lowered.ops[0].schema ==
      "fields(Tensor x, int r__i__k=3, float r__i__scale=2.0, str r__i__mode=\"fast\", int "
      "r__n=7) -> Tensor");
  // The parameter's default replaces `i` as a whole: `scale` is I's 1.0, not
  // the 2.0 of the field's default, as `R{I{5}}` in C++ and
  // `R(i=I(k=5))` in Python.
  const lower::LoweredOp& param = fe.lowered.ops[1];
  CHECK(
      param.schema ==
      "param(Tensor x, int r__i__k=5, float r__i__scale=1.0, str r__i__mode=\"fast\", int "
      "r__n=7) -> Tensor");
  REQUIRE(param.slots[1].value);
  CHECK(param.slots[1].value->int_value == 5);
  CHECK(param.slots[2].default_value->literal.text == "1.0");

  // The typed value: every field, and which ones the default sets.
  using K = lower::Value::Kind;
  const lower::Value& v = *param.api_params[1].default_value;
  CHECK(v.kind == K::Record);
  REQUIRE(v.items.size() == 2);
  CHECK(v.given == std::vector<bool>{true, false});
  CHECK(v.items[0].kind == K::Record);
  CHECK(v.items[0].given == std::vector<bool>{true, false, false});
  CHECK(v.items[0].items[0].int_value == 5);
  CHECK(v.items[0].items[2].kind == K::Enum);
  CHECK(v.items[1].int_value == 7);
  const lower::RecordField& field = fe.lowered.records[1].fields[0];
  REQUIRE(field.default_value);
  CHECK(field.default_value->given == std::vector<bool>{true, true, false});
  // An implicit default: every field at its declared default.
  const lower::Value& implicit = *fe.lowered.ops[0].api_params[1].default_value;
  CHECK(implicit.kind == K::Record);
  CHECK(implicit.items.empty());
}

TEST_CASE("the generated code's own names give way to the user's", "[lowering]") {
  FrontEnd fe = run_front_end(yaml(R"(
      namespace: demo
      records:
        R: {fields: {path: Tensor, kernel: int = 1}}
      ops:
        - func: op(Tensor kernel, R fn, Tensor ctx, float error=1.0) -> (Tensor ctx2, Tensor outputs)
          backward: true
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const lower::LoweredOp& op = fe.lowered.ops[0];
  // The user-visible cpp_name keeps its spelling.
  CHECK(op.slots[0].cpp_name == "kernel");
  CHECK(op.slots[1].cpp_name == "fn_path");
  // ctx and ctx2 are taken by a parameter and an output.
  CHECK(op.locals.ctx == "ctx3");
  CHECK(op.locals.error == "error2");
}

TEST_CASE("the Python function's locals give way to parameters and to the op", "[lowering]") {
  // X_ops.py's function builds `args` (and `args_<k>` for a list of records,
  // looping with `r`): none may hide a parameter, nor the function itself,
  // which the error path passes to Op.failed.
  FrontEnd fe = run_front_end(yaml(R"(
      namespace: demo
      records:
        T: {fields: {w: Tensor}}
      ops:
        - func: args2(Tensor args, T[] r, Tensor? args_1=None) -> Tensor
        - func: plain(Tensor x, T[] items) -> Tensor
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const lower::LoweredOp& clashing = fe.lowered.ops[0];
  CHECK(clashing.locals.args == "args3");  // args: a parameter; args2: the op
  CHECK(clashing.locals.item == "r2");
  CHECK(fe.lowered.ops[1].locals.args == "args");
  CHECK(fe.lowered.ops[1].locals.item == "r");
  // A list of records' leaf and a Tensor[] are tensor lists; a Tensor? is not.
  CHECK(clashing.slots[1].tensor_list);
  CHECK(!clashing.slots[0].tensor_list);
  CHECK(!clashing.slots[2].tensor_list);
}

TEST_CASE("schema_name pins a leaf's whole lowered name, at any depth", "[lowering]") {
  FrontEnd fe = run_front_end(yaml(R"(
      namespace: demo
      records:
        Inner: {fields: {w: {type: Tensor, schema_name: weight}, b: Tensor}}
        Cfg:
          fields:
            inner: Inner
            eps: {type: float, default: 1e-6, schema_name: epsilon}
        Stats: {fields: {mean: Tensor, var: {type: Tensor, schema_name: variance}}}
      ops:
        - func: op(Tensor x, Cfg cfg, Cfg[] more) -> Stats
          meta: custom
  )"));
  INFO(fe.errors);
  // Cfg twice in one op: its pinned names would repeat.
  REQUIRE_FALSE(fe.ok());
  CHECK(contains(
      fe.errors,
      "the pinned name `weight` of `more.inner.w` is also the lowered name of `cfg.inner.w`"));
  CHECK(contains(fe.errors, "use a record with pinned names once per op"));

  fe = run_front_end(yaml(R"(
      namespace: demo
      records:
        Inner: {fields: {w: {type: Tensor, schema_name: weight}, b: Tensor}}
        Cfg:
          fields:
            inner: Inner
            eps: {type: float, default: 1e-6, schema_name: epsilon}
        Stats: {fields: {mean: Tensor, var: {type: Tensor, schema_name: variance}}}
        Gate: {fields: {g: {type: Tensor, schema_name: gate}, b: Tensor}}
      ops:
        - func: op(Tensor x, Cfg cfg) -> Stats
          meta: custom
        - func: many(Tensor x, Inner[] layers, Gate? extra=None) -> Tensor
          meta: custom
  )"));
  INFO(fe.errors);
  REQUIRE(fe.ok());
  const auto& lo = fe.op("op");
  CHECK(names(lo) == std::vector<std::string>{"x", "weight", "cfg__inner__b", "epsilon"});
  CHECK(lo.slots[1].pinned);
  CHECK(lo.slots[1].path == "cfg.inner.w");
  CHECK(lo.slots[1].cpp_name == "cfg_inner_w");  // the APIs keep the record's names
  CHECK_FALSE(lo.slots[2].pinned);
  CHECK(
      lo.schema ==
      "op(Tensor x, Tensor weight, Tensor cfg__inner__b, float epsilon=1e-6) -> (Tensor "
      "output__mean, Tensor variance)");
  CHECK(lo.outputs[1].pinned);
  CHECK(lo.outputs[1].api_path == "output.var");
  // In a list of records and an optional record the pinned name names the
  // list or optional slot.
  CHECK(
      fe.op("many").schema ==
      "many(Tensor x, Tensor[] weight, Tensor[] layers__b, Tensor? gate=None, Tensor? "
      "extra__b=None) -> Tensor");
}

TEST_CASE("schema_name must be unique in the op and pin a leaf", "[lowering]") {
  FrontEnd fe = run_front_end(yaml(R"(
      namespace: demo
      records:
        Norm: {fields: {w: {type: Tensor, schema_name: weight}}}
      ops:
        - func: op(Tensor weight, Norm cfg) -> Tensor
  )"));
  CHECK(contains(
      fe.errors,
      "the pinned name `weight` of `cfg.w` is also the lowered name of `weight`"));
  CHECK(contains(fe.errors, "rename the parameter `weight`, or pin another name"));

  fe = run_front_end(yaml(R"(
      namespace: demo
      records:
        Inner: {fields: {w: Tensor}}
        Norm: {fields: {inner: {type: Inner, schema_name: inner}}}
      ops:
        - func: op(Tensor x, Norm cfg) -> Tensor
  )"));
  CHECK(
      contains(fe.errors, "field `Norm.inner` is a record (`Inner`): it has no lowered parameter"));
}
