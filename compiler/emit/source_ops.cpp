#include "emit/source_emitter_impl.h"

namespace structop::source_emit {

Codes SourceEmitter::kernel_args(const CppOp& op) const {
  const model::Op& o = op.op();
  const lower::LoweredOp& lo = op.lowered();
  Codes out;
  for (size_t i = 0; i < o.params.size(); ++i) {
    const model::Param& p = o.params[i];
    const auto first = std::find_if(lo.slots.begin(), lo.slots.end(), [&](const lower::Slot& s) {
      return s.param == i;
    });
    const size_t slot = static_cast<size_t>(first - lo.slots.begin());
    const std::string path = fmt::format(
        "structop::ArgPath(op_name, {})",
        cpp_string_literal(p.name));
    if (p.type.is_record()) {
      // Held (structop::Held): its destructor is compiled once per record
      // type instead of in every kernel call.
      out.push_back(
          "structop::Held<" + adapter_types_.value_type(p.type) + ">" +
          braces(
              {unflatten_call(p.type, path, slot == 0 ? "args" : fmt::format("args + {}", slot))}));
    } else {
      const std::string flat = stack_arg(first->type, fmt::format("args[{}]", slot));
      out.push_back(
          p.type.is_enum() || p.type.dynamic ? adapter_types_.flat_to_value(p.type, flat, path)
                                             : flat);
    }
  }
  return out;
}

Strings SourceEmitter::forward_names(const CppOp& op) {
  Strings out;
  for (const auto& k : op.kernels()) {
    if (!k.dispatch_key) {
      out.push_back("forward");
      continue;
    }
    std::string lower = *k.dispatch_key;
    std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) {
      return static_cast<char>(std::tolower(c));
    });
    out.push_back(lower);
  }
  return out;
}

Code SourceEmitter::boxed_call(const CppOp& op, const std::string& kernel_fn) const {
  // The kernel's arguments unflattened in place from the flat arguments at
  // `args` (each record once, held: structop::Held).
  const Code args_local = op.lowered().slots.empty()
                              ? Code()
                              : Code("c10::IValue* args = structop::arguments(stack, num_args);\n");
  const Code call = kernel_fn + args(kernel_args(op));
  if (op.return_type() == "void")
    return args_local + call + ";\nstructop::return_nothing(stack, num_args);";
  // Held until it is on the stack, so that its destructor is not compiled
  // here (structop::Held).
  const Code result = "structop::Held<" + op.flat_return_type() + ">" +
                      braces(
                          {op.lowered().has_record_return ? "flat_outputs(" + call + ")" : call});
  return args_local + "structop::return_outputs" + args({"stack", "num_args", result}) + ";";
}

Code SourceEmitter::record_from_outputs(
    const model::Type& type,
    size_t& next,
    const std::function<std::string(size_t)>& leaf,
    bool grad) const {
  const model::Record& r = m_.records[static_cast<size_t>(type.decl)];
  Codes fields;
  for (const auto& f : r.fields) {
    fields.push_back(
        f.type.is_record() ? record_from_outputs(f.type, next, leaf, grad) : leaf(next++));
  }
  // Spelled `::ns::R`: inside the adapter a member could hide the record.
  return (grad ? adapter_types_.grad_record_name(type.decl)
               : adapter_types_.record_name(type.decl)) +
         braces(fields);
}

Codes SourceEmitter::returns_from_outputs(
    const CppOp& op,
    const std::function<std::string(size_t)>& leaf,
    bool grad) const {
  Codes values;
  for (const auto& r : op.lowered().api_returns) {
    size_t next = r.first_output;
    values.push_back(
        r.type.is_plain_record() ? record_from_outputs(r.type, next, leaf, grad)
                                 : leaf(r.first_output));
  }
  return values;
}

Code SourceEmitter::record_return_members(const CppOp& op) const {
  const lower::LoweredOp& lo = op.lowered();
  if (!lo.has_record_return) return "";
  const bool one_return = lo.api_returns.size() == 1;
  const bool one_output = lo.outputs.size() == 1;
  Codes leaves;
  for (const auto& o : lo.outputs) {
    const std::string base = one_return ? "result" : fmt::format("std::get<{}>(result)", o.ret);
    leaves.push_back("std::move(" + base + o.member_path + ")");
  }
  const Code flat = one_output ? leaves[0] : "std::make_tuple" + args(leaves);
  const Codes values = returns_from_outputs(
      op,
      [&](size_t k) {
        return one_output ? std::string("std::move(flat)")
                          : fmt::format("std::move(std::get<{}>(flat))", k);
      },
      false);
  const Code records = one_return ? values[0] : "std::make_tuple" + args(values);
  std::vector<model::Type> types;
  for (const auto& r : lo.api_returns) types.push_back(r.type);
  const std::string ret = adapter_types_.return_type(types);
  CodePrinter p(2, false);
  p.emit(
      {{"flat_outputs",
        signature(
            "static " + op.flat_return_type() + " flat_outputs",
            {{ret + "&&", "result", std::nullopt}})},
       {"record_outputs",
        signature(
            "static " + ret + " record_outputs",
            {{op.flat_return_type() + "&&", "flat", std::nullopt}})},
       {"flat", flat},
       {"records", records}},
      R"cc(

        /// The kernels' results with each returned record as its leaves, in
        /// the flat outputs' order.
        $flat_outputs$ {
          return $flat$;
        }

        /// The flat outputs back in record form (the C++ call API).
        $record_outputs$ {
          return $records$;
        }
      )cc");
  return trimmed(p.code());
}

bool SourceEmitter::has_meta_like(const CppOp& op) {
  return op.op().meta != model::MetaKind::Custom && !op.lowered().meta_sources.empty();
}

Code SourceEmitter::meta_like_member(const CppOp& op) {
  if (!has_meta_like(op)) return "";
  Codes like;
  for (size_t slot : op.lowered().meta_sources) like.push_back(std::to_string(slot));
  return "\nstatic constexpr std::size_t meta_like[] = " + braces(like) + ";";
}

Code SourceEmitter::meta_member(const CppOp& op) const {
  if (op.op().meta != model::MetaKind::Custom) return "";
  CodePrinter p(2, false);
  p.emit(
      {{"params", kBoxedParams}, {"body", boxed_call(op, "kernels::" + op.names().meta)}},
      R"cc(

        static void meta$params$ {
          $body$
        }
      )cc");
  return trimmed(p.code());
}

void SourceEmitter::op_section(const CppOp& op) {
  const lower::LoweredOp& lo = op.lowered();
  p_.line();
  slot_table(op);
  Code kernels;
  const Strings names = forward_names(op);
  for (size_t k = 0; k < names.size(); ++k) {
    CodePrinter p(2, false);
    p.emit(
        {{"name", names[k]},
         {"params", kBoxedParams},
         {"body", boxed_call(op, "kernels::" + op.kernels()[k].name)}},
        R"cc(

          static void $name$$params$ {
            $body$
          }
        )cc");
    kernels += p.code();
  }
  p_.emit(
      {{"adapter", op.names().adapter},
       {"op", cpp_string_literal(op.qualified())},
       {"num_args", std::to_string(lo.slots.size())},
       {"meta_like", meta_like_member(op)},
       {"kernels", trimmed(kernels)},
       {"records", record_return_members(op)},
       {"meta", meta_member(op)},
       {"backward", op.op().backward ? backward_members(op) : ""}},
      R"cc(

        struct $adapter$ {
          static constexpr const char* op_name = $op$;
          static constexpr std::size_t num_args = $num_args$;$meta_like$
          $records$
          $kernels$
          $meta$
          $backward$

          static inline structop::OpRef handle{op_name};
        };
      )cc");
}

Code SourceEmitter::trimmed(const Code& code) {
  std::vector<Code> lines = code.lines();
  while (!lines.empty() && lines.back().empty()) lines.pop_back();
  Code out;
  for (size_t i = 0; i < lines.size(); ++i) out += (i ? "\n" : "") + lines[i];
  return out;
}

void SourceEmitter::slot_table(const CppOp& op) {
  const lower::LoweredOp& lo = op.lowered();
  std::vector<std::array<std::string, 6>> rows;
  rows.push_back({"slot", "original path", "lowered name", "type", "default", ""});
  for (size_t i = 0; i < lo.slots.size(); ++i) {
    const lower::Slot& s = lo.slots[i];
    Strings notes;
    if (s.kwarg_only) notes.push_back("kwarg-only");
    if (s.type.is_enum()) {
      notes.push_back(describe_type(s.type, m_));
    }
    if (s.type.dynamic) notes.push_back("dynamic " + describe_type(s.type, m_));
    if (s.default_value && !s.schema_default)
      notes.push_back("default " + describe_default(*s.default_value) + " in the APIs");
    rows.push_back(
        {std::to_string(i),
         s.path,
         s.name,
         s.schema_type,
         comment_text(s.schema_default.value_or("")),
         notes.empty() ? "" : comment_text("(" + join(notes, ", ") + ")")});
  }
  size_t width[6] = {};
  for (const auto& r : rows) {
    for (size_t c = 0; c < 6; ++c) width[c] = std::max(width[c], r[c].size());
  }
  std::string table;
  for (const auto& r : rows) {
    std::string line = "//  ";
    for (size_t c = 0; c < 5; ++c) line += fmt::format(" {:<{}}", r[c], width[c] + 1);
    // The notes go on a line of their own where they would pass the limit.
    const bool own_line = line.size() + 1 + r[5].size() > CodePrinter::kColumns;
    if (!r[5].empty())
      line += own_line ? "\n//" + std::string(5 + width[0] + 2, ' ') + r[5] : " " + r[5];
    while (line.back() == ' ') line.pop_back();
    table += line + "\n";
  }
  table.pop_back();
  std::string title = "// " + comment_text(original_signature(op.op(), m_));
  p_.emit(
      {{"title", title}, {"table", table}},
      R"cc(
        // ===========================================================================
        $title$
        $table$
        // ===========================================================================
      )cc");
}

SourceEmitter::GradSlotCodes SourceEmitter::grad_slot_codes(const CppOp& op) const {
  const lower::LoweredOp& lo = op.lowered();
  GradSlotCodes out;
  for (size_t slot : op.grad_slots()) {
    const lower::Slot& s = lo.slots[slot];
    out.paths.push_back(cpp_string_literal(s.path));
    out.slots.push_back(std::to_string(slot));
    out.lists.push_back(s.grad_list ? "true" : "false");
    out.moves.push_back(
        s.list_depth ? list_leaf(op.op(), s, true)
                     : fmt::format("std::move(grads.{})", s.api_path));
  }
  // With a list slot the gradients are laid out per edge (one per tensor of
  // a list), which only the call knows: structop::grad_edges.
  if (lo.has_grad_list) out.moves.insert(out.moves.begin(), {"ctx", "backward_def"});
  return out;
}

Codes SourceEmitter::backward_call_args(const CppOp& op) const {
  Codes grads = {"ctx"};
  if (op.list_output()) {
    grads.push_back("grad_outputs");
  } else {
    for (auto& g : returns_from_outputs(
             op,
             [](size_t k) { return fmt::format("grad_outputs[{}]", k); },
             true))
      grads.push_back(std::move(g));
  }
  return grads;
}

Codes SourceEmitter::setup_context_args(const CppOp& op) const {
  const lower::LoweredOp& lo = op.lowered();
  Codes setup_args = {"ctx"};
  for (auto& a : kernel_args(op)) setup_args.push_back(std::move(a));
  for (auto& o : returns_from_outputs(
           op,
           [&](size_t k) {
             // A tensor by reference (no copy to destroy), others as values.
             return lo.outputs[k].type.is_plain_tensor()
                        ? fmt::format("outputs[{}].toTensor()", k)
                        : fmt::format(
                              "structop::output<{}>(outputs[{}])",
                              types_.output_type(lo.outputs[k].type),
                              k);
           },
           false))
    setup_args.push_back(std::move(o));
  return setup_args;
}

Code SourceEmitter::backward_members(const CppOp& op) const {
  const lower::LoweredOp& lo = op.lowered();
  const GradSlotCodes g = grad_slot_codes(op);
  CodePrinter p(2, false);
  p.emit(
      {{"setup", "kernels::" + op.names().setup_context + args(setup_context_args(op))},
       {"paths", braces(g.paths)},
       {"slots", braces(g.slots)},
       {"lists",
        lo.has_grad_list ? "\nstatic constexpr bool grad_lists[] = " + braces(g.lists) + ";" : ""},
       {"collect", lo.has_grad_list ? "grad_edges" : "grad_list"},
       {"def",
        "structop::make_backward_def" +
            args(lo.has_grad_list ? Codes{"op_name", "grad_paths", "grad_slots", "setup_context",
                                          "backward", "grad_lists"}
                                  : Codes{"op_name", "grad_paths", "grad_slots", "setup_context",
                                          "backward"})},
       {"args_param", lo.slots.empty() ? "c10::IValue* /*args*/" : "c10::IValue* args"},
       {"grads_type", op.names().grads},
       // Without list slots grad_list moves every Grad out of the record.
       {"holder", lo.has_grad_list ? "structop::Held" : "structop::Emptied"},
       {"call", braces({"kernels::" + op.names().backward + args(backward_call_args(op))})},
       {"moves", args(g.moves)}},
      R"cc(

        static void setup_context(
            torch::autograd::AutogradContext* ctx,
            $args_param$,
            const c10::IValue* outputs) {
          $setup$;
        }

        static structop::variable_list backward(
            torch::autograd::AutogradContext* ctx,
            const structop::variable_list& grad_outputs) {
          $holder$<$grads_type$> held$call$;
          $grads_type$& grads = held.value;
          return structop::$collect$$moves$;
        }

        static constexpr const char* grad_paths[] = $paths$;
        static constexpr std::size_t grad_slots[] = $slots$;$lists$
        static constexpr structop::BackwardDef backward_def = $def$;
      )cc");
  return trimmed(p.code());
}

}  // namespace structop::source_emit
