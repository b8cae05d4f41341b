#include <algorithm>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "check/describe.h"
#include "check/names.h"
#include "emit/emitters.h"
#include "emit/json.h"
#include "lower/lowering.h"

namespace structop {
namespace {

const char* meta_name(model::MetaKind k) {
  switch (k) {
    case model::MetaKind::Identity:
      return "identity";
    case model::MetaKind::Names:
      return "names";
    case model::MetaKind::Custom:
      return "custom";
  }
  return "?";
}

Json optional_default(const std::optional<model::Default>& d) {
  return d ? Json(describe_default(*d)) : Json();
}

Json optional_default(const model::Default* d) {
  return d ? Json(describe_default(*d)) : Json();
}

Json enums_json(const model::Module& m) {
  Json out = Json::array();
  for (const auto& e : m.enums) {
    Json values = Json::array();
    for (const auto& v : e.values) values.push(v);
    out.push(Json::object()
                 .set("name", e.name)
                 .set("cpp_namespace", e.cpp_namespace)
                 .set("values", std::move(values))
                 .set("from_include", e.from_include)
                 .set("doc", e.doc));
  }
  return out;
}

Json records_json(const model::Module& m) {
  Json out = Json::array();
  for (const auto& r : m.records) {
    Json fields = Json::array();
    for (const auto& f : r.fields) {
      fields.push(Json::object()
                      .set("name", f.name)
                      .set("type", describe_type(f.type, m))
                      .set("default", optional_default(f.default_value))
                      .set("schema_name", f.schema_name ? Json(f.schema_name->text) : Json())
                      .set("dynamic", f.type.dynamic)
                      .set("doc", f.doc));
    }
    out.push(Json::object()
                 .set("name", r.name)
                 .set("cpp_namespace", r.cpp_namespace)
                 .set("fields", std::move(fields))
                 .set("has_tensor_leaf", r.has_tensor_leaf)
                 .set("all_defaulted", r.all_defaulted)
                 .set("from_include", r.from_include)
                 .set("doc", r.doc));
  }
  return out;
}

Json op_json(const EmitInput& in, const lower::LoweredOp& lo) {
  const model::Op& op = in.module.ops[lo.op];
  Json slots = Json::array();
  for (const auto& s : lo.slots) {
    // The optional records above the leaf, by path (`cfg`, `cfg.inner`).
    Json optional_records = Json::array();
    const std::vector<std::string>& parts = s.segments;
    for (size_t k : s.optional_at) {
      optional_records.push(fmt::format(
          "{}",
          fmt::join(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(k + 1), ".")));
    }
    slots.push(Json::object()
                   .set("path", s.path)
                   .set("name", s.name)
                   .set("pinned", s.pinned)
                   .set("cpp_name", s.cpp_name)
                   .set("param", op.params[s.param].name)
                   .set("type", describe_type(s.type, in.module))
                   .set("schema_type", s.schema_type)
                   .set("dynamic", s.type.dynamic)
                   .set("default", optional_default(s.default_value))
                   .set("schema_default", s.schema_default ? Json(*s.schema_default) : Json())
                   .set("kwarg_only", s.kwarg_only)
                   .set("mutated", s.written)
                   .set("differentiable", s.takes_grad)
                   .set("grad_list", s.grad_list)
                   .set("optional_records", std::move(optional_records)));
  }
  Json outputs = Json::array();
  for (const auto& o : lo.outputs) {
    outputs.push(Json::object()
                     .set("name", o.name)
                     .set("pinned", o.pinned)
                     .set("api_path", o.api_path)
                     .set("schema_type", o.schema_type));
  }
  Json kernels = Json::array();
  for (const auto& k : lo.kernels) {
    kernels.push(Json::object()
                     .set("name", k.name)
                     .set("dispatch_key", k.dispatch_key ? Json(*k.dispatch_key) : Json()));
  }
  Json meta_sources = Json::array();
  for (size_t i : lo.meta_sources) meta_sources.push(lo.slots[i].name);
  Json dispatch = Json::array();
  for (const auto& k : op.dispatch) dispatch.push(k);
  Json tags = Json::array();
  for (const auto& t : op.tags) tags.push(t);
  Json annotations = Json::array();
  for (const auto& a : op.annotations) annotations.push(a);
  return Json::object()
      .set("name", lo.qualified_name)
      .set("cpp_name", lo.cpp_name)
      .set("schema", lo.schema)
      .set("signature", original_signature(op, in.module))
      .set("backward", op.backward)
      .set("meta", meta_name(op.meta))
      .set("meta_sources", std::move(meta_sources))
      .set("dispatch", std::move(dispatch))
      .set("kernels", std::move(kernels))
      .set("tags", std::move(tags))
      .set("annotations", std::move(annotations))
      .set("slots", std::move(slots))
      .set("returns", std::move(outputs))
      .set("doc", op.doc);
}

}  // namespace

std::string emit_json(const EmitInput& in) {
  Json ops = Json::array();
  for (const auto& lo : in.lowered.ops) ops.push(op_json(in, lo));
  return Json::object()
      .set("generator", "structopc " + in.version)
      .set("source", in.source_name)
      .set("namespace", in.module.namespace_)
      .set("cpp_namespace", in.module.cpp_namespace)
      .set("enums", enums_json(in.module))
      .set("records", records_json(in.module))
      .set("ops", std::move(ops))
      .dump();
}

namespace {

/// One row per slot: path, lowered name, type, default, kwarg-only, mutated.
struct SlotRow {
  std::string cells[6];
};

SlotRow slot_row(const EmitInput& in, const lower::Slot& s) {
  std::string type = describe_type(s.type, in.module);
  if (s.type.dynamic) type = "dynamic " + type;
  if (type != s.schema_type) type += " -> " + s.schema_type;
  std::string def = "-";
  if (s.default_value) {
    def = describe_default(*s.default_value);
    if (!s.schema_default)
      def += " (API only)";
    else if (*s.schema_default != def)
      def += " (schema: " + *s.schema_default + ")";
  }
  return {
      {s.path,
       s.pinned           ? s.name + " (pinned)"
       : s.python_keyword ? s.name + " (Python keyword)"
                          : s.name,
       type,
       def,
       s.kwarg_only ? "yes" : "no",
       s.written ? "yes" : "no"}};
}

/// The slot map as a table with a header row and a rule under it, columns
/// as wide as their widest cell.
std::string slot_table(const EmitInput& in, const lower::LoweredOp& lo) {
  std::vector<SlotRow> rows;
  rows.push_back({{"original path", "lowered name", "type", "default", "kwarg-only", "mutated"}});
  for (const auto& s : lo.slots) rows.push_back(slot_row(in, s));
  size_t width[6] = {};
  for (const auto& r : rows) {
    for (size_t c = 0; c < 6; ++c) width[c] = std::max(width[c], r.cells[c].size());
  }
  std::string out;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::string line;
    for (size_t c = 0; c < 6; ++c) {
      line += c + 1 < 6 ? fmt::format("{:<{}}  ", rows[i].cells[c], width[c]) : rows[i].cells[c];
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
    if (i == 0) {
      std::string rule;
      for (size_t c = 0; c < 6; ++c) rule += std::string(width[c], '-') + (c + 1 < 6 ? "  " : "");
      out += rule + "\n";
    }
  }
  return out;
}

/// Returned records: which output each leaf is.
std::string returned_records(const lower::LoweredOp& lo) {
  if (!lo.has_record_return) return {};
  std::string out = "\nreturned records (one output per leaf):\n";
  for (const auto& o : lo.outputs) {
    if (!o.fields.empty())
      out += fmt::format("  {} -> {}{}\n", o.api_path, o.name, o.pinned ? " (pinned)" : "");
  }
  return out;
}

/// `cfg.inner`: the first `count` segments of a slot's path.
std::string path_prefix(const std::vector<std::string>& parts, size_t count) {
  return fmt::format(
      "{}",
      fmt::join(parts.begin(), parts.begin() + static_cast<std::ptrdiff_t>(count), "."));
}

/// Optional records: what makes each absent (Slot::optional_at; the
/// witness is its first leaf that is not optional in its record and not
/// below an optional record inside it).
std::string optional_records(const lower::LoweredOp& lo) {
  std::vector<std::pair<std::string, std::string>> witnesses;  // record path, witness
  for (const auto& s : lo.slots) {
    if (s.optional_at.empty()) continue;
    for (size_t k : s.optional_at) {
      std::string path = path_prefix(s.segments, k + 1);
      if (std::none_of(witnesses.begin(), witnesses.end(), [&](const auto& w) {
            return w.first == path;
          })) {
        witnesses.emplace_back(path, "");
      }
    }
    const std::string innermost_path = path_prefix(s.segments, s.optional_at.back() + 1);
    auto& innermost = *std::find_if(witnesses.begin(), witnesses.end(), [&](const auto& w) {
      return w.first == innermost_path;
    });
    if (innermost.second.empty() && !s.declared_type.is_optional()) innermost.second = s.path;
  }
  if (witnesses.empty()) return {};
  std::string out =
      "\noptional records (absent: every leaf None, exactly when this leaf is None):\n";
  for (const auto& [path, witness] : witnesses) out += fmt::format("  {}: {}\n", path, witness);
  return out;
}

/// Where the outputs' metadata comes from.
std::string meta_sources(const model::Op& op, const lower::LoweredOp& lo) {
  if (lo.meta_sources.empty()) {
    if (op.meta != model::MetaKind::Custom) return {};
    return fmt::format("\nmeta: custom (kernels::{}_meta)\n", lo.cpp_name);
  }
  std::string sources;
  for (size_t i : lo.meta_sources) sources += (sources.empty() ? "" : ", ") + lo.slots[i].path;
  std::string out = fmt::format("\nmeta: outputs take the metadata of {}\n", sources);
  if (op.meta == model::MetaKind::Identity) {
    out +=
        "      (default identity meta: output k copies the k-th tensor input, plain `Tensor`\n"
        "      parameters first, then tensor fields of records; `meta: [names]` picks others)\n";
  }
  return out;
}

}  // namespace

std::string explain_op(const EmitInput& in, const lower::LoweredOp& lo) {
  const model::Op& op = in.module.ops[lo.op];
  return fmt::format("op:      {}\nlowered: {}\n\n", original_signature(op, in.module), lo.schema) +
         slot_table(in, lo) + returned_records(lo) + optional_records(lo) + meta_sources(op, lo);
}

}  // namespace structop
