import CCSyncEtcd

extension EtcdLocation {
  /// Puts `bytes` under this location's key unless a key of that name exists, in one
  /// compare-and-swap on an absent key: for a copy kept under a fresh name (the mirror's
  /// `KEY.conflict-TIMESTAMP`). Unlike a document's writes (``EtcdStore``) it puts no write
  /// stamp beside the key: nothing else writes that name, so no outcome needs settling.
  /// - Returns: whether the key was put (`false`: a key of that name was there).
  @discardableResult
  func putIfAbsent(_ bytes: [UInt8]) throws(StoreError) -> Bool {
    let client = try EtcdClients.shared.client(for: self).get()
    do throws(EtcdError) {
      if case .swapped = try client.compareAndSwap(Array(key.utf8), expecting: .absent, value: bytes) { return true }
      return false
    } catch {
      throw StoreError(error, name: description)
    }
  }
}
