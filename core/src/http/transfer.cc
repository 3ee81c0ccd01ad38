// core/src/http/transfer.cc — libcurl callbacks, per-handle options and the
// mapping of libcurl's codes to Outcomes.

#include "transfer.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <string_view>

#include "internal/ascii.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

size_t WriteBody(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  try {
    t->body.append(data, n);
  } catch (...) {
    t->failed_alloc = true;
    return 0;  // aborts the transfer with CURLE_WRITE_ERROR
  }
  return n;
}

// Called once per header line, status lines included; only the final
// response's fields are kept, so every status line (an interim 1xx, or the
// response after a proxy CONNECT) starts the list afresh. libcurl hands over
// whole lines only (a line cut by the connection's end never arrives), each
// with its CRLF or LF, and the empty line that ends a head as "\r\n" or
// "\n" (it synthesises one for HTTP/2 heads too). It also ends a head at any
// line that begins with CR (such as "\rX: 1\r\n"), and it accepts a status
// line that begins with "http/" in lower case as a response (HTTP/1.0 200):
// curl(1) 7.88 shows both on such bytes.
size_t WriteHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  std::string_view line(data, n);
  try {
    if (!line.empty() && line.back() == '\n' && (line.front() == '\r' || line.front() == '\n')) {
      t->head_complete = true;
    } else if ((!t->status_seen || t->head_complete) && StartsWithIgnoreCase(line, "HTTP/")) {
      // Only at a head's start: inside a head libcurl takes such a line for
      // a field. After a head's end it is the next response (the final one
      // after a 1xx, a redirect followed, the answer behind a proxy's
      // CONNECT); a trailer field cannot begin with "HTTP/" (libcurl fails
      // the chunked body).
      t->status_seen = true;
      t->head_complete = false;
      t->headers.clear();
      t->headers.reserve(16);  // a typical response's fields, without regrowth
    } else if (!line.empty() && (line.front() == ' ' || line.front() == '\t')) {
      // obs-fold (RFC 9112 section 5.2): a continuation of the previous value.
      std::string_view more = TrimOws(line);
      if (!t->headers.empty() && !more.empty()) {
        std::string& value = t->headers.back().second;
        if (!value.empty()) value += ' ';
        value.append(more.data(), more.size());
      }
    } else {
      size_t colon = line.find(':');
      if (colon != std::string_view::npos && colon > 0) {
        std::string_view name = line.substr(0, colon);
        std::string_view value = TrimOws(line.substr(colon + 1));
        t->headers.emplace_back(std::string(name), std::string(value));
      }
    }
  } catch (...) {
    t->failed_alloc = true;
    return 0;
  }
  return n;
}

bool SlistAppend(Slist& list, const std::string& line) {
  curl_slist* next = curl_slist_append(list.get(), line.c_str());
  if (next == nullptr) return false;
  list.release();
  list.reset(next);
  return true;
}

bool ProxyFromEnvironment() {
  for (const char* name : {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                           "no_proxy", "NO_PROXY"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] != '\0') return true;
  }
  return false;
}

void ConfigureHandle(CURL* easy, CURLSH* share, const HttpClientOptions& options,
                     bool proxy_from_env) {
  if (share != nullptr) curl_easy_setopt(easy, CURLOPT_SHARE, share);
#if LIBCURL_VERSION_NUM >= 0x075500  // 7.85.0
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(easy, CURLOPT_PROTOCOLS, static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(easy, CURLOPT_REDIR_PROTOCOLS,
                   static_cast<long>(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  curl_easy_setopt(easy, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYPEER, options.verify_tls ? 1L : 0L);
  curl_easy_setopt(easy, CURLOPT_SSL_VERIFYHOST, options.verify_tls ? 2L : 0L);
  if (!options.ca_bundle.empty()) curl_easy_setopt(easy, CURLOPT_CAINFO, options.ca_bundle.c_str());
  // With a proxy variable set, no CURLOPT_PROXY / CURLOPT_NOPROXY: libcurl
  // then honours http_proxy, https_proxy, all_proxy and no_proxy per
  // transfer. With none set when the client was made, "no proxy" is said
  // explicitly, which spares libcurl five getenv() scans per transfer (the
  // environment is then read once, at creation, as httpx does).
  if (!proxy_from_env) {
    curl_easy_setopt(easy, CURLOPT_PROXY, "");
    curl_easy_setopt(easy, CURLOPT_NOPROXY, "");
  }
  curl_easy_setopt(easy, CURLOPT_USERAGENT, options.user_agent.c_str());
  curl_easy_setopt(easy, CURLOPT_TCP_KEEPALIVE, 1L);
  // No CURLOPT_ACCEPT_ENCODING: bodies are returned exactly as received.
  curl_easy_setopt(easy, CURLOPT_WRITEFUNCTION, &WriteBody);
  curl_easy_setopt(easy, CURLOPT_HEADERFUNCTION, &WriteHeader);
}

void ScrubHandle(CURL* easy) {
  curl_easy_setopt(easy, CURLOPT_WRITEDATA, static_cast<void*>(nullptr));
  curl_easy_setopt(easy, CURLOPT_HEADERDATA, static_cast<void*>(nullptr));
  curl_easy_setopt(easy, CURLOPT_HTTPHEADER, static_cast<curl_slist*>(nullptr));
  curl_easy_setopt(easy, CURLOPT_CURLU, static_cast<CURLU*>(nullptr));
  curl_easy_setopt(easy, CURLOPT_POSTFIELDS, static_cast<char*>(nullptr));
  curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(-1));
  curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, static_cast<char*>(nullptr));
  curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 1L);
  curl_easy_setopt(easy, CURLOPT_XFERINFODATA, static_cast<void*>(nullptr));
}

Outcome TransportOutcome(CURLcode code, bool connected, bool request_sent) {
  ErrorKind kind = ErrorKind::kTransport;
  bool sent = true;
  switch (code) {
    case CURLE_COULDNT_CONNECT:
      kind = ErrorKind::kConnectionRefused;
      sent = false;
      break;
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      kind = ErrorKind::kDnsFailure;
      sent = false;
      break;
    case CURLE_OPERATION_TIMEDOUT:
      if (!connected && !request_sent) {
        kind = ErrorKind::kConnectTimeout;
        sent = false;
      } else {
        kind = ErrorKind::kTimeout;
        // Connected (perhaps still in the TLS handshake) but no byte of the
        // request written: replaying cannot duplicate anything.
        sent = request_sent;
      }
      break;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
      // GOT_NOTHING: the connection closed before a whole status line (a
      // zero-length reply, or one cut inside its first line).
      kind = ErrorKind::kConnectionReset;
      break;
    case CURLE_PARTIAL_FILE:
      // Fewer body bytes than Content-Length, or a chunked body (or its
      // trailer) cut short; Exchange also maps a head that never ended here.
      kind = ErrorKind::kTruncated;
      break;
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
    case CURLE_USE_SSL_FAILED:
      kind = ErrorKind::kTlsError;
      // A failed handshake never carried the HTTP request.
      sent = request_sent;
      break;
    case CURLE_TOO_MANY_REDIRECTS:
      // A redirect loop does not heal by trying again.
      kind = ErrorKind::kTerminal;
      break;
    case CURLE_OUT_OF_MEMORY:
      // libcurl could not build or hold the request (e.g. a head over its
      // buffer limit): the same request fails the same way again.
      kind = ErrorKind::kTerminal;
      sent = request_sent;
      break;
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      if (request_sent) {
        // The URL was checked before sending: what failed is the reply (an
        // HTTP/0.9 or non-HTTP answer) or a redirect's Location (another
        // scheme, or malformed). The same request meets the same answer.
        kind = ErrorKind::kTerminal;
        sent = true;
      } else {
        kind = ErrorKind::kInvalidUrl;
        sent = false;
      }
      break;
    default:
      kind = ErrorKind::kTransport;
      break;
  }
  Outcome outcome = Outcome::Transport(kind);
  outcome.request_sent = sent;
  return outcome;
}

long ToCurlMillis(Duration d) {
  using Ms = std::chrono::milliseconds;
  if (d <= Duration::zero()) return 1;
  // Duration is int64 nanoseconds, so the milliseconds always fit in int64.
  const Ms::rep ms = std::chrono::ceil<Ms>(d).count();
  if (ms < 1) return 1;
  if (ms > static_cast<Ms::rep>(std::numeric_limits<long>::max())) {
    return std::numeric_limits<long>::max();
  }
  return static_cast<long>(ms);
}

std::string ErrorPhrase(ErrorKind kind) {
  std::string s = ErrorKindName(kind);
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

}  // namespace internal
}  // namespace v0
}  // namespace mulligan
