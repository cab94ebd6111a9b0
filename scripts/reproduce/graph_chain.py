"""A published PipeDream/DAPPLE graph.txt as the chain of layers `loom plan` plans over.

The rules are docs/planner.md's ("Collapsing a graph to a chain"): nodes in Kahn order, taking the
ready node with the smallest number first; the bytes crossing the cut after position i are the
activation sizes of the nodes at positions <= i with a consumer after i, each counted once.
The planner's own reader is C++ (planner/src/graph_profile.cpp); the scripts need the per-layer
bytes that `loom plan --json` does not print, so they read the file again with the same rules and
check the result against the plan (layer count) before using it.
"""
import heapq
import re

NODE = re.compile(r"^(node\d+|\S+) -- (.*) -- (.*)$")
EDGE = re.compile(r"^\s+(\S+) -- (\S+)\s*$")


def _number(name, position):
    match = re.fullmatch(r"node(\d+)", name)
    return int(match.group(1)) if match else position


def _fields(text):
    fields = {}
    for part in re.split(r",\s*(?=\w+=)", text):
        key, value = part.split("=", 1)
        value = value.strip()
        if value.startswith("["):
            fields[key] = sum(float(v) for v in value.strip("[]").split(";") if v.strip())
        else:
            fields[key] = float(value)
    return fields


def read_chain(path):
    """Layers in chain order: dicts with name, forward_ms, backward_ms, parameter_bytes,
    activation_bytes and boundary_bytes (all at the profiled batch)."""
    nodes, edges, order_in_file = {}, [], {}
    with open(path) as f:
        for line in f:
            if EDGE.match(line):
                edges.append(EDGE.match(line).groups())
            elif NODE.match(line.rstrip("\n")):
                name, desc, rest = NODE.match(line.rstrip("\n")).groups()
                order_in_file[name] = len(order_in_file)
                nodes[name] = {"name": name, "desc": desc, **_fields(rest)}
    consumers = {name: [] for name in nodes}
    indegree = {name: 0 for name in nodes}
    for a, b in edges:
        consumers[a].append(b)
        indegree[b] += 1
    ready = [(_number(n, order_in_file[n]), n) for n in nodes if indegree[n] == 0]
    heapq.heapify(ready)
    order = []
    while ready:
        _, name = heapq.heappop(ready)
        order.append(name)
        for b in consumers[name]:
            indegree[b] -= 1
            if indegree[b] == 0:
                heapq.heappush(ready, (_number(b, order_in_file[b]), b))
    if len(order) != len(nodes):
        raise ValueError(f"{path}: the graph has a cycle")
    return _with_boundaries(path, [nodes[n] for n in order], consumers)


def _with_boundaries(path, chain, consumers):
    position = {layer["name"]: i for i, layer in enumerate(chain)}
    last_use = [max([position[c] for c in consumers[layer["name"]]], default=i) for i, layer in enumerate(chain)]
    layers = []
    for i, layer in enumerate(chain):
        crossing = sum(chain[j]["activation_size"] for j in range(i + 1) if last_use[j] > i)
        layers.append({"name": layer["desc"], "forward_ms": layer["forward_compute_time"],
                       "backward_ms": layer["backward_compute_time"],
                       "parameter_bytes": layer["parameter_size"], "activation_bytes": layer["activation_size"],
                       "boundary_bytes": crossing})
    return layers


def check_against_plan(path, layers, plan):
    """The plan's stages must cover exactly this chain."""
    last = plan["stages"][-1]["layers"][1]
    if last + 1 != len(layers):
        raise SystemExit(f"{path}: loom plan has {last + 1} layers, this reader {len(layers)}: the readers disagree")


def planned_chains(work, profiles):
    """For each WORK/PROFILE@TAG@....json that `loom plan --json` wrote (one planner): the tags
    after the profile name, the JSON, its one plan and the profile's chain, checked against it."""
    import glob
    import json
    import os

    for path in sorted(glob.glob(os.path.join(work, "*.json"))):
        name, *tags = os.path.basename(path)[:-len(".json")].split("@")
        result = json.load(open(path))
        plan = result["planners"][0]
        layers = read_chain(os.path.join(profiles, name + ".txt"))
        check_against_plan(name, layers, plan)
        yield name, tags, result, plan, layers
