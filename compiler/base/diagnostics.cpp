#include "base/diagnostics.h"

#include <algorithm>
#include <cctype>
#include <tuple>

#include <fmt/format.h>

#include "base/quote.h"

namespace structop {

void Diagnostics::error(Span span, std::string message, std::string hint) {
  ++error_count_;
  dropping_ = error_count_ > kMaxKeptErrors;
  if (dropping_) return;
  items_.push_back({Severity::Error, span, std::move(message), std::move(hint)});
}

void Diagnostics::note(Span span, std::string message) {
  if (dropping_) return;
  items_.push_back({Severity::Note, span, std::move(message), {}});
}

void Diagnostics::add(Diagnostic d) {
  if (d.severity == Severity::Error) {
    ++error_count_;
    dropping_ = error_count_ > kMaxKeptErrors;
    if (dropping_) return;
  }
  items_.push_back(std::move(d));
}

std::string Diagnostics::headline(const Diagnostic& d) const {
  // Messages quote user text and paths: shown escaped, never able to drive
  // the terminal or fake a line of their own.
  const char* kind = d.severity == Severity::Error     ? "error"
                     : d.severity == Severity::Warning ? "warning"
                                                       : "note";
  const std::string message = terminal_text(d.message);
  if (d.span.file < 0) return fmt::format("structopc: {}: {}", kind, message);
  const std::string path = terminal_text(sources_.file(d.span.file).display());
  if (d.span.line <= 0) return fmt::format("{}: {}: {}", path, kind, message);
  return fmt::format("{}:{}:{}: {}: {}", path, d.span.line, d.span.column, kind, message);
}

namespace {

/// How much of a source line an excerpt shows; longer lines are cut to a
/// window around the caret, marked with `...`.
constexpr size_t kExcerptWidth = 160;

/// The excerpt of `line` for a caret at 0-based byte `column`, `length` wide:
/// the shown text and where the caret falls in it (in bytes of `text`).
/// Control characters, bidirectional controls and other hazards (see quote.h)
/// and bytes that are not well-formed UTF-8 become `?` (one per character, so
/// the caret still lines up); tabs stay.
struct Excerpt {
  std::string text;
  size_t caret = 0;
  size_t length = 1;
};

Excerpt make_excerpt(std::string_view line, size_t column, size_t length) {
  Excerpt e;
  column = std::min(column, line.size());
  size_t begin = 0, end = line.size();
  std::string prefix, suffix;
  if (line.size() > kExcerptWidth) {
    begin = column > kExcerptWidth / 2 ? column - kExcerptWidth / 2 : 0;
    end = std::min(line.size(), begin + kExcerptWidth);
    if (begin > 0) prefix = "...";
    if (end < line.size()) suffix = "...";
  }
  std::string_view window = line.substr(begin, end - begin);
  // Where the caret and the end of the underline fall, in bytes of the shown
  // text (a replaced character may be shorter than the original).
  const size_t caret = column - begin;
  const size_t underline_end = std::min(window.size(), caret + std::max<size_t>(1, length));
  size_t shown_caret = std::string::npos, shown_end = std::string::npos;
  e.text = prefix;
  for (size_t i = 0; i < window.size();) {
    if (shown_caret == std::string::npos && i >= caret) shown_caret = e.text.size();
    if (shown_end == std::string::npos && i >= underline_end) shown_end = e.text.size();
    unsigned char c = static_cast<unsigned char>(window[i]);
    size_t len = utf8_char_length(window, i);
    if (len == 0) {
      e.text += '?';
      ++i;
    } else if (
        ((c < 0x20 && c != '\t') || c >= 0x7F) &&
        terminal_text(window.substr(i, len)).size() != len) {
      e.text += '?';
      i += len;
    } else {
      e.text.append(window.substr(i, len));
      i += len;
    }
  }
  if (shown_caret == std::string::npos) shown_caret = e.text.size();
  if (shown_end == std::string::npos) shown_end = e.text.size();
  e.text += suffix;
  e.caret = shown_caret;
  e.length = std::max<size_t>(1, shown_end > shown_caret ? shown_end - shown_caret : 0);
  return e;
}

}  // namespace

std::string Diagnostics::render_one(const Diagnostic& d) const {
  std::string out = headline(d);
  out += '\n';
  if (d.span.valid()) {
    std::string_view line = sources_.file(d.span.file).line_text(d.span.line);
    if (!line.empty()) {
      std::string gutter = std::to_string(d.span.line);
      Excerpt e = make_excerpt(
          line,
          static_cast<size_t>(std::max(1, d.span.column) - 1),
          static_cast<size_t>(std::max(1, d.span.length)));
      out += fmt::format(" {} | {}\n", gutter, e.text);
      // Keep tabs so the caret lines up with the excerpt.
      // One pad column per character (not per byte) before the caret.
      std::string pad;
      for (size_t i = 0; i < e.caret && i < e.text.size(); ++i) {
        unsigned char c = static_cast<unsigned char>(e.text[i]);
        if ((c & 0xC0) == 0x80) continue;  // a UTF-8 continuation byte
        pad += c == '\t' ? '\t' : ' ';
      }
      size_t width = 0;  // the underlined text, in characters
      for (size_t i = e.caret; i < e.caret + e.length && i < e.text.size(); ++i) {
        width += (static_cast<unsigned char>(e.text[i]) & 0xC0) != 0x80;
      }
      out += fmt::format(
          " {} | {}^{}\n",
          std::string(gutter.size(), ' '),
          pad,
          std::string(std::max<size_t>(1, width) - 1, '~'));
    }
  }
  if (!d.hint.empty()) out += fmt::format("hint: {}\n", terminal_text(d.hint));
  return out;
}

std::string Diagnostics::render() const {
  // Group each note with the error before it, then order groups by position.
  std::vector<std::pair<size_t, size_t>> groups;  // [begin, end) into items_
  for (size_t i = 0; i < items_.size(); ++i) {
    if (items_[i].severity == Severity::Note && !groups.empty()) {
      groups.back().second = i + 1;
    } else {
      groups.push_back({i, i + 1});
    }
  }
  auto key = [&](const std::pair<size_t, size_t>& g) {
    const Span& s = items_[g.first].span;
    return std::make_tuple(s.file, s.line, s.column);
  };
  std::stable_sort(groups.begin(), groups.end(), [&](const auto& a, const auto& b) {
    return key(a) < key(b);
  });
  std::string out;
  std::string previous;
  for (const auto& g : groups) {
    std::string text;
    for (size_t i = g.first; i < g.second; ++i) text += render_one(items_[i]);
    if (text == previous) continue;  // the same problem found twice
    out += text;
    previous = std::move(text);
  }
  if (error_count_ > kMaxKeptErrors) {
    out += fmt::format(
        "structopc: note: {} more errors not shown\n",
        error_count_ - kMaxKeptErrors);
  }
  return out;
}

std::string Diagnostics::render_in_order() const {
  std::string out;
  for (const auto& d : items_) out += render_one(d);
  if (error_count_ > kMaxKeptErrors) {
    out += fmt::format(
        "structopc: note: {} more errors not shown\n",
        error_count_ - kMaxKeptErrors);
  }
  return out;
}

namespace {

// Optimal string alignment distance (a swap of two neighbours counts as one
// edit), case-insensitive: "flaot" is one edit away from "float". Only
// distances below `limit` matter: the result is `limit` when it is at least
// that, found early (a length difference, or a row whose every cell is over
// the limit), so a hostile name against a long candidate list stays cheap.
size_t edit_distance(const std::string& a, const std::string& b, size_t limit) {
  const size_t n = a.size(), m = b.size();
  if ((n > m ? n - m : m - n) >= limit) return limit;
  auto lower = [](char c) { return std::tolower(static_cast<unsigned char>(c)); };
  // Three rows: i - 2, i - 1 and i.
  std::vector<size_t> before(m + 1), previous(m + 1), row(m + 1);
  for (size_t j = 0; j <= m; ++j) previous[j] = j;
  for (size_t i = 1; i <= n; ++i) {
    row[0] = i;
    size_t row_min = row[0];
    for (size_t j = 1; j <= m; ++j) {
      size_t cost = lower(a[i - 1]) == lower(b[j - 1]) ? 0 : 1;
      row[j] = std::min({previous[j] + 1, row[j - 1] + 1, previous[j - 1] + cost});
      if (i > 1 && j > 1 && lower(a[i - 1]) == lower(b[j - 2]) &&
          lower(a[i - 2]) == lower(b[j - 1])) {
        row[j] = std::min(row[j], before[j - 2] + 1);
      }
      row_min = std::min(row_min, row[j]);
    }
    // A cell of a later row is at least the minimum of the row before the
    // one before it (a swap reaches back two rows): stop when two rows in a
    // row are over the limit.
    if (row_min >= limit && i > 1 && *std::min_element(previous.begin(), previous.end()) >= limit)
      return limit;
    std::swap(before, previous);
    std::swap(previous, row);
  }
  return std::min(previous[m], limit);
}

}  // namespace

std::string closest_match(const std::string& name, const std::vector<std::string>& candidates) {
  std::string best;
  size_t best_distance = std::max<size_t>(1, name.size() / 3) + 1;
  for (const auto& c : candidates) {
    size_t d = edit_distance(name, c, best_distance);
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string quoted_list(const std::vector<std::string>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0) out += (i + 1 == names.size()) ? " and " : ", ";
    out += '`' + names[i] + '`';
  }
  return out;
}

}  // namespace structop
