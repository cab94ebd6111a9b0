#!/usr/bin/env python3
"""Training speed of loom's sequence presets next to the same models in PyTorch 2.x.

For each preset (gnmt8, gnmt16, bert24, bert48, xlnet24, xlnet36 at --size cpu, and gpt) this builds the
same network in PyTorch as loom builds it (models/src/presets/*.cpp), checks that both have the
same number of trainable parameters (`loom describe --json`), and trains both on one process with
2 math threads on synthetic tokens of the preset's shapes, with what `loom train` uses by default:
global batch 64 in 4 micro-batches (gradients accumulated), SGD with momentum 0.9, lr 0.05 and a
cosine schedule, the loss a mean over the global batch's targets (masked LM: over its masked
positions). Runs alternate loom, PyTorch, loom, PyTorch ... (a preset's runs together under the
machine-wide /tmp/loom-bench.lock, taken with flock(2) as flock(1) takes it); a run's figure is global_batch / median step time of its timed steps, a
preset's figure the median over its repeats. Writes CSV and a Markdown table.

    scripts/bench_presets_seq.py build/apps/loom [--quick] [--presets gnmt8,bert24] [--out DIR]
    scripts/bench_presets_seq.py build/apps/loom --presets gpt --device cuda [--precision bf16]

--device cuda trains both on the first GPU (`loom train --device cuda`; the PyTorch model and its
batches on cuda:0, each step's time taken after torch.cuda.synchronize()). --precision bf16 is
`loom train --precision bf16` against torch.autocast(bfloat16) with fp32 weights and optimizer.

PyTorch runs in this process: when the running python has no torch >= 2, the script re-executes
itself with /opt/torch2-venv/bin/python (--python to choose another).
"""
import argparse
import csv
import fcntl
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

PRESETS = ["gnmt8", "gnmt16", "bert24", "bert48", "xlnet24", "xlnet36", "gpt"]
LOCK = "/tmp/loom-bench.lock"
DEFAULT_PYTHON = "/opt/torch2-venv/bin/python"


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("loom", help="path of the loom executable")
    p.add_argument("--quick", action="store_true", help="a few steps, one repeat (well under a minute)")
    p.add_argument("--presets", default=",".join(PRESETS), help="comma-separated presets")
    p.add_argument("--size", default="cpu")
    p.add_argument("--set", default="", help="model overrides for both, as `loom train --set` (e.g. dim=768,layers=12)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="where both train")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--global-batch", type=int, default=64)
    p.add_argument("--microbatches", type=int, default=4)
    p.add_argument("--steps", type=int, default=None, help="steps per run (default 30, quick 6)")
    p.add_argument("--warmup", type=int, default=None, help="untimed first steps (default 5, quick 2)")
    p.add_argument("--repeats", type=int, default=None, help="loom/PyTorch pairs per preset (default 3, quick 1)")
    p.add_argument("--out", default="bench_presets_seq", help="directory of the CSV and Markdown files")
    p.add_argument("--python", default=DEFAULT_PYTHON, help="python with torch 2.x, when this one has none")
    a = p.parse_args()
    a.steps = a.steps or (6 if a.quick else 30)
    a.warmup = a.warmup if a.warmup is not None else (2 if a.quick else 5)
    a.repeats = a.repeats or (1 if a.quick else 3)
    a.presets = [name.strip() for name in a.presets.split(",") if name.strip()]
    if a.steps <= a.warmup:
        p.error(f"--steps {a.steps} must exceed --warmup {a.warmup}")
    if a.global_batch % a.microbatches:
        p.error(f"--global-batch {a.global_batch} is not a multiple of --microbatches {a.microbatches}")
    return a


def ensure_torch2(a):
    """Returns the torch module, re-executing under a.python when this interpreter lacks torch 2.x."""
    try:
        import torch
        if int(torch.__version__.split(".")[0]) >= 2:
            return torch
    except ImportError:
        pass
    if os.environ.get("BENCH_PRESETS_REEXEC"):
        sys.exit(f"bench_presets_seq: {a.python} has no torch >= 2")
    os.environ["BENCH_PRESETS_REEXEC"] = "1"
    os.execv(a.python, [a.python] + sys.argv)


# ---- loom side ----------------------------------------------------------------------------------

def loom_describe(loom, preset, size, overrides):
    out = subprocess.run([loom, "describe", "--model", preset, "--size", size, "--json"] + set_flag(overrides), check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def set_flag(overrides):
    return ["--set", overrides] if overrides else []


def mpi_env():
    env = dict(os.environ)
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    return env


def loom_train_rate(a, preset):
    """(samples/s, first step's loss) of one `loom train` run; samples/s = global_batch / median step time after the warm-up steps.
    The caller holds the benchmark lock (BenchLock)."""
    with tempfile.TemporaryDirectory() as tmp:
        metrics = os.path.join(tmp, "metrics.jsonl")
        cmd = ["mpirun", "-np", "1", "--bind-to", "none", a.loom, "train", "--model", preset,
               "--size", a.size, "--data", "synthetic", "--threads", str(a.threads), "--steps", str(a.steps),
               "--global-batch", str(a.global_batch), "--microbatches", str(a.microbatches), "--quiet",
               "--device", a.device, "--precision", a.precision, "--metrics", metrics] + set_flag(a.set)
        subprocess.run(cmd, check=True, env=mpi_env(), stdout=subprocess.DEVNULL)
        with open(metrics) as f:
            steps = [json.loads(line) for line in f if line.strip()]
    steps = [s for s in steps if "samples_per_s" in s]
    rates = [s["samples_per_s"] for s in steps if s["step"] > a.warmup]
    return statistics.median(rates), steps[0]["loss"]


# ---- PyTorch side: the same networks ------------------------------------------------------------

def build_torch_models(torch):
    """The PyTorch modules of the three preset families, as loom builds them (returned as a dict)."""
    nn, F = torch.nn, torch.nn.functional

    class NormalizedBahdanau(nn.Module):
        """layers/bahdanau_attention.h: score = (g v/|v|) . tanh(q Wq + k Wk + b); context = p k."""
        def __init__(self, size):
            super().__init__()
            self.linear_q = nn.Linear(size, size, bias=False)
            self.linear_k = nn.Linear(size, size, bias=False)
            self.linear_att = nn.Parameter(torch.empty(size).uniform_(-0.1, 0.1))
            self.normalize_scalar = nn.Parameter(torch.tensor(1.0 / math.sqrt(size)))
            self.normalize_bias = nn.Parameter(torch.zeros(size))

        def forward(self, query, keys):
            v_hat = self.normalize_scalar * self.linear_att / self.linear_att.norm()
            pq, pk = self.linear_q(query), self.linear_k(keys)
            hidden = torch.tanh(pq.unsqueeze(2) + pk.unsqueeze(1) + self.normalize_bias)  # [N, Tq, Tk, U]
            probs = torch.softmax(hidden @ v_hat, dim=-1)
            return probs @ keys

    class Gnmt(nn.Module):
        """models/src/presets/gnmt.cpp: tokens [n, 2T] = source then decoder input."""
        def __init__(self, vocab, hidden, encoder_layers, decoder_layers, dropout):
            super().__init__()
            self.source = nn.Embedding(vocab, hidden, padding_idx=0)
            self.target = nn.Embedding(vocab, hidden, padding_idx=0)
            self.encoder = nn.ModuleList(
                [nn.LSTM(hidden, hidden, batch_first=True, bidirectional=True)] +
                [nn.LSTM(2 * hidden if i == 1 else hidden, hidden, batch_first=True)
                 for i in range(1, encoder_layers)])
            self.decoder0 = nn.LSTM(hidden, hidden, batch_first=True)
            self.attention = NormalizedBahdanau(hidden)
            self.decoder = nn.ModuleList([nn.LSTM(2 * hidden, hidden, batch_first=True)
                                          for _ in range(1, decoder_layers)])
            self.classifier = nn.Linear(hidden, vocab)
            self.dropout = nn.Dropout(dropout)

        def forward(self, tokens):
            length = tokens.shape[1] // 2
            x = self.source(tokens[:, :length])
            for i, lstm in enumerate(self.encoder):
                if i > 0:
                    x = self.dropout(x)
                y = lstm(x)[0]
                x = y + x if i >= 2 else y
            encoder_out = x
            h = self.decoder0(self.target(tokens[:, length:]))[0]
            context = self.attention(h, encoder_out)
            x = h
            for i, lstm in enumerate(self.decoder, start=1):
                x = self.dropout(x)
                y = lstm(torch.cat([x, context], dim=-1))[0]
                x = y + x if i >= 2 else y
            return self.classifier(x)

    def init_embeddings(*tables):
        """loom's BERT, GPT and XLNet tables start at N(0, 0.02), not nn.Embedding's N(0, 1): with the
        decoder tied to the table, N(0, 1) gives logits of deviation sqrt(dim) and a first loss far above ln vocab."""
        for table in tables:
            nn.init.normal_(table.weight, 0.0, 0.02)

    class Bert(nn.Module):
        """models/src/presets/bert.cpp: word + learned position + token-type row 0, post-LN GELU layers, MLM head."""
        def __init__(self, vocab, seq, dim, heads, ffn, layers, dropout, tie):
            super().__init__()
            self.word = nn.Embedding(vocab, dim)
            self.position = nn.Embedding(seq, dim)
            self.token_type = nn.Parameter(torch.randn(2, dim) * 0.02)
            init_embeddings(self.word, self.position)
            self.norm = nn.LayerNorm(dim, eps=1e-12)
            self.dropout = nn.Dropout(dropout)
            self.layers = nn.ModuleList([
                nn.TransformerEncoderLayer(dim, heads, ffn, dropout, activation="gelu", batch_first=True,
                                           layer_norm_eps=1e-12) for _ in range(layers)])
            self.head = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.LayerNorm(dim, eps=1e-12),
                                      nn.Linear(dim, vocab))
            if tie:  # the decoder is the word embedding, as loom's tie_embeddings=1
                self.head[3].weight = self.word.weight

        def forward(self, tokens):
            positions = torch.arange(tokens.shape[1])
            x = self.word(tokens) + self.position(positions) + self.token_type[0]
            x = self.dropout(self.norm(x))
            for layer in self.layers:
                x = layer(x)
            return self.head(x)

    class Gpt(nn.Module):
        """models/src/presets/gpt.cpp: token + learned position embedding, pre-LN causal GELU layers, LayerNorm + Linear head."""
        def __init__(self, vocab, seq, dim, heads, layers, dropout, tie):
            super().__init__()
            self.token = nn.Embedding(vocab, dim)
            self.position = nn.Embedding(seq, dim)
            init_embeddings(self.token, self.position)
            self.dropout = nn.Dropout(dropout)
            self.layers = nn.ModuleList([
                nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout, activation="gelu", batch_first=True,
                                           norm_first=True) for _ in range(layers)])
            self.head = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, vocab))
            if tie:  # GPT-2's lm_head is the token embedding, as loom's tie_embeddings=1
                self.head[1].weight = self.token.weight

        def forward(self, tokens):
            length = tokens.shape[1]
            positions = torch.arange(length, device=tokens.device)
            causal = torch.triu(torch.full((length, length), float("-inf"), device=tokens.device), diagonal=1)
            x = self.dropout(self.token(tokens) + self.position(positions))
            for layer in self.layers:
                x = layer(x, src_mask=causal)
            return self.head(x)

    class TwoStreamRelativeAttention(nn.Module):
        """layers/relative_attention.h: score[i, j] = ((q_i + u).k_j + (q_i + w).kr[T-1-i+j]) / sqrt(D);
        the content stream sees ranks[j] <= ranks[i], the query stream ranks[j] < ranks[i]."""
        def __init__(self, dim, heads, dropout):
            super().__init__()
            self.heads, self.head_dim = heads, dim // heads
            self.q, self.k, self.v, self.o, self.r = (nn.Linear(dim, dim, bias=False) for _ in range(5))
            self.content_bias = nn.Parameter(torch.randn(heads, self.head_dim) * 0.02)
            self.position_bias = nn.Parameter(torch.randn(heads, self.head_dim) * 0.02)
            self.dropout = nn.Dropout(dropout)

        def split(self, x):  # [B, L, E] -> [B, H, L, D]
            return x.view(x.shape[0], x.shape[1], self.heads, self.head_dim).transpose(1, 2)

        def attend(self, q, k, v, kr, shift, sees):
            scale = 1.0 / math.sqrt(self.head_dim)
            ac = (q + self.content_bias.unsqueeze(1)) @ k.transpose(-1, -2)
            bd = (q + self.position_bias.unsqueeze(1)) @ kr.transpose(-1, -2)  # [B, H, T, 2T-1]
            bd = torch.gather(bd, 3, shift.expand(q.shape[0], q.shape[1], -1, -1))
            scores = ((ac + bd) * scale).masked_fill(~sees, torch.finfo(q.dtype).min)
            probs = torch.softmax(scores, dim=-1) * sees  # rows that see nothing: zero attention
            out = self.dropout(probs) @ v
            return self.o(out.transpose(1, 2).reshape(q.shape[0], q.shape[2], -1))

        def forward(self, h, g, ranks, sinusoids, shift):
            k, v, q_h, q_g = self.split(self.k(h)), self.split(self.v(h)), self.split(self.q(h)), self.split(self.q(g))
            kr = self.r(sinusoids).view(-1, self.heads, self.head_dim).transpose(0, 1)  # [H, 2T-1, D]
            content = (ranks.unsqueeze(1) <= ranks.unsqueeze(2)).unsqueeze(1)  # [B, 1, i, j]
            query = (ranks.unsqueeze(1) < ranks.unsqueeze(2)).unsqueeze(1)
            return self.attend(q_h, k, v, kr, shift, content), self.attend(q_g, k, v, kr, shift, query)

    class XLNetLayer(nn.Module):
        """layers/xlnet.h: x1 = norm1(x + drop(a)); y = norm2(x1 + drop(linear2(drop(gelu(linear1(x1))))))."""
        def __init__(self, dim, heads, ffn, dropout):
            super().__init__()
            self.rel_attn = TwoStreamRelativeAttention(dim, heads, dropout)
            self.norm1, self.norm2 = nn.LayerNorm(dim, eps=1e-12), nn.LayerNorm(dim, eps=1e-12)
            self.linear1, self.linear2 = nn.Linear(dim, ffn), nn.Linear(ffn, dim)
            self.dropout = nn.Dropout(dropout)

        def stream(self, x, a):
            x1 = self.norm1(x + self.dropout(a))
            f = self.linear2(self.dropout(F.gelu(self.linear1(x1))))
            return self.norm2(x1 + self.dropout(f))

        def forward(self, h, g, ranks, sinusoids, shift):
            a_h, a_g = self.rel_attn(h, g, ranks, sinusoids, shift)
            return self.stream(h, a_h), self.stream(g, a_g)

    def relative_sinusoids(length, dim):
        distance = torch.arange(length - 1, -length, -1, dtype=torch.float64).unsqueeze(1)
        angle = distance * torch.pow(10000.0, -2.0 * torch.arange(dim // 2, dtype=torch.float64) / dim)
        return torch.cat([torch.sin(angle), torch.cos(angle)], dim=1).float()

    class XLNet(nn.Module):
        """models/src/presets/xlnet.cpp: embedding (word, mask embedding, a new factorisation order per
        sample and step), two-stream layers, the LM head on the query stream (tied to the word embedding)."""
        def __init__(self, vocab, seq, dim, heads, ffn, layers, dropout, tie):
            super().__init__()
            self.word = nn.Embedding(vocab, dim)
            self.mask_embedding = nn.Parameter(torch.randn(dim) * 0.02)
            init_embeddings(self.word)
            self.layers = nn.ModuleList([XLNetLayer(dim, heads, ffn, dropout) for _ in range(layers)])
            self.output = nn.Linear(dim, vocab)
            if tie:
                self.output.weight = self.word.weight
            self.dropout = nn.Dropout(dropout)
            self.register_buffer("sinusoids", relative_sinusoids(seq, dim), persistent=False)
            i, j = torch.arange(seq).unsqueeze(1), torch.arange(seq).unsqueeze(0)
            self.register_buffer("shift", (seq - 1 - i + j).view(1, 1, seq, seq), persistent=False)

        def forward(self, tokens):
            batch, length = tokens.shape
            ranks = torch.argsort(torch.rand(batch, length), dim=1).argsort(dim=1).float()
            h = self.dropout(self.word(tokens))
            g = self.dropout(self.mask_embedding.expand(batch, length, -1))
            for layer in self.layers:
                h, g = layer(h, g, ranks, self.sinusoids, self.shift)
            return self.output(self.dropout(g))

    return {"Gnmt": Gnmt, "Bert": Bert, "XLNet": XLNet, "Gpt": Gpt}


def torch_model_and_task(torch, preset, settings):
    """(module, task) for a preset, from the settings of `loom describe` (dropout in percent)."""
    models = build_torch_models(torch)
    s = {k: int(v) for k, v in settings.items()}
    dropout = settings["dropout"] / 100.0
    tie = bool(s.get("tie_embeddings", 0))  # absent: a loom before ties (untied)
    if preset.startswith("gnmt"):
        layers = int(preset[len("gnmt"):]) // 2
        return models["Gnmt"](s["vocab"], s["hidden"], layers, layers, dropout), "translate"
    if preset == "gpt":
        return models["Gpt"](s["vocab"], s["seq"], s["dim"], s["heads"], s["layers"], dropout, tie), "next"
    family = "Bert" if preset.startswith("bert") else "XLNet"
    model = models[family](s["vocab"], s["seq"], s["dim"], s["heads"], s["ffn"], s["layers"], dropout, tie)
    return model, "masked" if family == "Bert" else "permutation"


def synthetic_batch(torch, task, batch, seq, vocab):
    """Token inputs and targets of a preset's task (models/src/token_tasks.cpp), drawn with torch."""
    if task == "translate":
        source = torch.randint(1, vocab - 1, (batch, seq))
        target = torch.flip(source, [1]) % (vocab - 2) + 1
        start = torch.full((batch, 1), vocab - 1)
        return torch.cat([source, start, target[:, :-1]], dim=1), target
    if task == "next":  # models/src/datasets.cpp: next = (3 * token + noise in [0, 4)) mod vocab
        tokens = torch.empty(batch, seq + 1, dtype=torch.long)
        tokens[:, 0] = torch.randint(0, vocab, (batch,))
        noise = torch.randint(0, 4, (batch, seq))
        for t in range(seq):
            tokens[:, t + 1] = (3 * tokens[:, t] + noise[:, t]) % vocab
        return tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    tokens = torch.randint(0, vocab - 1, (batch, seq))
    if task == "permutation":
        return tokens, tokens
    u = torch.rand(batch, seq)  # BERT's recipe: 15% predicted; 80% [MASK], 10% random, 10% kept
    targets = torch.where(u < 0.15, tokens, torch.full_like(tokens, -100))
    inputs = torch.where(u < 0.12, torch.full_like(tokens, vocab - 1), tokens)
    inputs = torch.where((u >= 0.12) & (u < 0.135), torch.randint(0, vocab - 1, (batch, seq)), inputs)
    return inputs, targets


def torch_train_rate(torch, a, preset, settings):
    """(samples/s, first step's loss) of the PyTorch model trained as `loom train` trains it (see the module docstring)."""
    model, task = torch_model_and_task(torch, preset, settings)
    device = torch.device("cuda:0" if a.device == "cuda" else "cpu")
    model.to(device).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    cosine = lambda step: 0.5 * (1.0 + math.cos(math.pi * min(1.0, step / a.steps)))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine)
    vocab, seq = int(settings["vocab"]), int(settings["seq"])
    rows = a.global_batch // a.microbatches
    # bf16: autocast's mixed precision (bf16 matmuls, fp32 weights, gradients and optimizer), as loom's.
    autocast = torch.autocast(device.type, dtype=torch.bfloat16, enabled=a.precision == "bf16")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    times, first_loss = [], 0.0
    for step in range(a.steps):
        sync()
        start = time.perf_counter()
        inputs, targets = (t.to(device, non_blocking=True) for t in synthetic_batch(torch, task, a.global_batch, seq, vocab))
        denominator = max(int((targets != -100).sum()), 1)  # the global batch's targets
        for m in range(a.microbatches):
            part = slice(m * rows, (m + 1) * rows)
            with autocast:
                logits = model(inputs[part])
            loss = torch.nn.functional.cross_entropy(logits.float().reshape(-1, vocab), targets[part].reshape(-1),
                                                     ignore_index=-100, reduction="sum") / denominator
            loss.backward()
            if step == 0:
                first_loss += loss.item()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad(set_to_none=True)
        sync()
        times.append(time.perf_counter() - start)
    return a.global_batch / statistics.median(times[a.warmup:]), first_loss


def trainable_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


class BenchLock:
    """The machine-wide benchmark lock (flock(2), the same lock flock(1) takes)."""
    def __enter__(self):
        self.file = open(LOCK, "a")
        fcntl.flock(self.file, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.file, fcntl.LOCK_UN)
        self.file.close()


# ---- the comparison -----------------------------------------------------------------------------

def load_average():
    return open("/proc/loadavg").read().split()[0]


def bench_preset(torch, a, preset):
    info = loom_describe(a.loom, preset, a.size, a.set)
    model, _ = torch_model_and_task(torch, preset, info["settings"])
    loom_params, torch_params = int(info["parameters"]), trainable_parameters(model)
    print(f"{preset}: parameters loom {loom_params:,}  PyTorch {torch_params:,}", flush=True)
    assert loom_params == torch_params, f"{preset}: the PyTorch model is not loom's ({torch_params} != {loom_params})"
    loom_rates, torch_rates, loads, losses = [], [], [], []
    with BenchLock():  # one preset's runs back to back, loom and PyTorch alternating
        for repeat in range(a.repeats):
            loads.append(load_average())
            loom_rate, loom_loss = loom_train_rate(a, preset)
            torch.manual_seed(repeat)
            torch_rate, torch_loss = torch_train_rate(torch, a, preset, info["settings"])
            loom_rates.append(loom_rate)
            torch_rates.append(torch_rate)
            losses.append((loom_loss, torch_loss))
            print(f"  repeat {repeat + 1}: loom {loom_rates[-1]:.1f}  PyTorch {torch_rates[-1]:.1f} samples/s; step-1 loss "
                  f"loom {loom_loss:.3f} PyTorch {torch_loss:.3f} (load {loads[-1]})", flush=True)
    s = info["settings"]
    loom_rate, torch_rate = statistics.median(loom_rates), statistics.median(torch_rates)
    return {"preset": preset, "batch": a.global_batch, "microbatches": a.microbatches, "seq": int(s["seq"]),
            "parameters": loom_params, "loom_samples_per_s": round(loom_rate, 1),
            "torch_samples_per_s": round(torch_rate, 1), "ratio": round(loom_rate / torch_rate, 2),
            "loom_tokens_per_s": round(loom_rate * int(s["seq"])), "torch_tokens_per_s": round(torch_rate * int(s["seq"])),
            "load": " ".join(loads), "loom_runs": " ".join(f"{r:.1f}" for r in loom_rates),
            "torch_runs": " ".join(f"{r:.1f}" for r in torch_rates),
            "loom_loss1": round(losses[0][0], 3), "torch_loss1": round(losses[0][1], 3)}


def write_outputs(a, torch, rows):
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "bench_presets_seq.csv"), "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    lines = [f"size {a.size}{' --set ' + a.set if a.set else ''}, device {a.device}, precision {a.precision}, threads {a.threads}, global batch {a.global_batch} in {a.microbatches} micro-batches, "
             f"{a.steps} steps ({a.warmup} untimed), {a.repeats} repeats, torch {torch.__version__}, "
             f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}", "",
             "| preset | batch | seq | parameters | loom samples/s | PyTorch 2.x samples/s | ratio | load |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['preset']} | {r['batch']} | {r['seq']} | {r['parameters']:,} | {r['loom_samples_per_s']} "
                     f"| {r['torch_samples_per_s']} | {r['ratio']:.2f}x | {r['load']} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(a.out, "bench_presets_seq.md"), "w") as f:
        f.write(text)
    print("\n" + text)


def main():
    a = parse_args()
    torch = ensure_torch2(a)
    torch.set_num_threads(a.threads)
    if a.device == "cuda" and not torch.cuda.is_available():
        sys.exit("bench_presets_seq: --device cuda, but this torch sees no GPU")
    print(f"torch {torch.__version__}, uptime: {subprocess.run(['uptime'], capture_output=True, text=True).stdout.strip()}")
    rows = [bench_preset(torch, a, preset) for preset in a.presets]
    write_outputs(a, torch, rows)


if __name__ == "__main__":
    main()
