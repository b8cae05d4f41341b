#include "driver/compat_run.h"

#include <algorithm>

#include <fmt/format.h>

#include "compat/compat.h"
#include "driver/compile.h"

namespace structop {

namespace {

/// The comparison reads the lowered schemas and API facts, not the record
/// layouts.
const LowerOptions kLowering{/*record_layouts=*/false, /*api_facts=*/true};

bool names_op(const lower::LoweredModule& lowered, const std::string& name) {
  return std::any_of(lowered.ops.begin(), lowered.ops.end(), [&](const lower::LoweredOp& l) {
    return l.qualified_name == name || l.cpp_name == name;
  });
}

std::string plural(size_t n, const char* noun) {
  return fmt::format("{} {}{}", n, noun, n == 1 ? "" : "s");
}

}  // namespace

CompatResult run_compat(
    const CompatOptions& options,
    FileReader& old_reader,
    FileReader& new_reader) {
  CompatResult result;
  // One source manager for both files: a change points into either.
  SourceManager sources;
  Diagnostics errors(sources);
  Analysis old_version =
      analyze(options.old_input, options.include_dirs, old_reader, sources, errors, kLowering);
  Analysis new_version =
      analyze(options.new_input, options.include_dirs, new_reader, sources, errors, kLowering);
  if (errors.has_errors()) {
    result.status = 1;
    result.report = errors.render();
    return result;
  }
  for (const auto& name : options.allow) {
    if (!names_op(old_version.lowered, name) && !names_op(new_version.lowered, name)) {
      std::vector<std::string> ops;
      for (const auto& l : old_version.lowered.ops) ops.push_back(l.qualified_name);
      for (const auto& l : new_version.lowered.ops) ops.push_back(l.qualified_name);
      std::sort(ops.begin(), ops.end());
      ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
      const std::string guess = closest_match(name, ops);
      result.usage_error = fmt::format(
          "--allow: no op `{}` in {} or {}{}",
          name,
          options.old_input,
          options.new_input,
          guess.empty() ? "" : fmt::format("; did you mean `{}`?", guess));
      return result;
    }
  }
  auto allowed = [&](const std::string& op) {
    return std::any_of(options.allow.begin(), options.allow.end(), [&](const std::string& a) {
      if (a == op) return true;
      // `name_overload` for `name.overload`.
      std::string cpp = op;
      std::replace(cpp.begin(), cpp.end(), '.', '_');
      return a == cpp;
    });
  };
  const std::vector<compat::Change> changes = compat::compare(
      {old_version.module, old_version.lowered},
      {new_version.module, new_version.lowered});
  Diagnostics report(sources);
  size_t flat = 0, api = 0, accepted = 0, compatible = 0;
  for (const auto& c : changes) {
    Diagnostic d;
    d.span = c.span;
    d.hint = c.hint;
    if (c.cls == compat::ChangeClass::Compatible) {
      ++compatible;
      d.severity = Severity::Note;
      d.message = fmt::format("{} [{}]", c.message, compat::class_label(c.cls));
    } else if (!c.op.empty() && allowed(c.op)) {
      ++accepted;
      d.severity = Severity::Warning;
      d.message = fmt::format(
          "{} [{}; allowed by --allow {}]",
          c.message,
          compat::class_label(c.cls),
          c.op);
    } else {
      ++(c.cls == compat::ChangeClass::BreaksFlat ? flat : api);
      d.severity = Severity::Error;
      d.message = fmt::format("{} [{}]", c.message, compat::class_label(c.cls));
    }
    report.add(std::move(d));
  }
  result.report = report.render_in_order();
  if (!changes.empty()) {
    std::string breaking = plural(flat + api, "breaking change");
    if (flat + api > 0) breaking += fmt::format(" ({} flat schema, {} record API)", flat, api);
    result.report += fmt::format(
        "structopc: --compat: {}, {}{}\n",
        breaking,
        plural(compatible, "compatible change"),
        accepted ? fmt::format(", {} allowed by --allow", plural(accepted, "breaking change"))
                 : "");
  }
  result.status = flat + api > 0 ? 1 : 0;
  return result;
}

}  // namespace structop
