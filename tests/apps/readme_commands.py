#!/usr/bin/env python3
"""Runs every command of README.md's shell code blocks as written (issue 46).

A block is run unless the line before its fence is an HTML comment `<!-- illustrative: WHY -->`
(commands CI runs otherwise, or that install packages). Lines ending in a backslash are joined and
`# comments` dropped; each command runs in a fresh work directory that holds README.md and
`build/apps/loom` (a link to the built executable), so the README's paths resolve as written. The
only changes allowed: `mpirun` gets the flags a root CI needs (MPIEXEC_FLAGS), and `loom train`
gets `--threads 1` (ranks share the machine's cores).

usage: readme_commands.py README LOOM WORK_DIR [MPIEXEC_FLAG ...]
Exit 0 when every command exits 0; else 1, naming the command and its output's last lines.
"""
import os
import re
import shutil
import subprocess
import sys
import time


def blocks(path):
    """The shell code blocks to run: (line number, [command, ...]) each, and the skipped ones."""
    lines = open(path, encoding="utf-8").read().split("\n")
    run, skipped = [], []
    i = 0
    while i < len(lines):
        if lines[i].strip() != "```sh":
            i += 1
            continue
        start = i + 1
        end = lines.index("```", start)
        previous = next((lines[j].strip() for j in range(i - 1, -1, -1) if lines[j].strip()), "")
        target = skipped if re.match(r"<!-- illustrative: .+ -->$", previous) else run
        target.append((start, commands(lines[start:end])))
        i = end + 1
    return run, skipped


def commands(block):
    joined, current = [], ""
    for line in block:
        current += line.rstrip()
        if current.endswith("\\"):
            current = current[:-1] + " "
            continue
        command = re.sub(r"\s+#\s.*$", "", current).strip()
        if command and not command.startswith("#"):
            joined.append(re.sub(r"\s+", " ", command))
        current = ""
    return joined


def as_run(command, mpi_flags):
    """The command with the allowed additions only."""
    words = command.split(" ")
    if words[0] == "mpirun":
        words[1:1] = mpi_flags
    if "train" in words and any(w.endswith("build/apps/loom") for w in words) and "--threads" not in words:
        words.append("--threads 1")
    return " ".join(words)


def main():
    readme, loom, work = sys.argv[1], sys.argv[2], sys.argv[3]
    mpi_flags = sys.argv[4:]
    run, skipped = blocks(readme)
    if not run:
        print(f"FAIL: {readme} has no shell block to run")
        return 1
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "build", "apps"))
    os.symlink(os.path.abspath(loom), os.path.join(work, "build", "apps", "loom"))
    shutil.copy(readme, os.path.join(work, "README.md"))
    for line, block in skipped:
        print(f"illustrative (not run): the block at {readme}:{line}: {'; '.join(block)}")
    count = 0
    for line, block in run:
        for command in block:
            started = time.time()
            result = subprocess.run(["bash", "-c", as_run(command, mpi_flags)], cwd=work, capture_output=True,
                                    text=True, timeout=600)
            if result.returncode != 0:
                tail = "\n".join((result.stdout + result.stderr).strip().split("\n")[-15:])
                print(f"FAIL: {readme}:{line}: '{command}' exited {result.returncode}:\n{tail}")
                return 1
            count += 1
            print(f"ok ({time.time() - started:.1f} s): {command}")
    print(f"{count} commands of {readme} ran as written")
    return 0


if __name__ == "__main__":
    sys.exit(main())
