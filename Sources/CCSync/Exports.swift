// `import CCSync` is the one import a user writes: the JSON layer's public types (JSONValue,
// the coder, paths, change sets) and the system layer's few public ones (SystemError,
// FileIdentity, FileStatus) come with it.
@_exported import CCSyncJSON
@_exported import CCSyncSystem
