#!/usr/bin/env python3
"""The ccsync benchmark driver: runs ccsync and the peers users would pick instead on the same
documents, on the same machine, in the same rounds, and writes the tables of BENCHMARKS.md.

bench/run builds everything and calls this (see bench/run --help). Every figure is a median
over several trials or rounds; every ratio is taken within one round (ccsync and the peer back
to back) before the median over rounds, so load from other users of the machine shifts both
sides of a ratio alike. A run whose final counter is not exactly what the workers added is
reported as FAILING, never as a speed.
"""
import argparse
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time

from lib import cli, codec, contention, etcd, many, mirror, partition, propagation, schema, sizes, watching

BEGIN_MARK = "<!-- bench:begin -->"
END_MARK = "<!-- bench:end -->"
STEPS = {"contention": contention.measure, "propagation": propagation.measure, "cli": cli.measure,
         "sizes": sizes.measure, "watcher": watching.measure, "codec": codec.measure,
         "schema": schema.measure, "etcd": etcd.measure,
         "mirror": mirror.measure, "many": many.measure, "partition": partition.measure}


class Bench:
    """What every measurement needs: options, paths, scratch directories, and where results,
    goals and notes go."""

    def __init__(self, options):
        self.options = options
        self.root = os.path.abspath(options.root)
        self.binaries = os.path.abspath(options.binaries)
        self.peers = os.path.abspath(options.peers)
        self.work = os.path.abspath(options.work)
        self.have_floor = os.access(os.path.join(self.peers, "floor"), os.X_OK)
        self.notes = list(options.note)
        self.results = {}
        self.goals = []  # (goal, "yes" | "no" | "not measured", measured)
        self.run_number = 0
        self.started = time.monotonic()

    def bench_tool(self):
        return os.path.join(self.binaries, "ccsync-bench")

    def peer(self, name):
        return os.path.join(self.peers, name)

    def fresh_directory(self):
        self.run_number += 1
        directory = os.path.join(self.work, "run-%04d" % self.run_number)
        shutil.rmtree(directory, ignore_errors=True)
        os.makedirs(directory)
        return directory

    def log(self, message):
        print("[%5.1fs] %s" % (time.monotonic() - self.started, message), file=sys.stderr, flush=True)


def command_output(argv):
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip().split("\n")[0]
    except (OSError, subprocess.SubprocessError):
        return "missing"


def environment(bench, load_at_start):
    cpu = "unknown"
    with open("/proc/cpuinfo") as file:
        for line in file:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    filesystem = (command_output(["findmnt", "-n", "-o", "FSTYPE", "-T", bench.work]) or "unknown").strip()
    sqlite = contention.sqlite3.sqlite_version if contention.sqlite3 else "missing"
    cjson = command_output([bench.peer("inotify_floor_cjson"), "--version"]) if propagation.have_parsing_floor(bench) else "cJSON missing"
    return [
        "- Machine: %s, %d cores, Linux %s; scratch files on %s." % (cpu, os.cpu_count(), platform.release(), filesystem),
        "- ccsync: release build (`swift build -c release`), %s." % command_output(["swift", "--version"]).replace("Swift version ", "Swift "),
        "- Peers: Python %s, SQLite %s, %s, gcc %s, %s." % (
            platform.python_version(), sqlite, command_output(["jq", "--version"]), command_output(["gcc", "-dumpversion"]), cjson),
        "- Load average at start %s, at end %s: other users share these cores, so read the ratios rather "
        "than the absolute figures." % (load_at_start, load_average()),
    ]


def measured_commit(bench):
    """The commit measured, `+ changes` when the work tree differs from it."""
    commit = command_output(["git", "-C", bench.root, "rev-parse", "--short", "HEAD"])
    dirty = subprocess.run(["git", "-C", bench.root, "diff", "--quiet", "HEAD", "--", "Sources", "bench", "Package.swift"],
                           capture_output=True).returncode != 0
    return commit + (" + changes" if dirty else "")


def load_average():
    return " ".join(open("/proc/loadavg").read().split()[:3])


SECTION_HEADING = re.compile(r"^### (\d+)\. ")


def split_block(block):
    """A generated block's parts: the lines before its goals, its goal rows (goal, row), its
    numbered sections {number: text} and its notes."""
    head, goals, sections, notes = [], [], {}, []
    part, number = "head", None
    for line in block.strip("\n").split("\n"):
        heading = SECTION_HEADING.match(line)
        if line == "### Goals":
            part = "goals"
        elif heading:
            part, number = "section", int(heading.group(1))
            sections[number] = [line]
        elif line == "### Notes from this run":
            part = "notes"
        elif part == "head":
            head.append(line)
        elif part == "goals" and line.startswith("| ") and not line.startswith("| Goal |"):
            goals.append((line.split(" | ")[0][2:], line))
        elif part == "section":
            sections[number].append(line)
        elif part == "notes" and line.startswith("- "):
            notes.append(line[2:])
    while head and not head[-1]:
        head.pop()
    return head, goals, {n: "\n".join(text).strip("\n") + "\n" for n, text in sections.items()}, notes


def merged_block(bench, old_block, sections, load_at_start, elapsed):
    """`--only`: the old block with the sections and goals this run measured replaced (or
    added), a line saying which sections were measured when, and the rest kept as it was."""
    head, old_goals, old_sections, old_notes = split_block(old_block)
    only = bench.options.only
    mark = "_Re-measured by `bench/run --only %s`" % only
    head = [line for line in head if not line.startswith(mark)]
    while head and not head[-1]:
        head.pop()
    new_sections = {}
    for section in sections:
        heading = SECTION_HEADING.match(section) if section else None
        if heading:
            new_sections[int(heading.group(1))] = section.strip("\n") + "\n"
    head.append("")
    numbers = sorted(new_sections)
    head.append("%s %s at %s in %.0f s (build included): %s and %s goals; load average at start %s, at end %s. The "
                "other sections and goals are from the run above._"
                % (mark, time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), measured_commit(bench), elapsed,
                   ("section %d" % numbers[0]) if len(numbers) == 1 else "sections " + ", ".join(map(str, numbers)),
                   "its" if len(numbers) == 1 else "their", load_at_start, load_average()))
    rows = {goal: row for goal, row in old_goals}
    order = [goal for goal, _ in old_goals]
    for goal, status, detail in bench.goals:
        if goal not in rows:
            order.append(goal)
        rows[goal] = "| %s | %s | %s |" % (goal, "**no**" if status == "no" else status, detail)
    merged = dict(old_sections)
    merged.update(new_sections)
    lines = head + [""]
    if order:
        lines += ["### Goals", "", "| Goal | Met | Measured |", "|---|---|---|"] + [rows[goal] for goal in order] + [""]
    lines += [merged[number] for number in sorted(merged)]
    tag = "(`--only %s`) " % only  # the notes of an earlier run of the same steps go
    notes = [note for note in old_notes if not note.startswith(tag)] + [tag + note for note in bench.notes]
    if notes:
        lines += ["### Notes from this run", ""] + ["- " + note for note in notes] + [""]
    return "\n".join([BEGIN_MARK, ""] + lines + [END_MARK])


def write_markdown(bench, sections, load_at_start, elapsed):
    path = bench.options.output
    existing = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Benchmarks\n"
    if bench.options.only and BEGIN_MARK in existing and END_MARK in existing:
        head, rest = existing.split(BEGIN_MARK, 1)
        old_block, tail = rest.split(END_MARK, 1)
        text = head + merged_block(bench, old_block, sections, load_at_start, elapsed) + tail
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)
        return
    lines = [BEGIN_MARK, "", "## Measured by `bench/run`", ""]
    lines.append("_Generated %s at %s by `bench/run` in %.0f s (build included). Everything between the "
                 "`bench:begin` and `bench:end` markers is rewritten by each run; notes outside them stay._"
                 % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), measured_commit(bench), elapsed))
    lines.append("")
    lines += environment(bench, load_at_start)
    lines.append("")
    if bench.goals:
        lines += ["### Goals", "", "| Goal | Met | Measured |", "|---|---|---|"]
        for goal, status, detail in bench.goals:
            lines.append("| %s | %s | %s |" % (goal, "**no**" if status == "no" else status, detail))
        lines.append("")
    lines += [section for section in sections if section]
    if bench.notes:
        lines += ["### Notes from this run", ""] + ["- " + note for note in bench.notes] + [""]
    lines.append(END_MARK)
    generated = "\n".join(lines)
    if BEGIN_MARK in existing and END_MARK in existing:
        head, rest = existing.split(BEGIN_MARK, 1)
        text = head + generated + rest.split(END_MARK, 1)[1]
    else:
        text = existing.rstrip("\n") + "\n\n" + generated + "\n"
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    numbers = lambda text: [int(part) for part in text.split(",")]
    parser.add_argument("--root", required=True)
    parser.add_argument("--binaries", required=True, help="directory with ccsync-bench (and ccsync)")
    parser.add_argument("--peers", required=True, help="directory with the compiled C peers and the scripts")
    parser.add_argument("--work", required=True, help="scratch directory, on the file system to measure")
    parser.add_argument("--output", required=True, help="the Markdown file to write (BENCHMARKS.md)")
    parser.add_argument("--only", help="comma-separated steps: " + ",".join(STEPS))
    parser.add_argument("--trials", type=int, default=11, help="trials per contention and size figure")
    parser.add_argument("--paired-rounds", type=int, default=12, help="rounds of each pair measured back to back")
    parser.add_argument("--rounds", type=int, default=5, help="rounds of the CLI figures")
    parser.add_argument("--processes", type=numbers, default=[1, 2, 4, 8])
    parser.add_argument("--threads", type=numbers, default=[1, 2, 4, 8])
    parser.add_argument("--contenders", help="comma-separated contender keys (default: all)")
    parser.add_argument("--baseline", help="an earlier ccsync-bench binary to run as contenders 'baseline' and "
                        "'baseline-relaxed', for before/after figures of a change")
    parser.add_argument("--baseline-ccsync", help="an earlier ccsync command, measured beside this build's in the "
                        "mirror section's propagation and CPU figures")
    parser.add_argument("--baseline-installed", help="an earlier ccsync as its scripts/install-cli installed it: "
                        "the installed `get` is compared with it")
    parser.add_argument("--durable-updates", type=int, default=320, help="per trial, shared by the P processes")
    parser.add_argument("--relaxed-updates", type=int, default=960)
    parser.add_argument("--shell-updates", type=int, default=8)
    parser.add_argument("--propagation-saves", type=int, default=100)
    parser.add_argument("--propagation-interval-us", type=int, default=3000)
    parser.add_argument("--propagation-rounds", type=int, default=7)
    parser.add_argument("--cli-calls", type=int, default=100)
    parser.add_argument("--churn-seconds", type=float, default=3)
    parser.add_argument("--watcher-rounds", type=int, default=3)
    parser.add_argument("--codec-rounds", type=int, default=9, help="rounds of the codec figures")
    parser.add_argument("--etcd-processes", type=numbers, default=[1, 4], help="P of the etcd update figures")
    parser.add_argument("--etcd-trials", type=int, default=9, help="trials per etcd update figure")
    parser.add_argument("--etcd-updates", type=int, default=600, help="per etcd trial, shared by the P processes")
    parser.add_argument("--etcd-calls", type=int, default=40, help="calls per round of each etcd command-line figure")
    parser.add_argument("--etcd-propagation-rounds", type=int, default=5)
    parser.add_argument("--etcd-propagation-puts", type=int, default=100, help="puts per etcd propagation run")
    parser.add_argument("--etcd-propagation-interval-us", type=int, default=10000)
    parser.add_argument("--partition-calls", type=int, default=100, help="calls per script of the partition section")
    parser.add_argument("--partition-rounds", type=int, default=3, help="rounds of the partition section")
    parser.add_argument("--etcd-members", type=int, choices=[1, 3], default=1, help="members of the etcd the section starts")
    parser.add_argument("--etcd3gw-python", help="a Python with etcd3gw installed (bench/run makes .build/bench-venv): "
                        "without it the etcd3gw peer is skipped")
    parser.add_argument("--mirror-rounds", type=int, default=7, help="rounds of the mirror's file-to-file propagation")
    parser.add_argument("--mirror-writes", type=int, default=50, help="writes to machine A's file per propagation round")
    parser.add_argument("--mirror-interval-us", type=int, default=25000)
    parser.add_argument("--mirror-processes", type=numbers, default=[1, 4, 16], help="P of the mirror's contention figures")
    parser.add_argument("--mirror-trials", type=int, default=5, help="trials per mirror contention figure")
    parser.add_argument("--mirror-updates", type=int, default=96, help="per mirror contention trial, shared by the P processes")
    parser.add_argument("--mirror-watchers", type=numbers, default=[1, 10, 100], help="N of the mirror's fan-out figures")
    parser.add_argument("--mirror-fanout-rounds", type=int, default=7)
    parser.add_argument("--mirror-fanout-puts", type=int, default=30, help="puts per fan-out run")
    parser.add_argument("--mirror-fanout-interval-us", type=int, default=20000)
    parser.add_argument("--mirror-cpu-seconds", type=float, default=4, help="the idle window, and the busy one")
    parser.add_argument("--many-trials", type=int, default=3, help="trials of each many-storages figure")
    parser.add_argument("--many-rounds", type=int, default=5, help="set + flush rounds per many-storages trial")
    parser.add_argument("--many-writes", type=int, default=20, help="another process's writes after each flush of all")
    parser.add_argument("--installed-ccsync", help="ccsync as scripts/install-cli installs it (static Swift runtime): the CLI goals are judged on it")
    parser.add_argument("--note", action="append", default=[], help="a line for the notes (a skipped peer)")
    parser.add_argument("--build-seconds", type=float, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory and results.json")
    options = parser.parse_args()

    bench = Bench(options)
    load_at_start = load_average()
    os.makedirs(bench.work, exist_ok=True)
    wanted = options.only.split(",") if options.only else list(STEPS)
    sections = [STEPS[name](bench) for name in STEPS if name in wanted]
    elapsed = time.monotonic() - bench.started + options.build_seconds
    with open(os.path.join(bench.work, "results.json"), "w") as file:
        json.dump({"results": bench.results, "goals": bench.goals, "notes": bench.notes}, file, indent=1, default=str)
    write_markdown(bench, sections, load_at_start, elapsed)
    if not options.keep:
        shutil.rmtree(bench.work, ignore_errors=True)
    for goal, status, detail in bench.goals:
        bench.log("%-4s %s: %s" % (status if status in ("yes", "no") else "-", goal, detail))
    bench.log("wrote %s" % options.output)


if __name__ == "__main__":
    main()
