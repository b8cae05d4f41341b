// A printer for generated code with named substitutions and indentation
// frames, so emitters read as templates rather than string concatenation:
//
//   p.emit({{"name", op.cpp_name}, {"args", args}}, R"(
//     at::Tensor $name$($args$) {
//       ...
//     }
//   )");
//
// The template is dedented (its common leading whitespace removed, a leading
// newline dropped), then indented to the current frame. `$var$` is replaced;
// `$$` is a literal `$`. A variable that is used but not given, or given but
// not used, is an emitter bug and throws std::logic_error. A multi-line value
// continues at the indentation of the line it was substituted into.
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace structop {

class CodePrinter {
 public:
  using Vars = std::initializer_list<std::pair<std::string_view, std::string>>;

  explicit CodePrinter(int indent_step = 2) : step_(indent_step) {}

  /// Emits a template with substitutions.
  void emit(Vars vars, std::string_view text);
  /// Emits a template without substitutions.
  void emit(std::string_view text) { emit({}, text); }
  /// Emits one line (indented), without substitutions.
  void line(std::string_view text = {});

  /// Indents everything printed while it lives by one step.
  class Indent {
   public:
    explicit Indent(CodePrinter& p) : p_(p) { p_.indent_ += p_.step_; }
    ~Indent() { p_.indent_ -= p_.step_; }
    Indent(const Indent&) = delete;
    Indent& operator=(const Indent&) = delete;

   private:
    CodePrinter& p_;
  };

  const std::string& str() const { return out_; }

 private:
  void append_line(std::string_view text);

  std::string out_;
  int indent_ = 0;
  int step_;
};

}  // namespace structop
