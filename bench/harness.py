#!/usr/bin/env python3
"""The ccsync benchmark driver: runs ccsync and the peers users would pick instead on the same
documents, on the same machine, in the same rounds, and writes the tables of BENCHMARKS.md.

bench/run builds everything and calls this; see bench/run --help. Every figure is the median
of several rounds; every ratio is computed within a round (ccsync and the peer back to back)
and the median of those ratios is reported, so load from other users of the machine shifts
both sides of a ratio alike. A run whose final counter is not exactly what the workers added
is reported as FAILING, never as a speed.
"""
import argparse
import json
import os
import platform
import re
import select
import shutil
import signal
import statistics
import subprocess
import sys
import time

try:
    import sqlite3
except ImportError:  # a Python built without it: the SQLite peers are skipped
    sqlite3 = None

BEGIN_MARK = "<!-- bench:begin -->"
END_MARK = "<!-- bench:end -->"


# ---------------------------------------------------------------------------------------------
# Documents

def settings_document(size):
    """A settings document of about `size` bytes once printed pretty: realistic settings with a
    top-level "counter" (the one field every writer changes); bigger documents add entries to a
    "services" list. Deterministic."""
    document = {
        "name": "ccsync benchmark service",
        "version": 3,
        "theme": "dark",
        "fontSize": 13,
        "ratio": 1.5,
        "enabled": True,
        "owner": None,
        "server": {
            "host": "127.0.0.1",
            "port": 8080,
            "tls": {"enabled": False, "certificate": "/etc/ccsync/cert.pem"},
            "timeouts": {"connect": 2.5, "read": 30, "idle": 120},
        },
        "servers": [
            {"host": "alpha.internal", "port": 9001, "weight": 0.7},
            {"host": "beta.internal", "port": 9002, "weight": 0.3},
        ],
        "features": {
            "search": True,
            "uploads": False,
            "beta": {"rollout": 0.25, "groups": ["staff", "testers"]},
        },
        "logging": {"level": "info", "destinations": ["stderr", "/var/log/ccsync/bench.log"]},
        "greeting": "Gr\u00fc\u00dfe, \"friend\"\n",
        "services": [],
        "counter": 0,
    }
    probe = dict(document, services=[service_entry(0)])
    entry_length = len(encoded(dict(probe, services=[service_entry(0), service_entry(1)]))) - len(encoded(probe))
    services = document["services"]
    length = len(encoded(document))
    slack = max(160, size // 100)
    while length < size - slack:  # fill most of what is missing at once; the note pads the rest
        count = max(1, int((size - slack - length) / entry_length * 0.95))
        services.extend(service_entry(index) for index in range(len(services), len(services) + count))
        length = len(encoded(document))
    if length < size:  # pad to the size with a note
        document["note"] = "x" * max(0, size - length - 14)
    return render(document)


def encoded(document):
    return render(document).encode()


def service_entry(index):
    return {
        "name": "service-%d" % index, "host": "10.0.%d.%d" % (index // 250 % 250, index % 250),
        "port": 7000 + index % 1000, "enabled": index % 3 != 0,
        "labels": ["zone-%d" % (index % 4), "tier-%d" % (index % 3)],
    }


def render(document):
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def read_counter(path):
    with open(path, encoding="utf-8") as file:
        return json.load(file)["counter"]


# ---------------------------------------------------------------------------------------------
# Processes

class Failure(Exception):
    pass


class Worker:
    """A child that prints "ready", waits for a line, works, prints "done"."""

    def __init__(self, argv, cwd=None):
        self.argv = argv
        # Unbuffered: `expect` waits in select(2) on the descriptor, which a buffered reader
        # holding lines already read would fool.
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd, bufsize=0)

    def expect(self, word, deadline):
        """Reads lines until one starts with `word`; returns it."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Failure("%s: no '%s' in time" % (self.name(), word))
            ready, _, _ = select.select([self.process.stdout], [], [], remaining)
            if not ready:
                continue
            line = self.process.stdout.readline().decode(errors="replace")
            if not line:
                raise Failure("%s ended before '%s': %s" % (self.name(), word, self.stderr()))
            if line.startswith(word):
                return line.strip()

    def go(self):
        self.process.stdin.write(b"go\n")
        self.process.stdin.flush()

    def close_input(self):
        try:
            self.process.stdin.close()
        except BrokenPipeError:
            pass
        self.process.stdin = None  # communicate() must not flush it again

    def rest(self, timeout=30):
        """Everything it prints until it exits (its standard input is closed first)."""
        if self.process.stdin:
            self.close_input()
        chunks = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], deadline - time.monotonic())
            if not ready:
                break
            chunk = os.read(self.process.stdout.fileno(), 65536)
            if not chunk:
                break
            chunks.append(chunk)
        try:
            self.process.wait(timeout=max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            self.kill()
        return b"".join(chunks).decode(errors="replace")

    def finish(self, timeout=30):
        if self.process.stdin:
            self.close_input()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise Failure("%s did not exit" % self.name())
        if self.process.returncode != 0:
            raise Failure("%s exited %d: %s" % (self.name(), self.process.returncode, self.stderr()))

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def stderr(self):
        try:
            return self.process.stderr.read().decode(errors="replace").strip()[-500:]
        except Exception:
            return ""

    def name(self):
        return os.path.basename(self.argv[0]) + " " + " ".join(self.argv[1:2])


def timed_group(argvs, timeout=180):
    """Starts every worker, waits until all are ready, releases them at once, and returns the
    seconds from release until the last one said "done"."""
    workers = [Worker(argv) for argv in argvs]
    try:
        deadline = time.monotonic() + 30
        for worker in workers:
            worker.expect("ready", deadline)
        start = time.monotonic_ns()
        for worker in workers:
            worker.go()
        deadline = time.monotonic() + timeout
        for worker in workers:
            worker.expect("done", deadline)
        elapsed = (time.monotonic_ns() - start) / 1e9
        for worker in workers:
            worker.finish()
        return elapsed
    finally:
        for worker in workers:
            worker.kill()


def median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def percentile(values, fraction):
    ordered = sorted(values)
    if not ordered:
        return None
    rank = min(len(ordered) - 1, max(0, int(-(-fraction * len(ordered) // 1)) - 1))
    return ordered[rank]


# ---------------------------------------------------------------------------------------------
# The bench

class Bench:
    def __init__(self, options):
        self.options = options
        self.root = os.path.abspath(options.root)
        self.binaries = os.path.abspath(options.binaries)
        self.peers = os.path.abspath(options.peers)
        self.work = os.path.abspath(options.work)
        self.notes = []          # what was skipped and why
        self.sections = []       # markdown
        self.results = {}        # raw, for results.json
        self.goals = []          # (goal, status, detail)
        self.run_number = 0
        self.started = time.monotonic()

    # -- paths ---------------------------------------------------------------------------------
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
        elapsed = time.monotonic() - self.started
        print("[%5.1fs] %s" % (elapsed, message), file=sys.stderr, flush=True)

    # -- contention ----------------------------------------------------------------------------
    def contenders(self):
        """(key, label, durability, class, argv builder, kind). The class picks the amount of
        work, so that comparisons inside one class are of equal work."""
        tool, python = self.bench_tool(), sys.executable
        rows = [
            ("ccsync", "ccsync SharedDocument.update", "durable: fsync file + dir", "durable",
             lambda path, n: [tool, "bench-worker", path, str(n)], "file"),
            ("ccsync-storage", "ccsync CodableStorage.update", "durable: fsync file + dir", "durable",
             lambda path, n: [tool, "bench-worker", path, str(n), "--api", "storage"], "file"),
            ("floor", "C floor (same protocol)", "durable: fsync file + dir", "durable",
             lambda path, n: [self.peer("floor"), "increment", path, str(n)], "file"),
            ("python-dir", "Python flock+json+os.replace", "durable: fsync file + dir", "durable",
             lambda path, n: [python, self.peer("python_worker.py"), path, str(n), "file+dir"], "file"),
            ("python-file", "Python flock+json+os.replace", "fsync file only", "durable",
             lambda path, n: [python, self.peer("python_worker.py"), path, str(n), "file"], "file"),
            ("sqlite-wal-full", "SQLite WAL, synchronous=FULL", "durable", "durable",
             lambda path, n: [python, self.peer("sqlite_worker.py"), path, str(n), "wal", "full"], "sqlite-wal"),
            ("sqlite-wal-normal", "SQLite WAL, synchronous=NORMAL", "atomic; last commits may roll back on power loss", "durable",
             lambda path, n: [python, self.peer("sqlite_worker.py"), path, str(n), "wal", "normal"], "sqlite-wal"),
            ("sqlite-delete-full", "SQLite rollback journal, synchronous=FULL", "durable", "durable",
             lambda path, n: [python, self.peer("sqlite_worker.py"), path, str(n), "delete", "full"], "sqlite-delete"),
            ("sqlite-delete-normal", "SQLite rollback journal, synchronous=NORMAL", "durable (NORMAL syncs at the critical moments in rollback mode)", "durable",
             lambda path, n: [python, self.peer("sqlite_worker.py"), path, str(n), "delete", "normal"], "sqlite-delete"),
            ("ccsync-relaxed", "ccsync SharedDocument(durable: false)", "relaxed: no fsync", "relaxed",
             lambda path, n: [tool, "bench-worker", path, str(n), "--relaxed"], "file"),
            ("floor-relaxed", "C floor, no fsync", "relaxed: no fsync", "relaxed",
             lambda path, n: [self.peer("floor"), "increment", path, str(n), "--relaxed"], "file"),
            ("python-none", "Python flock+json+os.replace", "relaxed: no fsync", "relaxed",
             lambda path, n: [python, self.peer("python_worker.py"), path, str(n), "none"], "file"),
            ("shell", "shell flock+jq+mv", "relaxed: no fsync", "shell",
             lambda path, n: [self.peer("shell_worker.sh"), path, str(n)], "file"),
        ]
        available = []
        for row in rows:
            key = row[0]
            if key == "shell" and not (self.have("jq") and self.have("flock")):
                continue
            if key.startswith("sqlite") and not self.have_sqlite:
                continue
            if key.startswith("floor") and not self.have_floor:
                continue
            if self.options.contenders and key not in self.options.contenders.split(","):
                continue
            available.append(row)
        return available

    def have(self, tool):
        return shutil.which(tool) is not None

    def prepare_contention(self, kind, directory):
        if kind == "file":
            path = os.path.join(directory, "settings.json")
            with open(path, "w", encoding="utf-8") as file:
                file.write(settings_document(1024))
            return path
        path = os.path.join(directory, "settings.db")
        connection = sqlite3.connect(path, isolation_level=None)
        connection.execute("PRAGMA journal_mode=%s" % ("wal" if kind == "sqlite-wal" else "delete"))
        connection.execute("CREATE TABLE settings (id INTEGER PRIMARY KEY, counter INTEGER NOT NULL, document TEXT NOT NULL)")
        connection.execute("INSERT INTO settings VALUES (1, 0, ?)", (settings_document(1024),))
        connection.close()
        return path

    def final_count(self, kind, path):
        if kind == "file":
            return read_counter(path)
        connection = sqlite3.connect(path)
        try:
            return connection.execute("SELECT counter FROM settings WHERE id = 1").fetchone()[0]
        finally:
            connection.close()

    def contention_run(self, row, processes, total):
        key, _, _, _, build, kind = row
        directory = self.fresh_directory()
        path = self.prepare_contention(kind, directory)
        per_worker = total // processes
        try:
            seconds = timed_group([build(path, per_worker) for _ in range(processes)])
        except Failure as failure:
            return {"error": str(failure)}
        final = self.final_count(kind, path)
        expected = per_worker * processes
        shutil.rmtree(directory, ignore_errors=True)
        if final != expected:
            return {"error": "final count %d, expected %d (lost updates)" % (final, expected), "seconds": seconds}
        return {"seconds": seconds, "rate": expected / seconds}

    def measure_contention(self):
        options = self.options
        work = {"durable": options.durable_updates, "relaxed": options.relaxed_updates, "shell": options.shell_updates}
        rows = self.contenders()
        counts = options.processes
        raw = {row[0]: {p: [] for p in counts} for row in rows}
        for round_index in range(options.rounds):
            self.log("contention round %d/%d" % (round_index + 1, options.rounds))
            for processes in counts:
                for row in rows:
                    raw[row[0]][processes].append(self.contention_run(row, processes, work[row[3]]))
        self.results["contention"] = raw

        # Threads of one process (group commit).
        thread_counts = options.threads
        thread_raw = {mode: {t: [] for t in thread_counts} for mode in ("durable", "relaxed")}
        for round_index in range(options.rounds):
            self.log("threads round %d/%d" % (round_index + 1, options.rounds))
            for threads in thread_counts:
                for mode in ("durable", "relaxed"):
                    directory = self.fresh_directory()
                    path = self.prepare_contention("file", directory)
                    total = work[mode]
                    argv = [self.bench_tool(), "bench-worker", path, str(total), "--threads", str(threads)]
                    if mode == "relaxed":
                        argv.append("--relaxed")
                    try:
                        seconds = timed_group([argv])
                        final = read_counter(path)
                        if final != total:
                            result = {"error": "final count %d, expected %d (lost updates)" % (final, total)}
                        else:
                            result = {"seconds": seconds, "rate": total / seconds}
                    except Failure as failure:
                        result = {"error": str(failure)}
                    thread_raw[mode][threads].append(result)
                    shutil.rmtree(directory, ignore_errors=True)
        self.results["threads"] = thread_raw
        self.write_contention_tables(rows, raw, thread_raw, work)

    def cell_rate(self, samples):
        errors = [sample["error"] for sample in samples if "error" in sample]
        if errors:
            return None, errors[0]
        return median([sample["rate"] for sample in samples]), None

    def round_ratios(self, ours, theirs):
        """Per-round ratio of rates (ours / theirs); None when either failed."""
        ratios = []
        for a, b in zip(ours, theirs):
            if "rate" in a and "rate" in b and "error" not in a and "error" not in b:
                ratios.append(a["rate"] / b["rate"])
            else:
                return None
        return median(ratios)

    def write_contention_tables(self, rows, raw, thread_raw, work):
        counts = self.options.processes
        lines = []
        lines.append("### 1. Locked read-modify-write of a 1 KB document")
        lines.append("")
        lines.append("P processes add 1 to `counter` in a %d-byte settings document, each increment an exact "
                     "locked read-modify-write; the P processes share a fixed total (%d increments for the durable "
                     "rows, %d for the relaxed ones, %d for the shell) and start together. Updates per second, all "
                     "processes together (median of %d rounds). FAILING: the final count was not exact."
                     % (len(settings_document(1024)), work["durable"], work["relaxed"], work["shell"], self.options.rounds))
        lines.append("")
        header = "| Contender | Durability | " + " | ".join("P=%d" % p for p in counts) + " |"
        lines.append(header)
        lines.append("|" + "---|" * (2 + len(counts)))
        for row in rows:
            key, label, durability = row[0], row[1], row[2]
            cells = []
            for processes in counts:
                rate, error = self.cell_rate(raw[key][processes])
                cells.append("FAILING" if error else "%.0f/s" % rate)
                if error:
                    self.notes.append("%s, P=%d: %s" % (label, processes, error))
            lines.append("| %s | %s | %s |" % (label, durability, " | ".join(cells)))
        lines.append("")

        comparisons = [
            ("ccsync", "python-dir", "ccsync durable vs Python with the same fsyncs (file + dir)", 1.5, "ratio"),
            ("ccsync", "sqlite-wal-full", "ccsync durable vs SQLite WAL synchronous=FULL", 0.9, "ratio"),
            ("ccsync", "floor", "ccsync durable time / C floor time (goal <= 1.25)", 1.25, "time"),
            ("ccsync-relaxed", "python-none", "ccsync relaxed vs Python without fsync", 2.0, "ratio"),
            ("ccsync", "python-file", "ccsync durable vs Python fsync of the file only (less durable)", None, "ratio"),
            ("ccsync", "sqlite-wal-normal", "ccsync durable vs SQLite WAL synchronous=NORMAL (less durable)", None, "ratio"),
            ("ccsync", "sqlite-delete-full", "ccsync durable vs SQLite rollback journal FULL", None, "ratio"),
            ("ccsync-relaxed", "floor-relaxed", "ccsync relaxed time / C floor relaxed time", None, "time"),
            ("ccsync-relaxed", "shell", "ccsync relaxed vs shell flock+jq+mv (per update)", None, "ratio"),
            ("ccsync-storage", "ccsync", "CodableStorage.update vs SharedDocument.update", None, "ratio"),
        ]
        lines.append("Ratios, each computed within a round and then the median taken (ratio = ccsync updates/s "
                     "over the peer's, so > 1 means ccsync is faster; \"time\" rows are ccsync's time over the "
                     "peer's, so < 1 means ccsync is faster):")
        lines.append("")
        lines.append("| Comparison | Goal | " + " | ".join("P=%d" % p for p in counts) + " | Met |")
        lines.append("|" + "---|" * (3 + len(counts)))
        keys = {row[0] for row in rows}
        for ours, theirs, label, goal, kind in comparisons:
            if ours not in keys or theirs not in keys:
                lines.append("| %s | %s | %s | not measured: peer missing |" % (label, goal or "", " | ".join("" for _ in counts)))
                continue
            cells, met = [], True
            for processes in counts:
                ratio = self.round_ratios(raw[ours][processes], raw[theirs][processes])
                if ratio is None:
                    cells.append("FAILING")
                    met = False
                    continue
                if kind == "time":
                    ratio = 1 / ratio
                    cells.append("%.2f" % ratio)
                    met = met and (goal is None or ratio <= goal)
                else:
                    cells.append("%.2fx" % ratio)
                    met = met and (goal is None or ratio >= goal)
            goal_text = "" if goal is None else ("<= %.2f" % goal if kind == "time" else ">= %.1fx" % goal)
            verdict = "" if goal is None else ("yes" if met else "**no**")
            if goal is not None:
                self.goals.append((label, verdict.replace("*", ""), ", ".join(cells)))
            lines.append("| %s | %s | %s | %s |" % (label, goal_text, " | ".join(cells), verdict))
        lines.append("")

        lines.append("#### Threads of one process")
        lines.append("")
        lines.append("T threads of one process share %d durable (or %d relaxed) increments through one "
                     "`SharedDocument`; concurrent `update` calls are grouped into one locked write (group "
                     "commit). Updates per second, and the speed-up over one thread in the same round:"
                     % (work["durable"], work["relaxed"]))
        lines.append("")
        thread_counts = self.options.threads
        lines.append("| Mode | " + " | ".join("T=%d" % t for t in thread_counts) + " | Faster than T=1 |")
        lines.append("|" + "---|" * (2 + len(thread_counts)))
        for mode in ("durable", "relaxed"):
            cells, faster = [], True
            for threads in thread_counts:
                rate, error = self.cell_rate(thread_raw[mode][threads])
                if error:
                    cells.append("FAILING")
                    faster = False
                    self.notes.append("threads %s T=%d: %s" % (mode, threads, error))
                    continue
                speedup = self.round_ratios(thread_raw[mode][threads], thread_raw[mode][thread_counts[0]])
                cells.append("%.0f/s (%.2fx)" % (rate, speedup) if speedup else "%.0f/s" % rate)
                if threads != thread_counts[0] and (speedup is None or speedup <= 1.0):
                    faster = False
            self.goals.append(("group commit: %s threads faster than one" % mode, "yes" if faster else "no", ", ".join(cells)))
            lines.append("| %s | %s | %s |" % (mode, " | ".join(cells), "yes" if faster else "**no**"))
        lines.append("")
        self.sections.append("\n".join(lines))

    # -- propagation ---------------------------------------------------------------------------
    def propagation_run(self, reader_argv, path, size):
        """One writer (the C floor's durable protocol, stamping each rename) and one reader;
        returns the reader's rename-to-value delays in seconds."""
        with open(path, "w", encoding="utf-8") as file:
            file.write('{"sequence": -1, "sentAt": 0, "payload": ""}\n')
        reader = Worker(reader_argv)
        writer = None
        try:
            reader.expect("ready", time.monotonic() + 30)
            saves = self.options.propagation_saves
            writer = Worker([self.peer("floor"), "timed-writer", path, str(saves), str(size),
                             str(self.options.propagation_interval_us)])
            writer.expect("ready", time.monotonic() + 30)
            writer.go()
            writer.expect("done", time.monotonic() + 120)
            renamed = {}
            for line in writer.rest().split("\n"):
                parts = line.split()
                if len(parts) == 2:
                    renamed[int(parts[0])] = int(parts[1])
            time.sleep(0.3)
            reader.close_input()
            output = reader.rest()
            if reader.process.returncode != 0:
                raise Failure("reader exited %d: %s" % (reader.process.returncode, reader.stderr()))
        finally:
            reader.kill()
            if writer:
                writer.kill()
        delays = []
        for line in output.split("\n"):
            parts = line.split()
            if len(parts) == 2 and int(parts[0]) in renamed:
                delays.append((int(parts[1]) - renamed[int(parts[0])]) / 1e9)
        return {"delays": delays, "sent": len(renamed)}

    def measure_propagation(self):
        if not self.have_floor:
            self.sections.append("### 2. Propagation\n\nnot measured: no C compiler for the writer and the floor\n")
            return
        sizes = [("1 KB", 1024), ("100 KB", 100 * 1024)]
        readers = [("ccsync", "ccsync CodableStorage observer (watch, stat, read, parse, decode)",
                    lambda path: [self.bench_tool(), "propagation-reader", path]),
                   ("floor", "C inotify floor (read, find the numbers)",
                    lambda path: [self.peer("inotify_floor"), path])]
        raw = {(size, key): [] for _, size in sizes for key, _, _ in readers}
        for round_index in range(self.options.propagation_rounds):
            self.log("propagation round %d/%d" % (round_index + 1, self.options.propagation_rounds))
            for _, size in sizes:
                for key, _, argv in readers:
                    directory = self.fresh_directory()
                    path = os.path.join(directory, "timed.json")
                    try:
                        raw[(size, key)].append(self.propagation_run(argv(path), path, size))
                    except Failure as failure:
                        raw[(size, key)].append({"error": str(failure)})
                    shutil.rmtree(directory, ignore_errors=True)
        self.results["propagation"] = {"%s/%d" % (k, s): v for (s, k), v in raw.items()}

        def summary(runs):
            if any("error" in run for run in runs):
                return None
            return {
                "p50": median([percentile(run["delays"], 0.5) for run in runs]),
                "p99": median([percentile(run["delays"], 0.99) for run in runs]),
                "max": median([max(run["delays"]) for run in runs if run["delays"]]),
                "received": sum(len(run["delays"]) for run in runs),
                "sent": sum(run["sent"] for run in runs),
            }

        lines = ["### 2. Propagation: rename in one process to the value in another", ""]
        lines.append("A writer process replaces the file %d times, %.0f ms apart, with ccsync's durable protocol "
                     "(the C floor's `timed-writer`, which stamps `CLOCK_MONOTONIC` just before each `rename`); "
                     "the reader stamps the moment it holds the new value. ccsync's reader is a release-built "
                     "process with a `CodableStorage<TimedDocument>` whose observer gets the decoded value; the "
                     "floor is a C program doing one `inotify` read, `open`, `read` and finding the numbers. "
                     "Milliseconds, median over %d rounds of each round's percentile."
                     % (self.options.propagation_saves, self.options.propagation_interval_us / 1000,
                        self.options.propagation_rounds))
        lines.append("")
        lines.append("| Document | Reader | p50 | p99 | max | heard | p50 / floor p50 |")
        lines.append("|---|---|---|---|---|---|---|")
        for label, size in sizes:
            floor = summary(raw[(size, "floor")])
            for key, reader_label, _ in readers:
                result = summary(raw[(size, key)])
                if result is None:
                    lines.append("| %s | %s | FAILING | | | | |" % (label, reader_label))
                    continue
                ratio = ""
                if key == "ccsync" and floor:
                    ratios = [percentile(a["delays"], 0.5) / percentile(b["delays"], 0.5)
                              for a, b in zip(raw[(size, "ccsync")], raw[(size, "floor")])]
                    ratio_value = median(ratios)
                    ratio = "%.2fx" % ratio_value
                    self.goals.append(("propagation %s: p50 within 2x of the floor" % label,
                                       "yes" if ratio_value <= 2 else "no", ratio))
                    if size == 1024:
                        self.goals.append(("propagation 1 KB: p99 under 1 ms", "yes" if result["p99"] < 0.001 else "no",
                                           "%.3f ms" % (result["p99"] * 1000)))
                lines.append("| %s | %s | %.3f | %.3f | %.3f | %d/%d | %s |" % (
                    label, reader_label, result["p50"] * 1000, result["p99"] * 1000, result["max"] * 1000,
                    result["received"], result["sent"], ratio))
        lines.append("")
        self.sections.append("\n".join(lines))

    # -- CLI -----------------------------------------------------------------------------------
    def measure_cli(self):
        lines = ["### 3. Command line: one call on a 1 KB file", ""]
        ccsync = os.path.join(self.binaries, "ccsync")
        cli_ready = os.path.exists(ccsync) and self.cli_has_get_set(ccsync)
        if not cli_ready:
            lines.append("not measured: CLI not built (no `ccsync get`/`ccsync set` in this tree)")
            self.goals.append(("ccsync get <= 0.3x jq", "not measured", "CLI not built"))
            self.goals.append(("ccsync set >= 3x faster than flock+jq+mv", "not measured", "CLI not built"))
            self.sections.append("\n".join(lines) + "\n")
            return
        if not self.have_floor:
            lines.append("not measured: no C compiler for the spawn driver")
            self.sections.append("\n".join(lines) + "\n")
            return
        directory = self.fresh_directory()
        path = os.path.join(directory, "settings.json")
        with open(path, "w", encoding="utf-8") as file:
            file.write(settings_document(1024))
        calls = self.options.cli_calls
        spawn = self.peer("spawn_loop")
        jq = shutil.which("jq")
        commands = [
            ("true", "`/bin/true` (spawn floor)", None, ["true"]),
            ("get", "`ccsync get FILE counter`", "read", [ccsync, "get", path, "counter"]),
            ("set", "`ccsync set FILE counter 7` (durable)", "write", [ccsync, "set", path, "counter", "7"]),
        ]
        if jq:
            commands += [
                ("jq", "`jq .counter FILE`", "read", [jq, ".counter", path]),
                ("shell-set", "`flock FILE.lock sh -c 'jq .counter=7 FILE > TMP && mv TMP FILE'` (no fsync)", "write",
                 ["flock", path + ".lock", "sh", "-c", 'jq ".counter = 7" "$0" > "$0.tmp" && mv "$0.tmp" "$0"', path]),
            ]
        raw = {key: [] for key, _, _, _ in commands}
        for round_index in range(self.options.rounds):
            self.log("cli round %d/%d" % (round_index + 1, self.options.rounds))
            for key, _, _, argv in commands:
                output = subprocess.run([spawn, str(calls)] + argv, capture_output=True, text=True, check=True).stdout
                nanoseconds, failures = (int(part) for part in output.split())
                raw[key].append({"seconds": nanoseconds / 1e9 / calls, "failures": failures})
        shutil.rmtree(directory, ignore_errors=True)
        self.results["cli"] = raw

        lines.append("Each command run %d times in a row by a C driver (`posix_spawnp`, `waitpid`, output to "
                     "`/dev/null`); wall time per call, spawn and exit included (median of %d rounds)."
                     % (calls, self.options.rounds))
        lines.append("")
        lines.append("| Command | ms per call | failures |")
        lines.append("|---|---|---|")
        for key, label, _, _ in commands:
            runs = raw[key]
            lines.append("| %s | %.2f | %d |" % (label, median([r["seconds"] for r in runs]) * 1000,
                                                 sum(r["failures"] for r in runs)))
        lines.append("")
        if jq:
            get_ratio = median([a["seconds"] / b["seconds"] for a, b in zip(raw["get"], raw["jq"])])
            set_ratio = median([b["seconds"] / a["seconds"] for a, b in zip(raw["set"], raw["shell-set"])])
            failing = sum(r["failures"] for k in raw for r in raw[k]) > 0
            lines.append("| Comparison | Goal | Measured | Met |")
            lines.append("|---|---|---|---|")
            get_met = get_ratio <= 0.3 and not failing
            set_met = set_ratio >= 3 and not failing
            lines.append("| `ccsync get` time / `jq` time | <= 0.3 | %.2f | %s |" % (get_ratio, "yes" if get_met else "**no**"))
            lines.append("| `ccsync set` speed / flock+jq+mv speed | >= 3x | %.2fx | %s |" % (set_ratio, "yes" if set_met else "**no**"))
            self.goals.append(("ccsync get <= 0.3x jq", "yes" if get_met else "no", "%.2f" % get_ratio))
            self.goals.append(("ccsync set >= 3x faster than flock+jq+mv", "yes" if set_met else "no", "%.2fx" % set_ratio))
            lines.append("")
        self.sections.append("\n".join(lines))

    def cli_has_get_set(self, ccsync):
        try:
            result = subprocess.run([ccsync, "set", "--help"], capture_output=True, text=True, timeout=10)
            return result.returncode == 0 and "USAGE" in result.stdout
        except Exception:
            return False

    # -- save cost by size ---------------------------------------------------------------------
    def measure_sizes(self):
        if not self.have_floor:
            return
        sizes = [("1 KB", 1024, 200), ("100 KB", 100 * 1024, 100), ("1 MB", 1024 * 1024, 20), ("10 MB", 10 * 1024 * 1024, 4)]
        writers = [
            ("ccsync", lambda path, n: [self.bench_tool(), "bench-worker", path, str(n)]),
            ("floor", lambda path, n: [self.peer("floor"), "increment", path, str(n)]),
            ("ccsync-relaxed", lambda path, n: [self.bench_tool(), "bench-worker", path, str(n), "--relaxed"]),
            ("floor-relaxed", lambda path, n: [self.peer("floor"), "increment", path, str(n), "--relaxed"]),
        ]
        documents = {size: settings_document(size) for _, size, _ in sizes}
        raw = {(size, key): [] for _, size, _ in sizes for key, _ in writers}
        for round_index in range(self.options.rounds):
            self.log("sizes round %d/%d" % (round_index + 1, self.options.rounds))
            for _, size, count in sizes:
                for key, build in writers:
                    directory = self.fresh_directory()
                    path = os.path.join(directory, "settings.json")
                    with open(path, "w", encoding="utf-8") as file:
                        file.write(documents[size])
                    try:
                        seconds = timed_group([build(path, count)])
                        final = read_counter(path)
                        result = {"seconds": seconds / count} if final == count else {"error": "final count %d" % final}
                    except Failure as failure:
                        result = {"error": str(failure)}
                    raw[(size, key)].append(result)
                    shutil.rmtree(directory, ignore_errors=True)
        self.results["sizes"] = {"%s/%d" % (k, s): v for (s, k), v in raw.items()}

        def cell(size, key):
            runs = raw[(size, key)]
            if any("error" in run for run in runs):
                return None
            return median([run["seconds"] for run in runs])

        def ratio(size, ours, theirs):
            runs = list(zip(raw[(size, ours)], raw[(size, theirs)]))
            if any("error" in a or "error" in b for a, b in runs):
                return None
            return median([a["seconds"] / b["seconds"] for a, b in runs])

        lines = ["### 4. Save cost by document size", ""]
        lines.append("One process, one locked read-modify-write of `counter` per save (ccsync: "
                     "`SharedDocument.update`: read, parse, change, print, write; the C floor: read, edit the "
                     "digits, write). Milliseconds per save (median of %d rounds) and ccsync's time over the "
                     "floor's in the same round." % self.options.rounds)
        lines.append("")
        lines.append("| Size | ccsync durable | C floor durable | ratio | ccsync relaxed | C floor relaxed | ratio |")
        lines.append("|---|---|---|---|---|---|---|")

        def text(value, scale=1000, form="%.3f"):
            return "FAILING" if value is None else form % (value * scale)

        for label, size, _ in sizes:
            r1, r2 = ratio(size, "ccsync", "floor"), ratio(size, "ccsync-relaxed", "floor-relaxed")
            lines.append("| %s | %s | %s | %s | %s | %s | %s |" % (
                label, text(cell(size, "ccsync")), text(cell(size, "floor")), text(r1, 1, "%.2f"),
                text(cell(size, "ccsync-relaxed")), text(cell(size, "floor-relaxed")), text(r2, 1, "%.2f")))
        lines.append("")
        self.sections.append("\n".join(lines))

    # -- watcher CPU and memory ------------------------------------------------------------------
    def process_cpu_seconds(self, pid):
        with open("/proc/%d/stat" % pid) as file:
            fields = file.read().rsplit(")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        return (int(fields[11]) + int(fields[12])) / ticks  # utime, stime

    def process_rss_kib(self, pid):
        with open("/proc/%d/status" % pid) as file:
            for line in file:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return None

    def watcher_cpu_run(self, argv_builder, directory, seconds):
        reader = Worker(argv_builder(directory))
        churn = None
        try:
            reader.expect("ready", time.monotonic() + 60)
            neighbour = os.path.join(directory, "neighbour.json")
            with open(neighbour, "w", encoding="utf-8") as file:
                file.write(settings_document(1024))
            churn = Worker([self.peer("floor"), "churn", neighbour, str(seconds)])
            churn.expect("ready", time.monotonic() + 30)
            before = self.process_cpu_seconds(reader.process.pid)
            start = time.monotonic()
            churn.go()
            rewrites = int(churn.expect("done", time.monotonic() + seconds + 30).split()[1])
            elapsed = time.monotonic() - start
            after = self.process_cpu_seconds(reader.process.pid)
            churn.finish()
            reader.close_input()
            output = reader.rest()
            return {"cpu": (after - before) / elapsed, "rewrites_per_second": rewrites / elapsed, "output": output[-200:]}
        finally:
            reader.kill()
            if churn:
                churn.kill()

    def measure_watcher(self):
        if not self.have_floor:
            return
        seconds = self.options.churn_seconds
        readers = [
            ("ccsync", "ccsync process watching one file (`CodableStorage`)",
             lambda directory: [self.bench_tool(), "watch-files", self.seed_watched(directory, 1), "1"]),
            ("floor", "C inotify floor watching one file",
             lambda directory: [self.peer("inotify_floor"), self.seed_watched(directory, 1) + "/watched-0.json"]),
        ]
        raw = {key: [] for key, _, _ in readers}
        for round_index in range(self.options.watcher_rounds):
            self.log("watcher CPU round %d/%d" % (round_index + 1, self.options.watcher_rounds))
            for key, _, build in readers:
                directory = self.fresh_directory()
                try:
                    raw[key].append(self.watcher_cpu_run(build, directory, seconds))
                except Failure as failure:
                    raw[key].append({"error": str(failure)})
                shutil.rmtree(directory, ignore_errors=True)

        memory = {}
        self.log("resident memory")
        for count in (1, 1000):
            directory = self.fresh_directory()
            self.seed_watched(directory, count)
            reader = Worker([self.bench_tool(), "watch-files", directory, str(count)])
            try:
                reader.expect("ready", time.monotonic() + 120)
                time.sleep(0.3)
                memory[count] = self.process_rss_kib(reader.process.pid)
                reader.close_input()
                reader.rest()
            except Failure as failure:
                memory[count] = None
                self.notes.append("memory, %d files: %s" % (count, failure))
            finally:
                reader.kill()
            shutil.rmtree(directory, ignore_errors=True)
        floor_memory = None
        directory = self.fresh_directory()
        reader = Worker([self.peer("inotify_floor"), self.seed_watched(directory, 1) + "/watched-0.json"])
        try:
            reader.expect("ready", time.monotonic() + 30)
            floor_memory = self.process_rss_kib(reader.process.pid)
        finally:
            reader.kill()
        shutil.rmtree(directory, ignore_errors=True)
        self.results["watcher"] = {"cpu": raw, "memory": memory, "floor_memory": floor_memory}

        lines = ["### 5. Watching: CPU while a neighbour churns, and resident memory", ""]
        lines.append("A C process rewrites `neighbour.json` (ccsync's protocol without fsync) in a tight loop for "
                     "%.0f s in the directory of the watched file; CPU time of the watching process (utime + "
                     "stime from `/proc/PID/stat`) over that time, as a share of one core (median of %d rounds)."
                     % (seconds, self.options.watcher_rounds))
        lines.append("")
        lines.append("| Watcher | CPU (% of a core) | neighbour rewrites/s | reloads |")
        lines.append("|---|---|---|---|")
        for key, label, _ in readers:
            runs = raw[key]
            if any("error" in run for run in runs):
                lines.append("| %s | FAILING | | |" % label)
                self.notes.append("watcher %s: %s" % (key, [run.get("error") for run in runs]))
                continue
            cpu = median([run["cpu"] for run in runs])
            reloads = ""
            if key == "ccsync":
                found = re.findall(r"reloads (\d+)", " ".join(run["output"] for run in runs))
                reloads = str(sum(int(value) for value in found))
                self.goals.append(("watcher CPU under neighbour churn < 5% of a core",
                                   "yes" if cpu < 0.05 else "no", "%.1f%%" % (cpu * 100)))
            lines.append("| %s | %.1f%% | %.0f | %s |" % (label, cpu * 100, median([run["rewrites_per_second"] for run in runs]), reloads))
        lines.append("")
        lines.append("| Process | VmRSS |")
        lines.append("|---|---|")
        for count in (1, 1000):
            value = memory.get(count)
            lines.append("| `ccsync-bench watch-files`, %d watched `CodableStorage` file%s (1 KB each) | %s |"
                         % (count, "" if count == 1 else "s", "FAILING" if value is None else "%.1f MiB" % (value / 1024)))
        if floor_memory:
            lines.append("| C inotify floor, one file | %.1f MiB |" % (floor_memory / 1024))
        if memory.get(1) and memory.get(1000):
            lines.append("")
            lines.append("Per additional watched file: %.1f KiB." % ((memory[1000] - memory[1]) / 999))
        lines.append("")
        self.sections.append("\n".join(lines))

    def seed_watched(self, directory, count):
        document = settings_document(1024)
        for index in range(count):
            path = os.path.join(directory, "watched-%d.json" % index)
            if not os.path.exists(path):
                with open(path, "w", encoding="utf-8") as file:
                    file.write(document)
        return directory

    # -- output --------------------------------------------------------------------------------
    def environment(self):
        def version(argv):
            try:
                return subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout.strip().split("\n")[0]
            except Exception:
                return "missing"

        cpu = "unknown"
        try:
            with open("/proc/cpuinfo") as file:
                for line in file:
                    if line.startswith("model name"):
                        cpu = line.split(":", 1)[1].strip()
                        break
        except OSError:
            pass
        filesystem = " ".join(version(["findmnt", "-n", "-o", "FSTYPE,OPTIONS", "-T", self.work]).split()[:1]) or "unknown"
        return [
            "- Machine: %s, %d cores, Linux %s; files in `%s` (%s)." % (
                cpu, os.cpu_count(), platform.release(), os.path.relpath(self.work, self.root), filesystem),
            "- Peers: Python %s, SQLite %s, %s, gcc %s." % (
                platform.python_version(), sqlite3.sqlite_version if sqlite3 else "missing", version(["jq", "--version"]),
                version(["gcc", "-dumpversion"])),
            "- Load average at start %s, at end %s (other users share the cores: compare ratios, not figures)." % (
                self.load_at_start, " ".join(open("/proc/loadavg").read().split()[:3])),
        ]

    def write_markdown(self, elapsed):
        lines = [BEGIN_MARK, "", "## Generated by `bench/run`", ""]
        lines.append("_Generated %s by `bench/run` in %.0f s. Do not edit between the markers; write notes "
                     "outside them._" % (time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), elapsed))
        lines.append("")
        lines += self.environment()
        lines.append("")
        if self.goals:
            lines.append("### Goals")
            lines.append("")
            lines.append("| Goal | Met | Measured |")
            lines.append("|---|---|---|")
            for goal, status, detail in self.goals:
                lines.append("| %s | %s | %s |" % (goal, status if status != "no" else "**no**", detail))
            lines.append("")
        for section in self.sections:
            lines.append(section)
        if self.notes:
            lines.append("### Notes from this run")
            lines.append("")
            for note in self.notes:
                lines.append("- " + note)
            lines.append("")
        lines.append(END_MARK)
        generated = "\n".join(lines)

        path = self.options.output
        existing = open(path, encoding="utf-8").read() if os.path.exists(path) else "# Benchmarks\n\n"
        if BEGIN_MARK in existing and END_MARK in existing:
            head, rest = existing.split(BEGIN_MARK, 1)
            tail = rest.split(END_MARK, 1)[1]
            text = head + generated + tail
        else:
            text = existing.rstrip("\n") + "\n\n" + generated + "\n"
        with open(path, "w", encoding="utf-8") as file:
            file.write(text)

    def run(self):
        self.load_at_start = " ".join(open("/proc/loadavg").read().split()[:3])
        self.have_floor = os.access(self.peer("floor"), os.X_OK)
        self.have_sqlite = sqlite3 is not None
        if not self.have_sqlite:
            self.notes.append("SQLite peers skipped: this Python has no sqlite3 module")
        for note in self.options.note:
            self.notes.append(note)
        os.makedirs(self.work, exist_ok=True)
        wanted = set(self.options.only.split(",")) if self.options.only else None
        steps = [("contention", self.measure_contention), ("propagation", self.measure_propagation),
                 ("cli", self.measure_cli), ("sizes", self.measure_sizes), ("watcher", self.measure_watcher)]
        for name, step in steps:
            if wanted is None or name in wanted:
                step()
        elapsed = time.monotonic() - self.started
        with open(os.path.join(self.work, "results.json"), "w") as file:
            json.dump({"results": self.results, "goals": self.goals, "notes": self.notes}, file, indent=1, default=str)
        self.write_markdown(elapsed + self.options.build_seconds)
        shutil.rmtree(self.work, ignore_errors=True) if not self.options.keep else None
        for goal, status, detail in self.goals:
            self.log("goal: %-60s %-13s %s" % (goal, status, detail))
        self.log("wrote %s" % self.options.output)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True)
    parser.add_argument("--binaries", required=True, help="directory with ccsync-bench (and ccsync)")
    parser.add_argument("--peers", required=True, help="directory with the compiled C peers and the scripts")
    parser.add_argument("--work", required=True, help="scratch directory (on the file system to measure)")
    parser.add_argument("--output", required=True, help="BENCHMARKS.md")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--processes", type=lambda text: [int(p) for p in text.split(",")], default=[1, 2, 4, 8])
    parser.add_argument("--threads", type=lambda text: [int(p) for p in text.split(",")], default=[1, 2, 4, 8])
    parser.add_argument("--durable-updates", type=int, default=400)
    parser.add_argument("--relaxed-updates", type=int, default=1600)
    parser.add_argument("--shell-updates", type=int, default=24)
    parser.add_argument("--propagation-saves", type=int, default=200)
    parser.add_argument("--propagation-interval-us", type=int, default=5000)
    parser.add_argument("--propagation-rounds", type=int, default=3)
    parser.add_argument("--cli-calls", type=int, default=200)
    parser.add_argument("--churn-seconds", type=float, default=3)
    parser.add_argument("--watcher-rounds", type=int, default=3)
    parser.add_argument("--only", help="comma-separated: contention,propagation,cli,sizes,watcher")
    parser.add_argument("--contenders", help="comma-separated contender keys to run (default: all)")
    parser.add_argument("--note", action="append", default=[], help="a line for the notes (skipped peers)")
    parser.add_argument("--build-seconds", type=float, default=0)
    parser.add_argument("--keep", action="store_true", help="keep the scratch directory")
    options = parser.parse_args()
    signal.signal(signal.SIGINT, signal.default_int_handler)
    Bench(options).run()


if __name__ == "__main__":
    main()
