"""PyTorch references for the GNMT blocks: Bahdanau attention with weight normalisation (written as
the MLPerf / NVIDIA GNMT reference computes it) and the encoder / decoder LSTM layers.

Inputs: the block's inputs (x, ...), the output gradients (grad_0, grad_1, ...) and the parameters
under loom's names. config["block"]: "attention" | "encoder" | "attention_layer" | "decoder", plus
the block's options. Outputs: out_<k> for each output, grad_in_<k> for each floating input,
grad_<parameter name> for each parameter.
"""
import torch

import common


def lstm(inputs, prefix, input_size, hidden, bidirectional=False):
    module = torch.nn.LSTM(input_size, hidden, 1, batch_first=True, bidirectional=bidirectional).double()
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(inputs[prefix + name])
    return module, {prefix + name: p for name, p in module.named_parameters()}


def attention(inputs, prefix, query, keys, mask):
    wq = common.parameter(inputs[prefix + "linear_q.weight"])
    wk = common.parameter(inputs[prefix + "linear_k.weight"])
    v = common.parameter(inputs[prefix + "linear_att"])
    g = common.parameter(inputs[prefix + "normalize_scalar"])
    b = common.parameter(inputs[prefix + "normalize_bias"])
    pq = query @ wq.t()
    pk = keys @ wk.t()
    total = pq.unsqueeze(2) + pk.unsqueeze(1) + b
    v_hat = v / v.norm() * g
    scores = torch.tanh(total) @ v_hat
    if mask is not None:
        scores = scores.masked_fill(mask.bool().unsqueeze(1), float("-inf"))
    probs = torch.softmax(scores, dim=-1)
    context = torch.bmm(probs, keys)
    params = {prefix + "linear_q.weight": wq, prefix + "linear_k.weight": wk, prefix + "linear_att": v,
              prefix + "normalize_scalar": g, prefix + "normalize_bias": b}
    return context, params


def compute(inputs, config):
    # The reference runs in float64: loom's fp32 result is compared with the exact value, not with
    # another fp32 summation order (a scalar gradient summed over every position differs in the
    # fifth digit between two fp32 orders).
    inputs = {k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}
    block = config["block"]
    count = config["inputs"]
    xs = [inputs[f"in_{k}"].clone() for k in range(count)]
    for x in xs:
        if x.is_floating_point():
            x.requires_grad_()
    H = config["hidden_size"]
    if block == "attention":
        context, params = attention(inputs, "", xs[0], xs[1], xs[2] if count > 2 else None)
        outs = [context]
    elif block == "encoder":
        module, params = lstm(inputs, "rnn.", config["input_size"], H, config["bidirectional"])
        y, _ = module(xs[0])
        if config["residual"]:
            y = y + xs[0]
        outs = [y] + xs[1:]
    elif block == "attention_layer":
        module, params = lstm(inputs, "rnn.", config["input_size"], H)
        h, _ = module(xs[1])
        mask = xs[2] if config["key_padding_mask"] else None
        context, attn_params = attention(inputs, "attn.", h, xs[0], mask)
        params.update(attn_params)
        outs = [h, context] + xs[3 if mask is not None else 2:]
    else:
        module, params = lstm(inputs, "rnn.", 2 * H, H)
        y, _ = module(torch.cat([xs[0], xs[1]], dim=-1))
        if config["residual"]:
            y = y + xs[0]
        outs = [y, xs[1]] + xs[2:]
    loss = sum((o * inputs[f"grad_{k}"]).sum() for k, o in enumerate(outs) if f"grad_{k}" in inputs)
    loss.backward()
    result = {f"out_{k}": o for k, o in enumerate(outs)}
    for k, x in enumerate(xs):
        if x.is_floating_point() and x.grad is not None:
            result[f"grad_in_{k}"] = x.grad
    for name, p in params.items():
        result["grad_" + name] = p.grad
    return result


if __name__ == "__main__":
    common.main(compute)
