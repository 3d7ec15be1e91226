import CCSync
import Foundation

// Child process the multi-process tests spawn: `CCSyncTestHelper COMMAND ARGUMENTS...`.
let arguments = CommandLine.arguments
switch arguments.count > 1 ? arguments[1] : "" {
case "watch":
  exit(runWatchHelper(Array(arguments.dropFirst(2))))
default:
  print("helper")
}
