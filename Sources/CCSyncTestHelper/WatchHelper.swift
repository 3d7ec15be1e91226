import CCSync
import CCSyncProcesses
import Foundation

/// `CCSyncTestHelper watch PATH [--safety-ms N]`: watches PATH with `FileWatcher.shared`
/// and prints one line per wake-up, `wake REASON CONTENT` (the file's content at that moment,
/// newlines shown as `\n`, `<missing>` when it cannot be read), after a first line
/// `ready polling=BOOL`. Every line is written at once, unbuffered. Ends when standard input
/// closes, so a test that dies leaves no helper behind. `CCSYNC_WATCH_MODE=poll` applies.
func runWatchHelper(_ arguments: [String]) -> Int32 {
  guard let path = arguments.first else {
    FileHandle.standardError.write(Data("usage: CCSyncTestHelper watch PATH [--safety-ms N]\n".utf8))
    return 64
  }
  var watcher = FileWatcher.shared
  if let index = arguments.firstIndex(of: "--safety-ms"), index + 1 < arguments.count,
     let milliseconds = Int(arguments[index + 1]) {
    watcher = FileWatcher(safetyRecheckInterval: milliseconds > 0 ? .milliseconds(milliseconds) : nil)
  }
  let watch = watcher.watch(path) { reason in
    let content = (try? String(contentsOfFile: path, encoding: .utf8))?
      .replacingOccurrences(of: "\n", with: "\\n") ?? "<missing>"
    FileHandle.standardOutput.write(Data("wake \(reason) \(content)\n".utf8))
  }
  FileHandle.standardOutput.write(Data("ready polling=\(watcher.usesPolling)\n".utf8))
  while readLine() != nil {}
  watch.cancel()
  return 0
}
