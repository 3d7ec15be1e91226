/// The example document `ccsync demo` works on: the content of `Config/example.json`, embedded
/// so that the demo needs no files (a test checks the two are equal, byte for byte).
enum DemoDocument {
  // A raw string: its text is the file's, backslashes included; the empty line before the
  // closing delimiter is the file's final newline.
  static let text = #"""
{
  "name": "ccsync demo service",
  "version": 3,
  "theme": "light",
  "fontSize": 13,
  "ratio": 1.50,
  "maxUploadBytes": 12345678901234567890,
  "enabled": true,
  "owner": null,
  "server": {
    "host": "127.0.0.1",
    "port": 8080,
    "tls": {
      "enabled": false,
      "certificate": "/etc/ccsync/cert.pem"
    },
    "timeouts": { "connect": 2.5, "read": 30, "idle": 120 }
  },
  "servers": [
    { "host": "alpha.internal", "port": 9001, "weight": 0.7 },
    { "host": "beta.internal", "port": 9002, "weight": 0.3 }
  ],
  "features": {
    "search": true,
    "uploads": false,
    "beta": { "rollout": 0.25, "groups": ["staff", "testers"] }
  },
  "greeting": "Grüße, \"friend\"\n",
  "counter": 0
}

"""#
}
