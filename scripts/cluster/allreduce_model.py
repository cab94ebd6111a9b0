"""Prints `loom bench allreduce --json` rows (stdin) as a table beside the link model of
comm/include/loom/comm/allreduce_cost.h (ring and hierarchical; latency ignored), with the inter-node
bandwidth taken per host (one link per host) as well as per rank, as the header assumes."""
import argparse
import json
import sys

parser = argparse.ArgumentParser()
parser.add_argument("--nodes", type=int, required=True)
parser.add_argument("--per-node", type=int, required=True)
parser.add_argument("--inter-gbps", type=float, required=True, help="GB/s of one host's link")
parser.add_argument("--intra-gbps", type=float, required=True, help="GB/s within a host")
args = parser.parse_args()
N, G = args.nodes, args.per_node
n = N * G
inter, intra = args.inter_gbps * 1e9, args.intra_gbps * 1e9


def model_us(algorithm, size, per_rank_links):
    if algorithm == "ring":  # every host's one crossing edge carries 2S(n-1)/n
        return 2 * size * (n - 1) / n / inter * 1e6
    if algorithm == "hierarchical":
        inner = 2 * size * (G - 1) / G / intra
        across = 2 * size * (N - 1) / (N * G) / inter  # allreduce_cost.h: per rank at B_inter
        if not per_rank_links:
            across *= G  # the G ranks of a host share its one link
        return (inner + across) * 1e6
    return None


rows = json.loads(sys.stdin.read())
print(f"{'algorithm':<13} {'bytes':>10} {'time_us':>11} {'busbw_GB/s':>10} {'model_us':>10} {'model_1link_us':>14}")
for row in rows:
    size, algorithm = row["bytes"], row["algorithm"]
    header, shared = model_us(algorithm, size, True), model_us(algorithm, size, False)
    fmt = lambda v: f"{v:.0f}" if v is not None else "-"
    print(f"{algorithm:<13} {size:>10} {row['time_us']:>11.0f} {row['busbw_gbps']:>10.3f} {fmt(header):>10} {fmt(shared):>14}")
