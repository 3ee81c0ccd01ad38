// core/src/http/transfer.h — one libcurl transfer: what its callbacks
// collect, the options every handle gets, and how a failed transfer maps to
// an Outcome (private).
//
// Thread-safety: a Transfer belongs to the one transfer filling it; the
// functions are thread-safe.

#ifndef MULLIGAN_HTTP_TRANSFER_H_
#define MULLIGAN_HTTP_TRANSFER_H_

#include <curl/curl.h>

#include <memory>
#include <string>

#include "mulligan/base/clock.h"
#include "mulligan/base/outcome.h"
#include "mulligan/http/client.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// What the write and header callbacks collect during one attempt.
struct Transfer {
  // The final response's header fields, in order (an interim 1xx response's
  // fields are dropped when the final status line arrives).
  HttpHeaders headers;
  std::string body;
  // True once the blank line that ends the latest head arrived; a status
  // line sets it back to false (a new head begins). libcurl (7.88) returns
  // CURLE_OK for a connection closed inside the header block, having handed
  // over the complete lines before the cut: a transfer that ends with this
  // false never received a whole response (RFC 9112 section 2.1: the head
  // ends with an empty line).
  bool head_complete = false;
  // True once a status line arrived (the first line of the transfer).
  bool status_seen = false;
  // An allocation failed in a callback; the transfer was aborted.
  bool failed_alloc = false;
};

// CURLOPT_WRITEFUNCTION: appends to Transfer::body (`user`).
size_t WriteBody(char* data, size_t size, size_t nmemb, void* user);
// CURLOPT_HEADERFUNCTION: one call per header line, status lines included;
// fills Transfer::headers (`user`), joining obs-fold continuations (RFC 9112
// section 5.2), and notes the end of each head (Transfer::head_complete).
// The lines are told apart as libcurl (7.88) tells them apart:
//   - a line that ends with LF and begins with CR or LF ends the head (an
//     empty line, RFC 9112 section 2.2; libcurl reads whatever follows such
//     a line as the body);
//   - the first line, and a line after a head's end that begins with
//     "HTTP/" in any case (libcurl's status-line check is case-insensitive),
//     is a status line: a new head begins, the fields so far are dropped;
//   - any other line is a field ("name: value", the value without OWS), an
//     obs-fold continuation (begins with SP or HTAB), or ignored (no colon,
//     or an empty name); after a head's end these are trailer fields of a
//     chunked body, added to the fields, and the head stays complete.
// Consumes every line (returns size * nmemb) unless an allocation fails
// (then 0: libcurl aborts).
size_t WriteHeader(char* data, size_t size, size_t nmemb, void* user);

// RAII for a curl_slist.
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

// Appends `line` to `list`; false when libcurl could not allocate (the list
// is then unchanged).
bool SlistAppend(Slist& list, const std::string& line);

// True when any variable libcurl takes a proxy from is set (non-empty):
// http_proxy, https_proxy / HTTPS_PROXY, all_proxy / ALL_PROXY, no_proxy /
// NO_PROXY (libcurl ignores HTTP_PROXY, as a CGI variable could set it).
bool ProxyFromEnvironment();

// Sets the options that are the same for every request of a client, once
// per easy handle, right after curl_easy_init(). `share` may be null.
// `proxy_from_env`: ProxyFromEnvironment() when the client was made.
void ConfigureHandle(CURL* easy, CURLSH* share, const HttpClientOptions& options,
                     bool proxy_from_env);

// Drops every pointer a finished call left in `easy` (its buffers, header
// list, body and error buffer), so that nothing points into freed memory
// while the handle waits in a pool. Live connections and the share stay.
void ScrubHandle(CURL* easy);

// Maps a failed transfer to an Outcome. `connected` and `request_sent` come
// from CURLINFO_CONNECT_TIME_T and CURLINFO_REQUEST_SIZE.
Outcome TransportOutcome(CURLcode code, bool connected, bool request_sent);

// Milliseconds for a libcurl timeout option: rounded up, at least 1 (0 would
// mean "no timeout" to libcurl), at most LONG_MAX.
long ToCurlMillis(Duration d);

// "connection_refused" -> "connection refused", for error messages.
std::string ErrorPhrase(ErrorKind kind);

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_TRANSFER_H_
