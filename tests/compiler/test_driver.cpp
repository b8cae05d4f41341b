// Unit tests of driver/: compile() as a library on in-memory files (JSON shape,
// --explain, determinism, all-or-nothing), and the output writer on a
// temporary folder (write-if-changed, stubs never overwritten, depfiles).
#include "catch2.h"

#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/duplicates.h"
#include "driver/compile.h"
#include "driver/output_writer.h"
#include "test_support.h"

using namespace structop;
using structop::testing::contains;
using structop::testing::JsonValue;
using structop::testing::MemoryReader;
using structop::testing::parse_json;
using structop::testing::TempDir;
using structop::testing::yaml;

namespace fs = std::filesystem;

namespace {

const std::string kDemo = yaml(R"(
    namespace: demo
    cpp_namespace: demo::ops
    include: [common.ops.yaml]
    enums:
      MaskType: [full, causal, sliding_window]
    records:
      WeightCfg:
        doc: Weights and a scale.
        fields:
          inner: Inner
          scale: float = 1.0
          mode: {type: MaskType, default: causal}
    ops:
      - func: op(Tensor x, WeightCfg cfg) -> Tensor
        backward: true
        doc: Scales.
      - func: scale_(Tensor x, WeightCfg cfg, *, ScalarType dt=float32) -> ()
        mutates: [cfg]
        dispatch: [CPU, CUDA]
      - func: can_cast(ScalarType from, ScalarType to) -> bool
        meta: custom
)");

const std::string kCommon = yaml(R"(
    namespace: common
    records:
      Inner: {fields: {w: Tensor, b: 'Tensor?'}}
)");

MemoryReader demo_reader() {
  return MemoryReader{{"idl/demo.ops.yaml", kDemo}, {"idl/common.ops.yaml", kCommon}};
}

CompileResult compile_demo(
    std::vector<OutputKind> emit = {OutputKind::Json},
    std::optional<std::string> explain = std::nullopt) {
  MemoryReader reader = demo_reader();
  CompileOptions options;
  options.input = "idl/demo.ops.yaml";
  options.emit = std::move(emit);
  options.explain_op = std::move(explain);
  return compile(options, reader);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void spit(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
}

/// Moves a file's mtime one hour into the past, so a rewrite (which sets it
/// to "now") is visible even on file systems with coarse timestamps.
fs::file_time_type age(const std::string& path) {
  fs::file_time_type old = fs::last_write_time(path) - std::chrono::hours(1);
  fs::last_write_time(path, old);
  return old;
}

}  // namespace

TEST_CASE("compile() returns the JSON model; its shape is stable", "[driver]") {
  CompileResult r = compile_demo();
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  CHECK(r.diagnostics.empty());
  REQUIRE(r.outputs.size() == 1);
  CHECK(r.outputs[0].name == "demo.ops.json");
  CHECK(r.outputs[0].kind == OutputKind::Json);
  CHECK_FALSE(r.outputs[0].never_overwrite);
  CHECK(r.inputs == std::vector<std::string>{"idl/demo.ops.yaml", "idl/common.ops.yaml"});

  JsonValue j = parse_json(r.outputs[0].content);
  CHECK(
      j.keys() == std::vector<std::string>{
                      "generator",
                      "source",
                      "namespace",
                      "cpp_namespace",
                      "enums",
                      "records",
                      "ops"});
  CHECK(j["generator"].string == std::string("structopc ") + structopc_version());
  CHECK(j["source"].string == "demo.ops.yaml");
  CHECK(j["namespace"].string == "demo");
  CHECK(j["cpp_namespace"].string == "demo::ops");

  REQUIRE(j["enums"].items.size() == 1);
  CHECK(j["enums"][0]["name"].string == "MaskType");
  CHECK(j["enums"][0]["values"].items.size() == 3);
  CHECK(j["enums"][0]["values"][2].string == "sliding_window");

  REQUIRE(j["records"].items.size() == 2);
  CHECK(j["records"][0]["name"].string == "Inner");
  CHECK(j["records"][0]["from_include"].boolean);
  CHECK(j["records"][0]["cpp_namespace"].string == "common");
  const JsonValue& cfg = j["records"][1];
  CHECK(cfg["name"].string == "WeightCfg");
  CHECK(cfg["doc"].string == "Weights and a scale.");
  CHECK_FALSE(cfg["from_include"].boolean);
  CHECK(cfg["has_tensor_leaf"].boolean);
  CHECK_FALSE(cfg["all_defaulted"].boolean);
  REQUIRE(cfg["fields"].items.size() == 3);
  CHECK(cfg["fields"][0]["type"].string == "Inner");
  CHECK(cfg["fields"][0]["default"].kind == JsonValue::Kind::Null);
  CHECK(cfg["fields"][1]["default"].string == "1.0");
  CHECK(cfg["fields"][2]["type"].string == "MaskType");
  CHECK(cfg["fields"][2]["default"].string == "causal");

  const JsonValue& ops = j["ops"];
  REQUIRE(ops.items.size() == 3);
  const JsonValue& op = ops[0];
  CHECK(op["name"].string == "op");
  CHECK(op["cpp_name"].string == "op");
  CHECK(
      op["schema"].string ==
      "op(Tensor x, Tensor cfg__inner__w, Tensor? cfg__inner__b, float cfg__scale=1.0, str "
      "cfg__mode=\"causal\") -> Tensor");
  CHECK(op["signature"].string == "op(Tensor x, WeightCfg cfg) -> Tensor");
  CHECK(op["backward"].boolean);
  CHECK(op["meta"].string == "identity");
  CHECK(op["meta_sources"].items.size() == 1);
  CHECK(op["meta_sources"][0].string == "x");
  CHECK(op["doc"].string == "Scales.");
  REQUIRE(op["slots"].items.size() == 5);
  const JsonValue& w = op["slots"][1];
  CHECK(
      w.keys() == std::vector<std::string>{
                      "path",
                      "name",
                      "pinned",
                      "cpp_name",
                      "param",
                      "type",
                      "schema_type",
                      "dynamic",
                      "default",
                      "schema_default",
                      "kwarg_only",
                      "mutated",
                      "differentiable",
                      "grad_list",
                      "optional_records"});
  CHECK(w["path"].string == "cfg.inner.w");
  CHECK_FALSE(w["pinned"].boolean);
  CHECK_FALSE(w["dynamic"].boolean);
  CHECK(w["name"].string == "cfg__inner__w");
  CHECK(w["param"].string == "cfg");
  CHECK(w["differentiable"].boolean);
  CHECK_FALSE(w["grad_list"].boolean);
  CHECK(w["optional_records"].items.empty());
  const JsonValue& mode = op["slots"][4];
  CHECK(mode["type"].string == "MaskType");
  CHECK(mode["schema_type"].string == "str");
  CHECK(mode["default"].string == "causal");
  CHECK(mode["schema_default"].string == "\"causal\"");
  REQUIRE(op["returns"].items.size() == 1);
  CHECK(op["returns"][0]["schema_type"].string == "Tensor");

  const JsonValue& scale = ops[1];
  CHECK(
      scale["schema"].string ==
      "scale_(Tensor x, Tensor(a!) cfg__inner__w, Tensor(b!)? cfg__inner__b, float cfg__scale=1.0, "
      "str cfg__mode=\"causal\", *, ScalarType dt=6) -> ()");
  CHECK(scale["slots"][1]["mutated"].boolean);
  CHECK(scale["slots"][5]["kwarg_only"].boolean);
  CHECK(scale["slots"][5]["default"].string == "float32");
  CHECK(scale["dispatch"].items.size() == 2);
  CHECK(scale["dispatch"][1].string == "CUDA");
  CHECK(scale["returns"].items.empty());
  CHECK(scale["meta_sources"].items.empty());

  CHECK(ops[2]["schema"].string == "can_cast(ScalarType from_, ScalarType to) -> bool");
  CHECK(ops[2]["meta"].string == "custom");
}

TEST_CASE("compile() output is deterministic", "[driver]") {
  CompileResult a = compile_demo();
  CompileResult b = compile_demo();
  REQUIRE(a.ok);
  REQUIRE(b.ok);
  REQUIRE(a.outputs.size() == b.outputs.size());
  for (size_t i = 0; i < a.outputs.size(); ++i) CHECK(a.outputs[i].content == b.outputs[i].content);
  // Also for errors: the same text, in the same order.
  MemoryReader bad{{"bad.ops.yaml", yaml(R"(
      namespace: d
      records: {A: {fields: {x: flaot, y: B}}, B: {fields: {a: A}}}
  )")}};
  CompileOptions options;
  options.input = "bad.ops.yaml";
  std::string first = compile(options, bad).diagnostics;
  CHECK_FALSE(first.empty());
  CHECK(compile(options, bad).diagnostics == first);
}

namespace {

/// The header structopc generates for `input` in `reader`.
std::string header_of(MemoryReader& reader, const std::string& input) {
  CompileOptions options;
  options.input = input;
  options.emit = {OutputKind::Header, OutputKind::Python};
  CompileResult r = compile(options, reader);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  return r.outputs[0].content;
}

/// The value after `#define MACRO ` in a header, or "".
std::string defined_value(const std::string& header, const std::string& macro) {
  std::string key = "#define " + macro + " ";
  size_t at = header.find(key);
  if (at == std::string::npos) return {};
  return header.substr(at + key.size(), header.find('\n', at) - at - key.size());
}

/// The value the header checks MACRO against (`#elif MACRO != VALUE`), or "".
std::string checked_value(const std::string& header, const std::string& macro) {
  std::string key = "#elif " + macro + " != ";
  size_t at = header.find(key);
  if (at == std::string::npos) return {};
  return header.substr(at + key.size(), header.find('\n', at) - at - key.size());
}

}  // namespace

TEST_CASE("a header includes the headers of the IDL files its IDL includes", "[driver][include]") {
  MemoryReader reader = demo_reader();
  std::string demo = header_of(reader, "idl/demo.ops.yaml");
  std::string common = header_of(reader, "idl/common.ops.yaml");
  // The included file's record is in its own header only.
  CHECK(contains(demo, "#include \"common.ops.h\"\n"));
  CHECK_FALSE(contains(demo, "struct Inner {"));
  CHECK_FALSE(contains(demo, "struct InnerGrad {"));
  CHECK(contains(demo, "struct WeightCfg {"));
  CHECK(contains(demo, "  ::common::Inner inner;\n"));
  CHECK(contains(common, "struct Inner {"));
  CHECK(contains(common, "struct InnerGrad {"));
  CHECK_FALSE(contains(demo + common, "STRUCTOP_DEFINED_"));
  // Each header defines its fingerprint; the including one checks the
  // included one's against the value it was generated with.
  std::string value = defined_value(common, "STRUCTOP_FINGERPRINT_common");
  CHECK(value.size() == std::string("0x0123456789abcdefULL").size());
  CHECK(checked_value(demo, "STRUCTOP_FINGERPRINT_common") == value);
  CHECK(contains(
      demo,
      "#if !defined(STRUCTOP_FINGERPRINT_common)\n#error \\\n    \"demo.ops.h: common.ops.h does "
      "not "
      "define STRUCTOP_FINGERPRINT_common"));
  CHECK(contains(
      demo,
      "#error \\\n    \"demo.ops.h and common.ops.h were generated from different versions of "
      "common.ops.yaml: regenerate both from the current IDL files\"\n"));
  CHECK_FALSE(defined_value(demo, "STRUCTOP_FINGERPRINT_demo").empty());
  CHECK(defined_value(demo, "STRUCTOP_FINGERPRINT_demo") != value);
  // A header of a file without includes checks nothing.
  CHECK_FALSE(contains(common, "#elif"));
}

TEST_CASE(
    "a fingerprint changes with the layout of records and enums, not with docs",
    "[driver][include]") {
  auto fingerprint = [](const std::string& common_text) {
    MemoryReader reader{{"common.ops.yaml", common_text}};
    return defined_value(header_of(reader, "common.ops.yaml"), "STRUCTOP_FINGERPRINT_common");
  };
  const std::string base = yaml(R"(
      namespace: common
      enums:
        Mode: [a, b]
      records:
        Inner: {fields: {w: Tensor, m: Mode = a}}
        Outer: {fields: {i: Inner, k: int = 1}}
  )");
  std::string original = fingerprint(base);
  REQUIRE_FALSE(original.empty());
  auto edited = [&](const std::string& from, const std::string& to) {
    std::string text = base;
    REQUIRE(text.find(from) != std::string::npos);
    text.replace(text.find(from), from.size(), to);
    return fingerprint(text);
  };
  // Docs, comments and declaration order do not change the layout.
  CHECK(fingerprint("# a comment\n" + base + "doc: About it.\n") == original);
  CHECK(edited("  Inner: {fields:", "  Inner: {doc: Inner one., fields:") == original);
  CHECK(fingerprint(yaml(R"(
      namespace: common
      records:
        Outer: {fields: {i: Inner, k: int = 1}}
        Inner: {fields: {w: Tensor, m: Mode = a}}
      enums:
        Mode: [a, b]
  )")) == original);
  // Everything the generated C++ of the types depends on does.
  CHECK(edited("k: int = 1", "k: int = 2") != original);
  CHECK(edited("k: int = 1", "k: float = 1") != original);
  CHECK(edited("k: int = 1", "n: int = 1") != original);
  CHECK(edited("k: int = 1", "k: int") != original);
  CHECK(edited("k: int = 1", "k: 'int[] = [1]'") != original);
  CHECK(edited("[a, b]", "[a, b, c]") != original);
  CHECK(edited("[a, b]", "[b, a]") != original);
  CHECK(edited("Outer:", "Outer2:") != original);
  CHECK(edited("namespace: common\n", yaml(R"(
      namespace: common
      cpp_namespace: other
  )")) != original);
  CHECK(edited("w: Tensor, m: Mode = a", "m: Mode = a, w: Tensor") != original);
  // Ops do not count: they are not in the header's types.
  CHECK(fingerprint(base + yaml(R"(
      ops:
        - func: f(Tensor x, Outer o) -> Tensor
  )")) == original);
}

TEST_CASE(
    "a header includes only the files its IDL lists, but checks every file read",
    "[driver][include]") {
  MemoryReader reader{
      {"a.ops.yaml", yaml(R"(
          namespace: a
          include: [b.ops.yaml]
          records: {A: {fields: {m: Mid, base: Base}}}
      )")},
      {"b.ops.yaml", yaml(R"(
          namespace: b
          include: [c.ops.yaml]
          records: {Mid: {fields: {base: Base}}}
      )")},
      {"c.ops.yaml", yaml(R"(
          namespace: c
          records: {Base: {fields: {x: Tensor}}}
      )")},
  };
  std::string a = header_of(reader, "a.ops.yaml");
  std::string b = header_of(reader, "b.ops.yaml");
  std::string c = header_of(reader, "c.ops.yaml");
  CHECK(contains(a, "#include \"b.ops.h\"\n"));
  CHECK_FALSE(contains(a, "#include \"c.ops.h\""));
  CHECK(contains(b, "#include \"c.ops.h\"\n"));
  CHECK(checked_value(a, "STRUCTOP_FINGERPRINT_b") == defined_value(b, "STRUCTOP_FINGERPRINT_b"));
  CHECK(checked_value(a, "STRUCTOP_FINGERPRINT_c") == defined_value(c, "STRUCTOP_FINGERPRINT_c"));
  CHECK(checked_value(b, "STRUCTOP_FINGERPRINT_c") == defined_value(c, "STRUCTOP_FINGERPRINT_c"));
}

TEST_CASE("a file name whose stem is not an identifier is an error", "[driver][include]") {
  // The stem names the generated files, the Python module `<stem>_ops` and
  // the macro STRUCTOP_FINGERPRINT_<stem>; the name is shown escaped.
  const std::string ok = yaml(R"(
      namespace: d
      records: {R: {fields: {x: int}}}
  )");
  MemoryReader reader{
      {"my-c.ops.yaml", ok},
      {"2d.ops.yaml", ok},
      {"x\ny.ops.yaml", ok},
      {"q\"uote.ops.yaml", ok},
      {".ops.yaml", ok},
      {"inc.ops.yaml", yaml(R"(
          namespace: i
          include: [my-c.ops.yaml]
      )")},
      {"good_Name2.ops.yaml", ok},
  };
  auto errors_of = [&](const std::string& input) {
    CompileOptions options;
    options.input = input;
    options.emit = {OutputKind::Header, OutputKind::Python};
    CompileResult r = compile(options, reader);
    CHECK(r.ok == r.diagnostics.empty());
    return r.diagnostics;
  };
  CHECK(errors_of("good_Name2.ops.yaml").empty());
  CHECK(contains(
      errors_of("my-c.ops.yaml"),
      "my-c.ops.yaml:1:1: error: file name `my-c.ops.yaml`: `my-c` is not an identifier but names "
      "the generated Python module `my-c_ops` and C++ macro `STRUCTOP_FINGERPRINT_my-c`\n"));
  CHECK(contains(
      errors_of("my-c.ops.yaml"),
      "hint: rename the file: letters, digits and `_`, not starting with a digit, e.g. "
      "`my_c.ops.yaml`\n"));
  CHECK(contains(errors_of("2d.ops.yaml"), "`2d` is not an identifier"));
  CHECK_FALSE(contains(errors_of("2d.ops.yaml"), "e.g."));  // `_2d` is no better a name
  CHECK(contains(errors_of("x\ny.ops.yaml"), "file name `x\\ny.ops.yaml`: `x\\ny` is not"));
  CHECK(contains(errors_of("q\"uote.ops.yaml"), "`q\"uote` is not an identifier"));
  CHECK(contains(errors_of(".ops.yaml"), "`.ops` is not an identifier"));
  // An included file's stem names its header and module in the includer's output.
  CHECK(contains(
      errors_of("inc.ops.yaml"),
      "my-c.ops.yaml:1:1: error: file name `my-c.ops.yaml`: `my-c` is not an identifier"));
  CHECK(contains(errors_of("inc.ops.yaml"), "(and the `include:` entries that name it)"));
}

TEST_CASE("a Python module imports the records and enums of included files", "[driver][include]") {
  MemoryReader reader{
      {"a.ops.yaml", yaml(R"(
          namespace: a
          include: [b.ops.yaml]
          records: {A: {fields: {m: Mid, base: Base, mode: Mode = x}}}
      )")},
      {"b.ops.yaml", yaml(R"(
          namespace: b
          include: [c.ops.yaml]
          records: {Mid: {fields: {base: Base}}}
      )")},
      {"c.ops.yaml", yaml(R"(
          namespace: c
          enums: {Mode: [x, y]}
          records: {Base: {fields: {x: Tensor}}}
      )")},
  };
  CompileOptions options;
  options.input = "a.ops.yaml";
  options.emit = {OutputKind::Python};
  CompileResult r = compile(options, reader);
  REQUIRE(r.ok);
  const std::string& py = r.outputs[0].content;
  // From the module of the file that declares each (a sibling in a package),
  // with the grad records of those that take gradients (for Python backwards).
  CHECK(contains(
      py,
      "if __package__:\n    from .c_ops import Mode, Base, BaseGrad\n"
      "    from .b_ops import Mid, MidGrad\n"
      "else:\n    from c_ops import Mode, Base, BaseGrad\n    from b_ops import Mid, MidGrad\n"));
  CHECK_FALSE(contains(py, "class BaseGrad"));
  CHECK(contains(py, "class AGrad:"));
  CHECK_FALSE(contains(py, "class Base"));
  CHECK_FALSE(contains(py, "class Mode"));
  CHECK(contains(py, "class A:"));
  CHECK(contains(py, "add_safe_globals([A])"));
  CHECK(contains(py, "    \"Base\",\n"));  // still in __all__
}

TEST_CASE("compile() writes nothing on any error", "[driver]") {
  MemoryReader reader{{"x.ops.yaml", yaml(R"(
      namespace: d
      ops:
        - func: op(Tensor x, flaot s) -> Tensor
  )")}};
  CompileOptions options;
  options.input = "x.ops.yaml";
  options.emit = {OutputKind::Json};
  CompileResult r = compile(options, reader);
  CHECK_FALSE(r.ok);
  CHECK(r.outputs.empty());
  CHECK(contains(
      r.diagnostics,
      "x.ops.yaml:3:24: error: parameter `s` of op `op`: unknown type `flaot`\n"));
  CHECK(r.inputs == std::vector<std::string>{"x.ops.yaml"});
}

TEST_CASE("--explain prints the slot map of one op", "[driver]") {
  CompileResult r = compile_demo({}, std::string("scale_"));
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  CHECK(r.outputs.empty());
  // yaml() only lays the text out by lines: the table is not YAML.
  CHECK(r.explanation == yaml(R"(
      op:      scale_(Tensor x, WeightCfg cfg, *, ScalarType dt=float32) -> ()
      lowered: scale_(Tensor x, Tensor(a!) cfg__inner__w, Tensor(b!)? cfg__inner__b, float cfg__scale=1.0, str cfg__mode="causal", *, ScalarType dt=6) -> ()

      original path  lowered name   type                    default                    kwarg-only  mutated
      -------------  -------------  ----------------------  -------------------------  ----------  -------
      x              x              Tensor                  -                          no          no
      cfg.inner.w    cfg__inner__w  Tensor -> Tensor(a!)    -                          no          yes
      cfg.inner.b    cfg__inner__b  Tensor? -> Tensor(b!)?  -                          no          yes
      cfg.scale      cfg__scale     float                   1.0                        no          no
      cfg.mode       cfg__mode      MaskType -> str         causal (schema: "causal")  no          no
      dt             dt             ScalarType              float32 (schema: 6)        yes         no
  )"));
  CompileResult op = compile_demo({}, std::string("op"));
  CHECK(contains(
      op.explanation,
      "\nmeta: outputs take the metadata of x\n"
      "      (default identity meta: output k copies the k-th tensor input, plain `Tensor`\n"
      "      parameters first, then tensor fields of records; `meta: [names]` picks others)\n"));
  CompileResult custom = compile_demo({}, std::string("can_cast"));
  CHECK(contains(custom.explanation, "\nmeta: custom (kernels::can_cast_meta)\n"));
}

TEST_CASE("--explain finds ops by qualified or C++ name; unknown names list the ops", "[driver]") {
  MemoryReader reader{{"o.ops.yaml", yaml(R"(
      namespace: d
      ops:
        - func: f.two(Tensor x, int n=1) -> Tensor
        - func: g(Tensor x) -> Tensor
  )")}};
  CompileOptions options;
  options.input = "o.ops.yaml";
  options.emit = {};
  options.explain_op = "f.two";
  CompileResult qualified = compile(options, reader);
  CHECK(contains(qualified.explanation, "lowered: f.two(Tensor x, int n=1) -> Tensor\n"));
  options.explain_op = "f_two";
  CHECK(compile(options, reader).explanation == qualified.explanation);
  options.explain_op = "nope";
  CompileResult unknown = compile(options, reader);
  CHECK(unknown.ok);
  CHECK(unknown.explanation.empty());
  REQUIRE(unknown.unknown_explain_op);
  CHECK(*unknown.unknown_explain_op == "ops in this file: `f.two` and `g`");
}

TEST_CASE("--explain names what makes each optional record absent", "[driver]") {
  MemoryReader reader{{"o.ops.yaml", yaml(R"(
      namespace: d
      records:
        I: {fields: {b: 'Tensor?', w: Tensor}}
        G: {fields: {i: 'I? = None', p: I, g: Tensor}}
      ops:
        - func: f(Tensor x, G? g=None) -> Tensor
  )")}};
  CompileOptions options;
  options.input = "o.ops.yaml";
  options.emit = {};
  options.explain_op = "f";
  const CompileResult r = compile(options, reader);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  // g.i.b may be None in a given g.i; g's witness is in its plain field p.
  CHECK(contains(
      r.explanation,
      "\noptional records (absent: every leaf None, exactly when this leaf is None):\n"
      "  g: g.p.w\n"
      "  g.i: g.i.w\n"));
}

TEST_CASE("--explain lists the outputs of returned records", "[driver]") {
  MemoryReader reader{{"r.ops.yaml", yaml(R"(
      namespace: d
      records:
        M: {fields: {mean: Tensor, n: int}}
        S: {fields: {m: M, v: Tensor}}
      ops:
        - func: f(Tensor x) -> (Tensor y, S s)
          meta: custom
  )")}};
  CompileOptions options;
  options.input = "r.ops.yaml";
  options.emit = {};
  options.explain_op = "f";
  const CompileResult r = compile(options, reader);
  INFO(r.diagnostics);
  REQUIRE(r.ok);
  CHECK(contains(
      r.explanation,
      "lowered: f(Tensor x) -> (Tensor y, Tensor s__m__mean, int s__m__n, Tensor s__v)\n"));
  CHECK(contains(
      r.explanation,
      "\nreturned records (one output per leaf):\n"
      "  s.m.mean -> s__m__mean\n"
      "  s.m.n -> s__m__n\n"
      "  s.v -> s__v\n"));
}

TEST_CASE("output names and --emit kinds", "[driver]") {
  CHECK(output_name(OutputKind::Header, "demo") == "demo.ops.h");
  CHECK(output_name(OutputKind::Source, "demo") == "demo.ops.cpp");
  CHECK(output_name(OutputKind::Stubs, "demo") == "demo.ops.stubs.cpp");
  CHECK(output_name(OutputKind::Python, "demo") == "demo_ops.py");
  CHECK(output_name(OutputKind::Json, "demo") == "demo.ops.json");
  CHECK(parse_output_kind("h") == OutputKind::Header);
  CHECK(parse_output_kind("cpp") == OutputKind::Source);
  CHECK(parse_output_kind("stubs") == OutputKind::Stubs);
  CHECK(parse_output_kind("py") == OutputKind::Python);
  CHECK(parse_output_kind("json") == OutputKind::Json);
  CHECK_FALSE(parse_output_kind("hpp"));
  CHECK_FALSE(parse_output_kind(""));
}

TEST_CASE("write_if_changed leaves an identical file alone", "[driver][writer]") {
  TempDir dir;
  std::string path = dir.file("a.ops.json");
  WriteReport first = write_if_changed(path, "{}\n");
  CHECK(first.status == WriteStatus::Written);
  CHECK(first.path == path);
  CHECK(slurp(path) == "{}\n");

  fs::file_time_type old = age(path);
  WriteReport same = write_if_changed(path, "{}\n");
  CHECK(same.status == WriteStatus::Unchanged);
  CHECK(fs::last_write_time(path) == old);

  WriteReport changed = write_if_changed(path, "{\"a\": 1}\n");
  CHECK(changed.status == WriteStatus::Written);
  CHECK(slurp(path) == "{\"a\": 1}\n");
  CHECK(fs::last_write_time(path) != old);

  // Atomic writes leave no temporary files behind.
  size_t files = 0;
  for (const auto& entry : fs::directory_iterator(dir.path)) {
    (void)entry;
    ++files;
  }
  CHECK(files == 1);
}

TEST_CASE("write_if_changed reports failures instead of throwing", "[driver][writer]") {
  TempDir dir;
  WriteReport r = write_if_changed(dir.file("missing/dir/x.json"), "x");
  CHECK(r.status == WriteStatus::Failed);
  CHECK_FALSE(r.error.empty());
}

TEST_CASE(
    "write_outputs creates the folder, rewrites only changes, never overwrites stubs",
    "[driver][writer]") {
  TempDir dir;
  std::string out = dir.file("out/nested");
  std::vector<OutputFile> files = {
      {OutputKind::Json, "x.ops.json", "json v1\n", false},
      {OutputKind::Stubs, "x.ops.stubs.cpp", "stubs v1\n", true},
  };
  auto first = write_outputs(files, out);
  REQUIRE(first.size() == 2);
  CHECK(first[0].status == WriteStatus::Written);
  CHECK(first[1].status == WriteStatus::Written);
  CHECK(first[1].path == out + "/x.ops.stubs.cpp");
  CHECK(slurp(out + "/x.ops.stubs.cpp") == "stubs v1\n");

  // The user edits the stubs; a later run with new content keeps them.
  spit(out + "/x.ops.stubs.cpp", "my kernels\n");
  fs::file_time_type json_time = age(out + "/x.ops.json");
  files[1].content = "stubs v2\n";
  auto second = write_outputs(files, out);
  CHECK(second[0].status == WriteStatus::Unchanged);
  CHECK(fs::last_write_time(out + "/x.ops.json") == json_time);
  CHECK(second[1].status == WriteStatus::KeptExisting);
  CHECK(slurp(out + "/x.ops.stubs.cpp") == "my kernels\n");

  files[0].content = "json v2\n";
  auto third = write_outputs(files, out);
  CHECK(third[0].status == WriteStatus::Written);
  CHECK(slurp(out + "/x.ops.json") == "json v2\n");
}

TEST_CASE("write_outputs updates all changed outputs or none", "[driver][writer]") {
  TempDir dir;
  std::string out = dir.file("out");
  std::vector<OutputFile> files = {
      {OutputKind::Header, "x.ops.h", "h v1\n", false},
      {OutputKind::Json, "x.ops.json", "json v1\n", false},
  };
  REQUIRE(write_outputs(files, out)[0].status == WriteStatus::Written);

  // x.ops.json cannot be written (a folder is in the way): x.ops.h keeps its
  // old content, so the outputs never disagree with each other.
  fs::remove(out + "/x.ops.json");
  fs::create_directories(out + "/x.ops.json");
  files[0].content = "h v2\n";
  files[1].content = "json v2\n";
  auto reports = write_outputs(files, out);
  REQUIRE(reports.size() == 2);
  CHECK(reports[0].status == WriteStatus::NotWritten);
  CHECK(reports[1].status == WriteStatus::Failed);
  CHECK_THAT(reports[1].error, Catch::Matchers::ContainsSubstring("folder"));
  CHECK(slurp(out + "/x.ops.h") == "h v1\n");
  size_t entries = 0;  // and no temporary file is left behind
  for (const auto& entry : fs::directory_iterator(out)) {
    (void)entry;
    ++entries;
  }
  CHECK(entries == 2);

  fs::remove(out + "/x.ops.json");
  auto fixed = write_outputs(files, out);
  CHECK(fixed[0].status == WriteStatus::Written);
  CHECK(fixed[1].status == WriteStatus::Written);
  CHECK(slurp(out + "/x.ops.h") == "h v2\n");
}

TEST_CASE("find_duplicates pairs each repeat with the first occurrence", "[base]") {
  using Pairs = std::vector<std::pair<size_t, size_t>>;
  CHECK(find_duplicates(std::vector<std::string_view>{}).empty());
  CHECK(find_duplicates({"a", "b", "a", "c", "a", "b"}) == Pairs{{0, 2}, {0, 4}, {1, 5}});
  // Entries without a key take no part.
  std::vector<std::optional<std::string_view>> keyed = {std::nullopt, "x", std::nullopt, "x"};
  CHECK(find_duplicates(keyed.size(), [&](size_t i) { return keyed[i]; }) == Pairs{{1, 3}});
  // Over 32 keys the search sorts; the answer is the same.
  std::vector<std::string> names;
  for (int i = 0; i < 50; ++i) names.push_back("k" + std::to_string(i % 40));
  names[45] = "";
  std::vector<std::string_view> views(names.begin(), names.end());
  Pairs expected;
  for (size_t i = 40; i < 50; ++i) {
    if (i != 45) expected.emplace_back(i - 40, i);
  }
  CHECK(find_duplicates(views) == expected);
}

TEST_CASE("make_depfile writes Make syntax with escapes", "[driver][writer]") {
  CHECK(
      make_depfile({"out/a.ops.h", "out/a.ops.cpp"}, {"a.ops.yaml", "inc/common.ops.yaml"}) ==
      "out/a.ops.h out/a.ops.cpp: a.ops.yaml inc/common.ops.yaml\n");
  CHECK(
      make_depfile({"my out/x.h"}, {"my dir/x#1.ops.yaml", "$HOME.ops.yaml"}) ==
      "my\\ out/x.h: my\\ dir/x\\#1.ops.yaml $$HOME.ops.yaml\n");
  CHECK(make_depfile({"t"}, {}) == "t:\n");
  // Backslashes before a space are doubled (GCC's and Ninja's convention),
  // others stay as they are.
  CHECK(make_depfile({"t"}, {"a\\ b\\c.ops.yaml"}) == "t: a\\\\\\ b\\c.ops.yaml\n");
}

TEST_CASE("make_depfile rejects what a depfile cannot express", "[driver][writer][hostile]") {
  std::string error;
  CHECK_FALSE(make_depfile({"out/x.ops.h"}, {"inc/evil\nx.ops.yaml"}, &error));
  // Shown on one line: the newline as `\n`.
  CHECK(
      error ==
      "the path `inc/evil\\nx.ops.yaml` contains a newline, which a depfile cannot express");
  CHECK_FALSE(make_depfile({"out\r/x.ops.h"}, {}, &error));
  CHECK_THAT(error, Catch::Matchers::ContainsSubstring("a carriage return"));
  CHECK_FALSE(make_depfile({"t"}, {"a\tb.ops.yaml"}, &error));
  CHECK_THAT(error, Catch::Matchers::ContainsSubstring("a tab"));
  CHECK_FALSE(make_depfile({"t"}, {"dir\\"}, &error));
  CHECK_THAT(error, Catch::Matchers::ContainsSubstring("ends in a backslash"));
  CHECK_FALSE(make_depfile({"t"}, {"x\x01.ops.yaml"}));  // the error is optional
}

namespace {

std::vector<std::string> listing(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) names.push_back(entry.path().filename());
  std::sort(names.begin(), names.end());
  return names;
}

/// Sets the umask for one scope.
struct Umask {
  mode_t old;
  explicit Umask(mode_t mask) : old(::umask(mask)) {}
  ~Umask() { ::umask(old); }
};

}  // namespace

TEST_CASE("symlinks planted in the output folder are never followed", "[driver][writer][hostile]") {
  TempDir dir;
  const std::string out = dir.file("out");
  fs::create_directories(out);
  const std::string victim = dir.file("victim.txt");
  spit(victim, "precious\n");
  const std::string depfile = dir.file("x.d");

  // Symlinks to the victim at every name an attacker could predict: the old
  // `NAME.tmp.PID` and other usual temporary names, for each output and the
  // depfile (the real temporary names are random and created with O_EXCL).
  std::vector<std::string> planted;
  for (const std::string& target : {out + "/x.ops.h", out + "/x.ops.json", depfile}) {
    const std::string name = fs::path(target).filename(), parent = fs::path(target).parent_path();
    for (const std::string& guess :
         {name + ".tmp." + std::to_string(::getpid()),
          name + ".tmp." + std::to_string(::getpid() + 1),
          name + ".tmp",
          "." + name + ".tmp",
          name + "~",
          "." + name}) {
      fs::create_symlink(victim, parent + "/" + guess);
      planted.push_back(parent + "/" + guess);
    }
  }
  // And at the targets themselves: an output replaces the link, never the
  // file it points to; a stub (never overwritten) is kept, even as a
  // dangling link, and nothing is created where it points.
  fs::create_symlink(victim, out + "/x.ops.json");
  fs::create_symlink(victim, out + "/x.ops.stubs.cpp");
  fs::create_symlink(dir.file("created-through-link.cpp"), out + "/y.ops.stubs.cpp");

  std::vector<OutputFile> files = {
      {OutputKind::Header, "x.ops.h", "h v1\n", false},
      {OutputKind::Json, "x.ops.json", "json v1\n", false},
      {OutputKind::Stubs, "x.ops.stubs.cpp", "stubs v1\n", true},
      {OutputKind::Stubs, "y.ops.stubs.cpp", "stubs v1\n", true},
  };
  Umask umask(022);
  auto reports = write_outputs(files, out, DepfileRequest{depfile, {"x.ops.yaml"}});
  REQUIRE(reports.size() == 5);
  CHECK(reports[0].status == WriteStatus::Written);
  CHECK(reports[1].status == WriteStatus::Written);
  CHECK(reports[2].status == WriteStatus::KeptExisting);
  CHECK(reports[3].status == WriteStatus::KeptExisting);
  CHECK(reports[4].status == WriteStatus::Written);

  CHECK(slurp(victim) == "precious\n");
  CHECK_FALSE(fs::exists(dir.file("created-through-link.cpp")));
  for (const auto& p : planted) CHECK(fs::read_symlink(p) == victim);  // left alone
  CHECK(fs::is_regular_file(fs::symlink_status(out + "/x.ops.h")));
  CHECK(fs::is_regular_file(fs::symlink_status(out + "/x.ops.json")));
  CHECK(slurp(out + "/x.ops.json") == "json v1\n");
  CHECK(fs::is_symlink(out + "/x.ops.stubs.cpp"));
  CHECK(
      slurp(depfile) == out + "/x.ops.h " + out + "/x.ops.json " + out + "/x.ops.stubs.cpp " + out +
                            "/y.ops.stubs.cpp: x.ops.yaml\n");
  // New files get the usual mode (0666 less the umask), not mkstemp's 0600.
  struct stat st{};
  REQUIRE(::stat((out + "/x.ops.h").c_str(), &st) == 0);
  CHECK((st.st_mode & 0777) == 0644);
  // No temporary file is left behind: only the outputs and the planted links.
  CHECK(listing(out).size() == 4 + 12);
  CHECK(listing(dir.path).size() == 3 + 6);  // out, victim, x.d and the links
}

TEST_CASE("a FIFO or a device at an output's name is not read", "[driver][writer][hostile]") {
  TempDir dir;
  const std::string fifo = dir.file("x.ops.h");
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  fs::create_symlink("/dev/zero", dir.file("x.ops.json"));
  auto reports = write_outputs(
      {{OutputKind::Header, "x.ops.h", "h\n", false},
       {OutputKind::Json, "x.ops.json", "j\n", false}},
      dir.path.string());
  CHECK(reports[0].status == WriteStatus::Written);
  CHECK(reports[1].status == WriteStatus::Written);
  CHECK(slurp(dir.file("x.ops.h")) == "h\n");
  CHECK(fs::is_regular_file(fs::symlink_status(dir.file("x.ops.json"))));
}

namespace {

/// Lowers the file size limit (`ulimit -f`) for one scope: writes past it
/// fail with EFBIG, as they would with ENOSPC on a full disk.
struct FileSizeLimit {
  rlimit old{};
  void (*old_handler)(int) = nullptr;
  explicit FileSizeLimit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &old);
    rlimit lower = old;
    lower.rlim_cur = bytes;
    ::setrlimit(RLIMIT_FSIZE, &lower);
    old_handler = ::signal(SIGXFSZ, SIG_IGN);
  }
  ~FileSizeLimit() {
    ::setrlimit(RLIMIT_FSIZE, &old);
    ::signal(SIGXFSZ, old_handler);
  }
};

}  // namespace

TEST_CASE(
    "a failed write leaves every output and the depfile as they were",
    "[driver][writer][hostile]") {
  TempDir dir;
  const std::string out = dir.file("out");
  const std::string depfile = dir.file("x.d");
  std::vector<OutputFile> files = {
      {OutputKind::Header, "x.ops.h", "h v1\n", false},
      {OutputKind::Json, "x.ops.json", "json v1\n", false},
  };
  auto first = write_outputs(files, out, DepfileRequest{depfile, {"x.ops.yaml"}});
  REQUIRE(first.size() == 3);
  REQUIRE(first[2].status == WriteStatus::Written);
  const std::string old_depfile = slurp(depfile);

  SECTION("the disk fills up while an output is staged") {
    // x.ops.h is staged first; x.ops.json does not fit.
    files[0].content = "h v2\n";
    files[1].content = std::string(1 << 20, 'j');
    std::vector<WriteReport> reports;
    {
      FileSizeLimit limit(64 << 10);
      reports = write_outputs(files, out, DepfileRequest{depfile, {"x.ops.yaml", "new.ops.yaml"}});
    }
    REQUIRE(reports.size() == 3);
    CHECK(reports[0].status == WriteStatus::NotWritten);
    CHECK(reports[1].status == WriteStatus::Failed);
    CHECK(reports[1].error == std::strerror(EFBIG));
    CHECK(reports[2].status == WriteStatus::NotWritten);
  }
  SECTION("the depfile cannot be written") {
    files[0].content = "h v2\n";
    auto reports =
        write_outputs(files, out, DepfileRequest{dir.file("missing/x.d"), {"x.ops.yaml"}});
    REQUIRE(reports.size() == 3);
    CHECK(reports[0].status == WriteStatus::NotWritten);
    CHECK(reports[1].status == WriteStatus::Unchanged);
    CHECK(reports[2].status == WriteStatus::Failed);
    CHECK(reports[2].error == std::strerror(ENOENT));
  }
  SECTION("a path that the depfile cannot express") {
    files[0].content = "h v2\n";
    auto reports = write_outputs(files, out, DepfileRequest{depfile, {"evil\n.ops.yaml"}});
    REQUIRE(reports.size() == 3);
    CHECK(reports[0].status == WriteStatus::NotWritten);
    CHECK(reports[2].status == WriteStatus::Failed);
    CHECK_THAT(reports[2].error, Catch::Matchers::ContainsSubstring("contains a newline"));
  }
  // Everything as the first run left it, and no temporary file anywhere.
  CHECK(slurp(out + "/x.ops.h") == "h v1\n");
  CHECK(slurp(out + "/x.ops.json") == "json v1\n");
  CHECK(slurp(depfile) == old_depfile);
  CHECK(listing(out) == std::vector<std::string>{"x.ops.h", "x.ops.json"});
  CHECK(listing(dir.path) == std::vector<std::string>{"out", "x.d"});
}

TEST_CASE("a failed first write leaves no output and no depfile", "[driver][writer][hostile]") {
  TempDir dir;
  std::vector<WriteReport> reports;
  {
    FileSizeLimit limit(64 << 10);
    reports = write_outputs(
        {{OutputKind::Header, "x.ops.h", "h\n", false},
         {OutputKind::Stubs, "x.ops.stubs.cpp", "stubs\n", true},
         {OutputKind::Json, "x.ops.json", std::string(1 << 20, 'j'), false}},
        dir.file("out"),
        DepfileRequest{dir.file("x.d"), {"x.ops.yaml"}});
  }
  REQUIRE(reports.size() == 4);
  CHECK(reports[0].status == WriteStatus::NotWritten);
  CHECK(reports[1].status == WriteStatus::NotWritten);
  CHECK(reports[2].status == WriteStatus::Failed);
  CHECK(reports[3].status == WriteStatus::NotWritten);
  CHECK(listing(dir.file("out")).empty());
  CHECK(listing(dir.path) == std::vector<std::string>{"out"});
}

TEST_CASE(
    "an output or depfile that is an input or another output is refused, nothing written",
    "[driver][writer][hostile]") {
  TempDir dir;
  const std::string idl = dir.file("x.ops.yaml");
  const std::string out = dir.file("out");
  {
    std::ofstream(idl) << "namespace: x\n";
  }
  fs::create_directories(dir.file("sub"));
  fs::create_symlink(idl, dir.file("link.ops.yaml"));
  fs::create_hard_link(idl, dir.file("hard.ops.yaml"));
  const std::vector<OutputFile> files = {{OutputKind::Header, "x.ops.h", "h\n", false}};
  const std::vector<std::string> reads = {idl};
  for (const std::string& depfile :
       {idl, dir.file("sub/../x.ops.yaml"), dir.file("link.ops.yaml"), dir.file("hard.ops.yaml")}) {
    INFO(depfile);
    auto reports = write_outputs(files, out, DepfileRequest{depfile, reads}, reads);
    REQUIRE(reports.size() == 2);
    CHECK(reports[0].status == WriteStatus::NotWritten);
    CHECK(reports[1].status == WriteStatus::Failed);
    CHECK(reports[1].error == "that is `" + idl + "`, which this run reads");
  }
  // The depfile at an output's name (the output folder does not exist yet).
  auto reports = write_outputs(files, out, DepfileRequest{out + "/x.ops.h", reads}, reads);
  REQUIRE(reports.size() == 2);
  CHECK(reports[1].status == WriteStatus::Failed);
  CHECK(reports[1].error == "that is `" + out + "/x.ops.h`, another output of this run");
  // An output hard-linked to the IDL.
  fs::create_directories(out);
  fs::create_hard_link(idl, out + "/x.ops.h");
  reports = write_outputs(files, out, std::nullopt, reads);
  REQUIRE(reports.size() == 1);
  CHECK(reports[0].status == WriteStatus::Failed);
  CHECK(slurp(idl) == "namespace: x\n");
  CHECK(listing(out) == std::vector<std::string>{"x.ops.h"});
  CHECK(
      listing(dir.path) ==
      std::vector<std::string>{"hard.ops.yaml", "link.ops.yaml", "out", "sub", "x.ops.yaml"});
}

namespace {

/// `n` copies of `c` after `prefix`.
std::string padded(const std::string& prefix, size_t n, char c = 'x') {
  return prefix + std::string(n - prefix.size(), c);
}

CompileResult compile_text(const std::string& text, size_t max_output = kMaxOutputBytes) {
  MemoryReader reader{{"big.ops.yaml", text}};
  CompileOptions options;
  options.input = "big.ops.yaml";
  options.emit = {
      OutputKind::Header,
      OutputKind::Source,
      OutputKind::Stubs,
      OutputKind::Python,
      OutputKind::Json};
  options.max_output_bytes = max_output;
  return compile(options, reader);
}

/// Records R0..R{depth-1}, each holding the previous one in a field named
/// `f<i>_xxx...` of `name_length` bytes, and `ops` ops taking the last.
std::string deep_long_names(size_t depth, size_t name_length, size_t ops) {
  std::string text = yaml(R"(
      namespace: big
      records:
  )");
  for (size_t i = 0; i < depth; ++i) {
    text += "  R" + std::to_string(i) + ": {fields: {" +
            padded("f" + std::to_string(i) + "_", name_length) + ": " +
            (i == 0 ? std::string("Tensor") : "R" + std::to_string(i - 1)) + "}}\n";
  }
  text += "ops:\n";
  for (size_t k = 0; k < ops; ++k) {
    text += "  - func: op" + std::to_string(k) + "(Tensor x, R" + std::to_string(depth - 1) +
            " cfg) -> Tensor\n";
  }
  return text;
}

}  // namespace

// Without the limits these inputs take tens of seconds and gigabytes of memory;
// with them, compile() stops where the diagnostic says (the first name over
// the limit, the op where the flattened size passed it) and writes nothing.
// No clock is read: cli_test.py bounds structopc's instructions and address
// space on the first input.
TEST_CASE("an IDL that would generate gigabytes is rejected at once", "[driver][limits][hostile]") {
  SECTION("200-deep records with 1,000-byte names, 150 ops: the names") {
    // 215 KB of IDL; structopc used to take 30 s and 1.4 GB to write 850 MB.
    const std::string text = deep_long_names(200, 1000, 150);
    REQUIRE(text.size() > 200'000);
    CompileResult r = compile_text(text);
    CHECK_FALSE(r.ok);
    CHECK(r.outputs.empty());
    CHECK(contains(
        r.diagnostics,
        "big.ops.yaml:3:17: error: field name `f0_" + std::string(37, 'x') + "..." +
            std::string(12, 'x') + "` is 1000 bytes long; names are limited to 256 bytes\n"));
    CHECK(contains(r.diagnostics, "hint: choose a shorter name\n"));
  }
  SECTION("the same with names under the limit: the lowered names") {
    const std::string text = deep_long_names(100, 250, 150);
    CompileResult r = compile_text(text);
    CHECK_FALSE(r.ok);
    // Once, where the name first gets too long (R4: 5 x 250 + 4 x 2 bytes),
    // not again for each record or op that contains it.
    CHECK(r.diagnostics.find(": error: ") == r.diagnostics.rfind(": error: "));
    CHECK(contains(
        r.diagnostics,
        "big.ops.yaml:7:17: error: field `R4.f4_" + std::string(37, 'x') + "..." +
            std::string(12, 'x') + "` lowers to a name of 1258 bytes (`f4_"));
    CHECK(contains(r.diagnostics, "lowered names are limited to 1024 bytes\n"));
  }
  SECTION("many short records and ops: the flattened size") {
    // One record of 100 leaves with 200-byte names, taken by 1,000 ops:
    // 21 MiB of flattened parameters.
    std::string text = yaml(R"(
        namespace: big
        records:
          B:
            fields:
    )");
    for (int i = 0; i < 100; ++i)
      text += "      " + padded("f" + std::to_string(i) + "_", 200) + ": Tensor\n";
    text += "ops:\n";
    for (int k = 0; k < 1000; ++k)
      text += "  - func: op" + std::to_string(k) + "(Tensor x, B b) -> Tensor\n";
    CompileResult r = compile_text(text);
    CHECK_FALSE(r.ok);
    CHECK(contains(
        r.diagnostics,
        "error: the records and ops of this file flatten to more than 4 MiB (reached at op "
        "`op190`); the generated code would be too large\n"));
  }
}

TEST_CASE("limits: names, lowered names and output size at their bounds", "[driver][limits]") {
  // A name of exactly 256 bytes is fine, 257 is not.
  const std::string ok_name = padded("f", kMaxIdentifierLength);
  const std::string long_name = padded("f", kMaxIdentifierLength + 1);
  CHECK(compile_text("namespace: big\nrecords: {R: {fields: {" + ok_name + ": Tensor}}}\n").ok);
  CompileResult r = compile_text(
      "namespace: big\nrecords: {R: {fields: {" + long_name + ": Tensor}}}\n");
  CHECK(contains(r.diagnostics, "is 257 bytes long; names are limited to 256 bytes\n"));
  // Type names too: no did-you-mean is computed for them.
  const std::string one_op = yaml(R"(
      ops:
        - func: )");
  CompileResult type = compile_text(
      "namespace: big\n" + one_op + "f(" + padded("T", 300) + " x) -> Tensor\n");
  CHECK(contains(type.diagnostics, "error: type name `T"));
  CHECK_FALSE(contains(type.diagnostics, "unknown type"));
  // A lowered name of exactly 1024 bytes is fine, 1025 is not: C's leaf is
  // `c__b__a` (3 x 255 + 2 x 2 bytes), so a parameter takes 253 or 254 more.
  std::string records = yaml(R"(
      namespace: big
      records:
  )");
  records += "  A: {fields: {" + padded("a", 255) + ": Tensor}}\n";
  records += "  B: {fields: {" + padded("b", 255) + ": A}}\n";
  records += "  C: {fields: {" + padded("c", 255) + ": B}}\n";
  CHECK(compile_text(records + one_op + "g(C " + padded("p", 253) + ") -> ()\n").ok);
  CompileResult op = compile_text(records + one_op + "g(C " + padded("p", 254) + ") -> ()\n");
  CHECK(contains(
      op.diagnostics,
      "error: parameter `" + padded("p", 40) + "..." + std::string(12, 'x') +
          "` of op `g` lowers to a name of 1025 bytes"));
  // The output size, a last line of defence.
  CompileResult small = compile_text(
      yaml(R"(
          namespace: big
          ops:
            - func: f(Tensor x) -> Tensor
      )"),
      100);
  CHECK_FALSE(small.ok);
  CHECK(small.outputs.empty());
  CHECK(
      small.diagnostics ==
      "big.ops.yaml: error: the generated code would be more than 100 bytes (at `big.ops.h`)\n"
      "hint: split the ops into several IDL files\n");
}
