// What a diagnostic is about ("field `WeightCfg.scale`", "parameter `k` of
// op `attn`"), kept as references and formatted only when a message is
// actually reported: the checker describes every field and parameter it
// looks at, and almost none of them are wrong.
#pragma once

#include <string>

#include <fmt/format.h>

namespace structop {

class Subject {
 public:
  /// field `Record.name`
  static Subject field(const std::string& record, const std::string& name) {
    return {Kind::Field, record, name};
  }
  /// parameter `name` of OWNER (owner e.g. "op `attn`")
  static Subject param(const std::string& name, const std::string& owner) {
    return {Kind::Param, name, owner};
  }
  /// return `name` of OWNER, or "a return of OWNER" when unnamed
  static Subject ret(const std::string& name, const std::string& owner) {
    return {Kind::Return, name, owner};
  }

  std::string str() const {
    switch (kind_) {
      case Kind::Field:
        return fmt::format("field `{}.{}`", a_, b_);
      case Kind::Param:
        return fmt::format("parameter `{}` of {}", a_, b_);
      case Kind::Return:
        return a_.empty() ? fmt::format("a return of {}", b_)
                          : fmt::format("return `{}` of {}", a_, b_);
    }
    return {};
  }

 private:
  enum class Kind { Field, Param, Return };
  Subject(Kind kind, const std::string& a, const std::string& b) : kind_(kind), a_(a), b_(b) {}

  Kind kind_;
  const std::string& a_;
  const std::string& b_;
};

}  // namespace structop

template <>
struct fmt::formatter<structop::Subject> : fmt::formatter<std::string> {
  template <class Context>
  auto format(const structop::Subject& s, Context& ctx) const {
    return fmt::formatter<std::string>::format(s.str(), ctx);
  }
};
