import CCSyncSystem
import Glibc

/// Signal names as kill(1), systemd and consul-template spell them.
extension Signal {
  /// Linux's signals by name, without the `SIG` prefix.
  private static let names: [(name: String, number: Int32)] = [
    ("HUP", SIGHUP), ("INT", SIGINT), ("QUIT", SIGQUIT), ("ILL", SIGILL), ("TRAP", SIGTRAP),
    ("ABRT", SIGABRT), ("IOT", SIGIOT), ("BUS", SIGBUS), ("FPE", SIGFPE), ("KILL", SIGKILL),
    ("USR1", SIGUSR1), ("SEGV", SIGSEGV), ("USR2", SIGUSR2), ("PIPE", SIGPIPE), ("ALRM", SIGALRM),
    ("TERM", SIGTERM), ("STKFLT", SIGSTKFLT), ("CHLD", SIGCHLD), ("CONT", SIGCONT), ("STOP", SIGSTOP),
    ("TSTP", SIGTSTP), ("TTIN", SIGTTIN), ("TTOU", SIGTTOU), ("URG", SIGURG), ("XCPU", SIGXCPU),
    ("XFSZ", SIGXFSZ), ("VTALRM", SIGVTALRM), ("PROF", SIGPROF), ("WINCH", SIGWINCH), ("IO", SIGIO),
    ("POLL", SIGPOLL), ("PWR", SIGPWR), ("SYS", SIGSYS),
  ]

  /// The highest signal number Linux has (`SIGRTMAX`; real-time signals go up to it).
  package static let highestNumber: Int32 = 64

  /// The signal `text` names: a name with or without `SIG`, in any case (`HUP`, `SIGHUP`,
  /// `usr1`), or a number from 1 to ``highestNumber`` (`1`, `10`). `nil` for anything else,
  /// 0 included (it tests a process's existence without signalling it).
  package static func named(_ text: String) -> Signal? {
    if let number = Int32(text) {
      return (1...highestNumber).contains(number) ? Signal(rawValue: number) : nil
    }
    var name = text.uppercased()
    if name.hasPrefix("SIG") { name.removeFirst(3) }
    return names.first { $0.name == name }.map { Signal(rawValue: $0.number) }
  }

  /// The signal's name with `SIG` (`SIGHUP`), or its number for one without a name here.
  package var name: String {
    Signal.names.first { $0.number == rawValue }.map { "SIG" + $0.name } ?? String(rawValue)
  }
}
