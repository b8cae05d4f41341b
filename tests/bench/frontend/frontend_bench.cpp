// Front-end benchmark (not a test): structopc's load + check + lower over all
// 2,493 func lines of PyTorch's native_functions.yaml, against a bare
// yaml-cpp load of the same bytes, in the same run; and the wall time of a
// `structopc --check` process on a small IDL against spawning /bin/true.
//
// Usage: frontend_bench NATIVE_FUNCTIONS_YAML STRUCTOPC SMALL_IDL [benchmark flags]
#include <spawn.h>
#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include <benchmark/benchmark.h>
#include <yaml-cpp/yaml.h>

#include "driver/compile.h"

extern char** environ;

namespace {

std::string g_idl;  // the corpus wrapped as one IDL file
std::string g_structopc;
std::string g_small_idl;

/// Wraps every `- func:` line as an op of one IDL (as tests/corpus does).
std::string wrap_native_functions(const std::string& path) {
  std::ifstream in(path);
  std::string line, out = "namespace: aten_corpus\nops:\n";
  const std::string prefix = "- func: ";
  while (std::getline(in, line)) {
    if (line.compare(0, prefix.size(), prefix) != 0) continue;
    std::string func = line.substr(prefix.size()), quoted;
    for (char c : func) quoted += c == '\'' ? std::string("''") : std::string(1, c);
    out += "  - func: '" + quoted + "'\n    meta: custom\n";
  }
  return out;
}

/// Serves one in-memory file to the compiler.
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

void BM_YamlCppLoad(benchmark::State& state) {
  for (auto _ : state) {
    YAML::Node doc = YAML::Load(g_idl);
    benchmark::DoNotOptimize(doc);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_idl.size()));
}

void BM_StructopcFrontEnd(benchmark::State& state) {
  MemoryReader reader;
  reader.files["aten_corpus.ops.yaml"] = g_idl;
  structop::CompileOptions options;
  options.input = "aten_corpus.ops.yaml";
  options.emit.clear();  // load + check + lower; no emitter
  for (auto _ : state) {
    structop::CompileResult r = structop::compile(options, reader);
    if (!r.ok) state.SkipWithError("the corpus did not compile");
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * g_idl.size()));
}

void spawn_and_wait(benchmark::State& state, std::vector<std::string> argv_strings) {
  std::vector<char*> argv;
  for (auto& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  for (auto _ : state) {
    pid_t pid;
    if (posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), environ) != 0) {
      state.SkipWithError("spawn failed");
      return;
    }
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) state.SkipWithError("process failed");
  }
}

void BM_ProcessTrue(benchmark::State& state) {
  spawn_and_wait(state, {"/bin/true"});
}
void BM_ProcessStructopcCheck(benchmark::State& state) {
  spawn_and_wait(state, {g_structopc, "--check", g_small_idl});
}

}  // namespace

BENCHMARK(BM_YamlCppLoad)->Unit(benchmark::kMillisecond)->Repetitions(10);
BENCHMARK(BM_StructopcFrontEnd)->Unit(benchmark::kMillisecond)->Repetitions(10);
BENCHMARK(BM_ProcessTrue)->Unit(benchmark::kMicrosecond)->Repetitions(10);
BENCHMARK(BM_ProcessStructopcCheck)->Unit(benchmark::kMicrosecond)->Repetitions(10);

int main(int argc, char** argv) {
  if (argc < 4) {
    std::fprintf(
        stderr,
        "usage: %s NATIVE_FUNCTIONS_YAML STRUCTOPC SMALL_IDL [benchmark flags]\n",
        argv[0]);
    return 2;
  }
  g_idl = wrap_native_functions(argv[1]);
  g_structopc = argv[2];
  g_small_idl = argv[3];
  int bench_argc = argc - 3;
  argv[3] = argv[0];
  benchmark::Initialize(&bench_argc, argv + 3);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
