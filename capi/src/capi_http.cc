// capi/src/capi_http.cc — the resilient HTTP client of the C ABI, a shim over
// mulligan::HttpClient.
//
// Failure with a response: when the call ran at least one attempt, the caller
// always gets a response object, also when the return code is not OK (the
// last attempt failed to connect, timed out, or the deadline ended the chain).
// Its status is then 0 and its error kind, attempts, elapsed time and stop
// reason come from mulligan::HttpCallInfo, so a C caller can log how many
// attempts were made before the failure.

#include <cstddef>
#include <cstring>
#include <string>
#include <utility>

#include "capi_internal.h"

namespace {

using mulligan::capi_internal::DurationToMs;
using mulligan::capi_internal::SetError;

bool IsOws(char c) { return c == ' ' || c == '\t'; }

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

bool EqualsIgnoreCase(const std::string& a, const char* b) {
  const size_t n = std::strlen(b);
  if (a.size() != n) return false;
  for (size_t i = 0; i < n; ++i) {
    if (AsciiLower(a[i]) != AsciiLower(b[i])) return false;
  }
  return true;
}

// Splits "Name: value" into its parts (value without surrounding OWS).
// Returns MULLIGAN_OK or records why the header is malformed.
int ParseHeader(size_t index, const char* line, mulligan::HttpHeaders* headers) {
  if (line == nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "headers[%zu] must not be NULL", index);
  }
  const char* colon = std::strchr(line, ':');
  if (colon == nullptr || colon == line) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "headers[%zu] must be \"Name: value\", got \"%.200s\"", index, line);
  }
  // CR and LF would let a caller inject header lines; reject them here rather
  // than rely on every transport to do so.
  if (std::strpbrk(line, "\r\n") != nullptr) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "headers[%zu] must not contain CR or LF", index);
  }
  std::string name(line, static_cast<size_t>(colon - line));
  for (char c : name) {
    if (IsOws(c)) {
      return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                      "headers[%zu] has whitespace in its name: \"%.200s\"", index, line);
    }
  }
  const char* begin = colon + 1;
  const char* end = line + std::strlen(line);
  while (begin < end && IsOws(*begin)) ++begin;
  while (end > begin && IsOws(end[-1])) --end;
  headers->emplace_back(std::move(name), std::string(begin, static_cast<size_t>(end - begin)));
  return MULLIGAN_OK;
}

// Records a NULL-handle failure of a getter.
void NullResponse(const char* func) {
  SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: resp must not be NULL", func);
}

}  // namespace

extern "C" {

int mulligan_http_client_create(mulligan_http_client** out,
                                const mulligan_retry_policy* default_policy) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  mulligan::HttpClientOptions options;
  if (default_policy != nullptr) options.retry = default_policy->impl.options();
  auto client = mulligan::HttpClient::Create(options);
  if (!client.ok()) return SetError(client.status());
  *out = new mulligan_http_client{std::move(client).value()};
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

void mulligan_http_client_destroy(mulligan_http_client* client) {
  MULLIGAN_CAPI_BEGIN
  delete client;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_http_request(mulligan_http_client* client, const char* method, const char* url,
                          const char* const* headers, size_t header_count, const void* body,
                          size_t body_len, const char* idempotency_key,
                          mulligan_http_response** out) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(out);
  *out = nullptr;
  MULLIGAN_CHECK_NOT_NULL(client);
  MULLIGAN_CHECK_NOT_NULL(url);
  if (headers == nullptr && header_count != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "mulligan_http_request: headers is NULL but header_count is %zu",
                    header_count);
  }
  if (body == nullptr && body_len != 0) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "mulligan_http_request: body is NULL but body_len is %zu", body_len);
  }

  mulligan::HttpRequest request;
  request.method = method != nullptr ? method : "GET";
  request.url = url;
  request.headers.reserve(header_count);
  for (size_t i = 0; i < header_count; ++i) {
    const int rc = ParseHeader(i, headers[i], &request.headers);
    if (rc != MULLIGAN_OK) return rc;
  }
  if (body_len != 0) request.body.assign(static_cast<const char*>(body), body_len);
  if (idempotency_key != nullptr) request.idempotency_key = std::string(idempotency_key);

  mulligan::HttpCallInfo info;
  mulligan::Result<mulligan::HttpResponse> result = client->impl->Send(request, &info);
  if (result.ok()) {
    *out = new mulligan_http_response{std::move(result).value(), mulligan::ErrorKind::kNone};
    return MULLIGAN_OK;
  }
  // The call ran: hand back what is known about it. (Should this allocation
  // fail, the barrier reports NO_MEMORY and *out stays NULL.)
  if (info.attempts > 0) {
    auto* resp = new mulligan_http_response();
    resp->impl.status = 0;
    resp->impl.attempts = info.attempts;
    resp->impl.elapsed = info.elapsed;
    resp->impl.stop_reason = info.stop_reason;
    resp->impl.idempotency_key = info.idempotency_key;
    resp->impl.url = request.url;
    resp->error = info.last_error;
    *out = resp;
  }
  return SetError(result.status());
  MULLIGAN_CAPI_END
}

int mulligan_http_response_status(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0;
  return resp->impl.status;
  MULLIGAN_CAPI_END_RETURN(0)
}

const char* mulligan_http_response_body(const mulligan_http_response* resp, size_t* len) {
  MULLIGAN_CAPI_BEGIN
  if (len != nullptr) *len = 0;
  if (resp == nullptr) return NullResponse(__func__), nullptr;
  if (len != nullptr) *len = resp->impl.body.size();
  return resp->impl.body.c_str();
  MULLIGAN_CAPI_END_RETURN(nullptr)
}

const char* mulligan_http_response_header(const mulligan_http_response* resp, const char* name) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), nullptr;
  if (name == nullptr) {
    SetError(MULLIGAN_E_INVALID_ARGUMENT, "%s: name must not be NULL", __func__);
    return nullptr;
  }
  // Searched here rather than with HttpResponse::Header(), which returns a
  // copy: the C caller needs a pointer that lives as long as the response.
  for (const auto& field : resp->impl.headers) {
    if (EqualsIgnoreCase(field.first, name)) return field.second.c_str();
  }
  return nullptr;
  MULLIGAN_CAPI_END_RETURN(nullptr)
}

size_t mulligan_http_response_header_count(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0;
  return resp->impl.headers.size();
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_http_response_header_at(const mulligan_http_response* resp, size_t index,
                                     const char** name, const char** value) {
  MULLIGAN_CAPI_BEGIN
  if (name != nullptr) *name = nullptr;
  if (value != nullptr) *value = nullptr;
  MULLIGAN_CHECK_NOT_NULL(resp);
  MULLIGAN_CHECK_NOT_NULL(name);
  MULLIGAN_CHECK_NOT_NULL(value);
  if (index >= resp->impl.headers.size()) {
    return SetError(MULLIGAN_E_INVALID_ARGUMENT, "header index %zu out of range (count %zu)",
                    index, resp->impl.headers.size());
  }
  *name = resp->impl.headers[index].first.c_str();
  *value = resp->impl.headers[index].second.c_str();
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

int mulligan_http_response_attempts(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0;
  return resp->impl.attempts;
  MULLIGAN_CAPI_END_RETURN(0)
}

double mulligan_http_response_elapsed_ms(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0.0;
  return DurationToMs(resp->impl.elapsed);
  MULLIGAN_CAPI_END_RETURN(0.0)
}

int mulligan_http_response_error_kind(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0;
  return static_cast<int>(resp->error);
  MULLIGAN_CAPI_END_RETURN(0)
}

int mulligan_http_response_stop_reason(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), 0;
  return static_cast<int>(resp->impl.stop_reason);
  MULLIGAN_CAPI_END_RETURN(0)
}

const char* mulligan_http_response_idempotency_key(const mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  if (resp == nullptr) return NullResponse(__func__), nullptr;
  if (resp->impl.idempotency_key.empty()) return nullptr;
  return resp->impl.idempotency_key.c_str();
  MULLIGAN_CAPI_END_RETURN(nullptr)
}

void mulligan_http_response_destroy(mulligan_http_response* resp) {
  MULLIGAN_CAPI_BEGIN
  delete resp;
  MULLIGAN_CAPI_END_VOID
}

int mulligan_idempotency_key_new(char* buf, size_t buf_size) {
  MULLIGAN_CAPI_BEGIN
  MULLIGAN_CHECK_NOT_NULL(buf);
  const std::string key = mulligan::NewIdempotencyKey();
  if (buf_size < key.size() + 1) {
    if (buf_size > 0) buf[0] = '\0';
    return SetError(MULLIGAN_E_INVALID_ARGUMENT,
                    "buf_size must be at least %zu (MULLIGAN_IDEMPOTENCY_KEY_SIZE), got %zu",
                    key.size() + 1, buf_size);
  }
  std::memcpy(buf, key.c_str(), key.size() + 1);
  return MULLIGAN_OK;
  MULLIGAN_CAPI_END
}

}  // extern "C"
