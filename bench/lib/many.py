"""9. Many storages: a client holding N `key:` storages in one process."""
import re

from .processes import Failure, Worker, median

COUNTS = [100, 1000]
RESULT = re.compile(r"(\w+)=([0-9.e+-]+)")


def run_once(bench, count):
    """One `ccsync-bench many-storages` run; its `result` line as a dict of floats."""
    options = bench.options
    worker = Worker([bench.bench_tool(), "many-storages", "--storages", str(count), "--rounds", str(options.many_rounds),
                     "--writes", str(options.many_writes), "--directory", bench.fresh_directory()])
    output = worker.rest(timeout=600)
    if worker.process.returncode != 0:
        raise Failure("many-storages %d exited %s: %s" % (count, worker.process.returncode, worker.stderr()))
    lines = [line for line in output.split("\n") if line.startswith("result ")]
    if not lines:
        raise Failure("many-storages %d printed no result: %s" % (count, output[-300:]))
    return {key: float(value) for key, value in RESULT.findall(lines[-1])}


def run_floor(bench, count):
    """One `creation_floor` run (bench/peers/creation_floor.c): its milliseconds per key."""
    worker = Worker([bench.peer("creation_floor"), bench.fresh_directory(), str(count)])
    output = worker.rest(timeout=600)
    if worker.process.returncode != 0:
        raise Failure("creation_floor %d exited %s: %s" % (count, worker.process.returncode, worker.stderr()))
    values = dict(RESULT.findall(output))
    if "perStorageMs" not in values:
        raise Failure("creation_floor %d printed no result: %s" % (count, output[-300:]))
    return float(values["perStorageMs"])


def measure(bench):
    options = bench.options
    runs = {count: [] for count in COUNTS}
    floors = {count: [] for count in COUNTS}
    for trial in range(options.many_trials):
        for count in COUNTS:
            bench.log("many storages, N = %d, trial %d/%d" % (count, trial + 1, options.many_trials))
            try:
                runs[count].append(run_once(bench, count))
                floors[count].append(run_floor(bench, count))
            except Failure as failure:
                bench.notes.append("many storages, N = %d: %s" % (count, failure))
    bench.results["many"] = runs

    lines = ["### 9. Many storages: N `key:` storages in one process", ""]
    lines.append(
        "One process creates N storages with `CodableStorage(key:defaultValue:)` (WLStorage's users keep one per key; "
        "each writes its default durably: its fsyncs are the floor of creation), observes each, then %d times sets "
        "every value and flushes them all; right after each flush a child process replaces %d of the keys' files, "
        "one at a time (a temporary file renamed over it, stamped just before the rename; the next once the last was "
        "seen), and the delay to that key's observer is taken. Threads: the entries of `/proc/self/task`, sampled every 0.5 ms from before the first storage to the "
        "end (the sampler's own thread not counted). Median of %d trials; the thread peak and the p99 are the worst "
        "trial's. The C floor of creation (`bench/peers/creation_floor.c`) makes the same files, folders, "
        "fsyncs and inotify reads for N keys in one directory, right after ccsync's run of the same N in each "
        "trial, and nothing else: how the file system's own cost grows with N." % (
            options.many_rounds, options.many_writes, options.many_trials))
    lines.append("")
    lines.append("| N storages | create all | per storage | C floor per storage | set + flush all | peak threads "
                 "| threads at the end | another process's write seen, p50 | p99 | max |")
    lines.append("|---|---|---|---|---|---|---|---|---|---|")
    figures = {}
    for count in COUNTS:
        trials = runs[count]
        if not trials:
            lines.append("| %d | FAILING | | | | | | | | |" % count)
            continue
        figure = {
            "create": median([run["create"] for run in trials]),
            "per": median([run["perStorageMs"] for run in trials]),
            "flush": median([run["setFlush"] for run in trials]),
            "peak": max(run["peakThreads"] for run in trials),
            "after": max(run["threadsAfter"] for run in trials),
            "p50": median([run["seenP50"] for run in trials]),
            "p99": max(run["seenP99"] for run in trials),
            "max": max(run["seenMax"] for run in trials),
        }
        figures[count] = figure
        floor = "%.2f ms" % median(floors[count]) if floors[count] else "-"
        lines.append("| %d | %.2f s | %.2f ms | %s | %.3f s | %d | %d | %.2f ms | %.2f ms | %.2f ms |" % (
            count, figure["create"], figure["per"], floor, figure["flush"], figure["peak"], figure["after"],
            figure["p50"], figure["p99"], figure["max"]))
    lines.append("")
    big, small = figures.get(1000), figures.get(100)
    if big:
        bench.goals.append(("1000 storages: at most 16 threads at any moment", "yes" if big["peak"] <= 16 else "no",
                            "peak %d" % big["peak"]))
        bench.goals.append(("1000 storages: another process's write seen within 5 ms p99 right after the flush of all",
                            "yes" if big["p99"] <= 5 else "no", "%.2f ms" % big["p99"]))
    if big and small:
        # Taken within each trial (N = 100 and 1000 back to back), then the median, as every ratio
        # of the harness: the fsyncs that are most of creation move with the machine's load.
        ratio = median([large["perStorageMs"] / little["perStorageMs"] for little, large in zip(runs[100], runs[1000])])
        # The floor's growth beside it: what the file system alone does when N grows.
        floor_ratios = [large / little for little, large in zip(floors[100], floors[1000])]
        floor_growth = ("; the C floor of the same file system work %.2fx" % median(floor_ratios)) if floor_ratios else ""
        bench.goals.append(("storage creation linear in N: per storage at N = 1000 within 1.5x of N = 100's",
                            "yes" if ratio <= 1.5 else "no", "%.2fx, median of the trials' ratios (medians %.2f ms against %.2f ms)%s"
                            % (ratio, big["per"], small["per"], floor_growth)))
    return "\n".join(lines) + "\n"
