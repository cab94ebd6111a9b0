#!/usr/bin/env python3
"""PyTorch's own compute order for the schedules loom mirrors, written once as CSV data (issue 28).

Builds, without a process group, PyTorch 2.x's schedule classes

    ScheduleLoopedBFS              -> looped-bfs-s4-m8.csv
    ScheduleInterleavedZeroBubble  -> interleaved-zb-s4-m8.csv
    ScheduleZBVZeroBubble          -> zb-v-s4-m8.csv
    ScheduleInterleaved1F1B        -> interleaved-s4-m8.csv   (sanity check against loom's `interleaved`)
    ScheduleDualPipeV              -> dualpipev-s4-m8.csv     (overlapped pairs as (0F7;7B3)OVERLAP_F_B cells)

at S = 4 ranks, 2 stages per rank (8 virtual stages) and M = 8 micro-batches, and writes each
schedule's `pipeline_order` (rank -> list of _Action or None, computed for every rank by the
constructor) in the format of PipelineScheduleMulti._dump_csv: one row per rank in rank order, one
cell per time step (0F0, 1B0, 1I3, 2W1; an empty cell for an idle step), written by csv.writer so
rows end in "\\r\\n". Only compute actions are in `pipeline_order`; the communication PyTorch adds
later lives in `pipeline_order_with_comms` and is not written. The stages are stand-ins (the same
idea as the mock stage of PyTorch's test/distributed/pipelining/test_schedule.py): they carry only
num_stages, group_size and group_rank, which is all the constructors read to compute the order.
Also writes README.md next to the CSVs with the torch version, the command and the date.

The files in tests/schedule/pytorch/ were made with (CPU only; no GPU, no process group):

    /root/torch2/bin/python scripts/pytorch_schedule_orders.py --out tests/schedule/pytorch/

tests/schedule/pytorch_orders_test.cpp reads them and compares them with loom's generators.
"""
import argparse
import csv
import datetime
import os
import sys

import torch
from torch.distributed.pipelining import schedules
from torch.distributed.pipelining.stage import _PipelineStageBase

RANKS = 4
STAGES_PER_RANK = 2
MICROBATCHES = 8

# loom's kind name -> PyTorch's class
KINDS = [
    ("looped-bfs", "ScheduleLoopedBFS"),
    ("interleaved-zb", "ScheduleInterleavedZeroBubble"),
    ("zb-v", "ScheduleZBVZeroBubble"),
    ("interleaved", "ScheduleInterleaved1F1B"),
    ("dualpipev", "ScheduleDualPipeV"),
]


class OrderOnlyStage(_PipelineStageBase):
    """A stage with just what a schedule's constructor reads; it can run nothing."""

    def __init__(self, num_stages, group_size, group_rank=0):  # no super().__init__: no module, no group
        self.submod = None
        self.num_stages = num_stages
        self.group_size = group_size
        self.group_rank = group_rank
        self.group = None

    def _create_grad_recv_info(self, *args, **kwargs):
        return None

    def _prepare_forward_infra(self, n_microbatches):
        pass

    def _prepare_backward_infra(self, n_microbatches):
        pass


def pipeline_order(class_name):
    cls = getattr(schedules, class_name)
    stages = [OrderOnlyStage(RANKS * STAGES_PER_RANK, RANKS) for _ in range(STAGES_PER_RANK)]
    schedule = cls(stages, MICROBATCHES)
    order = schedule.pipeline_order
    if sorted(order) != list(range(RANKS)):
        sys.exit(f"{class_name}: pipeline_order has ranks {sorted(order)}, expected 0..{RANKS - 1}")
    for rank, actions in order.items():
        for action in actions:
            if action is not None and not action.is_compute_op:
                sys.exit(f"{class_name}: rank {rank} has a non-compute action {action!r}")
    return order


def write_csv(order, path):
    # What PipelineScheduleMulti._dump_csv does: csv.writer, one row per rank; None becomes "".
    with open(path, "w", newline="") as f:
        writer = csv.writer(f)
        for rank in sorted(order):
            writer.writerow(["" if a is None else repr(a) for a in order[rank]])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/schedule/pytorch/", help="folder for the CSVs and README.md")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)

    rows = []
    for kind, class_name in KINDS:
        name = f"{kind}-s{RANKS}-m{MICROBATCHES}.csv"
        order = pipeline_order(class_name)
        write_csv(order, os.path.join(args.out, name))
        steps = max(len(a) for a in order.values())
        computes = sum(a is not None for acts in order.values() for a in acts)
        rows.append((name, class_name, kind, steps, computes))
        print(f"{name}: {class_name}, {steps} steps, {computes} compute actions")

    today = datetime.date.today().isoformat()
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write("# PyTorch's compute orders (reference data)\n\n")
        f.write("Made once by `scripts/pytorch_schedule_orders.py` from PyTorch's own schedule classes "
                "(`torch.distributed.pipelining.schedules`), without a process group, and committed as "
                "data; `tests/schedule/pytorch_orders_test.cpp` compares loom's generators with them.\n\n")
        f.write(f"- torch: `{torch.__version__}` (CPU only)\n")
        f.write(f"- python: `{sys.version.split()[0]}`\n")
        f.write(f"- date: {today}\n")
        f.write("- command (from the repository root):\n\n")
        f.write("      /root/torch2/bin/python scripts/pytorch_schedule_orders.py --out tests/schedule/pytorch/\n\n")
        f.write(f"Each file is the schedule's `pipeline_order` at {RANKS} ranks, {STAGES_PER_RANK} stages per "
                f"rank ({RANKS * STAGES_PER_RANK} virtual stages) and {MICROBATCHES} micro-batches, in "
                "the format of `PipelineScheduleMulti._dump_csv` (compute only, one row per rank, an "
                "empty cell for an idle step; loom reads it with `parse_csv_schedule`).\n\n")
        f.write("| file | PyTorch class | loom kind | steps | compute actions |\n")
        f.write("|---|---|---|---|---|\n")
        for name, class_name, kind, steps, computes in rows:
            f.write(f"| {name} | {class_name} | {kind} | {steps} | {computes} |\n")


if __name__ == "__main__":
    main()
