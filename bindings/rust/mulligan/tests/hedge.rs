//! Hedged calls (mulligan_hedging.h through `mulligan::hedge` and
//! `hedge_async`) on the engine's fake clock: exact start times of the
//! copies, a retryable failure starting the next copy at once, never more
//! than 5 copies, an open breaker or an empty budget stopping new copies,
//! losers counted cancelled (never failed), a caller's cancel (a token, a
//! dropped future) counted cancelled, a panicking copy, bad options. The
//! numbers are those of tests/capi/hedging_test.c and bindings/go's
//! hedge_test.go, worked out from gRPC A6's hedgingPolicy rules. No sleeps:
//! every wait for a copy's thread is a bounded wait for the effect itself.
use mulligan::{
    BudgetFailure, BudgetOptions, Breaker, BreakerState, CancelToken, Clock, Code, FakeClock, Failure, HedgingOptions,
    HedgingPolicy, Policy, RetryBudget, StopReason,
};
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Barrier, Mutex};
use std::task::{Context, Wake, Waker};
use std::time::Duration;

/// Generous: the CI machine may be loaded. Only a broken test waits this long.
const EFFECT_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, Clone, PartialEq)]
struct MyError(&'static str);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn await_recv<T>(rx: &Receiver<T>, what: &str) -> T {
    rx.recv_timeout(EFFECT_TIMEOUT).unwrap_or_else(|_| panic!("timed out waiting for {what}"))
}

fn fake_policy(clock: &FakeClock, name: &str) -> Policy {
    Policy::builder().name(name).clock(clock.clone()).build().unwrap()
}

fn hedging(max_attempts: u32, delay: Duration) -> HedgingPolicy {
    HedgingPolicy::new(HedgingOptions { max_attempts, delay, ..Default::default() }).unwrap()
}

fn breaker(clock: &FakeClock, name: &str, reset: Duration) -> Breaker {
    Breaker::builder().name(name).failure_threshold(1).reset_timeout(reset).clock(clock.clone()).build().unwrap()
}

/// (calls, attempts, successes, failures, cancelled, hedges, hedges_won, hedge_cancelled, in_flight)
fn counts(name: &str) -> (u64, u64, u64, u64, u64, u64, u64, u64, i64) {
    let m = mulligan::metrics::get(name).unwrap();
    (m.calls, m.attempts, m.successes, m.failures, m.cancelled, m.hedges, m.hedges_won, m.hedge_cancelled, m.in_flight)
}

#[test]
fn thread_safety_follows_the_header() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<HedgingPolicy>(); // "share it between any threads"
    send_sync::<CancelToken>();
    fn is_send<T: Send>(_: &T) {}
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_send");
    let h = hedging(2, ms(0));
    let fut = mulligan::hedge_async(&policy, &h, clock.clone(), |_| async { Ok::<_, MyError>(1) });
    is_send(&fut); // the call is stepped by one task at a time: Send, not shared
}

#[test]
fn copies_start_at_exact_times_and_the_loser_is_cancelled() {
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_times");
    let h = hedging(3, ms(50));
    let t0 = clock.now_ms();
    let starts = Arc::new(Mutex::new([None::<f64>; 3]));
    let (started1_tx, started1) = channel();
    let (loser_tx, loser) = channel();
    let r = std::thread::scope(|s| {
        let run = s.spawn(|| {
            let (clock, starts) = (clock.clone(), starts.clone());
            mulligan::hedge(&policy, &h, move |copy, token| {
                starts.lock().unwrap()[copy - 1] = Some(clock.now_ms() - t0);
                if copy == 1 {
                    // A slow replica: runs until cancelled.
                    started1_tx.send(()).unwrap();
                    loser_tx.send(token.wait_timeout(EFFECT_TIMEOUT)).unwrap();
                    return Err(MyError("cancelled"));
                }
                Ok(copy * 10)
            })
        });
        await_recv(&started1, "copy 1");
        clock.advance(ms(20)); // too early for copy 2
        clock.advance(ms(30)); // 50 ms: copy 2 starts and wins at once
        run.join().unwrap()
    });
    assert_eq!(r.unwrap(), 20);
    assert!(await_recv(&loser, "copy 1's cancel"), "copy 1's token was not cancelled");
    assert_eq!(*starts.lock().unwrap(), [Some(0.0), Some(50.0), None]);
    // 1 call of 2 attempts, 1 success, no failure; 1 hedge started and won,
    // 1 copy cancelled; the call itself not cancelled.
    assert_eq!(counts("rs_hedge_times"), (1, 2, 1, 0, 0, 1, 1, 1, 0));
}

#[test]
fn a_retryable_failure_starts_the_next_copy_at_once() {
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_retryable");
    let h = hedging(3, Duration::from_secs(1));
    let t0 = clock.now_ms();
    let starts = Arc::new(Mutex::new(Vec::new()));
    let (at, st) = (clock.clone(), starts.clone());
    let v = mulligan::hedge(&policy, &h, move |copy, _| {
        st.lock().unwrap().push(at.now_ms() - t0);
        if copy < 3 { Err(MyError("busy")) } else { Ok(copy) }
    })
    .unwrap();
    assert_eq!(v, 3);
    assert_eq!(*starts.lock().unwrap(), [0.0, 0.0, 0.0], "no 1 s wait after a failure");
    assert_eq!(counts("rs_hedge_retryable"), (1, 3, 1, 0, 0, 2, 1, 0, 0));
}

#[test]
fn never_more_than_five_copies() {
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_cap");
    let h = hedging(7, ms(0)); // A6: treated as 5; delay 0 starts them all at once
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let e = mulligan::hedge(&policy, &h, move |_, _| -> Result<(), _> {
        r.fetch_add(1, Ordering::SeqCst);
        Err(MyError("down"))
    })
    .unwrap_err();
    assert_eq!(e.code(), Code::RetriesExhausted);
    assert_eq!(e.stop_reason(), Some(StopReason::AttemptsExhausted));
    assert_eq!(e.attempts(), 5);
    assert_eq!(e.last_error(), Some(&MyError("down")));
    assert_eq!(e.message(), "hedged call gave up after 5 copies: attempts_exhausted");
    assert_eq!(runs.load(Ordering::SeqCst), 5);
    assert_eq!(counts("rs_hedge_cap"), (1, 5, 0, 1, 0, 4, 0, 0, 0));
}

#[test]
fn an_open_breaker_stops_new_copies() {
    let clock = FakeClock::new();
    let b = breaker(&clock, "rs_hedge_db", Duration::from_secs(10));
    let policy = Policy::builder().name("rs_hedge_breaker").breaker(&b).clock(clock.clone()).build().unwrap();
    let h = hedging(3, ms(50));
    let runs = Arc::new(AtomicUsize::new(0));
    // Copy 1 fails: the breaker (threshold 1) opens and refuses copy 2.
    let r = runs.clone();
    let e = mulligan::hedge(&policy, &h, move |_, _| -> Result<(), _> {
        r.fetch_add(1, Ordering::SeqCst);
        Err(MyError("down"))
    })
    .unwrap_err();
    assert_eq!(e.code(), Code::CircuitOpen);
    assert_eq!(e.stop_reason(), Some(StopReason::CircuitOpen));
    assert_eq!(e.retry_in(), Some(Duration::from_secs(10)));
    assert_eq!(e.attempts(), 1);
    assert_eq!(e.last_error(), Some(&MyError("down")));
    assert_eq!(runs.load(Ordering::SeqCst), 1);
    // A new call's first copy is refused: nothing runs; the breaker's text.
    let r = runs.clone();
    let e = mulligan::hedge(&policy, &h, move |_, _| {
        r.fetch_add(1, Ordering::SeqCst);
        Ok::<_, MyError>(())
    })
    .unwrap_err();
    assert_eq!(e.code(), Code::CircuitOpen);
    assert_eq!(e.retry_in(), Some(Duration::from_secs(10)));
    assert!(e.message().contains("circuit breaker 'rs_hedge_db' is open"), "{}", e.message());
    assert_eq!((e.attempts(), runs.load(Ordering::SeqCst)), (0, 1));
}

fn low_budget(clock: &FakeClock, name: &str) -> RetryBudget {
    // A6: a retry (a hedge) needs tokens > 2 / 2; one failure leaves 1.
    let o = BudgetOptions { max_tokens: 2.0, token_ratio: 0.5, ..Default::default() };
    let budget = RetryBudget::new(name, &o, clock).unwrap();
    budget.on_failure(BudgetFailure::Other, clock.now_ms()).unwrap();
    budget
}

#[test]
fn an_empty_budget_stops_new_copies() {
    let clock = FakeClock::new();
    let budget = low_budget(&clock, "rs_hedge_budget");
    let policy = Policy::builder().name("rs_hedge_budget").budget(&budget).clock(clock.clone()).build().unwrap();
    let h = hedging(3, ms(0)); // delay 0: copy 2 is asked for at once
    let runs = Arc::new(AtomicUsize::new(0));
    let r = runs.clone();
    let v = mulligan::hedge(&policy, &h, move |copy, _| {
        r.fetch_add(1, Ordering::SeqCst);
        Ok::<_, MyError>(copy)
    })
    .unwrap();
    assert_eq!((v, runs.load(Ordering::SeqCst), budget.refused()), (1, 1, 1));
    let (calls, attempts, successes, _, _, hedges, ..) = counts("rs_hedge_budget");
    assert_eq!((calls, attempts, successes, hedges), (1, 1, 1, 0));
}

#[test]
fn a_callers_cancel_is_not_a_failure() {
    let clock = FakeClock::new();
    let b = breaker(&clock, "rs_hedge_cancel_db", Duration::from_secs(1));
    let policy = Policy::builder().name("rs_hedge_cancel").breaker(&b).clock(clock.clone()).build().unwrap();
    let h = hedging(2, ms(0));
    let caller = CancelToken::new();
    let (started_tx, started) = channel();
    let (ended_tx, ended) = channel();
    let e = std::thread::scope(|s| {
        let run = s.spawn(|| {
            mulligan::hedge_classified(&policy, &h, Some(&caller), |_| Failure::Retryable, move |copy, token| {
                started_tx.send(copy).unwrap();
                ended_tx.send(token.wait_timeout(EFFECT_TIMEOUT)).unwrap();
                Err::<(), _>(MyError("stopped"))
            })
        });
        await_recv(&started, "a first copy");
        await_recv(&started, "a second copy");
        caller.cancel();
        run.join().unwrap()
    })
    .unwrap_err();
    assert_eq!(e.code(), Code::Callback);
    assert_eq!(e.attempts(), 2);
    assert_eq!(e.message(), "hedged call cancelled by its caller after 2 copies");
    for _ in 0..2 {
        assert!(await_recv(&ended, "a copy's cancel"));
    }
    assert_eq!(b.state(), BreakerState::Closed);
    // Counted cancelled with its 2 attempts: neither a success nor a failure.
    assert_eq!(counts("rs_hedge_cancel"), (1, 2, 0, 0, 1, 1, 0, 2, 0));
    // A token cancelled before the call: nothing runs, nothing is counted.
    let e = mulligan::hedge_classified(&policy, &h, Some(&caller), |_| Failure::Retryable, |_, _| Ok::<_, MyError>(()))
        .unwrap_err();
    assert_eq!((e.code(), e.attempts()), (Code::Callback, 0));
    assert_eq!(counts("rs_hedge_cancel").0, 1);
}

#[test]
fn a_terminal_failure_cancels_the_other_copy() {
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_terminal");
    let h = hedging(2, ms(0));
    let both = Arc::new(Barrier::new(2));
    let (loser_tx, loser) = channel();
    let classify = |e: &MyError| Failure::Http { status: if e.0 == "not found" { 404 } else { 503 }, retry_after: None };
    let e = mulligan::hedge_classified(&policy, &h, None, classify, move |copy, token| {
        both.wait(); // both copies run
        if copy == 1 {
            loser_tx.send(token.wait_timeout(EFFECT_TIMEOUT)).unwrap();
            return Err(MyError("slow"));
        }
        Err::<(), _>(MyError("not found")) // a 404: A6 fatal, ends the call
    })
    .unwrap_err();
    assert_eq!(e.code(), Code::Unavailable);
    assert_eq!(e.stop_reason(), Some(StopReason::Terminal));
    assert_eq!(e.last_error(), Some(&MyError("not found")));
    assert!(await_recv(&loser, "copy 1's cancel"));
    let (calls, _, successes, failures, cancelled, _, _, hedge_cancelled, in_flight) = counts("rs_hedge_terminal");
    assert_eq!((calls, successes, failures, cancelled, hedge_cancelled, in_flight), (1, 0, 1, 0, 1, 0));
}

#[test]
fn a_panicking_copy_reaches_the_caller() {
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_panic");
    let h = hedging(2, Duration::from_secs(1));
    let r = catch_unwind(AssertUnwindSafe(|| {
        mulligan::hedge(&policy, &h, |_, _| -> Result<(), MyError> { panic!("copy 1 broke") })
    }));
    let payload = r.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"copy 1 broke"));
    let (calls, _, successes, failures, cancelled, _, _, hedge_cancelled, in_flight) = counts("rs_hedge_panic");
    // The panicking copy is a failure, not a cancelled copy (it counted
    // as one before a fresh user's report).
    assert_eq!((calls, successes, failures, cancelled, hedge_cancelled, in_flight), (1, 0, 1, 0, 0, 0));
}

#[test]
fn an_invalid_outcome_from_the_classifier_is_an_error() {
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_bad_outcome");
    let h = hedging(2, Duration::from_secs(1));
    let e = mulligan::hedge_classified(&policy, &h, None, |_| Failure::Http { status: 99, retry_after: None }, |_, _| {
        Err::<(), _>(MyError("odd"))
    })
    .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert_eq!(e.last_error(), Some(&MyError("odd")));
    assert_eq!(counts("rs_hedge_bad_outcome").3, 1); // abandoned: failed
}

#[test]
fn the_real_clock_starts_the_hedge_after_its_timer() {
    let policy = Policy::builder().name("rs_hedge_real").build().unwrap();
    let h = hedging(2, ms(1));
    let v = mulligan::hedge(&policy, &h, |copy, token| {
        if copy == 1 {
            token.wait_timeout(EFFECT_TIMEOUT); // only copy 2, started by the timer, ends the call
            return Err(MyError("cancelled"));
        }
        Ok(copy)
    })
    .unwrap();
    assert_eq!(v, 2);
    assert_eq!(counts("rs_hedge_real"), (1, 2, 1, 0, 0, 1, 1, 1, 0));
}

#[test]
fn hedging_options_are_validated() {
    let cases = [
        (HedgingOptions { max_attempts: 1, ..Default::default() }, "hedging: max_attempts must be >= 2 (gRPC A6), got 1"),
        (HedgingOptions { delay_quantile: 1.5, ..Default::default() }, "hedging: delay_quantile must be in (0, 1], got 1.5"),
        (HedgingOptions { delay_quantile: f64::NAN, ..Default::default() }, "delay_quantile"),
        (
            HedgingOptions { quantile_window: 10, ..Default::default() },
            "quantile_min_samples must be in [1, quantile_window = 10], got 20",
        ),
        (HedgingOptions { quantile_window: 0, ..Default::default() }, "quantile_window"),
    ];
    for (o, want) in cases {
        let e = HedgingPolicy::new(o).unwrap_err();
        assert_eq!(e.code(), Code::InvalidArgument, "{o:?}");
        assert!(e.message().contains(want), "{o:?}: got {:?}, want {want:?}", e.message());
    }
    let h = HedgingPolicy::new(HedgingOptions { delay: ms(7), delay_quantile: 0.95, ..Default::default() }).unwrap();
    assert_eq!(h.current_delay(), ms(7), "before any sample: the fixed delay");
    assert_eq!(hedging(5, ms(50)).current_delay(), ms(50));
}

// ---------------------------------------------------------------------------
// Async
// ---------------------------------------------------------------------------

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Sets its flag when dropped: a copy's future dropped (cancelled).
struct Dropped(Arc<AtomicBool>);
impl Drop for Dropped {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

#[test]
fn async_copies_start_at_exact_times_and_the_loser_is_dropped() {
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_async_times");
    let h = hedging(3, ms(50));
    let t0 = clock.now_ms();
    let mut starts = [None::<f64>; 3];
    let dropped = Arc::new(AtomicBool::new(false));
    let v = futures::executor::block_on(mulligan::hedge_async(&policy, &h, clock.clone(), |copy| {
        starts[copy - 1] = Some(clock.now_ms() - t0);
        let guard = Dropped(dropped.clone());
        async move {
            if copy == 1 {
                let _g = guard;
                return std::future::pending::<Result<usize, MyError>>().await; // a slow replica
            }
            Ok(copy * 10)
        }
    }))
    .unwrap();
    assert_eq!(v, 20);
    assert_eq!(starts, [Some(0.0), Some(50.0), None]);
    assert!(dropped.load(Ordering::SeqCst), "the loser's future was not dropped");
    assert_eq!(clock.now_ms() - t0, 50.0, "the FakeClock sleep advanced to copy 2's start only");
    assert_eq!(counts("rs_hedge_async_times"), (1, 2, 1, 0, 0, 1, 1, 1, 0));
}

#[test]
fn async_retryable_failures_and_the_cap() {
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_async_retryable");
    let h = hedging(3, Duration::from_secs(1));
    let t0 = clock.now_ms();
    let mut runs = 0;
    let v = futures::executor::block_on(mulligan::hedge_async(&policy, &h, clock.clone(), |copy| {
        runs += 1;
        async move { if copy < 3 { Err(MyError("busy")) } else { Ok(copy) } }
    }))
    .unwrap();
    assert_eq!((v, runs, clock.now_ms() - t0), (3, 3, 0.0));
    assert_eq!(counts("rs_hedge_async_retryable"), (1, 3, 1, 0, 0, 2, 1, 0, 0));

    let policy = fake_policy(&clock, "rs_hedge_async_cap");
    let h = hedging(7, ms(0));
    let mut runs = 0;
    let e = futures::executor::block_on(mulligan::hedge_async(&policy, &h, clock.clone(), |_| {
        runs += 1;
        async { Err::<(), _>(MyError("down")) }
    }))
    .unwrap_err();
    assert_eq!((e.code(), e.stop_reason(), e.attempts(), runs), (Code::RetriesExhausted, Some(StopReason::AttemptsExhausted), 5, 5));
    assert_eq!(counts("rs_hedge_async_cap"), (1, 5, 0, 1, 0, 4, 0, 0, 0));
}

#[test]
fn async_open_breaker_and_empty_budget_stop_new_copies() {
    let clock = FakeClock::new();
    let b = breaker(&clock, "rs_hedge_async_db", Duration::from_secs(10));
    let policy = Policy::builder().name("rs_hedge_async_breaker").breaker(&b).clock(clock.clone()).build().unwrap();
    let h = hedging(3, ms(50));
    let mut runs = 0;
    let e = futures::executor::block_on(mulligan::hedge_async(&policy, &h, clock.clone(), |_| {
        runs += 1;
        async { Err::<(), _>(MyError("down")) }
    }))
    .unwrap_err();
    assert_eq!((e.code(), e.retry_in(), e.attempts(), runs), (Code::CircuitOpen, Some(Duration::from_secs(10)), 1, 1));
    let e = futures::executor::block_on(mulligan::hedge_async(&policy, &h, clock.clone(), |_| async { Ok::<_, MyError>(()) }))
        .unwrap_err();
    assert!(e.message().contains("circuit breaker 'rs_hedge_async_db' is open"), "{}", e.message());

    let budget = low_budget(&clock, "rs_hedge_async_budget");
    let policy = Policy::builder().name("rs_hedge_async_budget").budget(&budget).clock(clock.clone()).build().unwrap();
    let h = hedging(3, ms(0));
    let mut runs = 0;
    let v = futures::executor::block_on(mulligan::hedge_async(&policy, &h, clock.clone(), |copy| {
        runs += 1;
        async move { Ok::<_, MyError>(copy) }
    }))
    .unwrap();
    assert_eq!((v, runs, budget.refused()), (1, 1, 1));
    assert_eq!(counts("rs_hedge_async_budget").5, 0);
}

#[test]
fn dropping_the_async_call_counts_it_cancelled() {
    let clock = FakeClock::new();
    let b = breaker(&clock, "rs_hedge_async_cancel_db", Duration::from_secs(1));
    let policy = Policy::builder().name("rs_hedge_async_cancel").breaker(&b).clock(clock.clone()).build().unwrap();
    let h = hedging(2, ms(0));
    let dropped = [Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false))];
    let started = AtomicUsize::new(0);
    let mut fut = Box::pin(mulligan::hedge_async(&policy, &h, clock.clone(), |copy| {
        started.fetch_add(1, Ordering::SeqCst);
        let guard = Dropped(dropped[copy - 1].clone());
        async move {
            let _g = guard;
            std::future::pending::<Result<(), MyError>>().await
        }
    }));
    let waker = Waker::from(Arc::new(Noop));
    let poll = Pin::as_mut(&mut fut).poll(&mut Context::from_waker(&waker));
    assert!(poll.is_pending());
    assert_eq!(started.load(Ordering::SeqCst), 2, "both copies started");
    assert!(!dropped.iter().any(|d| d.load(Ordering::SeqCst)), "both copies run");
    drop(fut);
    assert!(dropped.iter().all(|d| d.load(Ordering::SeqCst)), "a copy's future outlived the call");
    assert_eq!(b.state(), BreakerState::Closed);
    assert_eq!(counts("rs_hedge_async_cancel"), (1, 2, 0, 0, 1, 1, 0, 2, 0));
}

#[test]
fn async_panics_abandon_the_call_and_resume() {
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_async_panic");
    let h = hedging(2, ms(0));
    let other = Arc::new(AtomicBool::new(false));
    let r = catch_unwind(AssertUnwindSafe(|| {
        futures::executor::block_on(mulligan::hedge_async(&policy, &h, clock.clone(), |copy| {
            let guard = Dropped(other.clone());
            async move {
                if copy == 2 {
                    panic!("async copy broke");
                }
                let _g = guard;
                std::future::pending::<Result<(), MyError>>().await
            }
        }))
    }));
    assert_eq!(r.unwrap_err().downcast_ref::<&str>(), Some(&"async copy broke"));
    assert!(other.load(Ordering::SeqCst), "copy 1 was not dropped");
    let (calls, _, successes, failures, cancelled, _, _, hedge_cancelled, in_flight) = counts("rs_hedge_async_panic");
    // Copy 1 is cancelled; copy 2, which panicked, is not counted cancelled.
    assert_eq!((calls, successes, failures, cancelled, hedge_cancelled, in_flight), (1, 0, 1, 0, 1, 0));
}

#[test]
fn async_pushback_delays_the_next_copy_until_it_has_passed() {
    let clock = FakeClock::new();
    let policy = fake_policy(&clock, "rs_hedge_async_pushback");
    let h = hedging(2, Duration::from_secs(1));
    let t0 = clock.now_ms();
    let mut starts = Vec::new();
    // Copy 1 fails retryably with a 200 ms Retry-After: copy 2 starts once it
    // has passed (at 200 ms), not at once and not after the 1 s delay.
    let v = futures::executor::block_on(mulligan::hedge_async_classified(
        &policy,
        &h,
        clock.clone(),
        |e: &MyError| if e.0 == "slow down" { Failure::RetryAfter(ms(200)) } else { Failure::Retryable },
        |copy| {
            starts.push(clock.now_ms() - t0);
            async move { if copy == 1 { Err(MyError("slow down")) } else { Ok(copy) } }
        },
    ))
    .unwrap();
    assert_eq!((v, starts), (2, vec![0.0, 200.0]));
}
