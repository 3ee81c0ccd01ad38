//! Waking a waiting hedged call: the [`CancelToken`] given to each copy
//! (and by a caller), and the bell that a copy's end, a caller's cancel or
//! a [`FakeClock`](crate::FakeClock)'s advance rings. (Added in 0.6.)

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::Duration;

/// What a waiting hedged call sleeps on: a counter of rings and a condvar.
#[derive(Default)]
pub(crate) struct Bell {
    rings: Mutex<u64>,
    cv: Condvar,
}

impl Bell {
    pub(crate) fn ring(&self) {
        *self.rings.lock().unwrap_or_else(|p| p.into_inner()) += 1;
        self.cv.notify_all();
    }
    pub(crate) fn count(&self) -> u64 {
        *self.rings.lock().unwrap_or_else(|p| p.into_inner())
    }
    /// Waits until a ring after the reading `seen`, or `timeout` (None: no limit).
    pub(crate) fn wait(&self, seen: u64, timeout: Option<Duration>) {
        let guard = self.rings.lock().unwrap_or_else(|p| p.into_inner());
        match timeout {
            None => drop(self.cv.wait_while(guard, |n| *n == seen)),
            Some(d) => drop(self.cv.wait_timeout_while(guard, d, |n| *n == seen)),
        }
    }
}

/// The callbacks a [`CancelToken`] or a [`FakeClock`] calls when cancelled
/// or advanced (weak: a finished call's callback goes away with it).
pub(crate) type Watchers = Mutex<Vec<Weak<dyn Fn() + Send + Sync>>>;

pub(crate) fn watch(watchers: &Watchers, f: Weak<dyn Fn() + Send + Sync>) {
    let mut w = watchers.lock().unwrap_or_else(|p| p.into_inner());
    w.retain(|x| x.strong_count() > 0);
    w.push(f);
}

pub(crate) fn notify(watchers: &Watchers) {
    let live: Vec<_> = {
        let mut w = watchers.lock().unwrap_or_else(|p| p.into_inner());
        w.retain(|x| x.strong_count() > 0);
        w.iter().filter_map(Weak::upgrade).collect()
    };
    for f in live {
        f();
    }
}

/// A flag set once, from any thread, to stop work that is no longer
/// wanted: each copy of a [`hedge`](crate::hedge) gets one (set when the copy loses, or
/// when the call ends without it), and a caller may pass one to
/// [`hedge_classified`](crate::hedge_classified) to cancel the whole call. Clones share the flag.
/// `Send + Sync`. mulligan never interrupts a closure: a copy checks
/// [`CancelToken::is_cancelled`] or waits on the token
/// ([`CancelToken::wait_timeout`]) where it can stop. (Added in 0.6.)
#[derive(Clone, Default)]
pub struct CancelToken(Arc<TokenInner>);

#[derive(Default)]
struct TokenInner {
    cancelled: AtomicBool,
    lock: Mutex<()>,
    cv: Condvar,
    watchers: Watchers,
}

impl fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CancelToken").field(&self.is_cancelled()).finish()
    }
}

impl CancelToken {
    /// A token not cancelled.
    pub fn new() -> CancelToken {
        CancelToken::default()
    }
    /// Sets the flag and wakes every waiter (idempotent).
    pub fn cancel(&self) {
        {
            let _g = self.0.lock.lock().unwrap_or_else(|p| p.into_inner());
            if self.0.cancelled.swap(true, Ordering::SeqCst) {
                return;
            }
            self.0.cv.notify_all();
        }
        notify(&self.0.watchers);
    }
    /// Whether [`CancelToken::cancel`] was called.
    pub fn is_cancelled(&self) -> bool {
        self.0.cancelled.load(Ordering::SeqCst)
    }
    /// Blocks until the token is cancelled.
    pub fn wait(&self) {
        let g = self.0.lock.lock().unwrap_or_else(|p| p.into_inner());
        drop(self.0.cv.wait_while(g, |_| !self.is_cancelled()));
    }
    /// Blocks until the token is cancelled or `timeout` (real time) has
    /// passed; true when cancelled. A copy's interruptible sleep.
    pub fn wait_timeout(&self, timeout: Duration) -> bool {
        let g = self.0.lock.lock().unwrap_or_else(|p| p.into_inner());
        drop(self.0.cv.wait_timeout_while(g, timeout, |_| !self.is_cancelled()));
        self.is_cancelled()
    }
    pub(crate) fn watch(&self, f: Weak<dyn Fn() + Send + Sync>) {
        watch(&self.0.watchers, f);
    }
}

