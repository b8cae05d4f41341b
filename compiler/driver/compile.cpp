#include "driver/compile.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "check/limits.h"
#include "check/resolver.h"
#include "emit/emitters.h"
#include "lower/lowering.h"
#include "version.h"

namespace structop {

const char* structopc_version() {
  return STRUCTOPC_VERSION;
}

std::string output_name(OutputKind kind, const std::string& stem) {
  switch (kind) {
    case OutputKind::Header:
      return stem + ".ops.h";
    case OutputKind::Source:
      return stem + ".ops.cpp";
    case OutputKind::Stubs:
      return stem + ".ops.stubs.cpp";
    case OutputKind::Python:
      return stem + "_ops.py";
    case OutputKind::Json:
      return stem + ".ops.json";
  }
  return stem;
}

std::optional<OutputKind> parse_output_kind(const std::string& name) {
  if (name == "h") return OutputKind::Header;
  if (name == "cpp") return OutputKind::Source;
  if (name == "stubs") return OutputKind::Stubs;
  if (name == "py") return OutputKind::Python;
  if (name == "json") return OutputKind::Json;
  return std::nullopt;
}

namespace {

std::string emit_one(OutputKind kind, const EmitInput& in) {
  switch (kind) {
    case OutputKind::Json:
      return emit_json(in);
    case OutputKind::Header:
      return emit_header(in);
    case OutputKind::Source:
      return emit_source(in);
    case OutputKind::Stubs:
      return emit_stubs(in);
    case OutputKind::Python:
      return emit_python(in);
  }
  return {};
}

}  // namespace

Analysis analyze(
    const std::string& input,
    const std::vector<std::string>& include_dirs,
    FileReader& reader,
    SourceManager& sources,
    Diagnostics& diags,
    const LowerOptions& lowering) {
  Analysis out;
  {
    LoadedIdl idl = load_idl(input, include_dirs, reader, sources, diags);
    // Size limits come before the work they bound (check/limits.h).
    if (check_identifier_lengths(idl, diags)) out.module = resolve(idl, sources, diags);
    out.inputs = std::move(idl.paths);
  }  // The model copies what it needs: freeing the syntax here lets lowering reuse its memory.
  if (!diags.has_errors()) check_flattened_size(out.module, diags);
  if (!diags.has_errors()) out.lowered = lower_module(out.module, diags, lowering);
  return out;
}

CompileResult compile(const CompileOptions& options, FileReader& reader) {
  CompileResult result;
  SourceManager sources;
  Diagnostics diags(sources);

  LowerOptions lowering;
  lowering.record_layouts = std::any_of(options.emit.begin(), options.emit.end(), [](OutputKind k) {
    return k != OutputKind::Json;
  });
  lowering.api_facts = !options.emit.empty() || options.explain_op.has_value();
  lowering.keep_ops = lowering.api_facts;  // --check: lowering's diagnostics alone
  Analysis analysis =
      analyze(options.input, options.include_dirs, reader, sources, diags, lowering);
  const model::Module& module = analysis.module;
  const lower::LoweredModule& lowered = analysis.lowered;
  result.inputs = std::move(analysis.inputs);
  result.diagnostics = diags.render();
  if (diags.has_errors()) return result;

  EmitInput in{
      module,
      lowered,
      std::filesystem::path(options.input).filename().string(),
      STRUCTOPC_VERSION};
  if (options.explain_op) {
    for (const auto& lo : lowered.ops) {
      if (lo.qualified_name == *options.explain_op || lo.cpp_name == *options.explain_op) {
        result.explanation = explain_op(in, lo);
      }
    }
    if (result.explanation.empty()) {
      std::vector<std::string> names;
      for (const auto& lo : lowered.ops) names.push_back(lo.qualified_name);
      result.unknown_explain_op = names.empty() ? std::string("the file declares no ops")
                                                : "ops in this file: " + quoted_list(names);
    }
  }
  size_t total = 0;
  for (OutputKind kind : options.emit) {
    OutputFile f{
        kind,
        output_name(kind, module.stem),
        emit_one(kind, in),
        kind == OutputKind::Stubs};
    total += f.content.size();
    if (total > options.max_output_bytes) {
      // The flattened size keeps real and hostile files far below this;
      // should one get here anyway, it gets a diagnostic, not a huge file.
      diags.error(
          Span{0, 0, 0, 1},  // the main file, first read
          fmt::format(
              "the generated code would be more than {} bytes (at `{}`)",
              options.max_output_bytes,
              f.name),
          "split the ops into several IDL files");
      result.diagnostics = diags.render();
      result.outputs.clear();
      return result;
    }
    result.outputs.push_back(std::move(f));
  }
  result.ok = true;
  return result;
}

}  // namespace structop
