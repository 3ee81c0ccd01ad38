//! Overload guards (`mulligan_budget.h`, `mulligan_limits.h`; DESIGN.md
//! section 5): retry budgets (gRPC A6 token bucket, AWS 2020 standard-mode
//! quota, Finagle ratio), SRE adaptive throttling (Google SRE book ch. 21),
//! bulkheads and GCRA rate limiters (ITU-T I.371). Every decision is the
//! engine's; these are RAII handles over the C objects.
//!
//! Thread-safety: the C headers say every budget, throttle, bulkhead and
//! limiter handle is thread-safe, so each type here is `Send + Sync` and
//! `Clone` (an `Arc` of the handle). A [`Policy`] given one shares it (the
//! engine keeps it alive), so the value may be dropped afterwards.
//!
//! Times (`at_ms`) are readings of the clock the guard was made with, in
//! milliseconds: [`Clock::now_ms`] of the policy's clock ([`FakeClock`] in
//! tests, [`SystemClock`] otherwise).
use super::*;

/// A retry budget's arithmetic (`mulligan_budget_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BudgetKind {
    /// gRPC A6 retryThrottling: a failure takes 1 token, a success adds
    /// `token_ratio`; retries only while tokens > `max_tokens / 2`.
    TokenBucket,
    /// The AWS SDKs' 2020 standard-mode retry quota.
    Quota,
    /// Finagle's RetryBudget (Envoy's retry_budget).
    Ratio,
}

/// What a failed attempt was, for the quota's costs (`mulligan_budget_failure`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BudgetFailure {
    /// Any other retryable failure.
    Other,
    /// The attempt timed out.
    Timeout,
    /// An overload answer (HTTP 429/503, gRPC RESOURCE_EXHAUSTED).
    Throttling,
}

impl BudgetFailure {
    fn raw(self) -> i32 {
        (match self {
            BudgetFailure::Other => sys::MULLIGAN_BUDGET_FAILURE_OTHER,
            BudgetFailure::Timeout => sys::MULLIGAN_BUDGET_FAILURE_TIMEOUT,
            BudgetFailure::Throttling => sys::MULLIGAN_BUDGET_FAILURE_THROTTLING,
        }) as i32
    }
}

/// A budget's options (`mulligan_budget_options`). `Default` is the C
/// ABI's: an A6 bucket of 100 tokens, ratio 0.5, and each other kind's
/// defaults. The engine validates every field at [`RetryBudget::new`]
/// (errors name it: "token_ratio").
#[derive(Debug, Clone, PartialEq)]
pub struct BudgetOptions {
    /// The kind (default [`BudgetKind::TokenBucket`]).
    pub kind: BudgetKind,
    /// Token bucket: 0 < max_tokens <= 1000 (100).
    pub max_tokens: f64,
    /// Token bucket: > 0, 3 decimals kept (0.5).
    pub token_ratio: f64,
    /// Quota: > 0 (500).
    pub capacity: i64,
    /// Quota: the cost of a retry (5).
    pub retry_cost: i64,
    /// Quota: the cost of a retry after a timeout (10).
    pub timeout_cost: i64,
    /// Quota: the cost of a retry after a throttling answer (5).
    pub throttling_cost: i64,
    /// Quota: refunded by a call that needed no retry (1).
    pub no_retry_increment: i64,
    /// Ratio: how long deposits count, in [1 s, 60 s] (10 s).
    pub ttl: Duration,
    /// Ratio: retries per call, in [0, 1] (0.2).
    pub percent: f64,
    /// Ratio: retries always allowed per second, >= 0 (10).
    pub min_retries_per_second: f64,
}

impl Default for BudgetOptions {
    fn default() -> Self {
        BudgetOptions {
            kind: BudgetKind::TokenBucket,
            max_tokens: 100.0,
            token_ratio: 0.5,
            capacity: 500,
            retry_cost: 5,
            timeout_cost: 10,
            throttling_cost: 5,
            no_retry_increment: 1,
            ttl: Duration::from_secs(10),
            percent: 0.2,
            min_retries_per_second: 10.0,
        }
    }
}

fn cname(name: &str) -> Result<CString, Error> {
    CString::new(name).map_err(|_| Error {
        code: Code::InvalidArgument,
        message: "name must not contain a NUL byte".to_string(),
        stop_reason: None,
        attempts: 0,
        retry_in: None,
        last: None,
    })
}

fn name_ptr(c: &CString) -> *const core::ffi::c_char {
    if c.as_bytes().is_empty() {
        ptr::null()
    } else {
        c.as_ptr()
    }
}

struct BudgetHandle(NonNull<sys::mulligan_budget>);
// SAFETY: mulligan_budget.h: "mulligan_budget ... handles are thread-safe".
unsafe impl Send for BudgetHandle {}
unsafe impl Sync for BudgetHandle {}
impl Drop for BudgetHandle {
    fn drop(&mut self) {
        // SAFETY: created by mulligan_budget_create/_shared; pipelines keep their own reference.
        unsafe { sys::mulligan_budget_destroy(self.0.as_ptr()) }
    }
}

/// A retry budget (`mulligan_budget`): bounds the retries of every call
/// that shares it; the first attempt is never refused. `Send + Sync`.
#[derive(Clone)]
pub struct RetryBudget(Arc<BudgetHandle>);

impl fmt::Debug for RetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryBudget").field("allowed", &self.allowed()).field("refused", &self.refused()).finish()
    }
}

impl RetryBudget {
    /// A private budget named `name` ("" for none) reading `clock`.
    pub fn new(name: &str, options: &BudgetOptions, clock: &dyn Clock) -> Result<RetryBudget, Error> {
        Self::make(name, options, clock, false)
    }
    /// The process-wide budget named `name` (not empty), made with
    /// `options` on first use; later calls share it and ignore theirs.
    pub fn shared(name: &str, options: &BudgetOptions, clock: &dyn Clock) -> Result<RetryBudget, Error> {
        Self::make(name, options, clock, true)
    }
    fn make(name: &str, o: &BudgetOptions, clock: &dyn Clock, shared: bool) -> Result<RetryBudget, Error> {
        let name = cname(name)?;
        let c = sys::mulligan_budget_options {
            struct_size: std::mem::size_of::<sys::mulligan_budget_options>() as u32,
            kind: (match o.kind {
                BudgetKind::TokenBucket => sys::MULLIGAN_BUDGET_TOKEN_BUCKET,
                BudgetKind::Quota => sys::MULLIGAN_BUDGET_QUOTA,
                BudgetKind::Ratio => sys::MULLIGAN_BUDGET_RATIO,
            }) as i32,
            max_tokens: o.max_tokens,
            token_ratio: o.token_ratio,
            capacity: o.capacity,
            retry_cost: o.retry_cost,
            timeout_cost: o.timeout_cost,
            throttling_cost: o.throttling_cost,
            no_retry_increment: o.no_retry_increment,
            ttl_ms: ms(o.ttl),
            percent: o.percent,
            min_retries_per_second: o.min_retries_per_second,
        };
        let mut out = ptr::null_mut();
        // SAFETY: valid out pointer, options and clock (borrowed for the call).
        check(unsafe {
            if shared {
                sys::mulligan_budget_shared(&mut out, name_ptr(&name), &c, clock.engine_clock())
            } else {
                sys::mulligan_budget_create(&mut out, name_ptr(&name), &c, clock.engine_clock())
            }
        })?;
        Ok(RetryBudget(Arc::new(BudgetHandle(NonNull::new(out).unwrap()))))
    }
    fn raw(&self) -> *mut sys::mulligan_budget {
        self.0 .0.as_ptr()
    }
    /// A logical call began at `at_ms` (a ratio budget's deposit).
    pub fn on_call_started(&self, at_ms: f64) -> Result<(), Error> {
        // SAFETY: valid handle.
        check(unsafe { sys::mulligan_budget_on_call_started(self.raw(), at_ms) })
    }
    /// Counts `n` calls that succeeded without a retry (lazily).
    pub fn add_successes(&self, n: u64) {
        // SAFETY: valid handle (never fails for one).
        unsafe { sys::mulligan_budget_add_successes(self.raw(), n) };
    }
    /// A call succeeded after its last retry took `cost` (>= 0).
    pub fn on_retried_success(&self, cost: i64) -> Result<(), Error> {
        // SAFETY: valid handle.
        check(unsafe { sys::mulligan_budget_on_retried_success(self.raw(), cost) })
    }
    /// A retryable failure of `kind` at `at_ms` (a token bucket takes a token).
    pub fn on_failure(&self, kind: BudgetFailure, at_ms: f64) -> Result<(), Error> {
        // SAFETY: valid handle.
        check(unsafe { sys::mulligan_budget_on_failure(self.raw(), kind.raw(), at_ms) })
    }
    /// Asks for one retry: the cost taken, or [`Code::BudgetExhausted`].
    pub fn try_retry(&self, kind: BudgetFailure, at_ms: f64) -> Result<i64, Error> {
        let mut cost = -1;
        // SAFETY: valid handle and out pointer.
        check(unsafe { sys::mulligan_budget_try_retry(self.raw(), kind.raw(), at_ms, &mut cost) })?;
        Ok(cost)
    }
    /// The room left at `at_ms`, in the kind's unit: the tokens gauge.
    pub fn tokens(&self, at_ms: f64) -> Result<f64, Error> {
        let mut out = 0.0;
        // SAFETY: valid handle and out pointer.
        check(unsafe { sys::mulligan_budget_tokens(self.raw(), at_ms, &mut out) })?;
        Ok(out)
    }
    /// Retries refused so far.
    pub fn refused(&self) -> u64 {
        // SAFETY: valid handle.
        unsafe { sys::mulligan_budget_refused(self.raw()) }
    }
    /// Retries allowed so far.
    pub fn allowed(&self) -> u64 {
        // SAFETY: valid handle.
        unsafe { sys::mulligan_budget_allowed(self.raw()) }
    }
}

/// A throttle's options. `Default`: a 2-minute window, K = 2, a random seed.
#[derive(Debug, Clone, PartialEq)]
pub struct ThrottleOptions {
    /// The window requests and accepts are counted over (>= 1 ms).
    pub window: Duration,
    /// The SRE multiplier K (>= 1).
    pub k: f64,
    /// Seeds the rejection draws (deterministic for one thread).
    pub seed: Option<u64>,
}

impl Default for ThrottleOptions {
    fn default() -> Self {
        ThrottleOptions { window: Duration::from_secs(120), k: 2.0, seed: None }
    }
}

struct ThrottleHandle(NonNull<sys::mulligan_throttle>);
// SAFETY: mulligan_budget.h: "mulligan_throttle handles are thread-safe".
unsafe impl Send for ThrottleHandle {}
unsafe impl Sync for ThrottleHandle {}
impl Drop for ThrottleHandle {
    fn drop(&mut self) {
        // SAFETY: created by mulligan_throttle_create/_shared.
        unsafe { sys::mulligan_throttle_destroy(self.0.as_ptr()) }
    }
}

/// Client-side adaptive throttling (`mulligan_throttle`): a request is
/// rejected locally with probability max(0, (requests - K * accepts) /
/// (requests + 1)) over the window. `Send + Sync`.
#[derive(Clone)]
pub struct Throttle(Arc<ThrottleHandle>);

impl fmt::Debug for Throttle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Throttle").field("rejected", &self.rejected()).finish()
    }
}

impl Throttle {
    /// A private throttle named `name` ("" for none).
    pub fn new(name: &str, options: &ThrottleOptions) -> Result<Throttle, Error> {
        Self::make(name, options, false)
    }
    /// The process-wide throttle named `name` (not empty).
    pub fn shared(name: &str, options: &ThrottleOptions) -> Result<Throttle, Error> {
        Self::make(name, options, true)
    }
    fn make(name: &str, o: &ThrottleOptions, shared: bool) -> Result<Throttle, Error> {
        let name = cname(name)?;
        let c = sys::mulligan_throttle_options {
            struct_size: std::mem::size_of::<sys::mulligan_throttle_options>() as u32,
            window_ms: ms(o.window),
            k: o.k,
            has_seed: o.seed.is_some() as i32,
            seed: o.seed.unwrap_or(0),
        };
        let mut out = ptr::null_mut();
        // SAFETY: valid out pointer and options.
        check(unsafe {
            if shared {
                sys::mulligan_throttle_shared(&mut out, name_ptr(&name), &c)
            } else {
                sys::mulligan_throttle_create(&mut out, name_ptr(&name), &c)
            }
        })?;
        Ok(Throttle(Arc::new(ThrottleHandle(NonNull::new(out).unwrap()))))
    }
    fn raw(&self) -> *mut sys::mulligan_throttle {
        self.0 .0.as_ptr()
    }
    /// Counts a request at `at_ms`: Ok to send it, [`Code::Throttled`] when
    /// rejected locally.
    pub fn admit(&self, at_ms: f64) -> Result<(), Error> {
        // SAFETY: valid handle.
        check(unsafe { sys::mulligan_throttle_admit(self.raw(), at_ms) })
    }
    /// The admitted request succeeded (an accept).
    pub fn record_success(&self) -> Result<(), Error> {
        let o = outcome_init();
        // SAFETY: valid handle and outcome.
        check(unsafe { sys::mulligan_throttle_record(self.raw(), &o) })
    }
    /// The admitted request failed as `failure` says: an accept unless an
    /// overload answer (HTTP 429/503, a refused connection).
    pub fn record_failure(&self, failure: Failure) -> Result<(), Error> {
        let o = failure.outcome();
        // SAFETY: valid handle and outcome.
        check(unsafe { sys::mulligan_throttle_record(self.raw(), &o) })
    }
    /// The rejection probability at `at_ms`.
    pub fn probability(&self, at_ms: f64) -> Result<f64, Error> {
        let mut out = 0.0;
        // SAFETY: valid handle and out pointer.
        check(unsafe { sys::mulligan_throttle_probability(self.raw(), at_ms, &mut out) })?;
        Ok(out)
    }
    /// Requests and accepts in the window at `at_ms`.
    pub fn counts(&self, at_ms: f64) -> Result<(i64, i64), Error> {
        let (mut r, mut a) = (0, 0);
        // SAFETY: valid handle and out pointers.
        check(unsafe { sys::mulligan_throttle_counts(self.raw(), at_ms, &mut r, &mut a) })?;
        Ok((r, a))
    }
    /// Requests rejected so far.
    pub fn rejected(&self) -> u64 {
        // SAFETY: valid handle.
        unsafe { sys::mulligan_throttle_rejected(self.raw()) }
    }
}

struct BulkheadHandle(NonNull<sys::mulligan_bulkhead>);
// SAFETY: mulligan_limits.h: "mulligan_bulkhead ... handles are thread-safe".
unsafe impl Send for BulkheadHandle {}
unsafe impl Sync for BulkheadHandle {}
impl Drop for BulkheadHandle {
    fn drop(&mut self) {
        // SAFETY: created by mulligan_bulkhead_create.
        unsafe { sys::mulligan_bulkhead_destroy(self.0.as_ptr()) }
    }
}

/// A bulkhead (`mulligan_bulkhead`): at most `max_concurrent` calls in
/// flight, with an optional bounded FIFO wait queue. `Send + Sync`.
#[derive(Clone)]
pub struct Bulkhead {
    h: Arc<BulkheadHandle>,
    max_queue: u32,
}

impl fmt::Debug for Bulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Bulkhead").field("in_flight", &self.in_flight()).field("queued", &self.queued()).finish()
    }
}

impl Bulkhead {
    /// `max_concurrent` (>= 1) in flight; `max_queue` waiters (0: none),
    /// each waiting at most `max_wait` (`None`: no bound but the deadline).
    pub fn new(name: &str, max_concurrent: u32, max_queue: u32, max_wait: Option<Duration>) -> Result<Bulkhead, Error> {
        let name = cname(name)?;
        let mut out = ptr::null_mut();
        let clamp = |n: u32| n.min(i32::MAX as u32) as i32;
        // SAFETY: valid out pointer and name.
        check(unsafe {
            sys::mulligan_bulkhead_create(
                &mut out,
                name_ptr(&name),
                clamp(max_concurrent),
                clamp(max_queue),
                max_wait.map_or(-1.0, ms),
            )
        })?;
        Ok(Bulkhead { h: Arc::new(BulkheadHandle(NonNull::new(out).unwrap())), max_queue })
    }
    fn raw(&self) -> *mut sys::mulligan_bulkhead {
        self.h.0.as_ptr()
    }
    /// Takes a slot if one is free and nobody waits (give it back with
    /// [`Bulkhead::release`]).
    pub fn try_acquire(&self) -> bool {
        // SAFETY: valid handle.
        unsafe { sys::mulligan_bulkhead_try_acquire(self.raw()) != 0 }
    }
    /// Frees a slot the caller holds; the oldest waiter gets it.
    pub fn release(&self) {
        // SAFETY: valid handle.
        unsafe { sys::mulligan_bulkhead_release(self.raw()) }
    }
    /// Slots held now.
    pub fn in_flight(&self) -> u32 {
        // SAFETY: valid handle.
        unsafe { sys::mulligan_bulkhead_in_flight(self.raw()) }.max(0) as u32
    }
    /// Callers waiting now.
    pub fn queued(&self) -> u32 {
        // SAFETY: valid handle.
        unsafe { sys::mulligan_bulkhead_queued(self.raw()) }.max(0) as u32
    }
}

/// A rate limiter's options.
#[derive(Debug, Clone, PartialEq)]
pub struct RateLimiterOptions {
    /// Calls per second per key (> 0, finite).
    pub rate: f64,
    /// Calls admitted at once (>= 1, finite).
    pub burst: f64,
    /// The longest a call waits for its slot (`None`: the deadline only;
    /// zero: never waits).
    pub max_wait: Option<Duration>,
    /// A 429/503 Retry-After holds every call to that key.
    pub penalize_retry_after: bool,
}

struct LimiterHandle(NonNull<sys::mulligan_rate_limiter>);
// SAFETY: mulligan_limits.h: "mulligan_rate_limiter handles are thread-safe".
unsafe impl Send for LimiterHandle {}
unsafe impl Sync for LimiterHandle {}
impl Drop for LimiterHandle {
    fn drop(&mut self) {
        // SAFETY: created by mulligan_rate_limiter_create.
        unsafe { sys::mulligan_rate_limiter_destroy(self.0.as_ptr()) }
    }
}

/// A GCRA rate limiter per key (`mulligan_rate_limiter`). `Send + Sync`.
#[derive(Clone)]
pub struct RateLimiter(Arc<LimiterHandle>);

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RateLimiter")
    }
}

impl RateLimiter {
    /// Validates `options` (errors name the field: "rate", "burst").
    pub fn new(name: &str, options: &RateLimiterOptions) -> Result<RateLimiter, Error> {
        let name = cname(name)?;
        let mut out = ptr::null_mut();
        // SAFETY: valid out pointer and name.
        check(unsafe {
            sys::mulligan_rate_limiter_create(
                &mut out,
                name_ptr(&name),
                options.rate,
                options.burst,
                options.max_wait.map_or(-1.0, ms),
                options.penalize_retry_after as i32,
            )
        })?;
        Ok(RateLimiter(Arc::new(LimiterHandle(NonNull::new(out).unwrap()))))
    }
    /// Asks for one slot for `key` ("": the limiter's own bucket) at
    /// `at_ms` (a steady-clock reading), waiting at most `max_wait` (`None`:
    /// the limiter's own bound). Ok(wait before the slot, reserved), or
    /// [`Code::RateLimited`] with [`Error::retry_in`].
    pub fn acquire(&self, key: &str, at_ms: f64, max_wait: Option<Duration>) -> Result<Duration, Error> {
        let key = cname(key)?;
        let (mut wait, mut retry_in) = (0.0, 0.0);
        // SAFETY: valid handle, key and out pointers.
        let rc = unsafe {
            sys::mulligan_rate_limiter_acquire(
                self.0 .0.as_ptr(),
                key.as_ptr(),
                at_ms,
                max_wait.map_or(-1.0, ms),
                &mut wait,
                &mut retry_in,
            )
        };
        check(rc).map_err(|mut e| {
            if e.code == Code::RateLimited {
                e.retry_in = Some(from_ms(retry_in));
                e.stop_reason = Some(StopReason::RateLimited);
            }
            e
        })?;
        Ok(from_ms(wait))
    }
}

/// The guards a policy holds (for its fast path and to keep them alive
/// with it, though the pipeline holds its own references too).
#[derive(Default)]
pub(crate) struct Guards {
    budget: Option<RetryBudget>,
    throttle: Option<Throttle>,
    bulkhead: Option<Bulkhead>,
    limiter: Option<RateLimiter>,
    pub(crate) queue: bool,
}

impl Guards {
    /// Whether attempts must be admitted by the engine (the throttle and the
    /// limits are asked before attempts; a budget only at retries).
    pub(crate) fn admits(&self) -> bool {
        self.throttle.is_some() || self.bulkhead.is_some() || self.limiter.is_some()
    }
    /// A first-attempt success that skipped the engine: the budget's lazy
    /// success counter (one relaxed increment in C).
    #[inline]
    pub(crate) fn fast_success(&self) {
        if let Some(b) = &self.budget {
            b.add_successes(1);
        }
    }
}

impl PolicyBuilder {
    /// Gates every retry with `budget`: a refused retry ends the call with
    /// [`Code::RetriesExhausted`], [`StopReason::Budget`] and the last
    /// failure kept. The budget must read the policy's clock. A budget
    /// alone keeps the success path out of the engine but for one C call
    /// (its lazy success counter).
    pub fn budget(mut self, budget: &RetryBudget) -> Self {
        // SAFETY: valid handles; the options share the budget.
        let rc = unsafe { sys::mulligan_pipeline_options_set_budget(self.opts, budget.raw()) };
        self.note(rc);
        self.guards.budget = Some(budget.clone());
        self
    }
    /// Asks `throttle` before every attempt: a rejection ends the call with
    /// [`Code::Throttled`] (never retried).
    pub fn throttle(mut self, throttle: &Throttle) -> Self {
        // SAFETY: valid handles; the options share the throttle.
        let rc = unsafe { sys::mulligan_pipeline_options_set_throttle(self.opts, throttle.raw()) };
        self.note(rc);
        self.guards.throttle = Some(throttle.clone());
        self
    }
    /// Guards every call with `bulkhead` (held for the whole call unless
    /// `per_attempt`): a queued call waits on the queue; a refusal is
    /// [`Code::BulkheadFull`]. [`retry`] blocks its thread on the queue;
    /// [`retry_async`] polls it through its sleep, in slices of at most 5 ms.
    pub fn bulkhead(mut self, bulkhead: &Bulkhead, per_attempt: bool) -> Self {
        // SAFETY: valid handles; the options share the bulkhead.
        let rc = unsafe { sys::mulligan_pipeline_options_set_bulkhead(self.opts, bulkhead.raw(), per_attempt as i32) };
        self.note(rc);
        self.guards.queue = bulkhead.max_queue > 0;
        self.guards.bulkhead = Some(bulkhead.clone());
        self
    }
    /// Guards every call with `limiter` (asked once per call unless
    /// `per_attempt`): the call waits for its slot (the policy's clock, or
    /// [`retry_async`]'s sleep), or ends with [`Code::RateLimited`]
    /// ([`Error::retry_in`]).
    pub fn rate_limiter(mut self, limiter: &RateLimiter, per_attempt: bool) -> Self {
        // SAFETY: valid handles; the options share the limiter.
        let rc =
            unsafe { sys::mulligan_pipeline_options_set_rate_limiter(self.opts, limiter.0 .0.as_ptr(), per_attempt as i32) };
        self.note(rc);
        self.guards.limiter = Some(limiter.clone());
        self
    }
}
