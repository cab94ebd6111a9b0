"""Shared plumbing of the PyTorch reference scripts run by the layer tests.

A test writes its inputs (and the layer's weights) to a safetensors file, runs
`/usr/bin/python3 <script>.py IN OUT CONFIG_JSON`, and compares loom's results with the tensors
the script writes to OUT. safetensors is read and written here with plain Python (torch 1.13 has no
safetensors package): an 8-byte little-endian header length, a JSON header
{name: {dtype, shape, data_offsets}}, then the raw little-endian data.

torch must be importable: a missing torch is an error (the tests fail), never a skip.
"""
import json
import struct
import sys

try:
    import torch
except ImportError as error:  # loud on purpose: the reference tests must not pass without torch
    sys.stderr.write(f"PyTorch reference: cannot import torch with {sys.executable} ({error}); "
                     "install Debian's python3-torch (scripts/setup)\n")
    sys.exit(3)

_DTYPES = {
    "F32": torch.float32, "F64": torch.float64, "F16": torch.float16, "BF16": torch.bfloat16,
    "I32": torch.int32, "I64": torch.int64,
}
_NAMES = {v: k for k, v in _DTYPES.items()}


def read_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (length,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + length].decode("utf-8"))
    data = blob[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        dtype = _DTYPES[entry["dtype"]]
        shape = entry["shape"]
        if end > begin:
            flat = torch.frombuffer(bytearray(data[begin:end]), dtype=dtype)
        else:
            flat = torch.empty(0, dtype=dtype)
        tensors[name] = flat.reshape(shape).clone()
    return tensors


def write_safetensors(path, tensors):
    header = {}
    chunks = []
    offset = 0
    for name, tensor in tensors.items():
        t = tensor.detach().contiguous().cpu()
        raw = t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() > 0 else b""
        header[name] = {"dtype": _NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        chunks.append(raw)
        offset += len(raw)
    text = json.dumps(header).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in chunks:
            f.write(raw)


def parameter(tensor):
    """A leaf that requires grad, from a tensor loaded from the test's file."""
    return torch.nn.Parameter(tensor.clone())


def main(compute):
    """Runs compute(inputs: dict, config: dict) -> dict of output tensors, from the command line."""
    if len(sys.argv) != 4:
        sys.stderr.write(f"usage: {sys.argv[0]} IN.safetensors OUT.safetensors CONFIG_JSON\n")
        sys.exit(2)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    inputs = read_safetensors(sys.argv[1])
    config = json.loads(sys.argv[3])
    outputs = compute(inputs, config)
    write_safetensors(sys.argv[2], outputs)


def load_parameters(module, tensors, rename=None):
    """Copies "param.<loom name>" tensors into the module's parameters (names mapped by rename)."""
    rename = rename or {}
    params = dict(module.named_parameters())
    with torch.no_grad():
        for key, value in tensors.items():
            if not key.startswith("param."):
                continue
            name = key[len("param."):]
            name = rename.get(name, name)
            if name not in params:
                raise KeyError(f"no parameter {name} in {type(module).__name__}: {sorted(params)}")
            params[name].copy_(value)


def parameter_grads(module, rename=None):
    """{"grad.<loom name>": grad} for every parameter (rename maps loom names to torch names)."""
    inverse = {v: k for k, v in (rename or {}).items()}
    return {"grad." + inverse.get(n, n): p.grad for n, p in module.named_parameters() if p.grad is not None}
