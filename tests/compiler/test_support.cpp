#include "test_support.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <random>

namespace structop::testing {

namespace fs = std::filesystem;

namespace {
std::string normal(const std::string& path) {
  return fs::path(path).lexically_normal().string();
}
}  // namespace

MemoryReader::MemoryReader(std::initializer_list<std::pair<const std::string, std::string>> files) {
  for (const auto& [path, text] : files) add(path, text);
}

void MemoryReader::add(const std::string& path, std::string text) {
  files_[normal(path)] = std::move(text);
}

std::optional<std::string> MemoryReader::read(const std::string& path, std::string* error) {
  auto it = files_.find(normal(path));
  if (it == files_.end()) {
    *error = "No such file or directory";
    return std::nullopt;
  }
  ++reads_[it->first];
  return it->second;
}

std::string MemoryReader::identity(const std::string& path) {
  return normal(path);
}

bool MemoryReader::exists(const std::string& path) {
  return files_.count(normal(path)) > 0;
}

int MemoryReader::reads(const std::string& path) const {
  auto it = reads_.find(normal(path));
  return it == reads_.end() ? 0 : it->second;
}

const lower::LoweredOp& FrontEnd::op(const std::string& name) const {
  for (const auto& lo : lowered.ops) {
    if (lo.qualified_name == name) return lo;
  }
  throw std::runtime_error("no lowered op `" + name + "`; diagnostics:\n" + errors);
}

const lower::Slot& FrontEnd::slot(const std::string& op_name, const std::string& lowered_name)
    const {
  for (const auto& s : op(op_name).slots) {
    if (s.name == lowered_name) return s;
  }
  throw std::runtime_error("op `" + op_name + "` has no slot `" + lowered_name + "`");
}

FrontEnd run_front_end(
    MemoryReader& reader,
    const std::string& main,
    const std::vector<std::string>& include_dirs) {
  FrontEnd fe;
  fe.idl = load_idl(main, include_dirs, reader, *fe.sources, *fe.diags);
  // As compile() does (driver/compile.cpp), size limits included.
  if (check_identifier_lengths(fe.idl, *fe.diags))
    fe.module = resolve(fe.idl, *fe.sources, *fe.diags);
  if (!fe.diags->has_errors()) check_flattened_size(fe.module, *fe.diags);
  if (!fe.diags->has_errors()) fe.lowered = lower_module(fe.module, *fe.diags);
  fe.errors = fe.diags->render();
  return fe;
}

FrontEnd run_front_end(const std::string& text) {
  MemoryReader reader{{"main.ops.yaml", text}};
  return run_front_end(reader);
}

std::string yaml(std::string_view text) {
  if (text.empty() || text.front() != '\n')
    throw std::invalid_argument("yaml(): begin the text on the line after R\"(");
  text.remove_prefix(1);
  std::vector<std::string_view> lines;  // the last one is what follows the last line break
  for (size_t start = 0;;) {
    const size_t end = text.find('\n', start);
    lines.push_back(text.substr(start, end == std::string_view::npos ? end : end - start));
    if (end == std::string_view::npos) break;
    start = end + 1;
  }
  auto blank = [](std::string_view line) {
    return line.find_first_not_of(' ') == std::string_view::npos;
  };
  // The spaces before `)"` on a line of its own; else the text ends unbroken.
  const bool closing_line = blank(lines.back());
  if (closing_line) lines.pop_back();
  size_t indent = std::string_view::npos;
  for (std::string_view line : lines) {
    if (blank(line)) continue;
    const size_t first = line.find_first_not_of(' ');
    if (line[first] == '\t') throw std::invalid_argument("yaml(): a line is indented with a tab");
    indent = std::min(indent, first);
  }
  std::string out;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (!blank(lines[i])) out += lines[i].substr(indent);
    if (closing_line || i + 1 < lines.size()) out += '\n';
  }
  return out;
}

TempDir::TempDir() {
  std::random_device rd;
  path = std::filesystem::temp_directory_path() /
         ("structop-test-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(path);
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
}

YamlRun run_yaml(const std::string& text, const YamlLimits& limits) {
  YamlRun r;
  int id = r.sources->add("t.yaml", text);
  r.ok = load_yaml(*r.sources, id, *r.diags, &r.doc, limits);
  r.errors = r.diags->render();
  return r;
}

// ---- JSON -------------------------------------------------------------------

const JsonValue& JsonValue::operator[](const std::string& key) const {
  if (kind != Kind::Object) throw std::runtime_error("not an object, looking for `" + key + "`");
  for (const auto& [k, v] : members) {
    if (k == key) return v;
  }
  throw std::runtime_error("no key `" + key + "`");
}

const JsonValue& JsonValue::operator[](size_t i) const {
  if (kind != Kind::Array || i >= items.size())
    throw std::runtime_error("no item " + std::to_string(i));
  return items[i];
}

bool JsonValue::has(const std::string& key) const {
  for (const auto& m : members) {
    if (m.first == key) return true;
  }
  return false;
}

std::vector<std::string> JsonValue::keys() const {
  std::vector<std::string> out;
  for (const auto& m : members) out.push_back(m.first);
  return out;
}

namespace {

class JsonParser {
 public:
  explicit JsonParser(const std::string& text) : s_(text) {}

  JsonValue document() {
    JsonValue v = value(0);
    skip_space();
    if (i_ != s_.size()) fail("trailing text");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("bad JSON at offset " + std::to_string(i_) + ": " + what);
  }

  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r'))
      ++i_;
  }

  bool take(const char* word) {
    size_t n = std::char_traits<char>::length(word);
    if (s_.compare(i_, n, word) != 0) return false;
    i_ += n;
    return true;
  }

  JsonValue value(int depth) {
    if (depth > 200) fail("nested too deep");
    skip_space();
    if (i_ >= s_.size()) fail("unexpected end");
    JsonValue v;
    char c = s_[i_];
    if (take("null")) return v;
    if (take("true")) {
      v.kind = JsonValue::Kind::Bool;
      v.boolean = true;
      return v;
    }
    if (take("false")) {
      v.kind = JsonValue::Kind::Bool;
      return v;
    }
    if (c == '"') {
      v.kind = JsonValue::Kind::String;
      v.string = string();
      return v;
    }
    if (c == '[') {
      ++i_;
      v.kind = JsonValue::Kind::Array;
      skip_space();
      if (i_ < s_.size() && s_[i_] == ']') {
        ++i_;
        return v;
      }
      while (true) {
        v.items.push_back(value(depth + 1));
        skip_space();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == ']') {
          ++i_;
          return v;
        }
        fail("expected `,` or `]`");
      }
    }
    if (c == '{') {
      ++i_;
      v.kind = JsonValue::Kind::Object;
      skip_space();
      if (i_ < s_.size() && s_[i_] == '}') {
        ++i_;
        return v;
      }
      while (true) {
        skip_space();
        if (i_ >= s_.size() || s_[i_] != '"') fail("expected a key");
        std::string key = string();
        skip_space();
        if (i_ >= s_.size() || s_[i_] != ':') fail("expected `:`");
        ++i_;
        v.members.emplace_back(std::move(key), value(depth + 1));
        skip_space();
        if (i_ < s_.size() && s_[i_] == ',') {
          ++i_;
          continue;
        }
        if (i_ < s_.size() && s_[i_] == '}') {
          ++i_;
          return v;
        }
        fail("expected `,` or `}`");
      }
    }
    if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      size_t begin = i_;
      ++i_;
      while (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.' ||
                                s_[i_] == 'e' || s_[i_] == 'E' || s_[i_] == '+' || s_[i_] == '-')) {
        ++i_;
      }
      v.kind = JsonValue::Kind::Number;
      v.number = std::strtod(s_.substr(begin, i_ - begin).c_str(), nullptr);
      return v;
    }
    fail(std::string("unexpected character `") + c + "`");
  }

  std::string string() {
    ++i_;  // "
    std::string out;
    while (i_ < s_.size() && s_[i_] != '"') {
      char c = s_[i_++];
      if (static_cast<unsigned char>(c) < 0x20) fail("raw control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) fail("unterminated escape");
      char e = s_[i_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          out += e;
          break;
        case 'n':
          out += '\n';
          break;
        case 't':
          out += '\t';
          break;
        case 'r':
          out += '\r';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'u': {
          if (i_ + 4 > s_.size()) fail("short \\u escape");
          unsigned code = static_cast<unsigned>(std::stoul(s_.substr(i_, 4), nullptr, 16));
          i_ += 4;
          if (code >= 0x80) fail("non-ASCII \\u escape (not needed by these tests)");
          out += static_cast<char>(code);
          break;
        }
        default:
          fail("bad escape");
      }
    }
    if (i_ >= s_.size()) fail("unterminated string");
    ++i_;  // "
    return out;
  }

  const std::string& s_;
  size_t i_ = 0;
};

}  // namespace

JsonValue parse_json(const std::string& text) {
  return JsonParser(text).document();
}

}  // namespace structop::testing
