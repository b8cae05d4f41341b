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
// Layout belongs to the printer: values are Code, text with lists inside
// (Code::list(items), written between its opener and closer:
// `"f(" + Code::list({"a", "b"}) + ")"`), and the printer lays each list out
// where it lands, by the rules of the language it prints:
// - C++ (clang-format's AlwaysBreak with BinPackArguments/BinPackParameters
//   off): `f(a, b)` when the whole line fits in kColumns, else a break after
//   the opener and one item per line at +4 from the line's indentation, the
//   closer right after the last item. A long `#error "..."` line breaks after
//   `#error \`.
// - Python (ruff format's): the last list of a line that does not fit breaks
//   after its opener; its items go on one line at +4 where they fit there
//   (not for a display: a tuple, list, dict or set), else one per line with
//   a trailing comma; the closer starts the next line.
// Items may hold lists themselves; they are laid out the same way on their
// own lines.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace structop {

/// How a Python list breaks when its line does not fit (ruff format's rules;
/// C++ lists all break one way and ignore it).
enum class ListKind {
  /// Call arguments, a subscript: the items on one line at +4 if they fit,
  /// else one per line with a trailing comma (a single item is laid out
  /// on its own line, without one).
  Call,
  /// A def's parameters: as Call, but a single parameter gets a trailing
  /// comma too.
  Params,
  /// A list, dict or set display: one item per line with a trailing comma
  /// once broken (a single item as a Call's).
  Display,
  /// A tuple display: as Display; one item is `a,`.
  Tuple,
  /// Clauses joined by spaces (a comprehension `x for x in y`, a
  /// conditional expression `a if c else b`): on one line at +4 if they fit,
  /// else one per line.
  Clauses,
  /// Items that get parentheses only where they break: one expression moves
  /// into them on its own line where it then fits (ruff's right-hand side of
  /// an assignment), several (an import's names) go one per line with a
  /// trailing comma. Flat without them.
  Parenthesized,
};

/// Generated code: text with lists the printer lays out where they land.
/// Built from strings and lists with `+`; `flat()` is the text with every
/// list on one line.
class Code {
 public:
  struct List;
  /// A run of text, or one list.
  struct Piece {
    std::string text;
    std::shared_ptr<const List> list;  // null for text
  };

  Code() = default;
  Code(std::string text);                                   // NOLINT: text is code
  Code(std::string_view text) : Code(std::string(text)) {}  // NOLINT
  Code(const char* text) : Code(std::string(text)) {}       // NOLINT

  /// A list (see ListKind), written between its opener and closer.
  static Code list(std::vector<Code> items, ListKind kind = ListKind::Call);

  Code& operator+=(const Code& other);
  /// Appends one piece (text, or a list as it is).
  Code& operator+=(const Piece& piece);
  friend Code operator+(Code a, const Code& b) { return a += b; }

  /// The text with every list on one line (items joined by `, `).
  std::string flat() const;
  bool empty() const { return pieces_.empty(); }
  /// Whether the code holds a list.
  bool has_list() const;
  const std::vector<Piece>& pieces() const { return pieces_; }

  /// The code split at the line breaks of its text (lists hold none).
  std::vector<Code> lines() const;

 private:
  void append_text(std::string_view text);
  std::vector<Piece> pieces_;
};

/// A list's items and how it breaks.
struct Code::List {
  ListKind kind;
  std::vector<Code> items;
};

class CodePrinter {
 public:
  using Vars = std::initializer_list<std::pair<std::string_view, Code>>;

  /// The layout rules a printer follows (see above).
  enum class Language { Cpp, Python };

  /// Generated lines stay within this many columns where they can.
  static constexpr size_t kColumns = 100;

  /// Code::list, by its older name.
  static Code list(std::vector<Code> items, ListKind kind = ListKind::Call) {
    return Code::list(std::move(items), kind);
  }

  /// A printer whose code is substituted into another printer's template
  /// passes `lay_out = false` and takes code(): its lists are laid out where
  /// they finally land.
  explicit CodePrinter(int indent_step = 2, bool lay_out = true, Language language = Language::Cpp)
      : step_(indent_step), lay_out_(lay_out), language_(language) {}

  /// Emits a template with substitutions.
  void emit(Vars vars, std::string_view text);
  /// Emits a template without substitutions.
  void emit(std::string_view text) { emit({}, text); }
  /// Emits one line (indented), without substitutions.
  void line(const Code& text = {});

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

  /// The laid-out text (a printer that lays out).
  const std::string& str() const { return out_; }
  /// The printed code with its lists, each line ending in a line break (a
  /// printer that does not lay out).
  const Code& code() const { return code_; }

 private:
  void append_line(const Code& text);

  std::string out_;
  Code code_;
  int indent_ = 0;
  int step_;
  bool lay_out_;
  Language language_;
};

}  // namespace structop
