// TLS through the system's OpenSSL 3, loaded at run time (see CCSyncTLS.h). The few OpenSSL
// functions used are declared here with opaque pointers and looked up with dlsym, so building
// needs no OpenSSL headers; the constants are OpenSSL 3's stable ABI values.
#include "CCSyncTLS.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

// OpenSSL's constants (openssl/ssl.h, bio.h, err.h, x509_vfy.h of OpenSSL 3).
enum {
  SSL_ERROR_SSL = 1, SSL_ERROR_WANT_READ = 2, SSL_ERROR_WANT_WRITE = 3, SSL_ERROR_SYSCALL = 5,
  SSL_ERROR_ZERO_RETURN = 6,
  SSL_VERIFY_PEER = 1, SSL_FILETYPE_PEM = 1,
  SSL_CTRL_MODE = 33, SSL_CTRL_SET_TLSEXT_HOSTNAME = 55, SSL_CTRL_SET_MIN_PROTO_VERSION = 123,
  SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER = 2, TLSEXT_NAMETYPE_host_name = 0, TLS1_2_VERSION = 0x0303,
  BIO_TYPE_SOURCE_SINK = 0x0400, BIO_FLAGS_READ = 1, BIO_FLAGS_WRITE = 2, BIO_FLAGS_RWS = 7,
  BIO_FLAGS_SHOULD_RETRY = 8, BIO_CTRL_FLUSH = 11,
  ERR_LIB_SSL = 20, SSL_AD_REASON_OFFSET = 1000, SSL_R_UNEXPECTED_EOF_WHILE_READING = 294,
  X509_V_OK = 0,
};

typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_st SSL;
typedef struct ssl_method_st SSL_METHOD;
typedef struct bio_st BIO;
typedef struct bio_method_st BIO_METHOD;
typedef struct X509_VERIFY_PARAM_st X509_VERIFY_PARAM;

// The functions, as OpenSSL 3 declares them; each is a field of the library below.
#define CCSYNC_TLS_FUNCTIONS(F) \
  F(unsigned long, OpenSSL_version_num, (void)) \
  F(const char *, OpenSSL_version, (int)) \
  F(const SSL_METHOD *, TLS_client_method, (void)) \
  F(SSL_CTX *, SSL_CTX_new, (const SSL_METHOD *)) \
  F(void, SSL_CTX_free, (SSL_CTX *)) \
  F(long, SSL_CTX_ctrl, (SSL_CTX *, int, long, void *)) \
  F(void, SSL_CTX_set_verify, (SSL_CTX *, int, void *)) \
  F(int, SSL_CTX_load_verify_locations, (SSL_CTX *, const char *, const char *)) \
  F(int, SSL_CTX_set_default_verify_paths, (SSL_CTX *)) \
  F(void, SSL_CTX_set_default_passwd_cb, (SSL_CTX *, int (*)(char *, int, int, void *))) \
  F(int, SSL_CTX_use_certificate_chain_file, (SSL_CTX *, const char *)) \
  F(int, SSL_CTX_use_PrivateKey_file, (SSL_CTX *, const char *, int)) \
  F(int, SSL_CTX_check_private_key, (const SSL_CTX *)) \
  F(SSL *, SSL_new, (SSL_CTX *)) \
  F(void, SSL_free, (SSL *)) \
  F(long, SSL_ctrl, (SSL *, int, long, void *)) \
  F(int, SSL_set1_host, (SSL *, const char *)) \
  F(X509_VERIFY_PARAM *, SSL_get0_param, (SSL *)) \
  F(int, X509_VERIFY_PARAM_set1_ip_asc, (X509_VERIFY_PARAM *, const char *)) \
  F(void, SSL_set_bio, (SSL *, BIO *, BIO *)) \
  F(int, SSL_connect, (SSL *)) \
  F(int, SSL_read, (SSL *, void *, int)) \
  F(int, SSL_peek, (SSL *, void *, int)) \
  F(int, SSL_write, (SSL *, const void *, int)) \
  F(int, SSL_pending, (const SSL *)) \
  F(int, SSL_get_error, (const SSL *, int)) \
  F(long, SSL_get_verify_result, (const SSL *)) \
  F(const char *, X509_verify_cert_error_string, (long)) \
  F(unsigned long, ERR_get_error, (void)) \
  F(void, ERR_clear_error, (void)) \
  F(const char *, ERR_reason_error_string, (unsigned long)) \
  F(void, ERR_error_string_n, (unsigned long, char *, size_t)) \
  F(int, BIO_get_new_index, (void)) \
  F(BIO_METHOD *, BIO_meth_new, (int, const char *)) \
  F(int, BIO_meth_set_write, (BIO_METHOD *, int (*)(BIO *, const char *, int))) \
  F(int, BIO_meth_set_read, (BIO_METHOD *, int (*)(BIO *, char *, int))) \
  F(int, BIO_meth_set_ctrl, (BIO_METHOD *, long (*)(BIO *, int, long, void *))) \
  F(BIO *, BIO_new, (const BIO_METHOD *)) \
  F(void, BIO_set_data, (BIO *, void *)) \
  F(void *, BIO_get_data, (BIO *)) \
  F(void, BIO_set_init, (BIO *, int)) \
  F(void, BIO_set_flags, (BIO *, int)) \
  F(void, BIO_clear_flags, (BIO *, int))

struct ccsync_tls_library {
#define CCSYNC_TLS_FIELD(result, name, parameters) result(*name) parameters;
  CCSYNC_TLS_FUNCTIONS(CCSYNC_TLS_FIELD)
#undef CCSYNC_TLS_FIELD
  /// The socket BIO that writes with MSG_NOSIGNAL (OpenSSL's own would raise SIGPIPE).
  BIO_METHOD *socket_method;
};

struct ccsync_tls_context {
  ccsync_tls_library *library;
  SSL_CTX *context;
};

struct ccsync_tls_session {
  ccsync_tls_library *library;
  SSL *ssl;
  int descriptor;
  /// The errno of the socket call that failed last.
  int socket_errno;
};

static _Thread_local char last_message[512];
static _Thread_local int last_errno;

const char *ccsync_tls_last_message(void) { return last_message; }
int ccsync_tls_last_errno(void) { return last_errno; }

/// Sets the thread's message and returns `status`.
static int fail(int status, const char *format, ...) __attribute__((format(printf, 2, 3)));
static int fail(int status, const char *format, ...) {
  va_list arguments;
  va_start(arguments, format);
  vsnprintf(last_message, sizeof last_message, format, arguments);
  va_end(arguments);
  return status;
}

/// The reason of OpenSSL's oldest queued error (the cause; later ones say where it surfaced),
/// e.g. "tlsv13 alert certificate required"; the queue is emptied. `*code` gets its code.
static const char *take_error(ccsync_tls_library *library, unsigned long *code, char *buffer, size_t capacity) {
  unsigned long first = library->ERR_get_error();
  *code = first;
  library->ERR_clear_error();
  if (first == 0) return "unknown error";
  if ((first & 0x80000000UL) != 0) return strerror((int)(first & 0x7FFFFFFFUL));  // ERR_SYSTEM_FLAG: an errno
  const char *reason = library->ERR_reason_error_string(first);
  if (reason != NULL) return reason;
  library->ERR_error_string_n(first, buffer, capacity);
  return buffer;
}

// MARK: The socket BIO

/// The library whose functions the BIO callbacks call (they are given only the BIO). Every
/// library opened resolves the same libssl, so the first one serves all.
static ccsync_tls_library *_Atomic socket_library;

/// Writes to the session's socket with MSG_NOSIGNAL: a peer that went away gives EPIPE, not
/// a SIGPIPE that would end the process.
static int socket_write(BIO *bio, const char *bytes, int length) {
  ccsync_tls_library *library = socket_library;
  ccsync_tls_session *session = library->BIO_get_data(bio);
  library->BIO_clear_flags(bio, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
  ssize_t written;
  do written = send(session->descriptor, bytes, (size_t)length, MSG_NOSIGNAL);
  while (written < 0 && errno == EINTR);
  if (written < 0) {
    session->socket_errno = errno;
    if (errno == EAGAIN || errno == EWOULDBLOCK) library->BIO_set_flags(bio, BIO_FLAGS_WRITE | BIO_FLAGS_SHOULD_RETRY);
  }
  return (int)written;
}

/// Reads from the session's socket; 0 at its end of stream.
static int socket_read(BIO *bio, char *buffer, int capacity) {
  ccsync_tls_library *library = socket_library;
  ccsync_tls_session *session = library->BIO_get_data(bio);
  library->BIO_clear_flags(bio, BIO_FLAGS_RWS | BIO_FLAGS_SHOULD_RETRY);
  ssize_t count;
  do count = recv(session->descriptor, buffer, (size_t)capacity, 0);
  while (count < 0 && errno == EINTR);
  if (count < 0) {
    session->socket_errno = errno;
    if (errno == EAGAIN || errno == EWOULDBLOCK) library->BIO_set_flags(bio, BIO_FLAGS_READ | BIO_FLAGS_SHOULD_RETRY);
  }
  return (int)count;
}

/// Only a flush is asked of a socket BIO that the record layer needs; it has nothing to do.
static long socket_control(BIO *bio, int command, long number, void *pointer) {
  (void)bio, (void)number, (void)pointer;
  return command == BIO_CTRL_FLUSH ? 1 : 0;
}

static int create_socket_method(ccsync_tls_library *library) {
  int index = library->BIO_get_new_index();
  if (index == -1) return 0;
  BIO_METHOD *method = library->BIO_meth_new(index | BIO_TYPE_SOURCE_SINK, "ccsync socket");
  if (method == NULL) return 0;
  library->BIO_meth_set_write(method, socket_write);
  library->BIO_meth_set_read(method, socket_read);
  library->BIO_meth_set_ctrl(method, socket_control);
  library->socket_method = method;
  ccsync_tls_library *expected = NULL;
  atomic_compare_exchange_strong(&socket_library, &expected, library);
  return 1;
}

ccsync_tls_library *ccsync_tls_library_open(const char *const *names) {
  char tried[sizeof last_message] = "";
  for (const char *const *name = names; *name != NULL; name++) {
    void *handle = dlopen(*name, RTLD_NOW | RTLD_LOCAL);
    size_t used = strlen(tried);
    const char *separator = used == 0 ? "" : "; ";
    if (handle == NULL) {
      snprintf(tried + used, sizeof tried - used, "%s%s", separator, dlerror());
      continue;
    }
    // OpenSSL frees its global state in an atexit handler unless told not to, and a thread
    // still in a handshake when the process exits (a racing dial that the call which exits no
    // longer waits for) would then take locks already freed: told first, before any call
    // initialises it.
    int (*init_ssl)(uint64_t, const void *) = (int (*)(uint64_t, const void *))dlsym(handle, "OPENSSL_init_ssl");
    if (init_ssl != NULL) init_ssl(0x00080000ULL /* OPENSSL_INIT_NO_ATEXIT */, NULL);
    ccsync_tls_library *library = calloc(1, sizeof *library);
    if (library == NULL) {
      dlclose(handle);
      return NULL;
    }
    const char *missing = NULL;
#define CCSYNC_TLS_LOOKUP(result, function, parameters) \
    if (missing == NULL) { \
      *(void **)&library->function = dlsym(handle, #function); \
      if (library->function == NULL) missing = #function; \
    }
    CCSYNC_TLS_FUNCTIONS(CCSYNC_TLS_LOOKUP)
#undef CCSYNC_TLS_LOOKUP
    if (missing == NULL && library->OpenSSL_version_num() < 0x30000000UL) {
      snprintf(tried + used, sizeof tried - used, "%s%s: %s, not OpenSSL 3", separator, *name,
               library->OpenSSL_version(0));
    } else if (missing != NULL) {
      snprintf(tried + used, sizeof tried - used, "%s%s: no function %s", separator, *name, missing);
    } else if (create_socket_method(library)) {
      return library;
    } else {
      snprintf(tried + used, sizeof tried - used, "%s%s: cannot make a socket BIO", separator, *name);
    }
    free(library);
    dlclose(handle);
  }
  fail(CCSYNC_TLS_UNAVAILABLE, "cannot load OpenSSL 3 (%s)", tried);
  return NULL;
}


// MARK: Contexts

/// Refuses to ask for a key's passphrase (OpenSSL would prompt on the terminal).
static int no_passphrase(char *buffer, int size, int writing, void *data) {
  (void)buffer, (void)size, (void)writing, (void)data;
  return 0;
}

int ccsync_tls_context_new(
  ccsync_tls_library *library, const char *ca_file, const char *certificate_file, const char *key_file,
  ccsync_tls_context **result) {
  char buffer[256];
  unsigned long code;
  *result = NULL;
  library->ERR_clear_error();
  SSL_CTX *context = library->SSL_CTX_new(library->TLS_client_method());
  if (context == NULL) {
    return fail(CCSYNC_TLS_SETTINGS, "cannot make a TLS context: %s", take_error(library, &code, buffer, sizeof buffer));
  }
  int status = CCSYNC_TLS_OK;
  library->SSL_CTX_set_verify(context, SSL_VERIFY_PEER, NULL);
  library->SSL_CTX_set_default_passwd_cb(context, no_passphrase);
  library->SSL_CTX_ctrl(context, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
  library->SSL_CTX_ctrl(context, SSL_CTRL_MODE, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, NULL);
  if (ca_file != NULL) {
    if (library->SSL_CTX_load_verify_locations(context, ca_file, NULL) != 1) {
      status = fail(CCSYNC_TLS_SETTINGS, "cannot use the CA file '%s': %s", ca_file,
                    take_error(library, &code, buffer, sizeof buffer));
    }
  } else if (library->SSL_CTX_set_default_verify_paths(context) != 1) {
    status = fail(CCSYNC_TLS_SETTINGS, "cannot use the system's CA certificates: %s",
                  take_error(library, &code, buffer, sizeof buffer));
  }
  if (status == CCSYNC_TLS_OK && (certificate_file != NULL || key_file != NULL)) {
    if (certificate_file == NULL || key_file == NULL) {
      status = fail(CCSYNC_TLS_SETTINGS, "a client certificate needs its key and a key its certificate (%s given alone)",
                    certificate_file != NULL ? "certificate" : "key");
    } else if (library->SSL_CTX_use_certificate_chain_file(context, certificate_file) != 1) {
      status = fail(CCSYNC_TLS_SETTINGS, "cannot use the certificate file '%s': %s", certificate_file,
                    take_error(library, &code, buffer, sizeof buffer));
    } else if (library->SSL_CTX_use_PrivateKey_file(context, key_file, SSL_FILETYPE_PEM) != 1) {
      status = fail(CCSYNC_TLS_SETTINGS, "cannot use the key file '%s' (PEM, not encrypted): %s", key_file,
                    take_error(library, &code, buffer, sizeof buffer));
    } else if (library->SSL_CTX_check_private_key(context) != 1) {
      status = fail(CCSYNC_TLS_SETTINGS, "the key '%s' does not match the certificate '%s': %s", key_file,
                    certificate_file, take_error(library, &code, buffer, sizeof buffer));
    }
  }
  if (status != CCSYNC_TLS_OK) {
    library->SSL_CTX_free(context);
    return status;
  }
  ccsync_tls_context *made = malloc(sizeof *made);
  if (made == NULL) {
    library->SSL_CTX_free(context);
    return fail(CCSYNC_TLS_SETTINGS, "cannot make a TLS context: out of memory");
  }
  made->library = library;
  made->context = context;
  *result = made;
  return CCSYNC_TLS_OK;
}

void ccsync_tls_context_free(ccsync_tls_context *context) {
  if (context == NULL) return;
  context->library->SSL_CTX_free(context->context);
  free(context);
}

// MARK: Sessions

int ccsync_tls_session_new(
  ccsync_tls_context *context, int descriptor, const char *host, ccsync_tls_session **result) {
  ccsync_tls_library *library = context->library;
  char buffer[256];
  unsigned long code;
  *result = NULL;
  library->ERR_clear_error();
  ccsync_tls_session *session = calloc(1, sizeof *session);
  if (session == NULL) return fail(CCSYNC_TLS_PROTOCOL, "cannot start a TLS session: out of memory");
  session->library = library;
  session->descriptor = descriptor;
  session->ssl = library->SSL_new(context->context);
  BIO *bio = session->ssl == NULL ? NULL : library->BIO_new(library->socket_method);
  if (bio == NULL) {
    int status = fail(CCSYNC_TLS_PROTOCOL, "cannot start a TLS session: %s", take_error(library, &code, buffer, sizeof buffer));
    ccsync_tls_session_free(session);
    return status;
  }
  library->BIO_set_data(bio, session);
  library->BIO_set_init(bio, 1);
  library->SSL_set_bio(session->ssl, bio, bio);  // the session owns the BIO from here on
  // The certificate must name the host: an IP address among its IP subjectAltNames, a name
  // among its DNS ones (wildcards as RFC 6125 allows). SNI is for names only (RFC 6066).
  unsigned char address[16];
  int named;
  if (inet_pton(AF_INET, host, address) == 1 || inet_pton(AF_INET6, host, address) == 1) {
    named = library->X509_VERIFY_PARAM_set1_ip_asc(library->SSL_get0_param(session->ssl), host) == 1;
  } else {
    named = library->SSL_set1_host(session->ssl, host) == 1
      && library->SSL_ctrl(session->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, (void *)host) == 1;
  }
  if (!named) {
    int status = fail(CCSYNC_TLS_PROTOCOL, "cannot check the server's name '%s': %s", host,
                      take_error(library, &code, buffer, sizeof buffer));
    ccsync_tls_session_free(session);
    return status;
  }
  *result = session;
  return CCSYNC_TLS_OK;
}

void ccsync_tls_session_free(ccsync_tls_session *session) {
  if (session == NULL) return;
  if (session->ssl != NULL) session->library->SSL_free(session->ssl);
  free(session);
}

/// What a failed call (`returned` <= 0) means; sets the thread's message. In a handshake, a
/// certificate this side did not accept is told apart from the other failures.
static int classify(ccsync_tls_session *session, int returned, int handshake) {
  ccsync_tls_library *library = session->library;
  int kind = library->SSL_get_error(session->ssl, returned);
  if (kind == SSL_ERROR_WANT_READ || kind == SSL_ERROR_WANT_WRITE || kind == SSL_ERROR_ZERO_RETURN) {
    library->ERR_clear_error();
    return kind == SSL_ERROR_WANT_READ ? CCSYNC_TLS_WANT_READ
      : kind == SSL_ERROR_WANT_WRITE ? CCSYNC_TLS_WANT_WRITE : CCSYNC_TLS_CLOSED;
  }
  long verified = handshake ? library->SSL_get_verify_result(session->ssl) : X509_V_OK;
  char buffer[256];
  unsigned long code;
  const char *reason = take_error(library, &code, buffer, sizeof buffer);
  if (verified != X509_V_OK) {
    return fail(CCSYNC_TLS_VERIFY, "certificate verify failed: %s", library->X509_verify_cert_error_string(verified));
  }
  if (code == 0) {
    // No TLS error: the socket failed, or (no errno) reached its end of stream.
    if (kind != SSL_ERROR_SYSCALL || session->socket_errno == 0) return CCSYNC_TLS_CLOSED;
    last_errno = session->socket_errno;
    return fail(CCSYNC_TLS_SYSTEM, "%s", strerror(last_errno));
  }
  if ((code & 0x80000000UL) != 0) {  // ERR_SYSTEM_FLAG: the reason is an errno
    last_errno = (int)(code & 0x7FFFFFFFUL);
    return fail(CCSYNC_TLS_SYSTEM, "%s", strerror(last_errno));
  }
  unsigned long library_code = (code >> 23) & 0xFF, reason_code = code & 0x7FFFFFUL;
  if (library_code == ERR_LIB_SSL && reason_code == SSL_R_UNEXPECTED_EOF_WHILE_READING) return CCSYNC_TLS_CLOSED;
  if (library_code == ERR_LIB_SSL && reason_code >= SSL_AD_REASON_OFFSET && reason_code < SSL_AD_REASON_OFFSET + 256) {
    return fail(CCSYNC_TLS_ALERT, "%s", reason);
  }
  return fail(CCSYNC_TLS_PROTOCOL, "%s", reason);
}

int ccsync_tls_handshake(ccsync_tls_session *session) {
  session->library->ERR_clear_error();
  session->socket_errno = 0;
  int returned = session->library->SSL_connect(session->ssl);
  return returned == 1 ? CCSYNC_TLS_OK : classify(session, returned, 1);
}

int ccsync_tls_read(ccsync_tls_session *session, void *buffer, size_t capacity, size_t *count) {
  session->library->ERR_clear_error();
  session->socket_errno = 0;
  int returned = session->library->SSL_read(session->ssl, buffer, capacity > INT_MAX ? INT_MAX : (int)capacity);
  if (returned > 0) {
    *count = (size_t)returned;
    return CCSYNC_TLS_OK;
  }
  return classify(session, returned, 0);
}

int ccsync_tls_write(ccsync_tls_session *session, const void *bytes, size_t length) {
  if (length == 0) return CCSYNC_TLS_OK;
  if (length > INT_MAX) return fail(CCSYNC_TLS_PROTOCOL, "a write of more than %d bytes", INT_MAX);
  session->library->ERR_clear_error();
  session->socket_errno = 0;
  int returned = session->library->SSL_write(session->ssl, bytes, (int)length);
  // Without SSL_MODE_ENABLE_PARTIAL_WRITE a success is the whole buffer.
  return returned > 0 ? CCSYNC_TLS_OK : classify(session, returned, 0);
}

int ccsync_tls_poll_input(ccsync_tls_session *session) {
  if (session->library->SSL_pending(session->ssl) > 0) return CCSYNC_TLS_OK;
  session->library->ERR_clear_error();
  session->socket_errno = 0;
  unsigned char byte;
  int returned = session->library->SSL_peek(session->ssl, &byte, 1);
  return returned > 0 ? CCSYNC_TLS_OK : classify(session, returned, 0);
}

int ccsync_tls_peer_refused(ccsync_tls_session *session) {
  return ccsync_tls_poll_input(session) == CCSYNC_TLS_ALERT;
}
