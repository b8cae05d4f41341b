// X.ops.h: enums, records, grad records, the C++ call API and the kernel
// declarations. Light by design (kernel sources include it): it pulls in
// structop/runtime.h only, never autograd or the dispatcher. The records and
// enums of included IDL files are not repeated: the header includes the
// headers generated from those files, and checks their fingerprints.
#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "base/diagnostics.h"
#include "check/describe.h"
#include "emit/code_printer.h"
#include "emit/cpp_op.h"
#include "emit/emitters.h"
#include "emit/idl_fingerprint.h"
#include "emit/naming.h"
#include "lang/generated_names.h"
#include "version.h"

namespace structop {
namespace {

/// Emits `namespace a::b {` / `}` only when the namespace changes.
class NamespaceTracker {
 public:
  explicit NamespaceTracker(CodePrinter& p) : p_(p) {}
  void enter(const std::string& ns) {
    if (ns == current_) return;
    leave();
    p_.line(fmt::format("namespace {} {{", ns));
    p_.line();
    current_ = ns;
  }
  /// Closes the namespace; what was printed last must end with a blank line.
  void leave() {
    if (current_.empty()) return;
    p_.line(fmt::format("}}  // namespace {}", current_));
    p_.line();
    current_.clear();
  }

 private:
  CodePrinter& p_;
  std::string current_;
};

/// A `///` comment, one line per line of `doc` (each escaped: comment_text);
/// trailing line breaks are dropped.
std::string doc_comment(std::string_view doc) {
  while (!doc.empty() && doc.back() == '\n') doc.remove_suffix(1);
  if (doc.empty()) return {};
  std::string out;
  size_t start = 0;
  while (true) {
    const size_t end = doc.find('\n', start);
    const std::string line = comment_text(doc.substr(start, end - start));
    out += line.empty() ? "///" : "/// " + line;
    if (end == std::string_view::npos) return out;
    out += '\n';
    start = end + 1;
  }
}

class HeaderEmitter {
 public:
  explicit HeaderEmitter(const EmitInput& in) : in_(in), m_(in.module), types_(in.module), ns_(p_) {
    for (const auto& lo : in.lowered.ops) ops_.emplace_back(m_, lo, types_);
  }

  std::string run() {
    prologue();
    enums();
    records();
    grad_records();
    call_api();
    kernel_declarations();
    if (!ops_.empty()) p_.line();
    ns_.leave();
    // One newline at the end of the file, not a blank line.
    std::string text = p_.str();
    while (text.size() > 1 && text[text.size() - 1] == '\n' && text[text.size() - 2] == '\n')
      text.pop_back();
    return text;
  }

 private:
  void prologue() {
    p_.emit(
        {{"notice", generated_notice(in_.version, in_.source_name)},
         {"ns", m_.namespace_},
         {"stem", m_.stem},
         {"runtime", std::to_string(STRUCTOP_RUNTIME_VERSION_EXPECTED)}},
        R"cc(
          // $notice$
          //
          // Records, enums, grad records, the C++ call API and the kernel declarations
          // of the `$ns$` ops (torch.ops.$ns$.*). Light: include it from kernel sources.
          // The kernels you write are declared in namespace kernels below; their
          // stubs are in $stem$.ops.stubs.cpp (structopc --emit stubs).
          #pragma once
          
          #include <structop/runtime.h>
          
          #include <cstdint>
          #include <string>
          #include <tuple>
          #include <vector>

          STRUCTOP_REQUIRE_RUNTIME_VERSION($runtime$);
        )cc");
    p_.line();
    p_.emit(
        {{"source", comment_text(in_.source_name)},
         {"macro", fingerprint_macro(m_.stem)},
         {"value", fingerprint_literal(idl_fingerprint(m_, -1))}},
        R"cc(
      // Fingerprint of the records and enums of $source$, checked by the
      // headers generated from the IDL files that include it.
      #define $macro$ $value$
    )cc");
    p_.line();
    included_headers();
  }

  static std::string fingerprint_literal(uint64_t value) {
    return fmt::format("0x{:016x}ULL", value);
  }

  // The records and enums of included IDL files come from the headers
  // generated from them (`<stem>.ops.h`, found next to this header or on the
  // include path): one #include per file of this IDL's `include:` (those
  // include theirs), then a check of the fingerprint of every included file,
  // so that headers generated from different versions of one IDL file do not
  // compile together.
  void included_headers() {
    if (m_.includes.empty()) return;
    std::string header = m_.stem + ".ops.h";
    p_.emit(
        {{"source", comment_text(in_.source_name)}},
        R"cc(
      // The records and enums of the IDL files $source$ includes, from the
      // headers generated from those files (structopc FILE.ops.yaml for each).
    )cc");
    for (const auto& inc : m_.includes) {
      if (inc.direct) p_.line(fmt::format("#include \"{}.ops.h\"", inc.stem));
    }
    p_.line();
    p_.emit(R"cc(
      // Those headers must come from the versions of the IDL files this header
      // was generated from.
    )cc");
    for (size_t i = 0; i < m_.includes.size(); ++i) {
      const model::IncludedFile& inc = m_.includes[i];
      std::string idl = std::filesystem::path(inc.path).filename().string();
      std::string included = inc.stem + ".ops.h";
      std::string macro = fingerprint_macro(inc.stem);
      p_.emit(
          {{"macro", macro},
           {"value", fingerprint_literal(idl_fingerprint(m_, static_cast<int>(i)))},
           {"missing",
            cpp_string_literal(fmt::format(
                "{}: {} does not define {}, so it was not generated from {} by this version of "
                "structopc: regenerate it",
                header,
                included,
                macro,
                idl))},
           {"stale",
            cpp_string_literal(fmt::format(
                "{} and {} were generated from different versions of {}: regenerate both from the "
                "current IDL files",
                header,
                included,
                idl))}},
          R"cc(
        #if !defined($macro$)
        #error $missing$
        #elif $macro$ != $value$
        #error $stale$
        #endif
      )cc");
    }
    p_.line();
  }

  void enums() {
    for (const auto& e : m_.enums) {
      if (e.from_include) continue;  // in the header of its own file
      std::string name = api_name(e.name);
      std::vector<std::string> values, quoted;
      for (const auto& v : e.values) {
        values.push_back(api_name(v));
        quoted.push_back(cpp_string_literal(v));
      }
      ns_.enter(e.cpp_namespace);
      p_.emit(
          {{"doc", doc_comment(e.doc)},
           {"name", name},
           {"values", fmt::format("{}", fmt::join(values, ", "))}},
          R"cc(
            $doc$
            enum class $name$ { $values$ };
          )cc");
      p_.line();
      ns_.leave();
      p_.emit(
          {{"qualified", e.cpp_namespace + "::" + name},
           {"type_name", cpp_string_literal(e.name)},
           {"count", std::to_string(e.values.size())},
           {"names", fmt::format("{}", fmt::join(quoted, ", "))}},
          R"cc(
            template <>
            struct structop::EnumTraits<$qualified$> {
              static constexpr const char* type_name = $type_name$;
              static constexpr std::array<c10::string_view, $count$> names{{$names$}};
            };
          )cc");
      p_.line();
      ns_.enter(e.cpp_namespace);
      p_.emit(
          {{"name", name}, {"spellings", quoted_list(e.values)}},
          R"cc(
            /// The IDL spelling ($spellings$); parse with structop::parse_enum<$name$>.
            inline c10::string_view to_string($name$ value) {
              return structop::enum_name(value);
            }
          )cc");
      p_.line();
    }
  }

  void records() {
    for (size_t ri = 0; ri < m_.records.size(); ++ri) {
      const model::Record& r = m_.records[ri];
      if (r.from_include) continue;  // in the header of its own file
      const lower::RecordLayout& layout = in_.lowered.records[ri];
      Code fields;
      for (size_t fi = 0; fi < r.fields.size(); ++fi) {
        const model::Field& f = r.fields[fi];
        const lower::RecordField& lf = layout.fields[fi];
        if (!fields.empty()) fields += "\n";
        std::string doc = doc_comment(f.doc);
        if (!doc.empty()) fields += doc + "\n";
        fields += types_.value_type(f.type) + " " + lf.api_name;
        if (lf.default_value) {
          fields += " = " + types_.value(f.type, *lf.default_value);
        } else if (
            f.type.is_record() && m_.records[static_cast<size_t>(f.type.decl)].all_defaulted) {
          // All-defaulted: callers may leave it out (`Linear{w, b}`) without
          // -Wmissing-field-initializers.
          fields += " = {}";
        }
        fields += ";";
      }
      ns_.enter(r.cpp_namespace);
      p_.emit(
          {{"doc",
            doc_comment(
                r.doc.empty()
                    ? "Record `" + r.name + "` (frozen: kernels take it by const reference)."
                    : r.doc)},
           {"name", api_name(r.name)},
           {"fields", fields}},
          R"cc(
            $doc$
            struct $name$ {
              $fields$
            };
          )cc");
      p_.line();
    }
  }

  void grad_records() {
    for (size_t i = 0; i < m_.records.size(); ++i) {
      const model::Record& r = m_.records[i];
      if (r.from_include || !r.takes_grad) continue;  // in the header of its own file
      std::string fields;
      for (const auto& f : r.fields) {
        if (m_.takes_grad(f.type))
          fields += fmt::format("{} {};\n", types_.grad_type(f.type), api_name(f.name));
      }
      fields.pop_back();
      ns_.enter(r.cpp_namespace);
      p_.emit(
          {{"name", lang::grad_record_name(r)},
           {"record", api_name(r.name)},
           {"fields", fields},
           {"lists",
            std::any_of(
                r.fields.begin(),
                r.fields.end(),
                [](const model::Field& f) { return f.type.takes_grad_list(); })
                ? "\n/// A list field holds one per tensor of the input list, in order."
                : ""}},
          R"cc(
            /// Gradients for the tensor fields of $record$: every slot must be given
            /// (at::Tensor() or c10::nullopt for "no gradient").$lists$
            struct $name$ {
              $fields$
            };
          )cc");
      p_.line();
    }
  }

  void call_api() {
    if (ops_.empty()) return;
    ns_.enter(m_.cpp_namespace);
    for (const auto& op : ops_) {
      if (!op.op().backward) continue;
      const lower::LoweredOp& lo = op.lowered();
      std::string fields, slots;
      for (size_t p : op.grad_params()) {
        fields += fmt::format(
            "{} {};\n",
            types_.grad_type(op.op().params[p].type),
            lo.api_params[p].name);
      }
      for (size_t i = 0; i < op.grad_slots().size(); ++i) {
        slots += fmt::format(
            "static constexpr std::size_t {} = {};\n",
            lo.slots[op.grad_slots()[i]].cpp_name,
            i);
      }
      if (!fields.empty()) fields.pop_back();
      if (!slots.empty()) slots.pop_back();
      p_.emit(
          {{"name", op.name()},
           {"grads", op.names().grads},
           {"grad_slot", op.names().grad_slot},
           {"backward", op.names().backward},
           {"fields", fields},
           {"slots", slots},
           {"needs", op.needs_input_grad("index")}},
          R"cc(
            /// What kernels::$backward$ returns: one member per parameter with a tensor.
            struct $grads$ {
              $fields$
            };

            /// Index of each tensor slot of $name$, for $needs$.
            struct $grad_slot$ {
              $slots$
            };

          )cc");
    }
    p_.emit(R"cc(
      // Call API: flattens the records and calls the op through the dispatcher
      // (Autograd, Meta and device dispatch apply).
    )cc");
    for (const auto& op : ops_) {
      std::string doc = "/// " + comment_text(original_signature(op.op(), m_));
      if (std::string user = doc_comment(op.op().doc); !user.empty()) doc += "\n" + user;
      doc += "\n/// " +
             comment_text(fmt::format("lowered: {}::{}", m_.namespace_, op.lowered().schema));
      p_.line();
      p_.emit(
          {{"doc", doc}, {"decl", signature(op.return_type() + " " + op.name(), op.params(true))}},
          R"cc(
            $doc$
            $decl$;
          )cc");
    }
    p_.line();
  }

  void kernel_declarations() {
    if (ops_.empty()) return;
    p_.emit(R"cc(
      // Kernels: written by you (stubs: structopc --emit stubs).
      namespace kernels {
    )cc");
    for (const auto& op : ops_) {
      p_.line();
      std::vector<CppParam> params = op.params(false);
      for (const auto& k : op.kernels()) {
        p_.emit(
            {{"decl", signature(op.return_type() + " " + k.name, params)},
             {"where", k.dispatch_key.value_or("every device")},
             {"qualified", op.qualified()}},
            R"cc(
              /// $qualified$ forward on $where$.
              $decl$;
            )cc");
      }
      if (op.op().meta == model::MetaKind::Custom) {
        p_.emit(
            {{"decl", signature(op.return_type() + " " + op.names().meta, params)}},
            R"cc(
              /// Meta kernel: outputs with the right shape, dtype and device, no data.
              $decl$;
            )cc");
      }
      if (op.op().backward) {
        p_.emit(
            {{"setup", signature("void " + op.names().setup_context, setup_context_params(op))},
             {"backward",
              signature(op.names().grads + " " + op.names().backward, backward_params(op))},
             {"ctx", op.lowered().locals.ctx}},
            R"cc(
              /// Saves what backward needs ($ctx$->save_for_backward, $ctx$->saved_data); runs with grad mode off.
              $setup$;
              /// Gradients for the inputs, given those of the outputs.
              $backward$;
            )cc");
      }
    }
    p_.emit(R"cc(

      }  // namespace kernels
    )cc");
  }

  const EmitInput& in_;
  const model::Module& m_;
  CppTypes types_;
  CodePrinter p_;
  NamespaceTracker ns_;
  std::vector<CppOp> ops_;
};

}  // namespace

std::string emit_header(const EmitInput& in) {
  return HeaderEmitter(in).run();
}

}  // namespace structop
