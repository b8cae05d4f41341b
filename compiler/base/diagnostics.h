// The diagnostics sink. Phases report errors as values here and keep going, so
// one run reports every problem of a file; the driver prints them GCC-style:
//
//   demo.ops.yaml:7:14: error: unknown type `flaot`
//       7 |       scale: flaot = 1.0
//         |              ^~~~~
//   hint: did you mean `float`?
#pragma once

#include <string>
#include <vector>

#include "base/source.h"

namespace structop {

enum class Severity { Error, Warning, Note };

/// One problem: where, what, and (optionally) how to fix it.
struct Diagnostic {
  Severity severity = Severity::Error;
  Span span;
  std::string message;
  std::string hint;
};

/// Collects diagnostics for one compilation.
class Diagnostics {
 public:
  /// At most this many errors are kept (hostile input can produce millions);
  /// later ones are only counted, and render() says how many were left out.
  static constexpr size_t kMaxKeptErrors = 100;

  explicit Diagnostics(const SourceManager& sources) : sources_(sources) {}

  void error(Span span, std::string message, std::string hint = {});
  /// Adds a note attached to the previous error (e.g. "first defined here").
  void note(Span span, std::string message);
  /// Adds a diagnostic as it is (a warning, or a note that stands alone);
  /// an error counts as one. For reports rendered with render_in_order().
  void add(Diagnostic d);

  bool has_errors() const { return error_count_ > 0; }
  size_t error_count() const { return error_count_; }
  const std::vector<Diagnostic>& items() const { return items_; }

  /// All diagnostics, ordered by file and position (notes stay after their
  /// error), formatted with source lines and carets.
  std::string render() const;
  /// All diagnostics in the order they were added, formatted like render()
  /// (for reports whose order is their own, such as `--compat`'s, op by op).
  std::string render_in_order() const;
  /// One diagnostic without the source excerpt: "file:line:col: error: msg".
  std::string headline(const Diagnostic& d) const;

 private:
  std::string render_one(const Diagnostic& d) const;

  const SourceManager& sources_;
  std::vector<Diagnostic> items_;
  size_t error_count_ = 0;
  bool dropping_ = false;  // the last error was over the limit: drop its notes too
};

/// The candidate closest to `name` by edit distance, if it is close enough to
/// be a plausible typo; otherwise "".
std::string closest_match(const std::string& name, const std::vector<std::string>& candidates);

/// "`a`, `b` and `c`" — for messages that list the valid choices.
std::string quoted_list(const std::vector<std::string>& names);

}  // namespace structop
