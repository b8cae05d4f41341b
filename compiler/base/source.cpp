#include "base/source.h"

#include <algorithm>

namespace structop {

SourceFile::SourceFile(std::string path, std::string text, std::string display)
    : path_(std::move(path)), text_(std::move(text)), display_(std::move(display)) {
  line_starts_.push_back(0);
  for (size_t i = text_.find('\n'); i != std::string::npos; i = text_.find('\n', i + 1)) {
    line_starts_.push_back(i + 1);
  }
}

std::string_view SourceFile::line_text(int line) const {
  if (line < 1 || static_cast<size_t>(line) > line_starts_.size()) return {};
  size_t begin = line_starts_[static_cast<size_t>(line) - 1];
  size_t end = static_cast<size_t>(line) < line_starts_.size()
                   ? line_starts_[static_cast<size_t>(line)]
                   : text_.size();
  std::string_view s(text_.data() + begin, end - begin);
  while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

namespace {
Span span_on_line(int file_id, size_t line_index, size_t line_start, size_t offset, int length) {
  Span s;
  s.file = file_id;
  s.line = static_cast<int>(line_index) + 1;
  s.column = static_cast<int>(offset - line_start) + 1;
  s.length = length < 1 ? 1 : length;
  return s;
}
}  // namespace

Span SourceFile::span_at(int file_id, size_t offset, int length) const {
  auto it = std::upper_bound(line_starts_.begin(), line_starts_.end(), offset);
  const size_t line_index = static_cast<size_t>(it - line_starts_.begin()) - 1;
  return span_on_line(file_id, line_index, line_starts_[line_index], offset, length);
}

Span SourceFile::span_at(int file_id, size_t offset, int length, size_t* line_hint) const {
  // The hint's line or one of the few after it; else the search.
  for (size_t line = *line_hint; line < line_starts_.size() && line < *line_hint + 5; ++line) {
    if (line_starts_[line] > offset) break;
    if (line + 1 == line_starts_.size() || offset < line_starts_[line + 1]) {
      *line_hint = line;
      return span_on_line(file_id, line, line_starts_[line], offset, length);
    }
  }
  const Span s = span_at(file_id, offset, length);
  *line_hint = static_cast<size_t>(s.line - 1);
  return s;
}

size_t utf8_char_length(std::string_view text, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  const size_t n = text.size();
  if (i >= n) return 0;
  unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t len = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // allowed range of the second byte
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
    if (c == 0xE0) lo = 0xA0;  // overlong
    if (c == 0xED) hi = 0x9F;  // surrogates
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
    if (c == 0xF0) lo = 0x90;  // overlong
    if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
  } else {
    return 0;
  }
  if (i + len > n || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < len; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return len;
}

int SourceManager::add(std::string path, std::string text, std::string display) {
  files_.emplace_back(std::move(path), std::move(text), std::move(display));
  return static_cast<int>(files_.size()) - 1;
}

}  // namespace structop
