import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// The settings type the storage, live-reload and fault tests share.
struct SharedSettings: Codable, Sendable, Equatable {
  var theme = "light"
  var fontSize = 13
  var counter = 0
  var tags: [String] = []
}
