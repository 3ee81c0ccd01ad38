// mulligan/http/redact.h — credentials kept out of what mulligan renders.
//
// Every text mulligan builds around a URL -- the messages of a failed call
// (which reach mulligan_last_error in C and the exceptions of the Python
// layer), the Python layer's logs and events, the command's output -- shows
// the URL through RedactUrl: its userinfo (user name and password) and the
// values of sensitive query parameters become kRedacted. The request itself
// is sent with the URL as given. Header values are never rendered by the
// engine; IsSensitiveHeader says which fields a renderer must mask (the
// Python layer's Headers repr masks the same ones, from the same lists).
//
// The rules (which query parameters are sensitive, which header fields
// besides the four always masked) are process-wide: URLs are rendered by
// layers that hold no client (the C ABI's last error, a Headers repr, user
// code), and one rule everywhere keeps a log sink from seeing a secret masked
// by one client and not by another. docs/security.md explains each default.
//
// Thread-safety: every function is thread-safe; SetRedactionRules may run
// while other threads render URLs (they see the old rules or the new ones).

#ifndef MULLIGAN_HTTP_REDACT_H_
#define MULLIGAN_HTTP_REDACT_H_

#include <string>
#include <string_view>
#include <vector>

#include "mulligan/base/status.h"

namespace mulligan {
inline namespace v0 {

// What replaces a masked value: "[redacted]".
inline constexpr std::string_view kRedacted = "[redacted]";

// The query parameters whose values are masked by default, in lower case:
// access_token, refresh_token, id_token, client_secret, api_key, apikey, key,
// token, private_token, auth, password, secret, signature, sig,
// x-amz-signature, x-amz-security-token, x-goog-signature (the reason for
// each is in docs/security.md). The one list every layer uses.
const std::vector<std::string>& DefaultSensitiveQueryParams();

// The header fields whose values are always masked, whatever the rules say,
// in lower case: authorization, proxy-authorization, cookie, set-cookie.
const std::vector<std::string>& AlwaysSensitiveHeaders();

// What is masked besides a URL's userinfo (which always is).
struct RedactionRules {
  // Query (and fragment) parameters whose values are masked. Names compare
  // ASCII case-insensitively, after percent-decoding ("API%5FKEY" matches
  // "api_key"). Each must be non-empty, without control characters.
  // Default: DefaultSensitiveQueryParams().
  std::vector<std::string> query_params = DefaultSensitiveQueryParams();
  // Header fields masked besides AlwaysSensitiveHeaders(), e.g. "X-Api-Key".
  // Each must be an RFC 9110 token; compared ASCII case-insensitively.
  // Default: none.
  std::vector<std::string> extra_headers;
};

// Replaces the process-wide rules. kInvalidArgument for an empty query
// parameter name or one with a control character (named by its position),
// or an extra header name that is not a token (named); the rules then stay
// as they were.
Status SetRedactionRules(const RedactionRules& rules);

// Returns a copy of the process-wide rules (the defaults until
// SetRedactionRules is called).
RedactionRules CurrentRedactionRules();

// Returns `url` as mulligan renders it: the userinfo ("user:password" before
// the last '@' of the authority) replaced by kRedacted, and the value of
// every query or fragment parameter named in the process-wide rules replaced
// by kRedacted; everything else byte for byte. Accepts any text, malformed
// URLs included (an invalid URL is what error messages show most): the
// authority starts after "scheme:" and its slashes, or at the start when no
// slash follows (so "user:pass@host" is masked too), and ends at the first
// '/', '?' or '#' (RFC 3986 section 3.2). A password holding a raw '/', '?'
// or '#' (which RFC 3986 and libcurl want percent-encoded) leaves an
// authority whose port is not digits ("user:pa/ss@host"): the userinfo then
// runs to the last '@' of the URL. Never fails.
std::string RedactUrl(std::string_view url);
// The same with explicit rules instead of the process-wide ones.
std::string RedactUrl(std::string_view url, const RedactionRules& rules);

// Returns `text` with every URL in it (a "scheme://" and what follows up to
// a space, a quote or an angle bracket) passed through RedactUrl: for texts
// mulligan does not build itself, such as libcurl's error detail (which may
// quote a proxy URL from the environment, credentials included).
std::string RedactUrlsInText(std::string_view text);

// Returns true when the values of header field `name` must not be rendered:
// one of AlwaysSensitiveHeaders() or of the rules' extra_headers (ASCII
// case-insensitive).
bool IsSensitiveHeader(std::string_view name);

}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_REDACT_H_
