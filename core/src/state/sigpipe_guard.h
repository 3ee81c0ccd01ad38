// core/src/state/sigpipe_guard.h — private: blocks SIGPIPE in the calling
// thread around a hiredis round trip (used by redis.cc and redis_breaker.cc).

#ifndef MULLIGAN_SRC_STATE_SIGPIPE_GUARD_H_
#define MULLIGAN_SRC_STATE_SIGPIPE_GUARD_H_

#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <ctime>

namespace mulligan {
inline namespace v0 {
namespace internal {

// Keeps a write to a socket the server closed from killing the process with
// SIGPIPE, without touching the process's signal disposition: hiredis 0.14
// writes with write(2), not send(MSG_NOSIGNAL). SIGPIPE is blocked in this
// thread for the round trip, and one it raised is consumed before the mask is
// restored (libpq's pq_block_sigpipe / pq_reset_sigpipe technique).
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigemptyset(&pending);
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeGuard() {
    const int saved_errno = errno;
    if (!was_pending_) {
      sigset_t pending;
      sigemptyset(&pending);
      sigpending(&pending);
      if (sigismember(&pending, SIGPIPE) == 1) {
        const timespec zero{0, 0};
        (void)sigtimedwait(&pipe_, nullptr, &zero);
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved_errno;
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t pipe_;
  sigset_t old_;
  bool was_pending_ = false;
};

}  // namespace internal
}  // namespace v0
}  // namespace mulligan

#endif  // MULLIGAN_SRC_STATE_SIGPIPE_GUARD_H_
