// A small JSON value with insertion-ordered objects and a deterministic
// printer, for `--emit json`.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace structop {

class Json {
 public:
  enum class Kind { Null, Bool, Int, String, Array, Object };

  Json() = default;
  Json(bool b) : kind_(Kind::Bool), bool_(b) {}                        // NOLINT
  Json(int64_t i) : kind_(Kind::Int), int_(i) {}                       // NOLINT
  Json(int i) : kind_(Kind::Int), int_(i) {}                           // NOLINT
  Json(size_t i) : kind_(Kind::Int), int_(static_cast<int64_t>(i)) {}  // NOLINT
  Json(std::string s) : kind_(Kind::String), string_(std::move(s)) {}  // NOLINT
  Json(const char* s) : kind_(Kind::String), string_(s) {}             // NOLINT

  static Json array() {
    Json j;
    j.kind_ = Kind::Array;
    return j;
  }
  static Json object() {
    Json j;
    j.kind_ = Kind::Object;
    return j;
  }

  /// Appends to an array.
  Json& push(Json value) {
    items_.emplace_back(std::string(), std::move(value));
    return *this;
  }
  /// Adds a key to an object (keys keep insertion order).
  Json& set(std::string key, Json value) {
    items_.emplace_back(std::move(key), std::move(value));
    return *this;
  }

  /// Two-space indented text, ending with a newline.
  std::string dump() const;

 private:
  void dump_to(std::string& out, int indent) const;

  Kind kind_ = Kind::Null;
  bool bool_ = false;
  int64_t int_ = 0;
  std::string string_;
  std::vector<std::pair<std::string, Json>> items_;
};

}  // namespace structop
