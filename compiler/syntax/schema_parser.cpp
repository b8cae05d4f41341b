#include "syntax/schema_parser.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

#include <fmt/format.h>

namespace structop::syntax {
namespace {

enum class Tok { End, Ident, Number, String, Punct, Arrow, Error };

struct Token {
  Tok kind = Tok::End;
  size_t begin = 0;
  size_t end = 0;
  char punct = 0;  // for Tok::Punct
};

// ASCII only, without the locale lookups of <cctype>: the schema grammar is ASCII.
constexpr bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
constexpr bool is_ident_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
constexpr bool is_ident_char(char c) {
  return is_ident_start(c) || is_digit(c);
}
constexpr bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/// Recursive-descent parser over a small hand-written lexer. The first error
/// stops the parse of this text (the rest of the file is still checked).
class SchemaParser {
 public:
  /// `context` names what is parsed (`field \`Cfg.x\``) and prefixes messages.
  SchemaParser(
      std::string_view text,
      const TextOrigin& origin,
      Diagnostics& diags,
      std::string_view context = {})
      : text_(text), origin_(origin), diags_(diags), context_(context) {
    advance();
  }

  bool ok() const { return !failed_; }

  std::optional<FuncSig> func() {
    FuncSig sig;
    sig.span = origin_.at(0, text_.size());
    if (!expect_ident("an operator name", &sig.name)) return std::nullopt;
    if (is_punct('.')) {
      advance();
      if (!expect_ident("an overload name after `.`", &sig.overload)) return std::nullopt;
    }
    // Errors from here on name the op; spelled only if one is reported.
    op_name_ = &sig.name.text;
    op_overload_ = &sig.overload.text;
    if (!expect_punct('(', "`(` after the operator name")) return std::nullopt;
    if (!params(&sig)) return std::nullopt;
    if (cur_.kind != Tok::Arrow) {
      fail(
          cur_,
          "expected `->` and the return types after `)`",
          "an op without results is written `-> ()`");
      return std::nullopt;
    }
    advance();
    if (!returns(&sig)) return std::nullopt;
    if (!at_end("after the return types")) return std::nullopt;
    return sig;
  }

  bool field_spec(TypeExpr* type, std::optional<Literal>* default_value) {
    if (!parse_type(type)) return false;
    if (is_punct('=')) {
      advance();
      Literal lit;
      if (!literal(&lit)) return false;
      *default_value = std::move(lit);
    }
    return at_end("after the field type");
  }

  std::optional<Literal> lone_literal() {
    Literal lit;
    if (!literal(&lit) || !at_end("after the default value")) return std::nullopt;
    return lit;
  }

 private:
  // ---- lexer ---------------------------------------------------------------

  void advance() {
    prev_end_ = cur_.end;
    size_t i = pos_;
    while (i < text_.size() && is_space(text_[i])) ++i;
    Token t;
    t.begin = i;
    if (i >= text_.size()) {
      t.kind = Tok::End;
      t.end = i;
    } else if (is_ident_start(text_[i])) {
      while (i < text_.size() && is_ident_char(text_[i])) ++i;
      t.kind = Tok::Ident;
      t.end = i;
    } else if (
        is_digit(text_[i]) || (text_[i] == '-' && i + 1 < text_.size() &&
                               (is_digit(text_[i + 1]) || text_[i + 1] == '.'))) {
      t.end = scan_number(i);
      t.kind = Tok::Number;
    } else if (text_[i] == '.' && i + 1 < text_.size() && is_digit(text_[i + 1])) {
      t.end = scan_number(i);
      t.kind = Tok::Number;
    } else if (text_[i] == '"' || text_[i] == '\'') {
      t.kind = Tok::String;
      t.end = scan_string(i);
      if (t.end == std::string_view::npos) {
        t.kind = Tok::Error;
        t.end = text_.size();
      }
    } else if (text_[i] == '-' && i + 1 < text_.size() && text_[i + 1] == '>') {
      t.kind = Tok::Arrow;
      t.end = i + 2;
    } else {
      t.kind = Tok::Punct;
      t.punct = text_[i];
      // A non-ASCII character is one (bad) token, not a piece of one.
      t.end = i + std::max<size_t>(1, utf8_char_length(text_, i));
    }
    cur_ = t;
    pos_ = t.end;
  }

  size_t scan_number(size_t i) const {
    if (text_[i] == '-') ++i;
    while (i < text_.size() && is_digit(text_[i])) ++i;
    if (i < text_.size() && text_[i] == '.') {
      ++i;
      while (i < text_.size() && is_digit(text_[i])) ++i;
    }
    if (i < text_.size() && (text_[i] == 'e' || text_[i] == 'E')) {
      size_t j = i + 1;
      if (j < text_.size() && (text_[j] == '+' || text_[j] == '-')) ++j;
      if (j < text_.size() && is_digit(text_[j])) {
        while (j < text_.size() && is_digit(text_[j])) ++j;
        i = j;
      }
    }
    // Glued letters (`1x`, `1.5f`) make the whole thing one bad token.
    while (i < text_.size() && is_ident_char(text_[i])) ++i;
    return i;
  }

  size_t scan_string(size_t i) const {
    char quote = text_[i++];
    while (i < text_.size()) {
      if (text_[i] == '\\') {
        i += 2;
      } else if (text_[i] == quote) {
        return i + 1;
      } else {
        ++i;
      }
    }
    return std::string_view::npos;
  }

  // ---- helpers -------------------------------------------------------------

  std::string_view spelling(const Token& t) const { return text_.substr(t.begin, t.end - t.begin); }
  Span span_of(const Token& t) const {
    return origin_.at(t.begin, std::max<size_t>(1, t.end - t.begin));
  }
  /// The commas from the current token to the end of the text (found with
  /// `find`, which skips the text between them faster than a byte-wise count).
  size_t commas_left() const {
    size_t n = 0;
    for (size_t i = text_.find(',', cur_.begin); i != std::string_view::npos;
         i = text_.find(',', i + 1))
      ++n;
    return n;
  }
  bool is_punct(char c) const { return cur_.kind == Tok::Punct && cur_.punct == c; }
  bool is_ident(std::string_view s) const { return cur_.kind == Tok::Ident && spelling(cur_) == s; }

  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Tok::End:
        return "end of text";
      case Tok::Error:
        return "an unterminated string";
      default:
        return fmt::format("`{}`", spelling(t));
    }
  }

  bool fail(const Token& at, std::string message, std::string hint = {}) {
    if (!context_.empty()) {
      message = context_ + ": " + message;
    } else if (op_name_) {
      message = fmt::format(
          "op `{}{}{}`: {}",
          *op_name_,
          op_overload_->empty() ? "" : ".",
          *op_overload_,
          message);
    }
    if (!failed_) diags_.error(span_of(at), std::move(message), std::move(hint));
    failed_ = true;
    return false;
  }

  bool expect_punct(char c, const char* what) {
    if (!is_punct(c)) return fail(cur_, fmt::format("expected {}, found {}", what, describe(cur_)));
    advance();
    return true;
  }

  bool expect_ident(const char* what, Name* out) {
    if (cur_.kind != Tok::Ident)
      return fail(cur_, fmt::format("expected {}, found {}", what, describe(cur_)));
    out->text.assign(spelling(cur_));
    out->span = span_of(cur_);
    advance();
    return true;
  }

  bool at_end(const char* where) {
    if (cur_.kind == Tok::End) return true;
    return fail(cur_, fmt::format("unexpected {} {}", describe(cur_), where));
  }

  // ---- grammar -------------------------------------------------------------

  bool params(FuncSig* sig) {
    if (is_punct(')')) {
      advance();
      return true;
    }
    // At most one parameter more than the commas left (a list default or
    // the returns may have some too): one allocation instead of regrowing.
    sig->params.reserve(commas_left() + 1);
    bool kwarg_only = false;
    while (true) {
      if (is_punct('*')) {
        if (kwarg_only) return fail(cur_, "`*` appears twice in the parameter list");
        kwarg_only = true;
        Token star = cur_;
        advance();
        if (is_punct(')')) return fail(star, "`*` must be followed by keyword-only parameters");
      } else {
        // Parsed in place: a Param is large, and moving it in costs as
        // much as some of its parse. (On error the signature is dropped.)
        Param& p = sig->params.emplace_back();
        p.kwarg_only = kwarg_only;
        if (!parse_type(&p.type)) return false;
        if (cur_.kind != Tok::Ident) {
          return fail(
              cur_,
              fmt::format(
                  "expected a parameter name after type `{}`, found {}",
                  to_schema(p.type),
                  describe(cur_)),
              "parameters are written `TYPE name`, e.g. `Tensor x`");
        }
        expect_ident("a parameter name", &p.name);
        if (is_punct('=')) {
          advance();
          p.default_value = std::make_unique<Literal>();
          if (!literal(p.default_value.get())) return false;
        }
      }
      if (is_punct(',')) {
        advance();
        continue;
      }
      if (is_punct(')')) {
        advance();
        return true;
      }
      return fail(
          cur_,
          fmt::format("expected `,` or `)` in the parameter list, found {}", describe(cur_)));
    }
  }

  bool returns(FuncSig* sig) {
    if (!is_punct('(')) return one_return(sig);
    advance();
    if (is_punct(')')) {
      advance();
      return true;
    }
    sig->returns.reserve(commas_left() + 1);
    while (true) {
      if (!one_return(sig)) return false;
      if (is_punct(',')) {
        advance();
        continue;
      }
      if (is_punct(')')) {
        advance();
        return true;
      }
      return fail(
          cur_,
          fmt::format("expected `,` or `)` in the return list, found {}", describe(cur_)));
    }
  }

  bool one_return(FuncSig* sig) {
    Return& r = sig->returns.emplace_back();  // in place, as a parameter
    if (!parse_type(&r.type)) return false;
    if (cur_.kind == Tok::Ident) expect_ident("a return name", &r.name);
    return true;
  }

  bool parse_type(TypeExpr* type) {
    if (cur_.kind != Tok::Ident) {
      if (is_punct('(')) {
        return fail(cur_, "tuple types are not supported", "use a list `T[]` or separate fields");
      }
      if (is_punct('{')) {
        return fail(cur_, "dict types are not supported", "use separate fields or a record");
      }
      return fail(cur_, fmt::format("expected a type, found {}", describe(cur_)));
    }
    size_t begin = cur_.begin;
    Token base = cur_;
    type->base.assign(spelling(cur_));
    advance();
    const std::string_view name = type->base;
    if (is_punct('(') && (name == "Dict" || name == "dict")) {
      return fail(base, "dict types are not supported", "use separate fields or a record");
    }
    if (is_punct('(') && (name == "Tuple" || name == "tuple")) {
      return fail(base, "tuple types are not supported", "use a list `T[]` or separate fields");
    }
    if (is_punct('(')) {
      AliasAnnotation a;
      if (!alias(&a)) return false;
      type->alias = std::make_shared<const AliasAnnotation>(std::move(a));
    }
    while (true) {
      if (is_punct('?')) {
        advance();
        type->suffixes.push_back({TypeSuffix::Kind::Optional, -1, nullptr});
      } else if (is_punct('[')) {
        advance();
        TypeSuffix s{TypeSuffix::Kind::List, -1, nullptr};
        if (cur_.kind == Tok::Number) {
          std::string_view n = spelling(cur_);
          if (n.find_first_not_of("0123456789") != std::string_view::npos || n.size() > 9) {
            return fail(
                cur_,
                fmt::format("list size must be a non-negative integer, found `{}`", n));
          }
          s.size = std::strtoll(std::string(n).c_str(), nullptr, 10);
          advance();
        }
        if (!expect_punct(']', "`]`")) return false;
        if (is_punct('(')) {
          AliasAnnotation a;
          if (!alias(&a)) return false;
          s.alias = std::make_shared<const AliasAnnotation>(std::move(a));
        }
        type->suffixes.push_back(std::move(s));
      } else {
        break;
      }
    }
    type->span = origin_.at(begin, std::max<size_t>(1, prev_end_ - begin));
    return true;
  }

  bool alias_sets(std::vector<std::string>* sets) {
    while (true) {
      if (cur_.kind == Tok::Ident) {
        sets->emplace_back(spelling(cur_));
      } else if (is_punct('*')) {
        sets->emplace_back("*");
      } else {
        return fail(
            cur_,
            fmt::format("expected an alias set name, found {}", describe(cur_)),
            "alias annotations look like `Tensor(a!)` or `Tensor(a -> *)`");
      }
      advance();
      if (!is_punct('|')) return true;
      advance();
    }
  }

  bool alias(AliasAnnotation* a) {
    advance();  // (
    if (!alias_sets(&a->before)) return false;
    if (is_punct('!')) {
      a->is_write = true;
      advance();
    }
    if (cur_.kind == Tok::Arrow) {
      a->has_arrow = true;
      advance();
      if (!alias_sets(&a->after)) return false;
    }
    return expect_punct(')', "`)` to close the alias annotation");
  }

  bool literal(Literal* lit, int depth = 0) {
    lit->span = span_of(cur_);
    size_t begin = cur_.begin;
    switch (cur_.kind) {
      case Tok::Ident: {
        std::string_view s = spelling(cur_);
        if (s == "None") {
          lit->kind = Literal::Kind::None;
        } else if (s == "True" || s == "False") {
          lit->kind = Literal::Kind::Bool;
          lit->bool_value = s == "True";
        } else {
          lit->kind = Literal::Kind::Identifier;
          lit->string_value = std::string(s);
        }
        advance();
        break;
      }
      case Tok::Number:
        if (!number(lit)) return false;
        advance();
        break;
      case Tok::String:
        if (!decode_string(cur_, &lit->string_value)) return false;
        lit->kind = Literal::Kind::String;
        advance();
        break;
      case Tok::Error:
        return fail(cur_, "unterminated string literal", "close it with the same quote");
      default:
        if (is_punct('[')) {
          lit->kind = Literal::Kind::List;
          advance();
          if (!is_punct(']')) {
            while (true) {
              // Checked before descending, so `[[[[...` cannot recurse deeply.
              if (is_punct('[')) return fail(cur_, "nested lists are not valid default values");
              Literal item;
              if (!literal(&item)) return false;
              lit->items.push_back(std::move(item));
              if (is_punct(',')) {
                advance();
                continue;
              }
              if (!is_punct(']')) {
                return fail(
                    cur_,
                    fmt::format("expected `,` or `]` in the list, found {}", describe(cur_)));
              }
              break;
            }
          }
          advance();  // ]
          break;
        }
        if (is_punct('{')) {
          if (!record_literal(lit, depth)) return false;
          break;
        }
        return fail(
            cur_,
            fmt::format("expected a default value, found {}", describe(cur_)),
            "defaults are schema literals: None, True, 1, -2, 1.5, 1e-5, \"text\", [1, 2], or "
            "`{field: value, ...}` for a record");
    }
    lit->text.assign(text_.substr(begin, prev_end_ - begin));
    lit->span = origin_.at(begin, std::max<size_t>(1, prev_end_ - begin));
    return true;
  }

  /// `{name: value, ...}` at `{`: a record default (checked against the
  /// record by the resolver). Nesting is bounded like records themselves, so
  /// `{a: {a: {a: ...` cannot recurse without limit.
  bool record_literal(Literal* lit, int depth) {
    constexpr int kMaxDepth = 100;
    if (depth >= kMaxDepth) {
      return fail(
          cur_,
          fmt::format("record defaults nest more than {} levels deep here", kMaxDepth),
          "records nest at most that deep too");
    }
    lit->kind = Literal::Kind::Record;
    advance();  // {
    if (is_punct('}')) {
      advance();
      return true;
    }
    while (true) {
      Name key;
      if (cur_.kind != Tok::Ident) {
        return fail(
            cur_,
            fmt::format("expected a field name in the record default, found {}", describe(cur_)),
            "a record default is written `{field: value, ...}`");
      }
      expect_ident("a field name", &key);
      if (!is_punct(':')) {
        return fail(
            cur_,
            fmt::format("expected `:` after field `{}`, found {}", key.text, describe(cur_)),
            "a record default is written `{field: value, ...}`");
      }
      advance();
      Literal item;
      if (!literal(&item, depth + 1)) return false;
      lit->keys.push_back(std::move(key));
      lit->items.push_back(std::move(item));
      if (is_punct(',')) {
        advance();
        continue;
      }
      if (!is_punct('}')) {
        return fail(
            cur_,
            fmt::format("expected `,` or `}}` in the record default, found {}", describe(cur_)));
      }
      advance();  // }
      return true;
    }
  }

  bool number(Literal* lit) {
    std::string s(spelling(cur_));
    bool is_float = s.find_first_of(".eE") != std::string::npos;
    char* end = nullptr;
    errno = 0;
    if (is_float) {
      lit->kind = Literal::Kind::Float;
      lit->float_value = std::strtod(s.c_str(), &end);
    } else {
      lit->kind = Literal::Kind::Int;
      lit->int_value = std::strtoll(s.c_str(), &end, 10);
    }
    if (end != s.c_str() + s.size()) {
      return fail(
          cur_,
          fmt::format("`{}` is not a number", s),
          "numbers look like 1, -2, 1.5 or 1e-5");
    }
    if (errno == ERANGE) return fail(cur_, fmt::format("number `{}` is out of range", s));
    // `010`: octal 8 in C++, 10 for torch, an error in Python.
    const size_t digits = s[0] == '-' || s[0] == '+' ? 1 : 0;
    if (!is_float && s.size() > digits + 1 && s[digits] == '0') {
      const size_t nonzero = s.find_first_not_of('0', digits);
      const std::string plain = nonzero == std::string::npos
                                    ? "0"
                                    : s.substr(0, digits) + s.substr(nonzero);
      return fail(
          cur_,
          fmt::format("integer `{}` has a leading zero", s),
          fmt::format("write `{}`: C++ reads a leading zero as octal, Python refuses it", plain));
    }
    return true;
  }

  bool decode_string(const Token& t, std::string* out) {
    std::string_view body = text_.substr(t.begin + 1, t.end - t.begin - 2);
    for (size_t i = 0; i < body.size(); ++i) {
      char c = body[i];
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (++i >= body.size()) break;
      switch (body[i]) {
        case 'n':
          *out += '\n';
          break;
        case 't':
          *out += '\t';
          break;
        case 'r':
          *out += '\r';
          break;
        case 'a':
          *out += '\a';
          break;
        case 'b':
          *out += '\b';
          break;
        case 'f':
          *out += '\f';
          break;
        case 'v':
          *out += '\v';
          break;
        case '\\':
        case '\'':
        case '"':
          *out += body[i];
          break;
        case '0':
        case '1':
        case '2':
        case '3':
        case '4':
        case '5':
        case '6':
        case '7': {
          // Three octal digits, one byte (torch's lexer: `\015` for CR).
          auto octal = [&](size_t k) {
            return k < body.size() && body[k] >= '0' && body[k] <= '7';
          };
          size_t digits = 1;
          while (digits < 3 && octal(i + digits)) ++digits;
          if (digits < 3 || body[i] > '3') {
            Token at = t;
            at.begin = t.begin + i;
            at.end = at.begin + 1 + digits;
            std::string given(body.substr(i, digits));
            return fail(
                at,
                digits < 3 ? fmt::format("octal escape `\\{}` needs three digits", given)
                           : fmt::format("octal escape `\\{}` is above `\\377`", given),
                digits < 3 ? fmt::format("write `\\{}{}`", std::string(3 - digits, '0'), given)
                           : "an octal escape is one byte, `\\000` to `\\377`");
          }
          *out += static_cast<char>(
              (body[i] - '0') * 64 + (body[i + 1] - '0') * 8 + (body[i + 2] - '0'));
          i += 2;
          break;
        }
        default: {
          Token at = t;
          at.begin = t.begin + 1 + i - 1;
          at.end = at.begin + 2;
          return fail(
              at,
              fmt::format("unsupported escape `\\{}` in string literal", body[i]),
              "supported escapes: \\n \\t \\r \\a \\b \\f \\v \\\\ \\' \\\" and octal `\\015`");
        }
      }
    }
    return true;
  }

  std::string_view text_;
  const TextOrigin& origin_;
  Diagnostics& diags_;
  std::string context_;
  const std::string* op_name_ = nullptr;  // set once `func()` has read the op's name
  const std::string* op_overload_ = nullptr;
  Token cur_;
  size_t pos_ = 0;
  size_t prev_end_ = 0;
  bool failed_ = false;
};

}  // namespace

std::optional<FuncSig> parse_func(
    std::string_view text,
    const TextOrigin& origin,
    Diagnostics& diags) {
  SchemaParser p(text, origin, diags);
  return p.func();
}

bool parse_field_spec(
    std::string_view text,
    const TextOrigin& origin,
    Diagnostics& diags,
    TypeExpr* type,
    std::optional<Literal>* default_value,
    std::string_view context) {
  SchemaParser p(text, origin, diags, context);
  return p.field_spec(type, default_value);
}

std::optional<Literal> parse_literal(
    std::string_view text,
    const TextOrigin& origin,
    Diagnostics& diags,
    std::string_view context) {
  SchemaParser p(text, origin, diags, context);
  return p.lone_literal();
}

}  // namespace structop::syntax
