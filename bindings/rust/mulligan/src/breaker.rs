//! Circuit breakers (`mulligan_breaker.h`): closed -> open after
//! failure_threshold consecutive failures (or a failure rate over a sliding
//! window), open -> half-open after reset_timeout, half-open admits
//! half_open_max_calls probes (DESIGN.md section 5). Every state and count
//! comes from the engine.
use super::*;

/// A breaker's state (`mulligan_breaker_state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BreakerState {
    /// Calls flow; failures are counted.
    Closed,
    /// Calls are refused until the reset timeout ends.
    Open,
    /// A limited number of probes are admitted.
    HalfOpen,
    /// Refuses every call until reset (operator override).
    ForcedOpen,
    /// Admits everything, records nothing.
    Disabled,
    /// Admits everything, records (for metrics), never opens.
    MetricsOnly,
    /// A state this crate does not know.
    Other(i32),
}

impl BreakerState {
    fn from_raw(s: i32) -> BreakerState {
        match s as u32 {
            sys::MULLIGAN_BREAKER_CLOSED => BreakerState::Closed,
            sys::MULLIGAN_BREAKER_OPEN => BreakerState::Open,
            sys::MULLIGAN_BREAKER_HALF_OPEN => BreakerState::HalfOpen,
            sys::MULLIGAN_BREAKER_FORCED_OPEN => BreakerState::ForcedOpen,
            sys::MULLIGAN_BREAKER_DISABLED => BreakerState::Disabled,
            sys::MULLIGAN_BREAKER_METRICS_ONLY => BreakerState::MetricsOnly,
            _ => BreakerState::Other(s),
        }
    }
}

/// The result of a call made under a [`Permit`] (`mulligan_call_result`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallResult {
    /// The call succeeded.
    Success,
    /// The call failed (counts towards tripping).
    Failure,
    /// Neither (a 404, a cancelled call): frees a probe slot, judges nothing.
    Ignored,
}

/// Sliding window of a breaker (`mulligan_breaker_window`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Window {
    /// No window: consecutive failures only (the default).
    None,
    /// The last `n` calls.
    Count(u32),
    /// The calls of the last duration, in `buckets` buckets.
    Time(Duration, u32),
}

/// Counters of a breaker (`mulligan_breaker_counts`).
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct BreakerCounts {
    /// successes + failures + ignored.
    pub calls: u64,
    /// Recorded successes.
    pub successes: u64,
    /// Recorded failures.
    pub failures: u64,
    /// Recorded ignored results.
    pub ignored: u64,
    /// Refused acquires.
    pub rejected: u64,
    /// The current run of consecutive failures.
    pub consecutive_failures: u32,
    /// Results recorded with a stale permit.
    pub stale: u64,
}

/// Builds a [`Breaker`]; each setter hands its value to the engine, which
/// validates it (the first invalid one is reported by `build`). Defaults:
/// failure_threshold 5, reset_timeout 30 s, half_open_max_calls 1,
/// permit_timeout 60 s, the system steady clock.
pub struct BreakerBuilder {
    opts: *mut sys::mulligan_breaker_options,
    first_error: Option<Error>,
    _clock: Option<Arc<dyn Clock>>,
}

impl Drop for BreakerBuilder {
    fn drop(&mut self) {
        // SAFETY: created by Breaker::builder (or NULL).
        unsafe { sys::mulligan_breaker_options_destroy(self.opts) }
    }
}

macro_rules! breaker_setter {
    ($(#[$doc:meta])* $name:ident, $ty:ty, $c:ident, |$v:ident| $conv:expr) => {
        $(#[$doc])*
        pub fn $name(mut self, $v: $ty) -> Self {
            // SAFETY: valid options handle (or NULL, rejected by C).
            let rc = unsafe { sys::$c(self.opts, $conv) };
            self.note(rc);
            self
        }
    };
}

fn int(n: u32) -> i32 {
    n.min(i32::MAX as u32) as i32
}

impl BreakerBuilder {
    fn note(&mut self, rc: i32) {
        if rc != 0 && self.first_error.is_none() {
            self.first_error = Some(Error::from_status(rc));
        }
    }
    /// The name (metrics, events and error texts: "circuit breaker 'db' is open").
    pub fn name(mut self, name: &str) -> Self {
        match CString::new(name) {
            // SAFETY: valid handle; copied.
            Ok(c) => {
                let rc = unsafe { sys::mulligan_breaker_options_set_name(self.opts, c.as_ptr()) };
                self.note(rc)
            }
            Err(_) => self.note(sys::MULLIGAN_E_INVALID_ARGUMENT as i32),
        }
        self
    }
    breaker_setter!(
        /// Consecutive failures that open the breaker (>= 1).
        failure_threshold, u32, mulligan_breaker_options_set_failure_threshold, |n| int(n));
    breaker_setter!(
        /// How long the breaker stays open before a probe.
        reset_timeout, Duration, mulligan_breaker_options_set_reset_timeout_ms, |d| ms(d));
    breaker_setter!(
        /// Growth of the reset timeout after each failed probe (>= 1).
        reset_timeout_multiplier, f64, mulligan_breaker_options_set_reset_timeout_multiplier, |m| m);
    breaker_setter!(
        /// Cap on the grown reset timeout.
        max_reset_timeout, Duration, mulligan_breaker_options_set_max_reset_timeout_ms, |d| ms(d));
    breaker_setter!(
        /// Probes admitted at once while half-open (>= 1).
        half_open_max_calls, u32, mulligan_breaker_options_set_half_open_max_calls, |n| int(n));
    breaker_setter!(
        /// How long an unreleased permit holds its slot.
        permit_timeout, Duration, mulligan_breaker_options_set_permit_timeout_ms, |d| ms(d));
    breaker_setter!(
        /// Failure rate (percent, in (0, 100]) over the window that opens the breaker.
        failure_rate_threshold, f64, mulligan_breaker_options_set_failure_rate_threshold, |p| p);
    breaker_setter!(
        /// Calls the window needs before the rate is judged.
        minimum_calls, u32, mulligan_breaker_options_set_minimum_calls, |n| int(n));
    breaker_setter!(
        /// A call at least this long is slow.
        slow_call_duration, Duration, mulligan_breaker_options_set_slow_call_duration_ms, |d| ms(d));
    breaker_setter!(
        /// Slow-call rate (percent) that opens the breaker.
        slow_call_rate_threshold, f64, mulligan_breaker_options_set_slow_call_rate_threshold, |p| p);

    /// The sliding window.
    pub fn window(mut self, window: Window) -> Self {
        // SAFETY: valid handle.
        let rc = unsafe {
            match window {
                Window::None => sys::mulligan_breaker_options_set_window(self.opts, sys::MULLIGAN_WINDOW_NONE as i32),
                Window::Count(n) => {
                    let rc = sys::mulligan_breaker_options_set_window(self.opts, sys::MULLIGAN_WINDOW_COUNT as i32);
                    if rc != 0 { rc } else { sys::mulligan_breaker_options_set_window_size(self.opts, int(n)) }
                }
                Window::Time(d, buckets) => {
                    let mut rc = sys::mulligan_breaker_options_set_window(self.opts, sys::MULLIGAN_WINDOW_TIME as i32);
                    if rc == 0 {
                        rc = sys::mulligan_breaker_options_set_window_duration_ms(self.opts, ms(d));
                    }
                    if rc == 0 && buckets > 0 {
                        rc = sys::mulligan_breaker_options_set_window_buckets(self.opts, int(buckets));
                    }
                    rc
                }
            }
        };
        self.note(rc);
        self
    }

    /// The clock the breaker reads (default [`SystemClock`]); a policy using
    /// this breaker must read the same clock.
    pub fn clock(mut self, clock: impl Clock + 'static) -> Self {
        // SAFETY: valid handle; the Breaker keeps the clock alive.
        let rc = unsafe { sys::mulligan_breaker_options_set_clock(self.opts, clock.engine_clock()) };
        self.note(rc);
        self._clock = Some(Arc::new(clock));
        self
    }

    /// Validates the options and creates a closed breaker.
    pub fn build(mut self) -> Result<Breaker, Error> {
        if let Some(e) = self.first_error.take() {
            return Err(e);
        }
        let mut out = ptr::null_mut();
        // SAFETY: valid options, copied.
        check(unsafe { sys::mulligan_breaker_create(&mut out, self.opts) })?;
        Ok(Breaker { raw: NonNull::new(out).unwrap(), _clock: self._clock.take() })
    }
}

/// A circuit breaker (`mulligan_breaker`). `Send + Sync`: the header says
/// every function taking a breaker may be called from many threads at once.
/// Drop releases the handle (a policy given the breaker keeps sharing it).
pub struct Breaker {
    raw: NonNull<sys::mulligan_breaker>,
    _clock: Option<Arc<dyn Clock>>,
}

// SAFETY: mulligan_breaker.h: "every function taking a breaker may be called
// from many threads at once; no lock is held between acquire and record".
unsafe impl Send for Breaker {}
unsafe impl Sync for Breaker {}

impl Drop for Breaker {
    fn drop(&mut self) {
        // SAFETY: valid handle; permits borrow the breaker, so none is in use.
        unsafe { sys::mulligan_breaker_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Breaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Breaker").field("name", &self.name()).field("state", &self.state()).finish()
    }
}

/// Permission for one call, from [`Breaker::acquire`]. Hand the result back
/// with [`Permit::record`]; a permit dropped without a record records
/// [`CallResult::Ignored`] (its probe slot is freed, nothing is judged).
pub struct Permit<'b> {
    breaker: &'b Breaker,
    raw: sys::mulligan_breaker_permit,
    done: bool,
}

impl Permit<'_> {
    /// Whether this is a half-open probe.
    pub fn is_probe(&self) -> bool {
        self.raw.probe != 0
    }
    /// The state the breaker answered in.
    pub fn state(&self) -> BreakerState {
        BreakerState::from_raw(self.raw.state)
    }
    /// Records the result; `duration` None means "from the acquire until now".
    pub fn record(mut self, result: CallResult, duration: Option<Duration>) {
        self.done = true;
        self.breaker.record_raw(&self.raw, result, duration);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.breaker.record_raw(&self.raw, CallResult::Ignored, None);
        }
    }
}

impl Breaker {
    /// Starts a builder holding the engine's defaults.
    pub fn builder() -> BreakerBuilder {
        let mut opts = ptr::null_mut();
        // SAFETY: valid out pointer.
        let rc = unsafe { sys::mulligan_breaker_options_create(&mut opts) };
        let mut b = BreakerBuilder { opts, first_error: None, _clock: None };
        b.note(rc);
        b
    }

    pub(crate) fn raw(&self) -> *const sys::mulligan_breaker {
        self.raw.as_ptr()
    }

    fn record_raw(&self, permit: &sys::mulligan_breaker_permit, result: CallResult, duration: Option<Duration>) {
        let r = match result {
            CallResult::Success => sys::MULLIGAN_CALL_SUCCESS,
            CallResult::Failure => sys::MULLIGAN_CALL_FAILURE,
            CallResult::Ignored => sys::MULLIGAN_CALL_IGNORED,
        } as i32;
        // SAFETY: valid breaker and permit; the values are always accepted.
        unsafe { sys::mulligan_breaker_record(self.raw.as_ptr(), permit, r, duration.map_or(-1.0, ms)) };
    }

    /// Asks to make one call now. Err([`Code::CircuitOpen`]) when refused,
    /// with [`Error::retry_in`] and the engine's text.
    pub fn acquire(&self) -> Result<Permit<'_>, Error> {
        let mut raw = sys::mulligan_breaker_permit {
            struct_size: std::mem::size_of::<sys::mulligan_breaker_permit>() as u32,
            admitted: 0,
            state: 0,
            retry_in_ms: 0.0,
            probe: 0,
            opaque_: [0; 4],
        };
        // SAFETY: valid breaker and struct.
        let rc = unsafe { sys::mulligan_breaker_acquire(self.raw.as_ptr(), &mut raw) };
        if rc == 0 {
            return Ok(Permit { breaker: self, raw, done: false });
        }
        let mut e = Error::from_status(rc);
        if raw.retry_in_ms < sys::MULLIGAN_DURATION_MAX_MS {
            e.retry_in = Some(from_ms(raw.retry_in_ms));
        }
        e.stop_reason = Some(StopReason::CircuitOpen);
        Err(e)
    }

    /// Like [`Breaker::acquire`], but also returns the raw answer for a
    /// refusal (state, time until probe): for tests and tools.
    pub fn try_acquire(&self) -> (Option<Permit<'_>>, BreakerState, Duration) {
        match self.acquire() {
            Ok(p) => {
                let s = p.state();
                (Some(p), s, Duration::ZERO)
            }
            Err(e) => (None, self.state(), e.retry_in.unwrap_or(DURATION_MAX)),
        }
    }

    /// Runs `op` under the breaker: refused -> Err(CircuitOpen) without
    /// running it; `Ok` records a success, `Err` a failure (your error kept
    /// in [`Error::last_error`], code [`Code::Callback`]). A panic records
    /// nothing judged (ignored) and resumes.
    pub fn call<T, E, F: FnOnce() -> Result<T, E>>(&self, op: F) -> Result<T, Error<E>> {
        let permit = self.acquire().map_err(Error::cast)?;
        match op() {
            Ok(v) => {
                permit.record(CallResult::Success, None);
                Ok(v)
            }
            Err(e) => {
                permit.record(CallResult::Failure, None);
                Err(Error {
                    code: Code::Callback,
                    message: "the call failed (recorded as a failure by the breaker)".into(),
                    stop_reason: None,
                    attempts: 1,
                    retry_in: None,
                    last: Some(e),
                })
            }
        }
    }

    /// The state now (an open breaker whose period ended reads half-open).
    pub fn state(&self) -> BreakerState {
        // SAFETY: valid breaker.
        BreakerState::from_raw(unsafe { sys::mulligan_breaker_state_now(self.raw.as_ptr()) })
    }
    /// The time until a call may be admitted; `None` when forced open.
    pub fn time_until_probe(&self) -> Option<Duration> {
        // SAFETY: valid breaker.
        let t = unsafe { sys::mulligan_breaker_time_until_probe_ms(self.raw.as_ptr()) };
        (t < sys::MULLIGAN_DURATION_MAX_MS).then(|| from_ms(t))
    }
    /// The counters now.
    pub fn counts(&self) -> BreakerCounts {
        // SAFETY: all-zero is valid for this plain struct; struct_size set below.
        let mut c: sys::mulligan_breaker_counts = unsafe { std::mem::zeroed() };
        c.struct_size = std::mem::size_of::<sys::mulligan_breaker_counts>() as u32;
        // SAFETY: valid breaker and struct.
        unsafe { sys::mulligan_breaker_get_counts(self.raw.as_ptr(), &mut c) };
        BreakerCounts {
            calls: c.calls,
            successes: c.successes,
            failures: c.failures,
            ignored: c.ignored,
            rejected: c.rejected,
            consecutive_failures: c.consecutive_failures.max(0) as u32,
            stale: c.stale,
        }
    }
    /// The breaker's name ("" for none).
    pub fn name(&self) -> String {
        // SAFETY: valid breaker; the text is copied at once.
        let p = unsafe { sys::mulligan_breaker_name(self.raw.as_ptr()) };
        if p.is_null() {
            String::new()
        } else {
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    }
    /// Refuses every call until [`Breaker::reset`].
    pub fn force_open(&self) -> Result<(), Error> {
        // SAFETY: valid breaker.
        check(unsafe { sys::mulligan_breaker_force_open(self.raw.as_ptr()) })
    }
    /// Admits every call and records nothing, until reset.
    pub fn disable(&self) -> Result<(), Error> {
        // SAFETY: valid breaker.
        check(unsafe { sys::mulligan_breaker_disable(self.raw.as_ptr()) })
    }
    /// Records for metrics but never opens, until reset.
    pub fn metrics_only(&self) -> Result<(), Error> {
        // SAFETY: valid breaker.
        check(unsafe { sys::mulligan_breaker_metrics_only(self.raw.as_ptr()) })
    }
    /// Back to closed with fresh counters.
    pub fn reset(&self) -> Result<(), Error> {
        // SAFETY: valid breaker.
        check(unsafe { sys::mulligan_breaker_reset(self.raw.as_ptr()) })
    }
}
