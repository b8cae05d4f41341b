#include "emit/code_printer.h"

#include <algorithm>
#include <map>
#include <stdexcept>

namespace structop {
namespace {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return lines;
}

bool blank(std::string_view line) {
  return line.find_first_not_of(" \t") == std::string_view::npos;
}

std::string spaces(size_t n) {
  return std::string(n, ' ');
}

/// The pieces [from, to) of `code` as code.
Code slice(const Code& code, size_t from, size_t to) {
  Code out;
  for (size_t i = from; i < to; ++i) {
    out += code.pieces()[i];
  }
  return out;
}

/// The flat items of a list, as one line.
std::string flat_items(const Code::List& list) {
  std::string out;
  const char* sep = list.kind == ListKind::Clauses ? " " : ", ";
  for (size_t i = 0; i < list.items.size(); ++i) {
    if (i) out += sep;
    out += list.items[i].flat();
  }
  if (list.kind == ListKind::Tuple && list.items.size() == 1) out += ",";
  return out;
}

// ---- C++ -------------------------------------------------------------------

void lay_out_cpp(const Code& line, size_t indent, std::string& out);

/// Lays out a bare braced list: its first item after `head_text` (spaces
/// then `{`), the others each on a line of their own, aligned with the first.
void lay_out_braced(
    const std::string& head_text,
    const std::vector<Code>& items,
    const Code& tail,
    size_t indent,
    std::string& out) {
  for (size_t i = 0; i < items.size(); ++i) {
    const Code prefix(i == 0 ? head_text : spaces(indent + 1));
    lay_out_cpp(prefix + items[i] + (i + 1 < items.size() ? Code(",") : tail), indent + 1, out);
  }
}

/// Lays out one C++ line (already indented by `indent` spaces) into `out`.
void lay_out_cpp(const Code& line, size_t indent, std::string& out) {
  const std::string flat = line.flat();
  const auto& pieces = line.pieces();
  size_t open = 0;
  while (open < pieces.size() && !pieces[open].list) ++open;
  // A long `#error "message"` continues on the next line at +4, as
  // clang-format breaks it (the message itself is never split).
  if (flat.size() > CodePrinter::kColumns && flat.compare(indent, 8, "#error \"") == 0) {
    out += spaces(indent) + "#error \\\n";
    out += spaces(indent + 4) + flat.substr(indent + 7);
    out += '\n';
    return;
  }
  if (open == pieces.size() || flat.size() <= CodePrinter::kColumns) {
    out += flat;
    out += '\n';
    return;
  }
  // Break the first list: opener on this line, one item per line at +4.
  const Code::List& list = *pieces[open].list;
  const Code head = slice(line, 0, open);
  const Code tail = slice(line, open + 1, pieces.size());
  const std::string head_text = head.flat();
  // The right-hand side of an assignment (or initialization) that fits on
  // the next line at +4 moves there whole, as clang-format does, rather than
  // one item per line.
  const size_t assign = head_text.rfind(" = ");
  if (assign != std::string::npos) {
    const std::string next = spaces(indent + 4) + head_text.substr(assign + 3) +
                             slice(line, open, pieces.size()).flat();
    if (next.size() <= CodePrinter::kColumns) {
      out += head_text.substr(0, assign + 2);
      out += '\n';
      out += next;
      out += '\n';
      return;
    }
  }
  const std::vector<Code>& items = list.items;
  if (items.empty() || (items.size() == 1 && items[0].empty())) {
    lay_out_cpp(head + tail, indent, out);
    return;
  }
  // A bare braced list (`{a, b}` as an argument or an item, not `T{...}`)
  // keeps its first item after the brace and aligns the others with it, as
  // clang-format lays out a C++11 braced list.
  if (head_text.find_first_not_of(' ') + 1 == head_text.size() && head_text.back() == '{') {
    lay_out_braced(head_text, items, tail, indent, out);
    return;
  }
  // A single item that would not fit on a line of its own either stays after
  // the opener, and a list inside it breaks instead (`held{f(` then f's
  // arguments), as clang-format does; unless the line up to that list would
  // not fit either.
  if (items.size() == 1 && items[0].has_list() &&
      indent + 4 + items[0].flat().size() + tail.flat().size() > CodePrinter::kColumns) {
    size_t before_list = 0;
    for (const auto& piece : items[0].pieces()) {
      if (piece.list) break;
      before_list += piece.text.size();
    }
    if (head_text.size() + before_list <= CodePrinter::kColumns) {
      lay_out_cpp(head + items[0] + tail, indent, out);
      return;
    }
  }
  out += head_text;
  out += '\n';
  // Inside a `//` comment the continuation lines stay comments.
  std::string pad = spaces(indent + 4);
  if (flat.compare(indent, 2, "//") == 0) {
    const size_t text = flat.find_first_not_of(' ', indent + 2);
    pad = spaces(indent) + "//" + spaces((text == std::string::npos ? 1 : text - indent - 2) + 4);
  }
  const bool comment = pad.find_first_not_of(' ') != std::string::npos;
  for (size_t i = 0; i < items.size(); ++i) {
    const Code item = Code(pad) + items[i] + (i + 1 < items.size() ? Code(",") : tail);
    lay_out_cpp(item, comment ? indent : pad.size(), out);
  }
}

// ---- Python ----------------------------------------------------------------

void lay_out_python(const Code& line, size_t indent, std::string& out);

/// Lays out `items` of `list` one per line at `indent` (a trailing comma
/// after each where `commas`).
void python_items(const Code::List& list, size_t indent, bool commas, std::string& out) {
  for (const Code& item : list.items) {
    // A clause whose own clauses follow a keyword (`if a or b`) and that does
    // not fit breaks before each of them, at its own indentation, as ruff
    // breaks a boolean operation inside a conditional expression.
    const auto& pieces = item.pieces();
    if (list.kind == ListKind::Clauses && pieces.size() == 2 && !pieces[0].list && pieces[1].list &&
        pieces[1].list->kind == ListKind::Clauses &&
        indent + item.flat().size() > CodePrinter::kColumns) {
      Code keyword = pieces[0].text;
      for (const Code& clause : pieces[1].list->items) {
        lay_out_python(Code(spaces(indent)) + keyword + clause, indent, out);
        keyword = Code();
      }
      continue;
    }
    lay_out_python(Code(spaces(indent)) + item + (commas ? "," : ""), indent, out);
  }
}

/// Lays out one Python line (already indented by `indent` spaces) into `out`.
void lay_out_python(const Code& line, size_t indent, std::string& out) {
  const std::string flat = line.flat();
  const auto& pieces = line.pieces();
  std::vector<size_t> lists;
  for (size_t i = 0; i < pieces.size(); ++i) {
    if (pieces[i].list) lists.push_back(i);
  }
  if (flat.size() <= CodePrinter::kColumns || lists.empty()) {
    out += flat;
    out += '\n';
    return;
  }
  // The last list whose line up to the opener fits (ruff splits the
  // right-hand side first).
  size_t at = lists.back();
  for (auto it = lists.rbegin(); it != lists.rend(); ++it) {
    if (slice(line, 0, *it).flat().size() <= CodePrinter::kColumns) {
      at = *it;
      break;
    }
  }
  const Code::List& list = *pieces[at].list;
  const Code head = slice(line, 0, at);
  const Code tail = slice(line, at + 1, pieces.size());
  const std::vector<Code>& items = list.items;
  if (list.kind == ListKind::Parenthesized && items.size() > 1) {
    // In parentheses, one item per line (an import's names).
    out += head.flat() + "(\n";
    python_items(list, indent + 4, true, out);
    lay_out_python(Code(spaces(indent) + ")") + tail, indent, out);
    return;
  }
  if (list.kind == ListKind::Parenthesized) {
    // In parentheses on a line of its own where it fits there; else as it is
    // (a list inside it breaks instead).
    const Code& item = items.at(0);
    if (!item.has_list() && indent + 4 + item.flat().size() <= CodePrinter::kColumns) {
      out += head.flat() + "(\n";
      out += spaces(indent + 4) + item.flat() + "\n";
      lay_out_python(Code(spaces(indent) + ")") + tail, indent, out);
    } else {
      lay_out_python(head + item + tail, indent, out);
    }
    return;
  }
  if (items.empty()) {
    out += flat;
    out += '\n';
    return;
  }
  const std::string body = flat_items(list);
  const bool single = items.size() == 1;
  bool hug = false, commas = true;
  switch (list.kind) {
    case ListKind::Call:
    case ListKind::Display:
      hug = single || list.kind == ListKind::Call;
      commas = !single;
      break;
    case ListKind::Params:
      hug = !single;
      break;
    case ListKind::Tuple:
      break;
    case ListKind::Clauses:
      hug = true;
      commas = false;
      break;
    case ListKind::Parenthesized:
      break;
  }
  out += head.flat();
  out += '\n';
  if (hug && indent + 4 + body.size() <= CodePrinter::kColumns) {
    out += spaces(indent + 4) + body + "\n";
  } else {
    python_items(list, indent + 4, commas, out);
  }
  lay_out_python(Code(spaces(indent)) + tail, indent, out);
}

}  // namespace

// ---- Code ------------------------------------------------------------------

Code::Code(std::string text) {
  if (!text.empty()) pieces_.push_back({std::move(text), nullptr});
}

Code Code::list(std::vector<Code> items, ListKind kind) {
  for (const Code& item : items) {
    if (item.flat().find('\n') != std::string::npos)
      throw std::logic_error("a list item holds a line break: " + item.flat());
  }
  if (kind == ListKind::Parenthesized && items.empty())
    throw std::logic_error("a parenthesized list without items");
  Code out;
  out.pieces_.push_back({{}, std::make_shared<const List>(List{kind, std::move(items)})});
  return out;
}

void Code::append_text(std::string_view text) {
  if (text.empty()) return;
  if (!pieces_.empty() && !pieces_.back().list) {
    pieces_.back().text += text;
  } else {
    pieces_.push_back({std::string(text), nullptr});
  }
}

Code& Code::operator+=(const Piece& piece) {
  if (piece.list)
    pieces_.push_back(piece);
  else
    append_text(piece.text);
  return *this;
}

Code& Code::operator+=(const Code& other) {
  for (const Piece& piece : other.pieces_) *this += piece;
  return *this;
}

std::string Code::flat() const {
  std::string out;
  for (const Piece& piece : pieces_) {
    if (!piece.list) {
      out += piece.text;
    } else {
      out += flat_items(*piece.list);
    }
  }
  return out;
}

bool Code::has_list() const {
  return std::any_of(pieces_.begin(), pieces_.end(), [](const Piece& p) { return p.list; });
}

std::vector<Code> Code::lines() const {
  std::vector<Code> out(1);
  for (const Piece& piece : pieces_) {
    if (piece.list) {
      out.back().pieces_.push_back(piece);
      continue;
    }
    const std::vector<std::string_view> parts = split_lines(piece.text);
    for (size_t i = 0; i < parts.size(); ++i) {
      if (i) out.emplace_back();
      out.back().append_text(parts[i]);
    }
  }
  return out;
}

// ---- CodePrinter -----------------------------------------------------------

void CodePrinter::append_line(const Code& text) {
  if (blank(text.flat())) {
    out_ += '\n';
    code_ += "\n";
    return;
  }
  const Code line = Code(spaces(static_cast<size_t>(indent_))) + text;
  if (!lay_out_) {
    code_ += line + "\n";
    out_ += line.flat() + "\n";
    return;
  }
  const size_t indent = line.flat().find_first_not_of(' ');
  if (language_ == Language::Python)
    lay_out_python(line, indent, out_);
  else
    lay_out_cpp(line, indent, out_);
}

void CodePrinter::line(const Code& text) {
  for (const Code& l : text.lines()) append_line(l);
}

namespace {

/// A template's variables: the value of each, and whether it was used.
using VarTable = std::map<std::string_view, std::pair<const Code*, bool>>;

/// A template's lines without the newline after the opening R"( and the
/// indentation before the closing )"; `common` is the indentation all its
/// lines that are not blank share.
std::vector<std::string_view> template_lines(std::string_view text, size_t& common) {
  std::vector<std::string_view> lines = split_lines(text);
  if (!lines.empty() && blank(lines.front())) lines.erase(lines.begin());
  if (!lines.empty() && blank(lines.back())) lines.pop_back();
  common = std::string_view::npos;
  for (auto l : lines) {
    if (!blank(l)) common = std::min(common, l.find_first_not_of(' '));
  }
  if (common == std::string_view::npos) common = 0;
  return lines;
}

/// `value` substituted where the line so far (`expanded`) stands: each of its
/// later text lines indented as the line is.
void append_value(const Code& value, Code& expanded) {
  const std::string so_far = expanded.flat();
  const size_t line_indent = so_far.find_first_not_of(' ') == std::string::npos
                                 ? so_far.size()
                                 : so_far.find_first_not_of(' ');
  for (const Code::Piece& piece : value.pieces()) {
    if (piece.list) {
      expanded += piece;
      continue;
    }
    std::string text;
    for (char c : piece.text) {
      text += c;
      if (c == '\n') text.append(line_indent, ' ');
    }
    expanded += text;
  }
}

/// Template line `body` (`line` as written, for errors) with its `$name$`s
/// substituted from `table` (marked used) and `$$` as `$`.
Code expand_line(std::string_view line, std::string_view body, VarTable& table) {
  Code expanded;
  std::string run;  // text not yet appended to `expanded`
  for (size_t i = 0; i < body.size(); ++i) {
    if (body[i] != '$') {
      run += body[i];
      continue;
    }
    size_t close = body.find('$', i + 1);
    if (close == std::string_view::npos)
      throw std::logic_error("unterminated $ in template: " + std::string(line));
    std::string_view name = body.substr(i + 1, close - i - 1);
    i = close;
    if (name.empty()) {
      run += '$';
      continue;
    }
    auto it = table.find(name);
    if (it == table.end())
      throw std::logic_error("template variable $" + std::string(name) + "$ not given");
    it->second.second = true;
    expanded += run;
    run.clear();
    append_value(*it->second.first, expanded);
  }
  expanded += run;
  return expanded;
}

/// `line` without the blanks that end its last text piece.
Code without_trailing_blanks(const Code& line) {
  Code trimmed;
  const auto& pieces = line.pieces();
  for (size_t k = 0; k < pieces.size(); ++k) {
    if (pieces[k].list) {
      trimmed += pieces[k];
      continue;
    }
    std::string_view t = pieces[k].text;
    if (k + 1 == pieces.size()) {
      while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    }
    trimmed += Code(t);
  }
  return trimmed;
}

}  // namespace

void CodePrinter::emit(Vars vars, std::string_view text) {
  VarTable table;
  for (const auto& [name, value] : vars) table[name] = {&value, false};
  size_t common = 0;
  for (auto l : template_lines(text, common)) {
    std::string_view body = blank(l) ? std::string_view() : l.substr(common);
    const Code expanded = expand_line(l, body, table);
    // A line that was only `$var$` with an empty value disappears.
    if (blank(expanded.flat()) && !blank(body)) continue;
    // A value ending in a newline (or one substituted alone) must not leave
    // trailing blanks: split again and emit line by line.
    for (const Code& piece : expanded.lines()) append_line(without_trailing_blanks(piece));
  }
  for (const auto& [name, entry] : table) {
    if (!entry.second)
      throw std::logic_error("template variable $" + std::string(name) + "$ given but not used");
  }
}

}  // namespace structop
