"""PyTorch reference for XLNet's two-stream relative attention and the XLNet layer.

Written the way XLNet's own code computes it (in float64, cast back at the end): the relative
positions are the sinusoids of pos_seq = T, T-1, ..., -T+1 (2T of them), and the position scores
are moved into place with Transformer-XL's reshape trick (rel_shift), not with loom's gather.
Masks follow XLNet's perm_mask: the content stream of i sees j when rank[j] <= rank[i], the query
stream when rank[j] < rank[i]; a query that sees nothing gets zero attention.

Config: embed_dim, heads, and for the whole layer ("block": true) eps. Parameters arrive with
loom's names: q/k/v/o/r.weight, content_bias, position_bias (prefixed "rel_attn." in the block),
norm1/linear1/linear2/norm2.{weight,bias}.
"""
import math

import torch
import torch.nn.functional as F

import common


def sinusoids(pos_seq, dim):
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, dim, 2.0, dtype=torch.float64) / dim))
    angles = torch.outer(pos_seq, inv_freq)
    return torch.cat([angles.sin(), angles.cos()], dim=-1)


def rel_shift(x, klen):
    """x [B, H, T, R] (R = 2T positions) -> [B, H, T, klen], Transformer-XL's trick."""
    b, h, t, r = x.shape
    x = x.reshape(b, h, r, t)[:, :, 1:, :].reshape(b, h, t, r - 1)
    return x[..., :klen]


def two_stream(h, g, ranks, p, prefix, heads):
    batch, t, e = h.shape
    d = e // heads
    w = lambda name: p[prefix + name]
    pos = sinusoids(torch.arange(t, -t, -1.0, dtype=torch.float64), e)
    k_r = (pos @ w("r.weight").T).view(2 * t, heads, d)
    k = (h @ w("k.weight").T).view(batch, t, heads, d)
    v = (h @ w("v.weight").T).view(batch, t, heads, d)
    u, bias_r = w("content_bias"), w("position_bias")

    def stream(x, blocked):
        q = (x @ w("q.weight").T).view(batch, t, heads, d)
        ac = torch.einsum("bihd,bjhd->bhij", q + u, k)
        bd = rel_shift(torch.einsum("bihd,jhd->bhij", q + bias_r, k_r), t)
        score = ((ac + bd) / math.sqrt(d)).masked_fill(blocked[:, None], -1e30)
        prob = torch.softmax(score, dim=-1) * (~blocked[:, None])
        return torch.einsum("bhij,bjhd->bihd", prob, v).reshape(batch, t, e) @ w("o.weight").T

    later = ranks[:, None, :] > ranks[:, :, None]      # [b, i, j]: j comes after i
    not_before = ranks[:, None, :] >= ranks[:, :, None]
    return stream(h, later), stream(g, not_before)


def post_ln(x, a, p, eps):
    e = x.shape[-1]
    x1 = F.layer_norm(x + a, (e,), p["norm1.weight"], p["norm1.bias"], eps)
    f = F.linear(F.gelu(F.linear(x1, p["linear1.weight"], p["linear1.bias"])), p["linear2.weight"], p["linear2.bias"])
    return F.layer_norm(x1 + f, (e,), p["norm2.weight"], p["norm2.bias"], eps)


def compute(t, c):
    dtype = t["h"].dtype
    p = {k[len("param."):]: common.parameter(v.double()) for k, v in t.items() if k.startswith("param.")}
    h = t["h"].double().requires_grad_()
    g = t["g"].double().requires_grad_()
    ranks = t["ranks"].double()
    block = c.get("block", False)
    y_h, y_g = two_stream(h, g, ranks, p, "rel_attn." if block else "", c["heads"])
    if block:
        y_h, y_g = post_ln(h, y_h, p, c["eps"]), post_ln(g, y_g, p, c["eps"])
    torch.autograd.backward([y_h, y_g], [t["grad_h"].double(), t["grad_g"].double()])
    out = {"y_h": y_h, "y_g": y_g, "grad_h": h.grad, "grad_g": g.grad}
    out.update({"grad." + name: value.grad for name, value in p.items()})
    return {k: v.detach().to(dtype) for k, v in out.items()}


if __name__ == "__main__":
    common.main(compute)
