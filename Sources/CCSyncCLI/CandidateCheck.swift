import CCSync
import CCSyncProcesses

/// `--check CMD`: runs CMD through `sh -c` on a candidate document before it is written or
/// acted on. CMD gets the candidate's text on standard input and its path in
/// `$CCSYNC_CANDIDATE` (a private temporary file, removed afterwards) and the document's
/// name in `$CCSYNC_FILE`; exit 0 accepts it. Anything else refuses it, with CMD's standard
/// error (its first 4 KiB) as the reason; so does a check still running after its time-out
/// (its process group is killed) or one that cannot be run (sh's 127).
struct CandidateCheck: Sendable {
  let command: String
  let timeout: Duration
  /// What the check's messages call the document.
  let documentName: String

  /// How much of the check's standard error a refusal shows; the rest is read and dropped,
  /// so a check that floods it neither blocks nor fills memory.
  static let shownErrorBytes = 4096

  /// Runs the check on `bytes`.
  /// - Throws: ``DocumentGate/Refusal`` with the reason when it refuses.
  func run(on bytes: [UInt8]) throws {
    let directory = ThisProcess.temporaryDirectory
    let candidatePath = FilePath.join(directory, "ccsync-candidate-\(ThisProcess.identifier)-\(UInt32.random(in: 0...UInt32.max)).json")
    let candidate = try FileDescriptor.createNew(candidatePath, permissions: 0o600)
    defer { try? FileTree.removeFile(candidatePath) }
    try candidate.writeAll(bytes)
    try candidate.close()
    let input = try FileDescriptor.openForReading(candidatePath)
    let (errorRead, errorWrite) = try FileDescriptor.makePipe(nonBlockingRead: true)
    let output = try FileDescriptor.openForWriting("/dev/null")
    let process: Subprocess
    do {
      process = try Subprocess.spawn(
        ["/bin/sh", "-c", command], environment: ["CCSYNC_CANDIDATE": candidatePath, "CCSYNC_FILE": documentName],
        standardInput: input, standardOutput: output, standardError: errorWrite, newProcessGroup: true,
        closingInheritedDescriptors: true)
    } catch {
      throw DocumentGate.Refusal("the check '\(command)' could not be run: \(error)")
    }
    try? errorWrite.close()
    try? input.close()
    try? output.close()
    let deadline = ContinuousClock.now + timeout
    var shown: [UInt8] = []
    var status: Subprocess.ExitStatus?
    var pipeOpen = true
    var pause: Duration = .microseconds(200)
    while status == nil {
      let left = deadline - ContinuousClock.now
      if left <= .zero {
        _ = Subprocess.signalProcessGroup(process.id, .kill)
        _ = try? process.waitForExit()
        throw DocumentGate.Refusal("the check '\(command)' was still running after \(secondsText(timeout)) s (--check-timeout) and was ended")
      }
      if pipeOpen {
        _ = waitForInput([errorRead], timeout: min(left, .milliseconds(100)))
        switch (try? errorRead.readOnce()) ?? .endOfFile {
        case .bytes(let chunk):
          if shown.count < Self.shownErrorBytes { shown += chunk.prefix(Self.shownErrorBytes - shown.count) }
        case .nothingYet:
          break
        case .endOfFile:
          pipeOpen = false
        }
      } else {
        ContinuousClock.sleepThread(for: min(pause, left))
        pause = min(pause * 2, .milliseconds(20))
      }
      status = try? process.exitStatusIfExited()
    }
    // Whatever the shell left running in its group (a background job) goes with it.
    _ = Subprocess.signalProcessGroup(process.id, .kill)
    let message = String(decoding: shown, as: UTF8.self).trimmingTrailingNewlines()
    switch status {
    case .exited(code: 0)?:
      return
    case .exited(code: 127)?:
      throw DocumentGate.Refusal("the check '\(command)' could not be run (status 127)" + (message.isEmpty ? "" : ": \(message)"))
    case .exited(let code)?:
      throw DocumentGate.Refusal("the check '\(command)' refused it (status \(code))" + (message.isEmpty ? "" : ": \(message)"))
    case .signaled(let signal)?:
      throw DocumentGate.Refusal("the check '\(command)' was killed by signal \(signal.name)" + (message.isEmpty ? "" : ": \(message)"))
    case nil:
      return
    }
  }
}

extension String {
  /// This text without the newlines that end it.
  func trimmingTrailingNewlines() -> String {
    var text = Substring(self)
    while text.last == "\n" || text.last == "\r" { text.removeLast() }
    return String(text)
  }
}
