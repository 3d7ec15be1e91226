"""5. Watching: CPU while a neighbour file churns, and resident memory per watched file."""
import os
import re
import shutil
import time

from .documents import settings_document, write_document
from .processes import Failure, Worker, median


def cpu_seconds(pid):
    """utime + stime of a process, from /proc/PID/stat."""
    with open("/proc/%d/stat" % pid) as file:
        fields = file.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def resident_kib(pid):
    with open("/proc/%d/status" % pid) as file:
        for line in file:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def seed(directory, count):
    """`count` 1 KB documents `watched-N.json` in `directory`; returns `directory`."""
    text = settings_document(1024)
    for index in range(count):
        write_document(os.path.join(directory, "watched-%d.json" % index), text)
    return directory


def churn_run(bench, argv, seconds):
    """Starts the watcher, rewrites a neighbour of its file for `seconds`, and returns the
    watcher's CPU share over that time."""
    directory = bench.fresh_directory()
    seed(directory, 1)
    reader = Worker(argv(directory))
    churn = None
    try:
        reader.expect("ready", time.monotonic() + 60)
        neighbour = os.path.join(directory, "neighbour.json")
        write_document(neighbour, settings_document(1024))
        churn = Worker([bench.peer("floor"), "churn", neighbour, str(seconds)])
        churn.expect("ready", time.monotonic() + 30)
        before, start = cpu_seconds(reader.process.pid), time.monotonic()
        churn.send("go")
        rewrites = int(churn.expect("done", time.monotonic() + seconds + 30).split()[1])
        elapsed = time.monotonic() - start
        after = cpu_seconds(reader.process.pid)
        churn.finish()
        output = reader.rest()
        return {"cpu": (after - before) / elapsed, "rewrites_per_second": rewrites / elapsed,
                "cpu_per_rewrite": (after - before) / max(1, rewrites), "output": output[-200:]}
    finally:
        reader.kill()
        if churn:
            churn.kill()
        shutil.rmtree(directory, ignore_errors=True)


def resident_run(bench, argv):
    reader = Worker(argv)
    try:
        reader.expect("ready", time.monotonic() + 120)
        time.sleep(0.3)
        return resident_kib(reader.process.pid)
    finally:
        reader.kill()


def measure(bench):
    if not bench.have_floor:
        return ""
    options = bench.options
    seconds = options.churn_seconds
    tool, floor = bench.bench_tool(), bench.peer("inotify_floor")
    watchers = [
        ("ccsync", "ccsync: a process watching one file (`CodableStorage`)",
         lambda directory: [tool, "watch-files", directory, "1"]),
        ("floor", "C inotify floor watching one file",
         lambda directory: [floor, os.path.join(directory, "watched-0.json")]),
    ]
    if options.baseline:
        before = os.path.abspath(options.baseline)
        watchers.append(("baseline", "ccsync before (`--baseline` build)",
                         lambda directory: [before, "watch-files", directory, "1"]))
    raw = {key: [] for key, _, _ in watchers}
    for round_index in range(options.watcher_rounds):
        bench.log("watcher CPU round %d/%d" % (round_index + 1, options.watcher_rounds))
        for key, _, argv in watchers:
            try:
                raw[key].append(churn_run(bench, argv, seconds))
            except Failure as failure:
                raw[key].append({"error": str(failure)})

    bench.log("resident memory")
    memory = {}
    for count in (0, 1, 1000):
        directory = seed(bench.fresh_directory(), count)
        try:
            memory[count] = resident_run(bench, [tool, "watch-files", directory, str(count)])
        except Failure as failure:
            memory[count] = None
            bench.notes.append("memory, %d files: %s" % (count, failure))
        shutil.rmtree(directory, ignore_errors=True)
    directory = seed(bench.fresh_directory(), 1)
    try:
        floor_memory = resident_run(bench, [floor, os.path.join(directory, "watched-0.json")])
    except Failure:
        floor_memory = None
    shutil.rmtree(directory, ignore_errors=True)
    bench.results["watcher"] = {"cpu": raw, "memory": memory, "floor_memory": floor_memory}

    lines = ["### 5. Watching: CPU while a neighbour churns, and resident memory", ""]
    lines.append(
        "A C process rewrites `neighbour.json` (ccsync's protocol without fsync) in a tight loop for %.0f s "
        "in the directory of the watched file: every rewrite is an `IN_CREATE`, `IN_MODIFY`, `IN_CLOSE_WRITE` "
        "and `IN_MOVED_FROM`/`IN_MOVED_TO` the watcher must read and dismiss. CPU time of the watching "
        "process (utime + stime from `/proc/PID/stat`, 10 ms ticks) over that time, as a share of one core, "
        "and per neighbour rewrite (the rewrite rate depends on the machine's load), median of %d rounds."
        % (seconds, options.watcher_rounds))
    lines.append("")
    lines.append("| Watcher | CPU (% of a core) | neighbour rewrites/s | CPU µs per rewrite | reloads |")
    lines.append("|---|---|---|---|---|")
    for key, label, _ in watchers:
        runs = raw[key]
        if any("error" in run for run in runs):
            lines.append("| %s | FAILING | | | |" % label)
            bench.notes.append("watcher %s: %s" % (key, [run.get("error") for run in runs]))
            continue
        cpu = median([run["cpu"] for run in runs])
        reloads = ""
        if key == "ccsync":
            reloads = str(sum(int(value) for run in runs for value in re.findall(r"reloads (\d+)", run["output"])))
            bench.goals.append(("watcher CPU while a neighbour churns < 5% of a core", "yes" if cpu < 0.05 else "no",
                                "%.1f%%" % (cpu * 100)))
        lines.append("| %s | %.1f%% | %.0f | %.1f | %s |" % (
            label, cpu * 100, median([run["rewrites_per_second"] for run in runs]),
            median([run["cpu_per_rewrite"] for run in runs]) * 1e6, reloads))
    lines.append("")
    lines.append("| Process | VmRSS |")
    lines.append("|---|---|")
    for count, label in ((0, "no file (the Swift runtime and Foundation, for scale)"), (1, "one watched 1 KB file"),
                         (1000, "1000 watched 1 KB files")):
        value = memory.get(count)
        lines.append("| `ccsync-bench watch-files`, %s | %s |" % (label, "FAILING" if value is None else "%.1f MiB" % (value / 1024)))
    if floor_memory:
        lines.append("| C inotify floor, one file | %.1f MiB |" % (floor_memory / 1024))
    if memory.get(1) and memory.get(1000):
        lines.append("")
        lines.append("Each watched `CodableStorage` beyond the first: %.1f KiB." % ((memory[1000] - memory[1]) / 999))
    lines.append("")
    return "\n".join(lines)
