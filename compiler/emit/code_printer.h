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
//
// Layout belongs to the printer: emitters pass argument, parameter and
// braced lists as CodePrinter::list(items), and the printer lays each out
// where it lands: `f(a, b)` when the whole line fits in kColumns, else a break
// after the opener and one item per line at +4 from the line's indentation,
// the closer right after the last item (clang-format's AlwaysBreak with
// BinPackArguments/BinPackParameters off). Items may hold lists themselves;
// they are laid out the same way on their own lines.
// A long `#error "..."` line breaks after `#error \` (clang-format's layout).
#pragma once

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace structop {

class CodePrinter {
 public:
  using Vars = std::initializer_list<std::pair<std::string_view, std::string>>;

  /// Generated lines stay within this many columns where they can.
  static constexpr size_t kColumns = 100;

  /// A list the printer lays out where it lands (see above), written between
  /// its opener and closer: `"f(" + CodePrinter::list({"a", "b"}) + ")"`.
  static std::string list(const std::vector<std::string>& items);
  /// The text with every list on one line (for measuring and for tests).
  static std::string flat(std::string_view text);

  /// A printer whose text is substituted into another printer's template
  /// passes `lay_out = false`: its lists are laid out where they finally land.
  explicit CodePrinter(int indent_step = 2, bool lay_out = true)
      : step_(indent_step), lay_out_(lay_out) {}

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
  bool lay_out_;
};

}  // namespace structop
