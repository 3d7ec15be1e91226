// `import CCSync` is the one import a user writes: the JSON layer's public types (JSONValue,
// the coder, paths, change sets) and the system layer's few public ones (SystemError,
// FileIdentity, FileStatus) come with it. Protected and ConditionLock are public only so that
// their `@inlinable` withLock is specialised in each module that calls it; a user cannot
// make one (their initialisers are the package's).
@_exported import CCSyncJSON
@_exported import CCSyncSystem
