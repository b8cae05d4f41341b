// A set of names with a number each, in one flat table: the checkers look up
// several names per op in sets of thousands (ATen's 2,500 ops), where a node
// per name (std::unordered_map) costs an allocation to build, a cache miss
// to find and a free to destroy.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string_view>
#include <vector>

namespace structop {

/// Open addressing over string views: the viewed characters must outlive
/// the index (the model's or a caller's strings). Entries are never removed.
class NameIndex {
 public:
  /// Room for `expected` names without growing.
  explicit NameIndex(size_t expected = 0) { rehash(expected); }

  /// The value stored for `name` (which may be changed), inserting `value`
  /// when absent; and whether it was inserted.
  std::pair<uint32_t&, bool> insert(std::string_view name, uint32_t value) {
    if (2 * (size_ + 1) > table_.size()) rehash(2 * (size_ + 1));
    const uint64_t h = hash(name);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      Entry& e = table_[i];
      if (!e.used) {
        e = Entry{name, h, value, true};
        ++size_;
        return {e.value, true};
      }
      if (e.hash == h && e.name == name) return {e.value, false};
    }
  }

  /// The value stored for `name`, or null.
  const uint32_t* find(std::string_view name) const {
    const uint64_t h = hash(name);
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Entry& e = table_[i];
      if (!e.used) return nullptr;
      if (e.hash == h && e.name == name) return &e.value;
    }
  }

  bool contains(std::string_view name) const { return find(name) != nullptr; }
  size_t size() const { return size_; }

 private:
  struct Entry {
    std::string_view name;
    uint64_t hash = 0;
    uint32_t value = 0;
    bool used = false;
  };

  // (A byte-at-a-time hash such as FNV-1a is a chain of 25 multiplies for an
  // ATen op's name; this one takes 8 bytes a step.)
  static uint64_t hash(std::string_view s) { return std::hash<std::string_view>{}(s); }

  // A power of two at least twice `count` (and 8), keeping the entries.
  void rehash(size_t count) {
    size_t capacity = 8;
    while (capacity < 2 * count) capacity *= 2;
    if (capacity <= table_.size()) return;
    std::vector<Entry> old;
    old.swap(table_);
    table_.resize(capacity);
    mask_ = capacity - 1;
    for (const Entry& e : old) {
      if (!e.used) continue;
      size_t i = e.hash & mask_;
      while (table_[i].used) i = (i + 1) & mask_;
      table_[i] = e;
    }
  }

  std::vector<Entry> table_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

/// Copies of names for a NameIndex to view, a few kilobytes per allocation.
class NameArena {
 public:
  /// A copy of `s` that lives as long as the arena.
  std::string_view keep(std::string_view s) {
    if (s.size() > room_) {
      room_ = std::max(kBlock, s.size());
      blocks_.push_back(std::make_unique<char[]>(room_));
      next_ = blocks_.back().get();
    }
    char* copy = next_;
    if (!s.empty()) std::memcpy(copy, s.data(), s.size());
    next_ += s.size();
    room_ -= s.size();
    return {copy, s.size()};
  }

 private:
  static constexpr size_t kBlock = 16384;
  std::vector<std::unique_ptr<char[]>> blocks_;
  char* next_ = nullptr;
  size_t room_ = 0;
};

}  // namespace structop
