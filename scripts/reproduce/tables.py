"""What the scripts' Python parts share: the CSV writer and a strategy as a Markdown cell."""
import csv


def write_csv(path, rows, columns=None):
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=columns or list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


def strategy_cell(strategy, limit=40):
    """`[0-21]x15 \\| [22-25]x1`, or `N stages` when longer than `limit` characters."""
    text = strategy if len(strategy) <= limit else f"{strategy.count('|') + 1} stages"
    return "`" + text.replace("|", "\\|") + "`"


def epoch_curve(metrics_path, global_batch, diverged=False):
    """Per epoch of a `loom train --epochs N --log-every 1 --metrics F` run: epoch, seconds of
    training up to the end of that epoch's steps, test accuracy and the mean training loss of its
    steps. Each step line's samples_per_s covers the time since the previous line, so
    global_batch / samples_per_s summed over the lines is the wall-clock time (an epoch's test
    evaluation falls into the first step of the next epoch). A run that `loom train` stopped on a
    non-finite loss (`diverged`) ends with a row for its last step: no accuracy, diverged_at_step."""
    import json

    rows, elapsed, losses, step = [], 0.0, [], 0
    with open(metrics_path) as f:
        for line in f:
            record = json.loads(line)
            if "step" in record:
                elapsed += global_batch / record["samples_per_s"]
                losses.append(record["loss"])
                step = record["step"]
            elif "epoch" in record:
                rows.append({"epoch": record["epoch"], "elapsed_s": round(elapsed, 3),
                             "test_accuracy": round(record["test_accuracy"], 5),
                             "train_loss": round(sum(losses) / max(len(losses), 1), 5), "diverged_at_step": ""})
                losses = []
    if diverged:
        rows.append({"epoch": len(rows) + 1, "elapsed_s": round(elapsed, 3), "test_accuracy": "",
                     "train_loss": round(losses[-1], 5) if losses else "", "diverged_at_step": step + 1})
    return rows
