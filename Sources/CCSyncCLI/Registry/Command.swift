import CCSync

/// One `ccsync` command: its declaration and its body. Each command is a type in
/// ``CommandRegistry/commands``; dispatch, `--help`, `ccsync help`, usage errors, the
/// completions and the man page are all made from that one list.
protocol Command: Sendable {
  /// The name, operands, options and help, declared once.
  static var spec: CommandSpec { get }
  /// Runs with arguments parsed against ``spec`` and returns the exit status; errors are
  /// mapped to statuses by ``CommandFailure``.
  @MainActor static func run(_ arguments: ParsedArguments) throws -> Int32
}

/// Every command, in the order help lists them.
enum CommandRegistry {
  static let commands: [any Command.Type] = [
    GetCommand.self, LoadCommand.self, SetCommand.self, DeleteCommand.self, SaveCommand.self,
    ValidateCommand.self, LogCommand.self, DiffCommand.self, RollbackCommand.self,
    StatusCommand.self,
    EditCommand.self, WatchCommand.self, LockCommand.self, MirrorCommand.self, StressCommand.self,
    DemoCommand.self, CompletionCommand.self, ManualPageCommand.self, VersionCommand.self,
    HelpCommand.self, StressWorkerCommand.self, StressRunnerCommand.self,
  ]

  /// The command named `name`.
  static func command(named name: String) -> (any Command.Type)? {
    commands.first { $0.spec.name == name }
  }

  /// The declarations of the commands a person is shown (help, completions, the man page).
  static var visibleSpecs: [CommandSpec] {
    commands.map { $0.spec }.filter { !$0.isHidden }
  }
}
