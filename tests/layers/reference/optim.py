"""torch.optim reference: apply the given per-step gradients to the given parameters."""
import torch

import common


def compute(inputs, config):
    names = config["params"]
    params = [torch.nn.Parameter(inputs[name].clone()) for name in names]
    kind = config["kind"]
    if kind == "sgd":
        opt = torch.optim.SGD(params, lr=config["lr"], momentum=config["momentum"],
                              nesterov=config["nesterov"], weight_decay=config["weight_decay"])
    elif kind == "adam":
        opt = torch.optim.Adam(params, lr=config["lr"], betas=(0.9, 0.999), eps=1e-8,
                               weight_decay=config["weight_decay"])
    else:
        opt = torch.optim.AdamW(params, lr=config["lr"], betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=config["weight_decay"])
    for step in range(config["steps"]):
        for name, p in zip(names, params):
            p.grad = inputs[f"{name}.grad{step}"].clone()
        if config.get("clip", 0) > 0:
            torch.nn.utils.clip_grad_norm_(params, config["clip"])
        opt.step()
    return {name: p.detach() for name, p in zip(names, params)}


if __name__ == "__main__":
    common.main(compute)
