// structopc: the command line over the compiler library (driver/compile.h).
// Exit codes: 0 success, 1 IDL errors (or an output that cannot be written,
// or out of memory), 2 usage errors, 3 internal errors (a bug: please report).
#include <csignal>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "base/quote.h"
#include "driver/compat_run.h"
#include "driver/compile.h"
#include "driver/git_reader.h"
#include "driver/json_schema.h"
#include "driver/output_writer.h"

namespace {

constexpr int kExitIdlError = 1;
constexpr int kExitUsage = 2;
constexpr int kExitInternal = 3;

int usage_error(const std::string& message) {
  fmt::print(stderr, "structopc: error: {}\nTry `structopc --help`.\n", message);
  return kExitUsage;
}

int run(int argc, char** argv);

}  // namespace

// The compiler reports problems as values; an exception escaping it is either
// memory exhaustion or a bug. Either way: a message and an exit status, never
// an abort with a half-written output.
int main(int argc, char** argv) {
  // Past a file size limit (`ulimit -f`) a write then fails with EFBIG and is
  // reported like a full disk, instead of the signal killing structopc with
  // its temporary files left behind.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    return run(argc, argv);
  } catch (const std::bad_alloc&) {
    std::fputs("structopc: error: out of memory\n", stderr);
    return kExitIdlError;
  } catch (const std::exception& e) {
    fmt::print(stderr, "structopc: internal error: {}\n", e.what());
    return kExitInternal;
  }
}

namespace {

/// What the command line asked for (CLI11 fills it in).
struct CliArgs {
  std::string input;
  std::string out_dir = ".";
  std::vector<std::string> emit_list;
  std::vector<std::string> include_dirs;
  std::string depfile;
  std::string explain;
  bool check_only = false;
  std::vector<std::string> compat_files;
  std::vector<std::string> allow;
  bool print_json_schema = false;
};

void add_options(CLI::App& app, CliArgs& args) {
  app.add_option("input", args.input, "The IDL file (NAME.ops.yaml)");
  app.add_option("-o,--out-dir", args.out_dir, "Where outputs go (default: the current folder)");
  // One value per occurrence, so `--emit json FILE` does not swallow FILE.
  app.add_option(
         "--emit",
         args.emit_list,
         "Comma list of outputs: h,cpp,stubs,py,json (default: h,cpp)")
      ->delimiter(',')
      ->allow_extra_args(false);
  app.add_option("-I", args.include_dirs, "A search folder for `include:` (repeatable)")
      ->allow_extra_args(false);
  app.add_option(
      "--depfile",
      args.depfile,
      "Write a Make-style depfile listing every IDL file read");
  app.add_flag("--check", args.check_only, "Validate only; write nothing");
  app.add_option(
         "--explain",
         args.explain,
         "Print OP's slot map (original path -> lowered name) and write nothing")
      ->type_name("OP");
  app.add_option(
         "--compat",
         args.compat_files,
         "Report every change from OLD to NEW (both IDL files; OLD may be REV:PATH, read from "
         "git) and exit 1 if one breaks callers; writes nothing")
      ->expected(2)
      ->type_name("OLD NEW");
  app.add_option("--allow", args.allow, "With --compat: accept OP's breaking changes (repeatable)")
      ->type_name("OP")
      ->allow_extra_args(false);
  app.add_flag(
      "--print-json-schema",
      args.print_json_schema,
      "Print the JSON Schema of the IDL format (for editors) and exit");
  app.set_version_flag("--version", fmt::format("structopc {}", structop::structopc_version()));
  app.footer(
      "Outputs for X.ops.yaml: X.ops.h, X.ops.cpp, X.ops.stubs.cpp (never overwritten), X_ops.py, "
      "X.ops.json.\n"
      "Exit status: 0 success, 1 errors in the IDL, 2 usage errors, 3 internal errors.\n"
      "With --compat: 0 nothing breaks, 1 something breaks (or an IDL has errors), 2 usage "
      "errors.");
}

/// --print-json-schema.
int print_json_schema(const CliArgs& args) {
  if (!args.input.empty() || !args.compat_files.empty())
    return usage_error("--print-json-schema takes no IDL file");
  fmt::print("{}", structop::idl_json_schema());
  return 0;
}

/// --compat OLD NEW: either side may be REV:PATH, read from git.
int compare_versions(const CliArgs& args) {
  using namespace structop;
  if (!args.input.empty())
    return usage_error(fmt::format("--compat OLD NEW takes no other IDL file (`{}`)", args.input));
  if (args.check_only || !args.explain.empty() || !args.emit_list.empty() || !args.depfile.empty())
    return usage_error("--compat writes nothing: it takes only -I and --allow");
  CompatOptions compat;
  compat.old_input = args.compat_files[0];
  compat.new_input = args.compat_files[1];
  compat.include_dirs = args.include_dirs;
  compat.allow = args.allow;
  std::optional<GitRevisionReader> old_git, new_git;
  for (auto [input, git] :
       {std::pair{&compat.old_input, &old_git}, {&compat.new_input, &new_git}}) {
    auto rev = split_revision_path(*input);
    if (!rev) continue;
    // Refused before git runs: a revision never reaches it as an option.
    if (auto why = invalid_revision(rev->first)) {
      fmt::print(
          stderr,
          "structopc: error: --compat: `{}` in `{}` is not a git revision: {}\n",
          terminal_text(rev->first),
          terminal_text(*input),
          *why);
      return kExitIdlError;
    }
    git->emplace(rev->first);
    *input = rev->second;
  }
  CompatResult result = run_compat(
      compat,
      old_git ? static_cast<FileReader&>(*old_git) : disk_reader(),
      new_git ? static_cast<FileReader&>(*new_git) : disk_reader());
  if (result.usage_error) return usage_error(*result.usage_error);
  fmt::print(stderr, "{}", result.report);
  return result.status;
}

/// Sets the outputs --emit names, each once, in the order given; false (with
/// the usage error printed and its exit status in `status`) on an unknown name.
bool parse_emit_list(const CliArgs& args, structop::CompileOptions& options, int& status) {
  if (args.emit_list.empty()) return true;
  options.emit.clear();
  for (const auto& name : args.emit_list) {
    auto kind = structop::parse_output_kind(name);
    if (!kind) {
      status = usage_error(
          fmt::format("unknown output `{}` in --emit; valid: h, cpp, stubs, py, json", name));
      return false;
    }
    if (std::find(options.emit.begin(), options.emit.end(), *kind) == options.emit.end()) {
      options.emit.push_back(*kind);
    }
  }
  return true;
}

/// Reports each output that failed, then what those failures kept from being
/// written (the outputs and the depfile are written together: all or none).
int report_writes(const std::vector<structop::WriteReport>& reports, bool with_depfile) {
  using structop::WriteStatus;
  int status = 0;
  auto label = [&](size_t i) { return with_depfile && i + 1 == reports.size() ? "depfile " : ""; };
  for (size_t i = 0; i < reports.size(); ++i) {
    if (reports[i].status != WriteStatus::Failed) continue;
    fmt::print(
        stderr,
        "structopc: error: cannot write {}{}: {}\n",
        label(i),
        reports[i].path,
        reports[i].error);
    status = kExitIdlError;
  }
  for (size_t i = 0; i < reports.size(); ++i) {
    if (reports[i].status == WriteStatus::NotWritten) {
      fmt::print(
          stderr,
          "structopc: note: {}{} not updated, as another output could not be written\n",
          label(i),
          reports[i].path);
    } else if (reports[i].status == WriteStatus::KeptExisting) {
      fmt::print(
          stderr,
          "structopc: note: {} exists and is yours; not overwritten\n",
          reports[i].path);
    }
  }
  return status;
}

/// Compiles the IDL: --check, --explain OP, or writing the outputs.
int compile_idl(const CliArgs& args) {
  using namespace structop;
  CompileOptions options;
  options.input = args.input;
  options.include_dirs = args.include_dirs;
  if (int status = 0; !parse_emit_list(args, options, status)) return status;
  bool write = !args.check_only && args.explain.empty();
  if (!args.explain.empty()) options.explain_op = args.explain;
  if (!write) options.emit.clear();

  CompileResult result = compile(options, disk_reader());
  if (!result.diagnostics.empty()) fmt::print(stderr, "{}", result.diagnostics);
  if (!result.ok) return kExitIdlError;
  if (result.unknown_explain_op) {
    return usage_error(fmt::format(
        "--explain: no op `{}` in {}; {}",
        args.explain,
        args.input,
        *result.unknown_explain_op));
  }
  if (!args.explain.empty()) {
    fmt::print("{}", terminal_text(result.explanation, /*line_breaks=*/true));
    return 0;
  }
  if (!write) return 0;

  std::optional<DepfileRequest> dep;
  if (!args.depfile.empty()) dep = DepfileRequest{args.depfile, result.inputs};
  return report_writes(
      write_outputs(result.outputs, args.out_dir, dep, result.inputs),
      dep.has_value());
}

int run(int argc, char** argv) {
  CLI::App app{
      "structopc: compiles a structop IDL (*.ops.yaml) into a PyTorch custom-op extension.",
      "structopc"};
  CliArgs args;
  add_options(app, args);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int code = app.exit(e);
    return code == 0 ? 0 : kExitUsage;
  }

  if (args.print_json_schema) return print_json_schema(args);
  if (!args.compat_files.empty()) return compare_versions(args);
  if (!args.allow.empty()) return usage_error("--allow goes with --compat OLD NEW");
  if (args.input.empty()) return usage_error("no IDL file given");
  return compile_idl(args);
}

}  // namespace
