import CCSync
import CCSyncProcesses

/// The command descriptions: what the parser accepts and what `--help` prints.
enum Help {
  static let version = "0.1.0"

  static let fileOperand = OperandSpec("file", help: "The JSON file, or an etcd key: etcd://[HOST:PORT[,HOST:PORT...]]/KEY.")
  static let pathOperand = OperandSpec(
    "path", optional: true,
    help: "Dotted path (server.port, servers[0].host) or JSON Pointer (/server/port); the whole document when omitted.")
  static let helpOption = OptionSpec("h", "help", help: "Show help information.")
  /// What a write does on an etcd key, for the writing commands' help.
  static let etcdWriteNote = "On an etcd key (etcd://...) the write is a compare-and-swap, repeated on the newer value when another write came first; it takes no lock, so -n changes nothing, and -w <secs> over 5 extends the cluster's deadline."

  static let lockOptions = [
    OptionSpec("n", "nonblock", help: "Fail with status 1 at once if another process holds the lock."),
    OptionSpec("w", "wait", value: "secs", help: "Fail with status 1 if the lock is not free within <secs> seconds."),
  ]

  static let top = CommandSpec(
    name: "", overview: "Share a JSON config file between processes: read, write, watch and lock it.",
    usage: "ccsync <subcommand>", operands: [],
    options: [OptionSpec(nil, "version", help: "Show the version."), helpOption])

  static let get = CommandSpec(
    name: "get", overview: "Print the value at <path> in a JSON file (the whole document without <path>).",
    usage: "ccsync get [--raw] [--compact] <file> [<path>]",
    operands: [fileOperand, pathOperand],
    options: [
      OptionSpec("r", "raw", help: "Print a string without quotes and escapes."),
      OptionSpec("c", "compact", help: "Print on one line."),
      helpOption,
    ],
    discussion: "Exits 1 when there is no value at <path>, 65 when <file> is not valid JSON or <path> goes through a value that is not an object or array, 66 when <file> does not exist; for an etcd key, 69 when no member answers and 77 when it refuses the credentials ($ETCDCTL_USER=user:password).")

  static let load = CommandSpec(
    name: "load", overview: "Print the whole document, pretty (the same as 'ccsync get <file>').",
    usage: "ccsync load <file>", operands: [fileOperand], options: [helpOption])

  static let set = CommandSpec(
    name: "set", overview: "Set the value at <path> in a JSON file.",
    usage: "ccsync set [--string | --json] [--nonblock] [--wait <secs>] <file> <path> <value>",
    operands: [
      fileOperand,
      OperandSpec("path", help: "Dotted path or JSON Pointer; missing objects on the way are created."),
      OperandSpec("value", help: "JSON when it parses as JSON (42, true, \"x\", {\"a\":1}), a string otherwise."),
    ],
    options: [
      OptionSpec("s", "string", help: "Always store <value> as a string."),
      OptionSpec("j", "json", help: "Require <value> to be JSON (status 65 otherwise)."),
    ] + lockOptions + [helpOption],
    discussion: "Creates <file> as {} first when it does not exist (its directory must exist). The write takes the file's lock, re-reads the file under it, and replaces it atomically; an invalid file is left untouched (status 65).\n" + etcdWriteNote)

  static let delete = CommandSpec(
    name: "delete", overview: "Remove the value at <path> from a JSON file.",
    usage: "ccsync delete [--nonblock] [--wait <secs>] <file> <path>",
    operands: [fileOperand, OperandSpec("path", help: "Dotted path or JSON Pointer.")],
    options: lockOptions + [helpOption],
    discussion: "Exits 1, leaving the file unchanged, when there is no value at <path>.\n" + etcdWriteNote)

  static let save = CommandSpec(
    name: "save", overview: "Replace a JSON file with the document read from standard input.",
    usage: "ccsync save [--merge] [--nonblock] [--wait <secs>] <file>",
    operands: [fileOperand],
    options: [OptionSpec(nil, "merge", help: "Apply standard input as an RFC 7396 merge patch instead.")]
      + lockOptions + [helpOption],
    discussion: "Exits 65 and leaves the file untouched when standard input is not valid JSON. Creates <file> when it does not exist (its directory must exist).\n" + etcdWriteNote)

  static let watch = CommandSpec(
    name: "watch", overview: "Print the value at <path> now and each time it changes, one compact JSON line each.",
    usage: "ccsync watch [--count <n>] [--timeout <secs>] [--poll <secs>] <file> [<path>] [--exec | --restart | --signal <sig>] [--debounce <secs>] [-- <command> ...]",
    operands: [fileOperand, pathOperand],
    options: [
      OptionSpec("c", "compact", help: "Accepted for symmetry with 'get': lines are always compact."),
      OptionSpec(nil, "count", value: "n", help: "Exit 0 once <n> lines are printed."),
      OptionSpec(nil, "timeout", value: "secs", help: "Stop after <secs> seconds: status 0, or 2 when --count was not reached."),
      OptionSpec(nil, "poll", value: "secs", help: "Poll every <secs> seconds instead of using inotify (files only)."),
      OptionSpec(nil, "exec", help: "Run <command> after each printed value (value on stdin and in CCSYNC_VALUE)."),
      OptionSpec(nil, "restart", help: "Run <command> now and restart it on each new value; exit with its status when it exits."),
      OptionSpec(nil, "signal", value: "sig", help: "Run <command> now and send it <sig> (HUP, USR1, 10) on each new value; exit with its status when it exits."),
      OptionSpec(nil, "debounce", value: "secs", help: "Act on a new value once it has been unchanged for <secs> (at the latest after 4 x <secs>); default 0."),
      helpOption,
    ],
    discussion: """
      Runs until SIGINT, SIGTERM or SIGHUP (status 0). A missing file or <path>, or an invalid file, \
      prints nothing on standard output and a note on standard error; the next valid value is printed.
      With --exec, runs that arrive while <command> runs coalesce into one more run. With --restart, \
      <command> is stopped with SIGTERM (SIGKILL after 5 s) and started again. With --signal, \
      <command> is started once and sent <sig> (to its process, not its group, as 'systemctl reload' \
      does) on each new value; it is never restarted. <command> gets CCSYNC_VALUE (the compact value, \
      unset while there is none; under --restart and --signal the value it started with) and CCSYNC_FILE.
      With --debounce, lines are still printed at once, but <command> is run, restarted or signalled \
      once the value has been unchanged for <secs>, and at the latest 4 x <secs> after the first \
      change not acted on (consul-template's wait); the value found at start is acted on at once.
      """,
    takesCommand: true)

  static let lock = CommandSpec(
    name: "lock", overview: "Run a command while holding a JSON file's lock.",
    usage: "ccsync lock [--shared | --exclusive] [--nonblock] [--wait <secs>] [--conflict-exit-code <code>] [--ttl <secs>] <file> -- <command> ...",
    operands: [OperandSpec("file", help: "The JSON file, or etcd://[HOST:PORT[,HOST:PORT...]]/NAME for etcd's lock NAME.")],
    options: [
      OptionSpec("s", "shared", help: "Take the shared lock (readers that must see one consistent version; files only)."),
      OptionSpec("x", "exclusive", help: "Take the exclusive lock (the default; what every writer takes)."),
    ] + lockOptions + [
      OptionSpec("E", "conflict-exit-code", value: "code", help: "Exit with <code> instead of 1 when the lock is not taken."),
      OptionSpec(nil, "ttl", value: "secs", help: "etcd:// only: the time to live of the lock's lease (default 10)."),
      helpOption,
    ],
    discussion: """
      The lock is flock(2) on '<file>.lock' beside the resolved file, the lock every ccsync writer and the library take, so 'flock <file>.lock ...' interoperates. It is not inherited: it is released when <command> exits, even if <command> left children running. Exits with <command>'s status (128+N when killed by signal N), 126 or 127 when it cannot be run. SIGTERM and SIGHUP are passed on to it; SIGINT from the terminal reaches it directly.
      With etcd://.../NAME it is etcd's lock NAME (the one 'etcdctl lock NAME' takes), held with a lease renewed every third of --ttl while <command> runs. <command> gets CCSYNC_LOCK_REVISION, a fencing token that grows with every grant. If the lease is lost (revoked, or expired while the cluster could not be reached), <command> is stopped (SIGTERM, SIGKILL after 5 s) and the status is 75.
      """,
    takesCommand: true, commandStartsAfterOperands: 1)

  static let mirror = CommandSpec(
    name: "mirror", overview: "Keep local JSON files and etcd keys one document each, both ways, until stopped.",
    usage: "ccsync mirror [--prefer key|file] <file> <key> [<file> <key> ...]",
    operands: [
      OperandSpec("file", help: "A local JSON file (its directory must exist)."),
      OperandSpec("key", help: "etcd://[HOST:PORT[,HOST:PORT...]]/KEY; no hosts: $ETCDCTL_ENDPOINTS, else 127.0.0.1:2379."),
    ],
    options: [
      OptionSpec(nil, "prefer", value: "side", help: "Which side wins at a first run when both exist and differ: key (the default) or file."),
      helpOption,
    ],
    discussion: "Every change to a file (any writer: ccsync, the library, an editor, a rename) goes into its key by compare-and-swap, and every change to the key (another host's mirror, etcdctl, the library) into the file under its lock, field by field: a field both sides changed takes the key's value, and a line on stderr names it. The last version both sides agreed on is kept in '.<name>.ccsync-mirror' beside the file, so a restart merges instead of overwriting. At a first run the preferred side wins and the other's differing version is kept (<file>.conflict-TIMESTAMP, <key>.conflict-TIMESTAMP). Deletions are not mirrored: a missing side is recreated. An invalid side is reported and not mirrored until it is valid. While the cluster cannot be reached the mirror says so once and keeps the local edits for when it answers. Under systemd (Type=notify) readiness is signalled after the first sync. Runs until SIGTERM, SIGINT or SIGHUP (exit 0); 1 when another mirror runs for a file.",
    repeatsOperands: true)

  static let edit = CommandSpec(
    name: "edit", overview: "Edit a JSON file in $VISUAL, $EDITOR or vi, merging with changes made meanwhile.",
    usage: "ccsync edit [--nonblock] [--wait <secs>] <file>",
    operands: [fileOperand], options: lockOptions + [helpOption],
    discussion: "Opens a copy. Unchanged: status 0, nothing written. Invalid JSON: status 65, the file untouched, the copy kept. Otherwise the fields the edit changed are applied to the current file under the lock, so changes another process made meanwhile survive; a field both changed: status 75, both values shown, nothing written.\n" + etcdWriteNote)

  static let stress = CommandSpec(
    name: "stress", overview: "Lock-contention test: processes incrementing one integer, then a check that no update was lost.",
    usage: "ccsync stress [--processes <n>] [--iterations <m>] [--path <path>] <file>",
    operands: [fileOperand],
    options: [
      OptionSpec(nil, "processes", value: "n", help: "Number of processes (default 4)."),
      OptionSpec(nil, "iterations", value: "m", help: "Increments per process (default 250)."),
      OptionSpec(nil, "path", value: "path", help: "The integer to increment (default counter)."),
      helpOption,
    ],
    discussion: "Each process does <m> exact read-modify-write increments through the library. Exits 0 when the integer grew by exactly <n> x <m>, 1 otherwise.")

  static let stressWorker = CommandSpec(
    name: "stress-worker", overview: "One process of 'ccsync stress' (internal).",
    usage: "ccsync stress-worker <file> <path> <m>",
    operands: [fileOperand, OperandSpec("path", help: "The integer."), OperandSpec("m", help: "Increments.")],
    options: [helpOption], isHidden: true)

  static let demo = CommandSpec(
    name: "demo", overview: "A self-contained tour: processes sharing a temporary copy of an example config.",
    usage: "ccsync demo [cluster]",
    operands: [OperandSpec("cluster", optional: true, help: "Three machines sharing one document through three etcd members on loopback (needs etcd; about 15 s).")],
    options: [helpOption],
    discussion: "Without an operand: one machine, about 2 s, nothing needed. 'ccsync demo cluster' starts three etcd members, three machines (directories) each with its own mirror, watcher and writer, kills the leader, and stops everything it started; it exits 69 when etcd is not installed.")

  static let helpCommand = CommandSpec(
    name: "help", overview: "Show help for a subcommand.", usage: "ccsync help [<subcommand>]",
    operands: [OperandSpec("subcommand", optional: true, help: "The subcommand.")], options: [helpOption])

  static let commands = [get, load, set, delete, save, watch, lock, edit, stress, demo, helpCommand, stressWorker]

  /// The help text of `spec`, in swift-argument-parser's layout.
  static func text(for spec: CommandSpec) -> String {
    var text = "OVERVIEW: \(spec.overview)\n\nUSAGE: \(spec.usage)\n"
    if !spec.operands.isEmpty {
      text += "\nARGUMENTS:\n"
      for operand in spec.operands { text += row("<\(operand.name)>", operand.help) }
      if spec.takesCommand { text += row("<command> ...", "The command to run, after '--'.") }
    }
    if spec.name.isEmpty {
      text += "\nOPTIONS:\n"
      for option in spec.options { text += row(option.helpLabel, option.help) }
      text += "\nSUBCOMMANDS:\n"
      for command in commands where !command.isHidden { text += row(command.name, command.overview) }
      text += "\n  See 'ccsync help <subcommand>' for detailed help.\n"
      return text
    }
    text += "\nOPTIONS:\n"
    for option in spec.options { text += row(option.helpLabel, option.help) }
    if let discussion = spec.discussion {
      text += "\n" + discussion + "\n"
    }
    return text
  }

  /// One two-column row: the label padded to 24 columns, or on a line of its own when longer.
  private static func row(_ label: String, _ help: String) -> String {
    let indented = "  " + label
    if indented.count < 24 {
      return indented + String(repeating: " ", count: 26 - indented.count) + help + "\n"
    }
    return indented + "\n" + String(repeating: " ", count: 26) + help + "\n"
  }

  /// Prints `error` as swift-argument-parser does, to standard error.
  static func report(_ error: UsageError) {
    let subcommand = error.command.name.isEmpty ? "ccsync --help" : "ccsync \(error.command.name) --help"
    StandardStreams.write(
      "Error: \(error.message)\nUsage: \(error.command.usage)\n  See '\(subcommand)' for more information.\n",
      toStandardError: true)
  }
}
