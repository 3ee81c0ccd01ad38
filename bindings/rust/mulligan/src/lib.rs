//! mulligan for Rust: retries with backoff and jitter, Retry-After and circuit
//! breakers, decided by the mulligan engine through its C ABI
//! (`mulligan-sys`). No decision is made in Rust: delays, classification of
//! outcomes, breaker states and Retry-After values all come from the engine
//! (DESIGN.md section 1); this crate runs your closure or future and waits
//! the delay the engine decided.
//!
//! ```no_run
//! use std::time::Duration;
//! let policy = mulligan::Policy::builder()
//!     .max_attempts(4)
//!     .base_delay(Duration::from_millis(100))
//!     .build()?;
//! let value = mulligan::retry(&policy, || -> Result<u32, std::io::Error> { Ok(42) })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Hot path (DESIGN.md section 2): a call whose first attempt succeeds on a
//! policy with no breaker and no metrics name does not cross into C at all;
//! the engine is entered only when an attempt failed, a breaker must be
//! asked, or the call must be counted in the metrics.
//!
//! Units: every duration is a [`std::time::Duration`]; the C ABI's
//! milliseconds are converted at the boundary.
//!
//! Thread-safety, from the C headers' promises: [`Policy`] (an immutable
//! pipeline) and [`Breaker`] (every function thread-safe) are `Send + Sync`;
//! [`FakeClock`] (atomic reads and advances) is `Send + Sync`; a logical
//! call's state (inside [`retry`] and [`retry_async`]) is `Send` but not
//! shared, as the header says a call is "stepped by one thread or coroutine
//! at a time"; a [`Permit`] borrows its breaker. [`HedgingPolicy`] (its
//! latency window is thread-safe) and [`CancelToken`] are `Send + Sync`; a
//! hedged call's state (inside [`hedge`] and [`hedge_async`]) is stepped by
//! one thread or task, like a retried call's.
#![warn(missing_docs)]

use mulligan_sys as sys;
use std::convert::Infallible;
use std::ffi::{CStr, CString};
use std::fmt;
use std::future::Future;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::ptr::{self, NonNull};
use std::sync::Arc;
use std::task::Poll;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

mod breaker;
mod cancel;
mod guards;
mod hedge;
pub mod http;
mod wait;
pub use wait::Wait;
pub use cancel::CancelToken;
pub use hedge::{hedge, hedge_async, hedge_async_classified, hedge_classified, HedgingOptions, HedgingPolicy, MAX_HEDGED_ATTEMPTS};
pub use guards::{Bulkhead, BudgetFailure, BudgetKind, BudgetOptions, RateLimiter, RateLimiterOptions, RetryBudget, Throttle, ThrottleOptions};
pub use breaker::{Breaker, BreakerBuilder, BreakerCounts, BreakerState, CallResult, Permit, Window};

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// The code of a failure: mirrors the C ABI's `mulligan_status` (values
/// pinned, equal to the C codes). `#[non_exhaustive]`: codes are appended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// A bad value (an invalid option, a NaN multiplier); retrying will not help.
    InvalidArgument,
    /// An allocation failed.
    NoMemory,
    /// A bug or an unexpected failure inside mulligan.
    Internal,
    /// A user callback aborted the operation.
    Callback,
    /// Every attempt failed with a retryable error and the policy gave up.
    RetriesExhausted,
    /// The call's deadline passed (or the next wait would have crossed it).
    DeadlineExceeded,
    /// A circuit breaker refused the call; never retried.
    CircuitOpen,
    /// The dependency failed in a way that is not retried (a terminal outcome).
    Unavailable,
    /// Transport failure.
    Transport,
    /// An attempt did not finish within its timeout.
    Timeout,
    /// A retry budget refused a retry ([`RetryBudget::try_retry`]). A
    /// retried call refused by its budget ends with
    /// [`Code::RetriesExhausted`] and [`StopReason::Budget`] instead, the
    /// last failure kept. (0.4)
    BudgetExhausted,
    /// Adaptive throttling rejected the call locally; never retried. (0.4)
    Throttled,
    /// A bulkhead refused the call (no slot, no room or time to wait);
    /// never retried. (0.4)
    BulkheadFull,
    /// A rate limiter refused the call ([`Error::retry_in`]: when a slot
    /// frees); never retried. (0.4)
    RateLimited,
    /// A state backend (Redis) could not be reached or failed, and the
    /// operation failed closed. (0.5)
    StateUnavailable,
    /// The durable outbox refused an operation (a full or read-only file,
    /// a lost lease); nothing was written. (0.6)
    Outbox,
    /// A code this version of the crate does not know (a newer library).
    Other(i32),
}

impl Code {
    /// The code of a C status (`MULLIGAN_E_*`); `None` for `MULLIGAN_OK`.
    pub fn from_raw(status: i32) -> Option<Code> {
        Some(match status as u32 {
            sys::MULLIGAN_OK => return None,
            sys::MULLIGAN_E_INVALID_ARGUMENT => Code::InvalidArgument,
            sys::MULLIGAN_E_NO_MEMORY => Code::NoMemory,
            sys::MULLIGAN_E_INTERNAL => Code::Internal,
            sys::MULLIGAN_E_CALLBACK => Code::Callback,
            sys::MULLIGAN_E_RETRIES_EXHAUSTED => Code::RetriesExhausted,
            sys::MULLIGAN_E_DEADLINE_EXCEEDED => Code::DeadlineExceeded,
            sys::MULLIGAN_E_CIRCUIT_OPEN => Code::CircuitOpen,
            sys::MULLIGAN_E_UNAVAILABLE => Code::Unavailable,
            sys::MULLIGAN_E_TRANSPORT => Code::Transport,
            sys::MULLIGAN_E_TIMEOUT => Code::Timeout,
            sys::MULLIGAN_E_BUDGET_EXHAUSTED => Code::BudgetExhausted,
            sys::MULLIGAN_E_THROTTLED => Code::Throttled,
            sys::MULLIGAN_E_BULKHEAD_FULL => Code::BulkheadFull,
            sys::MULLIGAN_E_RATE_LIMITED => Code::RateLimited,
            sys::MULLIGAN_E_STATE_UNAVAILABLE => Code::StateUnavailable,
            sys::MULLIGAN_E_OUTBOX => Code::Outbox,
            _ => Code::Other(status),
        })
    }
}

/// Why a logical call stopped: mirrors `mulligan_stop_reason`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StopReason {
    /// The attempt succeeded.
    Succeeded,
    /// The outcome was terminal (never retried).
    Terminal,
    /// The policy's max_attempts were made.
    AttemptsExhausted,
    /// The deadline passed or the next wait would reach it.
    Deadline,
    /// A Retry-After hint exceeded retry_after_max.
    RetryAfterTooLong,
    /// Not replay-safe and bytes had been sent.
    NotReplaySafe,
    /// A circuit breaker refused an attempt.
    CircuitOpen,
    /// A retry budget refused the retry; the last failure is kept. (0.4)
    Budget,
    /// Adaptive throttling rejected an attempt. (0.4)
    Throttled,
    /// A bulkhead refused the call. (0.4)
    BulkheadFull,
    /// A rate limiter refused the call. (0.4)
    RateLimited,
    /// Another reason (the value of `mulligan_stop_reason`).
    Other(i32),
}

impl StopReason {
    fn from_raw(r: i32) -> StopReason {
        match r as u32 {
            sys::MULLIGAN_STOP_SUCCEEDED => StopReason::Succeeded,
            sys::MULLIGAN_STOP_TERMINAL => StopReason::Terminal,
            sys::MULLIGAN_STOP_ATTEMPTS_EXHAUSTED => StopReason::AttemptsExhausted,
            sys::MULLIGAN_STOP_DEADLINE => StopReason::Deadline,
            sys::MULLIGAN_STOP_RETRY_AFTER_TOO_LONG => StopReason::RetryAfterTooLong,
            sys::MULLIGAN_STOP_NOT_REPLAY_SAFE => StopReason::NotReplaySafe,
            sys::MULLIGAN_STOP_CIRCUIT_OPEN => StopReason::CircuitOpen,
            sys::MULLIGAN_STOP_BUDGET => StopReason::Budget,
            sys::MULLIGAN_STOP_THROTTLED => StopReason::Throttled,
            sys::MULLIGAN_STOP_BULKHEAD_FULL => StopReason::BulkheadFull,
            sys::MULLIGAN_STOP_RATE_LIMITED => StopReason::RateLimited,
            _ => StopReason::Other(r),
        }
    }
    /// The engine's name of the reason ("attempts exhausted", ...).
    pub fn as_str(self) -> &'static str {
        let raw = match self {
            StopReason::Succeeded => sys::MULLIGAN_STOP_SUCCEEDED as i32,
            StopReason::Terminal => sys::MULLIGAN_STOP_TERMINAL as i32,
            StopReason::AttemptsExhausted => sys::MULLIGAN_STOP_ATTEMPTS_EXHAUSTED as i32,
            StopReason::Deadline => sys::MULLIGAN_STOP_DEADLINE as i32,
            StopReason::RetryAfterTooLong => sys::MULLIGAN_STOP_RETRY_AFTER_TOO_LONG as i32,
            StopReason::NotReplaySafe => sys::MULLIGAN_STOP_NOT_REPLAY_SAFE as i32,
            StopReason::CircuitOpen => sys::MULLIGAN_STOP_CIRCUIT_OPEN as i32,
            StopReason::Budget => sys::MULLIGAN_STOP_BUDGET as i32,
            StopReason::Throttled => sys::MULLIGAN_STOP_THROTTLED as i32,
            StopReason::BulkheadFull => sys::MULLIGAN_STOP_BULKHEAD_FULL as i32,
            StopReason::RateLimited => sys::MULLIGAN_STOP_RATE_LIMITED as i32,
            StopReason::Other(r) => r,
        };
        // SAFETY: returns static text for any int.
        unsafe { CStr::from_ptr(sys::mulligan_stop_reason_str(raw)) }.to_str().unwrap_or("unknown")
    }
}

/// A failure of mulligan, or of your operation after the engine gave up.
///
/// `E` is your operation's error type: after a give-up the last error your
/// closure returned is kept ([`Error::last_error`], [`Error::into_last_error`],
/// and `source()`). Errors of mulligan itself (a bad option) use
/// `Error<Infallible>`, the default.
pub struct Error<E = Infallible> {
    code: Code,
    message: String,
    stop_reason: Option<StopReason>,
    attempts: u32,
    retry_in: Option<Duration>,
    last: Option<E>,
}

impl<E> Error<E> {
    /// The code (mirrors `mulligan_status`).
    pub fn code(&self) -> Code {
        self.code
    }
    /// The text: the engine's `mulligan_last_error()` for errors from C ("base_delay_ms
    /// must be ..."; "circuit breaker 'db' is open; next probe in 12.500 s"), or
    /// "gave up after N attempt(s): <reason>" for a give-up.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// Why the call stopped, for errors of a retried call.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.stop_reason
    }
    /// Attempts made before the error (0 for a refused first attempt or a bad option).
    pub fn attempts(&self) -> u32 {
        self.attempts
    }
    /// For [`Code::CircuitOpen`]: the time until the breaker admits a probe
    /// (`None` when forced open: no probe until reset, or for other codes);
    /// for [`Code::RateLimited`]: the time until the limiter has a slot.
    pub fn retry_in(&self) -> Option<Duration> {
        self.retry_in
    }
    /// The last error your operation returned, when the engine gave up on it
    /// (`None` for a refusal before any attempt, or a mulligan error).
    pub fn last_error(&self) -> Option<&E> {
        self.last.as_ref()
    }
    /// Takes the last error your operation returned.
    pub fn into_last_error(self) -> Option<E> {
        self.last
    }

    fn from_status(status: i32) -> Error<E> {
        Error {
            code: Code::from_raw(status).unwrap_or(Code::Internal),
            message: last_error_text(),
            stop_reason: None,
            attempts: 0,
            retry_in: None,
            last: None,
        }
    }

    fn cast<F>(self) -> Error<F> {
        Error {
            code: self.code,
            message: self.message,
            stop_reason: self.stop_reason,
            attempts: self.attempts,
            retry_in: self.retry_in,
            last: None,
        }
    }
}

impl<E: fmt::Debug> fmt::Debug for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Error")
            .field("code", &self.code)
            .field("message", &self.message)
            .field("stop_reason", &self.stop_reason)
            .field("attempts", &self.attempts)
            .field("last", &self.last)
            .finish()
    }
}

impl<E> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl<E: std::error::Error + 'static> std::error::Error for Error<E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.last.as_ref().map(|e| e as &(dyn std::error::Error + 'static))
    }
}

fn last_error_text() -> String {
    // SAFETY: never NULL; valid until the next mulligan call on this thread; copied at once.
    unsafe { CStr::from_ptr(sys::mulligan_last_error()) }.to_string_lossy().into_owned()
}

pub(crate) fn check(status: core::ffi::c_int) -> Result<(), Error> {
    if status == sys::MULLIGAN_OK as i32 {
        Ok(())
    } else {
        Err(Error::from_status(status))
    }
}

pub(crate) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

pub(crate) fn from_ms(ms: f64) -> Duration {
    if ms.is_nan() || ms <= 0.0 {
        Duration::ZERO
    } else if ms >= sys::MULLIGAN_DURATION_MAX_MS {
        DURATION_MAX
    } else {
        // Whole nanoseconds, rounded as the C tests do (ms_to_ns).
        Duration::from_nanos((ms * 1e6).round() as u64)
    }
}

/// The largest duration the engine represents (`MULLIGAN_DURATION_MAX_MS`,
/// i64::MAX nanoseconds, about 292 years): huge values saturate here.
pub const DURATION_MAX: Duration = Duration::from_nanos(i64::MAX as u64);

// ---------------------------------------------------------------------------
// Clocks
// ---------------------------------------------------------------------------

/// Where time comes from and how a wait is done. The engine reads no clock
/// itself: every step gets a reading from here, and the waits the engine
/// decides are done by [`Clock::sleep`]. Two implementations:
/// [`SystemClock`] (the steady clock, `std::thread::sleep`) and
/// [`FakeClock`] (moves only when advanced: a wait advances it, so tests of
/// a retry loop run instantly).
///
/// A clock given to a [`Policy`] must be the one its breakers read
/// (the C header's rule: every user of a breaker reads the same clock).
pub trait Clock: Send + Sync {
    /// A monotonic reading in milliseconds (only differences mean anything).
    fn now_ms(&self) -> f64;
    /// Waits `d` (or, for a fake clock, advances by `d`).
    fn sleep(&self, d: Duration);
    /// The engine's clock behind this one, handed to the pipeline and
    /// breakers (NULL: the system steady clock). Not for users.
    #[doc(hidden)]
    fn engine_clock(&self) -> *const sys::mulligan_clock {
        ptr::null()
    }
    /// Whether `now_ms` is the system steady clock, so that a cheap
    /// `Instant` may stand in for a reading on the hot path.
    #[doc(hidden)]
    fn is_system(&self) -> bool {
        false
    }
    /// Asks the clock to call `on_advance` after every advance, for as long
    /// as it lives; false when the clock is not advanced by hand (only a
    /// [`FakeClock`] is). A hedged call waiting on a fake clock is woken so.
    /// Not for users.
    #[doc(hidden)]
    fn watch_advances(&self, on_advance: std::sync::Weak<dyn Fn() + Send + Sync>) -> bool {
        let _ = on_advance;
        false
    }
}

/// The system's steady (monotonic) clock, the engine's default; waits with
/// `std::thread::sleep`.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> f64 {
        // SAFETY: NULL means the system steady clock.
        unsafe { sys::mulligan_clock_now_ms(ptr::null()) }
    }
    fn sleep(&self, d: Duration) {
        if !d.is_zero() {
            std::thread::sleep(d)
        }
    }
    fn is_system(&self) -> bool {
        true
    }
}

struct FakeClockInner(NonNull<sys::mulligan_clock>, cancel::Watchers);
// SAFETY: mulligan_status.h: "Thread-safety: thread-safe (reads and advances are atomic)".
unsafe impl Send for FakeClockInner {}
unsafe impl Sync for FakeClockInner {}
impl Drop for FakeClockInner {
    fn drop(&mut self) {
        // SAFETY: created by mulligan_clock_create_fake; the Arc keeps it alive
        // for as long as any policy or breaker built with it.
        unsafe { sys::mulligan_clock_destroy(self.0.as_ptr()) }
    }
}

/// The engine's fake clock (`mulligan_clock_create_fake`): moves only when
/// advanced; [`Clock::sleep`] advances it. Cheap to clone (shared); every
/// policy and breaker built with it keeps it alive. Thread-safe (the header:
/// reads and advances are atomic).
#[derive(Clone)]
pub struct FakeClock(Arc<FakeClockInner>);

impl FakeClock {
    /// Creates a fake clock.
    pub fn new() -> FakeClock {
        let mut out = ptr::null_mut();
        // SAFETY: out is a valid pointer.
        let rc = unsafe { sys::mulligan_clock_create_fake(&mut out) };
        match (rc, NonNull::new(out)) {
            (0, Some(p)) => FakeClock(Arc::new(FakeClockInner(p, Default::default()))),
            _ => panic!("mulligan_clock_create_fake failed: {}", last_error_text()),
        }
    }
    /// Moves the clock forward by `d`, then wakes every [`hedge`] waiting
    /// on this clock (so that it asks the engine again).
    pub fn advance(&self, d: Duration) {
        // SAFETY: valid clock; a finite ms >= 0 is always accepted.
        unsafe { sys::mulligan_clock_advance_ms(self.0 .0.as_ptr(), ms(d)) };
        cancel::notify(&self.0 .1);
    }
}

impl Default for FakeClock {
    fn default() -> Self {
        FakeClock::new()
    }
}

impl fmt::Debug for FakeClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FakeClock({} ms)", self.now_ms())
    }
}

impl Clock for FakeClock {
    fn now_ms(&self) -> f64 {
        // SAFETY: valid clock.
        unsafe { sys::mulligan_clock_now_ms(self.0 .0.as_ptr()) }
    }
    fn sleep(&self, d: Duration) {
        self.advance(d)
    }
    fn engine_clock(&self) -> *const sys::mulligan_clock {
        self.0 .0.as_ptr()
    }
    fn watch_advances(&self, on_advance: std::sync::Weak<dyn Fn() + Send + Sync>) -> bool {
        cancel::watch(&self.0 .1, on_advance);
        true
    }
}

/// How an async retry waits: a runtime's timer (`tokio::time::sleep`, an
/// async-std or smol timer, ...) or, in tests, a [`FakeClock`]. Implemented
/// for every `Fn(Duration) -> impl Future<Output = ()>`, so
/// `retry_async(&policy, tokio::time::sleep, ...)` works.
pub trait AsyncSleep {
    /// The future of one wait.
    type Sleep: Future<Output = ()>;
    /// Starts waiting `d`.
    fn sleep(&self, d: Duration) -> Self::Sleep;
}

impl<F, Fut> AsyncSleep for F
where
    F: Fn(Duration) -> Fut,
    Fut: Future<Output = ()>,
{
    type Sleep = Fut;
    fn sleep(&self, d: Duration) -> Fut {
        self(d)
    }
}

impl AsyncSleep for FakeClock {
    type Sleep = std::future::Ready<()>;
    fn sleep(&self, d: Duration) -> Self::Sleep {
        self.advance(d);
        std::future::ready(())
    }
}

// ---------------------------------------------------------------------------
// Policy: the pipeline
// ---------------------------------------------------------------------------

/// Backoff strategies (DESIGN.md section 5); n = retries already made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backoff {
    /// d = base.
    Constant,
    /// d = base * (n + 1).
    Linear,
    /// d = base * multiplier^n (the default).
    Exponential,
    /// AWS decorrelated jitter: d = uniform(base, 3 * previous).
    Decorrelated,
}

/// Jitter applied to a backoff delay (DESIGN.md section 5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    /// No randomness.
    None,
    /// uniform(0, d) (the default).
    Full,
    /// d/2 + uniform(0, d/2).
    Equal,
    /// min(d, max_delay/(1+f)) * uniform(1-f, 1+f), f = jitter_fraction.
    Proportional,
}

/// Builds a [`Policy`]. Each setter hands its value to the engine at once,
/// which validates it; the first invalid value is reported by
/// [`PolicyBuilder::build`] as [`Code::InvalidArgument`] with the engine's
/// text. Defaults (the engine's): 3 attempts, exponential backoff from 200
/// ms, multiplier 2, full jitter, max delay 10 s, no deadline, no breaker.
pub struct PolicyBuilder {
    retry: *mut sys::mulligan_retry_options,
    opts: *mut sys::mulligan_pipeline_options,
    first_error: Option<Error>,
    clock: Arc<dyn Clock>,
    has_breaker: bool,
    has_deadline: bool,
    named: bool,
    guards: guards::Guards,
    report_metrics: bool,
    replay_safe: bool,
}

impl Drop for PolicyBuilder {
    fn drop(&mut self) {
        // SAFETY: created in Policy::builder (or NULL); destroy accepts NULL.
        unsafe {
            sys::mulligan_retry_options_destroy(self.retry);
            sys::mulligan_pipeline_options_destroy(self.opts);
        }
    }
}

macro_rules! retry_setter {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $c:ident, |$v:ident| $conv:expr) => {
        $(#[$doc])*
        pub fn $name(mut self, $v: $ty) -> Self {
            // SAFETY: retry is a valid options handle (or NULL, rejected by C).
            let rc = unsafe { sys::$c(self.retry, $conv) };
            self.note(rc);
            self
        }
    };
}

impl PolicyBuilder {
    fn note(&mut self, rc: i32) {
        if rc != 0 && self.first_error.is_none() {
            self.first_error = Some(Error::from_status(rc));
        }
    }

    retry_setter!(
        /// At most this many attempts (>= 1).
        max_attempts, u32, mulligan_retry_options_set_max_attempts, |n| n.min(i32::MAX as u32) as i32);
    retry_setter!(
        /// The backoff strategy.
        backoff, Backoff, mulligan_retry_options_set_backoff, |b| match b {
            Backoff::Constant => sys::MULLIGAN_BACKOFF_CONSTANT,
            Backoff::Linear => sys::MULLIGAN_BACKOFF_LINEAR,
            Backoff::Exponential => sys::MULLIGAN_BACKOFF_EXPONENTIAL,
            Backoff::Decorrelated => sys::MULLIGAN_BACKOFF_DECORRELATED,
        });
    retry_setter!(
        /// The base delay of the backoff.
        base_delay, Duration, mulligan_retry_options_set_base_delay_ms, |d| ms(d));
    retry_setter!(
        /// The exponential multiplier (finite, >= 0; the engine validates).
        multiplier, f64, mulligan_retry_options_set_multiplier, |m| m);
    retry_setter!(
        /// The cap on every delay, applied after jitter.
        max_delay, Duration, mulligan_retry_options_set_max_delay_ms, |d| ms(d));
    retry_setter!(
        /// The jitter.
        jitter, Jitter, mulligan_retry_options_set_jitter, |j| match j {
            Jitter::None => sys::MULLIGAN_JITTER_NONE,
            Jitter::Full => sys::MULLIGAN_JITTER_FULL,
            Jitter::Equal => sys::MULLIGAN_JITTER_EQUAL,
            Jitter::Proportional => sys::MULLIGAN_JITTER_PROPORTIONAL,
        });
    retry_setter!(
        /// The spread of proportional jitter, in [0, 1].
        jitter_fraction, f64, mulligan_retry_options_set_jitter_fraction, |f| f);
    /// The total time budget of one logical call, from the start of its first attempt (> 0).
    pub fn deadline(mut self, d: Duration) -> Self {
        // SAFETY: valid handle.
        let rc = unsafe { sys::mulligan_retry_options_set_deadline_ms(self.retry, ms(d)) };
        self.note(rc);
        self.has_deadline = rc == 0;
        self
    }
    retry_setter!(
        /// The bound on one attempt (> 0), trimmed to the deadline. mulligan does not
        /// interrupt a closure: the bound is for operations that can take one.
        attempt_timeout, Duration, mulligan_retry_options_set_attempt_timeout_ms, |d| ms(d));
    retry_setter!(
        /// The longest Retry-After hint honoured (default 60 s); a longer one stops the call.
        retry_after_max, Duration, mulligan_retry_options_set_retry_after_max_ms, |d| ms(d));
    retry_setter!(
        /// Clamp a too-long Retry-After hint to retry_after_max instead of stopping.
        retry_after_clamp, bool, mulligan_retry_options_set_retry_after_clamp, |b| b as i32);
    retry_setter!(
        /// The seed of the jitter's generator (reproducible delays; default: random).
        seed, u64, mulligan_retry_options_set_seed, |s| s);

    /// Replaces the backoff and jitter with a composed [`Wait`] (copied).
    pub fn wait(mut self, wait: &Wait) -> Self {
        // SAFETY: valid handles; the wait is copied.
        let rc = unsafe { sys::mulligan_retry_options_set_wait(self.retry, wait.raw()) };
        self.note(rc);
        self
    }
    retry_setter!(
        /// The least delay of every backoff (default 0), applied after jitter.
        min_delay, Duration, mulligan_retry_options_set_min_delay_ms, |d| ms(d));
    retry_setter!(
        /// Unlimited attempts (needs a deadline: build refuses it otherwise).
        unlimited_attempts, bool, mulligan_retry_options_set_unlimited_attempts, |b| b as i32);

    /// Guards every attempt with `breaker` (asked before each attempt; a
    /// refusal ends the call with [`Code::CircuitOpen`], never retried).
    /// The policy shares the breaker: the handle may be dropped afterwards.
    pub fn breaker(mut self, breaker: &Breaker) -> Self {
        // SAFETY: valid handles; the options keep the breaker alive.
        let rc = unsafe { sys::mulligan_pipeline_options_set_breaker(self.opts, breaker.raw()) };
        self.note(rc);
        self.has_breaker = rc == 0;
        self
    }
    /// Records every attempt's result in the breaker instead of one per call.
    pub fn breaker_per_attempt(mut self, on: bool) -> Self {
        // SAFETY: valid handle.
        let rc = unsafe { sys::mulligan_pipeline_options_set_breaker_per_attempt(self.opts, on as i32) };
        self.note(rc);
        self
    }
    /// The name metrics are reported under ([`metrics`]). A named policy
    /// with metrics on enters the engine on every call (so successes are
    /// counted); an unnamed one (the default) reports nothing and keeps the
    /// success path in Rust.
    pub fn name(mut self, name: &str) -> Self {
        match CString::new(name) {
            Ok(c) => {
                // SAFETY: valid handle; the name is copied.
                let rc = unsafe { sys::mulligan_pipeline_options_set_name(self.opts, c.as_ptr()) };
                self.note(rc);
                self.named = rc == 0 && !name.is_empty();
            }
            Err(_) => self.invalid("name must not contain a NUL byte"),
        }
        self
    }
    /// false for operations that must not be repeated once sent (a POST
    /// without an idempotency key): only failures before anything was sent
    /// ([`Failure::Error`] of a refused connection, a DNS failure, a connect
    /// timeout) are then retried. Default true.
    pub fn replay_safe(mut self, on: bool) -> Self {
        self.replay_safe = on;
        self
    }
    /// Whether calls report metrics (default true; only named policies report).
    pub fn report_metrics(mut self, on: bool) -> Self {
        // SAFETY: valid handle.
        let rc = unsafe { sys::mulligan_pipeline_options_set_report_metrics(self.opts, on as i32) };
        self.note(rc);
        self.report_metrics = on;
        self
    }
    /// The clock the calls read and wait with (default [`SystemClock`]).
    /// Breakers given to this policy must read the same clock.
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        // SAFETY: valid handle; the clock is kept alive by the Policy.
        let rc = unsafe { sys::mulligan_pipeline_options_set_clock(self.opts, clock.engine_clock()) };
        self.note(rc);
        self.clock = Arc::new(clock);
        self
    }

    fn invalid(&mut self, text: &str) {
        if self.first_error.is_none() {
            self.first_error = Some(Error {
                code: Code::InvalidArgument,
                message: text.to_string(),
                stop_reason: None,
                attempts: 0,
                retry_in: None,
                last: None,
            });
        }
    }

    /// Validates the options (the engine checks their consistency) and builds the policy.
    pub fn build(mut self) -> Result<Policy, Error> {
        if let Some(e) = self.first_error.take() {
            return Err(e);
        }
        let mut out = ptr::null_mut();
        // SAFETY: valid handles; both are copied by the engine.
        unsafe {
            check(sys::mulligan_pipeline_options_set_retry(self.opts, self.retry))?;
            check(sys::mulligan_pipeline_create(&mut out, self.opts))?;
        }
        let pipeline = NonNull::new(out).ok_or_else(|| Error::from_status(sys::MULLIGAN_E_INTERNAL as i32))?;
        let mut rp = ptr::null_mut();
        // SAFETY: valid options, copied. (The HTTP client takes a retry policy.)
        if let Err(e) = check(unsafe { sys::mulligan_retry_policy_create(&mut rp, self.retry) }) {
            // SAFETY: created above, no call begun.
            unsafe { sys::mulligan_pipeline_destroy(pipeline.as_ptr()) };
            return Err(e);
        }
        Ok(Policy {
            retry_policy: NonNull::new(rp).unwrap(),
            pipeline,
            clock: self.clock.clone(),
            fast: !(self.has_breaker || (self.named && self.report_metrics) || self.guards.admits()),
            system: self.clock.is_system(),
            has_breaker: self.has_breaker || self.guards.admits(),
            queue: self.guards.queue,
            guards: std::mem::take(&mut self.guards),
            has_deadline: self.has_deadline,
            replay_safe: self.replay_safe,
        })
    }
}

/// A validated, immutable retry pipeline (`mulligan_pipeline`): retry
/// options, an optional breaker, metrics name and clock. Build once, use
/// from any number of threads (`Send + Sync`: the header says a pipeline is
/// immutable and may be shared by any number of threads).
pub struct Policy {
    pipeline: NonNull<sys::mulligan_pipeline>,
    retry_policy: NonNull<sys::mulligan_retry_policy>,
    clock: Arc<dyn Clock>,
    fast: bool,
    system: bool,
    // Whether retries are admitted too (a breaker, a throttle, a bulkhead or
    // a rate limiter asks before attempts).
    has_breaker: bool,
    // The bulkhead has a wait queue (admit waits on it with mulligan_call_wait).
    queue: bool,
    // The guards the pipeline shares, kept for the fast path (a budget's
    // lazy success counter).
    guards: guards::Guards,
    has_deadline: bool,
    replay_safe: bool,
}

// SAFETY: mulligan_pipeline.h: "A pipeline is immutable and may be shared by
// any number of threads (mulligan_call_begin() from each)". The clock is Send + Sync.
unsafe impl Send for Policy {}
unsafe impl Sync for Policy {}

impl Drop for Policy {
    fn drop(&mut self) {
        // SAFETY: every call borrows the Policy, so none outlives it.
        unsafe {
            sys::mulligan_pipeline_destroy(self.pipeline.as_ptr());
            sys::mulligan_retry_policy_destroy(self.retry_policy.as_ptr());
        }
    }
}

impl fmt::Debug for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Policy").field("fast_path", &self.fast).finish()
    }
}

impl Policy {
    /// Starts a builder holding the engine's defaults.
    pub fn builder() -> PolicyBuilder {
        let mut retry = ptr::null_mut();
        let mut opts = ptr::null_mut();
        // SAFETY: valid out pointers.
        let (a, b) = unsafe {
            (sys::mulligan_retry_options_create(&mut retry), sys::mulligan_pipeline_options_create(&mut opts))
        };
        let mut builder = PolicyBuilder {
            retry,
            opts,
            first_error: None,
            clock: Arc::new(SystemClock),
            has_breaker: false,
            has_deadline: false,
            guards: guards::Guards::default(),
            replay_safe: true,
            named: false,
            report_metrics: true,
        };
        builder.note(a);
        builder.note(b);
        builder
    }

    /// The policy's clock.
    pub fn clock(&self) -> &dyn Clock {
        &*self.clock
    }
}

// ---------------------------------------------------------------------------
// One logical call through the step API
// ---------------------------------------------------------------------------

/// How the engine should see one failed attempt: what your classifier
/// returns for an error of your operation (see [`retry_classified`]). The
/// engine classifies it (DESIGN.md section 5): `Http` statuses by the
/// policy's retryable statuses (408, 429, 500, 502, 503, 504 by default).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Failure {
    /// A failure worth retrying.
    Retryable,
    /// A failure that retrying will not fix (never retried).
    Terminal,
    /// A retryable failure with a Retry-After hint, which replaces the backoff
    /// delay (a hint longer than retry_after_max stops the call).
    RetryAfter(Duration),
    /// A transport failure of the given kind: the engine classifies it (refused,
    /// reset, DNS, timeouts, truncated and other transport errors retryable by
    /// default; TLS and a malformed URL terminal). Refused, DNS and connect
    /// timeout sent nothing, so even a non-replay-safe call retries them.
    Error(ErrorKind),
    /// An HTTP response: the engine classifies the status.
    Http {
        /// The status code, 100..=599.
        status: u16,
        /// The parsed Retry-After hint ([`parse_retry_after`]), if any.
        retry_after: Option<Duration>,
    },
}

impl Failure {
    fn outcome(self) -> sys::mulligan_outcome {
        let mut o = outcome_init();
        match self {
            Failure::Retryable => o.error_kind = sys::MULLIGAN_ERROR_RETRYABLE as i32,
            Failure::Terminal => o.error_kind = sys::MULLIGAN_ERROR_TERMINAL as i32,
            Failure::RetryAfter(d) => {
                o.error_kind = sys::MULLIGAN_ERROR_RETRYABLE as i32;
                o.retry_after_ms = ms(d);
            }
            Failure::Error(kind) => o.error_kind = kind as i32,
            Failure::Http { status, retry_after } => {
                o.http_status = status as i32;
                if let Some(d) = retry_after {
                    o.retry_after_ms = ms(d);
                }
            }
        }
        o
    }
}

/// The kind of a transport failure (`mulligan_error_kind`; values pinned).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[repr(i32)]
pub enum ErrorKind {
    /// Nothing listened at the address; nothing was sent.
    ConnectionRefused = sys::MULLIGAN_ERROR_CONNECTION_REFUSED as i32,
    /// The peer reset or closed the connection mid-exchange.
    ConnectionReset = sys::MULLIGAN_ERROR_CONNECTION_RESET as i32,
    /// The host name did not resolve; nothing was sent.
    DnsFailure = sys::MULLIGAN_ERROR_DNS_FAILURE as i32,
    /// No connection within the connect timeout; nothing was sent.
    ConnectTimeout = sys::MULLIGAN_ERROR_CONNECT_TIMEOUT as i32,
    /// The attempt did not finish within its timeout.
    Timeout = sys::MULLIGAN_ERROR_TIMEOUT as i32,
    /// TLS handshake or verification failed (terminal by default).
    Tls = sys::MULLIGAN_ERROR_TLS as i32,
    /// Malformed URL or unsupported scheme (terminal).
    InvalidUrl = sys::MULLIGAN_ERROR_INVALID_URL as i32,
    /// Any other transport failure.
    Transport = sys::MULLIGAN_ERROR_TRANSPORT as i32,
    /// The response ended early.
    Truncated = sys::MULLIGAN_ERROR_TRUNCATED as i32,
}

fn outcome_init() -> sys::mulligan_outcome {
    sys::mulligan_outcome {
        struct_size: std::mem::size_of::<sys::mulligan_outcome>() as u32,
        error_kind: sys::MULLIGAN_ERROR_NONE as i32,
        http_status: 0,
        retry_after_ms: -1.0,
        request_sent: -1,
        grpc_status: -1,
    }
}

enum Step {
    Retry(Duration),
    Stop(StopReason),
}

/// A `mulligan_call`: RAII (Drop destroys it, which abandons an unfinished call).
struct Call<'p> {
    raw: NonNull<sys::mulligan_call>,
    policy: &'p Policy,
}

// SAFETY: mulligan_pipeline.h: a call is "stepped by one thread or coroutine
// at a time"; it is not tied to a thread, so it may move (Send), never be shared (!Sync).
unsafe impl Send for Call<'_> {}

impl Drop for Call<'_> {
    fn drop(&mut self) {
        // SAFETY: valid call; the pipeline outlives it (borrowed).
        unsafe { sys::mulligan_call_destroy(self.raw.as_ptr()) }
    }
}

impl<'p> Call<'p> {
    fn begin(policy: &'p Policy, now_ms: f64) -> Result<Call<'p>, Error> {
        let mut out = ptr::null_mut();
        let opts = sys::mulligan_call_options {
            struct_size: std::mem::size_of::<sys::mulligan_call_options>() as u32,
            key: ptr::null(),
            replay_safe: policy.replay_safe as i32,
            attempt_timeout_ms: -1.0,
            fallback: 0,
            max_attempts: 0,
            no_wait: 0,
        };
        // SAFETY: valid pipeline and options (MULLIGAN_CALL_OPTIONS_INIT but replay_safe).
        check(unsafe { sys::mulligan_call_begin(&mut out, policy.pipeline.as_ptr(), now_ms, &opts) })?;
        Ok(Call { raw: NonNull::new(out).unwrap(), policy })
    }
    fn now(&self) -> f64 {
        self.policy.clock.now_ms()
    }
    /// Ok(()) to go; Err for a refusal (circuit open). `now`: a reading of
    /// the policy's clock, reused from the last step when no time passed.
    /// Asks once: Ok(None) to go, Ok(Some(delay)) to wait (a rate
    /// limiter's slot, or a bulkhead's queue) and ask again, Err for a
    /// refusal (a breaker, a throttle, a bulkhead or a limiter).
    fn admit_once(&mut self, now: f64) -> Result<Option<Duration>, Error> {
        let mut a = sys::mulligan_admission {
            struct_size: std::mem::size_of::<sys::mulligan_admission>() as u32,
            action: sys::MULLIGAN_ADMISSION_REFUSE as i32,
            attempt: 0,
            timeout_ms: -1.0,
            delay_ms: 0.0,
            reason: sys::MULLIGAN_STOP_NONE as i32,
            retry_in_ms: 0.0,
            use_fallback: 0,
        };
        // SAFETY: valid call and struct.
        let rc = unsafe { sys::mulligan_call_admit(self.raw.as_ptr(), now, &mut a) };
        if rc == 0 {
            return Ok((a.action == sys::MULLIGAN_ADMISSION_WAIT as i32).then(|| from_ms(a.delay_ms)));
        }
        let mut e = Error::from_status(rc);
        if rc == sys::MULLIGAN_E_CIRCUIT_OPEN as i32 || rc == sys::MULLIGAN_E_RATE_LIMITED as i32 {
            e.retry_in = (a.retry_in_ms < sys::MULLIGAN_DURATION_MAX_MS).then(|| from_ms(a.retry_in_ms));
        }
        if a.reason != sys::MULLIGAN_STOP_NONE as i32 {
            e.stop_reason = Some(StopReason::from_raw(a.reason));
        }
        e.attempts = self.attempts();
        Err(e)
    }
    /// Ok(()) to go; Err for a refusal. `now`: a reading of the policy's
    /// clock, reused from the last step when no time passed. Waits block:
    /// a bulkhead's queue is waited on (real clock; mulligan_call_wait), a
    /// wait that returns at once had no queue ticket (a rate limiter's), so
    /// later rounds sleep with the policy's clock.
    fn admit(&mut self, mut now: f64) -> Result<(), Error> {
        let mut queue = self.policy.queue && self.policy.system;
        while let Some(d) = self.admit_once(now)? {
            if queue {
                let t = Instant::now();
                // SAFETY: valid call, after a WAIT.
                unsafe { sys::mulligan_call_wait(self.raw.as_ptr(), ms(d)) };
                queue = t.elapsed() >= d / 2;
            } else {
                self.policy.clock.sleep(d);
            }
            now = self.now();
        }
        Ok(())
    }
    /// [`Call::admit`] for async code: every wait goes through `sleep`
    /// (a bulkhead's queue is polled in slices of at most 5 ms), so no
    /// thread is blocked.
    async fn admit_async<S: AsyncSleep>(&mut self, mut now: f64, sleep: &S) -> Result<(), Error> {
        while let Some(d) = self.admit_once(now)? {
            let d = if self.policy.queue { d.min(Duration::from_millis(5)) } else { d };
            sleep.sleep(d).await;
            now = self.now();
        }
        Ok(())
    }
    fn record(&mut self, outcome: &sys::mulligan_outcome, now: f64) -> Result<Step, Error> {
        let mut d = sys::mulligan_decision {
            struct_size: std::mem::size_of::<sys::mulligan_decision>() as u32,
            action: sys::MULLIGAN_ACTION_STOP as i32,
            delay_ms: 0.0,
            reason: 0,
            classification: 0,
            attempt: 0,
            from_retry_after: 0,
        };
        // SAFETY: valid call and structs.
        check(unsafe { sys::mulligan_call_record(self.raw.as_ptr(), outcome, now, &mut d) })?;
        Ok(if d.action == sys::MULLIGAN_ACTION_RETRY as i32 {
            Step::Retry(from_ms(d.delay_ms))
        } else {
            Step::Stop(StopReason::from_raw(d.reason))
        })
    }
    fn abandon(&mut self, in_flight: i32) {
        // SAFETY: valid call.
        unsafe { sys::mulligan_call_abandon(self.raw.as_ptr(), self.now(), in_flight) };
    }
    fn attempts(&self) -> u32 {
        // SAFETY: valid call.
        unsafe { sys::mulligan_call_attempts(self.raw.as_ptr()) }.max(0) as u32
    }
    /// The error of a give-up on `last` (the same codes as mulligan_retry_call()).
    fn gave_up<E>(&self, reason: StopReason, last: E) -> Error<E> {
        let attempts = self.attempts();
        let (code, message) = match reason {
            StopReason::Terminal => (Code::Unavailable, format!("attempt {attempts} failed with a terminal outcome")),
            StopReason::Deadline => (Code::DeadlineExceeded, format!("deadline exceeded after {attempts} attempt(s)")),
            StopReason::CircuitOpen => (Code::CircuitOpen, format!("circuit open after {attempts} attempt(s)")),
            r => (Code::RetriesExhausted, format!("gave up after {attempts} attempt(s): {}", r.as_str())),
        };
        Error { code, message, stop_reason: Some(reason), attempts, retry_in: None, last: Some(last) }
    }
}

/// A reading taken before a first attempt: an `Instant` for the system clock
/// (no C call on the hot path), the clock's reading otherwise.
enum Mark {
    At(Instant),
    Ms(f64),
}

impl Mark {
    #[inline]
    fn take(policy: &Policy) -> Mark {
        if policy.system {
            Mark::At(Instant::now())
        } else {
            Mark::Ms(policy.clock.now_ms())
        }
    }
    /// The mark as a reading of the policy's clock, given a reading `now`.
    fn ms(&self, _policy: &Policy, now: f64) -> f64 {
        match self {
            Mark::At(i) => now - i.elapsed().as_secs_f64() * 1000.0,
            Mark::Ms(m) => *m,
        }
    }
}

fn all_retryable<E>(_: &E) -> Failure {
    Failure::Retryable
}

/// Runs `op` until it succeeds or the policy gives up, waiting with the
/// policy's clock the delay the engine decides. Every `Err` is retryable
/// (use [`retry_classified`] to say otherwise).
///
/// Errors: after a give-up, [`Code::RetriesExhausted`] (attempts
/// exhausted), [`Code::DeadlineExceeded`], [`Code::Unavailable`] (a terminal
/// failure), with your last error kept; [`Code::CircuitOpen`] when the
/// policy's breaker refused an attempt (your last error kept if one ran).
///
/// A panic in `op` abandons the logical call (a breaker's half-open slot is
/// freed, the call is reported failed) and then resumes unwinding.
#[inline]
pub fn retry<T, E, F>(policy: &Policy, op: F) -> Result<T, Error<E>>
where
    F: FnMut() -> Result<T, E>,
{
    retry_classified(policy, all_retryable, op)
}

/// [`retry`] with a classifier: `classify` tells the engine how to see each
/// error of `op` ([`Failure`]); the engine decides.
///
/// The success path is this small inlined front (issue 17): on a policy
/// without a breaker, guards that admit, or a reported metrics name, the
/// first attempt runs here and an `Ok` returns at once (a budget's lazy
/// success count is its one C call; the start time is taken only when a
/// deadline needs it). Everything else, the first failure included, is the
/// engine's loop in a function of its own, kept out of line.
#[inline]
pub fn retry_classified<T, E, F, C>(policy: &Policy, classify: C, mut op: F) -> Result<T, Error<E>>
where
    F: FnMut() -> Result<T, E>,
    C: Fn(&E) -> Failure,
{
    if !policy.fast {
        return retry_engine(policy, classify, op, None);
    }
    // The hot path: no C call, and no clock read unless a deadline needs the
    // start time, until the first attempt fails.
    let mark = if policy.has_deadline { Some(Mark::take(policy)) } else { None };
    match op() {
        Ok(v) => {
            policy.guards.fast_success();
            Ok(v)
        }
        Err(e) => retry_after_first_failure(policy, classify, op, mark, e),
    }
}

/// The fast path's first attempt failed: the call begins in the engine at
/// the mark (the start time), then the engine's loop goes on.
#[cold]
#[inline(never)]
fn retry_after_first_failure<T, E, F, C>(policy: &Policy, classify: C, op: F, mark: Option<Mark>, err: E) -> Result<T, Error<E>>
where
    F: FnMut() -> Result<T, E>,
    C: Fn(&E) -> Failure,
{
    retry_engine(policy, classify, op, Some((mark, err)))
}

/// The engine's loop. `first`: the fast path's failed first attempt (its
/// start mark and error), or None to begin and admit the first attempt here.
#[inline(never)]
fn retry_engine<T, E, F, C>(policy: &Policy, classify: C, mut op: F, first: Option<(Option<Mark>, E)>) -> Result<T, Error<E>>
where
    F: FnMut() -> Result<T, E>,
    C: Fn(&E) -> Failure,
{
    let clock = &*policy.clock;
    let mut call;
    let mut err;
    let mut now;
    if let Some((mark, e)) = first {
        err = e;
        now = clock.now_ms();
        let begin = mark.map_or(now, |m| m.ms(policy, now));
        call = Call::begin(policy, begin).map_err(Error::cast)?;
    } else {
        now = clock.now_ms();
        call = Call::begin(policy, now).map_err(Error::cast)?;
        call.admit(now).map_err(Error::cast)?;
        match guarded(&mut call, &mut op) {
            Ok(v) => {
                call.record(&outcome_init(), clock.now_ms()).map_err(Error::cast)?;
                return Ok(v);
            }
            Err(e) => {
                err = e;
                now = clock.now_ms();
            }
        }
    }
    loop {
        let step = match call.record(&classify(&err).outcome(), now) {
            Ok(step) => step,
            Err(bad) => {
                // An invalid outcome from the classifier (an HTTP status outside
                // 100..=599): the engine's InvalidArgument, the user's error kept.
                let mut bad: Error<E> = bad.cast();
                bad.last = Some(err);
                return Err(bad);
            }
        };
        match step {
            Step::Stop(reason) => return Err(call.gave_up(reason, err)),
            Step::Retry(d) => {
                clock.sleep(d);
                if !d.is_zero() {
                    now = clock.now_ms(); // no time passed otherwise: reuse the reading
                }
            }
        }
        if policy.has_breaker {
            if let Err(mut refused) = call.admit(now).map_err(Error::cast) {
                refused.last = Some(err);
                return Err(refused);
            }
        }
        match guarded(&mut call, &mut op) {
            Ok(v) => {
                call.record(&outcome_init(), clock.now_ms()).map_err(Error::cast)?;
                return Ok(v);
            }
            Err(e) => {
                err = e;
                now = clock.now_ms();
            }
        }
    }
}

/// Runs one attempt with the call open; a panic abandons it and resumes.
fn guarded<T, E, F: FnMut() -> Result<T, E>>(call: &mut Call<'_>, op: &mut F) -> Result<T, E> {
    match catch_unwind(AssertUnwindSafe(op)) {
        Ok(r) => r,
        Err(panic) => {
            call.abandon(1);
            resume_unwind(panic)
        }
    }
}

/// The async form of [`retry`]: `op` makes one attempt's future; the waits
/// go through `sleep` (your runtime's timer, or a [`FakeClock`] in tests),
/// so the crate is runtime-agnostic. Dropping the returned future
/// (cancellation) abandons the logical call.
pub async fn retry_async<T, E, F, Fut, S>(policy: &Policy, sleep: S, op: F) -> Result<T, Error<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    S: AsyncSleep,
{
    retry_async_classified(policy, sleep, all_retryable, op).await
}

/// [`retry_async`] with a classifier (see [`retry_classified`]).
pub async fn retry_async_classified<T, E, F, Fut, S, C>(
    policy: &Policy,
    sleep: S,
    classify: C,
    mut op: F,
) -> Result<T, Error<E>>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
    S: AsyncSleep,
    C: Fn(&E) -> Failure,
{
    let clock = &*policy.clock;
    let mut call;
    let mut err;
    let mut now;
    if policy.fast {
        let mark = policy.has_deadline.then(|| Mark::take(policy));
        match op().await {
            Ok(v) => {
                policy.guards.fast_success();
                return Ok(v);
            }
            Err(e) => err = e,
        }
        now = clock.now_ms();
        let begin = mark.map_or(now, |m| m.ms(policy, now));
        call = Call::begin(policy, begin).map_err(Error::cast)?;
    } else {
        now = clock.now_ms();
        call = Call::begin(policy, now).map_err(Error::cast)?;
        call.admit_async(now, &sleep).await.map_err(Error::cast)?;
        match guarded_async(&mut call, op()).await {
            Ok(v) => {
                call.record(&outcome_init(), clock.now_ms()).map_err(Error::cast)?;
                return Ok(v);
            }
            Err(e) => {
                err = e;
                now = clock.now_ms();
            }
        }
    }
    loop {
        let step = match call.record(&classify(&err).outcome(), now) {
            Ok(step) => step,
            Err(bad) => {
                // An invalid outcome from the classifier (an HTTP status outside
                // 100..=599): the engine's InvalidArgument, the user's error kept.
                let mut bad: Error<E> = bad.cast();
                bad.last = Some(err);
                return Err(bad);
            }
        };
        match step {
            Step::Stop(reason) => return Err(call.gave_up(reason, err)),
            Step::Retry(d) => {
                sleep.sleep(d).await;
                now = clock.now_ms();
            }
        }
        if policy.has_breaker {
            if let Err(mut refused) = call.admit_async(now, &sleep).await.map_err(Error::cast) {
                refused.last = Some(err);
                return Err(refused);
            }
        }
        match guarded_async(&mut call, op()).await {
            Ok(v) => {
                call.record(&outcome_init(), clock.now_ms()).map_err(Error::cast)?;
                return Ok(v);
            }
            Err(e) => {
                err = e;
                now = clock.now_ms();
            }
        }
    }
}

async fn guarded_async<T, E, Fut: Future<Output = Result<T, E>>>(call: &mut Call<'_>, fut: Fut) -> Result<T, E> {
    let mut fut = std::pin::pin!(fut);
    let r = std::future::poll_fn(|cx| match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
        Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
        Ok(Poll::Pending) => Poll::Pending,
        Err(panic) => Poll::Ready(Err(panic)),
    })
    .await;
    match r {
        Ok(v) => v,
        Err(panic) => {
            call.abandon(1);
            resume_unwind(panic)
        }
    }
}

// ---------------------------------------------------------------------------
// Retry-After
// ---------------------------------------------------------------------------

/// Parses a Retry-After field value (RFC 9110 section 10.2.3: delay-seconds
/// or an HTTP-date, and the lenient forms of docs/retry-after.md) into the
/// delay from `now`, by the engine (`mulligan_retry_after_parse`). A date in
/// the past gives zero; huge values saturate at [`DURATION_MAX`]. `None` for
/// an invalid value (the caller's backoff then applies).
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let now_ms = match now.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_millis().min(i64::MAX as u128) as i64,
        Err(e) => -(e.duration().as_millis().min(i64::MAX as u128) as i64),
    };
    let c = CString::new(value).ok()?;
    let mut out = -1.0;
    // SAFETY: valid NUL-terminated string and out pointer.
    let rc = unsafe { sys::mulligan_retry_after_parse(c.as_ptr(), now_ms, &mut out) };
    (rc == 0).then(|| from_ms(out))
}

// ---------------------------------------------------------------------------
// Metrics
// ---------------------------------------------------------------------------

/// The process-wide metrics of the engine (`mulligan_metrics.h`).
pub mod metrics {
    use super::*;

    /// Totals of one name (a policy's or breaker's name).
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub struct Snapshot {
        /// Logical calls started.
        pub calls: u64,
        /// Attempts made.
        pub attempts: u64,
        /// Retries (attempts after the first).
        pub retries: u64,
        /// Calls that succeeded (eventually).
        pub successes: u64,
        /// Calls that failed (gave up).
        pub failures: u64,
        /// Calls their caller cancelled (a hedged request's losing copy, a
        /// cancelled task): neither successes nor failures. (0.6)
        pub cancelled: u64,
        /// Attempts refused by an open breaker.
        pub short_circuits: u64,
        /// Hedged copies started after the first (gRPC A96
        /// `grpc.client.call.hedges`). (0.6)
        pub hedges: u64,
        /// Hedged calls won by a copy after the first. (0.6)
        pub hedges_won: u64,
        /// Hedged copies cancelled (losers, copies running at a terminal
        /// outcome, a caller's cancel). (0.6)
        pub hedge_cancelled: u64,
        /// Calls in flight now.
        pub in_flight: i64,
        /// Calls waiting to retry now.
        pub waiting_to_retry: i64,
    }

    type Writer = unsafe extern "C" fn(*mut core::ffi::c_char, usize, *mut usize) -> core::ffi::c_int;

    fn text(write: Writer) -> Result<String, Error> {
        let mut size = 4096usize;
        loop {
            let mut buf = vec![0u8; size];
            let mut needed = 0usize;
            // SAFETY: buf holds size bytes; the library NUL-terminates.
            check(unsafe { write(buf.as_mut_ptr().cast(), size, &mut needed) })?;
            if needed <= size {
                buf.truncate(needed.saturating_sub(1));
                return Ok(String::from_utf8_lossy(&buf).into_owned());
            }
            size = needed + needed / 4; // it may grow between calls: slack
        }
    }

    /// Every name's metrics as Prometheus text exposition.
    pub fn prometheus() -> Result<String, Error> {
        text(sys::mulligan_metrics_prometheus)
    }

    /// Every name's metrics as one JSON object ({"metrics": [...], "totals": {...}}).
    pub fn json() -> Result<String, Error> {
        text(sys::mulligan_metrics_json)
    }

    /// The totals reported under `name` so far (zeros for an unknown name).
    pub fn get(name: &str) -> Result<Snapshot, Error> {
        let c = CString::new(name).map_err(|_| Error {
            code: Code::InvalidArgument,
            message: "name must not contain a NUL byte".into(),
            stop_reason: None,
            attempts: 0,
            retry_in: None,
            last: None,
        })?;
        // SAFETY: all-zero is a valid value of this plain C struct.
        let mut s: sys::mulligan_metrics_snapshot = unsafe { std::mem::zeroed() };
        s.struct_size = std::mem::size_of::<sys::mulligan_metrics_snapshot>() as u32;
        // SAFETY: valid string and struct.
        check(unsafe { sys::mulligan_metrics_get(c.as_ptr(), &mut s) })?;
        Ok(Snapshot {
            calls: s.calls,
            attempts: s.attempts,
            retries: s.retries,
            successes: s.successes,
            failures: s.failures,
            cancelled: s.cancelled,
            short_circuits: s.short_circuits,
            hedges: s.hedges,
            hedges_won: s.hedges_won,
            hedge_cancelled: s.hedge_cancelled,
            in_flight: s.in_flight,
            waiting_to_retry: s.waiting_to_retry,
        })
    }
}
