#include "load/yaml_tree.h"

#include <sstream>

#include <fmt/format.h>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

namespace structop {
namespace {

/// Raised by the builder to stop parsing early (too many nodes).
struct StopParsing {};

class TreeBuilder : public YAML::EventHandler {
 public:
  TreeBuilder(
      const SourceFile& file,
      int file_id,
      Diagnostics& diags,
      YamlDocument& doc,
      const YamlLimits& limits)
      : file_(file), file_id_(file_id), diags_(diags), doc_(doc), limits_(limits) {}

  void OnDocumentStart(const YAML::Mark&) override {}
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t) override {
    add(YamlNode::Kind::Null, span_of(mark));
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t) override {
    diags_.error(
        span_of(mark),
        "YAML aliases (`*name`) are not supported in structop IDL files",
        "write the value out in full");
    add(YamlNode::Kind::Null, span_of(mark)).alias = true;
  }

  void OnScalar(
      const YAML::Mark& mark,
      const std::string& tag,
      YAML::anchor_t,
      const std::string& value) override {
    YamlNode& node = add(YamlNode::Kind::Scalar, Span{});  // located below
    node.value = value;
    node.quoted = tag == std::string_view("!");  // (no strlen, no call per scalar)
    locate_scalar(mark, node);
  }

  void OnSequenceStart(
      const YAML::Mark& mark,
      const std::string&,
      YAML::anchor_t,
      YAML::EmitterStyle::value) override {
    open(add(YamlNode::Kind::Sequence, span_of(mark)));
  }
  void OnSequenceEnd() override { close(); }

  void OnMapStart(
      const YAML::Mark& mark,
      const std::string&,
      YAML::anchor_t,
      YAML::EmitterStyle::value) override {
    open(add(YamlNode::Kind::Mapping, span_of(mark)));
  }
  void OnMapEnd() override { close(); }

 private:
  Span span_of(const YAML::Mark& mark) const {
    if (mark.is_null() || mark.pos < 0) return Span{file_id_, 0, 0, 1};
    return file_.span_at(file_id_, static_cast<size_t>(mark.pos), 1, &line_hint_);
  }

  int index_of(const YamlNode& node) const { return static_cast<int>(&node - doc_.nodes.data()); }

  // Children are gathered per open container (one reused buffer per depth)
  // and copied into the document's shared index array when it closes.
  void open(const YamlNode& node) {
    open_.push_back(index_of(node));
    if (pending_.size() < open_.size()) pending_.emplace_back();
    pending_[open_.size() - 1].clear();
  }

  void close() {
    std::vector<int>& kids = pending_[open_.size() - 1];
    YamlNode& node = doc_.nodes[static_cast<size_t>(open_.back())];
    node.first_child = static_cast<uint32_t>(doc_.child_index.size());
    node.child_count = static_cast<uint32_t>(kids.size());
    doc_.child_index.insert(doc_.child_index.end(), kids.begin(), kids.end());
    open_.pop_back();
  }

  YamlNode& add(YamlNode::Kind kind, Span span) {
    if (doc_.nodes.size() >= limits_.max_nodes) {
      diags_.error(
          span,
          fmt::format("file has more than {} YAML nodes", limits_.max_nodes),
          "split the IDL into several files");
      throw StopParsing{};
    }
    int index = static_cast<int>(doc_.nodes.size());
    doc_.nodes.emplace_back();
    YamlNode& node = doc_.nodes.back();
    node.kind = kind;
    node.span = span;
    if (open_.empty()) {
      doc_.root = index;
    } else {
      pending_[open_.size() - 1].push_back(index);
    }
    return doc_.nodes.back();
  }

  // Finds the scalar's text in the source so inner offsets map to columns.
  void locate_scalar(const YAML::Mark& mark, YamlNode& node) const {
    if (mark.pos < 0) {
      node.span = span_of(mark);
      return;
    }
    const std::string& text = file_.text();
    size_t pos = static_cast<size_t>(mark.pos);
    if (pos < text.size() && (text[pos] == '"' || text[pos] == '\'')) ++pos;
    node.span = file_.span_at(
        file_id_,
        pos,
        static_cast<int>(std::max<size_t>(1, node.value.size())),
        &line_hint_);
    node.verbatim = node.value.find('\n') == std::string::npos &&
                    text.compare(pos, node.value.size(), node.value) == 0;
    if (!node.verbatim) node.span.length = 1;
  }

  const SourceFile& file_;
  int file_id_;
  mutable size_t line_hint_ = 0;  // SourceFile::span_at's: nodes come in source order
  Diagnostics& diags_;
  YamlDocument& doc_;
  const YamlLimits& limits_;
  std::vector<int> open_;
  std::vector<std::vector<int>> pending_;  // children of open_[depth], by depth
};

/// The offset of the first byte that is not part of well-formed UTF-8, or npos.
size_t invalid_utf8_at(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (static_cast<unsigned char>(text[i]) < 0x80) {  // ASCII: the common case, byte by byte
      ++i;
      continue;
    }
    size_t len = utf8_char_length(text, i);
    if (len == 0) return i;
    i += len;
  }
  return std::string::npos;
}

/// A hint for yaml-cpp's terse messages about the usual mistakes.
std::string syntax_hint(const std::string& message) {
  if (message.find("end of") != std::string::npos ||
      message.find("illegal map value") != std::string::npos ||
      message.find("block") != std::string::npos) {
    return "check the indentation; quote values that contain `: `, ` #`, `{` or `[` (e.g. a "
           "`func:` line)";
  }
  return {};
}

/// Sees only where a second document starts, and stops there.
struct FirstEvent : YAML::EventHandler {
  YAML::Mark mark = YAML::Mark::null_mark();
  void OnDocumentStart(const YAML::Mark& m) override {
    mark = m;
    throw StopParsing{};
  }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&)
      override {}
  void OnSequenceStart(
      const YAML::Mark&,
      const std::string&,
      YAML::anchor_t,
      YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value)
      override {}
  void OnMapEnd() override {}
};

/// The file's text is within the size limit and UTF-8 without NUL bytes;
/// false after a diagnostic.
bool check_text(const SourceFile& file, int file_id, Diagnostics& diags, const YamlLimits& limits) {
  if (file.text().size() > limits.max_bytes) {
    diags.error(
        Span{file_id, 0, 0, 1},
        fmt::format(
            "file is too large: structop IDL files are limited to {} bytes",
            limits.max_bytes),
        "split the IDL into several files with `include:`");
    return false;
  }
  if (file.text().find('\0') != std::string::npos) {
    diags.error(
        file.span_at(file_id, file.text().find('\0')),
        "file contains a NUL byte; an IDL file must be UTF-8 text");
    return false;
  }
  if (size_t bad = invalid_utf8_at(file.text()); bad != std::string::npos) {
    diags.error(
        file.span_at(file_id, bad),
        fmt::format(
            "file is not valid UTF-8 (byte 0x{:02X}); an IDL file must be UTF-8 text",
            static_cast<unsigned char>(file.text()[bad])),
        "save the file as UTF-8");
    return false;
  }
  return true;
}

/// Where yaml-cpp's exception points (the file's start when it has no mark).
Span span_of_error(const SourceFile& file, int file_id, const YAML::Mark& mark) {
  return mark.is_null() || mark.pos < 0
             ? Span{file_id, 0, 0, 1}
             : file.span_at(file_id, std::min(static_cast<size_t>(mark.pos), file.text().size()));
}

/// Builds the first document's tree into `out`; reports a second document.
/// Throws what yaml-cpp and the builder throw.
bool parse_documents(
    const SourceFile& file,
    int file_id,
    Diagnostics& diags,
    YamlDocument* out,
    const YamlLimits& limits) {
  std::istringstream in(file.text());
  TreeBuilder builder(file, file_id, diags, *out, limits);
  YAML::Parser parser(in);
  if (!parser.HandleNextDocument(builder)) {
    diags.error(
        Span{file_id, 0, 0, 1},
        "file is empty",
        "an IDL file needs at least `namespace: NAME`");
    return false;
  }
  // A second document is an error; look only at where it starts.
  FirstEvent second;
  try {
    parser.HandleNextDocument(second);
  } catch (const StopParsing&) {
    diags.error(
        second.mark.pos >= 0 ? file.span_at(file_id, static_cast<size_t>(second.mark.pos))
                             : Span{file_id, 0, 0, 1},
        "file contains more than one YAML document",
        "remove the `---` separator; put each IDL in its own file");
  }
  return true;
}

}  // namespace

bool load_yaml(
    const SourceManager& sources,
    int file_id,
    Diagnostics& diags,
    YamlDocument* out,
    const YamlLimits& limits) {
  const SourceFile& file = sources.file(file_id);
  *out = YamlDocument{};
  if (!check_text(file, file_id, diags, limits)) return false;
  // About one node per 24 bytes of IDL (the corpus of ATen's ops has one per
  // 29): reserving avoids regrowing, and copying, the node array; pages that
  // are never used are never touched.
  const size_t expected_nodes = std::min(limits.max_nodes, file.text().size() / 24 + 8);
  out->nodes.reserve(expected_nodes);
  out->child_index.reserve(expected_nodes);
  try {
    if (!parse_documents(file, file_id, diags, out, limits)) return false;
  } catch (const StopParsing&) {
    return false;
  } catch (const YAML::DeepRecursion& e) {
    diags.error(
        span_of_error(file, file_id, e.mark),
        fmt::format("YAML nesting is too deep (more than {} levels)", e.depth() - 1),
        "an IDL file needs only a few levels of nesting");
    return false;
  } catch (const YAML::Exception& e) {
    std::string msg = e.msg;
    diags.error(
        span_of_error(file, file_id, e.mark),
        fmt::format("invalid YAML: {}", msg),
        syntax_hint(msg));
    return false;
  }
  return out->root >= 0;
}

const char* describe(const YamlNode& node) {
  switch (node.kind) {
    case YamlNode::Kind::Null:
      return "empty";
    case YamlNode::Kind::Scalar:
      return "a scalar";
    case YamlNode::Kind::Sequence:
      return "a list";
    case YamlNode::Kind::Mapping:
      return "a mapping";
  }
  return "a value";
}

}  // namespace structop
