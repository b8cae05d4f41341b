// The front end's instruction count against yaml-cpp's, for the CI guard
// (check_frontend.py runs this under `valgrind --tool=callgrind`). Wraps the
// `func:` lines of PyTorch's native_functions.yaml as one IDL (as
// tests/corpus and the front-end benchmark do), then runs, once each after a
// warm-up run of both:
//   1. YAML::Load of the IDL's text (the floor: structopc reads through
//      yaml-cpp), and
//   2. structop::compile of it with no output: load + check + lower, what
//      `structopc --check` does,
// each between callgrind's client requests that zero the counters and dump
// them under the step's name. Outside valgrind the requests do nothing.
//
// Usage: frontend_instructions NATIVE_FUNCTIONS_YAML [EVERY]
//   EVERY: keep every EVERY-th func line only (default 1: all of them).
#include <malloc.h>
#include <valgrind/callgrind.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <yaml-cpp/yaml.h>

#include "driver/compile.h"

namespace {

std::string wrap_native_functions(const std::string& path, int every, int* ops) {
  std::ifstream in(path);
  std::string line, out = "namespace: aten_corpus\nops:\n";
  const std::string prefix = "- func: ";
  int seen = 0;
  *ops = 0;
  while (std::getline(in, line)) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    if (seen++ % every != 0) continue;
    std::string quoted;
    for (char c : line.substr(prefix.size()))
      quoted += c == '\'' ? std::string("''") : std::string(1, c);
    out += "  - func: '" + quoted + "'\n    meta: custom\n";
    ++*ops;
  }
  return out;
}

/// Serves the one in-memory file to the compiler.
struct MemoryReader : structop::FileReader {
  std::map<std::string, std::string> files;
  std::optional<std::string> read(const std::string& path, std::string* error) override {
    auto it = files.find(path);
    if (it == files.end()) {
      *error = "not found";
      return std::nullopt;
    }
    return it->second;
  }
  std::string identity(const std::string& path) override { return path; }
  bool exists(const std::string& path) override { return files.count(path) > 0; }
};

size_t yaml_load(const std::string& idl) {
  YAML::Node doc = YAML::Load(idl);
  return doc["ops"].size();
}

bool front_end(MemoryReader& reader) {
  structop::CompileOptions options;
  options.input = "aten_corpus.ops.yaml";
  options.emit.clear();  // load + check + lower, as --check
  structop::CompileResult r = structop::compile(options, reader);
  if (!r.ok) std::fprintf(stderr, "%s", r.diagnostics.c_str());
  return r.ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::fprintf(stderr, "usage: %s NATIVE_FUNCTIONS_YAML [EVERY]\n", argv[0]);
    return 2;
  }
  const int every = argc == 3 ? std::atoi(argv[2]) : 1;
  if (every < 1) {
    std::fprintf(stderr, "EVERY must be a positive number\n");
    return 2;
  }
  int ops = 0;
  const std::string idl = wrap_native_functions(argv[1], every, &ops);
  if (ops == 0) {
    std::fprintf(stderr, "%s: no `- func:` line\n", argv[1]);
    return 1;
  }
  MemoryReader reader;
  reader.files["aten_corpus.ops.yaml"] = idl;
  // Warm-up: first-use costs (static word lists, allocator growth) are left
  // out of both counts.
  if (yaml_load(idl) != static_cast<size_t>(ops) || !front_end(reader)) return 1;

  // Each step starts from a consolidated heap: otherwise its first large
  // allocation (the front end's copy of the file) consolidates the small
  // chunks the previous step freed, 0.3 M or 5 M instructions depending on
  // where they happened to lie.
  malloc_trim(0);
  CALLGRIND_ZERO_STATS;
  const size_t loaded = yaml_load(idl);
  CALLGRIND_DUMP_STATS_AT("yaml-cpp load");
  malloc_trim(0);
  CALLGRIND_ZERO_STATS;
  const bool ok = front_end(reader);
  CALLGRIND_DUMP_STATS_AT("structopc front end");
  std::printf(
      "%d ops, %zu bytes; yaml-cpp loaded %zu ops; front end %s\n",
      ops,
      idl.size(),
      loaded,
      ok ? "ok" : "failed");
  return ok && loaded == static_cast<size_t>(ops) ? 0 : 1;
}
