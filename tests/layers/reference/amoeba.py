"""PyTorch references for AmoebaNet's pieces: ZeroPad2d (F.pad, negative amounts crop),
FactorizedReduce, SeparableConv2d (ReLU, depthwise conv, pointwise conv, BatchNorm2d) and the
AmoebaNet-D cell, written out from the genotype with the channel
mapping loom documents in layers/amoeba_cell.h (torchgpipe's operations, TensorFlow's mapping of
a state whose channels differ).

Inputs: x0[, x1] (the cell's [s_prev_prev, s_prev] or the layer's x), grad_y0[, grad_y1], and every
parameter/buffer under loom's names. config: {"layer": "zero_pad" | "factorized_reduce" | "separable" | "cell",
options..., "training": bool}. Outputs: y<i>, grad_x<i>, grad_<trainable name>, and the BatchNorm
buffers after the forward.
"""
import torch
import torch.nn.functional as F
from torch import nn

import common

NORMAL = ([(1, "conv_1x1"), (1, "max_pool_3x3"), (1, "none"), (0, "conv_1x7_7x1"), (0, "conv_1x1"),
           (0, "conv_1x7_7x1"), (2, "max_pool_3x3"), (2, "none"), (1, "avg_pool_3x3"), (5, "conv_1x1")],
          [0, 3, 4, 6])
REDUCTION = ([(0, "max_pool_2x2"), (0, "max_pool_3x3"), (2, "none"), (1, "conv_3x3"), (2, "conv_1x7_7x1"),
              (2, "max_pool_3x3"), (3, "none"), (1, "max_pool_2x2"), (2, "avg_pool_3x3"), (3, "conv_1x1")],
             [4, 5, 6])


class Pad(nn.Module):
    def __init__(self, amounts):
        super().__init__()
        self.amounts = amounts

    def forward(self, x):
        return F.pad(x, self.amounts)


def relu_conv_bn(cin, cout, kernel=1, stride=1, padding=0):
    return [nn.ReLU(), nn.Conv2d(cin, cout, kernel, stride, padding, bias=False), nn.BatchNorm2d(cout)]


class FactorizedReduce(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout // 2, 1, stride=2, bias=False)
        self.conv2 = nn.Conv2d(cin, cout // 2, 1, stride=2, bias=False)
        self.bn = nn.BatchNorm2d(cout)

    def forward(self, x):
        r = F.relu(x)
        shifted = F.pad(r, (-1, 1, -1, 1))
        return self.bn(torch.cat([self.conv1(r), self.conv2(shifted)], 1))


def operation(kind, cin, c, stride):
    q = c // 4
    if kind == "none":
        return nn.Identity() if stride == 1 and cin == c else nn.Sequential(*relu_conv_bn(cin, c, 1, stride))
    if kind == "conv_1x1":
        return nn.Sequential(*relu_conv_bn(cin, c, 1, stride))
    if kind == "conv_3x3":
        return nn.Sequential(*relu_conv_bn(cin, q), *relu_conv_bn(q, q, 3, stride, 1), *relu_conv_bn(q, c))
    if kind == "conv_1x7_7x1":
        return nn.Sequential(*relu_conv_bn(cin, q), *relu_conv_bn(q, q, (1, 7), (1, stride), (0, 3)),
                             *relu_conv_bn(q, q, (7, 1), (stride, 1), (3, 0)), *relu_conv_bn(q, c))
    pools = {"max_pool_2x2": lambda: nn.MaxPool2d(2, 2),
             "max_pool_3x3": lambda: nn.MaxPool2d(3, stride, 1),
             "avg_pool_3x3": lambda: nn.AvgPool2d(3, stride, 1, count_include_pad=False)}
    layers = [pools[kind]()]
    if cin != c:
        layers += [nn.Conv2d(cin, c, 1, bias=False), nn.BatchNorm2d(c)]
    return nn.Sequential(*layers)


class Cell(nn.Module):
    def __init__(self, prev_prev, prev, c, reduction, reduction_prev):
        super().__init__()
        self.reduce1 = nn.Sequential(*relu_conv_bn(prev, c))
        self.reduce2 = None
        if reduction_prev:
            self.reduce2 = FactorizedReduce(prev_prev, c)
        elif prev_prev > 0 and prev_prev != c:
            self.reduce2 = nn.Sequential(*relu_conv_bn(prev_prev, c))
        self.genotype = REDUCTION if reduction else NORMAL
        second = c if prev_prev > 0 else prev
        self.ops = nn.ModuleList(
            operation(kind, second if i == 1 else c, c, 2 if reduction and i < 2 else 1)
            for i, kind in self.genotype[0])

    def forward(self, inputs):
        prev = inputs[-1]
        states = [self.reduce1(prev), self.reduce2(inputs[0]) if self.reduce2 is not None else inputs[0]]
        ops = self.genotype[0]
        for k in range(0, len(ops), 2):
            states.append(self.ops[k](states[ops[k][0]]) + self.ops[k + 1](states[ops[k + 1][0]]))
        return [prev, torch.cat([states[i] for i in self.genotype[1]], 1)]


def build(config):
    if config["layer"] == "separable":
        cin, k = config["in_channels"], config["kernel"]
        return nn.Sequential(nn.ReLU(), nn.Conv2d(cin, cin, k, config["stride"], k // 2, groups=cin, bias=False),
                             nn.Conv2d(cin, config["out_channels"], 1, bias=False),
                             nn.BatchNorm2d(config["out_channels"]))
    if config["layer"] == "zero_pad":
        return Pad(tuple(config["amounts"]))
    if config["layer"] == "factorized_reduce":
        return FactorizedReduce(config["in_channels"], config["out_channels"])
    return Cell(config["prev_prev"], config["prev"], config["channels"], config["reduction"],
                config["reduction_prev"])


def compute(inputs, config):
    block = build(config)
    if inputs["x0"].dtype == torch.float64:
        block.double()
    state = {k: v for k, v in inputs.items() if not k.startswith(("x", "grad_y"))}
    missing, unexpected = block.load_state_dict(state, strict=False)
    assert not unexpected, f"unexpected parameters {unexpected}"
    assert all(k.endswith("num_batches_tracked") for k in missing), f"missing parameters {missing}"
    block.train(config["training"])
    xs = [inputs[f"x{i}"].clone().requires_grad_() for i in range(2) if f"x{i}" in inputs]
    ys = block(xs) if config["layer"] == "cell" else [block(xs[0])]
    grads = [inputs[f"grad_y{i}"] for i in range(len(ys))]
    torch.autograd.backward(ys, grads)
    out = {f"y{i}": y for i, y in enumerate(ys)}
    out.update({f"grad_x{i}": x.grad for i, x in enumerate(xs)})
    for name, p in block.named_parameters():
        out["grad_" + name] = p.grad
    for name, b in block.named_buffers():
        if not name.endswith("num_batches_tracked"):
            out[name] = b
    return out


if __name__ == "__main__":
    common.main(compute)
