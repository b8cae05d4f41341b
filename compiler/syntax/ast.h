// The syntax tree of one IDL file, as written: names are not resolved yet and
// every piece keeps its Span. Produced by load/idl_reader and the func parser,
// consumed by check/resolver.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/source.h"

namespace structop::syntax {

/// A name as written, with its location.
struct Name {
  std::string text;
  Span span;
};

/// A schema alias annotation: `(a)`, `(a!)`, `(a -> *)`, `(a|b)`, `(a! -> a|b)`.
struct AliasAnnotation {
  std::vector<std::string> before;  // alias sets before `->`
  std::vector<std::string> after;   // after `->` (empty if no arrow)
  bool is_write = false;            // `!`
  bool has_arrow = false;
};

/// A type's alias annotation, or null: shared, never changed after parsing,
/// so a copied type (the model's, each lowered slot's) copies no sets.
using AliasRef = std::shared_ptr<const AliasAnnotation>;

/// One type suffix, applied left to right: `Tensor?[]` is Optional then List.
struct TypeSuffix {
  enum class Kind { Optional, List };
  Kind kind = Kind::List;
  /// For List: the fixed size of `T[N]`, or -1 for `T[]`.
  int64_t size = -1;
  /// An alias annotation written after `[]` (`Tensor(a)[](b)`), rare.
  AliasRef alias;
};

/// A type's suffixes, in order: up to two in place (`Tensor?[]`), more on
/// the heap. A type is copied into the model and into each lowered slot;
/// this way a copy allocates nothing.
class Suffixes {
 public:
  // Copies and moves take every member as it is, without a branch per
  // suffix: the places a suffix does not use hold no alias (push_back moves
  // them to the heap, pop_back and clear reset them), so copying them is
  // harmless, and a type is copied or moved several times per parameter.
  Suffixes() = default;
  Suffixes(const Suffixes& other)
      : in_place_{other.in_place_[0], other.in_place_[1]}, heap_(other.heap_), size_(other.size_) {}
  Suffixes(Suffixes&& other) noexcept
      : in_place_{std::move(other.in_place_[0]), std::move(other.in_place_[1])},
        heap_(std::move(other.heap_)),
        size_(std::exchange(other.size_, 0)) {}
  Suffixes& operator=(const Suffixes& other) {
    if (this == &other) return *this;
    for (size_t i = 0; i < kInPlace; ++i) in_place_[i] = other.in_place_[i];
    heap_ = other.heap_;
    size_ = other.size_;
    return *this;
  }
  Suffixes& operator=(Suffixes&& other) noexcept {
    if (this == &other) return *this;
    for (size_t i = 0; i < kInPlace; ++i) in_place_[i] = std::move(other.in_place_[i]);
    heap_ = std::move(other.heap_);
    other.heap_.clear();
    size_ = std::exchange(other.size_, 0);
    return *this;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const TypeSuffix* begin() const { return data(); }
  const TypeSuffix* end() const { return data() + size_; }
  TypeSuffix* begin() { return data(); }
  TypeSuffix* end() { return data() + size_; }
  const TypeSuffix& operator[](size_t i) const { return data()[i]; }
  TypeSuffix& operator[](size_t i) { return data()[i]; }
  const TypeSuffix& front() const { return data()[0]; }
  const TypeSuffix& back() const { return data()[size_ - 1]; }
  TypeSuffix& back() { return data()[size_ - 1]; }

  void push_back(TypeSuffix s) {
    if (size_ < kInPlace) {
      in_place_[size_++] = std::move(s);
      return;
    }
    if (size_ == kInPlace) {  // from here on all of them live on the heap
      heap_.reserve(2 * kInPlace);
      for (TypeSuffix& t : in_place_) heap_.push_back(std::move(t));
    }
    heap_.push_back(std::move(s));
    ++size_;
  }
  void pop_back() {
    if (size_ <= kInPlace) {
      in_place_[--size_] = TypeSuffix{};
      return;
    }
    heap_.pop_back();
    if (--size_ == kInPlace) {
      for (size_t i = 0; i < kInPlace; ++i) in_place_[i] = std::move(heap_[i]);
      heap_.clear();
    }
  }
  void clear() {
    for (TypeSuffix& t : in_place_) t = TypeSuffix{};
    heap_.clear();
    size_ = 0;
  }

 private:
  static constexpr size_t kInPlace = 2;
  static_assert(kInPlace == 2, "the constructors above name each place");
  const TypeSuffix* data() const { return size_ <= kInPlace ? in_place_ : heap_.data(); }
  TypeSuffix* data() { return size_ <= kInPlace ? in_place_ : heap_.data(); }

  TypeSuffix in_place_[kInPlace];
  std::vector<TypeSuffix> heap_;  // all of them, when there are more than kInPlace
  size_t size_ = 0;
};

/// A type as written in a schema or a record field: `Tensor(a!)`, `int[2]`,
/// `float?`, `MaskType`, `WeightCfg`.
struct TypeExpr {
  std::string base;
  Span span;  // the whole type
  AliasRef alias;
  Suffixes suffixes;
};

/// A default value in schema literal syntax. `text` keeps the spelling (the
/// schema printer reuses it so torch parses exactly what the user wrote).
/// `{name: value, ...}` (Kind::Record) is structop's own: a record default
/// that sets some fields; it never reaches a schema (its leaves do).
struct Literal {
  enum class Kind { None, Bool, Int, Float, String, Identifier, List, Record };

  Kind kind = Kind::None;
  std::string text;  // source spelling, e.g. `1e-05`, `"a\"b"`, `[0,1]`
  bool bool_value = false;
  int64_t int_value = 0;
  double float_value = 0;
  std::string string_value;  // decoded string, or the identifier
  std::vector<Literal> items;
  /// Kind::Record: the field each item sets, parallel to `items`.
  std::vector<Name> keys;
  Span span;
};

/// One parameter of a `func:` signature.
struct Param {
  TypeExpr type;
  Name name;
  /// Null without a default. (A pointer: most parameters have none, and a
  /// Literal is large; ATen's 2,500 ops have about 20,000 parameters.)
  std::unique_ptr<Literal> default_value;
  bool kwarg_only = false;
};

/// One return of a `func:` signature; `name` may be empty.
struct Return {
  TypeExpr type;
  Name name;
};

/// A parsed `func:` line: `name[.overload](params) -> returns`.
struct FuncSig {
  Name name;
  Name overload;  // empty text if none
  std::vector<Param> params;
  std::vector<Return> returns;
  Span span;
};

struct EnumDecl {
  Name name;
  std::vector<Name> values;
  std::string doc;
  /// The reader already reported a problem in this declaration (e.g. a
  /// misspelled `values:` key); the checker does not report it as empty.
  bool incomplete = false;
};

struct FieldDecl {
  Name name;
  TypeExpr type;
  std::optional<Literal> default_value;
  std::string doc;
  /// `schema_name:` (long form): the leaf's lowered name, pinned.
  std::optional<Name> schema_name;
  /// The default was a quoted YAML scalar in long form (`default: "x"`), so a
  /// str field takes it as the string itself.
  bool default_is_yaml_string = false;
  /// `dynamic: true` (long form): the value varies per call; where it was written.
  std::optional<Span> dynamic;
};

struct RecordDecl {
  Name name;
  std::vector<FieldDecl> fields;
  std::string doc;
  /// The reader already reported a problem in this declaration (a field it
  /// could not read, a misspelled `fields:` key...); the checker neither
  /// reports it as empty nor lets ops use it.
  bool incomplete = false;
};

/// `meta:` of an op.
struct MetaDecl {
  enum class Kind { Identity, Names, Custom };
  Kind kind = Kind::Identity;
  std::vector<Name> names;
  Span span;
};

struct OpDecl {
  FuncSig sig;
  Span func_span;
  std::vector<Name> mutates;
  /// `dynamic:`: int and float parameters whose values vary per call.
  std::vector<Name> dynamic;
  MetaDecl meta;
  bool backward = false;
  std::vector<Name> dispatch;
  std::vector<Name> tags;
  /// Free-form strings for tools (`annotations:`), in IDL order.
  std::vector<std::string> annotations;
  std::string doc;
};

/// One `*.ops.yaml` file.
struct IdlFile {
  int file_id = -1;
  Name namespace_;
  std::optional<Name> cpp_namespace;
  std::vector<Name> includes;
  std::vector<EnumDecl> enums;
  std::vector<RecordDecl> records;
  std::vector<OpDecl> ops;
  std::string doc;  // the file's top-level `doc:`
};

}  // namespace structop::syntax
