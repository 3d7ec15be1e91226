"""Child processes that speak the workers' line protocol, and the statistics of their runs.

A worker prints "ready" once set up; the driver then sends it work as lines and it answers
each with "done". The driver starts the clock only when every worker of a trial is ready, so
process start-up stays out of the figures.
"""
import os
import select
import statistics
import subprocess
import time


class Failure(Exception):
    pass


class Worker:
    def __init__(self, argv):
        self.argv = argv
        # Unbuffered: `expect` waits in select(2) on the descriptor, which a buffered reader
        # holding lines it already read would fool.
        self.process = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0)

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

    def send(self, line):
        self.process.stdin.write(line.encode() + b"\n")

    def close_input(self):
        if self.process.stdin:
            try:
                self.process.stdin.close()
            except BrokenPipeError:
                pass
            self.process.stdin = None  # communicate() must not flush it again

    def rest(self, timeout=30):
        """Everything it prints until it exits (its standard input is closed first)."""
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
        """Closes its input and waits for a clean exit."""
        self.close_input()
        try:
            self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
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
        return os.path.basename(self.argv[0]) + " " + " ".join(os.path.basename(part) for part in self.argv[1:3])


class Pool:
    """P workers of one contender, kept alive across trials."""

    def __init__(self, argvs):
        self.workers = [Worker(argv) for argv in argvs]
        self.broken = None
        self.replies = []
        try:
            deadline = time.monotonic() + 60
            for worker in self.workers:
                worker.expect("ready", deadline)
        except Failure as failure:
            self.broken = str(failure)

    def trial(self, per_worker, timeout=120):
        """Sends every worker `per_worker` and returns the seconds until the last said "done"."""
        if self.broken:
            raise Failure(self.broken)
        try:
            start = time.monotonic_ns()
            for worker in self.workers:
                worker.send(str(per_worker))
            deadline = time.monotonic() + timeout
            # What each said with "done" (a worker may add figures after the word).
            self.replies = [worker.expect("done", deadline) for worker in self.workers]
            return (time.monotonic_ns() - start) / 1e9
        except (Failure, BrokenPipeError) as failure:
            self.broken = str(failure)
            raise Failure(self.broken)

    def close(self):
        for worker in self.workers:
            try:
                worker.finish()
            except Failure:
                pass
            worker.kill()


def median(values):
    values = [value for value in values if value is not None]
    return statistics.median(values) if values else None


def percentile(values, fraction):
    """Nearest-rank percentile; None without values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = min(len(ordered) - 1, max(0, -int(-fraction * len(ordered) // 1) - 1))
    return ordered[rank]
