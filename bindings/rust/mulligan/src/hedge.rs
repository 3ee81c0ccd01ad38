//! Hedged calls (gRPC A6 `hedgingPolicy`) over the C ABI's step API,
//! `mulligan_hedging.h`: the engine decides when each copy starts, which
//! result wins and which copies to cancel; this module runs the copies (a
//! thread each, or futures polled together) and waits. (Added in 0.6.)
//!
//! The rules (the header's, from gRPC A6 and "The Tail at Scale"): at most
//! `max_attempts` copies, the first included (2..=5; above 5 is 5); copy
//! k+1 starts `delay` after copy k started, or at once after a retryable
//! failure of a copy; the first success wins and the other running copies
//! are cancelled (counted as cancelled copies, neither successes nor
//! failures: their breaker permits are released unjudged, the budget is not
//! charged); every copy asks the policy's breaker, every copy after the
//! first its retry budget, and an open breaker or an empty budget stops new
//! copies (the running ones go on); a policy that is not replay-safe runs
//! one copy.

use super::*;
use std::marker::PhantomData;
use std::pin::Pin;
use crate::cancel::{Bell, CancelToken};
use std::sync::mpsc;
use std::task::Context;

/// The most copies of one hedged call (`MULLIGAN_MAX_HEDGED_ATTEMPTS`; gRPC
/// A6 treats maxAttempts above 5 as 5). (0.6)
pub const MAX_HEDGED_ATTEMPTS: usize = sys::MULLIGAN_MAX_HEDGED_ATTEMPTS as usize;

/// The options of a [`HedgingPolicy`] (`mulligan_hedging_options`; gRPC A6
/// `hedgingPolicy`). `Default` is the engine's defaults; set what you need
/// with `..Default::default()`. Validated by [`HedgingPolicy::new`]. (Added in 0.6.)
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HedgingOptions {
    /// Copies per call, the first included: >= 2 (A6: "must be greater than
    /// 1"); values above 5 are treated as 5. Default 2.
    pub max_attempts: u32,
    /// The wait from one copy's start before the next may start (A6
    /// `hedgingDelay`); zero (the default) starts every copy at once. Also
    /// the delay while `delay_quantile` has too few samples.
    pub delay: Duration,
    /// 0.0 (the default): the fixed `delay`. Else in (0, 1] (e.g. 0.95): the
    /// delay is the nearest-rank quantile of the latencies of the policy's
    /// last `quantile_window` winning copies, once `quantile_min_samples`
    /// are known ("The Tail at Scale", Dean and Barroso, CACM 2013).
    pub delay_quantile: f64,
    /// How many recent latencies the quantile is taken over: in [1, 100000].
    /// Default 100.
    pub quantile_window: u32,
    /// How many latencies must be known before the quantile replaces
    /// `delay`: in [1, quantile_window]. Default 20.
    pub quantile_min_samples: u32,
}

impl Default for HedgingOptions {
    fn default() -> Self {
        // MULLIGAN_HEDGING_OPTIONS_INIT.
        HedgingOptions {
            max_attempts: 2,
            delay: Duration::ZERO,
            delay_quantile: 0.0,
            quantile_window: 100,
            quantile_min_samples: 20,
        }
    }
}

pub(crate) fn c_int(n: u32) -> core::ffi::c_int {
    n.min(i32::MAX as u32) as core::ffi::c_int
}

/// A validated hedging policy (`mulligan_hedging_policy`): its options and
/// the latency window its calls share. `Send + Sync` (the header: immutable
/// apart from its latency window, which is thread-safe): share one between
/// any number of threads and calls; every call borrows it. (Added in 0.6.)
pub struct HedgingPolicy {
    raw: NonNull<sys::mulligan_hedging_policy>,
}

// SAFETY: mulligan_hedging.h: "a policy is immutable apart from its latency
// window, which is thread-safe: share it between any threads".
unsafe impl Send for HedgingPolicy {}
unsafe impl Sync for HedgingPolicy {}

impl Drop for HedgingPolicy {
    fn drop(&mut self) {
        // SAFETY: created by mulligan_hedging_policy_create; every call
        // borrows the policy, so none outlives it.
        unsafe { sys::mulligan_hedging_policy_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for HedgingPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HedgingPolicy").field("current_delay", &self.current_delay()).finish()
    }
}

impl HedgingPolicy {
    /// Validates `options` and creates the policy. A bad field is
    /// [`Code::InvalidArgument`] with the engine's text naming it
    /// ("hedging: max_attempts must be >= 2 (gRPC A6), got 1").
    pub fn new(options: HedgingOptions) -> Result<HedgingPolicy, Error> {
        let o = sys::mulligan_hedging_options {
            struct_size: std::mem::size_of::<sys::mulligan_hedging_options>() as u32,
            max_attempts: c_int(options.max_attempts),
            hedging_delay_ms: ms(options.delay),
            delay_quantile: options.delay_quantile,
            quantile_window: c_int(options.quantile_window),
            quantile_min_samples: c_int(options.quantile_min_samples),
        };
        let mut out = ptr::null_mut();
        // SAFETY: valid out pointer and options (struct_size set); copied.
        check(unsafe { sys::mulligan_hedging_policy_create(&mut out, &o) })?;
        let raw = NonNull::new(out).ok_or_else(|| Error::from_status(sys::MULLIGAN_E_INTERNAL as i32))?;
        Ok(HedgingPolicy { raw })
    }

    /// The delay a copy started now would wait before the next may start:
    /// the quantile of recent winners' latencies, or the fixed delay.
    /// Thread-safe.
    pub fn current_delay(&self) -> Duration {
        // SAFETY: valid policy.
        from_ms(unsafe { sys::mulligan_hedging_policy_current_delay_ms(self.raw.as_ptr()) })
    }
}

// ---------------------------------------------------------------------------
// One hedged call through the step API
// ---------------------------------------------------------------------------

/// What the engine answers before a copy.
enum Admission {
    Start(usize),
    Wait(f64),
    NoMore,
}

/// What the engine answers to a copy's outcome.
struct Decision {
    finished: bool,
    winner: usize,
    cancel: Vec<usize>,
}

/// A `mulligan_hedged_call`: RAII. Dropped unfinished it is cancelled
/// (`cancel_on_drop`: a dropped future, not while unwinding) or abandoned.
struct HedgedCall<'a> {
    raw: NonNull<sys::mulligan_hedged_call>,
    policy: &'a Policy,
    cancel_on_drop: bool,
    _hedging: PhantomData<&'a HedgingPolicy>,
}

// SAFETY: mulligan_hedging.h: "A hedged call is not thread-safe: ... the
// caller steps the call (admit, record, cancel) from one thread at a time";
// it is not tied to a thread, so it may move (Send), never be shared (!Sync).
unsafe impl Send for HedgedCall<'_> {}

impl Drop for HedgedCall<'_> {
    fn drop(&mut self) {
        if !self.finished() {
            if self.cancel_on_drop && !std::thread::panicking() {
                self.cancel();
            } else {
                self.abandon();
            }
        }
        // SAFETY: valid call; the policy and pipeline outlive it (borrowed).
        unsafe { sys::mulligan_hedged_call_destroy(self.raw.as_ptr()) }
    }
}

impl<'a> HedgedCall<'a> {
    fn begin(policy: &'a Policy, hedging: &'a HedgingPolicy, cancel_on_drop: bool) -> Result<HedgedCall<'a>, Error> {
        let opts = sys::mulligan_call_options {
            struct_size: std::mem::size_of::<sys::mulligan_call_options>() as u32,
            key: ptr::null(),
            replay_safe: policy.replay_safe as i32,
            attempt_timeout_ms: -1.0,
            fallback: 0,
            max_attempts: 0,
            no_wait: 0,
        };
        let mut out = ptr::null_mut();
        // SAFETY: valid handles and options (MULLIGAN_CALL_OPTIONS_INIT but replay_safe).
        check(unsafe {
            sys::mulligan_hedged_call_begin(
                &mut out,
                hedging.raw.as_ptr(),
                policy.pipeline.as_ptr(),
                policy.clock.now_ms(),
                &opts,
                sys::MULLIGAN_HEDGE_ACCOUNTING_FULL as i32,
            )
        })?;
        let raw = NonNull::new(out).ok_or_else(|| Error::from_status(sys::MULLIGAN_E_INTERNAL as i32))?;
        Ok(HedgedCall { raw, policy, cancel_on_drop, _hedging: PhantomData })
    }

    fn now(&self) -> f64 {
        self.policy.clock.now_ms()
    }

    fn raw_admit(&mut self, now: f64) -> (i32, sys::mulligan_hedge_admission) {
        let mut a = sys::mulligan_hedge_admission {
            struct_size: std::mem::size_of::<sys::mulligan_hedge_admission>() as u32,
            action: sys::MULLIGAN_HEDGE_NO_MORE as i32,
            copy: 0,
            timeout_ms: -1.0,
            next_start_ms: 0.0,
            reason: sys::MULLIGAN_STOP_NONE as i32,
            retry_in_ms: 0.0,
        };
        // SAFETY: valid call and struct.
        let rc = unsafe { sys::mulligan_hedged_call_admit(self.raw.as_ptr(), now, &mut a) };
        (rc, a)
    }

    /// Whether a copy may start at `now`; Err when the breaker refused the
    /// first copy (the call is then finished).
    fn admit(&mut self, now: f64) -> Result<Admission, Error> {
        let (rc, a) = self.raw_admit(now);
        if rc != 0 {
            let mut e = Error::from_status(rc);
            if rc == sys::MULLIGAN_E_CIRCUIT_OPEN as i32 {
                e.retry_in = retry_in(a.retry_in_ms);
                e.stop_reason = Some(StopReason::CircuitOpen);
            }
            return Err(e);
        }
        Ok(match a.action as u32 {
            sys::MULLIGAN_HEDGE_START => Admission::Start(a.copy.max(1) as usize),
            sys::MULLIGAN_HEDGE_WAIT => Admission::Wait(a.next_start_ms),
            _ => Admission::NoMore,
        })
    }

    fn record(&mut self, copy: usize, outcome: &sys::mulligan_outcome, now: f64) -> Result<Decision, Error> {
        let mut d = sys::mulligan_hedge_decision {
            struct_size: std::mem::size_of::<sys::mulligan_hedge_decision>() as u32,
            finished: 0,
            winner: 0,
            reason: sys::MULLIGAN_STOP_NONE as i32,
            classification: sys::MULLIGAN_CLASSIFICATION_SUCCESS as i32,
            cancel_count: 0,
            cancel: [0; MAX_HEDGED_ATTEMPTS],
        };
        // SAFETY: valid call, outcome and struct.
        check(unsafe { sys::mulligan_hedged_call_record(self.raw.as_ptr(), copy as i32, outcome, now, &mut d) })?;
        let n = (d.cancel_count.max(0) as usize).min(MAX_HEDGED_ATTEMPTS);
        Ok(Decision {
            finished: d.finished != 0,
            winner: d.winner.max(0) as usize,
            cancel: d.cancel[..n].iter().map(|&c| c.max(0) as usize).collect(),
        })
    }

    /// A copy panicked: it is recorded as a terminal failure (the engine
    /// then cancels the other running copies and counts the call failed),
    /// so the panicking copy is not counted among the cancelled ones, as an
    /// abandon would count it. Then abandoned (a no-op once finished).
    fn panicked(&mut self, copy: usize) {
        let now = self.now();
        let _ = self.record(copy, &Failure::Terminal.outcome(), now);
        self.abandon();
    }

    fn abandon(&mut self) {
        // SAFETY: valid call; a no-op once finished.
        unsafe { sys::mulligan_hedged_call_abandon(self.raw.as_ptr(), self.now()) };
    }
    fn cancel(&mut self) {
        // SAFETY: valid call; a no-op once finished.
        unsafe { sys::mulligan_hedged_call_cancel(self.raw.as_ptr(), self.now()) };
    }
    fn finished(&self) -> bool {
        // SAFETY: valid call.
        unsafe { sys::mulligan_hedged_call_finished(self.raw.as_ptr()) != 0 }
    }
    fn running(&self) -> usize {
        // SAFETY: valid call.
        unsafe { sys::mulligan_hedged_call_running(self.raw.as_ptr()) }.max(0) as usize
    }
    fn started(&self) -> u32 {
        // SAFETY: valid call.
        unsafe { sys::mulligan_hedged_call_started(self.raw.as_ptr()) }.max(0) as u32
    }

    /// The error of a finished call that no copy won, `last` the last
    /// copy's error (the same codes as [`retry`]'s give-ups).
    fn stop_error<E>(&mut self, last: Option<E>) -> Error<E> {
        let now = self.now();
        let (_, a) = self.raw_admit(now); // a finished call answers its reason
        let n = self.started();
        let reason = StopReason::from_raw(a.reason);
        let (code, message) = match reason {
            StopReason::Terminal => (Code::Unavailable, format!("hedged call: a copy failed with a terminal outcome ({n} started)")),
            StopReason::Deadline => (Code::DeadlineExceeded, format!("hedged call: deadline exceeded after {n} copies")),
            StopReason::CircuitOpen => {
                (Code::CircuitOpen, format!("hedged call: the circuit breaker stopped new copies after {n} copies"))
            }
            r => (Code::RetriesExhausted, format!("hedged call gave up after {n} copies: {}", r.as_str())),
        };
        let retry_in = if reason == StopReason::CircuitOpen { retry_in(a.retry_in_ms) } else { None };
        Error { code, message, stop_reason: Some(reason), attempts: n, retry_in, last }
    }

    /// The error of a call its caller cancelled (counted cancelled).
    fn cancelled_error<E>(&mut self, last: Option<E>) -> Error<E> {
        self.cancel();
        let n = self.started();
        Error {
            code: Code::Callback,
            message: format!("hedged call cancelled by its caller after {n} copies"),
            stop_reason: None,
            attempts: n,
            retry_in: None,
            last,
        }
    }

    /// Records copy `copy`'s result and says what follows: Some(result)
    /// once the call is decided. `cancel` is called with every copy to stop.
    fn finish_copy<T, E>(
        &mut self,
        copy: usize,
        result: Result<T, E>,
        classify: &impl Fn(&E) -> Failure,
        last: &mut Option<E>,
        mut cancel: impl FnMut(usize),
    ) -> Option<Result<T, Error<E>>> {
        let now = self.now();
        let (outcome, value, err) = match result {
            Ok(v) => (outcome_init(), Some(v), None),
            Err(e) => (classify(&e).outcome(), None, Some(e)),
        };
        let d = match self.record(copy, &outcome, now) {
            Ok(d) => d,
            Err(bad) => {
                // An invalid outcome from the classifier (an HTTP status
                // outside 100..=599): the engine's InvalidArgument, the
                // user's error kept; the call is abandoned (counted failed).
                self.abandon();
                let mut bad: Error<E> = bad.cast();
                bad.last = err;
                return Some(Err(bad));
            }
        };
        for c in d.cancel {
            cancel(c);
        }
        cancel(copy);
        if let Some(e) = err {
            *last = Some(e);
        }
        if !d.finished {
            return None;
        }
        Some(match value {
            Some(v) if d.winner == copy => Ok(v),
            // An error the engine judged a success (an HTTP status < 400) wins as an Err.
            _ if d.winner == copy => Err(gave_up_on_success(self.started(), last.take())),
            _ => Err(self.stop_error(last.take())),
        })
    }
}

/// The error of a winning copy whose Err the engine judged a success (as
/// [`retry`] reports one: the stop reason is Succeeded, your error kept).
fn gave_up_on_success<E>(n: u32, last: Option<E>) -> Error<E> {
    let reason = StopReason::Succeeded;
    Error {
        code: Code::RetriesExhausted,
        message: format!("hedged call gave up after {n} copies: {}", reason.as_str()),
        stop_reason: Some(reason),
        attempts: n,
        retry_in: None,
        last,
    }
}

fn retry_in(ms: f64) -> Option<Duration> {
    (ms < sys::MULLIGAN_DURATION_MAX_MS).then(|| from_ms(ms))
}

/// The wait from `now` until `until` (ms of the policy's clock), rounded
/// up to the nanosecond and at least 1 ns, so that a wait ends at or after
/// `until` (never a zero wait that would spin).
fn wait_until(until: f64, now: f64) -> Duration {
    let ns = ((until - now) * 1e6).ceil();
    if ns >= i64::MAX as f64 {
        DURATION_MAX
    } else {
        Duration::from_nanos(ns.max(1.0) as u64)
    }
}

// ---------------------------------------------------------------------------
// Sync: a thread per copy
// ---------------------------------------------------------------------------

type CopyResult<T, E> = (usize, std::thread::Result<Result<T, E>>);

/// The copies' tokens; dropped (the call decided, an error, a panic) it
/// cancels every copy still running.
struct Tokens([Option<CancelToken>; MAX_HEDGED_ATTEMPTS]);

impl Tokens {
    fn cancel(&mut self, copy: usize) {
        if let Some(t) = copy.checked_sub(1).and_then(|i| self.0.get_mut(i)).and_then(Option::take) {
            t.cancel();
        }
    }
}

impl Drop for Tokens {
    fn drop(&mut self) {
        for t in self.0.iter_mut().filter_map(Option::take) {
            t.cancel();
        }
    }
}

/// Runs `op` as a hedged call through `policy` (its breaker, budget,
/// deadline, metrics name and clock) under `hedging`, every `Err` retryable
/// (use [`hedge_classified`] to say otherwise). See [`hedge_classified`].
/// (Added in 0.6.)
pub fn hedge<T, E, F>(policy: &Policy, hedging: &HedgingPolicy, op: F) -> Result<T, Error<E>>
where
    T: Send + 'static,
    E: Send + 'static,
    F: Fn(usize, &CancelToken) -> Result<T, E> + Send + Sync + 'static,
{
    hedge_classified(policy, hedging, None, all_retryable, op)
}

/// Runs `op` as a hedged call (gRPC A6 `hedgingPolicy`; `mulligan_hedging.h`):
/// copy 1 at once, copy k+1 `hedging`'s delay after copy k started, or at
/// once after a retryable failure (as `classify` and the engine see it), at
/// most `max_attempts` copies. Each copy runs `op(copy, &token)` (copy = 1,
/// 2, ...) on a thread of its own, so `op` must be safe to run concurrently
/// with itself. The first `Ok` wins and is returned; the other copies'
/// tokens are cancelled (counted as cancelled copies, never failures).
/// `hedge` returns once the call is decided: it does not wait for the
/// losing threads, which should see their token and return (their results
/// are discarded).
///
/// `cancel`: the caller's token (None: none). Cancelling it, from any
/// thread, cancels every copy and ends the call as cancelled
/// (`mulligan_hedged_call_cancel`: counted cancelled, neither success nor
/// failure, breaker and budget not charged): [`Code::Callback`].
///
/// Errors, as [`retry`]'s: [`Code::RetriesExhausted`] (every copy failed
/// retryably; stop reason AttemptsExhausted, or Budget when the budget
/// stopped new copies), [`Code::Unavailable`] (a copy failed terminally;
/// the others are cancelled), [`Code::DeadlineExceeded`],
/// [`Code::CircuitOpen`] (the breaker refused the first copy, with its
/// text and [`Error::retry_in`]; or it stopped new copies and the running
/// ones then failed), [`Code::Callback`] (cancelled by `cancel`),
/// [`Code::InvalidArgument`] (an HTTP status outside 100..=599 from
/// `classify`), [`Code::Internal`] (no thread could be started). The last
/// copy's error is kept ([`Error::last_error`]).
///
/// A copy that panics: the other copies are cancelled, the call is
/// abandoned (counted failed) and the panic resumes in the caller.
///
/// Time: the policy's clock. With the system clock (or a clock of your
/// own) the caller's thread waits on a condition variable until the next
/// copy may start or a copy ends, never busy. With a [`FakeClock`], `hedge`
/// never advances the clock: it waits for a copy to end or for the clock to
/// be advanced by another thread (a test), then asks the engine again, so
/// copies start at exact fake times. mulligan does not interrupt a copy:
/// the policy's attempt timeout is not applied to the threads.
///
/// Only replay-safe (idempotent) work should be hedged; a policy built with
/// `replay_safe(false)` runs one copy. Thread-safe: any number of calls may
/// share the policies. (Added in 0.6.)
pub fn hedge_classified<T, E, F, C>(
    policy: &Policy,
    hedging: &HedgingPolicy,
    cancel: Option<&CancelToken>,
    classify: C,
    op: F,
) -> Result<T, Error<E>>
where
    T: Send + 'static,
    E: Send + 'static,
    F: Fn(usize, &CancelToken) -> Result<T, E> + Send + Sync + 'static,
    C: Fn(&E) -> Failure,
{
    let bell = Arc::new(Bell::default());
    let ring: Arc<dyn Fn() + Send + Sync> = {
        let bell = bell.clone();
        Arc::new(move || bell.ring())
    };
    let fake = policy.clock.watch_advances(Arc::downgrade(&ring));
    if let Some(c) = cancel {
        c.watch(Arc::downgrade(&ring));
        if c.is_cancelled() {
            return Err(Error {
                code: Code::Callback,
                message: "hedged call cancelled by its caller before it began".into(),
                stop_reason: None,
                attempts: 0,
                retry_in: None,
                last: None,
            });
        }
    }
    let mut call = HedgedCall::begin(policy, hedging, false).map_err(Error::cast)?;
    let (tx, rx) = mpsc::channel::<CopyResult<T, E>>();
    let mut tokens = Tokens(Default::default());
    let op = Arc::new(op);
    let mut last: Option<E> = None;
    loop {
        let seen = bell.count();
        if cancel.is_some_and(CancelToken::is_cancelled) {
            return Err(call.cancelled_error(last));
        }
        // Start every copy the engine admits now, then look at the results.
        let now = policy.clock.now_ms();
        let timeout = match call.admit(now) {
            Err(refused) => {
                let mut refused: Error<E> = refused.cast();
                refused.last = last;
                return Err(refused);
            }
            Ok(Admission::Start(copy)) => {
                let token = CancelToken::new();
                tokens.0[copy - 1] = Some(token.clone());
                if let Err(e) = spawn_copy(copy, token, &op, &tx, &bell) {
                    call.abandon();
                    return Err(Error {
                        code: Code::Internal,
                        message: format!("hedged call: could not start a thread for copy {copy}: {e}"),
                        stop_reason: None,
                        attempts: call.started(),
                        retry_in: None,
                        last,
                    });
                }
                continue;
            }
            Ok(Admission::NoMore) if call.running() == 0 => return Err(call.stop_error(last)),
            Ok(Admission::NoMore) => None,
            Ok(Admission::Wait(_)) if fake => None, // woken by an advance or a copy
            Ok(Admission::Wait(until)) => Some(wait_until(until, now)),
        };
        let mut recorded = false;
        while let Ok((copy, result)) = rx.try_recv() {
            let result = match result {
                Ok(r) => r,
                Err(panic) => {
                    call.panicked(copy);
                    drop(tokens);
                    resume_unwind(panic)
                }
            };
            if let Some(done) = call.finish_copy(copy, result, &classify, &mut last, |c| tokens.cancel(c)) {
                return done;
            }
            recorded = true;
        }
        if !recorded {
            // A copy's end, the caller's cancel or a fake clock's advance
            // after `seen` rings the bell: none is missed.
            bell.wait(seen, timeout);
        }
    }
}

fn spawn_copy<T, E, F>(
    copy: usize,
    token: CancelToken,
    op: &Arc<F>,
    tx: &mpsc::Sender<CopyResult<T, E>>,
    bell: &Arc<Bell>,
) -> std::io::Result<()>
where
    T: Send + 'static,
    E: Send + 'static,
    F: Fn(usize, &CancelToken) -> Result<T, E> + Send + Sync + 'static,
{
    let (op, tx, bell) = (op.clone(), tx.clone(), bell.clone());
    std::thread::Builder::new().name(format!("mulligan-hedge-{copy}")).spawn(move || {
        let result = catch_unwind(AssertUnwindSafe(|| op(copy, &token)));
        let _ = tx.send((copy, result)); // the call may be over: then nobody listens
        bell.ring();
    })?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Async: the copies' futures polled together
// ---------------------------------------------------------------------------

/// The async form of [`hedge`]: `op(copy)` makes copy `copy`'s future
/// (copy = 1, 2, ...), every `Err` retryable. See [`hedge_async_classified`].
/// (Added in 0.6.)
pub async fn hedge_async<T, E, F, Fut, S>(policy: &Policy, hedging: &HedgingPolicy, sleep: S, op: F) -> Result<T, Error<E>>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    S: AsyncSleep,
{
    hedge_async_classified(policy, hedging, sleep, all_retryable, op).await
}

/// The async form of [`hedge_classified`]: the returned future polls the
/// running copies' futures together (in the task that polls it: no thread,
/// no runtime dependency) and waits for the next copy's start with `sleep`
/// (your runtime's timer, or a [`FakeClock`], which advances at once, so a
/// test's copies start at exact fake times without waiting). The first
/// `Ok` wins; the losers' futures are dropped (a dropped future is a
/// cancelled copy: counted cancelled, never failed). Dropping the returned
/// future before it is ready cancels the call (`mulligan_hedged_call_cancel`:
/// counted cancelled, neither success nor failure, breaker and budget not
/// charged) and drops every copy. A copy whose poll panics: the other
/// copies are dropped, the call abandoned (counted failed) and the panic
/// resumes. Errors as [`hedge_classified`]'s (no [`Code::Callback`]: drop
/// the future to cancel). `Send` when `F`, `Fut`, `S`, its sleep future and
/// `C` are. (Added in 0.6.)
pub async fn hedge_async_classified<T, E, F, Fut, S, C>(
    policy: &Policy,
    hedging: &HedgingPolicy,
    sleep: S,
    classify: C,
    op: F,
) -> Result<T, Error<E>>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    S: AsyncSleep,
    C: Fn(&E) -> Failure,
{
    let call = HedgedCall::begin(policy, hedging, true).map_err(Error::cast)?;
    let mut run = AsyncRun {
        call,
        op,
        sleep,
        classify,
        copies: [(); MAX_HEDGED_ATTEMPTS].map(|_| None),
        timer: None,
        last: None,
    };
    std::future::poll_fn(|cx| run.poll(cx)).await
}

/// What one round of polling the copies gave.
enum Polled<T, E> {
    /// The call is decided.
    Decided(Result<T, Error<E>>),
    /// A copy ended and was recorded; the call goes on.
    Recorded,
    /// Every copy is still pending.
    Pending,
}

struct AsyncRun<'a, E, F, Fut, S: AsyncSleep, C> {
    call: HedgedCall<'a>,
    op: F,
    sleep: S,
    classify: C,
    copies: [Option<Pin<Box<Fut>>>; MAX_HEDGED_ATTEMPTS],
    // The pending wait and the time (ms) it waits for.
    timer: Option<(f64, Pin<Box<S::Sleep>>)>,
    last: Option<E>,
}

impl<T, E, F, Fut, S, C> AsyncRun<'_, E, F, Fut, S, C>
where
    F: FnMut(usize) -> Fut,
    Fut: Future<Output = Result<T, E>>,
    S: AsyncSleep,
    C: Fn(&E) -> Failure,
{
    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<Result<T, Error<E>>> {
        loop {
            // Start every copy the engine admits now (polled below, before any wait).
            let now = self.call.now();
            let wait = loop {
                match self.call.admit(now) {
                    Err(refused) => {
                        let mut refused: Error<E> = refused.cast();
                        refused.last = self.last.take();
                        return self.done(Err(refused));
                    }
                    Ok(Admission::Start(copy)) => self.copies[copy - 1] = Some(Box::pin((self.op)(copy))),
                    Ok(Admission::NoMore) if self.call.running() == 0 => {
                        let e = self.call.stop_error(self.last.take());
                        return self.done(Err(e));
                    }
                    Ok(Admission::NoMore) => break None,
                    Ok(Admission::Wait(until)) => break Some(until),
                }
            };
            match self.poll_copies(cx) {
                Polled::Decided(result) => return self.done(result),
                Polled::Recorded => continue, // ask the engine again
                Polled::Pending => {}
            }
            let Some(until) = wait else {
                self.timer = None;
                return Poll::Pending; // a copy's waker wakes us
            };
            if self.timer.as_ref().map_or(true, |(at, _)| *at != until) {
                self.timer = Some((until, Box::pin(self.sleep.sleep(wait_until(until, now)))));
            }
            let (_, timer) = self.timer.as_mut().expect("set above");
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.timer = None; // the wait is over: ask again
        }
    }

    /// Polls every running copy and records those that ended.
    fn poll_copies(&mut self, cx: &mut Context<'_>) -> Polled<T, E> {
        let mut polled = Polled::Pending;
        for i in 0..MAX_HEDGED_ATTEMPTS {
            let Some(fut) = self.copies[i].as_mut() else { continue };
            let result = match catch_unwind(AssertUnwindSafe(|| fut.as_mut().poll(cx))) {
                Ok(Poll::Pending) => continue,
                Ok(Poll::Ready(r)) => r,
                Err(panic) => {
                    self.call.panicked(i + 1);
                    self.copies = [(); MAX_HEDGED_ATTEMPTS].map(|_| None);
                    resume_unwind(panic)
                }
            };
            self.copies[i] = None;
            let copies = &mut self.copies;
            let done = self.call.finish_copy(i + 1, result, &self.classify, &mut self.last, |c| {
                if let Some(slot) = c.checked_sub(1).and_then(|k| copies.get_mut(k)) {
                    *slot = None; // dropping a loser's future cancels it
                }
            });
            match done {
                Some(result) => return Polled::Decided(result),
                None => polled = Polled::Recorded,
            }
        }
        polled
    }

    fn done(&mut self, result: Result<T, Error<E>>) -> Poll<Result<T, Error<E>>> {
        self.copies = [(); MAX_HEDGED_ATTEMPTS].map(|_| None);
        self.timer = None;
        Poll::Ready(result)
    }
}
