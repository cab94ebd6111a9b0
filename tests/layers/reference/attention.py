"""PyTorch references for multi-head attention and the transformer blocks.

loom keeps the in-projection as "qkv" (self) or "q" + "kv" (cross) Linear layers; PyTorch packs
them in in_proj_weight / in_proj_bias. map_attention() translates names and concatenates.
"""
import torch

import common


def causal_mask(t, s):
    return torch.triu(torch.ones(t, s, dtype=torch.bool), diagonal=1)


def attention_tensors(tensors, prefix):
    """{torch name: tensor} of one attention module from loom's "param.<prefix>..." tensors."""
    p = lambda n: tensors.get(f"param.{prefix}{n}")
    out = {}
    if p("qkv.weight") is not None:
        out["in_proj_weight"] = p("qkv.weight")
        if p("qkv.bias") is not None:
            out["in_proj_bias"] = p("qkv.bias")
    else:
        out["in_proj_weight"] = torch.cat([p("q.weight"), p("kv.weight")])
        if p("q.bias") is not None:
            out["in_proj_bias"] = torch.cat([p("q.bias"), p("kv.bias")])
    out["out_proj.weight"] = p("out.weight")
    if p("out.bias") is not None:
        out["out_proj.bias"] = p("out.bias")
    return out


def attention_grads(module, prefix, cross, embed_dim):
    """loom-named gradients of one attention module."""
    out = {}
    w, b = module.in_proj_weight.grad, module.in_proj_bias
    if cross:
        out[f"grad.{prefix}q.weight"] = w[:embed_dim]
        out[f"grad.{prefix}kv.weight"] = w[embed_dim:]
        if b is not None:
            out[f"grad.{prefix}q.bias"] = b.grad[:embed_dim]
            out[f"grad.{prefix}kv.bias"] = b.grad[embed_dim:]
    else:
        out[f"grad.{prefix}qkv.weight"] = w
        if b is not None:
            out[f"grad.{prefix}qkv.bias"] = b.grad
    out[f"grad.{prefix}out.weight"] = module.out_proj.weight.grad
    if module.out_proj.bias is not None:
        out[f"grad.{prefix}out.bias"] = module.out_proj.bias.grad
    return out


def load(module, values):
    params = dict(module.named_parameters())
    with torch.no_grad():
        for name, value in values.items():
            params[name].copy_(value)


def run_attention(t, c):
    E, H, cross = c["embed_dim"], c["heads"], c["cross"]
    mha = torch.nn.MultiheadAttention(E, H, bias=c["bias"], batch_first=True)
    load(mha, attention_tensors(t, ""))
    x = t["x"].requires_grad_()
    memory = t["memory"].requires_grad_() if cross else x
    mask = t["key_padding_mask"].bool() if "key_padding_mask" in t else None
    attn_mask = causal_mask(x.shape[1], memory.shape[1]) if c["causal"] else None
    y, _ = mha(x, memory, memory, key_padding_mask=mask, attn_mask=attn_mask, need_weights=False)
    y.backward(t["grad_y"])
    out = {"y": y, "grad_x": x.grad}
    if cross:
        out["grad_memory"] = memory.grad
    out.update(attention_grads(mha, "", cross, E))
    return out


def run_block(t, c):
    E, decoder = c["d_model"], c["decoder"]
    kwargs = dict(d_model=E, nhead=c["heads"], dim_feedforward=c["d_ff"], dropout=0.0,
                  activation=c["activation"], batch_first=True, norm_first=c["norm_first"],
                  layer_norm_eps=c["eps"])
    block = torch.nn.TransformerDecoderLayer(**kwargs) if decoder else torch.nn.TransformerEncoderLayer(**kwargs)
    attention_names = ["self_attn.", "multihead_attn."] if decoder else ["self_attn."]
    values = {}
    for name in attention_names:
        for k, v in attention_tensors(t, name).items():
            values[name + k] = v
    for key, value in t.items():
        if key.startswith("param.") and "attn." not in key:
            values[key[len("param."):]] = value
    load(block, values)
    x = t["x"].requires_grad_()
    if decoder:
        memory = t["memory"].requires_grad_()
        T = x.shape[1]
        y = block(x, memory, tgt_mask=causal_mask(T, T))
    else:
        mask = t["key_padding_mask"].bool() if "key_padding_mask" in t else None
        src_mask = causal_mask(x.shape[1], x.shape[1]) if c["causal"] else None
        y = block(x, src_mask=src_mask, src_key_padding_mask=mask)
    y.backward(t["grad_y"])
    out = {"y": y, "grad_x": x.grad}
    if decoder:
        out["grad_memory"] = memory.grad
    for name in attention_names:
        out.update(attention_grads(getattr(block, name[:-1]), name, name == "multihead_attn.", E))
    for n, p in block.named_parameters():
        if "attn." not in n:
            out["grad." + n] = p.grad
    return out


def compute(t, c):
    return run_block(t, c) if c.get("block") else run_attention(t, c)


if __name__ == "__main__":
    common.main(compute)
