"""2. Propagation: a rename in one process to the decoded value in another."""
import os
import shutil
import time

from .processes import Failure, Worker, median, percentile

SIZES = [("1 KB", 1024), ("100 KB", 100 * 1024)]


FLOORS = ["floor-cjson", "floor"]  # the ratio columns: the parsing floor (the goal's), the memmem floor


def have_parsing_floor(bench):
    return os.access(bench.peer("inotify_floor_cjson"), os.X_OK)


def readers(bench):
    tool = bench.bench_tool()
    rows = [
        ("ccsync", "ccsync: `CodableStorage` observer gets the decoded value",
         lambda path: [tool, "propagation-reader", path]),
        ("ccsync-document", "ccsync layers: `SharedDocument.readIfChanged` in a `FileWatcher` handler (stat, read, parse)",
         lambda path: [tool, "propagation-reader", path, "--layer", "document"]),
        ("ccsync-watcher", "ccsync layers: `FileWatcher` handler reads the bytes, finds the number",
         lambda path: [tool, "propagation-reader", path, "--layer", "watcher"]),
    ]
    if have_parsing_floor(bench):
        rows.append(("floor-cjson", "C inotify floor: read, parse with cJSON",
                     lambda path: [bench.peer("inotify_floor_cjson"), path]))
    rows.append(("floor", "C inotify floor: read, find the number",
                 lambda path: [bench.peer("inotify_floor"), path]))
    if bench.options.baseline:
        before = os.path.abspath(bench.options.baseline)
        rows.append(("baseline", "ccsync before (`--baseline` build)", lambda path: [before, "propagation-reader", path]))
    return rows


def run_once(bench, reader_argv, path, size):
    """One writer (the C floor's durable protocol, stamping each rename) and one reader;
    returns the delays in seconds from each rename to the reader holding that version."""
    with open(path, "w") as file:
        file.write('{"sequence": -1, "sentAt": 0, "payload": ""}\n')
    reader = Worker(reader_argv)
    writer = None
    try:
        reader.expect("ready", time.monotonic() + 30)
        saves = bench.options.propagation_saves
        writer = Worker([bench.peer("floor"), "timed-writer", path, str(saves), str(size),
                         str(bench.options.propagation_interval_us)])
        writer.expect("ready", time.monotonic() + 30)
        writer.send("go")
        writer.expect("done", time.monotonic() + 120)
        renamed = {}
        for line in writer.rest().split("\n"):
            parts = line.split()
            if len(parts) == 2:
                renamed[int(parts[0])] = int(parts[1])
        time.sleep(0.3)
        output = reader.rest()
        if reader.process.returncode != 0:
            raise Failure("reader exited %d: %s" % (reader.process.returncode, reader.stderr()))
    finally:
        reader.kill()
        if writer:
            writer.kill()
    return {"delays": delays_from(output, renamed), "sent": len(renamed)}


def delays_from(output, renamed):
    """A reader's "SEQUENCE RECEIVED_NS" lines against the writer's {sequence: rename_ns}: the
    delays in seconds of the versions it read."""
    delays = []
    for line in output.split("\n"):
        parts = line.split()
        if len(parts) == 2 and int(parts[0]) in renamed:
            delays.append((int(parts[1]) - renamed[int(parts[0])]) / 1e9)
    return delays


def measure(bench):
    options = bench.options
    if not bench.have_floor:
        return "### 2. Propagation\n\nnot measured: no C compiler for the writer and the floor\n"
    raw = {(size, key): [] for _, size in SIZES for key, _, _ in readers(bench)}
    for round_index in range(options.propagation_rounds):
        bench.log("propagation round %d/%d" % (round_index + 1, options.propagation_rounds))
        for _, size in SIZES:
            rows = readers(bench)
            shift = round_index % len(rows)  # a different order each round
            for key, _, argv in rows[shift:] + rows[:shift]:
                directory = bench.fresh_directory()
                path = os.path.join(directory, "timed.json")
                try:
                    raw[(size, key)].append(run_once(bench, argv(path), path, size))
                except Failure as failure:
                    raw[(size, key)].append({"error": str(failure)})
                shutil.rmtree(directory, ignore_errors=True)
    bench.results["propagation"] = {"%s/%d" % (key, size): runs for (size, key), runs in raw.items()}
    return table(bench, raw)


def summary(runs):
    if not runs or any("error" in run or not run["delays"] for run in runs):
        return None
    pooled = [delay for run in runs for delay in run["delays"]]
    return {
        "p50": median([percentile(run["delays"], 0.5) for run in runs]),
        "p99": percentile(pooled, 0.99),
        "max": max(pooled),
        "received": len(pooled),
        "sent": sum(run["sent"] for run in runs),
    }


def ratio(raw, size, key, floor):
    """The reader's p50 over the floor's p50, taken round by round, then the median over the
    rounds; None when either side failed or was not measured."""
    if (size, floor) not in raw or summary(raw[(size, key)]) is None or summary(raw[(size, floor)]) is None:
        return None
    return median([percentile(a["delays"], 0.5) / percentile(b["delays"], 0.5)
                   for a, b in zip(raw[(size, key)], raw[(size, floor)])])


def table(bench, raw):
    options = bench.options
    lines = ["### 2. Propagation: rename in one process to the value in another", ""]
    lines.append(
        "A writer process replaces the file %d times, %.0f ms apart, with ccsync's durable protocol (the C "
        "floor's `timed-writer`, which stamps `CLOCK_MONOTONIC` just before each `rename`); the reader "
        "stamps the moment it holds the new version. ccsync's reader is a release-built process whose "
        "`CodableStorage<TimedDocument>` observer receives the decoded value. Two C floors do one `inotify` "
        "read, `open` and `read` of the whole file: the cJSON floor then parses the whole document with "
        "cJSON and takes the two numbers from its tree (the rename-to-parsed work, the floor the goal is "
        "measured against); the memmem floor only finds the two numbers in the text, without a parser (the "
        "least any reader can do). Readers take turns, one short run each per round, %d rounds. "
        "Milliseconds: p50 is the median of the rounds' medians, p99 and max are over all versions heard in "
        "all rounds; the ratios to the floors are taken round by round."
        % (options.propagation_saves, options.propagation_interval_us / 1000, options.propagation_rounds))
    lines.append("")
    lines.append("| Document | Reader | p50 | p99 | max | heard | p50 / cJSON floor p50 | p50 / memmem floor p50 |")
    lines.append("|---|---|---|---|---|---|---|---|")
    for label, size in SIZES:
        for key, reader_label, _ in readers(bench):
            result = summary(raw[(size, key)])
            if result is None:
                lines.append("| %s | %s | FAILING | | | | | |" % (label, reader_label))
                bench.notes.append("propagation %s %s: %s" % (label, key, [run.get("error") for run in raw[(size, key)]]))
                continue
            ratios = {floor: ratio(raw, size, key, floor) for floor in FLOORS if floor != key}
            if key == "ccsync":
                # 1 KB: the speed issue's 1.5x; 100 KB keeps the 2x set before it.
                bound = 1.5 if size == 1024 else 2.0
                goal = "propagation %s: ccsync p50 within %.1fx of the C floor that parses (cJSON)" % (label, bound)
                parsing, memmem = ratios["floor-cjson"], ratios["floor"]
                stricter = "%.2fx the memmem floor" % memmem if memmem is not None else "memmem floor not measured"
                if parsing is None:
                    bench.goals.append((goal, "not measured", "no cJSON floor; " + stricter))
                else:
                    bench.goals.append((goal, "yes" if parsing <= bound else "no", "%.2fx (%s)" % (parsing, stricter)))
                if size == 1024:
                    bench.goals.append(("propagation 1 KB: ccsync p99 under 1 ms", "yes" if result["p99"] < 0.001 else "no",
                                        "%.3f ms" % (result["p99"] * 1000)))
            lines.append("| %s | %s | %.3f | %.3f | %.3f | %d/%d | %s |" % (
                label, reader_label, result["p50"] * 1000, result["p99"] * 1000, result["max"] * 1000,
                result["received"], result["sent"],
                " | ".join("" if ratios.get(floor) is None else "%.2fx" % ratios[floor] for floor in FLOORS)))
    lines.append("")
    return "\n".join(lines)
