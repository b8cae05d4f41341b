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

bool blank(std::string_view line) { return line.find_first_not_of(" \t") == std::string_view::npos; }

}  // namespace

void CodePrinter::append_line(std::string_view text) {
  if (blank(text)) {
    out_ += '\n';
    return;
  }
  out_.append(static_cast<size_t>(indent_), ' ');
  out_.append(text);
  out_ += '\n';
}

void CodePrinter::line(std::string_view text) { append_line(text); }

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
      if (close == std::string_view::npos) throw std::logic_error("unterminated $ in template: " + std::string(l));
      std::string_view name = body.substr(i + 1, close - i - 1);
      i = close;
      if (name.empty()) {
        expanded += '$';
        continue;
      }
      auto it = table.find(name);
      if (it == table.end()) throw std::logic_error("template variable $" + std::string(name) + "$ not given");
      it->second.second = true;
      line_indent = expanded.find_first_not_of(' ') == std::string::npos ? expanded.size()
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
    if (!entry.second) throw std::logic_error("template variable $" + std::string(name) + "$ given but not used");
  }
}

}  // namespace structop
