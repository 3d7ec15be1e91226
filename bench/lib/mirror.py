"""8. Mirror: `ccsync mirror` between two "machines" (two directories, each with its own
mirror process) through one three-member etcd this module starts, against C floors of the
same paths (bench/peers/mirror_floor.c), all in the same run.

Four figures: (a) propagation from a write to machine A's file to machine B's file; (b) one key
under growing contention, P = 1, 4, 16 processes spread over the three members; (c) fan-out:
one put heard by 1, 10, 100 watching processes; (d) the mirror's CPU at idle and under a
write every 10 ms. Every wait on a condition is a poll with a deadline; every process is
stopped by the PID this module started.
"""
import json
import os
import shutil
import subprocess
import time

from .documents import settings_document
from .etcd import Etcd, ccsync_command, ccsync_etcd_support, etcd_binary, version
from .processes import Failure, Pool, Worker, median, percentile
from .propagation import delays_from
from .watching import cpu_seconds, resident_kib

TITLE = "### 8. Mirror: a local file on each machine, one etcd key between them"
SEED = '{"sequence": -1, "sentAt": 0, "payload": ""}\n'
DOCUMENT_BYTES = 1024

GOALS = [
    "mirror: file-to-file propagation p50 <= 1.5x the C floor of the same path",
    "mirror: one key stays exact at P = 1, 4, 16 over three members",
    "mirror fan-out: ccsync watch p50 at 100 watchers <= 1.3x raw watch streams' that parse each value",
    "mirror: idle CPU < 1% of a core",
    "mirror: CPU under a write every 10 ms <= 1.5x the C floor's (per mirror, against the floor doing both machines' parts)",
    "mirror with status reports: propagation p50 and busy CPU <= 1.10x the `--baseline-ccsync` build's",
]


# ---------------------------------------------------------------------------------------------
# Files and waiting.

def replace_file(path, text):
    """Replaces PATH with TEXT as an editor's rename-style save does (temp, fsync, rename)."""
    temporary = "%s.bench-%d" % (path, os.getpid())
    with open(temporary, "w") as file:
        file.write(text)
        file.flush()
        os.fsync(file.fileno())
    os.rename(temporary, path)


def sequence_of(path):
    """The "sequence" number in the JSON file at PATH, or None (absent, or not valid yet)."""
    try:
        with open(path) as file:
            return json.load(file).get("sequence")
    except (OSError, ValueError, AttributeError):
        return None


def wait_until(condition, seconds, what, processes=()):
    """Polls `condition` every 5 ms until it holds; Failure after `seconds` or when one of
    `processes` (Popen) has exited."""
    deadline = time.monotonic() + seconds
    while not condition():
        for process in processes:
            if process.poll() is not None:
                raise Failure("%s: a process it needs exited %d" % (what, process.returncode))
        if time.monotonic() > deadline:
            raise Failure("%s: not within %d s" % (what, seconds))
        time.sleep(0.005)


def stop(process):
    """SIGTERM to the PID this module started, SIGKILL after 10 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def etcd_url(etcd, key, first):
    """etcd://ALL-MEMBERS/KEY with member `first` first: machine i talks to member i mod 3."""
    endpoints = etcd.endpoints
    rotated = endpoints[first % len(endpoints):] + endpoints[:first % len(endpoints)]
    return "etcd://%s/%s" % (",".join(rotated), key)


# ---------------------------------------------------------------------------------------------
# Two machines: two directories, a file in each, joined through the key.

_reports_status = {}


def host_name_option(ccsync, name):
    """`--host-name NAME` for a build whose mirror reports its status under the host's name;
    nothing for one without the option. The two machines are one host here: with one name, the
    mirror started second is refused (a live mirror holds the name) whenever the first one's
    report is already in the cluster, which a loaded machine makes happen."""
    if ccsync not in _reports_status:
        try:
            help_text = subprocess.run([ccsync, "mirror", "--help"], capture_output=True, text=True, timeout=30).stdout
        except (OSError, subprocess.SubprocessError):
            help_text = ""
        _reports_status[ccsync] = "--host-name" in help_text
    return ["--host-name", name] if _reports_status[ccsync] else []


class Machines:
    """Machine A's file and machine B's file, kept in sync through KEY by `ccsync mirror` (one
    process per machine; A talks to member 0 first, B to member 1) or by the C floor's `chain`
    (one process doing A's inotify read and put, and B's watch and atomic write)."""

    def __init__(self, bench, etcd, key, ccsync=None):
        self.directory = bench.fresh_directory()
        self.a = os.path.join(self.directory, "a", "settings.json")
        self.b = os.path.join(self.directory, "b", "settings.json")
        os.makedirs(os.path.dirname(self.a))
        os.makedirs(os.path.dirname(self.b))
        etcd.put(key, SEED)
        self.processes = []
        self.worker = None
        try:
            if ccsync:
                # Both files absent: each mirror copies the key to its file.
                for index, path in enumerate((self.a, self.b)):
                    log = open(path + ".mirror.log", "wb")
                    argv = [ccsync, "mirror"] + host_name_option(ccsync, "machine-" + "ab"[index])
                    self.processes.append(subprocess.Popen(argv + [path, etcd_url(etcd, key, index)],
                                                           stdin=subprocess.DEVNULL, stdout=log, stderr=log))
                    log.close()
                wait_until(lambda: sequence_of(self.a) == -1 and sequence_of(self.b) == -1, 60,
                           "the mirrors' first sync", self.processes)
            else:
                for path in (self.a, self.b):
                    replace_file(path, SEED)
                self.worker = Worker([bench.peer("mirror_floor"), "chain", self.a, self.b, etcd.endpoints[0],
                                      etcd.endpoints[1], key])
                self.worker.expect("ready", time.monotonic() + 30)
                self.processes.append(self.worker.process)
            # The whole path is live once a write to A has reached B.
            replace_file(self.a, SEED.replace("-1", "-2", 1))
            wait_until(lambda: sequence_of(self.b) == -2, 60, "a warm-up write from A to B", self.processes)
        except BaseException:
            self.stop()
            raise

    def pids(self):
        return [process.pid for process in self.processes]

    def log_tail(self):
        tails = []
        for path in (self.a, self.b):
            try:
                with open(path + ".mirror.log", "rb") as file:
                    tails.append(file.read()[-300:].decode(errors="replace").strip())
            except OSError:
                pass
        return " / ".join(tail for tail in tails if tail)

    def stop(self):
        if self.worker:
            self.worker.close_input()
        for process in self.processes:
            stop(process)
        shutil.rmtree(self.directory, ignore_errors=True)


def timed_writes(bench, machines, count, period_us, reader=True):
    """The C writer replaces A's file COUNT times, PERIOD_US apart (ccsync's durable protocol,
    stamping each rename); an inotify reader on B's directory stamps each version it reads.
    Returns the delays (s) of the versions B held, the writes made, and the writer's seconds."""
    watcher = Worker([bench.peer("inotify_floor"), machines.b]) if reader else None
    writer = None
    try:
        if watcher:
            watcher.expect("ready", time.monotonic() + 30)
        writer = Worker([bench.peer("mirror_floor"), "writer", machines.a, str(count), str(DOCUMENT_BYTES), str(period_us)])
        writer.expect("ready", time.monotonic() + 30)
        writer.send("go")
        done = writer.expect("done", time.monotonic() + 60 + count * period_us / 1e6 * 4)
        seconds = float(done.split()[2])
        renamed = {}
        for line in writer.rest().split("\n"):
            parts = line.split()
            if len(parts) == 2:
                renamed[int(parts[0])] = int(parts[1])
        wait_until(lambda: sequence_of(machines.b) == count - 1, 60, "the last write reaching B", machines.processes)
        output = watcher.rest() if watcher else ""
    finally:
        if watcher:
            watcher.kill()
        if writer:
            writer.kill()
    return {"delays": delays_from(output, renamed), "sent": len(renamed), "seconds": seconds}


# ---------------------------------------------------------------------------------------------
# 8a. Propagation, file to file.

def compared_sides(bench, ccsync):
    """The floor, this build's ccsync and, with `--baseline-ccsync`, an earlier build's."""
    sides = [("floor", None)]
    if ccsync:
        sides.append(("ccsync", ccsync))
        if bench.options.baseline_ccsync:
            sides.append(("baseline", os.path.abspath(bench.options.baseline_ccsync)))
    return sides


def measure_propagation(bench, etcd, ccsync):
    options = bench.options
    sides = compared_sides(bench, ccsync)
    raw = {key: [] for key, _ in sides}
    runs = 0
    for round_index in range(options.mirror_rounds):
        bench.log("mirror propagation round %d/%d" % (round_index + 1, options.mirror_rounds))
        shift = round_index % len(sides)
        for key, command in sides[shift:] + sides[:shift]:
            runs += 1
            machines = None
            try:
                machines = Machines(bench, etcd, "bench-mirror-propagation-%d" % runs, command)
                raw[key].append(timed_writes(bench, machines, options.mirror_writes, options.mirror_interval_us))
            except Failure as failure:
                raw[key].append({"error": "%s %s" % (failure, machines.log_tail() if machines else "")})
            finally:
                if machines:
                    machines.stop()
    return raw


# ---------------------------------------------------------------------------------------------
# 8b. One key under contention.

class FloorUpdates:
    key = "floor"
    label = "C floor (`etcd_floor increment`: range + txn on a kept-alive connection)"

    def start(self, bench, etcd, processes, key):
        self.pool = Pool([[bench.peer("etcd_floor"), "increment", etcd.endpoints[i % len(etcd.endpoints)], key]
                          for i in range(processes)])
        self.counted = 0

    def run(self, per_worker):
        seconds = self.pool.trial(per_worker, timeout=600)
        total = sum(int(reply.split()[1]) for reply in self.pool.replies if len(reply.split()) == 2)
        own, self.counted = total - self.counted, total
        return seconds, own

    def close(self):
        self.pool.close()


class CcsyncUpdates:
    key = "ccsync"

    def __init__(self, ccsync, build):
        self.ccsync = ccsync
        self.label = "ccsync `update` (P `ccsync stress-worker etcd://...` processes, the command %s)" % build

    def start(self, bench, etcd, processes, key):
        self.etcd, self.processes, self.etcd_key = etcd, processes, key

    def run(self, per_worker):
        """P workers started together; the seconds until the last exits (their start-up
        included: a few ms each, charged to ccsync)."""
        start = time.monotonic()
        workers = [subprocess.Popen([self.ccsync, "stress-worker", "--", etcd_url(self.etcd, self.etcd_key, i), "counter",
                                     str(per_worker)], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE) for i in range(self.processes)]
        failed = []
        for worker in workers:
            try:
                _, error = worker.communicate(timeout=600)
            except subprocess.TimeoutExpired:
                stop(worker)
                error = b"did not end in 600 s"
            if worker.returncode != 0:
                failed.append("exit %d: %s" % (worker.returncode, error.decode(errors="replace").strip()[-200:]))
        seconds = time.monotonic() - start
        if failed:
            raise Failure("a ccsync stress-worker failed: %s" % failed[0])
        return seconds, None

    def close(self):
        pass


def measure_contention(bench, etcd, ccsync, build):
    options = bench.options
    rows = [FloorUpdates()] + ([CcsyncUpdates(ccsync, build)] if ccsync else [])
    raw = {row.key: {p: [] for p in options.mirror_processes} for row in rows}
    for processes in options.mirror_processes:
        bench.log("mirror contention: P=%d, %d trials of %d contenders" % (processes, options.mirror_trials, len(rows)))
        per_worker = max(1, options.mirror_updates // processes)
        started = []
        try:
            for row in rows:
                row.etcd_key = "bench-mirror-contention-%s-p%d" % (row.key, processes)
                etcd.put(row.etcd_key, settings_document(DOCUMENT_BYTES))
                row.expected = 0
                row.start(bench, etcd, processes, row.etcd_key)
                started.append(row)
            for trial in range(options.mirror_trials):
                shift = trial % len(rows)
                for row in rows[shift:] + rows[:shift]:
                    updates = per_worker * processes
                    before = etcd.proposals_committed()
                    etcd_before = sum(cpu_seconds(pid) for pid in etcd.pids())
                    try:
                        seconds, own_retries = row.run(per_worker)
                    except (Failure, OSError) as failure:
                        raw[row.key][processes].append({"error": str(failure)})
                        continue
                    etcd_cpu = sum(cpu_seconds(pid) for pid in etcd.pids()) - etcd_before
                    row.expected += updates
                    count = etcd.counter(row.etcd_key)  # linearizable: member 0 has applied the trial
                    after = etcd.proposals_committed()
                    if count != row.expected:
                        raw[row.key][processes].append({"error": "final count %d, expected %d (lost updates)" % (count, row.expected)})
                        row.expected = count
                        continue
                    sample = {"seconds": seconds, "rate": updates / seconds, "etcd_cpu": etcd_cpu / seconds,
                              "retries": (after - before - updates) / updates}
                    if own_retries is not None:
                        sample["own_retries"] = own_retries / updates
                    raw[row.key][processes].append(sample)
        finally:
            for row in started:
                row.close()
    return rows, raw


# ---------------------------------------------------------------------------------------------
# 8c. Fan-out.

def measure_fanout(bench, etcd, ccsync, build):
    options = bench.options
    observers = [("raw", "raw watch streams (C `etcd_floor watcher`)", [bench.peer("etcd_floor"), "watcher", "{endpoint}"])]
    if os.access(bench.peer("etcd_floor_cjson"), os.X_OK):
        observers.append(("raw-parsing", "raw watch streams parsing each value with cJSON (C `etcd_floor_cjson watcher`)",
                          [bench.peer("etcd_floor_cjson"), "watcher", "{endpoint}"]))
    if ccsync:
        observers.append(("ccsync", "`ccsync watch etcd://.../KEY sequence` (the command %s)" % build,
                          [ccsync, "watch", "etcd://{endpoints}/KEY", "sequence"]))
    raw = {(key, n): [] for key, _, _ in observers for n in options.mirror_watchers}
    runs = 0
    for round_index in range(options.mirror_fanout_rounds):
        for n in options.mirror_watchers:
            bench.log("mirror fan-out round %d/%d: %d watchers" % (round_index + 1, options.mirror_fanout_rounds, n))
            shift = round_index % len(observers)
            for key, _, argv in observers[shift:] + observers[:shift]:
                runs += 1
                etcd_key = "bench-mirror-fanout-%d" % runs
                etcd.put(etcd_key, '{"sequence": -1, "payload": ""}\n')
                command = [bench.peer("mirror_floor"), "fanout", etcd.endpoints[0], etcd_key, str(options.mirror_fanout_puts),
                           str(DOCUMENT_BYTES), str(options.mirror_fanout_interval_us), ",".join(etcd.endpoints), str(n)]
                command += [part.replace("KEY", etcd_key) if part.endswith("/KEY") else part for part in argv]
                if key.startswith("raw"):
                    command.append(etcd_key)
                etcd_before = sum(cpu_seconds(pid) for pid in etcd.pids())
                try:
                    result = subprocess.run(command, capture_output=True, text=True,
                                            timeout=120 + n + options.mirror_fanout_puts * 6)
                    etcd_cpu = sum(cpu_seconds(pid) for pid in etcd.pids()) - etcd_before
                except subprocess.TimeoutExpired:
                    raw[(key, n)].append({"error": "fan-out run did not end"})
                    continue
                per_put = {}
                for line in result.stdout.split("\n"):
                    parts = line.split()
                    if len(parts) == 3:
                        per_put.setdefault(int(parts[0]), []).append(int(parts[2]) / 1e9)
                if result.returncode != 0 or not per_put:
                    raw[(key, n)].append({"error": "exit %d: %s" % (result.returncode, result.stderr.strip()[-300:])})
                    continue
                delays = [d for ds in per_put.values() for d in ds if d >= 0]
                missed = sum(1 for ds in per_put.values() for d in ds if d < 0)
                slowest = [max(ds) for ds in per_put.values() if min(ds) >= 0]
                # etcd's CPU over the whole run (watches set up, warm-up, puts) per put: what a change
                # costs the cluster with N watchers (its growth with N, what a watcher adds).
                raw[(key, n)].append({"delays": delays, "slowest": slowest, "missed": missed,
                                      "sent": len(per_put) * n, "etcd_per_put": etcd_cpu / (len(per_put) + 1)})
    return observers, raw


# ---------------------------------------------------------------------------------------------
# 8d. CPU at idle and under a write every 10 ms.

def measure_cpu(bench, etcd, ccsync):
    options = bench.options
    sides = compared_sides(bench, ccsync)
    raw = {}
    for key, command in sides:
        bench.log("mirror CPU: %s, %.0f s idle, then a write every 10 ms for %.0f s"
                  % (key, options.mirror_cpu_seconds, options.mirror_cpu_seconds))
        machines = None
        try:
            machines = Machines(bench, etcd, "bench-mirror-cpu-%s" % key, command)
            pids = machines.pids()
            before = [cpu_seconds(pid) for pid in pids]
            start = time.monotonic()
            time.sleep(options.mirror_cpu_seconds)  # the measured idle window itself, not a wait
            idle_wall = time.monotonic() - start
            idle = [(cpu_seconds(pid) - b) / idle_wall for pid, b in zip(pids, before)]
            count = int(options.mirror_cpu_seconds * 100)
            before = [cpu_seconds(pid) for pid in pids]
            etcd_before = sum(cpu_seconds(pid) for pid in etcd.pids())
            start = time.monotonic()
            writes = timed_writes(bench, machines, count, 10000)
            busy_wall = time.monotonic() - start
            busy = [(cpu_seconds(pid) - b) / busy_wall for pid, b in zip(pids, before)]
            etcd_cpu = (sum(cpu_seconds(pid) for pid in etcd.pids()) - etcd_before) / busy_wall
            resident = [resident_kib(pid) for pid in pids]
            raw[key] = {"idle": idle, "busy": busy, "etcd": etcd_cpu, "resident": resident, "writes": writes["sent"],
                        "heard": len(writes["delays"]), "rate": writes["sent"] / writes["seconds"]}
        except Failure as failure:
            raw[key] = {"error": "%s %s" % (failure, machines.log_tail() if machines else "")}
        finally:
            if machines:
                machines.stop()
    return raw


# ---------------------------------------------------------------------------------------------

def not_measured(bench, reason):
    for goal in GOALS:
        bench.goals.append((goal, "not measured", reason))
    return "%s\n\nnot measured: %s\n" % (TITLE, reason)


def measure(bench):
    options = bench.options
    if not etcd_binary():
        return not_measured(bench, "etcd is not installed (Debian's etcd-server; bench/run installs it as root)")
    if not all(os.access(bench.peer(name), os.X_OK) for name in ("mirror_floor", "etcd_floor", "inotify_floor")):
        return not_measured(bench, "no C compiler for the mirror floor")
    bench.log("mirror: starting three etcd members")
    try:
        etcd = Etcd(bench, 3)
    except Failure as failure:
        bench.notes.append("mirror: etcd did not start: %s" % failure)
        return not_measured(bench, "etcd did not start (see the notes)")
    try:
        ccsync, build = ccsync_command(bench)
        missing = ccsync_etcd_support(ccsync, etcd)
        if missing:
            bench.notes.append("mirror: ccsync not measured: %s" % missing)
            ccsync = None
        propagation = measure_propagation(bench, etcd, ccsync)
        contention = measure_contention(bench, etcd, ccsync, build)
        fanout = measure_fanout(bench, etcd, ccsync, build)
        cpu = measure_cpu(bench, etcd, ccsync)
    finally:
        etcd.stop()
    bench.results["mirror"] = {"propagation": propagation, "contention": contention[1],
                               "fanout": {"%s/%d" % key: runs for key, runs in fanout[1].items()}, "cpu": cpu}
    return tables(bench, ccsync, build, propagation, contention, fanout, cpu)


def summary(runs, field="delays"):
    if not runs or any("error" in run or not run[field] for run in runs):
        return None
    pooled = [delay for run in runs for delay in run[field]]
    return {"p50": median([percentile(run[field], 0.5) for run in runs]), "p99": percentile(pooled, 0.99),
            "max": max(pooled), "heard": sum(len(run["delays"]) for run in runs), "sent": sum(run["sent"] for run in runs)}


def p50_ratio(ours, theirs, field="delays"):
    return median(p50_ratios(ours, theirs, field))


def p50_ratios(ours, theirs, field="delays"):
    """ours' p50 / theirs', round by round."""
    return [percentile(a[field], 0.5) / percentile(b[field], 0.5) for a, b in zip(ours, theirs)]


def errors_of(runs):
    return [run["error"] for run in runs if "error" in run]


def tables(bench, ccsync, build, propagation, contention, fanout, cpu):
    options = bench.options
    lines = [TITLE, ""]
    lines.append(
        "Three etcd %s members started by the harness for this section on loopback (fresh data directories on "
        "the scratch file system, real fsync: a commit waits for a second member's fsync), and two \"machines\": "
        "two directories, each with its own `ccsync mirror FILE etcd://M1,M2,M3/KEY` process, machine A's "
        "talking to the first member, B's to the second. The floors are C programs "
        "(`bench/peers/mirror_floor.c`, `etcd_floor.c`) doing the raw parts of each path and nothing else. "
        "ccsync: the command %s." % (version([etcd_binary(), "--version"]), build))
    lines.append("")

    # 8a
    lines.append("#### File to file: a write on machine A to the file on machine B")
    lines.append("")
    lines.append(
        "A C writer replaces A's file %d times, %.0f ms apart, with ccsync's durable protocol (flock, temp file, "
        "fsync, rename, directory fsync; a %d-byte document `{\"sequence\", \"sentAt\", \"payload\"}`), stamping "
        "`CLOCK_MONOTONIC` just before each rename; a C inotify reader on B's directory stamps each version of "
        "B's file it reads. The floor is one C process (`mirror_floor chain`) chaining the raw parts, each machine's "
        "on a thread of its own (two hosts' work overlaps): an inotify read of A's file, one put of its bytes (no range, no compare, no merge), one watch event on the other "
        "member, one atomic durable write of B's file; and, as the mirror's crash safety needs, each side's sync "
        "record written durably before and after its write (A around the put, B around its file write: a restarted "
        "mirror tells its own writes from other writers' by it, so ccsync makes these writes too). Both sides take turns, %d rounds, each on a fresh key and "
        "fresh directories, after a warm-up write has gone from A to B. Milliseconds: p50 is the median of the "
        "rounds' medians, p99 and max over all versions B's reader saw (a version overwritten before it was "
        "read is not counted: see \"seen\"); the ratio is taken round by round."
        % (options.mirror_writes, options.mirror_interval_us / 1000, DOCUMENT_BYTES, options.mirror_rounds))
    lines.append("")
    lines.append("| Path | p50 | p99 | max | seen | p50 / floor p50 |")
    lines.append("|---|---|---|---|---|---|")
    labels = {"floor": "C floor: inotify read, put, watch event, atomic write (`mirror_floor chain`)",
              "ccsync": "`ccsync mirror` on A, `ccsync mirror` on B",
              "baseline": "`ccsync mirror` of the `--baseline-ccsync` build on A and B"}
    summaries = {}
    for key in ("floor", "ccsync", "baseline"):
        if key not in propagation:
            continue
        s = summary(propagation[key])
        if s is None:
            lines.append("| %s | FAILING | | | | |" % labels[key])
            bench.notes.append("mirror propagation %s: %s" % (key, errors_of(propagation[key])[:1]))
            continue
        summaries[key] = s
        ratio = ""
        if key in ("ccsync", "baseline") and "floor" in summaries:
            s["ratio"] = p50_ratio(propagation[key], propagation["floor"])
            ratio = "%.2fx" % s["ratio"]
        lines.append("| %s | %.2f | %.2f | %.2f | %d/%d | %s |" % (labels[key], s["p50"] * 1000, s["p99"] * 1000,
                                                                  s["max"] * 1000, s["heard"], s["sent"], ratio))
    lines.append("")
    if "ratio" in summaries.get("ccsync", {}):
        value = summaries["ccsync"]["ratio"]
        bench.goals.append((GOALS[0], "yes" if value <= 1.5 else "no", "%.2fx (%.2f ms vs %.2f ms; p99 %.2f ms vs %.2f ms)" % (
            value, summaries["ccsync"]["p50"] * 1000, summaries["floor"]["p50"] * 1000,
            summaries["ccsync"]["p99"] * 1000, summaries["floor"]["p99"] * 1000)))
    else:
        bench.goals.append((GOALS[0], "not measured", "a side failed or ccsync has no etcd support (see the notes)"))

    # 8b
    rows, raw = contention
    counts = options.mirror_processes
    lines.append("#### One key under contention, P processes over three members")
    lines.append("")
    lines.append(
        "P processes add 1 to `counter` in a %d-byte document in one key, each increment an exact "
        "compare-and-swap (range, then a txn comparing mod_revision; a failed compare retries on the failure "
        "branch's value); process i talks to member i mod 3 first. About %d increments per trial, shared by "
        "the P processes; %d trials per contender, taking turns. ccsync's processes are started for each "
        "trial (their start-up counts against them); the floor's are kept alive. Updates per second, median "
        "of the trials; the key's counter is checked after every trial (FAILING: not exact). Failed compares "
        "per update come from etcd: the raft proposals committed during the trial "
        "(`etcd_server_proposals_committed_total`; every txn is one, whatever its compare gives; ranges are "
        "none) less the updates made; for the floor, its own count is given beside it as a check. etcd CPU: "
        "its three members' CPU time over the trial (one core = 100%%)."
        % (len(settings_document(DOCUMENT_BYTES).encode()), options.mirror_updates, options.mirror_trials))
    lines.append("")
    header = " | ".join("P=%d" % p for p in counts)
    lines.append("| Contender | %s | failed compares per update (%s) | etcd CPU (%s) |" % (
        header, " / ".join("P=%d" % p for p in counts), " / ".join("P=%d" % p for p in counts)))
    lines.append("|" + "---|" * (3 + len(counts)))
    exact = True
    for row in rows:
        cells, retries, etcd_cpu = [], [], []
        for p in counts:
            samples = raw[row.key][p]
            errors = errors_of(samples)
            if errors or not samples:
                exact = False
                cells.append("FAILING"), retries.append("-"), etcd_cpu.append("-")
                bench.notes.append("mirror contention %s, P=%d: %s" % (row.key, p, errors[:1]))
                continue
            cells.append("%.0f/s" % median([s["rate"] for s in samples]))
            value = "%.2f" % median([s["retries"] for s in samples])
            if "own_retries" in samples[0]:
                value += " (own count %.2f)" % median([s["own_retries"] for s in samples])
            retries.append(value)
            etcd_cpu.append("%.0f%%" % (100 * median([s["etcd_cpu"] for s in samples])))
        lines.append("| %s | %s | %s | %s |" % (row.label, " | ".join(cells), " / ".join(retries), " / ".join(etcd_cpu)))
    lines.append("")
    if "ccsync" in raw:
        ratios = []
        for p in counts:
            a, b = raw["ccsync"][p], raw["floor"][p]
            if errors_of(a) or errors_of(b) or not a or not b:
                ratios.append("FAILING")
            else:
                ratios.append("%.2fx" % median([x["rate"] / y["rate"] for x, y in zip(a, b)]))
        lines.append("ccsync's updates per second over the floor's, taken trial by trial, then the median: %s."
                     % ", ".join("P=%d %s" % (p, r) for p, r in zip(counts, ratios)))
        lines.append("")
        ccsync_cells = ["%.0f/s" % median([s["rate"] for s in raw["ccsync"][p]]) if not errors_of(raw["ccsync"][p]) else "FAILING"
                        for p in counts]
        bench.goals.append((GOALS[1], "yes" if exact else "no", "ccsync %s; %s the floor" % (
            ", ".join("P=%d %s" % (p, c) for p, c in zip(counts, ccsync_cells)), ", ".join(ratios))))
    else:
        bench.goals.append((GOALS[1], "not measured", "ccsync has no etcd support"))

    # 8c
    observers, fan = fanout
    lines.append("#### Fan-out: one put, N watching processes")
    lines.append("")
    lines.append(
        "A C driver (`mirror_floor fanout`) starts N watching processes, observer i talking to member i mod 3 "
        "first, each printing one line per value to a pipe of its own; once each has printed a warm-up put, it "
        "puts a %d-byte document %d times on the first member, each after every observer has printed the "
        "previous one (or 5 s passed) and %.0f ms more, and times each from just before the put's `write(2)` "
        "to each observer's line. Raw: N C processes each with one `POST /v3/watch` stream. The observers take turns, "
        "%d rounds. Milliseconds: p50 is the median of the rounds' medians over every (put, observer), p99 over "
        "all of them; \"last\" is the p50 over puts of the slowest observer's time (when every machine has it); "
        "the ratio is taken round by round. etcd CPU per put: its three members' CPU time over the whole run "
        "(watches set up, warm-up, puts) over the puts made, the median over the rounds: what one change "
        "costs the cluster with N watchers; its growth with N is what the watchers add."
        % (DOCUMENT_BYTES, options.mirror_fanout_puts, options.mirror_fanout_interval_us / 1000, options.mirror_fanout_rounds))
    lines.append("")
    lines.append("The goal's floor is the raw watcher that parses each value (ccsync's gate must, before acting on "
                 "it); the one that finds the digits by text is shown too.")
    lines.append("")
    lines.append("| Watchers | Observers | p50 | p99 | last p50 | heard | p50 / raw p50 | p50 / parsing raw p50 | etcd CPU per put |")
    lines.append("|---|---|---|---|---|---|---|---|---|")
    fan_summaries = {}
    goal_floor = "raw-parsing" if any(key == "raw-parsing" for key, _, _ in observers) else "raw"
    for n in options.mirror_watchers:
        for key, label, _ in observers:
            runs = fan[(key, n)]
            s = summary(runs)
            if s is None:
                lines.append("| %d | %s | FAILING | | | | | | |" % (n, label))
                bench.notes.append("mirror fan-out %s N=%d: %s" % (key, n, errors_of(runs)[:1]))
                continue
            slowest = median([percentile(run["slowest"], 0.5) for run in runs if run["slowest"]])
            ratios = []
            for floor in ("raw", "raw-parsing"):
                if key != floor and key != "raw" and (floor, n) in fan_summaries:
                    s["ratio/" + floor] = p50_ratio(runs, fan[(floor, n)])
                    ratios.append("%.2fx" % s["ratio/" + floor])
                else:
                    ratios.append("")
            fan_summaries[(key, n)] = s
            per_put = median([run["etcd_per_put"] for run in runs])
            lines.append("| %d | %s | %.2f | %.2f | %s | %d/%d | %s | %s | %.1f ms |" % (
                n, label, s["p50"] * 1000, s["p99"] * 1000, "%.2f" % (slowest * 1000) if slowest else "-",
                s["heard"], s["sent"], ratios[0], ratios[1], per_put * 1e3))
    lines.append("")
    top = max(options.mirror_watchers)
    if "ratio/" + goal_floor in fan_summaries.get(("ccsync", top), {}):
        s = fan_summaries[("ccsync", top)]
        ratio = s["ratio/" + goal_floor]
        rounds = p50_ratios(fan[("ccsync", top)], fan[(goal_floor, top)])
        bench.goals.append((GOALS[2], "yes" if ratio <= 1.3 else "no", "%.2fx at N=%d, rounds %.2f-%.2f (%.2f ms vs %.2f ms; p99 %.2f ms)%s" % (
            ratio, top, min(rounds), max(rounds), s["p50"] * 1000, fan_summaries[(goal_floor, top)]["p50"] * 1000, s["p99"] * 1000,
            "" if goal_floor == "raw-parsing" else "; against watchers that do not parse: cJSON missing")))
    else:
        bench.goals.append((GOALS[2], "not measured", "a side failed or ccsync has no etcd support (see the notes)"))

    # 8d
    lines.append("#### CPU at idle and under a write every 10 ms")
    lines.append("")
    lines.append(
        "The same two machines, fresh: utime + stime from `/proc/PID/stat` of each mirror process over %.0f s "
        "with nothing written, then while the C writer replaces A's file every 10 ms (%d writes, absolute "
        "deadlines) until B's file holds the last one. One core = 100%%; the clock tick is 10 ms, so an idle "
        "figure below %.1f%% reads as 0. The floor is the one `mirror_floor chain` process doing both machines' "
        "parts. \"B saw\" counts the versions B's reader read (the mirrors coalesce writes made while a "
        "compare-and-swap is in flight)."
        % (options.mirror_cpu_seconds, int(options.mirror_cpu_seconds * 100), 100 * 0.01 / options.mirror_cpu_seconds))
    lines.append("")
    lines.append("| Process | idle | a write every 10 ms | writes/s made | B saw | etcd CPU meanwhile | resident memory after |")
    lines.append("|---|---|---|---|---|---|---|")
    for key in ("floor", "ccsync", "baseline"):
        if key not in cpu:
            continue
        c = cpu[key]
        if "error" in c:
            lines.append("| %s | FAILING | | | | | |" % labels[key])
            bench.notes.append("mirror CPU %s: %s" % (key, c["error"]))
            continue
        build = " (the `--baseline-ccsync` build)" if key == "baseline" else ""
        names = ["C floor (`mirror_floor chain`, both machines)"] if key == "floor" else [
            "`ccsync mirror` on A (the written file's side)" + build, "`ccsync mirror` on B (the receiving side)" + build]
        for index, name in enumerate(names):
            rss = c["resident"][index]
            lines.append("| %s | %.1f%% | %.1f%% | %.0f | %d/%d | %.0f%% | %s |" % (
                name, 100 * c["idle"][index], 100 * c["busy"][index], c["rate"], c["heard"], c["writes"], 100 * c["etcd"],
                "%.1f MB" % (rss / 1024) if rss else "-"))
    lines.append("")
    c = cpu.get("ccsync")
    if c and "error" not in c:
        idle = max(c["idle"])
        busy = max(c["busy"])
        floor = cpu.get("floor", {})
        versus = " (floor %.1f%% for both)" % (100 * floor["busy"][0]) if "busy" in floor else ""
        bench.goals.append((GOALS[3], "yes" if idle < 0.01 else "no", "A %.1f%%, B %.1f%% over %.0f s" % (
            100 * c["idle"][0], 100 * c["idle"][1], options.mirror_cpu_seconds)))
        floor_busy = floor["busy"][0] if "busy" in floor else None
        met = floor_busy is not None and busy <= 1.5 * floor_busy
        bench.goals.append((GOALS[4], "yes" if met else "no", "A %.1f%%, B %.1f%%%s" % (
            100 * c["busy"][0], 100 * c["busy"][1], versus)))
    else:
        bench.goals.append((GOALS[3], "not measured", "a side failed or ccsync has no etcd support (see the notes)"))
        bench.goals.append((GOALS[4], "not measured", "a side failed or ccsync has no etcd support (see the notes)"))
    baseline_goal(bench, propagation, cpu, lines)
    return "\n".join(lines)


def baseline_goal(bench, propagation, cpu, lines):
    """This build's mirror (which reports its host's status under a lease) against the
    `--baseline-ccsync` build's: propagation p50 round by round, and the busier mirror's CPU."""
    if not bench.options.baseline_ccsync:
        return
    ours, before = propagation.get("ccsync"), propagation.get("baseline")
    c, b = cpu.get("ccsync", {}), cpu.get("baseline", {})
    if not ours or not before or errors_of(ours) or errors_of(before) or "busy" not in c or "busy" not in b:
        bench.goals.append((GOALS[5], "not measured", "a side failed (see the notes)"))
        return
    latency = p50_ratio(ours, before)
    busy = max(c["busy"]) / max(max(b["busy"]), 1e-9)
    lines.append("")
    lines.append("This build's mirror against the `--baseline-ccsync` build's: propagation p50 %.2fx (round by round), "
                 "CPU of the busier mirror under a write every 10 ms %.2fx." % (latency, busy))
    bench.goals.append((GOALS[5], "yes" if latency <= 1.10 and busy <= 1.10 else "no",
                        "propagation p50 %.2fx, busy CPU %.2fx (%.1f%% vs %.1f%%)" % (
                            latency, busy, 100 * max(c["busy"]), 100 * max(b["busy"]))))
