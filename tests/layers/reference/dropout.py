"""Dropout's arithmetic given a mask (PyTorch's own RNG differs from loom's counter-based one):
y = x * mask / (1 - p), through autograd."""
import common


def compute(t, c):
    x = t["x"].requires_grad_()
    y = x * t["mask"] / (1.0 - c["p"])
    y.backward(t["grad_y"])
    return {"y": y, "grad_x": x.grad}


if __name__ == "__main__":
    common.main(compute)
