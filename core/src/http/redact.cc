// core/src/http/redact.cc — the one masking of URLs and header names every
// layer renders through (mulligan/http/redact.h), and the process-wide rules.

#include "mulligan/http/redact.h"

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "internal/ascii.h"

namespace mulligan {
inline namespace v0 {

namespace {

using internal::EqualsIgnoreCase;

// The rules in force. Leaked on purpose: a thread may render a URL while the
// process exits, after static destructors ran.
struct Slot {
  std::mutex mu;
  std::shared_ptr<const RedactionRules> rules = std::make_shared<const RedactionRules>();
};

Slot& TheSlot() {
  static Slot* slot = new Slot();
  return *slot;
}

std::shared_ptr<const RedactionRules> LoadRules() {
  Slot& slot = TheSlot();
  std::lock_guard<std::mutex> lock(slot.mu);
  return slot.rules;
}

// RFC 3986 section 3.1: scheme = ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ).
bool IsSchemeChar(char c, bool first) {
  const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (first) return alpha;
  return alpha || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

// Where the authority of `url` starts: after "scheme:" and the slashes that
// follow it, or after leading slashes ("//host"), or at 0 when "scheme:" is
// followed by no slash -- "user:pass@host" is a user and a password (no
// scheme), and masking from the start hides them both.
size_t AuthorityBegin(std::string_view url) {
  size_t s = 0;
  while (s < url.size() && IsSchemeChar(url[s], s == 0)) ++s;
  size_t slashes = (s > 0 && s < url.size() && url[s] == ':') ? s + 1 : 0;
  const size_t after_colon = slashes;
  while (slashes < url.size() && url[slashes] == '/') ++slashes;
  return slashes > after_colon ? slashes : 0;
}

// Whether `authority` (without userinfo) has a port that is not digits.
// That is how a password holding a raw '/', '?' or '#' shows
// ("user:pa/ss@host": the authority ends inside it, at "user:pa"); libcurl
// and urllib reject such a URL for its port, and their messages quote it.
bool HasNonDigitPort(std::string_view authority) {
  size_t host_end = 0;
  if (!authority.empty() && authority.front() == '[') {  // an IPv6 literal
    host_end = authority.find(']');
    if (host_end == std::string_view::npos) return false;
  }
  const size_t colon = authority.find(':', host_end);
  if (colon == std::string_view::npos) return false;
  return authority.find_first_not_of("0123456789", colon + 1) != std::string_view::npos;
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// `name` percent-decoded, '+' read as a space (application/x-www-form-
// urlencoded, which is how query strings are written).
std::string DecodeName(std::string_view name) {
  std::string out;
  out.reserve(name.size());
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (c == '%' && i + 2 < name.size()) {
      const int hi = HexValue(name[i + 1]);
      const int lo = HexValue(name[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += c == '+' ? ' ' : c;
  }
  return out;
}

bool IsListed(std::string_view name, const std::vector<std::string>& names) {
  for (const std::string& listed : names) {
    if (EqualsIgnoreCase(name, listed)) return true;
  }
  return false;
}

// Appends `params` ("a=1&token=x&b") to `out` with the value of every
// parameter `rules` names replaced by kRedacted.
void AppendMaskedParams(std::string_view params, const RedactionRules& rules, std::string* out) {
  while (true) {
    const size_t amp = params.find('&');
    const std::string_view pair = params.substr(0, amp);
    const size_t eq = pair.find('=');
    if (eq != std::string_view::npos && eq + 1 < pair.size() &&
        IsListed(DecodeName(pair.substr(0, eq)), rules.query_params)) {
      out->append(pair.substr(0, eq + 1));
      out->append(kRedacted);
    } else {
      out->append(pair);
    }
    if (amp == std::string_view::npos) return;
    out->push_back('&');
    params.remove_prefix(amp + 1);
  }
}

bool HasControl(std::string_view s) {
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) return true;
  }
  return false;
}

}  // namespace

const std::vector<std::string>& DefaultSensitiveQueryParams() {
  // docs/security.md gives the reason for each entry.
  static const auto* names = new std::vector<std::string>{
      "access_token", "refresh_token", "id_token",        "client_secret",
      "api_key",      "apikey",        "key",             "token",
      "private_token", "auth",         "password",        "secret",
      "signature",    "sig",           "x-amz-signature", "x-amz-security-token",
      "x-goog-signature",
  };
  return *names;
}

const std::vector<std::string>& AlwaysSensitiveHeaders() {
  static const auto* names = new std::vector<std::string>{
      "authorization", "proxy-authorization", "cookie", "set-cookie"};
  return *names;
}

Status SetRedactionRules(const RedactionRules& rules) {
  for (size_t i = 0; i < rules.query_params.size(); ++i) {
    const std::string& name = rules.query_params[i];
    if (name.empty() || HasControl(name)) {
      return InvalidArgumentError("sensitive query parameter name " + std::to_string(i + 1) +
                                  (name.empty() ? " is empty" : " contains a control character"));
    }
  }
  for (const std::string& name : rules.extra_headers) {
    if (!internal::IsToken(name)) {
      return InvalidArgumentError("sensitive header name \"" + name +
                                  "\" is not a token (RFC 9110 section 5.6.2)");
    }
  }
  auto next = std::make_shared<const RedactionRules>(rules);
  Slot& slot = TheSlot();
  std::lock_guard<std::mutex> lock(slot.mu);
  slot.rules = std::move(next);
  return OkStatus();
}

RedactionRules CurrentRedactionRules() { return *LoadRules(); }

std::string RedactUrl(std::string_view url) {
  // Most URLs have neither userinfo nor a query: no rules to load.
  if (url.find_first_of("@?#") == std::string_view::npos) return std::string(url);
  return RedactUrl(url, *LoadRules());
}

std::string RedactUrl(std::string_view url, const RedactionRules& rules) {
  std::string out;
  out.reserve(url.size() + kRedacted.size());
  const size_t begin = AuthorityBegin(url);
  size_t end = url.find_first_of("/?#", begin);
  if (end == std::string_view::npos) end = url.size();
  out.append(url.substr(0, begin));
  // The last '@': a password with a raw '@' ("p@ss") is hidden whole.
  size_t at = url.substr(begin, end - begin).rfind('@');
  if (at == std::string_view::npos && HasNonDigitPort(url.substr(begin, end - begin))) {
    // A password with a raw '/', '?' or '#': the userinfo runs to the last
    // '@' of the URL (which is malformed anyway: more is hidden, not less).
    const size_t last = url.rfind('@');
    if (last != std::string_view::npos && last > end) {
      at = last - begin;
      end = url.find_first_of("/?#", last);
      if (end == std::string_view::npos) end = url.size();
    }
  }
  if (at != std::string_view::npos && at > 0) {
    out.append(kRedacted);
    out.append(url.substr(begin + at, end - begin - at));
  } else {
    out.append(url.substr(begin, end - begin));
  }
  // The query runs from the first '?' to the fragment; the fragment (never
  // sent, but rendered: "#access_token=" of OAuth's implicit grant) from the
  // first '#' to the end.
  const size_t hash = url.find('#', end);
  size_t query = url.find('?', end);
  if (query > hash) query = std::string_view::npos;
  const size_t path_end = std::min(query, hash);
  out.append(url.substr(end, std::min(path_end, url.size()) - end));
  if (query != std::string_view::npos) {
    out.push_back('?');
    const size_t query_end = hash == std::string_view::npos ? url.size() : hash;
    AppendMaskedParams(url.substr(query + 1, query_end - query - 1), rules, &out);
  }
  if (hash != std::string_view::npos) {
    out.push_back('#');
    AppendMaskedParams(url.substr(hash + 1), rules, &out);
  }
  return out;
}

std::string RedactUrlsInText(std::string_view text) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t sep = text.find("://", pos);
    if (sep == std::string_view::npos) break;
    size_t start = sep;
    while (start > pos && IsSchemeChar(text[start - 1], false)) --start;
    // The scheme begins with a letter: skip digits (and +-.) before it.
    while (start < sep && !IsSchemeChar(text[start], true)) ++start;
    if (start == sep) {  // no scheme: not a URL
      out.append(text.substr(pos, sep + 3 - pos));
      pos = sep + 3;
      continue;
    }
    size_t stop = text.find_first_of(" \t\r\n\"'<>", sep);
    if (stop == std::string_view::npos) stop = text.size();
    out.append(text.substr(pos, start - pos));
    out.append(RedactUrl(text.substr(start, stop - start)));
    pos = stop;
  }
  out.append(text.substr(pos));
  return out;
}

bool IsSensitiveHeader(std::string_view name) {
  if (IsListed(name, AlwaysSensitiveHeaders())) return true;
  return IsListed(name, LoadRules()->extra_headers);
}

}  // namespace v0
}  // namespace mulligan
