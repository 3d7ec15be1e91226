// TLS through the system's OpenSSL 3 (libssl.so.3), loaded at run time with dlopen: no
// OpenSSL headers at build time, and no libssl at all until a TLS connection is wanted.
// Used by CCSyncSystem's TLSContext and TLSSocket only (docs/ARCHITECTURE.md, "TLS").
#ifndef CCSYNC_TLS_H
#define CCSYNC_TLS_H
#include <stddef.h>

/// What a call came to.
enum {
  /// Done.
  CCSYNC_TLS_OK = 0,
  /// Call again with the same arguments once the socket is readable.
  CCSYNC_TLS_WANT_READ = 1,
  /// Call again with the same arguments once the socket is writable.
  CCSYNC_TLS_WANT_WRITE = 2,
  /// The peer ended the stream (close_notify, or the connection's end of stream).
  CCSYNC_TLS_CLOSED = 3,
  /// A socket call failed: ccsync_tls_last_errno() says why.
  CCSYNC_TLS_SYSTEM = 4,
  /// This side did not accept the peer's certificate (chain or name): the message says why.
  CCSYNC_TLS_VERIFY = 5,
  /// The peer ended the connection with a fatal alert (it refused this side's certificate,
  /// or the handshake): the message names the alert.
  CCSYNC_TLS_ALERT = 6,
  /// Another TLS failure (the peer does not speak TLS, no common protocol version).
  CCSYNC_TLS_PROTOCOL = 7,
  /// libssl could not be loaded, or lacks a function used here.
  CCSYNC_TLS_UNAVAILABLE = 8,
  /// The CA file, certificate or key could not be used.
  CCSYNC_TLS_SETTINGS = 9,
};

typedef struct ccsync_tls_library ccsync_tls_library;
typedef struct ccsync_tls_context ccsync_tls_context;
typedef struct ccsync_tls_session ccsync_tls_session;

/// The message of the calling thread's last failure (any status from CCSYNC_TLS_SYSTEM on).
const char *ccsync_tls_last_message(void);
/// The errno of the calling thread's last CCSYNC_TLS_SYSTEM.
int ccsync_tls_last_errno(void);

/// Loads the first of `names` (a NULL-terminated list) that dlopen finds and that is OpenSSL 3
/// or later. NULL on failure (the message names each library tried and why). Never freed.
ccsync_tls_library *ccsync_tls_library_open(const char *const *names);

/// A client context that verifies the server against `ca_file` (the system's default
/// locations when NULL) and presents `certificate_file` (a PEM chain) with `key_file` (PEM,
/// not encrypted) when both are given. TLS 1.2 or later. Thread-safe to share.
/// Returns CCSYNC_TLS_OK or CCSYNC_TLS_SETTINGS.
int ccsync_tls_context_new(
  ccsync_tls_library *library, const char *ca_file, const char *certificate_file, const char *key_file,
  ccsync_tls_context **context);
void ccsync_tls_context_free(ccsync_tls_context *context);

/// A client session on the connected, non-blocking socket `descriptor` (not owned: the
/// caller closes it), verifying that the server's certificate names `host` (an IP address or
/// a DNS name; a name is also sent as SNI). Writes go out with MSG_NOSIGNAL (no SIGPIPE).
/// Returns CCSYNC_TLS_OK or CCSYNC_TLS_PROTOCOL (out of memory).
int ccsync_tls_session_new(
  ccsync_tls_context *context, int descriptor, const char *host, ccsync_tls_session **session);
void ccsync_tls_session_free(ccsync_tls_session *session);

/// Runs the client handshake; CCSYNC_TLS_WANT_READ/WRITE until it is done.
int ccsync_tls_handshake(ccsync_tls_session *session);
/// Reads up to `capacity` bytes into `buffer`; `*count` is set on CCSYNC_TLS_OK.
int ccsync_tls_read(ccsync_tls_session *session, void *buffer, size_t capacity, size_t *count);
/// Writes all `length` bytes (at most INT_MAX); after WANT_READ/WRITE call again with the same
/// arguments. CCSYNC_TLS_OK only once every record went to the socket.
int ccsync_tls_write(ccsync_tls_session *session, const void *bytes, size_t length);
/// Without waiting: CCSYNC_TLS_WANT_READ when nothing is there to read (records that carry
/// no data, such as session tickets, are taken), CCSYNC_TLS_OK when data is, or the failure.
int ccsync_tls_poll_input(ccsync_tls_session *session);
/// Whether a fatal alert from the peer is waiting (read without blocking and without taking
/// data): after a failed write, whether the peer refused the connection first.
int ccsync_tls_peer_refused(ccsync_tls_session *session);
#endif
