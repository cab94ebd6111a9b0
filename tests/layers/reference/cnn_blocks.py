"""PyTorch references for the CNN blocks: ResNet bottleneck (torchvision's Bottleneck, v1.5, written
out here because Debian's python3-torch comes without torchvision) and the VGG block.

Inputs: x, grad_y and every parameter/buffer under loom's (= torchvision's) names.
config: {"block": "bottleneck" | "vgg", options..., "training": bool}.
Outputs: y, grad_x, grad_<trainable name>, and the BatchNorm buffers after the forward.
"""
from collections import OrderedDict

import torch
from torch import nn

import common


class Bottleneck(nn.Module):
    expansion = 4

    def __init__(self, in_channels, planes, stride, groups, base_width):
        super().__init__()
        width = planes * base_width // 64 * groups
        out = planes * self.expansion
        self.conv1 = nn.Conv2d(in_channels, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, groups=groups, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(out)
        self.relu = nn.ReLU()
        self.downsample = None
        if stride != 1 or in_channels != out:
            self.downsample = nn.Sequential(nn.Conv2d(in_channels, out, 1, stride=stride, bias=False),
                                            nn.BatchNorm2d(out))

    def forward(self, x):
        h = self.relu(self.bn1(self.conv1(x)))
        h = self.relu(self.bn2(self.conv2(h)))
        h = self.bn3(self.conv3(h))
        identity = x if self.downsample is None else self.downsample(x)
        return self.relu(h + identity)


def vgg_block(in_channels, out_channels, convs, batch_norm):
    layers = OrderedDict()
    for i in range(convs):
        layers[f"conv{i}"] = nn.Conv2d(in_channels if i == 0 else out_channels, out_channels, 3, padding=1)
        if batch_norm:
            layers[f"bn{i}"] = nn.BatchNorm2d(out_channels)
        layers[f"relu{i}"] = nn.ReLU()
    layers["pool"] = nn.MaxPool2d(2, 2)
    return nn.Sequential(layers)


def compute(inputs, config):
    if config["block"] == "bottleneck":
        block = Bottleneck(config["in_channels"], config["planes"], config["stride"], config["groups"],
                           config["base_width"])
    else:
        block = vgg_block(config["in_channels"], config["out_channels"], config["convs"], config["batch_norm"])
    state = {k: v for k, v in inputs.items() if k not in ("x", "grad_y")}
    missing, unexpected = block.load_state_dict(state, strict=False)
    assert not unexpected, f"unexpected parameters {unexpected}"
    assert all(k.endswith("num_batches_tracked") for k in missing), f"missing parameters {missing}"
    block.train(config["training"])
    x = inputs["x"].clone().requires_grad_()
    y = block(x)
    y.backward(inputs["grad_y"])
    out = {"y": y, "grad_x": x.grad}
    for name, p in block.named_parameters():
        out["grad_" + name] = p.grad
    for name, b in block.named_buffers():
        if not name.endswith("num_batches_tracked"):
            out[name] = b
    return out


if __name__ == "__main__":
    common.main(compute)
