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
