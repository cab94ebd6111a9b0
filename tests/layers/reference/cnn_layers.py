"""PyTorch references for Conv2d, MaxPool2d, AvgPool2d, global average pooling and BatchNorm2d.

Inputs: x, grad_y and the layer's parameters under PyTorch's names; config["layer"] picks the
layer, the rest of config holds its options. Outputs: y, grad_x, grad_<parameter>, and for
BatchNorm2d the running statistics after the forward.
"""
import torch
import torch.nn.functional as F

import common


def conv2d(inputs, config, x):
    weight = common.parameter(inputs["weight"])
    bias = common.parameter(inputs["bias"]) if "bias" in inputs else None
    y = F.conv2d(x, weight, bias, stride=config["stride"], padding=config["padding"],
                 dilation=config["dilation"], groups=config["groups"])
    return y, {"weight": weight, "bias": bias}


def max_pool(inputs, config, x):
    return F.max_pool2d(x, config["kernel"], config["stride"], config["padding"]), {}


def avg_pool(inputs, config, x):
    return F.avg_pool2d(x, config["kernel"], config["stride"], config["padding"],
                        count_include_pad=config["count_include_pad"]), {}


def global_avg_pool(inputs, config, x):
    return torch.flatten(F.adaptive_avg_pool2d(x, 1), 1), {}


def batch_norm(inputs, config, x):
    bn = torch.nn.BatchNorm2d(x.shape[1], eps=config["eps"], momentum=config["momentum"])
    with torch.no_grad():
        for name in ("weight", "bias", "running_mean", "running_var"):
            getattr(bn, name).copy_(inputs[name])
    bn.train(config["training"])
    y = bn(x)
    extra = {"running_mean": bn.running_mean.clone(), "running_var": bn.running_var.clone()}
    return y, {"weight": bn.weight, "bias": bn.bias, "__extra__": extra}


LAYERS = {"conv2d": conv2d, "max_pool": max_pool, "avg_pool": avg_pool,
          "global_avg_pool": global_avg_pool, "batch_norm": batch_norm}


def compute(inputs, config):
    x = inputs["x"].clone().requires_grad_()
    y, params = LAYERS[config["layer"]](inputs, config, x)
    y.backward(inputs["grad_y"])
    out = {"y": y, "grad_x": x.grad}
    for name, p in params.items():
        if name == "__extra__":
            out.update(p)
        elif p is not None:
            out["grad_" + name] = p.grad
    return out


if __name__ == "__main__":
    common.main(compute)
