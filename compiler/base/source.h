// Source files and positions. Every phase reports problems against a Span, which
// points into a SourceFile owned by the SourceManager; nothing is formatted
// until diagnostics are printed.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

namespace structop {

/// A position in an IDL file: 1-based line and column (in bytes), plus the
/// length of the underlined text (at least 1). `file < 0` means "no location".
struct Span {
  int file = -1;
  int line = 0;
  int column = 0;
  int length = 1;

  bool valid() const { return file >= 0 && line > 0; }
  /// The same span moved `offset` bytes to the right on its line, `len` wide.
  Span shifted(int offset, int len) const {
    Span s = *this;
    s.column += offset;
    s.length = len < 1 ? 1 : len;
    return s;
  }
};

/// One loaded file: the path as it should appear in diagnostics, and its text.
class SourceFile {
 public:
  SourceFile(std::string path, std::string text, std::string display = {});

  const std::string& path() const { return path_; }
  /// How diagnostics name the file: its path, or what its reader says
  /// (`REV:path` for a file read from git).
  const std::string& display() const { return display_.empty() ? path_ : display_; }
  const std::string& text() const { return text_; }
  /// The text of 1-based `line` without its line terminator ("" if out of range).
  std::string_view line_text(int line) const;
  /// Converts a byte offset into a 1-based line and column.
  Span span_at(int file_id, size_t offset, int length = 1) const;
  /// The same for offsets that mostly grow (a parser's): `*line_hint`, the
  /// line index of the previous lookup, is tried and a few lines after it
  /// before a binary search, and updated.
  Span span_at(int file_id, size_t offset, int length, size_t* line_hint) const;

 private:
  std::string path_;
  std::string text_;
  std::string display_;
  std::vector<size_t> line_starts_;
};

/// The length of the UTF-8 sequence starting at byte `i` of `text` (1 for
/// ASCII), or 0 if the bytes there are not well-formed UTF-8 (overlong
/// forms, surrogates, truncated sequences and stray continuation bytes are
/// all rejected).
size_t utf8_char_length(std::string_view text, size_t i);

/// Owns every file a compilation read. Ids are stable; references stay valid.
class SourceManager {
 public:
  /// Adds a file and returns its id.
  int add(std::string path, std::string text, std::string display = {});
  const SourceFile& file(int id) const { return files_.at(static_cast<size_t>(id)); }
  size_t size() const { return files_.size(); }

 private:
  std::deque<SourceFile> files_;
};

}  // namespace structop
