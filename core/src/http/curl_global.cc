// core/src/http/curl_global.cc — curl_global_init, once per process.

#include "curl_global.h"

#include <curl/curl.h>

#include <mutex>

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
}  // namespace v0
}  // namespace mulligan
