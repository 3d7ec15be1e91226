import CCSync
import CCSyncProcesses
import Foundation

// Child process the multi-process tests spawn: `CCSyncTestHelper COMMAND ARGUMENTS...`.
let arguments = CommandLine.arguments
let rest = Array(arguments.dropFirst(2))
switch arguments.count > 1 ? arguments[1] : "" {
case "increment": exit(runIncrement(rest))
case "session": exit(runSession(rest))
case "churn": exit(runChurn(rest))
case "watch": exit(runWatchHelper(rest))
case "count-up": exit(runCountUp(rest))
case "timed-saves": exit(runTimedSaves(rest))
case "save-once": exit(runSaveOnce(rest))
case "update-once": exit(runUpdateOnce(rest))
case "update-loop": exit(runUpdateLoop(rest))
case "read-document": exit(runReadDocument(rest))
case "mixed": exit(runMixed(rest))
case "release-then-exit": exit(runReleaseThenExit(rest))
case "pending-pair": exit(runPendingPair(rest))
case "powercut-saves": exit(runPowerCutSaves(rest))
case "register-ops": exit(runRegisterOperations(rest))
case "round-trip": exit(runRoundTrip(rest))
case "lock-holder": exit(runLockHolder(rest))
case "increment-log": exit(runIncrementLog(rest))
default:
  FileHandle.standardError.write(Data("usage: CCSyncTestHelper increment|session|churn|watch|count-up|timed-saves|save-once|update-once|update-loop|read-document|mixed|release-then-exit|pending-pair|powercut-saves|register-ops|round-trip|lock-holder|increment-log ...\n".utf8))
  exit(64)
}
