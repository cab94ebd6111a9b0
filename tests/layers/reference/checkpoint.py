"""A loom checkpoint as a PyTorch user reads it: plain safetensors, read by common.read_safetensors
(plain Python, none of loom's code), checked against what the test says loom holds.

Inputs: none. config: path (the checkpoint), tensors ({name: {dtype (torch's name), shape,
values}}), metadata ({key: value} that must be there) and tensor_checksums (the object that
metadata "loom.tensor_checksums" must hold). Every difference is reported on stderr and fails the
script; output: tensors_checked, how many tensors matched.
"""
import json
import struct
import sys

import torch

import common


def metadata_of(path):
    with open(path, "rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        return json.loads(f.read(length).decode("utf-8")).get("__metadata__", {})


def compute(inputs, config):
    tensors = common.read_safetensors(config["path"])
    metadata = metadata_of(config["path"])
    expected = config["tensors"]
    problems = []
    if set(tensors) != set(expected):
        problems.append(f"tensor names: the file has {sorted(set(tensors) - set(expected))} that loom does not hold "
                        f"and lacks {sorted(set(expected) - set(tensors))} that it holds")
    checked = 0
    for name, want in expected.items():
        if name not in tensors:
            continue
        t = tensors[name]
        if t.dtype != getattr(torch, want["dtype"]):
            problems.append(f"{name}: dtype {t.dtype}, loom holds {want['dtype']}")
        elif list(t.shape) != want["shape"]:
            problems.append(f"{name}: shape {list(t.shape)}, loom holds {want['shape']}")
        else:
            values = torch.tensor(want["values"], dtype=torch.float64).reshape(want["shape"])
            if not torch.equal(t.to(torch.float64), values):  # exact: f32 -> f64 -> JSON is lossless
                worst = (t.to(torch.float64) - values).abs().max().item()
                problems.append(f"{name}: values differ from loom's by up to {worst}")
            else:
                checked += 1
    for key, value in config["metadata"].items():
        if metadata.get(key) != value:
            problems.append(f"metadata {key}: {metadata.get(key)!r}, expected {value!r}")
    try:
        each = json.loads(metadata.get("loom.tensor_checksums", ""))
    except json.JSONDecodeError as error:
        each = {}
        problems.append(f"metadata loom.tensor_checksums is not JSON ({error})")
    for name in sorted(set(each) | set(config["tensor_checksums"])):
        if each.get(name) != config["tensor_checksums"].get(name):
            problems.append(f"metadata loom.tensor_checksums[{name}]: {each.get(name)!r}, "
                            f"expected {config['tensor_checksums'].get(name)!r}")
    if problems:
        sys.stderr.write(f"{config['path']} as PyTorch reads it:\n  " + "\n  ".join(problems) + "\n")
        sys.exit(1)
    return {"tensors_checked": torch.tensor(checked, dtype=torch.int64)}


if __name__ == "__main__":
    common.main(compute)
