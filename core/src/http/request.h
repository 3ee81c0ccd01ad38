// core/src/http/request.h — what the HTTP client checks about a request
// before sending it, and the URL parsed once for libcurl (private).
//
// Thread-safety: the functions are thread-safe; ValidateRequest keeps the
// last URL each thread parsed (thread-local), so a client sending to one
// URL again and again parses it once.

#ifndef MULLIGAN_HTTP_REQUEST_H_
#define MULLIGAN_HTTP_REQUEST_H_

#include <curl/curl.h>

#include <memory>
#include <string>
#include <string_view>

#include "mulligan/base/status.h"
#include "mulligan/http/client.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

// A URL parsed by libcurl, for CURLOPT_CURLU. Shared: a thread's last URL is
// kept for its next call, and each call holds the one it sends to.
using ParsedUrl = std::shared_ptr<CURLU>;

// Returns true when a header field value holds no CR, LF or NUL (which would
// split or truncate the header line libcurl writes).
bool IsSafeFieldValue(std::string_view s);

// OkStatus for a header field the caller may give: a token name (RFC 9110
// section 5.1), not one the client manages (IsClientManagedHeader), a value
// without CR, LF or NUL, and an Idempotency-Key an idempotency server would
// read back. Otherwise kInvalidArgument naming the header.
Status CheckHeaderField(const std::string& name, const std::string& value);

// OkStatus for a key the client may send bare in Idempotency-Key: one that
// mulligan's own server side (ParseIdempotencyKey of
// mulligan/idempotency/store.h, with its default limit of
// kDefaultMaxIdempotencyKeyLength = 255 characters) reads back as the same
// key. Otherwise kInvalidArgument saying why (empty, too long, not printable
// ASCII, a quote or backslash, surrounding spaces).
Status CheckIdempotencyKey(std::string_view key);

// Returns true for GET, HEAD and OPTIONS: the only methods strict mode
// replays once bytes were sent.
bool IsStrictlySafeMethod(std::string_view method);

// Validates everything about `request` that can be checked before sending
// (method token, absolute http(s) URL with a host, header names and values,
// the idempotency key); on success `*parsed_url` is its URL, parsed.
// Errors: kInvalidArgument naming what is wrong; kInternal when libcurl
// cannot allocate a URL handle.
Status ValidateRequest(const HttpRequest& request, ParsedUrl* parsed_url);

// Returns `url` with every byte >= 0x80 outside the host percent-encoded as
// %XX (upper-case hex): a URL holding non-ASCII text (UTF-8) is sent as
// requests and httpx send it, the path, query, fragment and user info of
// the IRI mapped to URI characters as RFC 3987 section 3.1 says. The host is
// left as it is, for libcurl's IDNA conversion. ASCII bytes, '%' included,
// are kept: an already-encoded URL is not encoded twice.
std::string PercentEncodeNonAscii(std::string_view url);

// Returns the origin of `url` (HttpOrigin), or null for a malformed URL.
// The last URL and origin are kept per thread, since a client sends to few
// origins and parsing costs more than the rest of the bookkeeping. The
// pointer is valid until this thread's next call.
const std::string* CachedOrigin(const std::string& url);

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_REQUEST_H_
