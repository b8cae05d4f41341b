// Unit tests of load/idl_loader: the main file and its includes, read through
// an in-memory FileReader, and the disk reader on a temporary folder.
#include "catch2.h"

#include <filesystem>
#include <fstream>

#include <sys/stat.h>

#include "test_support.h"

using namespace structop;
using structop::testing::contains;
using structop::testing::MemoryReader;
using structop::testing::run_front_end;
using structop::testing::TempDir;
using structop::testing::yaml;

namespace fs = std::filesystem;

namespace {

const std::string kCommon = yaml(R"(
    namespace: common
    enums:
      Mode: [a, b]
    records:
      Inner:
        fields:
          w: Tensor
)");

}  // namespace

TEST_CASE("an include is found next to the including file", "[loader]") {
  MemoryReader reader{
      {"proj/main.ops.yaml", yaml(R"(
          namespace: demo
          include: [sub/common.ops.yaml]
          ops:
            - func: op(Tensor x, Inner cfg, Mode m=b) -> Tensor
      )")},
      {"proj/sub/common.ops.yaml", kCommon},
  };
  auto fe = run_front_end(reader, "proj/main.ops.yaml");
  REQUIRE(fe.errors.empty());
  // Dependency order: the included file first, the main file last; paths
  // for the depfile: main first.
  REQUIRE(fe.idl.files.size() == 2);
  CHECK(fe.idl.files[0].namespace_.text == "common");
  CHECK(fe.idl.files[1].namespace_.text == "demo");
  REQUIRE(fe.idl.paths.size() == 2);
  CHECK(fe.idl.paths[0] == "proj/main.ops.yaml");
  CHECK(fe.idl.paths[1] == "proj/sub/common.ops.yaml");
  CHECK(fe.module.namespace_ == "demo");
  CHECK(fe.module.files == fe.idl.paths);
  REQUIRE(fe.module.records.size() == 1);
  CHECK(fe.module.records[0].from_include);
  CHECK(fe.module.records[0].cpp_namespace == "common");
  CHECK(fe.module.enums[0].from_include);
  CHECK(fe.op("op").schema == "op(Tensor x, Tensor cfg__w, str m=\"b\") -> Tensor");
}

TEST_CASE("-I folders are searched after the including file's folder", "[loader]") {
  MemoryReader reader{
      {"main.ops.yaml", yaml(R"(
          namespace: demo
          include: [common.ops.yaml]
      )")},
      {"inc1/common.ops.yaml", "namespace: one\n"},
      {"inc2/common.ops.yaml", "namespace: two\n"},
  };
  auto fe = run_front_end(reader, "main.ops.yaml", {"inc2", "inc1"});
  REQUIRE(fe.errors.empty());
  CHECK(fe.idl.paths[1] == "inc2/common.ops.yaml");
  CHECK(reader.reads("inc1/common.ops.yaml") == 0);

  reader.add("common.ops.yaml", "namespace: local\n");
  auto local = run_front_end(reader, "main.ops.yaml", {"inc2", "inc1"});
  REQUIRE(local.errors.empty());
  CHECK(local.idl.paths[1] == "common.ops.yaml");
}

TEST_CASE("a file included twice (diamond) is read once", "[loader]") {
  MemoryReader reader{
      {"main.ops.yaml", yaml(R"(
          namespace: demo
          include: [left.ops.yaml, right.ops.yaml]
      )")},
      {"left.ops.yaml", yaml(R"(
          namespace: l
          include: [base.ops.yaml]
          records: {L: {fields: {b: Base}}}
      )")},
      {"right.ops.yaml", yaml(R"(
          namespace: r
          include: [./base.ops.yaml]
          records: {R: {fields: {b: Base}}}
      )")},
      {"base.ops.yaml", yaml(R"(
          namespace: b
          records: {Base: {fields: {x: Tensor}}}
      )")},
  };
  auto fe = run_front_end(reader);
  REQUIRE(fe.errors.empty());
  CHECK(reader.reads("base.ops.yaml") == 1);
  REQUIRE(fe.idl.files.size() == 4);
  CHECK(fe.idl.files[0].namespace_.text == "b");
  CHECK(fe.idl.files[1].namespace_.text == "l");
  CHECK(fe.idl.files[2].namespace_.text == "r");
  CHECK(fe.idl.files[3].namespace_.text == "demo");
  CHECK(
      fe.idl.paths == std::vector<std::string>{
                          "main.ops.yaml",
                          "left.ops.yaml",
                          "base.ops.yaml",
                          "right.ops.yaml"});
  // Base is declared once, so no "already defined" error either.
  CHECK(fe.module.records.size() == 3);
  // The module knows every included file, which of them the main file lists,
  // and which file declares each record (for the generated includes).
  REQUIRE(fe.module.includes.size() == 3);
  CHECK(fe.module.includes[0].stem == "base");
  CHECK_FALSE(fe.module.includes[0].direct);
  CHECK(fe.module.includes[1].stem == "left");
  CHECK(fe.module.includes[1].direct);
  CHECK(fe.module.includes[2].stem == "right");
  CHECK(fe.module.includes[2].direct);
  CHECK(fe.idl.includes == std::vector<std::vector<size_t>>{{}, {0}, {0}, {1, 2}});
  for (const auto& r : fe.module.records) {
    CHECK(r.from_include);
    CHECK(
        fe.module.includes[static_cast<size_t>(r.include)].stem == (r.name == "Base" ? "base"
                                                                    : r.name == "L"  ? "left"
                                                                                     : "right"));
  }
}

TEST_CASE("an include cycle is an error that shows the chain", "[loader]") {
  MemoryReader reader{
      {"main.ops.yaml", yaml(R"(
          namespace: demo
          include: [a.ops.yaml]
      )")},
      {"a.ops.yaml", yaml(R"(
          namespace: a
          include: [b.ops.yaml]
      )")},
      {"b.ops.yaml", yaml(R"(
          namespace: b
          include: [a.ops.yaml]
      )")},
  };
  auto fe = run_front_end(reader);
  CHECK(
      fe.errors ==
      "b.ops.yaml:2:11: error: include cycle: `a.ops.yaml` -> `b.ops.yaml` -> `a.ops.yaml`\n"
      " 2 | include: [a.ops.yaml]\n"
      "   |           ^~~~~~~~~~\n"
      "hint: move the shared records and enums into a file that includes neither\n");
  CHECK(reader.reads("a.ops.yaml") == 1);
}

TEST_CASE("a file including itself is a cycle", "[loader]") {
  MemoryReader reader{{"main.ops.yaml", yaml(R"(
      namespace: demo
      include: [main.ops.yaml]
  )")}};
  auto fe = run_front_end(reader);
  CHECK(contains(
      fe.errors,
      "main.ops.yaml:2:11: error: include cycle: `main.ops.yaml` -> `main.ops.yaml`\n"));
}

TEST_CASE("a missing include names what was searched", "[loader]") {
  MemoryReader reader{{"main.ops.yaml", yaml(R"(
      namespace: demo
      include: [nope.ops.yaml]
  )")}};
  auto plain = run_front_end(reader);
  CHECK(
      plain.errors ==
      "main.ops.yaml:2:11: error: cannot find included file `nope.ops.yaml`\n"
      " 2 | include: [nope.ops.yaml]\n"
      "   |           ^~~~~~~~~~~~~\n"
      "hint: paths are relative to the including file; add a search folder with -I\n");
  auto with_dirs = run_front_end(reader, "main.ops.yaml", {"x", "y"});
  CHECK(contains(with_dirs.errors, "hint: searched next to `main.ops.yaml` and in `x` and `y`\n"));
}

TEST_CASE("a main file that cannot be read is an error without a position", "[loader]") {
  MemoryReader reader;
  auto fe = run_front_end(reader, "absent.ops.yaml");
  CHECK(fe.errors == "absent.ops.yaml: error: cannot read file: No such file or directory\n");
  CHECK(fe.idl.files.empty());
}

TEST_CASE("errors in included files are reported against those files", "[loader]") {
  MemoryReader reader{
      {"main.ops.yaml", yaml(R"(
          namespace: demo
          include: [c.ops.yaml]
          records: {M: {fields: {x: flaot}}}
      )")},
      {"c.ops.yaml", yaml(R"(
          namespace: c
          records: {C: {fields: {y: Tensr}}}
      )")},
  };
  auto fe = run_front_end(reader);
  CHECK(contains(fe.errors, "c.ops.yaml:2:27: error: field `C.y`: unknown type `Tensr`\n"));
  CHECK(contains(fe.errors, "main.ops.yaml:3:27: error: field `M.x`: unknown type `flaot`\n"));
  // Files in the order they were read: the main file first.
  CHECK(fe.errors.find("main.ops.yaml:") < fe.errors.find("c.ops.yaml:"));
}

TEST_CASE("a name defined in two files is an error with a note", "[loader]") {
  MemoryReader reader{
      {"main.ops.yaml", yaml(R"(
          namespace: demo
          include: [c.ops.yaml]
          enums: {Mode: [x]}
      )")},
      {"c.ops.yaml", kCommon},
  };
  auto fe = run_front_end(reader);
  CHECK(contains(fe.errors, "main.ops.yaml:3:9: error: `Mode` is already defined\n"));
  CHECK(contains(fe.errors, "c.ops.yaml:3:3: note: `Mode` first defined here\n"));
}

TEST_CASE("ops of included files are not the main file's ops", "[loader]") {
  MemoryReader reader{
      {"main.ops.yaml", yaml(R"(
          namespace: demo
          include: [c.ops.yaml]
          ops:
            - func: mine(Tensor x) -> Tensor
      )")},
      {"c.ops.yaml", yaml(R"(
          namespace: c
          ops:
            - func: theirs(Tensor x) -> Tensor
      )")},
  };
  auto fe = run_front_end(reader);
  REQUIRE(fe.errors.empty());
  REQUIRE(fe.module.ops.size() == 1);
  CHECK(fe.module.ops[0].name == "mine");
}

TEST_CASE("a long include chain is an error, not a stack overflow", "[loader]") {
  MemoryReader reader;
  const int n = 5000;
  for (int i = 0; i < n; ++i) {
    std::string text = "namespace: n" + std::to_string(i) + "\n";
    if (i + 1 < n) text += "include: [f" + std::to_string(i + 1) + ".ops.yaml]\n";
    reader.add("f" + std::to_string(i) + ".ops.yaml", text);
  }
  auto fe = run_front_end(reader, "f0.ops.yaml");
  CHECK(fe.diags->error_count() == 1);
  // Reported where the chain starts, in the main file, with a note where it
  // goes too deep.
  CHECK(
      fe.errors ==
      "f0.ops.yaml:2:11: error: includes nest more than 100 files deep: `f0.ops.yaml` -> "
      "`f1.ops.yaml` -> ... -> `f98.ops.yaml` -> `f99.ops.yaml` -> `f100.ops.yaml`\n"
      " 2 | include: [f1.ops.yaml]\n"
      "   |           ^~~~~~~~~~~\n"
      "hint: include the shared files from the main file instead of through a chain\n"
      "f99.ops.yaml:2:11: note: `f100.ops.yaml` would be file 101 of the chain\n"
      " 2 | include: [f100.ops.yaml]\n"
      "   |           ^~~~~~~~~~~~~\n");
  CHECK(reader.reads("f100.ops.yaml") == 0);
  // A chain of 100 files is fine.
  MemoryReader ok;
  for (int i = 0; i < 100; ++i) {
    std::string text = "namespace: n" + std::to_string(i) + "\n";
    if (i < 99) text += "include: [f" + std::to_string(i + 1) + ".ops.yaml]\n";
    ok.add("f" + std::to_string(i) + ".ops.yaml", text);
  }
  CHECK(run_front_end(ok, "f0.ops.yaml").errors.empty());
}

TEST_CASE("the diagnostic that names a too-deep include chain comes first", "[loader]") {
  // 1,000 files in a chain; the main file uses a record of the last one,
  // which is never read: the chain, not the unknown type, is the cause.
  MemoryReader reader;
  const int n = 1000;
  for (int i = 0; i < n; ++i) {
    std::string text = "namespace: n" + std::to_string(i) + "\n";
    if (i + 1 < n) text += "include: [f" + std::to_string(i + 1) + ".ops.yaml]\n";
    text += "records: {R" + std::to_string(i) + ": {fields: {x: Tensor}}}\n";
    if (i == 0)
      text += yaml(R"(
          ops:
            - func: op(Tensor x, R999 cfg, R5 c5) -> Tensor
      )");
    reader.add("f" + std::to_string(i) + ".ops.yaml", text);
  }
  auto fe = run_front_end(reader, "f0.ops.yaml");
  CHECK(fe.errors.rfind("f0.ops.yaml:2:11: error: includes nest more than 100 files deep", 0) == 0);
  CHECK(contains(fe.errors, "error: parameter `cfg` of op `op`: unknown type `R999`"));
}

TEST_CASE("an included file name with a newline is an error", "[loader]") {
  MemoryReader reader{
      {"main.ops.yaml", yaml(R"(
          namespace: demo
          include: ["evil\n.ops.yaml"]
      )")},
      {"evil\n.ops.yaml", "namespace: evil\n"},
  };
  auto fe = run_front_end(reader);
  CHECK(
      fe.errors ==
      "main.ops.yaml:2:12: error: included file name contains a newline\n"
      " 2 | include: [\"evil\\n.ops.yaml\"]\n"
      "   |            ^\n"
      "hint: rename the file: depfiles and generated `#include` lines cannot name it\n");
  CHECK(reader.reads("evil\n.ops.yaml") == 0);
}

// ---- the disk reader ----------------------------------------------------------

namespace {

/// Loads `path` from disk; returns the rendered diagnostics. (A reader that
/// blocked on a FIFO or read /dev/zero would never return: the test's Meson
/// timeout fails it; no clock is read here.)
std::string load_from_disk(const std::string& path) {
  SourceManager sources;
  Diagnostics diags(sources);
  load_idl(path, {}, disk_reader(), sources, diags);
  return diags.render();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

}  // namespace

TEST_CASE("the disk reader reads regular files only, and a bounded amount", "[loader][hostile]") {
  TempDir dir;
  SECTION("a FIFO does not block") {
    const std::string fifo = dir.file("pipe.ops.yaml");
    REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
    CHECK(
        load_from_disk(fifo) ==
        fifo + ": error: cannot read file: is a FIFO, not a regular file\n");
    // Nor when it is included: it is found, then refused.
    write_file(dir.file("main.ops.yaml"), yaml(R"(
        namespace: m
        include: [pipe.ops.yaml]
    )"));
    CHECK(contains(
        load_from_disk(dir.file("main.ops.yaml")),
        ":2:11: error: cannot read included file `" + fifo + "`: is a FIFO, not a regular file\n"));
  }
  SECTION("a symlink to /dev/zero is not read") {
    REQUIRE(fs::exists("/dev/zero"));  // Linux, which these tests run on
    const std::string link = dir.file("zero.ops.yaml");
    fs::create_symlink("/dev/zero", link);
    CHECK(
        load_from_disk(link) ==
        link + ": error: cannot read file: is a device, not a regular file\n");
  }
  SECTION("a folder") {
    fs::create_directories(dir.file("folder.ops.yaml"));
    CHECK(
        load_from_disk(dir.file("folder.ops.yaml")) ==
        dir.file("folder.ops.yaml") + ": error: cannot read file: is a directory\n");
  }
  SECTION("a file over the size limit is read only up to it") {
    const std::string big = dir.file("big.ops.yaml");
    write_file(big, "namespace: big\ndoc: |\n" + std::string(8 << 20, 'y') + "\n");
    CHECK(contains(
        load_from_disk(big),
        big + ": error: file is too large: structop IDL files are limited to 4194304 bytes\n"));
  }
  SECTION("a symlink to a regular file is read") {
    write_file(dir.file("real.ops.yaml"), "namespace: real\n");
    fs::create_symlink(dir.file("real.ops.yaml"), dir.file("link.ops.yaml"));
    CHECK(load_from_disk(dir.file("link.ops.yaml")).empty());
  }
}
