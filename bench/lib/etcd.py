"""7. etcd: ccsync's etcd location against a C client of the same requests, etcd3gw, etcdctl
and the raw watch stream, all against one etcd this module starts for the run.

The etcd is real: `/usr/bin/etcd` (Debian's etcd-server) on loopback, on free ports, with a
fresh data directory under the bench's scratch directory and real fsync (no
--unsafe-no-fsync), stopped by the PID this module started. Every figure is measured against
it in the same run, contenders taking turns, and every count is checked by reading the key.
"""
import base64
import ctypes
import http.client
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from .contention import cell_rate, trial_ratios
from .documents import settings_document
from .processes import Failure, Pool, median, percentile
from .watching import cpu_seconds

NOT_LANDED = "ccsync has no etcd location yet"


def etcd_binary():
    return shutil.which("etcd") or ("/usr/bin/etcd" if os.access("/usr/bin/etcd", os.X_OK) else None)


def etcdctl_binary():
    return shutil.which("etcdctl")


def version(argv):
    try:
        output = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    for line in output.split("\n"):
        if "version" in line.lower():
            return line.split(":", 1)[-1].strip()
    return output.strip().split("\n")[0] or "unknown"


def free_ports(count):
    """`count` distinct TCP ports free on 127.0.0.1 now (the sockets are held until all are
    picked, so no two are the same). Never port 0 in etcd's own flags: its gateway dials the
    literal listen address."""
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _end_with_parent():
    """In the child before exec: SIGTERM it when the harness dies, so no etcd outlives a
    crashed run (PR_SET_PDEATHSIG)."""
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)
    except Exception:
        pass


def b64(data):
    return base64.b64encode(data if isinstance(data, bytes) else data.encode()).decode("ascii")


class Etcd:
    """One etcd member (or three) started for the run."""

    def __init__(self, bench, members=1):
        self.bench = bench
        self.directory = bench.fresh_directory()
        ports = free_ports(2 * members)
        self.members = [{"name": "m%d" % index, "client": ports[2 * index], "peer": ports[2 * index + 1]}
                        for index in range(members)]
        self.processes = []
        cluster = ",".join("%s=http://127.0.0.1:%d" % (m["name"], m["peer"]) for m in self.members)
        token = "ccsync-bench-%d-%d" % (os.getpid(), int(time.time()))
        try:
            for member in self.members:
                data = os.path.join(self.directory, member["name"])
                log = open(os.path.join(self.directory, member["name"] + ".log"), "wb")
                argv = [etcd_binary(), "--name", member["name"], "--data-dir", data,
                        "--listen-client-urls", "http://127.0.0.1:%d" % member["client"],
                        "--advertise-client-urls", "http://127.0.0.1:%d" % member["client"],
                        "--listen-peer-urls", "http://127.0.0.1:%d" % member["peer"],
                        "--initial-advertise-peer-urls", "http://127.0.0.1:%d" % member["peer"],
                        "--initial-cluster", cluster, "--initial-cluster-state", "new",
                        "--initial-cluster-token", token, "--logger", "zap", "--log-outputs", "stderr"]
                self.processes.append(subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                                       preexec_fn=_end_with_parent))
                log.close()
                if members > 1:
                    # Started together, each member asks the others whether the cluster
                    # exists and waits a second for each whose peer port is open but not yet
                    # served; one at a time, each finds the earlier ones serving.
                    self.wait_peer_serves(len(self.processes) - 1)
            for index in range(members):
                self.wait_ready(index)
        except BaseException:
            self.stop()
            raise

    @property
    def endpoint(self):
        """HOST:PORT of the first member: every client of the run talks to it."""
        return "127.0.0.1:%d" % self.members[0]["client"]

    def log_tail(self, index):
        try:
            with open(os.path.join(self.directory, self.members[index]["name"] + ".log"), "rb") as file:
                return file.read()[-600:].decode(errors="replace")
        except OSError:
            return ""

    def proposals_committed(self):
        """etcd_server_proposals_committed_total of the first member: every put and every txn,
        whether its compare held or not, is one raft proposal; ranges are not."""
        text = urllib.request.urlopen("http://%s/metrics" % self.endpoint, timeout=10).read().decode()
        for line in text.split("\n"):
            if line.startswith("etcd_server_proposals_committed_total "):
                return float(line.split()[1])
        raise Failure("no etcd_server_proposals_committed_total in etcd's /metrics")

    def call(self, method, path, body=None, index=0, timeout=10):
        connection = http.client.HTTPConnection("127.0.0.1", self.members[index]["client"], timeout=timeout)
        try:
            connection.request(method, path, body=None if body is None else json.dumps(body),
                               headers={"Content-Type": "application/json"})
            response = connection.getresponse()
            text = response.read()
            if response.status != 200:
                raise Failure("etcd %s %s: HTTP %d %s" % (method, path, response.status, text[:200]))
            return json.loads(text)
        finally:
            connection.close()

    @property
    def endpoints(self):
        """HOST:PORT of every member, in start order."""
        return ["127.0.0.1:%d" % member["client"] for member in self.members]

    def wait_peer_serves(self, index, seconds=60):
        """Until member `index`'s peer listener answers GET /members (it got past its
        bootstrap checks and serves raft)."""
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.processes[index].poll() is not None:
                raise Failure("etcd %s exited %d: %s" % (self.members[index]["name"], self.processes[index].returncode,
                                                         self.log_tail(index)))
            connection = http.client.HTTPConnection("127.0.0.1", self.members[index]["peer"], timeout=0.3)
            try:
                connection.request("GET", "/members")
                if connection.getresponse().status == 200:
                    return
            except (OSError, http.client.HTTPException):
                pass
            finally:
                connection.close()
            time.sleep(0.05)
        raise Failure("etcd %s: peer listener not serving in %d s: %s" % (self.members[index]["name"], seconds,
                                                                          self.log_tail(index)))

    def wait_ready(self, index, seconds=60):
        """Until GET /health says true AND one POST /v3/kv/range succeeds."""
        deadline = time.monotonic() + seconds
        last = "no answer"
        while time.monotonic() < deadline:
            if self.processes[index].poll() is not None:
                raise Failure("etcd %s exited %d: %s" % (self.members[index]["name"], self.processes[index].returncode,
                                                         self.log_tail(index)))
            try:
                if self.call("GET", "/health", index=index, timeout=2).get("health") == "true":
                    self.call("POST", "/v3/kv/range", {"key": b64("bench-ready")}, index=index, timeout=2)
                    return
                last = "not healthy yet"
            except (OSError, ValueError, Failure, http.client.HTTPException) as error:
                last = str(error)
            time.sleep(0.1)
        raise Failure("etcd %s not ready in %d s (%s): %s" % (self.members[index]["name"], seconds, last,
                                                              self.log_tail(index)))

    def put(self, key, value):
        self.call("POST", "/v3/kv/put", {"key": b64(key), "value": b64(value)})

    def get(self, key):
        """The value (bytes) and its mod_revision, or (None, 0)."""
        answer = self.call("POST", "/v3/kv/range", {"key": b64(key)})
        kvs = answer.get("kvs")
        if not kvs:
            return None, 0
        return base64.b64decode(kvs[0].get("value", "")), int(kvs[0]["mod_revision"])

    def counter(self, key):
        value, _ = self.get(key)
        return 0 if value is None else json.loads(value)["counter"]

    def pids(self):
        return [process.pid for process in self.processes if process.poll() is None]

    def stop(self):
        """SIGTERM to each member's PID (the ones this object started), SIGKILL after 10 s."""
        for process in self.processes:
            if process.poll() is None:
                process.terminate()
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        shutil.rmtree(self.directory, ignore_errors=True)


# ---------------------------------------------------------------------------------------------
# ccsync's side: the installed command, when its etcd location has landed.

def ccsync_command(bench):
    installed = bench.options.installed_ccsync
    if installed and os.access(installed, os.X_OK):
        return installed, "installed by `scripts/install-cli`"
    return os.path.join(bench.binaries, "ccsync"), "`swift build -c release`"


def ccsync_etcd_support(ccsync, etcd):
    """None when `ccsync get etcd://HOST:PORT/KEY counter` reads a seeded key; else why not."""
    etcd.put("bench-probe", '{"counter": 41}\n')
    url = "etcd://%s/bench-probe" % etcd.endpoint
    try:
        result = subprocess.run([ccsync, "get", url, "counter"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.SubprocessError) as error:
        return "`ccsync get %s counter` could not run: %s" % (url, error)
    if result.returncode == 0 and result.stdout.strip() == "41":
        return None
    kind = "a usage error" if result.returncode == 64 else "status %d" % result.returncode
    detail = (result.stderr.strip().split("\n") or [""])[0][:160]
    return "`ccsync get etcd://HOST:PORT/KEY counter` ended with %s (%s)" % (kind, detail)


# ---------------------------------------------------------------------------------------------
# 7a. Updates per second.

class PoolContender:
    """P kept-alive worker processes on their own key (the line protocol of processes.py)."""

    def __init__(self, key, label, argv):
        self.key, self.label, self.argv = key, label, argv

    def start(self, bench, etcd, processes):
        self.etcd_key = "bench-%s-p%d" % (self.key, processes)
        etcd.put(self.etcd_key, settings_document(1024))
        self.expected = 0
        self.pool = Pool([self.argv(etcd.endpoint, self.etcd_key) for _ in range(processes)])
        self.retries = 0

    def trial(self, bench, etcd, total, processes):
        per_worker = total // processes
        pids = [worker.process.pid for worker in self.pool.workers]
        updates = per_worker * processes
        try:
            proposals_before = etcd.proposals_committed()
            cpu_before = sum(cpu_seconds(pid) for pid in pids)
            etcd_before = sum(cpu_seconds(pid) for pid in etcd.pids())
            seconds = self.pool.trial(per_worker, timeout=600)
            cpu = sum(cpu_seconds(pid) for pid in pids) - cpu_before
            etcd_cpu = sum(cpu_seconds(pid) for pid in etcd.pids()) - etcd_before
            proposals = etcd.proposals_committed() - proposals_before
        except (Failure, OSError) as failure:
            return {"error": str(failure)}
        # Each floor worker answers "done RETRIES", its failed compares so far (ccsync's say
        # "done": not counted).
        counted = [int(reply.split()[1]) for reply in self.pool.replies if len(reply.split()) == 2]
        total_retries = sum(counted)
        retries, self.retries = total_retries - self.retries, total_retries
        self.expected += updates
        count = etcd.counter(self.etcd_key)
        if count != self.expected:
            error = "final count %d, expected %d (lost updates)" % (count, self.expected)
            self.expected = count
            return {"error": error, "seconds": seconds}
        # Every txn is one proposal whatever its compare gave; the updates made are the ones
        # that held.
        result = {"seconds": seconds, "rate": updates / seconds, "client_cpu": cpu / (processes * seconds),
                  "etcd_cpu": etcd_cpu / seconds, "retries": (proposals - updates) / updates}
        if counted:
            result["own_retries"] = retries / updates
        return result

    def close(self):
        self.pool.close()


class StressContender:
    """`ccsync stress --processes P --iterations M etcd://HOST:PORT/KEY`, once per trial: the
    rate comes from the seconds it prints (its workers' start-up included), and the count is
    checked here too."""

    key = "ccsync-stress"

    def __init__(self, ccsync, build):
        self.ccsync = ccsync
        self.label = "`ccsync stress etcd://...` (the command %s; its workers' start-up in each trial)" % build

    def start(self, bench, etcd, processes):
        self.etcd_key = "bench-ccsync-stress-p%d" % processes
        etcd.put(self.etcd_key, settings_document(1024))
        self.expected = 0

    def trial(self, bench, etcd, total, processes):
        per_worker = total // processes
        url = "etcd://%s/%s" % (etcd.endpoint, self.etcd_key)
        argv = [self.ccsync, "stress", "--processes", str(processes), "--iterations", str(per_worker), url]
        usage_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        etcd_before = sum(cpu_seconds(pid) for pid in etcd.pids())
        try:
            proposals_before = etcd.proposals_committed()
            result = subprocess.run(argv, capture_output=True, text=True, timeout=600)
            proposals = etcd.proposals_committed() - proposals_before
        except subprocess.TimeoutExpired:
            return {"error": "`ccsync stress` did not end in 600 s"}
        except (Failure, OSError) as failure:
            return {"error": str(failure)}
        usage = resource.getrusage(resource.RUSAGE_CHILDREN)
        etcd_cpu = sum(cpu_seconds(pid) for pid in etcd.pids()) - etcd_before
        fields = dict(line.split(": ", 1) for line in result.stdout.split("\n") if ": " in line)
        self.expected += per_worker * processes
        count = etcd.counter(self.etcd_key)
        if result.returncode != 0 or count != self.expected:
            error = "`%s` ended %d (%s), final count %d, expected %d" % (
                " ".join(argv[1:]), result.returncode, result.stderr.strip()[-200:], count, self.expected)
            self.expected = count
            return {"error": error}
        try:
            seconds = float(fields["seconds"])
        except (KeyError, ValueError):
            return {"error": "no seconds in `ccsync stress`'s output: %r" % result.stdout[-200:]}
        cpu = (usage.ru_utime - usage_before.ru_utime) + (usage.ru_stime - usage_before.ru_stime)
        updates = per_worker * processes
        return {"seconds": seconds, "rate": updates / seconds, "client_cpu": cpu / (processes * seconds),
                "etcd_cpu": etcd_cpu / seconds, "retries": (proposals - updates) / updates}

    def close(self):
        pass


def throughput_contenders(bench, ccsync, build):
    floor = bench.peer("etcd_floor")
    rows = [PoolContender("floor", "C floor: ccsync's requests, its write stamp included, on one kept-alive connection (no JSON parser)",
                          lambda endpoint, key: [floor, "increment", endpoint, key])]
    # The same requests with the change a typed update makes: the value parsed into a tree, the
    # number changed there, the tree printed (cJSON). Not a goal's floor: it shows what the
    # document's JSON costs a C client, beside ccsync's client CPU.
    parsing_floor = bench.peer("etcd_floor_cjson")
    if os.access(parsing_floor, os.X_OK):
        rows.append(PoolContender("floor-cjson", "C floor parsing and printing the value with cJSON (`etcd_floor_cjson increment`), the same requests",
                                  lambda endpoint, key: [parsing_floor, "increment", endpoint, key]))
    python = bench.options.etcd3gw_python
    if python:
        worker = bench.peer("etcd3gw_worker.py")
        rows.append(PoolContender("etcd3gw", "etcd3gw: the same range + txn loop (`get`, `transaction`), json",
                                  lambda endpoint, key: [python, worker, endpoint, key, "txn"]))
        rows.append(PoolContender("etcd3gw-replace", "etcd3gw: `get` + `replace` (its own CAS helper: compares the value)",
                                  lambda endpoint, key: [python, worker, endpoint, key, "replace"]))
    # ccsync kept alive as the floor is: P `ccsync-bench bench-worker etcd://...` processes,
    # each `SharedDocument.update` (a range and a compare-and-swap, as the floor's), connected
    # before the clock starts. The goals are judged on it; the command beside it.
    tool = bench.bench_tool()
    rows.append(PoolContender("ccsync", "ccsync `SharedDocument.update` (`ccsync-bench bench-worker etcd://...`, kept alive as the floor)",
                              lambda endpoint, key: [tool, "bench-worker", "etcd://%s/%s" % (endpoint, key)]))
    if ccsync:
        rows.append(StressContender(ccsync, build))
    return rows


def measure_throughput(bench, etcd, ccsync, build):
    options = bench.options
    rows = throughput_contenders(bench, ccsync, build)
    raw = {row.key: {p: [] for p in options.etcd_processes} for row in rows}
    for processes in options.etcd_processes:
        bench.log("etcd updates: P=%d, %d trials of %d contenders" % (processes, options.etcd_trials, len(rows)))
        started = []
        try:
            for row in rows:
                row.start(bench, etcd, processes)
                started.append(row)
            for trial in range(options.etcd_trials):
                shift = trial % len(rows)
                for row in rows[shift:] + rows[:shift]:
                    raw[row.key][processes].append(row.trial(bench, etcd, options.etcd_updates, processes))
        finally:
            for row in started:
                row.close()
    return rows, raw


# ---------------------------------------------------------------------------------------------
# 7b. One call of a command-line tool.

def measure_cli(bench, etcd, ccsync):
    options = bench.options
    etcdctl = etcdctl_binary()
    endpoint = "--endpoints=%s" % etcd.endpoint
    document = settings_document(1024)
    numbered = document.replace('"counter": 0', '"counter": {N}')
    etcd.put("bench-cli-get", document)
    commands = [("true", "`/bin/true` (the cost of spawning any program)", ["true"], None)]
    if etcdctl:
        commands += [
            ("etcdctl-version", "`etcdctl version` (start-up only: no request)", [etcdctl, "version"], None),
            ("etcdctl-get", "`etcdctl get KEY` (1 KB value)", [etcdctl, endpoint, "get", "bench-cli-get"], None),
            ("etcdctl-put", "`etcdctl put KEY VALUE` (1 KB value, a new counter each call)",
             [etcdctl, endpoint, "put", "bench-cli-put", numbered], "bench-cli-put"),
        ]
    if ccsync:
        commands += [
            ("ccsync-get", "`ccsync get etcd://HOST:PORT/KEY` (the whole 1 KB document)",
             [ccsync, "get", "etcd://%s/bench-cli-get" % etcd.endpoint], None),
            ("ccsync-set", "`ccsync set etcd://HOST:PORT/KEY counter N` (range + txn; a new N each call)",
             [ccsync, "set", "etcd://%s/bench-cli-set" % etcd.endpoint, "counter", "{N}"], "bench-cli-set"),
        ]
        etcd.put("bench-cli-set", document)
    environment = dict(os.environ, ETCDCTL_API="3")
    raw = {key: [] for key, _, _, _ in commands}
    spawn = bench.peer("spawn_loop")
    for round_index in range(options.rounds):
        bench.log("etcd command line round %d/%d" % (round_index + 1, options.rounds))
        shift = round_index % len(commands)
        for key, _, argv, written in commands[shift:] + commands[:shift]:
            output = subprocess.run([spawn, str(options.etcd_calls)] + argv, capture_output=True, text=True,
                                    check=True, env=environment).stdout
            nanoseconds, failures = (int(part) for part in output.split())
            run = {"seconds": nanoseconds / 1e9 / options.etcd_calls, "failures": failures}
            if written:  # the last call's value must be there: call N wrote counter N
                count = etcd.counter(written)
                if count != options.etcd_calls:
                    run["failures"] += 1
                    bench.notes.append("etcd command line %s: counter %d after %d calls" % (key, count, options.etcd_calls))
                etcd.put(written, document)
            raw[key].append(run)
    return commands, raw


# ---------------------------------------------------------------------------------------------
# 7c. Propagation: a put by one process to the value in another's observer.

def measure_propagation(bench, etcd, ccsync, build):
    options = bench.options
    floor = bench.peer("etcd_floor")
    observers = [("raw", "raw watch stream (C: `POST /v3/watch`, decode the value, find the number)",
                  lambda key: [floor, "watcher", etcd.endpoint, key])]
    if ccsync:
        observers.append(("ccsync", "`ccsync watch etcd://HOST:PORT/KEY sequence` (the command %s)" % build,
                          lambda key: [ccsync, "watch", "etcd://%s/%s" % (etcd.endpoint, key), "sequence"]))
    raw = {key: [] for key, _, _ in observers}
    runs = 0
    for round_index in range(options.etcd_propagation_rounds):
        bench.log("etcd propagation round %d/%d" % (round_index + 1, options.etcd_propagation_rounds))
        shift = round_index % len(observers)
        for key, _, argv in observers[shift:] + observers[:shift]:
            runs += 1
            etcd_key = "bench-propagation-%d" % runs
            etcd.put(etcd_key, '{"sequence": -1, "payload": ""}\n')
            count = options.etcd_propagation_puts
            command = [floor, "propagation", etcd.endpoint, etcd_key, str(count), "1024",
                       str(options.etcd_propagation_interval_us)] + argv(etcd_key)
            try:
                result = subprocess.run(command, capture_output=True, text=True, timeout=120 + count * 6)
            except subprocess.TimeoutExpired:
                raw[key].append({"error": "propagation run did not end"})
                continue
            delays = []
            for line in result.stdout.split("\n"):
                parts = line.split()
                if len(parts) == 2 and int(parts[1]) >= 0:
                    delays.append(int(parts[1]) / 1e9)
            if result.returncode != 0 or not delays:
                raw[key].append({"error": "exit %d: %s" % (result.returncode, result.stderr.strip()[-300:])})
                continue
            value, _ = etcd.get(etcd_key)
            last = json.loads(value)["sequence"] if value else None
            if last != count - 1:
                raw[key].append({"error": "the key holds sequence %s, not %d" % (last, count - 1)})
                continue
            raw[key].append({"delays": delays, "sent": count})
    return observers, raw


# ---------------------------------------------------------------------------------------------

def not_measured_goals(bench, reason):
    for goal in GOALS:
        bench.goals.append((goal, "not measured", reason))


GOALS = [
    "etcd: ccsync `update` >= 0.9x the C floor's updates/s (P=1, P=4)",
    "etcd: ccsync `update` >= 3x etcd3gw's updates/s",
    "etcd: `ccsync get etcd://` <= 0.3x `etcdctl get`'s time",
    "etcd: `ccsync set etcd://` <= 0.45x `etcdctl put`'s time",
    "etcd propagation: ccsync watch p50 <= 1.2x the raw watch stream's",
]


def measure(bench):
    options = bench.options
    title = "### 7. etcd: one shared document in an etcd key"
    if not etcd_binary():
        not_measured_goals(bench, "etcd not installed")
        return "%s\n\nnot measured: etcd is not installed (Debian's etcd-server; bench/run installs it as root)\n" % title
    if not os.access(bench.peer("etcd_floor"), os.X_OK):
        not_measured_goals(bench, "no C compiler")
        return "%s\n\nnot measured: no C compiler for the etcd floor\n" % title
    bench.log("etcd: starting %d member(s)" % options.etcd_members)
    try:
        etcd = Etcd(bench, options.etcd_members)
    except Failure as failure:
        not_measured_goals(bench, "etcd did not start")
        bench.notes.append("etcd did not start: %s" % failure)
        return "%s\n\nnot measured: etcd did not start (see the notes)\n" % title
    try:
        ccsync, ccsync_build = ccsync_command(bench)
        missing = ccsync_etcd_support(ccsync, etcd)
        if missing:
            bench.notes.append("%s: %s" % (NOT_LANDED, missing))
            ccsync = None
        throughput = measure_throughput(bench, etcd, ccsync, ccsync_build)
        cli = measure_cli(bench, etcd, ccsync)
        propagation = measure_propagation(bench, etcd, ccsync, ccsync_build)
    finally:
        etcd.stop()
    bench.results["etcd"] = {"throughput": throughput[1], "cli": cli[1], "propagation": propagation[1]}
    return tables(bench, title, ccsync, ccsync_build, missing, throughput, cli, propagation)


def tables(bench, title, ccsync, ccsync_build, missing, throughput, cli, propagation):
    options = bench.options
    counts = options.etcd_processes
    lines = [title, ""]
    etcd3gw = version([options.etcd3gw_python, "-c", "import importlib.metadata as m; print('version: ' + m.version('etcd3gw'))"]) \
        if options.etcd3gw_python else None
    lines.append(
        "One etcd %s started by the harness for this section (%s member%s on loopback, a fresh data directory "
        "on the scratch file system, real fsync), and every client below against it in the same run. "
        "Clients speak its v3 JSON gateway over HTTP/1.1; etcdctl speaks gRPC. etcd3gw %s."
        % (version([etcd_binary(), "--version"]), options.etcd_members, "" if options.etcd_members == 1 else "s",
           etcd3gw or "not installed (skipped)"))
    lines.append("")
    if missing:
        lines.append("ccsync not measured: %s. The peers and floors below are measured; the ccsync rows and "
                     "goals wait for ccsync's etcd location." % missing)
        lines.append("")

    # 7a
    rows, raw = throughput
    lines.append("#### Exact increments of a 1 KB document")
    lines.append("")
    lines.append(
        "P processes add 1 to `counter` in the %d-byte settings document stored as the value of one key, "
        "each increment an exact compare-and-swap: range the key (value and mod_revision), change it, txn "
        "comparing mod_revision that also puts the write's stamp at `KEY.ccsync-write` (ccsync's exactness after "
        "a lost answer and its history need it; the C floor puts one too); on a failed compare the txn's "
        "failure branch ranges the key and the change is made again on that. Each contender has its own key and its P processes, each with one kept-alive "
        "connection; a trial gives them %d increments in all, contenders taking turns trial by trial in a "
        "rotating order. Updates per second, median of %d trials; after every trial the key is read and its "
        "counter checked: FAILING means it was not exact. Client CPU is the contender's processes' CPU time "
        "over their wall time (per process); etcd CPU is the CPU time of etcd (all its members) over the trial (one core = 100%%). "
        "Failed compares per update come from etcd: the raft proposals committed during the trial "
        "(`etcd_server_proposals_committed_total`; every txn is one, whatever its compare gives; ranges are none) "
        "less the updates made; a C floor's own count is given beside it as a check."
        % (len(settings_document(1024).encode()), options.etcd_updates, options.etcd_trials))
    lines.append("")
    per_p = " / ".join("P=%d" % p for p in counts)
    lines.append("| Contender | " + " | ".join("P=%d" % p for p in counts) +
                 " | client CPU (%s) | etcd CPU (%s) | failed compares per update (%s) |" % (per_p, per_p, per_p))
    lines.append("|" + "---|" * (4 + len(counts)))
    for row in rows:
        cells, cpu, etcd_cpu, retries = [], [], [], []
        for processes in counts:
            samples = raw[row.key][processes]
            rate, error = cell_rate(samples)
            cells.append("FAILING" if error else "%.0f/s" % rate)
            if error:
                bench.notes.append("etcd %s, P=%d: %s" % (row.label, processes, error))
                cpu.append("-"), etcd_cpu.append("-"), retries.append("-")
                continue
            cpu.append("%.1f%%" % (100 * median([s["client_cpu"] for s in samples])))
            etcd_cpu.append("%.0f%%" % (100 * median([s["etcd_cpu"] for s in samples])))
            failed = "%.2f" % median([s["retries"] for s in samples])
            if "own_retries" in samples[0]:
                failed += " (own count %.2f)" % median([s["own_retries"] for s in samples])
            retries.append(failed)
        lines.append("| %s | %s | %s | %s | %s |" % (row.label, " | ".join(cells), " / ".join(cpu), " / ".join(etcd_cpu),
                                                     " / ".join(retries)))
    lines.append("")
    keys = {row.key for row in rows}
    comparisons = [
        ("ccsync", "floor", "ccsync `update` vs the C floor", 0.9, GOALS[0]),
        ("ccsync", "floor-cjson", "ccsync `update` vs the C floor that parses and prints with cJSON", None, None),
        ("ccsync", "etcd3gw", "ccsync `update` vs etcd3gw (same requests)", 3.0, GOALS[1]),
        ("ccsync", "etcd3gw-replace", "ccsync `update` vs etcd3gw `replace`", None, None),
        ("ccsync-stress", "floor", "`ccsync stress` (start-up included) vs the C floor", None, None),
        ("floor-cjson", "floor", "the C floor that parses (cJSON) vs the C floor: what the JSON costs a C client", None, None),
        ("floor", "etcd3gw", "ceiling: the C floor vs etcd3gw (same requests)", None, None),
        ("floor", "etcd3gw-replace", "ceiling: the C floor vs etcd3gw `replace`", None, None),
    ]
    lines.append("Ratios of updates per second, taken within each trial round, then the median over the rounds "
                 "(> 1: the first is faster); beside them, the lowest and highest round's, which show how far one "
                 "round can stray. The ceiling rows are what the C floor itself reaches against the "
                 "same peer: ccsync's ratio to that peer cannot be much above them.")
    lines.append("")
    lines.append("| Comparison | Goal | " + " | ".join("P=%d" % p for p in counts) + " | rounds' range (%s) | Met |" % per_p)
    lines.append("|" + "---|" * (4 + len(counts)))
    for ours, theirs, label, goal, goal_name in comparisons:
        if theirs not in keys or (ours not in keys and ours != "ccsync"):
            continue
        if ours not in keys:
            if goal is None:
                continue
            lines.append("| %s | >= %.1fx | %s | | not measured |" % (label, goal, " | ".join("" for _ in counts)))
            bench.goals.append((goal_name, "not measured", NOT_LANDED))
            continue
        cells, spreads, met = [], [], True
        for processes in counts:
            ratios = trial_ratios(raw[ours][processes], raw[theirs][processes])
            ratio = None if ratios is None else median(ratios)
            cells.append("FAILING" if ratio is None else "%.2fx" % ratio)
            spreads.append("-" if ratios is None else "%.2f-%.2f" % (min(ratios), max(ratios)))
            met = met and ratio is not None and (goal is None or ratio >= goal)
        verdict = "" if goal is None else ("yes" if met else "**no**")
        lines.append("| %s | %s | %s | %s | %s |" % (label, "" if goal is None else ">= %.1fx" % goal, " | ".join(cells),
                                                   " / ".join(spreads), verdict))
        if goal is not None:
            bench.goals.append((goal_name, "yes" if met else "no", ", ".join("P=%d %s" % (p, c) for p, c in zip(counts, cells))))
    if "etcd3gw" not in keys:
        bench.goals.append((GOALS[1], "not measured", "etcd3gw not installed"))
    lines.append("")

    # 7b
    commands, cli_raw = cli
    lines.append("#### One command-line call")
    lines.append("")
    lines.append(
        "Each command run %d times in a row by the C driver of \"3. Command line\" (`posix_spawnp`, `waitpid`, "
        "output to `/dev/null`; `ETCDCTL_API=3`); wall time per call, spawn and exit included, median of %d "
        "rounds. The writes put a new counter on every call (`{N}`, the call's number), and the key is read "
        "after each run: the last call's value must be there. ccsync: the command %s."
        % (options.etcd_calls, options.rounds, ccsync_build))
    lines.append("")
    lines.append("| Command | ms per call | failed calls |")
    lines.append("|---|---|---|")
    for key, label, _, _ in commands:
        lines.append("| %s | %.2f | %d |" % (label, median([r["seconds"] for r in cli_raw[key]]) * 1000,
                                             sum(r["failures"] for r in cli_raw[key])))
    lines.append("")
    # A set makes two round trips (range + txn) where a put makes one: issue 25 gives it 0.45.
    cli_rows = [("ccsync-get", "etcdctl-get", "`ccsync get etcd://` time / `etcdctl get` time", 0.30, GOALS[2]),
                ("ccsync-set", "etcdctl-put", "`ccsync set etcd://` time / `etcdctl put` time", 0.45, GOALS[3])]
    if "etcdctl-get" in cli_raw:
        lines.append("| Comparison | Goal | Measured | Met |")
        lines.append("|---|---|---|---|")
        for ours, theirs, label, goal, goal_name in cli_rows:
            if ours not in cli_raw:
                lines.append("| %s | <= %.2f | not measured | |" % (label, goal))
                bench.goals.append((goal_name, "not measured", NOT_LANDED))
                continue
            failing = any(r["failures"] for r in cli_raw[ours] + cli_raw[theirs])
            ratio = median([a["seconds"] / b["seconds"] for a, b in zip(cli_raw[ours], cli_raw[theirs])])
            met = ratio <= goal and not failing
            lines.append("| %s | <= %.2f | %s | %s |" % (label, goal, "FAILING" if failing else "%.2f" % ratio, "yes" if met else "**no**"))
            bench.goals.append((goal_name, "yes" if met else "no", "FAILING" if failing else "%.2f" % ratio))
        startup = median([a["seconds"] / b["seconds"] for a, b in zip(cli_raw["etcdctl-version"], cli_raw["etcdctl-get"])])
        lines.append("| peer: `etcdctl version` time / `etcdctl get` time (its start-up's share) | | %.2f | |" % startup)
        lines.append("")
    else:
        for _, _, _, _, goal_name in cli_rows:
            bench.goals.append((goal_name, "not measured", "etcdctl not installed"))

    # 7c
    observers, prop_raw = propagation
    lines.append("#### Propagation: a put in one process to the value in another")
    lines.append("")
    lines.append(
        "A C process (`etcd_floor propagation`) starts the observer with its standard output on a pipe, waits "
        "for its first line, then puts a %d-byte document `{\"sequence\": I, \"payload\": \"x...\"}` %d times, %.0f ms "
        "apart, on its own kept-alive connection, and times each from just before the put's `write(2)` to the "
        "observer's line holding I (both stamps in the putting process). The raw observer is a C process "
        "with one `POST /v3/watch` stream from the next revision that decodes each event's value and prints "
        "its number: what any watcher must at least do. Observers take turns, %d rounds. Milliseconds: p50 is "
        "the median of the rounds' medians, p99 and max over all puts heard; the ratio is taken round by round."
        % (1024, options.etcd_propagation_puts, options.etcd_propagation_interval_us / 1000, options.etcd_propagation_rounds))
    lines.append("")
    lines.append("| Observer | p50 | p99 | max | heard | p50 / raw stream p50 |")
    lines.append("|---|---|---|---|---|---|")
    summaries = {}
    for key, label, _ in observers:
        runs = prop_raw[key]
        if not runs or any("error" in run for run in runs):
            lines.append("| %s | FAILING | | | | |" % label)
            bench.notes.append("etcd propagation %s: %s" % (key, [run.get("error") for run in runs]))
            continue
        pooled = [delay for run in runs for delay in run["delays"]]
        summaries[key] = {"p50": median([percentile(run["delays"], 0.5) for run in runs]),
                          "p99": percentile(pooled, 0.99), "max": max(pooled), "heard": len(pooled),
                          "sent": sum(run["sent"] for run in runs)}
        ratio = ""
        if key != "raw" and "raw" in summaries:
            value = median([percentile(a["delays"], 0.5) / percentile(b["delays"], 0.5)
                            for a, b in zip(prop_raw[key], prop_raw["raw"])])
            summaries[key]["ratio"] = value
            ratio = "%.2fx" % value
        s = summaries[key]
        lines.append("| %s | %.3f | %.3f | %.3f | %d/%d | %s |" % (label, s["p50"] * 1000, s["p99"] * 1000, s["max"] * 1000,
                                                                  s["heard"], s["sent"], ratio))
    lines.append("")
    if "ccsync" in summaries and "ratio" in summaries["ccsync"]:
        value = summaries["ccsync"]["ratio"]
        bench.goals.append((GOALS[4], "yes" if value <= 1.2 else "no", "%.2fx (%.3f ms vs %.3f ms)" % (
            value, summaries["ccsync"]["p50"] * 1000, summaries["raw"]["p50"] * 1000)))
    else:
        bench.goals.append((GOALS[4], "not measured", NOT_LANDED if not ccsync else "a side failed (see the notes)"))
    return "\n".join(lines)
