//! Behaviour of the safe crate: errors, bad input, panics, async, breakers.
use mulligan::{Backoff, Breaker, BreakerState, Code, FakeClock, Failure, Jitter, Policy, StopReason};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

fn fast_policy(clock: &FakeClock) -> Policy {
    Policy::builder()
        .max_attempts(3)
        .backoff(Backoff::Constant)
        .base_delay(Duration::from_millis(100))
        .jitter(Jitter::None)
        .clock(clock.clone())
        .build()
        .unwrap()
}

#[derive(Debug, PartialEq)]
struct MyError(&'static str);
impl std::fmt::Display for MyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}
impl std::error::Error for MyError {}

#[test]
fn thread_safety_follows_the_headers() {
    fn send_sync<T: Send + Sync>() {}
    send_sync::<Policy>();
    send_sync::<Breaker>();
    send_sync::<FakeClock>();
    send_sync::<mulligan::Error<MyError>>();
}

#[test]
fn invalid_options_are_errors_with_the_engine_text() {
    let e = Policy::builder().max_attempts(0).build().unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("max_attempts"), "{}", e.message());
    let e = Policy::builder().multiplier(f64::NAN).build().unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("multiplier"), "{}", e.message());
    let e = Policy::builder().jitter_fraction(2.0).build().unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let e = Policy::builder().name("a\0b").build().unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    let e = Breaker::builder().failure_threshold(0).build().unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(!e.message().is_empty());
    // The Error is a std::error::Error with a Display.
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(!boxed.to_string().is_empty());
}

#[test]
fn success_first_time_and_after_failures() {
    let clock = FakeClock::new();
    let policy = fast_policy(&clock);
    assert_eq!(mulligan::retry(&policy, || Ok::<_, MyError>(7)).unwrap(), 7);
    let mut n = 0;
    let start = mulligan::Clock::now_ms(&clock);
    let v = mulligan::retry(&policy, || {
        n += 1;
        if n < 3 { Err(MyError("flaky")) } else { Ok(n) }
    })
    .unwrap();
    assert_eq!(v, 3);
    // two waits of 100 ms, done on the fake clock
    assert!((mulligan::Clock::now_ms(&clock) - start - 200.0).abs() < 1e-9);
}

#[test]
fn give_up_keeps_the_users_last_error() {
    let clock = FakeClock::new();
    let policy = fast_policy(&clock);
    let mut n = 0;
    let e = mulligan::retry(&policy, || -> Result<(), MyError> {
        n += 1;
        Err(if n == 3 { MyError("third") } else { MyError("early") })
    })
    .unwrap_err();
    assert_eq!(e.code(), Code::RetriesExhausted);
    assert_eq!(e.stop_reason(), Some(StopReason::AttemptsExhausted));
    assert_eq!(e.attempts(), 3);
    assert_eq!(e.last_error(), Some(&MyError("third")));
    let src = std::error::Error::source(&e).unwrap();
    assert_eq!(src.to_string(), "third");
    assert_eq!(e.into_last_error(), Some(MyError("third")));
}

#[test]
fn terminal_failures_stop_at_once() {
    let clock = FakeClock::new();
    let policy = fast_policy(&clock);
    let mut n = 0;
    let e = mulligan::retry_classified(&policy, |_: &MyError| Failure::Terminal, || -> Result<(), _> {
        n += 1;
        Err(MyError("404"))
    })
    .unwrap_err();
    assert_eq!(n, 1);
    assert_eq!(e.code(), Code::Unavailable);
    assert_eq!(e.stop_reason(), Some(StopReason::Terminal));
    // an HTTP 404 is terminal by the engine's rule, a 503 is not
    let mut n = 0;
    let _ = mulligan::retry_classified(
        &policy,
        |_: &MyError| Failure::Http { status: 503, retry_after: Some(Duration::from_secs(1)) },
        || -> Result<(), _> {
            n += 1;
            Err(MyError("503"))
        },
    );
    assert_eq!(n, 3);
}

#[test]
fn a_panicking_closure_abandons_the_call_and_frees_the_probe() {
    let clock = FakeClock::new();
    let breaker = Breaker::builder()
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(10))
        .clock(clock.clone())
        .build()
        .unwrap();
    let policy = Policy::builder()
        .max_attempts(3)
        .jitter(Jitter::None)
        .breaker(&breaker)
        .clock(clock.clone())
        .build()
        .unwrap();
    // one failed call trips the breaker (threshold 1)
    // (a terminal failure would not count: only retryable-class failures do)
    drop(breaker.call(|| Err::<(), _>(MyError("x"))));
    assert_eq!(breaker.state(), BreakerState::Open);
    clock.advance(Duration::from_secs(10));
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    // the half-open probe panics: the panic resumes, the slot is freed
    let r = catch_unwind(AssertUnwindSafe(|| mulligan::retry(&policy, || -> Result<(), MyError> { panic!("boom") })));
    assert_eq!(*r.unwrap_err().downcast::<&str>().unwrap(), "boom");
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    // a new probe is admitted (the slot was freed) and closes the breaker
    assert_eq!(mulligan::retry(&policy, || Ok::<_, MyError>(1)).unwrap(), 1);
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[test]
fn a_panic_after_a_failure_resumes_too() {
    let clock = FakeClock::new();
    let policy = fast_policy(&clock);
    let mut n = 0;
    let r = catch_unwind(AssertUnwindSafe(|| {
        mulligan::retry(&policy, || -> Result<(), MyError> {
            n += 1;
            if n == 2 { panic!("second") }
            Err(MyError("first"))
        })
    }));
    assert!(r.is_err());
    assert_eq!(n, 2);
}

#[test]
fn circuit_open_is_an_error_with_the_time_left() {
    let clock = FakeClock::new();
    let breaker = Breaker::builder()
        .name("db")
        .failure_threshold(1)
        .reset_timeout(Duration::from_secs(30))
        .clock(clock.clone())
        .build()
        .unwrap();
    let policy = Policy::builder().breaker(&breaker).clock(clock.clone()).jitter(Jitter::None).build().unwrap();
    drop(breaker.call(|| Err::<(), _>(MyError("down"))));
    let e = mulligan::retry(&policy, || Ok::<_, MyError>(1)).unwrap_err();
    assert_eq!(e.code(), Code::CircuitOpen);
    assert_eq!(e.retry_in(), Some(Duration::from_secs(30)));
    assert!(e.message().contains("circuit breaker 'db' is open"), "{}", e.message());
    assert_eq!(e.attempts(), 0);
    assert!(e.last_error().is_none());
    // the guard: refused without running
    let mut ran = false;
    let e = breaker.call(|| { ran = true; Ok::<_, MyError>(()) }).unwrap_err();
    assert!(!ran);
    assert_eq!(e.code(), Code::CircuitOpen);
    breaker.force_open().unwrap();
    assert_eq!(breaker.time_until_probe(), None);
    breaker.reset().unwrap();
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[test]
fn permits_dropped_without_a_record_free_their_slot() {
    let clock = FakeClock::new();
    let breaker = Breaker::builder().failure_threshold(1).reset_timeout(Duration::from_secs(1)).clock(clock.clone()).build().unwrap();
    breaker.acquire().unwrap().record(mulligan::CallResult::Failure, None);
    clock.advance(Duration::from_secs(1));
    let probe = breaker.acquire().unwrap();
    assert!(probe.is_probe());
    assert!(breaker.acquire().is_err());
    drop(probe); // records ignored: frees the slot
    assert!(breaker.acquire().is_ok());
}

#[test]
fn async_retry_is_runtime_agnostic() {
    let clock = FakeClock::new();
    let policy = fast_policy(&clock);
    let mut n = 0;
    let start = mulligan::Clock::now_ms(&clock);
    let v = futures::executor::block_on(mulligan::retry_async(&policy, clock.clone(), || {
        n += 1;
        let k = n;
        async move { if k < 3 { Err(MyError("later")) } else { Ok(k) } }
    }))
    .unwrap();
    assert_eq!(v, 3);
    assert!((mulligan::Clock::now_ms(&clock) - start - 200.0).abs() < 1e-9);
    // a closure as the sleep function, as tokio::time::sleep would be
    let waits = std::cell::RefCell::new(Vec::new());
    let e = futures::executor::block_on(mulligan::retry_async(
        &policy,
        |d| {
            waits.borrow_mut().push(d);
            std::future::ready(())
        },
        || async { Err::<(), _>(MyError("never")) },
    ))
    .unwrap_err();
    assert_eq!(e.code(), Code::RetriesExhausted);
    assert_eq!(*waits.borrow(), vec![Duration::from_millis(100); 2]);
}

#[test]
fn async_panics_resume() {
    let clock = FakeClock::new();
    let policy = fast_policy(&clock);
    let mut n = 0;
    let r = catch_unwind(AssertUnwindSafe(|| {
        futures::executor::block_on(mulligan::retry_async(&policy, clock.clone(), || {
            n += 1;
            let k = n;
            async move {
                if k == 2 { panic!("async boom") }
                Err::<(), _>(MyError("x"))
            }
        }))
    }));
    assert!(r.is_err());
}

#[test]
fn retry_after_at_a_fixed_now() {
    let now = std::time::UNIX_EPOCH + Duration::from_secs(784111657);
    assert_eq!(mulligan::parse_retry_after("120", now), Some(Duration::from_secs(120)));
    assert_eq!(mulligan::parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now), Some(Duration::from_secs(120)));
    assert_eq!(mulligan::parse_retry_after("Sat, 05 Nov 1994 08:49:37 GMT", now), Some(Duration::ZERO));
    assert_eq!(mulligan::parse_retry_after("soon", now), None);
    assert_eq!(mulligan::parse_retry_after("1\x002", now), None);
}

#[test]
fn a_deadline_stops_before_a_wait_would_cross_it() {
    let clock = FakeClock::new();
    let policy = Policy::builder()
        .max_attempts(10)
        .backoff(Backoff::Constant)
        .base_delay(Duration::from_secs(1))
        .jitter(Jitter::None)
        .deadline(Duration::from_millis(2500))
        .clock(clock.clone())
        .build()
        .unwrap();
    let mut n = 0;
    let e = mulligan::retry(&policy, || -> Result<(), MyError> { n += 1; Err(MyError("slow")) }).unwrap_err();
    assert_eq!(e.code(), Code::DeadlineExceeded);
    assert_eq!(n, 3);
}

/// A clock that must not be read: the hot path reads none (and begins no
/// engine call) when the first attempt succeeds.
struct UntouchableClock;
impl mulligan::Clock for UntouchableClock {
    fn now_ms(&self) -> f64 {
        panic!("the success path read the clock")
    }
    fn sleep(&self, _: Duration) {
        panic!("the success path waited")
    }
}

#[test]
fn the_success_path_stays_in_rust() {
    let policy = Policy::builder().clock(UntouchableClock).build().unwrap();
    assert_eq!(mulligan::retry(&policy, || Ok::<_, MyError>(5)).unwrap(), 5);
    let v = futures::executor::block_on(mulligan::retry_async(&policy, |_| std::future::ready(()), || async {
        Ok::<_, MyError>(6)
    }));
    assert_eq!(v.unwrap(), 6);
}

#[test]
fn retry_async_futures_are_send() {
    fn is_send<T: Send>(_: &T) {}
    let clock = FakeClock::new();
    let policy = fast_policy(&clock);
    let fut = mulligan::retry_async(&policy, clock.clone(), || async { Ok::<_, MyError>(1) });
    is_send(&fut);
    assert_eq!(futures::executor::block_on(fut).unwrap(), 1);
}

#[test]
fn null_handles_at_the_c_boundary_are_errors_not_crashes() {
    // The safe API has no null handles (every handle is built by a builder);
    // below it, the C ABI answers NULL with MULLIGAN_E_INVALID_ARGUMENT.
    unsafe {
        let mut a: mulligan_sys::mulligan_admission = std::mem::zeroed();
        a.struct_size = std::mem::size_of_val(&a) as u32;
        let rc = mulligan_sys::mulligan_call_admit(std::ptr::null_mut(), 0.0, &mut a);
        assert_eq!(mulligan::Code::from_raw(rc), Some(Code::InvalidArgument));
        let rc = mulligan_sys::mulligan_pipeline_create(std::ptr::null_mut(), std::ptr::null());
        assert_eq!(mulligan::Code::from_raw(rc), Some(Code::InvalidArgument));
    }
}

#[test]
fn an_invalid_outcome_from_the_classifier_is_an_error() {
    let clock = FakeClock::new();
    let policy = fast_policy(&clock);
    let e = mulligan::retry_classified(&policy, |_: &MyError| Failure::Http { status: 42, retry_after: None }, || -> Result<(), _> {
        Err(MyError("odd"))
    })
    .unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(!e.message().is_empty());
    assert_eq!(e.last_error(), Some(&MyError("odd")));
}

#[test]
fn metrics_of_a_named_policy() {
    let clock = FakeClock::new();
    let policy = Policy::builder()
        .name("rust-metrics-test")
        .max_attempts(3)
        .jitter(Jitter::None)
        .clock(clock.clone())
        .build()
        .unwrap();
    let mut n = 0;
    mulligan::retry(&policy, || { n += 1; if n < 2 { Err(MyError("x")) } else { Ok(()) } }).unwrap();
    mulligan::retry(&policy, || Ok::<_, MyError>(())).unwrap(); // counted: a named policy enters the engine
    let m = mulligan::metrics::get("rust-metrics-test").unwrap();
    assert_eq!((m.calls, m.attempts, m.retries, m.successes, m.failures), (2, 3, 1, 2, 0));
    let json = mulligan::metrics::json().unwrap();
    assert!(json.starts_with('{') && json.contains("rust-metrics-test"), "{json}");
    let prom = mulligan::metrics::prometheus().unwrap();
    assert!(prom.contains("rust-metrics-test"), "{prom}");
}
