"""PyTorch reference for loom's LSTM (batch-first, optional bidirectional first layer).

torch.nn.LSTM is bidirectional in every layer or none, so a bidirectional first layer followed
by more layers is built as two torch LSTMs: layer 0 (bidirectional) and layers 1.. (stacked),
whose parameter names are shifted back to loom's (weight_ih_l1 of the second is loom's
weight_ih_l1 ...). States are [N, S, H] in loom and [S, N, H] in torch.
Inputs: x, grad_y, optionally h0, c0, grad_h_n, grad_c_n, and the parameters by name.
"""
import torch

import common


def build(config):
    inp, hidden, layers = config["input_size"], config["hidden_size"], config["num_layers"]
    if not config["bidirectional_first"]:
        return [(torch.nn.LSTM(inp, hidden, layers, batch_first=True), 0, layers)]
    parts = [(torch.nn.LSTM(inp, hidden, 1, batch_first=True, bidirectional=True), 0, 2)]
    if layers > 1:
        parts.append((torch.nn.LSTM(2 * hidden, hidden, layers - 1, batch_first=True), 1, layers - 1))
    return parts


def loom_name(name, layer_offset):
    # weight_ih_l3_reverse -> shift the layer number by layer_offset
    base, rest = name.split("_l", 1)
    number, _, suffix = rest.partition("_")
    return f"{base}_l{int(number) + layer_offset}" + (f"_{suffix}" if suffix else "")


def compute(inputs, config):
    parts = build(config)
    x = inputs["x"].clone().requires_grad_()
    has_state = "h0" in inputs
    h0 = inputs["h0"].clone().requires_grad_() if has_state else None
    c0 = inputs["c0"].clone().requires_grad_() if has_state else None
    y, h_n, c_n, slot = x, [], [], 0
    for module, layer_offset, slots in parts:
        with torch.no_grad():
            for name, p in module.named_parameters():
                p.copy_(inputs[loom_name(name, layer_offset)])
        state = None
        if has_state:
            state = (h0[:, slot:slot + slots].transpose(0, 1).contiguous(),
                     c0[:, slot:slot + slots].transpose(0, 1).contiguous())
        y, (h, c) = module(y, state)
        h_n.append(h.transpose(0, 1))
        c_n.append(c.transpose(0, 1))
        slot += slots
    h_n, c_n = torch.cat(h_n, 1), torch.cat(c_n, 1)
    loss = (y * inputs["grad_y"]).sum()
    if "grad_h_n" in inputs:
        loss = loss + (h_n * inputs["grad_h_n"]).sum() + (c_n * inputs["grad_c_n"]).sum()
    loss.backward()
    out = {"y": y, "h_n": h_n, "c_n": c_n, "grad_x": x.grad}
    if has_state:
        out["grad_h0"], out["grad_c0"] = h0.grad, c0.grad
    for module, layer_offset, _ in parts:
        for name, p in module.named_parameters():
            out["grad_" + loom_name(name, layer_offset)] = p.grad
    return out


if __name__ == "__main__":
    common.main(compute)
