// core/src/http/handle_pool.h — the sync client's shared connection cache and
// its pool of libcurl easy handles (private).

#ifndef MULLIGAN_HTTP_HANDLE_POOL_H_
#define MULLIGAN_HTTP_HANDLE_POOL_H_

#include <curl/curl.h>

#include <mutex>
#include <vector>

#include "mulligan/base/status.h"
#include "mulligan/http/client.h"
#include "transfer.h"

namespace mulligan {
inline namespace v0 {
namespace internal {

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

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_HTTP_HANDLE_POOL_H_
