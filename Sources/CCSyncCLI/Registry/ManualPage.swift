import CCSync

/// The ccsync(1) manual page in roff (man(7) macros), made from the command registry: every
/// command with its usage, operands and options, the exit statuses, the environment and the
/// files the command uses. `groff -ww -man` renders it without warnings.
enum ManualPage {
  /// The exit statuses, as ExitCode documents them.
  static let exitStatuses: [(code: String, meaning: String)] = [
    ("0", "Success."),
    ("1", "No value at PATH; the lock was not taken (-n, or -w ran out); a stress run lost updates or missed a gate; a mirror already runs for a file."),
    ("2", "watch --timeout ended before --count lines were printed."),
    ("64", "Usage error: an unknown command or option, a missing operand, a malformed PATH or option value."),
    ("65", "Data error: not valid JSON; a PATH through a scalar; not a regular file."),
    ("66", "No input: FILE, its directory or the etcd key does not exist; a dangling or looping symbolic link."),
    ("69", "Unavailable: no member of the etcd cluster answered within the deadline."),
    ("73", "Cannot create: the temporary file, the lock file or the file cannot be created; a read-only file system."),
    ("74", "I/O error: a full disk or quota (ENOSPC, EDQUOT), EIO, EFBIG, and any other failed system call."),
    ("75", "Temporary failure: edit found a field changed both in the edit and in the file; an etcd lock's lease was lost; a write whose outcome is unknown."),
    ("77", "Permission denied: on the file, or etcd refused the credentials or the TLS certificate."),
    ("126, 127", "lock and watch: the command could not be run (not executable, not found)."),
  ]

  /// The environment variables the command reads or sets.
  static let environment: [(name: String, meaning: String)] = [
    ("ETCDCTL_ENDPOINTS", "The members for an etcd:///KEY URL that names none (comma-separated HOST:PORT or http(s):// URLs); 127.0.0.1:2379 when unset."),
    ("ETCDCTL_USER", "USER:PASSWORD to log in to etcd."),
    ("ETCDCTL_CACERT, ETCDCTL_CERT, ETCDCTL_KEY", "The CA, client certificate and key for https:// endpoints."),
    ("VISUAL, EDITOR", "The editor of ccsync edit; vi when neither is set."),
    ("TMPDIR", "Where ccsync edit keeps its copy; /tmp when unset."),
    ("NOTIFY_SOCKET", "Set by systemd for a Type=notify unit: ccsync mirror reports readiness there."),
    ("CCSYNC_VALUE, CCSYNC_FILE", "Set by ccsync watch for the command it runs: the compact value and the file."),
    ("CCSYNC_LOCK_REVISION", "Set by ccsync lock on an etcd:// lock for the command it runs: the fencing token."),
  ]

  /// The files the command uses beside a document.
  static let files: [(name: String, meaning: String)] = [
    ("FILE.lock", "The lock every ccsync writer and the library take, flock(2) on a file beside FILE; flock(1) on it interoperates."),
    (".FILE.tmp-XXXXXX", "A replacement being written; renamed over FILE once durable."),
    (".NAME.ccsync-mirror", "ccsync mirror's state beside the file NAME: the last version both sides agreed on."),
    ("FILE.conflict-TIMESTAMP", "The losing side of a mirror's first run, kept."),
    ("/lib/systemd/system/ccsync-mirror@.service", "The packaged systemd unit of a mirror (see the unit's comments)."),
  ]

  /// The page.
  static func page(commands: [CommandSpec], date: String) -> String {
    var lines: [String] = [
      ".TH CCSYNC 1 \"\(date)\" \"ccsync \(Help.version)\" \"User Commands\"",
      ".SH NAME",
      "ccsync \\- share a JSON configuration between processes and machines",
      ".SH SYNOPSIS",
      ".B ccsync",
      ".I command",
      "[\\fIoptions\\fR] [\\fIarguments\\fR]",
      ".br",
      ".B ccsync",
      "[\\fB\\-h\\fR | \\fB\\-\\-help\\fR | \\fB\\-V\\fR | \\fB\\-\\-version\\fR]",
      ".SH DESCRIPTION",
      escape("ccsync reads, writes, watches and locks a JSON document shared by many processes: a file on one machine (flock(2), inotify(7), an atomic and durable rename), or an etcd key across machines (compare-and-swap, watch, leases). Every FILE operand may also be etcd://HOST:PORT[,HOST:PORT...]/KEY. A PATH is dotted (server.port, servers[0].host) or a JSON Pointer (/server/port)."),
      ".SH COMMANDS",
    ]
    for spec in commands {
      lines.append(".SS \"\(escape(spec.usage))\"")
      lines.append(escape(spec.overview))
      for operand in spec.operands {
        lines.append(".TP")
        lines.append(".I \(operand.name)")
        lines.append(escape(operand.help))
      }
      for option in spec.options {
        lines.append(".TP")
        var label = option.short.map { "\\fB\\-\($0)\\fR, " } ?? ""
        label += "\\fB\\-\\-\(escape(option.long))\\fR"
        if let valueName = option.valueName { label += " \\fI\(escape(valueName))\\fR" }
        lines.append(label)
        lines.append(escape(option.help))
      }
      if let discussion = spec.discussion {
        for paragraph in discussion.split(separator: "\n") {
          lines.append(".PP")
          lines.append(escape(String(paragraph)))
        }
      }
    }
    lines.append(".SH EXIT STATUS")
    for status in exitStatuses {
      lines.append(".TP")
      lines.append(".B \(status.code)")
      lines.append(escape(status.meaning))
    }
    lines.append(".SH ENVIRONMENT")
    for variable in environment {
      lines.append(".TP")
      lines.append(".B \(escape(variable.name))")
      lines.append(escape(variable.meaning))
    }
    lines.append(".SH FILES")
    for file in files {
      lines.append(".TP")
      lines.append(".I \(escape(file.name))")
      lines.append(escape(file.meaning))
    }
    lines += [
      ".SH EXAMPLES",
      ".nf",
      "ccsync get config.json server.port",
      "ccsync set config.json server.port 9090",
      "ccsync watch config.json server \\-\\-restart \\-\\- ./server",
      "ccsync mirror /etc/app/config.json etcd://10.0.0.1:2379/cfg/app",
      ".fi",
      ".SH SEE ALSO",
      ".BR flock (1),",
      ".BR jq (1),",
      ".BR etcdctl (1),",
      ".BR inotify (7)",
    ]
    return lines.joined(separator: "\n") + "\n"
  }

  /// `text` safe in a roff text line: backslashes and dashes escaped, a leading dot or quote
  /// kept from being read as a request.
  static func escape(_ text: String) -> String {
    var escaped = ""
    for character in text {
      switch character {
      case "\\": escaped += "\\e"
      case "-": escaped += "\\-"
      default: escaped.append(character)
      }
    }
    if escaped.hasPrefix(".") || escaped.hasPrefix("'") { escaped = "\\&" + escaped }
    return escaped
  }
}

/// `ccsync manpage`: prints ccsync(1), made from the registry.
enum ManualPageCommand: Command {
  static let spec = CommandSpec(
    name: "manpage", overview: "Print the ccsync(1) manual page (roff), made from these commands' declarations.",
    operands: [], options: [],
    discussion: "man -l <(ccsync manpage) reads it without installing; the Debian package installs it.")

  static func run(_ arguments: ParsedArguments) throws -> Int32 {
    StandardStreams.write(ManualPage.page(commands: CommandRegistry.visibleSpecs, date: Help.releaseDate))
    return ExitCode.success
  }
}
