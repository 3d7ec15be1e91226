"""1. (continued) Small differences measured in pairs: what history and a schema cost a write.

A goal of a few per cent is smaller than the spread of single trials of a durable write
(fsync latency varies trial to trial by more than that), so these two contenders are not
judged from the rotation's one trial each: they run back to back, A B B A, then B A A B, and so
on, each round's ratio being the time of its two A trials over that of its two B trials, so a
slow stretch of the disk lands on both. The verdict is the median round; the middle half of the
rounds is shown beside it.
"""
from .processes import median

PAIRS = [
    # ours, theirs, label, goal (time ratio, at most; None: reported only), work
    ("ccsync", "ccsync-no-history", "history kept (20 versions) time / history off time", 1.05, "durable"),
    ("ccsync-schema", "ccsync", "checked against a 20-field schema time / unchecked time", 1.10, "durable"),
    ("ccsync-relaxed", "ccsync-relaxed-no-history", "relaxed: history kept time / history off time", None, "relaxed"),
    # The same pair for the C floor, both sides reading `keep` as ccsync does: beside the
    # first row, whether the floor's history costs it what ccsync's costs ccsync.
    ("floor", "floor-keep-0", "C floor: history kept time / history off (`--keep 0`) time", None, "durable"),
]


def quartiles(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 4], ordered[(3 * len(ordered)) // 4]


def measure(bench, rows, setup_type, work):
    """{label: {P: [round ratios] or {"error": ...}}} for each pair whose contenders run."""
    options = bench.options
    by_key = {row.key: row for row in rows}
    raw = {}
    for ours, theirs, label, _, kind in PAIRS:
        if ours not in by_key or theirs not in by_key:
            continue
        raw[label] = {}
        for processes in options.processes:
            bench.log("paired: %s, P=%d, %d rounds" % (label, processes, options.paired_rounds))
            a, b = setup_type(bench, by_key[ours], processes), setup_type(bench, by_key[theirs], processes)
            ratios = []
            try:
                for round_number in range(options.paired_rounds):
                    order = [a, b, b, a] if round_number % 2 == 0 else [b, a, a, b]
                    seconds = {id(a): 0.0, id(b): 0.0}
                    for setup in order:
                        result = setup.trial(work[kind], processes)
                        if "error" in result:
                            raise RuntimeError("%s: %s" % (setup.row.label, result["error"]))
                        seconds[id(setup)] += result["seconds"]
                    ratios.append(seconds[id(a)] / seconds[id(b)])
                raw[label][processes] = ratios
            except RuntimeError as failure:
                raw[label][processes] = {"error": str(failure)}
            finally:
                a.close()
                b.close()
    bench.results["contention-paired"] = raw
    return raw


def table(bench, raw):
    counts = bench.options.processes
    lines = ["#### Small differences, measured in pairs", ""]
    lines.append(
        "The cost of a feature on the same durable (or relaxed) 1 KB increment, its two contenders run back to "
        "back in %d rounds (A B B A, then B A A B, alternately; each trial the table above's amount of work): "
        "each round's ratio is the A trials' time over the B trials', the cell the median round and, in "
        "parentheses, the middle half of the rounds. A goal is met when the median is at most the goal."
        % bench.options.paired_rounds)
    lines.append("")
    lines.append("| Comparison | Goal | " + " | ".join("P=%d" % p for p in counts) + " | Met |")
    lines.append("|" + "---|" * (3 + len(counts)))
    goals = {label: goal for _, _, label, goal, _ in PAIRS}
    for label, by_processes in raw.items():
        goal = goals[label]
        cells, met = [], True
        for processes in counts:
            ratios = by_processes.get(processes)
            if ratios is None or isinstance(ratios, dict):
                cells.append("FAILING")
                met = False
                if isinstance(ratios, dict):
                    bench.notes.append("%s, P=%d: %s" % (label, processes, ratios["error"]))
                continue
            middle = median(ratios)
            low, high = quartiles(ratios)
            cells.append("%.2f (%.2f-%.2f)" % (middle, low, high))
            met = met and (goal is None or middle <= goal)
        goal_text = "" if goal is None else "<= %.2f" % goal
        verdict = "" if goal is None else ("yes" if met else "**no**")
        if goal is not None:
            bench.goals.append((label + " (" + goal_text + ", in pairs)", "yes" if met else "no",
                                ", ".join("P=%d %s" % (p, c.split(" ")[0]) for p, c in zip(counts, cells))))
        lines.append("| %s | %s | %s | %s |" % (label, goal_text, " | ".join(cells), verdict))
    lines.append("")
    return "\n".join(lines)
