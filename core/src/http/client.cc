// core/src/http/client.cc — HttpClient: the retry engine around libcurl.
//
// One blocking loop per Send() (DESIGN.md section 1): validate the request,
// begin a RetrySession, then for each attempt run one libcurl transfer, turn
// what happened into an Outcome, and let the session decide; the waits go
// through the injected Clock, so a FakeClock runs a whole chain instantly.
//
// Connections: every easy handle is attached to one CURLSH that shares the
// connection cache and the DNS cache, and finished easy handles go back to a
// pool, so a keep-alive connection opened by one attempt (or call, or thread)
// is reused by the next. A handle gets the client's fixed options once, when
// it is made (ConfigureHandle); each attempt sets only what belongs to the
// call (Call::Setup sets every one of those, every time), and a handle going
// back to its pool drops its pointers into the finished call (ScrubHandle).
// That saves a curl_easy_reset() and a dozen option copies per request.

#include "mulligan/http/client.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "curl_global.h"
#include "internal/ascii.h"
#include "mulligan/telemetry/metrics.h"
#include "mulligan/retry/retry_after.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

bool EnsureCurlGlobalInit() {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] { ok = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK; });
  return ok;
}

}  // namespace internal

namespace {

// ---------------------------------------------------------------------------
// Small helpers

using internal::EqualsIgnoreCase;
using internal::IsToken;
using internal::StartsWithIgnoreCase;
using internal::TrimOws;

// A field value may hold anything but CR, LF and NUL (which would split or
// truncate the header line libcurl writes).
bool IsSafeFieldValue(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) == std::string_view::npos;
}

// Printable ASCII, non-empty, no leading or trailing space.
bool IsValidIdempotencyKey(std::string_view key) {
  if (key.empty() || key.front() == ' ' || key.back() == ' ') return false;
  for (char c : key) {
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

// Milliseconds for a libcurl option: rounded up, at least 1 (0 would mean
// "no timeout" to libcurl), at most LONG_MAX.
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

// "connection_refused" -> "connection refused".
std::string ErrorPhrase(ErrorKind kind) {
  std::string s = ErrorKindName(kind);
  std::replace(s.begin(), s.end(), '_', ' ');
  return s;
}

bool FillRandom(unsigned char* out, size_t size) {
  size_t got = 0;
  while (got < size) {
    ssize_t n = getrandom(out + got, size - got, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      break;
    }
    got += static_cast<size_t>(n);
  }
  if (got == size) return true;
  // getrandom(2) unavailable (ENOSYS on very old kernels, or a seccomp
  // filter): fall back to the same CSPRNG through /dev/urandom.
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  got = 0;
  while (got < size) {
    ssize_t n = read(fd, out + got, size - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  return got == size;
}

// ---------------------------------------------------------------------------
// One attempt's transfer state, filled by the libcurl callbacks.

struct Transfer {
  HttpHeaders headers;
  std::string body;
  bool failed_alloc = false;
};

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
// response after a proxy CONNECT) starts the list afresh.
size_t WriteHeader(char* data, size_t size, size_t nmemb, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t n = size * nmemb;
  std::string_view line(data, n);
  try {
    if (line.size() >= 5 && line.substr(0, 5) == "HTTP/") {
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

// RAII for a curl_slist.
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

bool SlistAppend(Slist& list, const std::string& line) {
  curl_slist* next = curl_slist_append(list.get(), line.c_str());
  if (next == nullptr) return false;
  list.release();
  list.reset(next);
  return true;
}

// True when any variable libcurl takes a proxy from is set (non-empty):
// http_proxy, https_proxy / HTTPS_PROXY, all_proxy / ALL_PROXY, no_proxy /
// NO_PROXY (libcurl ignores HTTP_PROXY, as a CGI variable could set it).
bool ProxyFromEnvironment() {
  for (const char* name : {"http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY",
                           "no_proxy", "NO_PROXY"}) {
    const char* value = std::getenv(name);
    if (value != nullptr && value[0] != '\0') return true;
  }
  return false;
}

// Sets the options that are the same for every request of a client, once
// per easy handle, right after curl_easy_init(). `share` may be null.
// `proxy_from_env`: ProxyFromEnvironment() when the client was made.
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

// Drops every pointer a finished call left in `easy` (its buffers, header
// list, body and error buffer), so that nothing points into freed memory
// while the handle waits in a pool. Live connections and the share stay.
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

// Maps a failed transfer to an Outcome. `connected` and `request_sent` come
// from CURLINFO_CONNECT_TIME_T and CURLINFO_REQUEST_SIZE.
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
    case CURLE_PARTIAL_FILE:
      kind = ErrorKind::kConnectionReset;
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

// A URL parsed by libcurl, for CURLOPT_CURLU. Shared: a thread's last URL is
// kept for its next call, and each call holds the one it sends to.
using ParsedUrl = std::shared_ptr<CURLU>;

// Validates everything about `request` that can be checked before sending;
// on success `*parsed_url` is its URL, parsed.
Status ValidateRequest(const HttpRequest& request, ParsedUrl* parsed_url) {
  if (!IsToken(request.method)) {
    return InvalidArgumentError("invalid HTTP method \"" + request.method +
                                "\": must be a non-empty token");
  }
  const std::string& url = request.url;
  if (url.empty()) return InvalidArgumentError("empty URL");
  if (!StartsWithIgnoreCase(url, "http://") && !StartsWithIgnoreCase(url, "https://")) {
    return InvalidArgumentError("invalid URL \"" + url + "\": must start with http:// or https://");
  }
  for (char c : url) {
    auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return InvalidArgumentError("invalid URL \"" + url +
                                  "\": contains a space or control character");
    }
  }
  // Parsed once here and handed to libcurl as a CURLU (CURLOPT_CURLU), so
  // libcurl does not parse the URL string again for every transfer (about
  // a seventh of a small GET's instructions in libcurl 7.88). Callers often
  // send to the same URL again and again: the last URL this thread parsed
  // is kept, and shared with the calls that use it.
  thread_local std::string last_url;
  thread_local ParsedUrl last_parsed;
  if (url != last_url || !last_parsed) {
    ParsedUrl parsed(curl_url(), &curl_url_cleanup);
    if (!parsed) return InternalError("curl_url() failed");
    CURLUcode rc = curl_url_set(parsed.get(), CURLUPART_URL, url.c_str(), 0);
    char* host = nullptr;
    if (rc == CURLUE_OK) rc = curl_url_get(parsed.get(), CURLUPART_HOST, &host, 0);
    const bool has_host = rc == CURLUE_OK && host != nullptr && host[0] != '\0';
    curl_free(host);
    if (!has_host) {
      return InvalidArgumentError("invalid URL \"" + url + "\": " +
                                  (rc == CURLUE_OK ? std::string("no host")
                                                   : std::string(curl_url_strerror(rc))));
    }
    last_parsed = std::move(parsed);
    last_url = url;
  }
  *parsed_url = last_parsed;
  for (const auto& [name, value] : request.headers) {
    if (!IsToken(name)) {
      return InvalidArgumentError("invalid header name \"" + name + "\": must be a token");
    }
    if (IsClientManagedHeader(name)) {
      return InvalidArgumentError("header \"" + name +
                                  "\" is set by the client itself and must not be given "
                                  "(Content-Length, Transfer-Encoding, TE and Upgrade are "
                                  "managed by the client)");
    }
    if (!IsSafeFieldValue(value)) {
      return InvalidArgumentError("invalid value of header \"" + name +
                                  "\": contains CR, LF or NUL");
    }
    if (EqualsIgnoreCase(name, "Idempotency-Key") && !IsValidIdempotencyKey(value)) {
      return InvalidArgumentError(
          "invalid Idempotency-Key header: must be non-empty printable ASCII");
    }
  }
  if (request.idempotency_key) {
    const std::string& key = *request.idempotency_key;
    if (!IsValidIdempotencyKey(key)) {
      return InvalidArgumentError(
          "invalid idempotency key: must be non-empty printable ASCII without leading or "
          "trailing spaces");
    }
    std::optional<std::string> in_headers = FindHeader(request.headers, "Idempotency-Key");
    if (in_headers && *in_headers != key) {
      return InvalidArgumentError("idempotency_key \"" + key +
                                  "\" conflicts with the Idempotency-Key header \"" +
                                  *in_headers + "\"");
    }
  }
  return OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------
// Free functions

std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name) {
  for (const auto& field : headers) {
    if (EqualsIgnoreCase(field.first, name)) return field.second;
  }
  return std::nullopt;
}

bool IsClientManagedHeader(std::string_view name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding") ||
         EqualsIgnoreCase(name, "TE") || EqualsIgnoreCase(name, "Upgrade");
}

bool IsIdempotentMethod(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS" || method == "TRACE" ||
         method == "PUT" || method == "DELETE";
}

std::string NewIdempotencyKey() {
  std::array<unsigned char, 16> b{};
  if (!FillRandom(b.data(), b.size())) {
    // No OS randomness at all: std::random_device is the last resort (it is
    // the same CSPRNG on glibc when that works at all).
    std::random_device rd;
    for (auto& byte : b) byte = static_cast<unsigned char>(rd());
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);  // version 4
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);  // variant 10
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(36);
  for (size_t i = 0; i < b.size(); ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 0x0f];
  }
  return out;
}

// ---------------------------------------------------------------------------
// The shared connection cache and the pool of easy handles.

namespace {

// One CURLSH (connection and DNS caches, locked with a mutex per lock_data)
// and the easy handles attached to it.
// Thread-safety: Acquire and Release are thread-safe; the share's caches are
// locked by libcurl through LockShare/UnlockShare.
// Not copyable or movable: the share's lock callbacks point at this object.
class CurlHandlePool {
 public:
  CurlHandlePool() = default;
  ~CurlHandlePool() {
    // Easy handles first: they hold references into the share.
    for (CURL* easy : pool_) curl_easy_cleanup(easy);
    pool_.clear();
    if (share_ != nullptr) curl_share_cleanup(share_);
  }
  CurlHandlePool(const CurlHandlePool&) = delete;
  CurlHandlePool& operator=(const CurlHandlePool&) = delete;

  Status Init() {
    share_ = curl_share_init();
    if (share_ == nullptr) return InternalError("curl_share_init failed");
    if (curl_share_setopt(share_, CURLSHOPT_LOCKFUNC, &CurlHandlePool::LockShare) != CURLSHE_OK ||
        curl_share_setopt(share_, CURLSHOPT_UNLOCKFUNC, &CurlHandlePool::UnlockShare) !=
            CURLSHE_OK ||
        curl_share_setopt(share_, CURLSHOPT_USERDATA, this) != CURLSHE_OK ||
        curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS) != CURLSHE_OK ||
        curl_share_setopt(share_, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK) {
      return InternalError("curl_share_setopt failed (libcurl too old to share connections?)");
    }
    return OkStatus();
  }

  CURLSH* share() const { return share_; }

  // Returns a pooled or new easy handle configured with `options`
  // (ConfigureHandle), or null when libcurl cannot make one.
  CURL* Acquire(const HttpClientOptions& options, bool proxy_from_env) {
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (!pool_.empty()) {
        CURL* easy = pool_.back();
        pool_.pop_back();
        return easy;
      }
    }
    CURL* easy = curl_easy_init();
    if (easy != nullptr) ConfigureHandle(easy, share_, options, proxy_from_env);
    return easy;
  }

  // Returns `easy` to the pool (or frees it when the pool is full).
  void Release(CURL* easy) {
    if (easy == nullptr) return;
    ScrubHandle(easy);
    {
      std::lock_guard<std::mutex> lock(pool_mu_);
      if (pool_.size() < kMaxPooled) {
        pool_.push_back(easy);
        return;
      }
    }
    curl_easy_cleanup(easy);
  }

 private:
  static constexpr size_t kLocks = CURL_LOCK_DATA_LAST;
  // Handles kept for reuse; more may exist while many threads send at once.
  static constexpr size_t kMaxPooled = 32;

  static size_t LockIndex(curl_lock_data data) {
    auto i = static_cast<size_t>(data);
    return i < kLocks ? i : 0;
  }
  static void LockShare(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<CurlHandlePool*>(user)->share_locks_[LockIndex(data)].lock();
  }
  static void UnlockShare(CURL*, curl_lock_data data, void* user) {
    static_cast<CurlHandlePool*>(user)->share_locks_[LockIndex(data)].unlock();
  }

  CURLSH* share_ = nullptr;
  std::mutex share_locks_[kLocks];
  std::mutex pool_mu_;
  std::vector<CURL*> pool_;
};

// A handle borrowed from the pool for one Send().
class PooledHandle {
 public:
  PooledHandle(CurlHandlePool* pool, const HttpClientOptions& options, bool proxy_from_env)
      : pool_(pool), easy_(pool->Acquire(options, proxy_from_env)) {}
  ~PooledHandle() { pool_->Release(easy_); }
  PooledHandle(const PooledHandle&) = delete;
  PooledHandle& operator=(const PooledHandle&) = delete;
  CURL* get() const { return easy_; }

 private:
  CurlHandlePool* pool_;
  CURL* easy_;
};

}  // namespace

// ---------------------------------------------------------------------------
// One logical call, shared by HttpClient::Send (blocking) and
// HttpAsyncEngine (libcurl multi, driven by an event loop).

namespace {

// The result of one libcurl transfer.
struct AttemptResult {
  CURLcode code = CURLE_OK;
  std::string error;  // libcurl's detail text when code != CURLE_OK
  int status = 0;
  std::string effective_url;
  bool connected = false;
  bool request_sent = false;
  Transfer transfer;
};

// What both drivers share: validated options and the default policy.
struct Settings {
  Settings(const HttpClientOptions& opts, RetryPolicy pol, Clock* clk)
      : options(opts), policy(std::move(pol)), clock(clk),
        proxy_from_env(ProxyFromEnvironment()) {}
  HttpClientOptions options;
  RetryPolicy policy;
  Clock* clock;
  bool proxy_from_env;  // read once, when the client is made
};

Status ValidateOptions(const HttpClientOptions& options) {
  if (options.attempt_timeout <= Duration::zero()) {
    return InvalidArgumentError("attempt_timeout must be > 0, got " +
                                std::to_string(options.attempt_timeout.count()) + " ns");
  }
  if (options.connect_timeout <= Duration::zero()) {
    return InvalidArgumentError("connect_timeout must be > 0, got " +
                                std::to_string(options.connect_timeout.count()) + " ns");
  }
  if (!IsSafeFieldValue(options.user_agent)) {
    return InvalidArgumentError("user_agent must not contain CR, LF or NUL");
  }
  if (options.max_redirects < 0 || options.max_redirects > 1000) {
    return InvalidArgumentError("max_redirects must be in [0, 1000], got " +
                                std::to_string(options.max_redirects));
  }
  if (options.ca_bundle.find('\0') != std::string::npos) {
    return InvalidArgumentError("ca_bundle must not contain NUL");
  }
  if (options.max_connections < 0) {
    return InvalidArgumentError("max_connections must be >= 0 (0: no cap), got " +
                                std::to_string(options.max_connections));
  }
  return OkStatus();
}

Result<std::unique_ptr<Settings>> MakeSettings(const HttpClientOptions& options) {
  Result<RetryPolicy> policy = RetryPolicy::Create(options.retry);
  if (!policy.ok()) return policy.status();
  Status valid = ValidateOptions(options);
  if (!valid.ok()) return valid;
  if (!internal::EnsureCurlGlobalInit()) return InternalError("curl_global_init failed");
  Clock* clock = options.clock != nullptr ? options.clock : SystemClock::Default();
  return std::make_unique<Settings>(options, std::move(policy).value(), clock);
}

bool IsStrictlySafeMethod(std::string_view method) {
  return method == "GET" || method == "HEAD" || method == "OPTIONS";
}

// The state of one logical call. Not copyable or movable: libcurl holds
// pointers into it (error buffer, transfer) while an attempt runs.
// Returns the metrics a call to `url` reports to: `name` when set, else the
// URL's origin (null when it has none). The last look-up is cached per
// thread, because parsing the URL and looking the name up cost more than
// the counting itself.
Metrics* MetricsFor(const std::string& name, const std::string& url) {
  if (!name.empty()) return MetricsRegistry::Default().Get(name);
  MetricsRegistry& registry = MetricsRegistry::Default();
  thread_local std::string cached_url;
  thread_local Metrics* cached = nullptr;
  thread_local uint64_t cached_clears = 0;
  const uint64_t clears = registry.clear_count();
  if (cached != nullptr && clears == cached_clears && url == cached_url) return cached;
  std::optional<std::string> origin = HttpOrigin(url);
  if (!origin) return nullptr;
  cached = registry.Get(*origin);
  cached_url = url;
  cached_clears = clears;
  return cached;
}

class Call {
 public:
  Call() = default;
  Call(const Call&) = delete;
  Call& operator=(const Call&) = delete;

  // Validates `request` and prepares what every attempt sends. With
  // `abortable` false the should_abort hooks are not polled (the async
  // engine's caller cancels calls itself).
  // REQUIRES: `request`, its policy and `settings` outlive the call.
  Status Init(const Settings& settings, const HttpRequest& request, bool abortable = true) {
    settings_ = &settings;
    request_ = &request;
    Status valid = ValidateRequest(request, &url_);
    if (!valid.ok()) return valid;
    // What libcurl writes besides these (request line, Host, Accept, the
    // framing fields) is small; kMaxRequestHeadBytes leaves it ample room.
    size_t head = request.url.size() + settings.options.user_agent.size() + 16;
    for (const auto& [name, value] : request.headers) head += name.size() + value.size() + 4;
    if (request.idempotency_key) head += request.idempotency_key->size() + 19;
    if (head > kMaxRequestHeadBytes) {
      return InvalidArgumentError("request head too large: the URL and header fields take " +
                                  std::to_string(head) + " bytes, more than the limit of " +
                                  std::to_string(kMaxRequestHeadBytes));
    }
    if (abortable) {
      if (request.should_abort) {
        abort_ = &request.should_abort;
      } else if (settings.options.should_abort) {
        abort_ = &settings.options.should_abort;
      }
    }
    if (request.max_redirects && (*request.max_redirects < 0 || *request.max_redirects > 1000)) {
      return InvalidArgumentError("max_redirects must be in [0, 1000], got " +
                                  std::to_string(*request.max_redirects));
    }
    policy_ = request.policy != nullptr ? request.policy : &settings.policy;
    follow_redirects_ = request.follow_redirects.value_or(settings.options.follow_redirects);
    max_redirects_ = request.max_redirects.value_or(settings.options.max_redirects);

    // The header list is the same on every attempt (the same Idempotency-Key
    // above all), so it is built once.
    bool has_content_type = false;
    bool has_expect = false;
    for (const auto& [name, value] : request.headers) {
      // "Name;" is libcurl's spelling of a header with an empty value.
      if (!SlistAppend(headers_, value.empty() ? name + ";" : name + ": " + value)) {
        return Status(StatusCode::kNoMemory, "curl_slist_append failed");
      }
      has_content_type = has_content_type || EqualsIgnoreCase(name, "Content-Type");
      has_expect = has_expect || EqualsIgnoreCase(name, "Expect");
    }
    if (request.idempotency_key) {
      key_ = *request.idempotency_key;
      if (!FindHeader(request.headers, "Idempotency-Key") &&
          !SlistAppend(headers_, "Idempotency-Key: " + key_)) {
        return Status(StatusCode::kNoMemory, "curl_slist_append failed");
      }
    } else if (std::optional<std::string> in_headers =
                   FindHeader(request.headers, "Idempotency-Key")) {
      key_ = *in_headers;
    }
    const bool sends_body = request.method != "HEAD" &&
                            (request.method == "POST" || !request.body.empty());
    // libcurl labels POSTFIELDS as a form (application/x-www-form-urlencoded);
    // the body is the caller's bytes, so no type is invented for it.
    if (sends_body && !has_content_type && !SlistAppend(headers_, "Content-Type:")) {
      return Status(StatusCode::kNoMemory, "curl_slist_append failed");
    }
    // No "Expect: 100-continue" round trip for large bodies.
    if (sends_body && !has_expect && !SlistAppend(headers_, "Expect:")) {
      return Status(StatusCode::kNoMemory, "curl_slist_append failed");
    }

    const bool strict = request.strict_methods.value_or(settings.options.strict_methods);
    replay_safe_ = strict ? IsStrictlySafeMethod(request.method)
                          : (IsIdempotentMethod(request.method) || !key_.empty());

    if (settings.options.breakers) {
      if (std::optional<std::string> origin = HttpOrigin(request.url)) {
        Result<std::shared_ptr<CircuitBreaker>> breaker = settings.options.breakers->Get(*origin);
        // A registry full of live breakers must not stop traffic: the call
        // then runs unguarded (BreakerRegistry::Get adds nothing).
        if (breaker.ok()) breaker_ = std::move(breaker).value();
      }
    }
    return OkStatus();
  }

  void Begin(TimePoint now) {
    start_ = now;
    session_.emplace(policy_->Begin(now, replay_safe_));
    if (settings_->options.report_metrics) {
      metrics_ = MetricsFor(settings_->options.metrics_name, request_->url);
      if (metrics_ != nullptr) metrics_->CallStarted();
    }
  }

  // Asks the breaker (if any) whether the next attempt may run at `now`.
  // False: the call is over with kCircuitOpen.
  bool Admit(TimePoint now) {
    attempt_start_ = now;
    if (waiting_) {
      waiting_ = false;
      metrics_->RetryWaitEnded();
    }
    if (metrics_ != nullptr) metrics_->AttemptStarted(session_->attempts() + 1);
    if (!breaker_) return true;
    const bool per_attempt = settings_->options.breaker_per_attempt;
    if (per_attempt || !permit_.valid) {
      Admission admission = breaker_->Acquire(now);
      if (!admission.admitted()) {
        circuit_open_ = true;
        retry_in_ = admission.retry_in;
        return false;
      }
      permit_ = admission.permit;
      return true;
    }
    // One result per logical call: the permit taken before the first
    // attempt covers the chain, but an open breaker still ends it.
    const BreakerState state = breaker_->state(now);
    if (state == BreakerState::kOpen || state == BreakerState::kForcedOpen) {
      breaker_->Record(permit_, CallResult::kFailure, now - start_, now);
      permit_ = Permit{};
      circuit_open_ = true;
      retry_in_ = breaker_->TimeUntilProbe(now);
      return false;
    }
    return true;
  }

  // The next attempt's timeout: the policy's attempt timeout (already trimmed
  // to the deadline) when it sets one, otherwise the client's, still trimmed.
  Duration AttemptTimeout(TimePoint now) const {
    Duration timeout = settings_->options.attempt_timeout;
    std::optional<Duration> from_policy = session_->AttemptTimeout(now);
    if (from_policy) {
      timeout = policy_->options().attempt_timeout ? *from_policy : std::min(timeout, *from_policy);
    }
    return timeout;
  }

  // Sets up `easy` for the next attempt: every option that belongs to the
  // call, each time, over whatever an earlier call left.
  // REQUIRES: `easy` was configured by ConfigureHandle for these settings.
  void Setup(CURL* easy, Duration timeout) {
    last_ = AttemptResult{};
    errbuf_[0] = '\0';
    const HttpClientOptions& options = settings_->options;
    const HttpRequest& request = *request_;
    curl_easy_setopt(easy, CURLOPT_ERRORBUFFER, errbuf_);
    // CURLOPT_URL cleared first: libcurl (7.88) otherwise keeps using the
    // URL string of the handle's previous transfer over a new CURLU.
    curl_easy_setopt(easy, CURLOPT_URL, static_cast<char*>(nullptr));
    curl_easy_setopt(easy, CURLOPT_CURLU, url_.get());
    curl_easy_setopt(easy, CURLOPT_FOLLOWLOCATION, follow_redirects_ ? 1L : 0L);
    curl_easy_setopt(easy, CURLOPT_MAXREDIRS, static_cast<long>(max_redirects_));
    curl_easy_setopt(easy, CURLOPT_TIMEOUT_MS, ToCurlMillis(timeout));
    curl_easy_setopt(easy, CURLOPT_CONNECTTIMEOUT_MS,
                     ToCurlMillis(std::min(timeout, options.connect_timeout)));
    // libcurl silently sends a request again on a new connection when a
    // kept-alive one turns out dead before any response byte arrived (it
    // cannot tell "closed while idle" from "closed after reading the
    // request"). For a request that must not be replayed (a POST or PATCH
    // without an idempotency key, or anything but GET/HEAD/OPTIONS in strict
    // mode) that could apply it twice, so such requests never reuse a
    // connection: one extra connection buys the at-most-once promise.
    curl_easy_setopt(easy, CURLOPT_FRESH_CONNECT, replay_safe_ ? 0L : 1L);
    curl_easy_setopt(easy, CURLOPT_HTTPHEADER, headers_.get());
    curl_easy_setopt(easy, CURLOPT_WRITEDATA, &last_.transfer);
    curl_easy_setopt(easy, CURLOPT_HEADERDATA, &last_.transfer);
    if (abort_ != nullptr) {
      curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(easy, CURLOPT_XFERINFOFUNCTION, &Call::OnProgress);
      curl_easy_setopt(easy, CURLOPT_XFERINFODATA, this);
    } else {
      curl_easy_setopt(easy, CURLOPT_NOPROGRESS, 1L);
    }

    // The method, from a clean state: HTTPGET sets GET and clears NOBODY
    // and upload; no custom verb; then what this method needs.
    const std::string& method = request.method;
    curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, static_cast<char*>(nullptr));
    if (method == "HEAD") {
      curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
    } else if (method == "POST" || !request.body.empty()) {
      curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
      curl_easy_setopt(easy, CURLOPT_POSTFIELDS, request.body.data());
      if (method != "POST") curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method.c_str());
    } else if (method != "GET") {
      curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, method.c_str());
    }
  }

  // Reads what the finished transfer on `easy` produced.
  void Collect(CURL* easy, CURLcode code) {
    AttemptResult& r = last_;
    r.code = code;
    long status = 0;
    curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &status);
    r.status = static_cast<int>(status);
    char* effective = nullptr;
    if (curl_easy_getinfo(easy, CURLINFO_EFFECTIVE_URL, &effective) == CURLE_OK &&
        effective != nullptr) {
      r.effective_url = effective;
    } else {
      r.effective_url = request_->url;
    }
    curl_off_t connect_us = 0;
    curl_easy_getinfo(easy, CURLINFO_CONNECT_TIME_T, &connect_us);
    long request_size = 0;
    curl_easy_getinfo(easy, CURLINFO_REQUEST_SIZE, &request_size);
    r.connected = connect_us > 0;
    r.request_sent = request_size > 0;
    if (r.code != CURLE_OK) {
      r.error = errbuf_[0] != '\0' ? std::string(errbuf_) : std::string(curl_easy_strerror(r.code));
      while (!r.error.empty() && (r.error.back() == '\n' || r.error.back() == '\r')) {
        r.error.pop_back();
      }
    }
    if (r.code == CURLE_ABORTED_BY_CALLBACK && aborted_) aborted_in_transfer_ = true;
  }

  // Polls the should_abort hook (if any); true once it asked to abort.
  bool PollAbort() {
    if (aborted_) return true;
    if (abort_ == nullptr) return false;
    bool abort = false;
    try {
      abort = (*abort_)();
    } catch (...) {
      // A hook must not throw (http_client.h): counts as "go on".
    }
    aborted_ = abort;
    return aborted_;
  }
  bool aborted() const { return aborted_; }

  // Sleeps `delay` through `clock`, in slices of at most kAbortPollInterval
  // when a should_abort hook is set; false when the hook aborted the call.
  bool Wait(Clock& clock, Duration delay) {
    if (abort_ == nullptr) {
      clock.SleepFor(delay);
      return true;
    }
    Duration left = delay;
    while (left > Duration::zero()) {
      if (PollAbort()) return false;
      const Duration slice = std::min(left, kAbortPollInterval);
      const TimePoint before = clock.Now();
      clock.SleepFor(slice);
      // An overslept slice counts in full; every slice counts at least its
      // length, so the loop ends whatever the clock does.
      left -= std::max(clock.Now() - before, slice);
    }
    return !PollAbort();
  }

  // Lets the session (and the breaker) judge the attempt that just finished.
  Decision OnAttemptDone(TimePoint now) {
    if (last_.transfer.failed_alloc) {
      no_memory_ = true;
      decision_ = Decision{};
      decision_.attempt = session_->attempts() + 1;
      return decision_;
    }
    Outcome outcome;
    if (last_.code == CURLE_OK && last_.status > 0) {
      std::optional<Duration> hint;
      if (std::optional<std::string> value = FindHeader(last_.transfer.headers, "Retry-After")) {
        hint = ParseRetryAfter(*value, settings_->clock->WallNow());
      }
      outcome = Outcome::Http(last_.status, hint);
      // An idempotency store answers 409 with Retry-After while the first
      // request with this key is still running (DESIGN.md section 4): for a
      // keyed request that means "try again after the hint", not a conflict.
      if (last_.status == 409 && hint && !key_.empty()) {
        outcome = Outcome::Failure(/*retryable=*/true);
        outcome.retry_after = hint;
      }
    } else {
      if (last_.code == CURLE_OK) {
        last_.code = CURLE_GOT_NOTHING;  // no status line: treat as an empty reply
        last_.error = "no HTTP status received";
      }
      outcome = TransportOutcome(last_.code, last_.connected, last_.request_sent);
    }
    last_outcome_ = outcome;
    decision_ = session_->OnOutcome(outcome, now);
    if (metrics_ != nullptr && decision_.classification != Classification::kSuccess) {
      metrics_->AttemptFailed(decision_.attempt, outcome, decision_, now - start_);
      waiting_ = decision_.retry();
    }
    if (breaker_ && permit_.valid) {
      if (settings_->options.breaker_per_attempt) {
        breaker_->Record(permit_, ResultFor(decision_.classification), now - attempt_start_, now);
        permit_ = Permit{};
      } else if (!decision_.retry()) {
        breaker_->Record(permit_, ResultFor(decision_.classification), now - start_, now);
        permit_ = Permit{};
      }
    }
    return decision_;
  }

  HttpRetryEvent RetryEvent() const {
    HttpRetryEvent e;
    e.attempt = decision_.attempt;
    e.delay = decision_.delay;
    e.error = last_outcome_.error;
    e.http_status = last_outcome_.http_status;
    e.from_retry_after = decision_.from_retry_after;
    return e;
  }

  // Calls the request's (or else the client's) on_retry hook; returns false
  // when the hook cancelled the call.
  bool NotifyRetry() {
    const HttpRetryHook& hook =
        request_->on_retry ? request_->on_retry : settings_->options.on_retry;
    if (!hook) return true;
    HttpRetryEvent event = RetryEvent();
    try {
      hook(event);
    } catch (...) {
      // A hook must not throw (http_client.h); the retries go on.
      return true;
    }
    if (event.cancel) cancelled_ = true;
    return !cancelled_;
  }

  ErrorKind last_error() const { return last_outcome_.error; }
  int last_status() const { return last_outcome_.http_status; }

  // libcurl's progress callback: a non-zero return aborts the transfer with
  // CURLE_ABORTED_BY_CALLBACK.
  static int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<Call*>(user)->PollAbort() ? 1 : 0;
  }

  // Marks the next attempt as unable to start (libcurl could not make or
  // add a handle: memory); Finish then reports kNoMemory.
  void FailToStart() { no_memory_ = true; }

  // Ends a call its caller gave up (HttpAsyncEngine::Cancel, or the engine
  // destroyed with calls pending), as an aborted call ends: a half-open
  // probe permit is freed without judging the origin, and the call is
  // reported failed, so that the in-flight gauges come back down.
  // `in_transfer`: an attempt was running (it counts as made).
  void Abandon(TimePoint now, bool in_transfer) {
    aborted_ = true;
    aborted_in_transfer_ = in_transfer;
    (void)Finish(now, nullptr);
  }

  // The call's result once it stopped.
  Result<HttpResponse> Finish(TimePoint now, HttpCallInfo* info) {
    // An attempt aborted mid-transfer never reached the session.
    const int attempts = (session_ ? session_->attempts() : 0) + (aborted_in_transfer_ ? 1 : 0);
    const Duration elapsed = now - start_;
    const bool got_response =
        attempts > 0 && last_.code == CURLE_OK && !no_memory_ && !aborted_;
    if (breaker_ && permit_.valid) {
      // Cancelled or aborted mid-chain: says nothing about the origin's
      // health, but frees a half-open probe slot.
      breaker_->Record(permit_, CallResult::kIgnored, now - start_, now);
      permit_ = Permit{};
    }
    if (metrics_ != nullptr) {
      if (waiting_) {  // the hook cancelled the wait
        waiting_ = false;
        metrics_->RetryWaitEnded();
      }
      if (got_response && !circuit_open_ && !cancelled_ &&
          decision_.reason == StopReason::kSucceeded) {
        metrics_->CallSucceeded(attempts, elapsed);
      } else {
        metrics_->CallFailed(attempts, elapsed,
                             circuit_open_ || cancelled_ || aborted_ ? StopReason::kTerminal
                                                                      : decision_.reason);
      }
      metrics_ = nullptr;  // reported once
    }
    const ErrorKind last_error =
        attempts == 0 || got_response
            ? ErrorKind::kNone
            : TransportOutcome(last_.code, last_.connected, last_.request_sent).error;
    if (info != nullptr) {
      *info = HttpCallInfo{};
      info->attempts = attempts;
      info->elapsed = elapsed;
      info->last_error = no_memory_ ? ErrorKind::kTransport : last_error;
      info->stop_reason = circuit_open_ || aborted_ ? StopReason::kNone : decision_.reason;
      info->idempotency_key = key_;
      info->last_status = got_response ? last_.status : 0;
      if (circuit_open_) {
        info->breaker_key = breaker_ ? breaker_->name() : std::string();
        info->retry_in = retry_in_;
      }
    }
    const HttpRequest& request = *request_;
    std::string what = request.method + " " + request.url + ": ";
    if (no_memory_) {
      return Status(StatusCode::kNoMemory, "out of memory while receiving the response");
    }
    if (aborted_) {
      return Status(StatusCode::kCallback,
                    what + "aborted by the should_abort hook " +
                        (aborted_in_transfer_ ? "during attempt " + std::to_string(attempts)
                                              : "after " + std::to_string(attempts) +
                                                    (attempts == 1 ? " attempt" : " attempts")));
    }
    if (cancelled_) {
      return Status(StatusCode::kCallback,
                    what + "the on_retry hook stopped the retries after " +
                        std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts"));
    }
    if (circuit_open_) {
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(retry_in_).count();
      std::string message = what + "circuit open for " + breaker_->name();
      if (retry_in_ == Duration::max()) {
        message += " (forced open)";
      } else {
        message += " (next probe in " + std::to_string(ms) + " ms)";
      }
      if (attempts > 0) {
        message += " after " + std::to_string(attempts) + (attempts == 1 ? " attempt" : " attempts");
      }
      return Status(StatusCode::kCircuitOpen, message);
    }
    if (got_response) {
      HttpResponse response;
      response.status = last_.status;
      response.headers = std::move(last_.transfer.headers);
      response.body = std::move(last_.transfer.body);
      response.attempts = attempts;
      response.elapsed = elapsed;
      response.stop_reason = decision_.reason;
      response.idempotency_key = key_;
      response.url = std::move(last_.effective_url);
      return response;
    }
    std::string tail = " after " + std::to_string(attempts) +
                       (attempts == 1 ? " attempt" : " attempts") + " (" + last_.error + ")";
    if (decision_.reason == StopReason::kDeadline) {
      return DeadlineExceededError(what + "deadline exceeded; last error " +
                                   ErrorPhrase(last_error) + tail);
    }
    if (last_error == ErrorKind::kInvalidUrl) {
      return InvalidArgumentError(what + ErrorPhrase(last_error) + tail);
    }
    if (last_error == ErrorKind::kTimeout || last_error == ErrorKind::kConnectTimeout) {
      return TimeoutError(what + ErrorPhrase(last_error) + tail);
    }
    return TransportError(what + ErrorPhrase(last_error) + tail);
  }

 private:
  const Settings* settings_ = nullptr;
  const HttpRequest* request_ = nullptr;
  const RetryPolicy* policy_ = nullptr;
  Slist headers_;
  std::string key_;
  bool replay_safe_ = true;
  bool follow_redirects_ = false;
  int max_redirects_ = 10;
  std::shared_ptr<CircuitBreaker> breaker_;
  Metrics* metrics_ = nullptr;  // null when not reporting
  ParsedUrl url_;  // the request's URL, parsed (CURLOPT_CURLU points at it)
  bool waiting_ = false;        // a retry is scheduled and its wait not over
  Permit permit_;
  bool circuit_open_ = false;
  Duration retry_in_ = Duration::zero();
  bool no_memory_ = false;
  bool cancelled_ = false;
  const HttpAbortHook* abort_ = nullptr;  // null: never aborted
  bool aborted_ = false;
  bool aborted_in_transfer_ = false;
  std::optional<RetrySession> session_;
  TimePoint start_;
  TimePoint attempt_start_;
  AttemptResult last_;
  Outcome last_outcome_;
  Decision decision_;
  char errbuf_[CURL_ERROR_SIZE] = {};
};

}  // namespace

std::optional<std::string> HttpOrigin(std::string_view url) {
  CURLU* parsed = curl_url();
  if (parsed == nullptr) return std::nullopt;
  std::string copy(url);
  std::optional<std::string> origin;
  char* scheme = nullptr;
  char* host = nullptr;
  char* port = nullptr;
  if (curl_url_set(parsed, CURLUPART_URL, copy.c_str(), 0) == CURLUE_OK &&
      curl_url_get(parsed, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
      curl_url_get(parsed, CURLUPART_HOST, &host, 0) == CURLUE_OK &&
      curl_url_get(parsed, CURLUPART_PORT, &port, CURLU_DEFAULT_PORT) == CURLUE_OK &&
      host != nullptr && host[0] != '\0') {
    std::string s = std::string(scheme) + "://" + host + ":" + port;
    for (char& c : s) c = internal::AsciiLower(c);
    origin = std::move(s);
  }
  curl_free(scheme);
  curl_free(host);
  curl_free(port);
  curl_url_cleanup(parsed);
  return origin;
}

// ---------------------------------------------------------------------------
// HttpClient

struct HttpClient::Impl {
  explicit Impl(std::unique_ptr<Settings> s) : settings(std::move(s)) {}
  std::unique_ptr<Settings> settings;
  CurlHandlePool handles;
};

HttpClient::HttpClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpClient::~HttpClient() = default;

const RetryPolicy& HttpClient::policy() const { return impl_->settings->policy; }
const HttpClientOptions& HttpClient::options() const { return impl_->settings->options; }

Result<std::unique_ptr<HttpClient>> HttpClient::Create(const HttpClientOptions& options) {
  Result<std::unique_ptr<Settings>> settings = MakeSettings(options);
  if (!settings.ok()) return settings.status();
  auto impl = std::make_unique<Impl>(std::move(settings).value());
  Status s = impl->handles.Init();
  if (!s.ok()) return s;
  return std::unique_ptr<HttpClient>(new HttpClient(std::move(impl)));
}

Result<HttpResponse> HttpClient::Send(const HttpRequest& request, HttpCallInfo* info) {
  if (info != nullptr) *info = HttpCallInfo{};
  Impl& impl = *impl_;
  Clock& clock = *impl.settings->clock;
  Call call;
  Status valid = call.Init(*impl.settings, request);
  if (!valid.ok()) return valid;

  PooledHandle easy(&impl.handles, impl.settings->options, impl.settings->proxy_from_env);
  if (easy.get() == nullptr) return InternalError("curl_easy_init failed");

  call.Begin(clock.Now());
  for (;;) {
    if (call.PollAbort()) break;
    const TimePoint now = clock.Now();
    if (!call.Admit(now)) break;
    call.Setup(easy.get(), call.AttemptTimeout(now));
    call.Collect(easy.get(), curl_easy_perform(easy.get()));
    if (call.aborted()) break;
    Decision decision = call.OnAttemptDone(clock.Now());
    if (!decision.retry()) break;
    if (!call.NotifyRetry()) break;
    if (!call.Wait(clock, decision.delay)) break;
  }
  return call.Finish(clock.Now(), info);
}

// ---------------------------------------------------------------------------
// HttpAsyncEngine

struct HttpAsyncEngine::Impl {
  struct AsyncCall {
    HttpRequest request;
    std::optional<RetryPolicy> policy;
    Call call;
    CURL* easy = nullptr;
    bool in_flight = false;
    bool queued = false;  // admitted, waiting for a transfer slot (max_connections)
  };

  explicit Impl(std::unique_ptr<Settings> s) : settings(std::move(s)) {}
  ~Impl() {
    const TimePoint now = settings->clock->Now();
    for (auto& [id, c] : calls) {
      const bool in_flight = c->in_flight;
      if (in_flight) curl_multi_remove_handle(multi, c->easy);
      if (c->easy != nullptr) curl_easy_cleanup(c->easy);
      c->call.Abandon(now, in_flight);
    }
    calls.clear();
    for (CURL* easy : idle) curl_easy_cleanup(easy);
    if (multi != nullptr) curl_multi_cleanup(multi);
  }

  static int OnSocket(CURL*, curl_socket_t fd, int what, void* user, void*) {
    auto* self = static_cast<Impl*>(user);
    int events = 0;
    if (what != CURL_POLL_REMOVE) {
      if (what & CURL_POLL_IN) events |= kRead;
      if (what & CURL_POLL_OUT) events |= kWrite;
    }
    self->socket_changes.push_back(SocketWatch{static_cast<int>(fd), events});
    return 0;
  }
  // Closes a socket libcurl opened, telling the event loop first (events -1)
  // so that it can drop a watch it kept on an idle connection.
  static int OnCloseSocket(void* user, curl_socket_t fd) {
    auto* self = static_cast<Impl*>(user);
    try {
      self->socket_changes.push_back(SocketWatch{static_cast<int>(fd), -1});
    } catch (...) {
      // Out of memory: the loop's next wait on this fd reports an error.
    }
    return close(fd);
  }

  static int OnTimer(CURLM*, long timeout_ms, void* user) {
    static_cast<Impl*>(user)->timer_change = timeout_ms;
    return 0;
  }

  void Release(AsyncCall& c) {
    if (c.in_flight) {
      curl_multi_remove_handle(multi, c.easy);
      c.in_flight = false;
      --active;
    }
    c.queued = false;  // its id stays in `waiting`, skipped there
    if (c.easy != nullptr) {
      ScrubHandle(c.easy);
      curl_easy_setopt(c.easy, CURLOPT_PRIVATE, static_cast<char*>(nullptr));
      if (idle.size() < 256) {
        idle.push_back(c.easy);
      } else {
        curl_easy_cleanup(c.easy);
      }
      c.easy = nullptr;
    }
  }

  void Drain() {
    int pending = 0;
    while (CURLMsg* msg = curl_multi_info_read(multi, &pending)) {
      if (msg->msg != CURLMSG_DONE) continue;
      CURL* easy = msg->easy_handle;
      const CURLcode code = msg->data.result;
      char* priv = nullptr;
      curl_easy_getinfo(easy, CURLINFO_PRIVATE, &priv);
      const auto id = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(priv));
      curl_multi_remove_handle(multi, easy);
      auto it = calls.find(id);
      if (it == calls.end()) continue;
      AsyncCall& c = *it->second;
      c.in_flight = false;
      --active;
      c.call.Collect(easy, code);
      Event e;
      e.id = id;
      e.decision = c.call.OnAttemptDone(settings->clock->Now());
      e.retry = e.decision.retry();
      e.error = c.call.last_error();
      e.http_status = c.call.last_status();
      events.push_back(e);
    }
    LaunchWaiting();
  }

  // Starts the transfer of call `id`'s next attempt (admitted already).
  Status Launch(uint64_t id, AsyncCall& c, TimePoint now) {
    if (c.easy == nullptr) {
      if (!idle.empty()) {
        c.easy = idle.back();
        idle.pop_back();
      } else {
        c.easy = curl_easy_init();
        if (c.easy == nullptr) return InternalError("curl_easy_init failed");
        ConfigureHandle(c.easy, nullptr, settings->options, settings->proxy_from_env);
        curl_easy_setopt(c.easy, CURLOPT_CLOSESOCKETFUNCTION, &Impl::OnCloseSocket);
        curl_easy_setopt(c.easy, CURLOPT_CLOSESOCKETDATA, this);
      }
    }
    // The attempt's timeout starts now, not when it was queued.
    c.call.Setup(c.easy, c.call.AttemptTimeout(now));
    curl_easy_setopt(c.easy, CURLOPT_PRIVATE, reinterpret_cast<char*>(static_cast<uintptr_t>(id)));
    if (curl_multi_add_handle(multi, c.easy) != CURLM_OK) {
      return InternalError("curl_multi_add_handle failed");
    }
    c.in_flight = true;
    ++active;
    return OkStatus();
  }

  // Starts queued attempts, in order, while transfer slots are free.
  void LaunchWaiting() {
    const auto cap = static_cast<size_t>(settings->options.max_connections);
    while (!waiting.empty() && (cap == 0 || active < cap)) {
      const uint64_t id = waiting.front();
      waiting.pop_front();
      auto it = calls.find(id);
      if (it == calls.end() || !it->second->queued) continue;  // cancelled meanwhile
      AsyncCall& c = *it->second;
      c.queued = false;
      if (!Launch(id, c, settings->clock->Now()).ok()) {
        c.call.FailToStart();
        Event e;
        e.id = id;
        events.push_back(e);
      }
    }
  }

  std::unique_ptr<Settings> settings;
  CURLM* multi = nullptr;
  std::unordered_map<uint64_t, std::unique_ptr<AsyncCall>> calls;
  std::vector<CURL*> idle;
  size_t active = 0;             // transfers in libcurl
  std::deque<uint64_t> waiting;  // admitted attempts waiting for a slot, in order
  uint64_t next_id = 1;
  std::vector<SocketWatch> socket_changes;
  std::optional<long> timer_change;
  std::vector<Event> events;
};

HttpAsyncEngine::HttpAsyncEngine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpAsyncEngine::~HttpAsyncEngine() = default;

Result<std::unique_ptr<HttpAsyncEngine>> HttpAsyncEngine::Create(
    const HttpClientOptions& options) {
  Result<std::unique_ptr<Settings>> settings = MakeSettings(options);
  if (!settings.ok()) return settings.status();
  auto impl = std::make_unique<Impl>(std::move(settings).value());
  impl->multi = curl_multi_init();
  if (impl->multi == nullptr) return InternalError("curl_multi_init failed");
  curl_multi_setopt(impl->multi, CURLMOPT_SOCKETFUNCTION, &Impl::OnSocket);
  curl_multi_setopt(impl->multi, CURLMOPT_SOCKETDATA, impl.get());
  curl_multi_setopt(impl->multi, CURLMOPT_TIMERFUNCTION, &Impl::OnTimer);
  curl_multi_setopt(impl->multi, CURLMOPT_TIMERDATA, impl.get());
  return std::unique_ptr<HttpAsyncEngine>(new HttpAsyncEngine(std::move(impl)));
}

Result<uint64_t> HttpAsyncEngine::Begin(const HttpRequest& request) {
  return Begin(HttpRequest(request));
}

Result<uint64_t> HttpAsyncEngine::Begin(HttpRequest&& request) {
  Impl& impl = *impl_;
  auto c = std::make_unique<Impl::AsyncCall>();
  c->request = std::move(request);
  c->request.on_retry = nullptr;
  c->request.should_abort = nullptr;
  if (c->request.policy != nullptr) {
    c->policy.emplace(*c->request.policy);
    c->request.policy = &*c->policy;
  }
  Status s = c->call.Init(*impl.settings, c->request, /*abortable=*/false);
  if (!s.ok()) return s;
  c->call.Begin(impl.settings->clock->Now());
  const uint64_t id = impl.next_id++;
  impl.calls.emplace(id, std::move(c));
  return id;
}

Status HttpAsyncEngine::StartAttempt(uint64_t id) {
  Impl& impl = *impl_;
  auto it = impl.calls.find(id);
  if (it == impl.calls.end()) return InvalidArgumentError("unknown call id");
  Impl::AsyncCall& c = *it->second;
  if (c.in_flight || c.queued) return InvalidArgumentError("an attempt of this call is in flight");
  const TimePoint now = impl.settings->clock->Now();
  if (!c.call.Admit(now)) {
    Event e;
    e.id = id;
    e.retry = false;
    impl.events.push_back(e);
    return OkStatus();
  }
  const auto cap = static_cast<size_t>(impl.settings->options.max_connections);
  if (cap > 0 && impl.active >= cap) {
    c.queued = true;
    impl.waiting.push_back(id);
    return OkStatus();
  }
  return impl.Launch(id, c, now);
}

void HttpAsyncEngine::SocketAction(int fd, int events) {
  Impl& impl = *impl_;
  int mask = 0;
  if (events & kRead) mask |= CURL_CSELECT_IN;
  if (events & kWrite) mask |= CURL_CSELECT_OUT;
  int running = 0;
  curl_multi_socket_action(impl.multi, fd < 0 ? CURL_SOCKET_TIMEOUT : fd, fd < 0 ? 0 : mask,
                           &running);
  if (fd < 0) {
    // Re-arm after every timer action: libcurl calls the timer callback only
    // when its deadline changes, so a loop that fired early (or coalesced
    // timers) would otherwise never hear of the unchanged deadline again.
    long ms = -1;
    if (curl_multi_timeout(impl.multi, &ms) == CURLM_OK) impl.timer_change = ms;
  }
  impl.Drain();
}

std::vector<HttpAsyncEngine::SocketWatch> HttpAsyncEngine::TakeSocketChanges() {
  std::vector<SocketWatch> out;
  out.swap(impl_->socket_changes);
  return out;
}

void HttpAsyncEngine::TakeSocketChanges(std::vector<SocketWatch>* out) {
  out->clear();
  out->swap(impl_->socket_changes);
}

std::optional<long> HttpAsyncEngine::TakeTimerChange() {
  std::optional<long> out = impl_->timer_change;
  impl_->timer_change.reset();
  return out;
}

std::vector<HttpAsyncEngine::Event> HttpAsyncEngine::TakeEvents() {
  std::vector<Event> out;
  out.swap(impl_->events);
  return out;
}

void HttpAsyncEngine::TakeEvents(std::vector<Event>* out) {
  out->clear();
  out->swap(impl_->events);
}

Result<HttpResponse> HttpAsyncEngine::Finish(uint64_t id, HttpCallInfo* info) {
  Impl& impl = *impl_;
  auto it = impl.calls.find(id);
  if (it == impl.calls.end()) return InvalidArgumentError("unknown call id");
  std::unique_ptr<Impl::AsyncCall> c = std::move(it->second);
  impl.calls.erase(it);
  impl.Release(*c);
  return c->call.Finish(impl.settings->clock->Now(), info);
}

void HttpAsyncEngine::Cancel(uint64_t id) {
  Impl& impl = *impl_;
  auto it = impl.calls.find(id);
  if (it == impl.calls.end()) return;
  const bool in_flight = it->second->in_flight;
  impl.Release(*it->second);
  it->second->call.Abandon(impl.settings->clock->Now(), in_flight);
  impl.calls.erase(it);
  impl.LaunchWaiting();  // a slot may have freed
}

size_t HttpAsyncEngine::size() const { return impl_->calls.size(); }

}  // namespace v0
}  // namespace mulligan
