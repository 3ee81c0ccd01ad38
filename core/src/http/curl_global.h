// core/src/http/curl_global.h — process-wide libcurl set-up, done once (private).
//
// libcurl needs curl_global_init() before any other call, and it is not
// thread-safe on old versions. mulligan has no required global init
// (STYLE.md 3.8), so every libcurl user in core calls EnsureCurlGlobalInit()
// first; std::call_once makes the first call the only one.

#ifndef MULLIGAN_HTTP_CURL_GLOBAL_H_
#define MULLIGAN_HTTP_CURL_GLOBAL_H_

namespace mulligan {
inline namespace v0 {
namespace internal {

// Runs curl_global_init(CURL_GLOBAL_DEFAULT) once per process and returns
// whether it succeeded (the same answer on every call). libcurl stays
// initialised until the process exits; curl_global_cleanup() is never called
// because other threads or libraries may still be using libcurl.
// Thread-safety: thread-safe.
bool EnsureCurlGlobalInit();

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_CURL_GLOBAL_H_
