import Testing
@testable import CCSync
@testable import CCSyncEtcd

/// The etcd client against real etcd members the tests start (``EtcdCluster``). The nested
/// suites in this folder run one test at a time: each test starts its own members, and
/// several clusters electing leaders every few milliseconds on two cores at once would make
/// the timing tests (a frozen member costs one attempt timeout) measure the machine.
@Suite(.serialized, .enabled(if: EtcdCluster.isInstalled, EtcdCluster.absentMessage))
struct EtcdTests {}

/// `text` as key or value bytes.
func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
