"""PyTorch references for the simple layers: Linear, activations, Embedding, LayerNorm, losses.

config["layer"] selects the layer; inputs "x" (and "targets"), "grad_y" and "param.*" come from the
test. Returns "y", "grad_x" and "grad.<param>".
"""
import torch

import common


def build(c):
    kind = c["layer"]
    if kind == "linear":
        return torch.nn.Linear(c["in"], c["out"], bias=c["bias"])
    if kind in ("relu", "gelu", "tanh", "sigmoid"):
        return {"relu": torch.nn.ReLU(), "gelu": torch.nn.GELU(), "tanh": torch.nn.Tanh(),
                "sigmoid": torch.nn.Sigmoid()}[kind]
    if kind == "embedding":
        pad = c["padding_idx"]
        return torch.nn.Embedding(c["num"], c["dim"], padding_idx=None if pad < 0 else pad)
    if kind == "layer_norm":
        return torch.nn.LayerNorm(c["dim"], eps=c["eps"], elementwise_affine=c["affine"])
    if kind == "cross_entropy":
        return torch.nn.CrossEntropyLoss(ignore_index=c["ignore_index"], label_smoothing=c["smoothing"])
    if kind == "mse":
        return torch.nn.MSELoss()
    raise ValueError(kind)


def compute(t, c):
    module = build(c)
    common.load_parameters(module, t)
    out = {}
    if c["layer"] == "embedding":
        y = module(t["x"])
        y.backward(t["grad_y"])
        out["y"] = y
    elif c["layer"] == "cross_entropy":
        x = t["x"].requires_grad_()
        classes = x.shape[-1]
        y = module(x.reshape(-1, classes), t["targets"].reshape(-1))
        y.backward(t["grad_y"])
        out.update(y=y, grad_x=x.grad)
    elif c["layer"] == "mse":
        x = t["x"].requires_grad_()
        target = t["target"].requires_grad_()
        y = module(x, target)
        y.backward(t["grad_y"])
        out.update(y=y, grad_x=x.grad, grad_target=target.grad)
    else:
        x = t["x"].requires_grad_()
        y = module(x)
        y.backward(t["grad_y"])
        out.update(y=y, grad_x=x.grad)
    out.update(common.parameter_grads(module))
    return out


if __name__ == "__main__":
    common.main(compute)
