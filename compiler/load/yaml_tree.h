// Phase 1a: YAML text -> a small tree of nodes that remember where they came
// from. Built from yaml-cpp's event parser (not YAML::Node) so that every key
// and value keeps its line and column, duplicate keys stay visible, and
// aliases never expand (an alias bomb costs nothing).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/diagnostics.h"
#include "base/source.h"

namespace structop {

/// One YAML node. Mappings keep their entries in source order, duplicates included.
struct YamlNode {
  enum class Kind { Null, Scalar, Sequence, Mapping };

  Kind kind = Kind::Null;
  /// Where the node starts; for scalars, the first character of the value
  /// (after an opening quote), `length` wide.
  Span span;
  /// Scalar text, after YAML unquoting and folding.
  std::string value;
  /// The scalar was quoted or a block scalar (so `"1.0"` is not the number 1.0).
  bool quoted = false;
  /// `value` appears byte for byte at `span`, so an offset into `value` is an
  /// offset into the source line (lets the func parser point inside strings).
  bool verbatim = false;
  /// A YAML alias (`*name`), already reported and stored as Null; readers
  /// skip it silently instead of reporting a second, misleading problem.
  bool alias = false;
  /// Where this node's children are in YamlDocument::child_index: sequence
  /// items, or mapping keys and values interleaved (k0, v0, k1, v1...). Use
  /// YamlDocument::children(node).
  uint32_t first_child = 0;
  uint32_t child_count = 0;

  bool is_scalar() const { return kind == Kind::Scalar; }
  bool is_mapping() const { return kind == Kind::Mapping; }
  bool is_sequence() const { return kind == Kind::Sequence; }
  size_t entry_count() const { return child_count / 2; }
};

/// A node's children: indices into YamlDocument::nodes.
class ChildRange {
 public:
  ChildRange(const int* begin, size_t size) : begin_(begin), size_(size) {}
  const int* begin() const { return begin_; }
  const int* end() const { return begin_ + size_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int operator[](size_t i) const { return begin_[i]; }

 private:
  const int* begin_;
  size_t size_;
};

/// A parsed YAML document: a node arena plus the root. Children of all nodes
/// share one index array (one allocation, not one per mapping).
struct YamlDocument {
  std::vector<YamlNode> nodes;
  std::vector<int> child_index;
  int root = -1;

  const YamlNode& node(int index) const { return nodes.at(static_cast<size_t>(index)); }
  ChildRange children(const YamlNode& n) const {
    return {child_index.data() + n.first_child, n.child_count};
  }
  const YamlNode& key(const YamlNode& map, size_t entry) const {
    return node(children(map)[2 * entry]);
  }
  const YamlNode& value(const YamlNode& map, size_t entry) const {
    return node(children(map)[2 * entry + 1]);
  }
};

/// Limits that keep hostile input cheap (time and memory stay bounded). Real
/// IDL files are far below them: all 2,500 ATen ops of PyTorch's
/// native_functions.yaml take 0.5 MiB and about 13,000 nodes.
struct YamlLimits {
  size_t max_bytes = 4u << 20;  // 4 MiB
  size_t max_nodes = 500'000;
};

/// Parses `file_id` (already in `sources`). Reports syntax errors, aliases,
/// several documents and oversize input to `diags`. Returns false when no tree
/// could be built; a tree with reported problems is still returned (so later
/// phases can find more errors) only if parsing itself succeeded.
bool load_yaml(
    const SourceManager& sources,
    int file_id,
    Diagnostics& diags,
    YamlDocument* out,
    const YamlLimits& limits = {});

/// Human-readable kind for messages: "a mapping", "a list", "a string", "empty".
const char* describe(const YamlNode& node);

}  // namespace structop
