"""Python kernels of mlp.ops.yaml (see mlp_kernels.cpp; records Linear, Lora
and enum Activation come from common.ops.yaml, module common_ops, and
mlp_ops has them too).

  linear(x, l) = x @ l.weight^T + l.bias + l.lora.scale * (x @ l.lora.a^T) @ l.lora.b^T
  mlp(x, cfg)  = cfg.residual_scale * x + linear(act(linear(x, cfg.fc1)), cfg.fc2)

Demonstrates: nested records two and three levels deep, optional tensors
(bias, LoRA factors) that are None and then get no gradient, a backward
returning nested grad records (MlpCfgGrad(fc1=LinearGrad(lora=LoraGrad(...)))),
keeping whole records in setup_context, and a record op (linear) called from
another record op's kernel (mlp).
"""

import torch

import mlp_ops as P


def check_lora(layer):
    if (layer.lora.a is None) != (layer.lora.b is None):
        raise ValueError("nn::linear: lora.a and lora.b must be given together (or neither)")


def linear_forward(x, layer):
    check_lora(layer)
    y = torch.matmul(x, layer.weight.t())
    if layer.bias is not None:
        y = y + layer.bias
    if layer.lora.a is not None:
        y = y + torch.matmul(torch.matmul(x, layer.lora.a.t()), layer.lora.b.t()) * layer.lora.scale
    return y


def linear_vjp(x, layer, gy):
    """The gradients of linear_forward(x, layer) given gy: for x, and a LinearGrad."""
    x2 = x.reshape(-1, x.shape[-1])
    gy2 = gy.reshape(-1, gy.shape[-1])
    gx = torch.matmul(gy, layer.weight)
    lora = P.LoraGrad()
    if layer.lora.a is not None:
        a, b, scale = layer.lora.a, layer.lora.b, layer.lora.scale  # a [r, in], b [out, r]
        gx = gx + torch.matmul(torch.matmul(gy, b), a) * scale
        lora = P.LoraGrad(
            a=torch.matmul(torch.matmul(gy2, b).t(), x2) * scale,
            b=torch.matmul(gy2.t(), torch.matmul(x2, a.t())) * scale,
        )
    return gx, P.LinearGrad(
        weight=torch.matmul(gy2.t(), x2),
        bias=gy2.sum(0) if layer.bias is not None else None,
        lora=lora,
    )


def activate(x, act):
    if act == P.Activation.relu:
        return torch.relu(x)
    if act == P.Activation.gelu:
        return torch.nn.functional.gelu(x)
    return torch.nn.functional.silu(x)


def activate_backward(grad, x, act):
    if act == P.Activation.relu:
        return grad * (x > 0)
    if act == P.Activation.gelu:  # the exact (erf) gelu
        cdf = 0.5 * (1.0 + torch.erf(x * 0.7071067811865476))
        pdf = torch.exp(-0.5 * x * x) * 0.3989422804014327
        return grad * (cdf + x * pdf)
    sigmoid = torch.sigmoid(x)
    return grad * sigmoid * (1 + x * (1 - sigmoid))


@P.linear.register_kernel(None)
def linear(x, layer):
    return linear_forward(x, layer)


@P.linear.register_fake
def linear_fake(x, layer):
    return x.new_empty((*x.shape[:-1], layer.weight.shape[0]))


def linear_setup_context(ctx, inputs, output):
    # Tensors go through save_for_backward; the record keeps the rest.
    x, layer = inputs
    ctx.save_for_backward(x, layer.weight, layer.bias, layer.lora.a, layer.lora.b)
    ctx.lora_scale = layer.lora.scale


def saved_linear(saved, scale):
    weight, bias, a, b = saved
    return P.Linear(weight=weight, bias=bias, lora=P.Lora(a=a, b=b, scale=scale))


def linear_backward(ctx, grad_output):
    x, *saved = ctx.saved_tensors
    return linear_vjp(x, saved_linear(saved, ctx.lora_scale), grad_output)


P.linear.register_autograd(linear_backward, setup_context=linear_setup_context)


@P.mlp.register_kernel(None)
def mlp(x, cfg):
    # P.linear is the generated function (a dispatcher call), not linear() above.
    h = activate(P.linear(x, cfg.fc1), cfg.act)
    return P.linear(h, cfg.fc2) + x * cfg.residual_scale


def mlp_setup_context(ctx, inputs, output):
    x, cfg = inputs
    fc1, fc2 = cfg.fc1, cfg.fc2
    ctx.save_for_backward(
        x,
        fc1.weight,
        fc1.bias,
        fc1.lora.a,
        fc1.lora.b,
        fc2.weight,
        fc2.bias,
        fc2.lora.a,
        fc2.lora.b,
    )
    ctx.scales = (fc1.lora.scale, fc2.lora.scale)
    ctx.act = cfg.act
    ctx.residual_scale = cfg.residual_scale


def mlp_backward(ctx, grad_output):
    x, *saved = ctx.saved_tensors
    fc1 = saved_linear(saved[:4], ctx.scales[0])
    fc2 = saved_linear(saved[4:], ctx.scales[1])
    pre = linear_forward(x, fc1)
    grad_h, grad_fc2 = linear_vjp(activate(pre, ctx.act), fc2, grad_output)
    grad_x, grad_fc1 = linear_vjp(x, fc1, activate_backward(grad_h, pre, ctx.act))
    grad_x = grad_x + grad_output * ctx.residual_scale
    return grad_x, P.MlpCfgGrad(fc1=grad_fc1, fc2=grad_fc2)


P.mlp.register_autograd(mlp_backward, setup_context=mlp_setup_context)
