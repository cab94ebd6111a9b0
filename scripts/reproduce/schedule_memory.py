#!/usr/bin/python3
"""The analysis of scripts/reproduce/schedule_memory.sh: measured per-stage activation peaks of every
schedule kind next to the papers' figures, `loom simulate`'s in-flight counts and a tensor-level model
of loom's memory accounting, and the simulator's bubble next to docs/schedules.md's closed forms.

    schedule_memory.py WORK CSV ROWS HIDDEN CLASSES LAYERS STAGES "MICROBATCHES" "KINDS" REPEATS

reads WORK/K-mM-rR.jsonl (loom train --metrics) and WORK/K-mM.full.txt / .sim.json (loom simulate
--full, --json), writes CSV (one row per M, kind and stage) and prints the Markdown tables of
docs/schedules.md.

The model (`stage_peaks`) replays one stage's program on loom's tensors for the mlp preset (blocks
Linear+ReLU, then the classifier and cross-entropy): a forward keeps each block's output (ReLU saves
it; the next Linear saves it as its input) and the log-probabilities, and passes through the
pre-activation of the block it is computing; a whole backward allocates only workspace; a split
backward's input half (BI) frees what each ReLU saved and allocates, as activations, each Linear's
output gradient (kept for BW) and the input gradient it sends; BW frees the rest. What it cannot know
is when a send completes: MPI keeps the sent tensor until then, and loom reaps finished sends after
each compute action. `lower` lets every send complete at once; `upper` keeps it until the sender has
certainly seen it complete: the first compute action after a receive that causally follows the
receiver's wait for it (happens-before over the programs run with zero costs).
"""
import json
import re
import sys

TOKEN = re.compile(r"^(F|BI|BW|B|SA|RA|SG|RG|AR|STEP)(\d*)(?:c(\d+))?(?:@\d+)?$")
COMPUTE = {"F", "B", "BI", "BW"}
# loom's table of schedule kinds (`loom schedule list --json`, written to WORK by schedule_memory.sh).
KINDS = {}


def load_kinds(work):
    with open(f"{work}/schedule_kinds.json") as f:
        KINDS.update({k["name"]: k for k in json.load(f)})


def chunks_of(kind):
    return KINDS[kind]["chunks"] or 2  # 0: --chunks, which schedule_memory.sh sets to 2


# ---- the papers' figures, relative to 1F1B's stage-0 peak (S micro-batches) ----

def paper_ratio(kind, s, m, v):
    """(ratio, where it comes from) of the fullest stage's activations to 1F1B's stage 0."""
    if kind == "gpipe":
        return m / s, "GPipe holds all M: M/S"
    if kind == "dapple":
        return 1.0, "1F1B: S micro-batches on stage 0"
    if kind == "zb-h1":
        return 1.0, "ZB paper: ZB-H1 ≈ 1F1B"
    if kind == "zb-h2":
        return (2 * s - 1) / s, "ZB paper: ZB-H2 (2S−1)/S"
    if kind == "interleaved":
        return 1 + (s - 1) / (s * v), "Megatron-LM: 1 + (S−1)/(S·v)"
    if kind == "looped-bfs":
        return m / s, "BFS holds all M: M/S"
    if kind == "interleaved-zb":
        return 1.0, "ZB-1p budget (PyTorch's ZB interleaved): 1F1B"
    if kind == "zb-v":
        return 1.0, "ZB paper: ZB-V ≈ 1F1B"
    if kind == "v-half":
        return 0.5, "controllable-memory paper: V-Half 1/2"
    if kind == "v-min":
        return 1 / 3, "controllable-memory paper: V-Min 1/3"
    if kind == "dualpipev":
        return (2 * s + 1) / (2 * s), "DualPipe table: 2S+1 chunks, (2S+1)/2S"
    raise ValueError(kind)


# ---- docs/schedules.md's closed forms for the bubble (F = 1, B = 2, so BI = BW = F; free links) ----

def formula_bubble(kind, s, m, v):
    """(bubble, how the doc has it) from docs/schedules.md, or (None, why not)."""
    if kind in ("gpipe", "dapple"):
        return (s - 1) / (m + s - 1), "(S−1)/(M+S−1), longest path"
    if kind == "interleaved":
        return (s - 1) / (v * m + s - 1), "(S−1)/(vM+S−1), Megatron-LM"
    if kind == "looped-bfs":
        if m >= s:
            return (s - 1) / (v * m + s - 1), "(S−1)/(vM+S−1) for M ≥ S, longest path"
        return 1 - v * m / (v * s + m - 1), "1 − vM/(vS+M−1) for M < S, longest path"
    if kind == "zb-h1":
        if m >= s:  # x = max(T_F, T_BI, T_F + T_BI − T_BW) = T with equal costs
            return (s - 1) / (3 * m + s - 1), "(S−1)x/(3M·T+(S−1)x), x = T: (S−1)/(3M+S−1), three paths"
        return None, "M < S: step (M+S−1)(T_F+T_BI)+T_BW"
    if kind == "zb-h2":
        if m >= s:
            return (s - 1) / (3 * m + s - 1), ("(S−1)/(3M+S−1), path bound met for M ≥ 2(S−1)" if m >= 2 * (s - 1)
                                              else "(S−1)/(3M+S−1), S ≤ M < 2(S−1) as the simulator finds")
        return None, "M < S: ZB-H1's path 3"
    if kind == "interleaved-zb":
        if m >= s:
            return (s - 1) / (3 * v * m + s - 1), "(S−1)/(3vM+S−1) for M ≥ S, longest path"
        return None, "M < S: the max of two forms"
    slots = 6 * m  # the V kinds: a slot is one chunk action, each stage computes 6M of them
    if kind == "dualpipev":
        if m < 2 * s:
            return None, "M < 2S: the phases shrink (M >= 2S in the doc)"
        return 1 - slots / (6 * m + s - 1), "1 − 6M/(6M+S−1) slots for M ≥ 2S, loom's pairs (rigid pairs: 6M+2(S−1))"
    if kind == "zb-v":
        step = max(6 * m + s - 1, 4 * m + 4 * s - 2)
        return 1 - slots / step, "1 − 6M/max(6M+S−1, 4M+4S−2) slots, lower bound met"
    if kind == "v-min":
        if m < 2 or s == 1:
            return None, "M = 1 or S = 1: other forms"
        g = 2 if s % 3 == 0 else 0
        return 1 - slots / (6 * m + 4 * s - 5 + g), "1 − 6M/(6M+4S−5+g) slots: the laid-out block's bound, met by the simulator"
    if kind == "v-half":
        if m < 2:
            return None, "M = 1: 4S+2 slots"
        step = (max(6 * m + 7 * (s - 1) / 2, 5 * m + 4 * s - 3) if s % 2 else
                max(6 * m + (7 * s - 4) / 2, 5 * m + 4 * s - 1))
        return 1 - slots / step, "1 − 6M/max(6M+(7S−4)/2, 5M+4S−1) slots (S even): fitted to the simulator"
    raise ValueError(kind)


# ---- the full programs of `loom simulate --full` ----

def parse_full(text, stages, chunks):
    """(placement {(stage, chunk): virtual stage}, programs [[(op, mb, chunk)]])."""
    placement = {(s, c): c * stages + s for s in range(stages) for c in range(chunks)}
    programs = {}
    for line in text.splitlines():
        line = line.split("#")[0].strip()
        if line.startswith("placement "):
            for s, group in enumerate(line.split()[1:]):
                for c, vs in enumerate(group.split(",")):
                    placement[(s, c)] = int(vs)
        elif re.match(r"^stage \d+:", line):
            head, body = line.split(":", 1)
            program = []
            tokens = []
            for token in body.split():  # an overlapped pair (F3c0;B1c1): its halves in order
                tokens += token.strip("()").split(";") if token.startswith("(") else [token]
            for token in tokens:
                match = TOKEN.match(token)
                if not match:
                    raise ValueError(f"cannot read action {token!r}")
                op, mb, c = match.group(1), match.group(2), match.group(3)
                program.append((op, int(mb) if mb else -1, int(c or 0)))
            programs[int(head.split()[1])] = program
    return placement, [programs[s] for s in range(stages)]


def message_key(op, mb, vs):
    """The message a transfer names: (activation or gradient, micro-batch, receiving virtual stage)."""
    if op == "SA":
        return ("A", mb, vs + 1)
    if op == "RA":
        return ("A", mb, vs)
    if op == "SG":
        return ("G", mb, vs - 1)
    return ("G", mb, vs)  # RG


def send_releases(placement, programs):
    """For every message sent between ranks: (sender, index of the send) -> index of the compute
    action after which the sender has certainly reaped it (None: the flush at the end)."""
    stages = len(programs)
    where = {vs: s for (s, c), vs in placement.items()}
    peer = {"SA": 1, "RG": 1, "SG": -1, "RA": -1}  # the receiver of a send, the sender of a receive

    def local(s, op, vs):
        return where[vs + peer[op]] == s

    clocks = [[] for _ in range(stages)]  # vector clock after each action
    vc = [[0] * stages for _ in range(stages)]
    sent, waited = {}, {}  # key -> (stage, index, clock)
    pos = [0] * stages
    while any(pos[s] < len(programs[s]) for s in range(stages)):
        moved = False
        for s in range(stages):
            while pos[s] < len(programs[s]):
                op, mb, c = programs[s][pos[s]]
                vs = placement[(s, c)]
                remote = op in peer and not local(s, op, vs)
                if op in ("RA", "RG") and remote:
                    key = message_key(op, mb, vs)
                    if key not in sent:
                        break
                    vc[s] = [max(a, b) for a, b in zip(vc[s], sent[key][2])]
                    waited[key] = (s, pos[s])
                vc[s][s] = pos[s] + 1
                if op in ("SA", "SG") and remote:
                    sent[message_key(op, mb, vs)] = (s, pos[s], list(vc[s]))
                clocks[s].append(list(vc[s]))
                pos[s] += 1
                moved = True
        if not moved:
            raise ValueError("the programs deadlock")
    releases = {}
    for key, (sender, index, _) in sent.items():
        receiver, wait_index = waited[key]
        release = None
        for k in range(index + 1, len(programs[sender])):
            if clocks[sender][k][receiver] >= wait_index + 1:  # causally after the receiver's wait
                release = next((r for r in range(k, len(programs[sender])) if programs[sender][r][0] in COMPUTE), None)
                break
        releases[(sender, index)] = release
    return releases


# ---- the tensor-level model of one stage ----

class Memory:
    def __init__(self):
        self.refs, self.size, self.current, self.peak, self.count = {}, {}, 0, 0, 0

    def new(self, nbytes):
        self.count += 1
        self.refs[self.count], self.size[self.count] = 1, nbytes
        self.current += nbytes
        self.peak = max(self.peak, self.current)
        return self.count

    def ref(self, t):
        self.refs[t] += 1
        return t

    def unref(self, t):
        self.refs[t] -= 1
        if not self.refs[t]:
            self.current -= self.size.pop(t)
            del self.refs[t]


def block_kinds(layers, virtual_stages):
    """Each virtual stage's blocks: 'H' (Linear + ReLU) or 'C' (the classifier), split evenly."""
    if layers % virtual_stages:
        raise ValueError(f"{layers} blocks do not split evenly over {virtual_stages} virtual stages")
    names = ["H"] * (layers - 1) + ["C"]
    per = layers // virtual_stages
    return [names[i * per:(i + 1) * per] for i in range(virtual_stages)]


def stage_peak(stage, placement, program, blocks, hidden_bytes, class_bytes, releases=None, loss_bytes=4):
    """Peak activation bytes of one stage's program; releases None: every send completes at once."""
    vs_of = {c: vs for (s, c), vs in placement.items() if s == stage}
    chunk_of = {vs: c for c, vs in vs_of.items()}
    last = len(placement) - 1
    mem = Memory()
    state = {}
    release_after = {}

    def st(mb, c):
        return state.setdefault((mb, c), {"saved": [], "relu": [], "in": None, "grad_in": None, "out": None})

    for index, (op, mb, c) in enumerate(program):
        vs = vs_of.get(c)
        s = st(mb, c) if mb >= 0 else None
        if op == "F":
            cur = s["in"] if s["in"] is not None else mem.new(0)  # the data or a received tensor: not activations
            s["in"] = None
            for block in blocks[vs]:
                z = mem.new(hidden_bytes if block == "H" else class_bytes)  # the Linear's output
                s["saved"].append(mem.ref(cur))  # the Linear keeps its input
                if block == "H":
                    y = mem.new(hidden_bytes)  # the ReLU's output, which it keeps
                    s["relu"].append(mem.ref(y))
                    mem.unref(z)
                    mem.unref(cur)
                    cur = y
                else:
                    mem.unref(cur)
                    cur = z
            if vs == last:
                s["loss"] = [mem.new(class_bytes), mem.new(loss_bytes)]  # log-probabilities, the loss
                mem.unref(cur)
            else:
                s["out"] = cur
        elif op in ("B", "BI"):
            split = op == "BI"
            if vs == last:
                grad = mem.new(0)  # the loss's gradient is workspace
                for t in s.pop("loss"):
                    mem.unref(t)
            else:
                grad = s["grad_in"] if s["grad_in"] is not None else mem.new(0)
                s["grad_in"] = None
            incoming = grad
            for block in reversed(blocks[vs]):
                if block == "H":
                    g = mem.new(hidden_bytes if split else 0)  # the ReLU's input gradient
                    mem.unref(s["relu"].pop())  # the ReLU frees what it saved
                    gx = mem.new(hidden_bytes if split else 0)  # the Linear's input gradient
                    if split:
                        s["saved"].append(mem.ref(g))  # kept for BW
                    mem.unref(g)
                else:
                    g = grad
                    gx = mem.new(hidden_bytes if split else 0)
                    if split:
                        s["saved"].append(mem.ref(g))
                if grad is not incoming:
                    mem.unref(grad)
                grad = gx
            mem.unref(incoming)
            if not split:
                for t in s["saved"]:
                    mem.unref(t)
                s["saved"] = []
            if vs == 0:
                mem.unref(grad)  # the first virtual stage sends no gradient
            else:
                s["out_grad"] = grad
        elif op == "BW":
            for t in s["saved"]:
                mem.unref(t)
            s["saved"] = []
        elif op in ("SA", "SG"):
            tensor = s.pop("out") if op == "SA" else s.pop("out_grad")
            peer = vs + 1 if op == "SA" else vs - 1
            if peer in chunk_of:  # a local hand-over
                st(mb, chunk_of[peer])["in" if op == "SA" else "grad_in"] = tensor
            elif releases is None:
                mem.unref(tensor)
            else:
                release_after.setdefault(releases[(stage, index)], []).append(tensor)
        if op in COMPUTE:
            for t in release_after.pop(index, []):
                mem.unref(t)
    return mem.peak


def stage_peaks(full_text, stages, chunks, layers, hidden_bytes, class_bytes):
    """([lower bound per stage], [upper bound per stage]) of the activation peak."""
    placement, programs = parse_full(full_text, stages, chunks)
    blocks = block_kinds(layers, stages * chunks)
    releases = send_releases(placement, programs)
    lower = [stage_peak(s, placement, programs[s], blocks, hidden_bytes, class_bytes) for s in range(stages)]
    upper = [stage_peak(s, placement, programs[s], blocks, hidden_bytes, class_bytes, releases) for s in range(stages)]
    return lower, upper


# ---- the script's tables ----

def main():
    work, out, rows_per_mb, hidden, classes, layers, stages, microbatches, kinds, repeats = sys.argv[1:]
    rows_per_mb, hidden, classes, layers, stages, repeats = map(int, (rows_per_mb, hidden, classes, layers, stages, repeats))
    microbatches = [int(m) for m in microbatches.split()]
    kinds = kinds.split()
    load_kinds(work)
    unit = rows_per_mb * hidden * 4  # one block's output for one micro-batch (f32)
    stage_mb = unit * layers // stages  # one micro-batch's activations on one stage
    import tables

    rows = []
    for m in microbatches:
        for kind in kinds:
            v = chunks_of(kind)
            sim = json.load(open(f"{work}/{kind}-m{m}.sim.json"))
            full = open(f"{work}/{kind}-m{m}.full.txt").read()
            lower, upper = stage_peaks(full, stages, v, layers, unit, rows_per_mb * classes * 4)
            runs = []
            for r in range(1, repeats + 1):
                steps = [json.loads(line) for line in open(f"{work}/{kind}-m{m}-r{r}.jsonl") if '"step"' in line]
                runs.append([p["activations"] for p in steps[-1]["peak_bytes_by_stage"]])  # peaks since the start
            paper, paper_source = paper_ratio(kind, stages, m, v)
            formula, formula_source = formula_bubble(kind, stages, m, v)
            for stage in range(stages):
                measured = [run[stage] for run in runs]
                inflight = sim["per_stage"][stage]["peak_inflight"]
                chunk_bytes = stage_mb // v
                rows.append({
                    "schedule": kind, "chunks": v, "stages": stages, "microbatches": m, "microbatch_rows": rows_per_mb,
                    "stage": stage, "repeats": repeats, "split_backward": int(KINDS[kind]["splits_backward"]),
                    "block_output_bytes": unit, "chunk_activation_bytes": chunk_bytes, "stage_microbatch_bytes": stage_mb,
                    "measured_min_bytes": min(measured), "measured_max_bytes": max(measured),
                    "simulated_inflight_chunks": inflight,
                    "simulated_inflight_microbatches": sim["per_stage"][stage]["peak_activation_microbatches"],
                    "simulated_bytes": inflight * chunk_bytes + unit,  # + the forward's pre-activation
                    "model_lower_bytes": lower[stage], "model_upper_bytes": upper[stage],
                    "paper_ratio": round(paper, 4), "paper_source": paper_source,
                    "simulated_bubble": round(sim["bubble_fraction"], 6),
                    "formula_bubble": "" if formula is None else round(formula, 6), "formula_source": formula_source,
                })
    base = {m: next(r for r in rows if (r["schedule"], r["microbatches"], r["stage"]) == ("dapple", m, 0)) for m in microbatches}
    for r in rows:
        b = base[r["microbatches"]]
        r["measured_ratio_min"] = round(r["measured_min_bytes"] / b["measured_min_bytes"], 4)
        r["measured_ratio_max"] = round(r["measured_max_bytes"] / b["measured_min_bytes"], 4)
        r["simulated_ratio"] = round(r["simulated_bytes"] / b["simulated_bytes"], 4)
        r["simulated_inflight_ratio"] = round(r["simulated_inflight_microbatches"] / b["simulated_inflight_microbatches"], 4)
    tables.write_csv(out, rows)
    print_tables(rows, microbatches, kinds, stages, stage_mb, unit, rows_per_mb)


def print_tables(rows, microbatches, kinds, stages, stage_mb, unit, rows_per_mb):
    def part(kind, m):
        return sorted((r for r in rows if (r["schedule"], r["microbatches"]) == (kind, m)), key=lambda r: r["stage"])

    def mbs(value):  # two decimals at most: the 4-byte losses do not show
        return f"{value / stage_mb:.2f}".rstrip("0").rstrip(".")

    def span(lo, hi):
        return mbs(lo) if mbs(lo) == mbs(hi) else f"{mbs(lo)}–{mbs(hi)}"

    print(f"\nActivation peaks per stage, in micro-batches of a stage ({stage_mb} B = {stage_mb // unit} blocks x "
          f"{rows_per_mb} rows x {unit // rows_per_mb} B; a chunk of a 2-chunk kind is half of it)")
    for m in microbatches:
        print(f"\nM = {m}:\n")
        print("| kind | measured, stages 0/1/2/3 (min–max of runs) | tensor model, lower–upper | simulator in flight (+ ½) "
              "| fullest ÷ 1F1B stage 0: measured | simulator | simulator in flight | paper |")
        print("|---|---|---|---|---:|---:|---:|---|")
        for kind in kinds:
            p = part(kind, m)
            measured = " / ".join(span(r["measured_min_bytes"], r["measured_max_bytes"]) for r in p)
            model = " / ".join(span(r["model_lower_bytes"], r["model_upper_bytes"]) for r in p)
            sim = " / ".join(mbs(r["simulated_bytes"]) for r in p)
            lo = max(r["measured_ratio_min"] for r in p)
            hi = max(r["measured_ratio_max"] for r in p)
            ratio = f"{lo:.2f}" if lo == hi else f"{lo:.2f}–{hi:.2f}"
            print(f"| {KINDS[kind]['title']} | {measured} | {model} | {sim} | {ratio} | {max(r['simulated_ratio'] for r in p):.2f} "
                  f"| {max(r['simulated_inflight_ratio'] for r in p):.2f} | {p[0]['paper_ratio']:.2f} ({p[0]['paper_source']}) |")
    print("\nBubble fraction: `loom simulate` (F = 1 ms, B = 2 ms, BI = BW = 1 ms, free links) against docs/schedules.md\n")
    print("| kind | " + " | ".join(f"M = {m}: simulator | formula" for m in microbatches) + " | the formula |")
    print("|---|" + "---:|---:|" * len(microbatches) + "---|")
    for kind in kinds:
        cells = []
        for m in microbatches:
            r = part(kind, m)[0]
            cells += [f"{r['simulated_bubble']:.4f}", "—" if r["formula_bubble"] == "" else f"{r['formula_bubble']:.4f}"]
        print(f"| {KINDS[kind]['title']} | " + " | ".join(cells) + f" | {part(kind, microbatches[-1])[0]['formula_source']} |")


if __name__ == "__main__":
    main()
