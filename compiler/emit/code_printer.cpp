#include "emit/code_printer.h"

#include <map>
#include <stdexcept>
#include <vector>

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

// A list is encoded in the text as kOpen item kSep item ... kClose: bytes
// that UTF-8 never uses, so no text from an IDL file (all UTF-8, docs
// included, whatever control characters their escapes spell) is taken for one.
constexpr char kOpen = '\xFC';
constexpr char kSep = '\xFD';
constexpr char kClose = '\xFE';

/// Index of the kClose matching the kOpen at `open`.
size_t matching_close(std::string_view text, size_t open) {
  int depth = 0;
  for (size_t i = open; i < text.size(); ++i) {
    if (text[i] == kOpen) ++depth;
    if (text[i] == kClose && --depth == 0) return i;
  }
  throw std::logic_error("unbalanced list in generated text");
}

/// Lays out one line (already indented by `indent` spaces) into `out`.
void lay_out(std::string_view line, size_t indent, std::string& out) {
  const std::string flat = CodePrinter::flat(line);
  const size_t open = line.find(kOpen);
  // A long `#error "message"` continues on the next line at +4, as
  // clang-format breaks it (the message itself is never split).
  if (flat.size() > CodePrinter::kColumns && line.compare(indent, 8, "#error \"") == 0) {
    out += std::string(indent, ' ') + "#error \\\n";
    out += std::string(indent + 4, ' ') + flat.substr(indent + 7);
    out += '\n';
    return;
  }
  if (open == std::string_view::npos || flat.size() <= CodePrinter::kColumns) {
    out += flat;
    out += '\n';
    return;
  }
  // Break the first list: opener on this line, one item per line at +4.
  const size_t close = matching_close(line, open);
  std::vector<std::string_view> items;
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open + 1; i < close; ++i) {
    if (line[i] == kOpen) ++depth;
    if (line[i] == kClose) --depth;
    if (line[i] == kSep && depth == 0) {
      items.push_back(line.substr(start, i - start));
      start = i + 1;
    }
  }
  if (close > open + 1) items.push_back(line.substr(start, close - start));
  const std::string_view head = line.substr(0, open);
  const std::string_view tail = line.substr(close + 1);
  // The right-hand side of an assignment (or initialization) that fits on
  // the next line at +4 moves there whole, as clang-format does, rather than
  // one item per line.
  const size_t assign = head.rfind(" = ");
  if (assign != std::string_view::npos) {
    const std::string next = std::string(indent + 4, ' ') + std::string(head.substr(assign + 3)) +
                             CodePrinter::flat(line.substr(open));
    if (next.size() <= CodePrinter::kColumns) {
      out += CodePrinter::flat(head.substr(0, assign + 2));
      out += '\n';
      out += next;
      out += '\n';
      return;
    }
  }
  if (items.empty()) {
    lay_out(std::string(head) + std::string(tail), indent, out);
    return;
  }
  // A single item that would not fit on a line of its own either stays after
  // the opener, and a list inside it breaks instead (`held{f(` then f's
  // arguments), as clang-format does.
  if (items.size() == 1 && items[0].find(kOpen) != std::string_view::npos &&
      indent + 4 + CodePrinter::flat(items[0]).size() + CodePrinter::flat(tail).size() >
          CodePrinter::kColumns) {
    lay_out(std::string(head) + std::string(items[0]) + std::string(tail), indent, out);
    return;
  }
  out += CodePrinter::flat(head);
  out += '\n';
  // Inside a `//` comment the continuation lines stay comments.
  std::string pad(indent + 4, ' ');
  if (line.compare(indent, 2, "//") == 0) {
    const size_t text = line.find_first_not_of(' ', indent + 2);
    pad = std::string(indent, ' ') + "//" +
          std::string((text == std::string_view::npos ? 1 : text - indent - 2) + 4, ' ');
  }
  for (size_t i = 0; i < items.size(); ++i) {
    std::string item = pad + std::string(items[i]);
    item += i + 1 < items.size() ? std::string(",") : std::string(tail);
    lay_out(item, pad.find_first_not_of(' ') == std::string::npos ? pad.size() : indent, out);
  }
}

}  // namespace

std::string CodePrinter::list(const std::vector<std::string>& items) {
  std::string out(1, kOpen);
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out += kSep;
    out += items[i];
  }
  out += kClose;
  return out;
}

std::string CodePrinter::flat(std::string_view text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (char c : text) {
    if (c == kSep)
      out += ", ";
    else if (c != kOpen && c != kClose)
      out += c;
  }
  return out;
}

void CodePrinter::append_line(std::string_view text) {
  if (blank(text)) {
    out_ += '\n';
    return;
  }
  const std::string line = std::string(static_cast<size_t>(indent_), ' ') + std::string(text);
  if (!lay_out_) {
    out_ += line;
    out_ += '\n';
    return;
  }
  lay_out(line, line.find_first_not_of(' '), out_);
}

void CodePrinter::line(std::string_view text) {
  append_line(text);
}

void CodePrinter::emit(Vars vars, std::string_view text) {
  std::map<std::string_view, std::pair<const std::string*, bool>> table;  // value, used
  for (const auto& [name, value] : vars) table[name] = {&value, false};

  std::vector<std::string_view> lines = split_lines(text);
  // Drop the newline after the opening R"( and the indentation before the closing )".
  if (!lines.empty() && blank(lines.front())) lines.erase(lines.begin());
  if (!lines.empty() && blank(lines.back())) lines.pop_back();
  size_t common = std::string_view::npos;
  for (auto l : lines) {
    if (!blank(l)) common = std::min(common, l.find_first_not_of(' '));
  }
  if (common == std::string_view::npos) common = 0;

  for (auto l : lines) {
    std::string_view body = blank(l) ? std::string_view() : l.substr(common);
    std::string expanded;
    size_t line_indent = 0;  // of the expanded line, for multi-line values
    for (size_t i = 0; i < body.size(); ++i) {
      if (body[i] != '$') {
        expanded += body[i];
        continue;
      }
      size_t close = body.find('$', i + 1);
      if (close == std::string_view::npos)
        throw std::logic_error("unterminated $ in template: " + std::string(l));
      std::string_view name = body.substr(i + 1, close - i - 1);
      i = close;
      if (name.empty()) {
        expanded += '$';
        continue;
      }
      auto it = table.find(name);
      if (it == table.end())
        throw std::logic_error("template variable $" + std::string(name) + "$ not given");
      it->second.second = true;
      line_indent = expanded.find_first_not_of(' ') == std::string::npos
                        ? expanded.size()
                        : expanded.find_first_not_of(' ');
      const std::string& value = *it->second.first;
      for (char c : value) {
        expanded += c;
        if (c == '\n') expanded.append(line_indent, ' ');
      }
    }
    // A line that was only `$var$` with an empty value disappears.
    if (blank(expanded) && !blank(body)) continue;
    // A value ending in a newline (or one substituted alone) must not leave
    // trailing blanks: split again and emit line by line.
    for (auto piece : split_lines(expanded)) {
      std::string_view trimmed = piece;
      while (!trimmed.empty() && trimmed.back() == ' ') trimmed.remove_suffix(1);
      append_line(trimmed);
    }
  }
  for (const auto& [name, entry] : table) {
    if (!entry.second)
      throw std::logic_error("template variable $" + std::string(name) + "$ given but not used");
  }
}

}  // namespace structop
