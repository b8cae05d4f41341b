#include "emit/json.h"

#include <fmt/format.h>

#include "base/quote.h"

namespace structop {

void Json::dump_to(std::string& out, int indent) const {
  switch (kind_) {
    case Kind::Null:
      out += "null";
      return;
    case Kind::Bool:
      out += bool_ ? "true" : "false";
      return;
    case Kind::Int:
      out += std::to_string(int_);
      return;
    case Kind::String:
      out += json_string_literal(string_);
      return;
    case Kind::Array:
    case Kind::Object: {
      const bool object = kind_ == Kind::Object;
      if (items_.empty()) {
        out += object ? "{}" : "[]";
        return;
      }
      // Arrays of scalars stay on one line; everything else is one item per line.
      bool flat = !object;
      for (const auto& [k, v] : items_) flat &= v.kind_ != Kind::Array && v.kind_ != Kind::Object;
      out += object ? '{' : '[';
      std::string pad(static_cast<size_t>(indent + 2), ' ');
      for (size_t i = 0; i < items_.size(); ++i) {
        if (i) out += flat ? ", " : ",";
        if (!flat) out += "\n" + pad;
        if (object) out += json_string_literal(items_[i].first) + ": ";
        items_[i].second.dump_to(out, indent + 2);
      }
      if (!flat) out += "\n" + std::string(static_cast<size_t>(indent), ' ');
      out += object ? '}' : ']';
      return;
    }
  }
}

std::string Json::dump() const {
  std::string out;
  dump_to(out, 0);
  return out + "\n";
}

}  // namespace structop
