// tests/fuzz/fuzz_url.cc — libFuzzer harness of the HTTP client's request
// validation and of HttpOrigin (mulligan/http/client.h).
//
// The validation runs in HttpAsyncEngine::Begin, which checks and copies a
// request without starting a transfer (no socket, no DNS); the harness
// cancels each call at once.
// Input: fields separated by '\n': the URL, the method, then header lines
// "Name: value" (the rest, one per line); a header line without ':' is the
// idempotency key instead.
// Post-conditions:
//   - a request that is refused gets kInvalidArgument and a message;
//   - an accepted request has an http:// or https:// URL (any case) without
//     spaces or control characters, a token method, token header names, no
//     header the client manages, no CR, LF or NUL in a value;
//   - HttpOrigin of an accepted URL exists (the breakers key by it);
//   - whenever HttpOrigin returns an origin (for any text), it is
//     "scheme://host:port": scheme and host in lower case, the host
//     non-empty, the port decimal in [0, 65535] (the scheme's default when
//     the URL has none), and for an accepted URL the scheme is the URL's;
//   - RedactUrl (http/redact.h), for any text: a text without '@', '?' or
//     '#' comes back unchanged, and redacting twice changes nothing more;
//   - wherever libcurl finds a user name or a password in an accepted URL
//     (what it would send), RedactUrl masks it: the redacted URL starts with
//     "scheme://" (and any further slashes), then "[redacted]@".

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <curl/curl.h>

#include "fuzz_check.h"
#include "mulligan/http/async_engine.h"
#include "mulligan/http/client.h"
#include "mulligan/http/redact.h"

namespace {

using mulligan_fuzz::Printable;

bool IsTokenChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!IsTokenChar(c)) return false;
  }
  return true;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return out;
}

// Checks the shape of an origin; returns its scheme.
std::string CheckOrigin(std::string_view url, const std::string& origin) {
  const std::string what = "HttpOrigin(" + Printable(url) + ") = " + Printable(origin);
  const size_t sep = origin.find("://");
  FUZZ_CHECK(sep != std::string::npos && sep > 0, what + ": no scheme");
  const size_t colon = origin.rfind(':');
  FUZZ_CHECK(colon > sep + 3, what + ": no host or no port");
  const std::string_view scheme(origin.data(), sep);
  const std::string_view host(origin.data() + sep + 3, colon - sep - 3);
  const std::string_view port(origin.data() + colon + 1, origin.size() - colon - 1);
  FUZZ_CHECK(Lower(scheme) == scheme && Lower(host) == host, what + ": not lower case");
  FUZZ_CHECK(!port.empty() && port.size() <= 5 &&
                 port.find_first_not_of("0123456789") == std::string_view::npos,
             what + ": port is not decimal");
  const int number = std::stoi(std::string(port));
  FUZZ_CHECK(number >= 0 && number <= 65535, what + ": port out of range");
  for (char c : host) {
    const auto u = static_cast<unsigned char>(c);
    FUZZ_CHECK(u > 0x20 && u != 0x7f && c != '/', what + ": a space, control or / in the host");
  }
  return std::string(scheme);
}

// Whether libcurl sees a user name or a password in `url`.
bool CurlSeesUserinfo(const std::string& url) {
  CURLU* parsed = curl_url();
  if (parsed == nullptr) return false;
  bool seen = false;
  if (curl_url_set(parsed, CURLUPART_URL, url.c_str(), 0) == CURLUE_OK) {
    for (CURLUPart part : {CURLUPART_USER, CURLUPART_PASSWORD}) {
      char* value = nullptr;
      if (curl_url_get(parsed, part, &value, 0) == CURLUE_OK && value != nullptr &&
          value[0] != '\0') {
        seen = true;
      }
      curl_free(value);
    }
  }
  curl_url_cleanup(parsed);
  return seen;
}

// The post-conditions of RedactUrl on any text.
void CheckRedaction(const std::string& text) {
  const std::string once = mulligan::RedactUrl(text);
  const std::string what = "RedactUrl(" + Printable(text) + ") = " + Printable(once);
  if (text.find_first_of("@?#") == std::string::npos) {
    FUZZ_CHECK(once == text, what + ": changed a text without '@', '?' or '#'");
  }
  FUZZ_CHECK(mulligan::RedactUrl(once) == once, what + ": a second pass changed it again");
}

mulligan::HttpAsyncEngine& Engine() {
  static std::unique_ptr<mulligan::HttpAsyncEngine> engine = [] {
    mulligan::HttpClientOptions options;
    options.report_metrics = false;  // fuzzed origins must not pile up in the registry
    return std::move(mulligan::HttpAsyncEngine::Create(options)).value();
  }();
  return *engine;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 8192) return 0;
  mulligan_fuzz::Input in(data, size);
  mulligan::HttpRequest request;
  request.url = std::string(in.Field('\n'));
  request.method = std::string(in.Field('\n'));
  while (!in.AtEnd()) {
    const std::string_view line = in.Field('\n');
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      request.idempotency_key = std::string(line);
    } else {
      std::string_view value = line.substr(colon + 1);
      if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
      request.headers.emplace_back(std::string(line.substr(0, colon)), std::string(value));
    }
  }

  CheckRedaction(request.url);
  const std::optional<std::string> origin = mulligan::HttpOrigin(request.url);
  std::string origin_scheme;
  if (origin) origin_scheme = CheckOrigin(request.url, *origin);

  mulligan::HttpAsyncEngine& engine = Engine();
  mulligan::Result<uint64_t> id = engine.Begin(request);
  const std::string what = "request " + Printable(request.method) + " " + Printable(request.url);
  if (!id.ok()) {
    FUZZ_CHECK(id.status().code() == mulligan::StatusCode::kInvalidArgument,
               what + ": " + id.status().ToString());
    FUZZ_CHECK(!id.status().message().empty(), what + ": refused without a message");
    return 0;
  }
  engine.Cancel(*id);
  FUZZ_CHECK(engine.size() == 0, what + ": a cancelled call is still pending");

  const std::string& url = request.url;
  const std::string lower = Lower(url.substr(0, 8));
  FUZZ_CHECK(lower.rfind("http://", 0) == 0 || lower.rfind("https://", 0) == 0,
             what + ": accepted without http(s)://");
  for (char c : url) {
    const auto u = static_cast<unsigned char>(c);
    FUZZ_CHECK(u > 0x20 && u != 0x7f, what + ": accepted with a space or control character");
  }
  FUZZ_CHECK(IsToken(request.method), what + ": accepted a method that is not a token");
  for (const auto& [name, value] : request.headers) {
    FUZZ_CHECK(IsToken(name), what + ": accepted header name " + Printable(name));
    FUZZ_CHECK(!mulligan::IsClientManagedHeader(name),
               what + ": accepted managed header " + Printable(name));
    FUZZ_CHECK(value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos,
               what + ": accepted a header value with CR, LF or NUL");
  }
  FUZZ_CHECK(origin.has_value(), what + ": accepted, but it has no origin");
  FUZZ_CHECK(origin_scheme == (lower.rfind("https://", 0) == 0 ? "https" : "http"),
             what + ": origin " + Printable(*origin) + " has another scheme");
  if (CurlSeesUserinfo(url)) {
    const std::string masked = mulligan::RedactUrl(url);
    // libcurl takes "https:///user@host" too: the authority follows every slash.
    const size_t authority = url.find_first_not_of('/', url.find("://") + 3);
    FUZZ_CHECK(masked.compare(0, authority, url, 0, authority) == 0 &&
                   masked.compare(authority, 11, "[redacted]@") == 0,
               what + ": libcurl sends credentials that RedactUrl shows: " + Printable(masked));
  }
  return 0;
}
