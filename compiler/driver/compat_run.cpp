#include "driver/compat_run.h"

#include <algorithm>
#include <optional>

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

/// The usage error for an --allow that names an op of neither version, or
/// nullopt when each names one.
std::optional<std::string> unknown_allowed_op(
    const CompatOptions& options,
    const lower::LoweredModule& old_ops,
    const lower::LoweredModule& new_ops) {
  for (const auto& name : options.allow) {
    if (names_op(old_ops, name) || names_op(new_ops, name)) continue;
    std::vector<std::string> ops;
    for (const auto& l : old_ops.ops) ops.push_back(l.qualified_name);
    for (const auto& l : new_ops.ops) ops.push_back(l.qualified_name);
    std::sort(ops.begin(), ops.end());
    ops.erase(std::unique(ops.begin(), ops.end()), ops.end());
    const std::string guess = closest_match(name, ops);
    return fmt::format(
        "--allow: no op `{}` in {} or {}{}",
        name,
        options.old_input,
        options.new_input,
        guess.empty() ? "" : fmt::format("; did you mean `{}`?", guess));
  }
  return std::nullopt;
}

/// Whether --allow accepts op `op` (`name.overload`, or `name_overload`).
bool allowed(const CompatOptions& options, const std::string& op) {
  return std::any_of(options.allow.begin(), options.allow.end(), [&](const std::string& a) {
    if (a == op) return true;
    // `name_overload` for `name.overload`.
    std::string cpp = op;
    std::replace(cpp.begin(), cpp.end(), '.', '_');
    return a == cpp;
  });
}

/// The changes by class, as the report's summary counts them.
struct ChangeCounts {
  size_t flat = 0, api = 0, accepted = 0, compatible = 0;
};

/// Change `c` as a diagnostic: a note when compatible, a warning when
/// --allow accepts it, else an error; counted in `counts`.
Diagnostic change_diagnostic(
    const compat::Change& c,
    const CompatOptions& options,
    ChangeCounts& counts) {
  Diagnostic d;
  d.span = c.span;
  d.hint = c.hint;
  if (c.cls == compat::ChangeClass::Compatible) {
    ++counts.compatible;
    d.severity = Severity::Note;
    d.message = fmt::format("{} [{}]", c.message, compat::class_label(c.cls));
  } else if (!c.op.empty() && allowed(options, c.op)) {
    ++counts.accepted;
    d.severity = Severity::Warning;
    d.message =
        fmt::format("{} [{}; allowed by --allow {}]", c.message, compat::class_label(c.cls), c.op);
  } else {
    ++(c.cls == compat::ChangeClass::BreaksFlat ? counts.flat : counts.api);
    d.severity = Severity::Error;
    d.message = fmt::format("{} [{}]", c.message, compat::class_label(c.cls));
  }
  return d;
}

/// The report's last line: how many changes break what, and how many are allowed.
std::string summary_line(const ChangeCounts& n) {
  std::string breaking = plural(n.flat + n.api, "breaking change");
  if (n.flat + n.api > 0)
    breaking += fmt::format(" ({} flat schema, {} record API)", n.flat, n.api);
  return fmt::format(
      "structopc: --compat: {}, {}{}\n",
      breaking,
      plural(n.compatible, "compatible change"),
      n.accepted ? fmt::format(", {} allowed by --allow", plural(n.accepted, "breaking change"))
                 : "");
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
  result.usage_error = unknown_allowed_op(options, old_version.lowered, new_version.lowered);
  if (result.usage_error) return result;
  const std::vector<compat::Change> changes = compat::compare(
      {old_version.module, old_version.lowered},
      {new_version.module, new_version.lowered});
  Diagnostics report(sources);
  ChangeCounts counts;
  for (const auto& c : changes) report.add(change_diagnostic(c, options, counts));
  result.report = report.render_in_order();
  if (!changes.empty()) result.report += summary_line(counts);
  result.status = counts.flat + counts.api > 0 ? 1 : 0;
  return result;
}

}  // namespace structop
