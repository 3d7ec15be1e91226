import Foundation
import Testing
@testable import CCSync
import CCSyncJSON
import CCSyncProcesses
import CCSyncSystem

/// The System layer's path checks, temporary directories and tree removal.
@Suite struct FileTreeTests {
  @Test func aTemporaryDirectoryIsPrivateAndRemovedWithWhatItHolds() throws {
    try withTemporaryDirectory { parent in
      let outside = parent.file("outside")
      try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
      #expect(FileManager.default.createFile(atPath: outside + "/keep", contents: Data("kept".utf8)))

      let tree = try FileTree.makeTemporaryDirectory(prefix: "tree", in: parent.path)
      #expect(tree.hasPrefix(parent.path + "/tree-") && tree.count == (parent.path + "/tree-XXXXXX").count)
      #expect(FileTree.isDirectory(tree))
      #expect(try FileManager.default.attributesOfItem(atPath: tree)[.posixPermissions] as? Int == 0o700)
      try FileManager.default.createDirectory(atPath: tree + "/a/b", withIntermediateDirectories: true)
      #expect(FileManager.default.createFile(atPath: tree + "/a/b/c.json", contents: Data("{}".utf8)))
      #expect(FileManager.default.createFile(atPath: tree + "/file", contents: Data()))
      try FileManager.default.createSymbolicLink(atPath: tree + "/link", withDestinationPath: outside)
      try FileManager.default.createSymbolicLink(atPath: tree + "/a/dangling", withDestinationPath: tree + "/none")

      try FileTree.removeTree(tree)
      #expect(!FileTree.exists(tree))
      #expect(try String(contentsOfFile: outside + "/keep", encoding: .utf8) == "kept")  // the link was not followed
    }
  }

  @Test func removingNothingIsNoSuchFile() throws {
    try withTemporaryDirectory { parent in
      let error = #expect(throws: SystemError.self) { try FileTree.removeTree(parent.file("missing")) }
      #expect(error?.errorNumber == .noSuchFileOrDirectory)
      #expect(error?.path == parent.file("missing"))
      let missingParent = #expect(throws: SystemError.self) {
        try FileTree.makeTemporaryDirectory(prefix: "tree", in: parent.file("missing"))
      }
      #expect(missingParent?.errorNumber == .noSuchFileOrDirectory)
      #expect(missingParent?.path == parent.file("missing") + "/tree-XXXXXX")
    }
  }

  @Test func existsCountsADanglingLinkAndIsDirectoryFollowsLinks() throws {
    try withTemporaryDirectory { parent in
      #expect(!FileTree.exists(parent.file("missing")))
      try FileManager.default.createSymbolicLink(atPath: parent.file("dangling"), withDestinationPath: "missing")
      #expect(FileTree.exists(parent.file("dangling")))
      #expect(!FileTree.isDirectory(parent.file("dangling")))
      try FileManager.default.createSymbolicLink(atPath: parent.file("up"), withDestinationPath: ".")
      #expect(FileTree.isDirectory(parent.file("up")))
      #expect(FileManager.default.createFile(atPath: parent.file("file"), contents: Data()))
      #expect(!FileTree.isDirectory(parent.file("file")))
      try FileTree.removeFile(parent.file("file"))
      #expect(!FileTree.exists(parent.file("file")))
    }
  }

  @Test func changingToAMissingDirectoryIsATypedErrorAndChangesNothing() throws {
    let before = FileManager.default.currentDirectoryPath
    let error = #expect(throws: SystemError.self) { try ThisProcess.changeDirectory(to: "/ccsync-no-such-directory") }
    #expect(error?.description.hasPrefix("change directory '/ccsync-no-such-directory': ") == true)
    #expect(FileManager.default.currentDirectoryPath == before)
  }
}
