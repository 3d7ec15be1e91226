import CCSync

/// `ccsync stress --json`: every figure of the report in one JSON object, times in seconds.
/// Each field is documented in docs/CLI.md, "stress".
extension StressReport {
  var json: JSONValue {
    var object = JSONObject()
    object["processes"] = .integer(processes)
    object["threads"] = .integer(threads)
    object["workers"] = .integer(processes * threads)
    object["mode"] = .string(workload.mode.rawValue)
    object["backend"] = .string(overEtcd ? "etcd" : "file")
    object["durable"] = .bool(!overEtcd && !workload.relaxed)
    object["iterations"] = iterations.map { .integer($0) } ?? .null
    object["duration"] = duration.map { .seconds($0.nanoseconds) } ?? .null
    object["hold"] = .seconds(workload.hold.nanoseconds)
    object["sharedFraction"] = .number(JSONNumber(workload.shared))
    object["seconds"] = .seconds(elapsed)
    object["operations"] = .integer(operations)
    object["writes"] = .integer(writes)
    object["reads"] = .integer(reads)
    object["exclusive"] = .integer(operations - sharedOperations)
    object["shared"] = .integer(sharedOperations)
    object["operationsPerSecond"] = .rate(operationsPerSecond)
    object["updatesPerSecond"] = .rate(updatesPerSecond)
    object["lostUpdates"] = .number(JSONNumber(lostUpdates))
    object["wait"] = StressReport.json(wait)
    object["held"] = StressReport.json(held)
    var retryObject = JSONObject()
    retryObject["total"] = .number(JSONNumber(retries))
    retryObject["operationsRetried"] = .integer(operationsRetried)
    retryObject["max"] = .number(JSONNumber(mostRetries))
    object["retries"] = .object(retryObject)
    var fairnessObject = JSONObject()
    fairnessObject["lowestShare"] = fairness.map { .rate($0.lowestShare, places: 4) } ?? .null
    fairnessObject["jainIndex"] = fairness.map { .rate($0.jainIndex, places: 4) } ?? .null
    if let fairness, workers.indices.contains(fairness.lowestWorker) {
      fairnessObject["lowestProcess"] = .integer(workers[fairness.lowestWorker].process)
      fairnessObject["lowestThread"] = .integer(workers[fairness.lowestWorker].thread)
    } else {
      fairnessObject["lowestProcess"] = .null
      fairnessObject["lowestThread"] = .null
    }
    fairnessObject["window"] = .seconds(fairnessWindow)
    object["fairness"] = .object(fairnessObject)
    let counted = workers.reduce(0) { $0 + $1.counted }
    object["perWorker"] = .array(workers.map { worker in
      var entry = JSONObject()
      entry["process"] = .integer(worker.process)
      entry["thread"] = .integer(worker.thread)
      entry["operations"] = .integer(worker.operations)
      entry["counted"] = .integer(worker.counted)
      entry["share"] = .rate(counted > 0 ? Double(worker.counted) / Double(counted) : 0, places: 4)
      return .object(entry)
    })
    if let counter {
      var counterObject = JSONObject()
      counterObject["path"] = .string(counter.pathText)
      counterObject["before"] = .number(JSONNumber(counter.before))
      counterObject["after"] = .number(JSONNumber(counter.after))
      object["counter"] = .object(counterObject)
    } else {
      object["counter"] = .null
    }
    object["mismatches"] = .array(mismatches.map { mismatch in
      var entry = JSONObject()
      entry["process"] = .integer(mismatch.process)
      entry["thread"] = .integer(mismatch.thread)
      entry["iteration"] = .integer(mismatch.iteration)
      entry["read"] = .number(JSONNumber(mismatch.read))
      entry["expected"] = .number(JSONNumber(mismatch.expected))
      return .object(entry)
    })
    object["overlaps"] = .integer(overlaps)
    object["histogram"] = .array(histogram.map { bucket in
      var entry = JSONObject()
      entry["upTo"] = bucket.upperBound == .max ? .null : .seconds(bucket.upperBound)
      entry["count"] = .integer(bucket.count)
      return .object(entry)
    })
    object["timeline"] = .array(timeline.map { second in
      var entry = JSONObject()
      entry["second"] = .integer(second.index)
      entry["operations"] = .integer(second.operations)
      entry["rate"] = .rate(second.rate)
      entry["waitP99"] = .seconds(second.waitP99)
      entry["waitMax"] = .seconds(second.waitMax)
      return .object(entry)
    })
    var gate = JSONObject()
    gate["maxP99"] = maxP99.map { .seconds($0.nanoseconds) } ?? .null
    gate["minFairness"] = minFairness.map { .number(JSONNumber($0)) } ?? .null
    gate["failures"] = .array(gateFailures.map { .string($0) })
    object["gate"] = .object(gate)
    object["passed"] = .bool(!failed)
    return .object(object)
  }

  /// A distribution in seconds: `p50`, `p90`, `p99`, `p999`, `max`, `mean`.
  private static func json(_ distribution: StressStatistics.Distribution) -> JSONValue {
    var object = JSONObject()
    object["p50"] = .seconds(distribution.p50)
    object["p90"] = .seconds(distribution.p90)
    object["p99"] = .seconds(distribution.p99)
    object["p999"] = .seconds(distribution.p999)
    object["max"] = .seconds(distribution.max)
    object["mean"] = .seconds(distribution.mean)
    return .object(object)
  }
}

extension JSONValue {
  /// An integer.
  fileprivate static func integer(_ value: Int) -> JSONValue { .number(JSONNumber(value)) }

  /// Nanoseconds as seconds, to the nanosecond (`0.000123456`).
  fileprivate static func seconds(_ nanoseconds: Int64) -> JSONValue {
    .number(JSONNumber(text: decimal(Double(nanoseconds) / 1e9, places: 9)) ?? JSONNumber(Double(nanoseconds) / 1e9))
  }

  /// A rate or ratio, to `places` decimals.
  fileprivate static func rate(_ value: Double, places: Int = 1) -> JSONValue {
    .number(JSONNumber(text: decimal(value, places: places)) ?? JSONNumber(value))
  }
}
