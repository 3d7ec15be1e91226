"""1. Locked read-modify-write of a 1 KB document: P processes, and T threads of one process."""
import json
import os
import subprocess
import shutil
import sys

from . import paired
from .documents import read_counter, settings_document, write_document
from .processes import Failure, Pool, median

try:
    import sqlite3
except ImportError:  # a Python built without it: the SQLite peers are skipped
    sqlite3 = None


class Contender:
    """One way to do the increment. `work` picks the amount per trial (durable, relaxed,
    shell), so that comparisons inside one class are of equal work."""

    def __init__(self, key, label, durability, work, argv, kind="file"):
        self.key, self.label, self.durability, self.work, self.argv, self.kind = key, label, durability, work, argv, kind


def contenders(bench):
    tool, python, peer = bench.bench_tool(), sys.executable, bench.peer
    rows = [
        Contender("ccsync", "ccsync `SharedDocument.update`", "durable: fsync file + dir", "durable",
                  lambda path: [tool, "bench-worker", path]),
        Contender("ccsync-no-history", "ccsync `SharedDocument.update`, history off (`--keep 0`)", "durable: fsync file + dir", "durable",
                  lambda path: [tool, "bench-worker", path, "--keep", "0"]),
        Contender("ccsync-schema", "ccsync `SharedDocument.update`, checked against a 20-field schema", "durable: fsync file + dir", "durable",
                  lambda path: [tool, "bench-worker", path, "--schema", write_schema(path)]),
        Contender("ccsync-storage", "ccsync `CodableStorage.update`", "durable: fsync file + dir", "durable",
                  lambda path: [tool, "bench-worker", path, "--api", "storage"]),
        Contender("ccsync-file", "ccsync `SharedFile` alone (digits edited as the floor does, no JSON)", "durable: fsync file + dir", "durable",
                  lambda path: [tool, "bench-worker", path, "--api", "file"]),
        Contender("floor", "C floor (ccsync's protocol and its default history, every system call of them; no JSON parser)",
                  "durable: fsync file + dir", "durable", lambda path: [peer("floor"), "increment", path, "--history"]),
        Contender("floor-no-history", "C floor, history off", "durable: fsync file + dir", "durable",
                  lambda path: [peer("floor"), "increment", path]),
        Contender("floor-keep-0", "C floor, history off by its `keep` file (`--keep 0`, read each write as ccsync does)",
                  "durable: fsync file + dir", "durable", lambda path: [peer("floor"), "increment", path, "--keep", "0"]),
        Contender("floor-bare", "C floor, the protocol's bare steps (without ccsync's safeguards)", "durable: fsync file + dir", "durable",
                  lambda path: [peer("floor"), "increment", path, "--bare"]),
        Contender("python-dir", "Python flock + json + os.replace", "durable: fsync file + dir", "durable",
                  lambda path: [python, peer("python_worker.py"), path, "file+dir"]),
        Contender("python-file", "Python flock + json + os.replace", "fsync file only (rename not durable)", "durable",
                  lambda path: [python, peer("python_worker.py"), path, "file"]),
        Contender("sqlite-wal-full", "SQLite WAL, synchronous=FULL", "durable", "durable",
                  lambda path: [python, peer("sqlite_worker.py"), path, "wal", "full"], "sqlite-wal"),
        Contender("sqlite-wal-normal", "SQLite WAL, synchronous=NORMAL", "atomic; last commits may be lost on power failure", "durable",
                  lambda path: [python, peer("sqlite_worker.py"), path, "wal", "normal"], "sqlite-wal"),
        Contender("sqlite-delete-full", "SQLite rollback journal, synchronous=FULL", "durable", "durable",
                  lambda path: [python, peer("sqlite_worker.py"), path, "delete", "full"], "sqlite-delete"),
        Contender("sqlite-delete-normal", "SQLite rollback journal, synchronous=NORMAL", "durable except on old file systems", "durable",
                  lambda path: [python, peer("sqlite_worker.py"), path, "delete", "normal"], "sqlite-delete"),
        Contender("ccsync-relaxed", "ccsync `SharedDocument(durable: false)`", "relaxed: no fsync", "relaxed",
                  lambda path: [tool, "bench-worker", path, "--relaxed"]),
        Contender("ccsync-relaxed-no-history", "ccsync `SharedDocument(durable: false)`, history off (`--keep 0`)",
                  "relaxed: no fsync", "relaxed", lambda path: [tool, "bench-worker", path, "--relaxed", "--keep", "0"]),
        Contender("floor-relaxed", "C floor, no fsync", "relaxed: no fsync", "relaxed",
                  lambda path: [peer("floor"), "increment", path, "--relaxed", "--history"]),
        Contender("floor-relaxed-no-history", "C floor, no fsync, history off", "relaxed: no fsync", "relaxed",
                  lambda path: [peer("floor"), "increment", path, "--relaxed"]),
        Contender("python-none", "Python flock + json + os.replace", "relaxed: no fsync", "relaxed",
                  lambda path: [python, peer("python_worker.py"), path, "none"]),
        Contender("shell", "shell `flock` + `jq` + `mv`", "relaxed: no fsync", "shell",
                  lambda path: [peer("shell_worker.sh"), path]),
    ]
    if bench.options.baseline:  # an earlier build of ccsync-bench, for before/after figures
        before = os.path.abspath(bench.options.baseline)
        rows += [
            Contender("baseline", "ccsync before (`--baseline` build)", "durable: fsync file + dir", "durable",
                      lambda path: [before, "bench-worker", path]),
            Contender("baseline-relaxed", "ccsync before, relaxed (`--baseline` build)", "relaxed: no fsync", "relaxed",
                      lambda path: [before, "bench-worker", path, "--relaxed"]),
        ]
    chosen = bench.options.contenders.split(",") if bench.options.contenders else None
    available = []
    for row in rows:
        if row.key == "shell" and not (shutil.which("jq") and shutil.which("flock")):
            continue
        if row.kind.startswith("sqlite") and sqlite3 is None:
            continue
        if row.key.startswith("floor") and not bench.have_floor:
            continue
        if chosen and row.key not in chosen:
            continue
        available.append(row)
    return available


def write_schema(path):
    """A JSON Schema of the 1 KB settings document's shape beside `path`: 20 properties typed,
    the top-level ones required, one pattern; returns its path."""
    schema = {
        "type": "object",
        "required": ["name", "version", "theme", "fontSize", "server", "counter"],
        "properties": {
            "name": {"type": "string"}, "version": {"type": "integer", "minimum": 1},
            "theme": {"type": "string", "pattern": "^[a-z]+$"}, "fontSize": {"type": "integer", "minimum": 6},
            "ratio": {"type": "number"}, "enabled": {"type": "boolean"}, "owner": {"type": ["string", "null"]},
            "server": {"type": "object", "required": ["host", "port"], "properties": {
                "host": {"type": "string"}, "port": {"type": "integer", "minimum": 1, "maximum": 65535},
                "tls": {"type": "object", "properties": {"enabled": {"type": "boolean"}, "certificate": {"type": "string"}}},
                "timeouts": {"type": "object", "properties": {"connect": {"type": "number"}, "read": {"type": "number"},
                                                              "idle": {"type": "number"}}}}},
            "servers": {"type": "array"}, "features": {"type": "object"}, "logging": {"type": "object"},
            "greeting": {"type": "string"}, "services": {"type": "array"}, "note": {"type": "string"},
            "counter": {"type": "integer", "minimum": 0},
        },
    }
    schema_path = os.path.join(os.path.dirname(path), "settings.schema.json")
    with open(schema_path, "w") as file:
        json.dump(schema, file)
    return schema_path


def prepare(kind, directory, size=1024):
    """A fresh document of about `size` bytes (or database row) with counter 0; returns its path."""
    if kind == "file":
        path = os.path.join(directory, "settings.json")
        write_document(path, settings_document(size))
        return path
    path = os.path.join(directory, "settings.db")
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("PRAGMA journal_mode=%s" % ("wal" if kind == "sqlite-wal" else "delete"))
    connection.execute("CREATE TABLE settings (id INTEGER PRIMARY KEY, counter INTEGER NOT NULL, document TEXT NOT NULL)")
    connection.execute("INSERT INTO settings VALUES (1, 0, ?)", (settings_document(1024),))
    connection.close()
    return path


def final_count(kind, path):
    if kind == "file":
        return read_counter(path)
    connection = sqlite3.connect(path)
    try:
        return connection.execute("SELECT counter FROM settings WHERE id = 1").fetchone()[0]
    finally:
        connection.close()


class Setup:
    """A contender's pool of P processes on its own fresh file, and the count it must reach."""

    def __init__(self, bench, row, processes, size=1024):
        self.row = row
        self.directory = bench.fresh_directory()
        self.path = prepare(row.kind, self.directory, size)
        self.pool = Pool([row.argv(self.path) for _ in range(processes)])
        self.expected = 0

    def trial(self, total, processes):
        """One trial of `total` increments shared by the pool; a count that is not exact
        afterwards is a failure, whatever the speed."""
        per_worker = total // processes
        try:
            seconds = self.pool.trial(per_worker)
        except Failure as failure:
            return {"error": str(failure)}
        self.expected += per_worker * processes
        count = final_count(self.row.kind, self.path)
        if count != self.expected:
            error = "final count %d, expected %d (lost updates)" % (count, self.expected)
            self.expected = count
            return {"error": error, "seconds": seconds}
        return {"seconds": seconds, "rate": per_worker * processes / seconds}

    def close(self):
        self.pool.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def measure(bench):
    options = bench.options
    work = {"durable": options.durable_updates, "relaxed": options.relaxed_updates, "shell": options.shell_updates}
    rows = contenders(bench)
    raw = {row.key: {p: [] for p in options.processes} for row in rows}
    for processes in options.processes:
        bench.log("contention: P=%d, %d trials of %d contenders" % (processes, options.trials, len(rows)))
        setups = [Setup(bench, row, processes) for row in rows]
        try:
            for trial in range(options.trials):
                # A different order each trial, so no contender always follows the same one.
                shift = trial % len(setups)
                for setup in setups[shift:] + setups[:shift]:
                    raw[setup.row.key][processes].append(setup.trial(work[setup.row.work], processes))
        finally:
            for setup in setups:
                setup.close()
    bench.results["contention"] = raw

    thread_raw = {mode: {t: [] for t in options.threads} for mode in ("durable", "relaxed")}
    bench.log("threads: %d trials" % options.trials)
    setups = {}
    for threads in options.threads:
        for mode in ("durable", "relaxed"):
            argv = lambda path, threads=threads, mode=mode: (
                [bench.bench_tool(), "bench-worker", path, "--threads", str(threads)] + (["--relaxed"] if mode == "relaxed" else []))
            setups[(threads, mode)] = Setup(bench, Contender("threads", "threads", mode, mode, argv), 1)
    try:
        for trial in range(options.trials):
            for (threads, mode), setup in setups.items():
                thread_raw[mode][threads].append(setup.trial(work[mode], 1))
    finally:
        for setup in setups.values():
            setup.close()
    bench.results["threads"] = thread_raw
    paired_raw = paired.measure(bench, rows, Setup, work)
    sized_rows, sized_raw = measure_sizes(bench, rows)
    stress_lines = stress_table(bench, raw, work)
    return (tables(bench, rows, raw, thread_raw, work) + "\n" + paired.table(bench, paired_raw) + "\n" + stress_lines
            + "\n" + sized_tables(bench, sized_rows, sized_raw))


def stress_table(bench, raw, work):
    """The same contention through the user's tool, `ccsync stress --json`, on a fresh 1 KB
    document per P: its throughput, wait percentiles and fairness beside the harness's median
    for the same work, so the tool and the benchmark can be seen to agree."""
    ccsync = os.path.join(bench.binaries, "ccsync")
    lines = ["#### The same contention through `ccsync stress --json`", ""]
    if not os.access(ccsync, os.X_OK):
        return "\n".join(lines + ["(ccsync not built: skipped)", ""])
    lines.append("`ccsync stress --json --processes P --iterations N/P FILE` on a fresh copy of the 1 KB document, "
                 "N = %d, once per P: what a user running the tool sees. Its time includes starting the P "
                 "processes, which the harness's trials leave out." % work["durable"])
    lines.append("")
    lines.append("| P | harness `SharedDocument.update` (median) | `ccsync stress` updates/s | wait p50 | wait p99 | "
                 "max | lowest share / Jain | lost updates |")
    lines.append("|---|---|---|---|---|---|---|---|")
    results = {}
    for processes in bench.options.processes:
        directory = bench.fresh_directory()
        path = prepare("file", directory)
        argv = [ccsync, "stress", "--json", "--processes", str(processes),
                "--iterations", str(max(1, work["durable"] // processes)), path]
        try:
            completed = subprocess.run(argv, capture_output=True, text=True, timeout=600)
            report = json.loads(completed.stdout)
        except (subprocess.TimeoutExpired, ValueError) as error:
            lines.append("| %d | | FAILING: %s | | | | | |" % (processes, error))
            continue
        finally:
            shutil.rmtree(directory, ignore_errors=True)
        results[processes] = report
        rate, error = cell_rate(raw.get("ccsync", {}).get(processes, [])) if raw.get("ccsync", {}).get(processes) else (None, "not measured")
        harness = "%.0f/s" % rate if rate is not None else (error or "")
        wait = report.get("wait", {})
        fairness = report.get("fairness", {})
        lines.append("| %d | %s | %.0f/s | %.2f ms | %.2f ms | %.2f ms | %.2f / %.3f | %s |" % (
            processes, harness, report.get("updatesPerSecond") or 0, (wait.get("p50") or 0) * 1000, (wait.get("p99") or 0) * 1000,
            (wait.get("max") or 0) * 1000, fairness.get("lowestShare") or 0, fairness.get("jainIndex") or 0,
            report.get("lostUpdates", "?")))
    bench.results["stress"] = results
    lines.append("")
    return "\n".join(lines)


# Larger documents: the same locked increment, P = 4, durable, fewer updates per trial.
SIZED_PROCESSES = 4
SIZED_DOCUMENTS = [(100_000, "100 KB", 40), (1_000_000, "1 MB", 20)]
SIZED_CONTENDERS = ["ccsync", "floor", "python-dir", "baseline"]
SIZED_COMPARISONS = [
    ("ccsync", "floor", "ccsync durable time / C floor time", "time"),
    ("ccsync", "python-dir", "ccsync durable vs Python with the same fsyncs (file + dir)", "speed"),
    ("ccsync", "baseline", "this build vs the `--baseline` build, durable", "speed"),
]


def measure_sizes(bench, rows):
    """The durable increment on larger documents, where the parse and print of a whole
    document under the lock would dominate: P = 4, each size in its own trials."""
    chosen = [row for row in rows if row.key in SIZED_CONTENDERS]
    raw = {row.key: {label: [] for _, label, _ in SIZED_DOCUMENTS} for row in chosen}
    for size, label, updates in SIZED_DOCUMENTS:
        bench.log("contention, %s document: P=%d, %d trials of %d contenders" % (label, SIZED_PROCESSES, bench.options.trials, len(chosen)))
        setups = [Setup(bench, row, SIZED_PROCESSES, size) for row in chosen]
        try:
            for trial in range(bench.options.trials):
                shift = trial % len(setups)
                for setup in setups[shift:] + setups[:shift]:
                    raw[setup.row.key][label].append(setup.trial(updates, SIZED_PROCESSES))
        finally:
            for setup in setups:
                setup.close()
    bench.results["contention-sizes"] = raw
    return chosen, raw


def sized_tables(bench, rows, raw):
    labels = [label for _, label, _ in SIZED_DOCUMENTS]
    lines = ["#### Larger documents (P = %d)" % SIZED_PROCESSES, ""]
    lines.append(
        "The same durable increment on the settings document grown with service entries, %d processes; "
        "updates per trial: %s; updates per second, median of %d trials (no goal: the issue's goals are for "
        "1 KB). Here parsing and printing the whole document under the lock would be most of the work; "
        "ccsync parses and prints only the top-level values that changed (docs/BENCHMARK-METHOD.md, \"Parsing and "
        "printing by what changed\")."
        % (SIZED_PROCESSES, " and ".join("%d for %s" % (updates, label) for _, label, updates in SIZED_DOCUMENTS),
           bench.options.trials))
    lines.append("")
    lines += rate_table(bench, rows, raw, labels, labels)
    lines.append("| Comparison | " + " | ".join(labels) + " |")
    lines.append("|" + "---|" * (1 + len(labels)))
    keys = {row.key for row in rows}
    for ours, theirs, label, kind in SIZED_COMPARISONS:
        if ours not in keys or theirs not in keys:
            continue
        cells = []
        for size_label in labels:
            ratio = trial_ratio(raw[ours][size_label], raw[theirs][size_label])
            cells.append("FAILING" if ratio is None else ("%.2f" % (1 / ratio) if kind == "time" else "%.2fx" % ratio))
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    lines.append("")
    return "\n".join(lines)


def rate_table(bench, rows, raw, columns, headers):
    """The contenders' updates per second, a column per key of `columns` in `raw` (headed by
    `headers`), and a blank line; a failure is a FAILING cell and a note."""
    lines = ["| Contender | Durability | " + " | ".join(headers) + " |", "|" + "---|" * (2 + len(headers))]
    for row in rows:
        cells = []
        for column, header in zip(columns, headers):
            rate, error = cell_rate(raw[row.key][column])
            cells.append("FAILING" if error else "%.0f/s" % rate)
            if error:
                bench.notes.append("%s, %s: %s" % (row.label, header, error))
        lines.append("| %s | %s | %s |" % (row.label, row.durability, " | ".join(cells)))
    return lines + [""]


def cell_rate(samples):
    errors = [sample["error"] for sample in samples if "error" in sample]
    if errors:
        return None, errors[0]
    return median([sample["rate"] for sample in samples]), None


def trial_ratio(ours, theirs):
    """The median over trials of ours / theirs (rates); None when either failed anywhere."""
    ratios = trial_ratios(ours, theirs)
    return None if ratios is None else median(ratios)


def trial_ratios(ours, theirs):
    """ours / theirs (rates), trial by trial; None when either failed anywhere."""
    ratios = []
    for a, b in zip(ours, theirs):
        if "error" in a or "error" in b:
            return None
        ratios.append(a["rate"] / b["rate"])
    return ratios


COMPARISONS = [
    # ours, theirs, label, goal, kind ("speed": ours/theirs rate, at least goal; "time": ours/theirs time, at most goal)
    ("ccsync", "python-dir", "ccsync durable vs Python with the same fsyncs (file + dir)", 1.5, "speed"),
    # Reported, not a goal: a file replaced atomically needs a second fsync and a rename where a
    # WAL appends once, and the C floor of the same protocol measures the same ratio.
    ("ccsync", "sqlite-wal-full", "ccsync durable vs SQLite WAL synchronous=FULL", None, "speed"),
    ("ccsync", "floor", "ccsync durable time / C floor time", 1.25, "time"),
    ("ccsync-relaxed", "python-none", "ccsync relaxed vs Python without fsync", 2.0, "speed"),
    ("floor", "python-dir", "ceiling: C floor durable vs Python with the same fsyncs", None, "speed"),
    ("floor-relaxed", "python-none", "ceiling: C floor relaxed vs Python without fsync", None, "speed"),
    ("floor", "sqlite-wal-full", "ceiling: C floor durable vs SQLite WAL synchronous=FULL", None, "speed"),
    ("ccsync-relaxed", "floor-relaxed", "ccsync relaxed time / C floor relaxed time", None, "time"),
    ("ccsync", "python-file", "ccsync durable vs Python fsync of the file only (less durable)", None, "speed"),
    ("ccsync", "sqlite-wal-normal", "ccsync durable vs SQLite WAL synchronous=NORMAL (less durable)", None, "speed"),
    ("ccsync", "sqlite-delete-full", "ccsync durable vs SQLite rollback journal FULL", None, "speed"),
    ("ccsync-relaxed", "shell", "ccsync relaxed vs shell flock+jq+mv", None, "speed"),
    ("ccsync-storage", "ccsync", "`CodableStorage.update` vs `SharedDocument.update`", None, "speed"),
    ("ccsync-file", "floor", "ccsync `SharedFile` alone (no JSON) time / C floor time", None, "time"),
    ("ccsync-no-history", "floor-keep-0", "history off (`--keep 0`): ccsync durable time / C floor time", None, "time"),
    ("ccsync-no-history", "floor-no-history", "history off: ccsync (`--keep 0`) time / C floor without history code time", None, "time"),
    ("ccsync", "floor-bare", "ccsync durable time / C floor bare steps time", None, "time"),
    ("floor-no-history", "floor-bare", "C floor time / C floor bare steps time: what the safeguards cost", None, "time"),
    ("floor", "floor-no-history", "C floor: history kept time / history off time", None, "time"),
    ("floor", "floor-keep-0", "C floor: history kept time / `--keep 0` time", None, "time"),
    ("ccsync", "baseline", "this build vs the `--baseline` build, durable", None, "speed"),
    ("ccsync-relaxed", "baseline-relaxed", "this build vs the `--baseline` build, relaxed", None, "speed"),
]


# This build against the `--baseline` build, each as a ratio to the C floor of its own work:
# this build keeps a history by default, which the baseline (6035b41) did not, so its floor
# keeps one too. ours, its floor, baseline, the baseline's floor, label.
BASELINE_TO_FLOOR = [
    ("ccsync", "floor", "baseline", "floor-no-history", "durable"),
    ("ccsync-relaxed", "floor-relaxed", "baseline-relaxed", "floor-relaxed-no-history", "relaxed"),
]


def baseline_to_floor_table(raw, rows, counts):
    """Each build's time over its floor's, and the quotient (this build's over the baseline's),
    per trial round then the median; no rows without a `--baseline`."""
    keys = {row.key for row in rows}
    chosen = [entry for entry in BASELINE_TO_FLOOR if all(key in keys for key in entry[:4])]
    if not chosen:
        return []
    lines = ["Against the `--baseline` build as ratios to the C floor of each build's work (this build keeps a "
             "history by default, so its floor keeps one; the baseline's does not): each cell is this build's "
             "time over its floor's, the baseline's time over its floor's, and the quotient (< 1: this build "
             "nearer its floor), each taken within one trial round, then the median.", ""]
    lines.append("| Mode | " + " | ".join("P=%d" % p for p in counts) + " |")
    lines.append("|" + "---|" * (1 + len(counts)))
    for ours, our_floor, before, before_floor, mode in chosen:
        cells = []
        for processes in counts:
            ours_to_floor = trial_ratio(raw[our_floor][processes], raw[ours][processes])
            before_to_floor = trial_ratio(raw[before_floor][processes], raw[before][processes])
            quotients = trial_quotients(raw, processes, ours, our_floor, before, before_floor)
            if ours_to_floor is None or before_to_floor is None or quotients is None:
                cells.append("FAILING")
                continue
            cells.append("%.2f / %.2f = %.2f" % (ours_to_floor, before_to_floor, median(quotients)))
        lines.append("| %s | %s |" % (mode, " | ".join(cells)))
    return lines + [""]


def trial_quotients(raw, processes, ours, our_floor, before, before_floor):
    """Per trial round: (ours / its floor) / (before / its floor), in time; None on a failure."""
    quotients = []
    for a, a_floor, b, b_floor in zip(*(raw[key][processes] for key in (ours, our_floor, before, before_floor))):
        if any("error" in sample for sample in (a, a_floor, b, b_floor)):
            return None
        quotients.append((a_floor["rate"] / a["rate"]) / (b_floor["rate"] / b["rate"]))
    return quotients


def tables(bench, rows, raw, thread_raw, work):
    options = bench.options
    counts = options.processes
    lines = ["### 1. Locked read-modify-write of a 1 KB document", ""]
    lines.append(
        "P processes add 1 to `counter` in a %d-byte settings document, each increment an exact locked "
        "read-modify-write. Each contender keeps its P processes running and its own file; a trial gives "
        "them a fixed total (%d increments for the durable rows, %d for the relaxed ones, %d for the shell) "
        "and times it from the moment all start until the last finishes; contenders take turns trial by "
        "trial, in a rotating order. Updates per second, all processes together, median of %d trials. "
        "After every trial the counter is checked: FAILING means it was not exact."
        % (len(settings_document(1024).encode()), work["durable"], work["relaxed"], work["shell"], options.trials))
    lines.append("")
    lines += rate_table(bench, rows, raw, counts, ["P=%d" % p for p in counts])

    lines.append("Ratios, each taken within one trial round and then the median over the trials: \"speed\" is "
                 "ccsync's updates/s over the peer's (> 1: ccsync faster); \"time\" is ccsync's time over the "
                 "peer's (< 1: ccsync faster). The ceiling rows are what the C floor itself reaches against "
                 "the same peer: no implementation of this protocol can beat them by much.")
    lines.append("")
    lines.append("| Comparison | Goal | " + " | ".join("P=%d" % p for p in counts) + " | Met |")
    lines.append("|" + "---|" * (3 + len(counts)))
    keys = {row.key for row in rows}
    for ours, theirs, label, goal, kind in COMPARISONS:
        if ours not in keys or theirs not in keys:
            continue
        cells, met = [], True
        for processes in counts:
            ratio = trial_ratio(raw[ours][processes], raw[theirs][processes])
            if ratio is None:
                cells.append("FAILING")
                met = False
            elif kind == "time":
                cells.append("%.2f" % (1 / ratio))
                met = met and (goal is None or 1 / ratio <= goal)
            else:
                cells.append("%.2fx" % ratio)
                met = met and (goal is None or ratio >= goal)
        goal_text = "" if goal is None else ("<= %.2f" % goal if kind == "time" else ">= %.1fx" % goal)
        verdict = "" if goal is None else ("yes" if met else "**no**")
        if goal is not None:
            bench.goals.append((label + " (" + goal_text + ")", "yes" if met else "no",
                                ", ".join("P=%d %s" % (p, c) for p, c in zip(counts, cells))))
        lines.append("| %s | %s | %s | %s |" % (label, goal_text, " | ".join(cells), verdict))
    lines.append("")
    lines += baseline_to_floor_table(raw, rows, counts)

    lines.append("#### Threads of one process (group commit)")
    lines.append("")
    lines.append("One process, T threads sharing each trial's %d durable (or %d relaxed) increments through one "
                 "`SharedDocument`: concurrent `update` calls are grouped into one locked write. Updates per "
                 "second (median of %d trials) and, in parentheses, the speed-up over one thread trial by trial."
                 % (work["durable"], work["relaxed"], options.trials))
    lines.append("")
    thread_counts = options.threads
    lines.append("| Mode | " + " | ".join("T=%d" % t for t in thread_counts) + " | Faster than T=1 |")
    lines.append("|" + "---|" * (2 + len(thread_counts)))
    for mode in ("durable", "relaxed"):
        cells, faster = [], True
        for threads in thread_counts:
            rate, error = cell_rate(thread_raw[mode][threads])
            if error:
                cells.append("FAILING")
                faster = False
                bench.notes.append("threads %s T=%d: %s" % (mode, threads, error))
                continue
            speedup = trial_ratio(thread_raw[mode][threads], thread_raw[mode][thread_counts[0]])
            cells.append("%.0f/s (%.2fx)" % (rate, speedup))
            if threads != thread_counts[0] and speedup <= 1.0:
                faster = False
        bench.goals.append(("group commit: %s, more threads faster than one" % mode, "yes" if faster else "no",
                            ", ".join("T=%d %s" % (t, c) for t, c in zip(thread_counts, cells))))
        lines.append("| %s | %s | %s |" % (mode, " | ".join(cells), "yes" if faster else "**no**"))
    lines.append("")
    return "\n".join(lines)
