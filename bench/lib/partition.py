"""10. Partition failover: `ccsync get` on three etcd members when the first endpoint is cut off.

Each member runs in a network namespace of its own, joined by veth pairs to a bridge in a
namespace of its own (the machine's own network is never touched), on 10.201.N.0/24; the
calls run in a fifth namespace, the client host. The first endpoint's link is taken down
(packets to it are dropped: a connection attempt gets no answer at all, the worst case for a
client), and a script of calls is timed against the same script with every link up, rounds
alternating. Needs root and `ip` (iproute2); the namespaces are named `ccsbench-PID-...` and
removed at the end, also when the run fails, with any left by an earlier run whose process
is gone.
"""
import ctypes
import os
import shutil
import signal
import subprocess
import time

from .etcd import etcd_binary, etcdctl_binary
from .processes import median

GOALS = [
    "Partition: `ccsync get` with the first endpoint cut off within 50 ms a call",
    "Partition: 100 calls with the first endpoint cut off within 2x the same calls without the partition",
]
PREFIX = "ccsbench-"


def _end_with_parent():
    try:
        ctypes.CDLL(None).prctl(1, signal.SIGTERM)
    except Exception:
        pass


def ip(*arguments):
    subprocess.run(["ip"] + list(arguments), check=True, capture_output=True, timeout=20)


def sweep_stale():
    """Removes the namespaces of earlier runs whose process is gone (this prefix only)."""
    listing = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True, timeout=20).stdout
    for line in listing.split("\n"):
        name = line.split(" ")[0]
        if not name.startswith(PREFIX):
            continue
        pid = name[len(PREFIX):].split("-")[0]
        if pid.isdigit() and not os.path.exists("/proc/%s" % pid):
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=20)


class Lab:
    """A bridge namespace and one namespace per host, each with `eth0` on the bridge."""

    def __init__(self):
        sweep_stale()
        self.pid = os.getpid()
        self.subnet = self.pid % 250 + 1
        self.names = []
        self.bridge = self.namespace("bridge")
        ip("netns", "add", self.bridge)
        self.names.append(self.bridge)
        ip("-n", self.bridge, "link", "add", "br0", "type", "bridge")
        ip("-n", self.bridge, "link", "set", "br0", "up")
        self.hosts = {}

    def namespace(self, name):
        return "%s%d-%s" % (PREFIX, self.pid, name)

    def add(self, name):
        index = len(self.hosts)
        namespace, port, address = self.namespace(name), "v%d" % index, "10.201.%d.%d" % (self.subnet, index + 2)
        ip("netns", "add", namespace)
        self.names.append(namespace)
        ip("-n", namespace, "link", "set", "lo", "up")
        ip("-n", self.bridge, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", namespace)
        ip("-n", self.bridge, "link", "set", port, "master", "br0")
        ip("-n", self.bridge, "link", "set", port, "up")
        ip("-n", namespace, "address", "add", address + "/24", "dev", "eth0")
        ip("-n", namespace, "link", "set", "eth0", "up")
        self.hosts[name] = (namespace, port, address)
        return address

    def link(self, name, state):
        ip("-n", self.bridge, "link", "set", self.hosts[name][1], state)

    def exec(self, name, argv):
        return ["ip", "netns", "exec", self.hosts[name][0]] + argv

    def close(self):
        for name in reversed(self.names):
            subprocess.run(["ip", "netns", "delete", name], capture_output=True, timeout=20)
        self.names = []


def start_cluster(bench, lab, directory):
    """Three members, one per host; returns their processes and addresses."""
    addresses = [lab.add("m%d" % index) for index in range(3)]
    lab.add("client")
    cluster = ",".join("m%d=http://%s:2380" % (index, address) for index, address in enumerate(addresses))
    processes = []
    for index, address in enumerate(addresses):
        log = open(os.path.join(directory, "m%d.log" % index), "w")
        processes.append(subprocess.Popen(lab.exec("m%d" % index, [
            etcd_binary(), "--name", "m%d" % index, "--data-dir", os.path.join(directory, "m%d" % index),
            "--listen-client-urls", "http://%s:2379" % address, "--advertise-client-urls", "http://%s:2379" % address,
            "--listen-peer-urls", "http://%s:2380" % address, "--initial-advertise-peer-urls", "http://%s:2380" % address,
            "--initial-cluster", cluster, "--initial-cluster-state", "new", "--initial-cluster-token", "bench-%d" % lab.pid,
            "--heartbeat-interval", "50", "--election-timeout", "500"]),
            stdout=log, stderr=subprocess.STDOUT, preexec_fn=_end_with_parent))
    endpoints = ",".join("%s:2379" % address for address in addresses)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        health = subprocess.run(lab.exec("client", [etcdctl_binary(), "--endpoints=" + endpoints, "endpoint", "health"]),
                                capture_output=True, text=True, env=dict(os.environ, ETCDCTL_API="3"), timeout=30)
        if health.returncode == 0:
            return processes, addresses
        time.sleep(0.2)
    raise RuntimeError("the three etcd members did not become healthy in 60 s")


def timed_script(lab, argv, calls):
    """Seconds for `calls` runs of `argv` one after another inside the client host (one shell
    there runs them, so the namespace is entered once), or None when one failed."""
    script = 'for i in $(seq %d); do "$@" >/dev/null || exit 1; done' % calls
    start = time.monotonic()
    result = subprocess.run(lab.exec("client", ["sh", "-c", script, "sh"] + argv), capture_output=True, text=True,
                            env=dict(os.environ, ETCDCTL_API="3"), timeout=calls * 10 + 60)
    elapsed = time.monotonic() - start
    return None if result.returncode != 0 else elapsed


def measure(bench):
    options = bench.options
    title = "### 10. Partition failover"
    reason = None
    if os.geteuid() != 0 or not shutil.which("ip"):
        reason = "needs root and ip (iproute2) for network namespaces"
    elif not etcd_binary() or not etcdctl_binary():
        reason = "etcd not installed"
    if reason:
        for goal in GOALS:
            bench.goals.append((goal, "not measured", reason))
        bench.notes.append("Partition failover not measured: %s." % reason)
        return ""
    ccsync = getattr(options, "installed_ccsync", None) or os.path.join(bench.binaries, "ccsync")
    calls, rounds = options.partition_calls, options.partition_rounds
    lab = Lab()
    processes = []
    try:
        directory = bench.fresh_directory()
        processes, addresses = start_cluster(bench, lab, directory)
        url = "etcd://" + ",".join("%s:2379" % address for address in addresses) + "/bench/partition"
        endpoints = ",".join("%s:2379" % address for address in addresses)
        subprocess.run(lab.exec("client", [ccsync, "set", url, "value", "1"]), check=True, capture_output=True, timeout=30)
        contenders = {
            "ccsync": [ccsync, "get", url, "value"],
            "etcdctl": [etcdctl_binary(), "--endpoints=" + endpoints, "--dial-timeout=2s", "get", "/bench/partition"],
        }
        raw = {(name, state): [] for name in contenders for state in ("healthy", "cut")}
        for round_number in range(rounds):
            for state in ("healthy", "cut"):
                lab.link("m0", "down" if state == "cut" else "up")
                for name, argv in contenders.items():
                    bench.log("partition failover, round %d, %s, %s: %d calls" % (round_number + 1, state, name, calls))
                    raw[(name, state)].append(timed_script(lab, argv, calls))
            lab.link("m0", "up")
        bench.results["partition"] = {"%s/%s" % key: runs for key, runs in raw.items()}
    finally:
        for process in processes:
            process.kill()
            process.wait()
        lab.close()

    def per_call(name, state):
        runs = raw[(name, state)]
        return None if any(run is None for run in runs) else median(runs) / calls

    def ratio(name):
        pairs = list(zip(raw[(name, "cut")], raw[(name, "healthy")]))
        return None if any(a is None or b is None for a, b in pairs) else median([a / b for a, b in pairs])

    def text(value, form="%.1f", scale=1000):
        return "FAILING" if value is None else form % (value * scale)

    lines = [title, ""]
    lines.append(
        "Three etcd members, each in a network namespace of its own on a bridge, and a client host; `ccsync get "
        "etcd://m0,m1,m2/KEY VALUE` (the installed build) and `etcdctl get` with the same endpoints, %d calls one after "
        "another from the client host, with every link up and with the first endpoint's link down (its packets "
        "dropped), rounds alternating (%d rounds, medians). Milliseconds per call; the ratio is the cut-off script's "
        "time over the healthy one's, round by round." % (calls, rounds))
    lines.append("")
    lines.append("| Command | Healthy, ms/call | First endpoint cut off, ms/call | Cut off / healthy |")
    lines.append("|---|---|---|---|")
    for name in contenders:
        lines.append("| %s | %s | %s | %s |" % (name, text(per_call(name, "healthy")), text(per_call(name, "cut")),
                                               text(ratio(name), "%.2f", 1)))
    lines.append("")
    cut, factor = per_call("ccsync", "cut"), ratio("ccsync")
    bench.goals.append((GOALS[0], "yes" if cut is not None and cut <= 0.050 else "no", "%s ms" % text(cut)))
    bench.goals.append((GOALS[1], "yes" if factor is not None and factor <= 2.0 else "no", "%sx" % text(factor, "%.2f", 1)))
    return "\n".join(lines)
