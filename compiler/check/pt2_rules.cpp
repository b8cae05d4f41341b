#include "check/resolver_impl.h"

namespace structop::resolving {

void Resolver::check_pt2_compliant(const syntax::OpDecl& decl, const model::Op& op) {
  auto tag = std::find_if(decl.tags.begin(), decl.tags.end(), [](const syntax::Name& t) {
    return t.text == "pt2_compliant_tag";
  });
  if (tag == decl.tags.end()) return;
  // torch.fx prints the op as `torch.ops.ns.op.overload`, which a Python
  // keyword breaks (aten's own `random_.from` has the problem).
  for (const auto* part : {&op.name, &op.overload}) {
    if (!lang::is_python_keyword(*part)) continue;
    diags_.error(
        tag->span,
        fmt::format(
            "op `{}` is named with `{}`, a Python keyword, so it cannot be `pt2_compliant_tag`: "
            "torch.compile writes the op as `torch.ops.{}.{}`",
            op.qualified_name(),
            *part,
            module_->namespace_,
            op.qualified_name()),
        "rename the op or overload, or drop the tag");
    break;
  }
  // A parameter named like a Python keyword is `from_` in the schema
  // (lowering); a pinned one is checked there.
  // FakeTensorMode (and so torch.compile and opcheck) treats an op with no
  // tensor argument that returns one Tensor as a tensor constructor: it
  // runs it with `device=meta`.
  bool tensor_argument = false, device_parameter = false;
  for (const auto& p : op.params) {
    tensor_argument |= p.type.holds_tensor() ||
                       (p.type.is_record() &&
                        module_->records[static_cast<size_t>(p.type.decl)].has_tensor_leaf);
    device_parameter |= p.name == "device" && p.type.is_builtin(Builtin::Device) &&
                        p.type.suffixes.size() <= 1;
  }
  const bool returns_one_tensor = op.returns.size() == 1 && op.returns[0].type.is_plain_tensor();
  if (!tensor_argument && returns_one_tensor && !device_parameter) {
    diags_.error(
        tag->span,
        fmt::format(
            "op `{}` takes no tensor and returns one, so torch.compile treats it as a tensor "
            "constructor and passes it `device=`; it has no `device` parameter",
            op.qualified_name()),
        "add a parameter `Device device` (or `Device? device=None`), as torch's constructors "
        "have, "
        "and create the result on it");
  }
}

void Resolver::check_backward(const syntax::OpDecl& decl, const model::Op& op) {
  if (!op.backward) return;
  if (!decl.mutates.empty()) {
    diags_.error(
        decl.mutates.front().span,
        fmt::format(
            "op `{}`: `backward: true` together with `mutates:` is not supported",
            op.qualified_name()),
        "split the in-place update into its own op without a backward");
  }
  bool has_grad_input = false, has_tensor = false;
  for (const auto& p : op.params) {
    has_grad_input |= module_->takes_grad(p.type);
    has_tensor |= p.type.is_record()
                      ? module_->records[static_cast<size_t>(p.type.decl)].has_tensor_leaf
                      : p.type.holds_tensor();
  }
  if (!has_grad_input) {
    diags_.error(
        op.name_span,
        fmt::format(
            "op `{}` has `backward: true` but no input that takes a gradient",
            op.qualified_name()),
        has_tensor
            ? "only `Tensor`, `Tensor?`, `Tensor[]` and `Tensor?[]` take gradients (an optional "
              "list `Tensor[]?` does not); make the list required, or remove `backward: true`"
            : "remove `backward: true`; there is nothing to differentiate");
  }
  bool has_tensor_output = false;
  for (const auto& r : op.returns) {
    if (r.type.is_builtin(Builtin::Tensor) &&
        (r.type.suffixes.empty() || (r.type.suffixes.size() == 1 && r.type.is_list()))) {
      has_tensor_output = true;
    } else if (r.type.is_plain_record()) {
      const model::Record& rec = module_->records[static_cast<size_t>(r.type.decl)];
      if (std::string leaf = non_tensor_leaf(rec, rec.name + "."); !leaf.empty()) {
        diags_.error(
            r.span,
            fmt::format(
                "op `{}` has `backward: true`, so a record it returns may hold only tensors, "
                "but `{}` is not a `Tensor`",
                op.qualified_name(),
                leaf),
            "return non-differentiable values from a separate op");
      }
      has_tensor_output = true;
    } else {
      diags_.error(
          r.span,
          fmt::format(
              "op `{}` has `backward: true`, so it may return only `Tensor`, `Tensor[]` or "
              "records of tensors",
              op.qualified_name()),
          "return non-differentiable values from a separate op");
    }
  }
  if (!has_tensor_output && op.returns.empty()) {
    diags_.error(
        op.name_span,
        fmt::format("op `{}` has `backward: true` but returns nothing", op.qualified_name()),
        "remove `backward: true`, or return the result tensor");
  }
}

}  // namespace structop::resolving
