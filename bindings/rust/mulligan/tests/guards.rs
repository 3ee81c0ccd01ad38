//! Retry budgets, adaptive throttling, bulkheads and rate limiters through
//! the safe crate: the shared vectors (tests/vectors/budget.json and
//! rate_limiter_gcra.json, which C++, C, Python and Go run too) and the
//! policy's refusals. Expected values are worked out by hand in comments.
use mulligan::{
    Backoff, Bulkhead, BudgetFailure, BudgetKind, BudgetOptions, Clock, Code, FakeClock, Failure, Jitter, Policy,
    RateLimiter, RateLimiterOptions, RetryBudget, StopReason, Throttle, ThrottleOptions,
};
use serde_json::Value;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

fn vectors(name: &str) -> Value {
    let path = format!("{}/../../../tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn failure_of(step: &Value) -> BudgetFailure {
    match step["kind"].as_str().unwrap_or("other") {
        "timeout" => BudgetFailure::Timeout,
        "throttling" => BudgetFailure::Throttling,
        _ => BudgetFailure::Other,
    }
}

#[test]
fn budget_vectors_give_the_computed_tokens() {
    let data = vectors("budget.json");
    let mut steps = 0;
    for case in data["budgets"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let o = &case["options"];
        let f = |k: &str, d: f64| o.get(k).and_then(Value::as_f64).unwrap_or(d);
        let mut options = BudgetOptions {
            kind: match case["kind"].as_str().unwrap() {
                "token_bucket" => BudgetKind::TokenBucket,
                "quota" => BudgetKind::Quota,
                _ => BudgetKind::Ratio,
            },
            ..BudgetOptions::default()
        };
        options.max_tokens = f("max_tokens", options.max_tokens);
        options.token_ratio = f("token_ratio", options.token_ratio);
        options.capacity = f("capacity", options.capacity as f64) as i64;
        options.retry_cost = f("retry_cost", options.retry_cost as f64) as i64;
        options.timeout_cost = f("timeout_cost", options.timeout_cost as f64) as i64;
        options.throttling_cost = f("throttling_cost", options.throttling_cost as f64) as i64;
        options.no_retry_increment = f("no_retry_increment", options.no_retry_increment as f64) as i64;
        options.ttl = Duration::from_secs_f64(f("ttl", 10.0));
        options.percent = f("percent", options.percent);
        options.min_retries_per_second = f("min_retries_per_second", options.min_retries_per_second);
        let clock = FakeClock::new();
        clock.advance(Duration::from_secs_f64(case.get("start").and_then(Value::as_f64).unwrap_or(0.0)));
        let budget = RetryBudget::new(name, &options, &clock).unwrap();
        for (i, s) in case["steps"].as_array().unwrap().iter().enumerate() {
            let at = s["t"].as_f64().unwrap() * 1000.0;
            match s["op"].as_str().unwrap() {
                "failure" => budget.on_failure(failure_of(s), at).unwrap(),
                "retry" => {
                    for _ in 0..s.get("repeat").and_then(Value::as_u64).unwrap_or(1) {
                        let r = budget.try_retry(failure_of(s), at);
                        assert_eq!(r.is_ok(), s["allowed"].as_bool().unwrap(), "{name} step {i}");
                        if let Err(e) = &r {
                            assert_eq!(e.code(), Code::BudgetExhausted);
                        }
                        if let (Some(cost), Ok(got)) = (s.get("cost").and_then(Value::as_i64), &r) {
                            assert_eq!(*got, cost, "{name} step {i}");
                        }
                    }
                }
                "success" => budget.add_successes(s.get("count").and_then(Value::as_u64).unwrap_or(1)),
                "retried_success" => budget.on_retried_success(s["cost"].as_i64().unwrap()).unwrap(),
                "call" => budget.on_call_started(at).unwrap(),
                op => panic!("unknown op {op}"),
            }
            let tokens = budget.tokens(at).unwrap();
            assert!((tokens - s["tokens"].as_f64().unwrap()).abs() < 1e-9, "{name} step {i}: {tokens}");
            steps += 1;
        }
    }
    assert!(steps > 100, "only {steps} steps");
}

#[test]
fn throttle_vectors_give_the_computed_probabilities_and_draws() {
    let data = vectors("budget.json");
    for case in data["throttles"].as_array().unwrap() {
        let o = &case["options"];
        let throttle = Throttle::new(
            "",
            &ThrottleOptions {
                window: Duration::from_secs_f64(o["window"].as_f64().unwrap()),
                k: o["k"].as_f64().unwrap(),
                seed: o["seed"].as_u64(),
            },
        )
        .unwrap();
        let mut rejected = 0;
        for (i, s) in case["steps"].as_array().unwrap().iter().enumerate() {
            let at = s["t"].as_f64().unwrap() * 1000.0;
            if s["op"] == "admit" {
                let p = throttle.probability(at).unwrap();
                assert!((p - s["p"].as_f64().unwrap()).abs() < 1e-12, "step {i}: p {p}");
                let r = throttle.admit(at);
                assert_eq!(r.is_ok(), s["admitted"].as_bool().unwrap(), "step {i}");
                if let Err(e) = r {
                    assert_eq!(e.code(), Code::Throttled);
                    rejected += 1;
                }
            } else if s["outcome"] == "accept" {
                throttle.record_success().unwrap();
            } else {
                throttle.record_failure(Failure::Http { status: 503, retry_after: None }).unwrap();
            }
        }
        assert!(rejected > 0);
        assert_eq!(throttle.rejected(), rejected);
    }
}

/// The GCRA scripts up to a case's first Retry-After penalty (which reaches
/// a limiter through a pipeline's outcomes only; C++ and Python run it).
#[test]
fn rate_limiter_vectors_give_the_computed_waits() {
    let data = vectors("rate_limiter_gcra.json");
    let t0 = 1_000_000.0; // ms
    let mut ran = 0;
    for case in data["cases"].as_array().unwrap() {
        let options = RateLimiterOptions {
            rate: case["rate"].as_f64().unwrap(),
            burst: case["burst"].as_f64().unwrap(),
            max_wait: None,
            penalize_retry_after: false,
        };
        let limiter = RateLimiter::new("vector", &options).unwrap();
        for (i, s) in case["steps"].as_array().unwrap().iter().enumerate() {
            if s.get("penalize_until").is_some() {
                break;
            }
            let max_wait = s["max_wait"].as_f64().map(Duration::from_secs_f64);
            let e = &s["expect"];
            let r = limiter.acquire(s["key"].as_str().unwrap(), t0 + s["at"].as_f64().unwrap() * 1000.0, max_wait);
            assert_eq!(r.is_ok(), e["admitted"].as_bool().unwrap(), "{} step {i}", case["name"]);
            let (wait, retry_in) = match &r {
                Ok(w) => (*w, Duration::ZERO),
                Err(err) => {
                    assert_eq!(err.code(), Code::RateLimited);
                    (Duration::ZERO, err.retry_in().unwrap())
                }
            };
            let near = |d: Duration, ns: i64| (d.as_nanos() as i64 - ns).abs() <= 1000;
            assert!(near(wait, e["wait_ns"].as_i64().unwrap()), "{} step {i}: wait {wait:?}", case["name"]);
            assert!(near(retry_in, e["retry_in_ns"].as_i64().unwrap()), "{} step {i}: {retry_in:?}", case["name"]);
            ran += 1;
        }
    }
    assert!(ran >= 10);
}

#[test]
fn bad_options_name_the_field() {
    let clock = FakeClock::new();
    let o = BudgetOptions { token_ratio: -1.0, ..BudgetOptions::default() };
    let e = RetryBudget::new("x", &o, &clock).unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("token_ratio"), "{}", e.message());
    let o = BudgetOptions { kind: BudgetKind::Ratio, percent: 1.5, ..BudgetOptions::default() };
    assert!(RetryBudget::new("x", &o, &clock).unwrap_err().message().contains("percent"));
    assert!(RetryBudget::shared("", &BudgetOptions::default(), &clock).unwrap_err().message().contains("name"));
    let e = Throttle::new("x", &ThrottleOptions { k: 0.5, ..ThrottleOptions::default() }).unwrap_err();
    assert!(e.message().contains('k'), "{}", e.message());
    assert!(Bulkhead::new("db", 0, 0, None).unwrap_err().message().contains("max_concurrent"));
    let o = RateLimiterOptions { rate: -1.0, burst: 1.0, max_wait: None, penalize_retry_after: false };
    assert!(RateLimiter::new("api", &o).unwrap_err().message().contains("rate"));
}

#[test]
fn guards_are_send_and_sync() {
    fn send_sync<T: Send + Sync + Clone>() {}
    send_sync::<RetryBudget>();
    send_sync::<Throttle>();
    send_sync::<Bulkhead>();
    send_sync::<RateLimiter>();
}

/// An A6 bucket of 10 tokens, 10 attempts of a failing closure: failures
/// take 10 -> 9, 8, 7, 6 (retries allowed: > 5) and the 5th leaves 5:
/// refused. 5 attempts, StopReason::Budget, the last error kept.
#[test]
fn a_policy_stops_on_its_budget_and_keeps_the_last_error() {
    let clock = FakeClock::new();
    let o = BudgetOptions { max_tokens: 10.0, token_ratio: 0.1, ..BudgetOptions::default() };
    let budget = RetryBudget::new("rust-budget", &o, &clock).unwrap();
    let policy = Policy::builder()
        .max_attempts(10)
        .backoff(Backoff::Constant)
        .base_delay(Duration::ZERO)
        .jitter(Jitter::None)
        .clock(clock.clone())
        .budget(&budget)
        .build()
        .unwrap();
    let mut calls = 0;
    let e = mulligan::retry(&policy, || -> Result<(), &str> {
        calls += 1;
        Err("boom")
    })
    .unwrap_err();
    assert_eq!(calls, 5);
    assert_eq!(e.stop_reason(), Some(StopReason::Budget));
    assert_eq!(e.code(), Code::RetriesExhausted);
    assert_eq!(e.last_error(), Some(&"boom"));
    assert_eq!((budget.allowed(), budget.refused()), (4, 1));
    // A first-attempt success skips the engine but feeds the bucket: 5 + 0.1.
    mulligan::retry(&policy, || -> Result<(), &str> { Ok(()) }).unwrap();
    assert!((budget.tokens(clock.now_ms()).unwrap() - 5.1).abs() < 1e-9);
}

/// 1000 overload answers, no accept: p = 1000/1001; the policy's first
/// attempt is rejected locally (seed 7: its draw is below p).
#[test]
fn a_policy_is_throttled() {
    let clock = FakeClock::new();
    let throttle = Throttle::new("rust-throttle", &ThrottleOptions { seed: Some(7), ..ThrottleOptions::default() }).unwrap();
    let now = clock.now_ms();
    for _ in 0..1000 {
        if throttle.admit(now).is_ok() {
            throttle.record_failure(Failure::Http { status: 503, retry_after: None }).unwrap();
        }
    }
    assert_eq!(throttle.counts(now).unwrap(), (1000, 0));
    assert!((throttle.probability(now).unwrap() - 1000.0 / 1001.0).abs() < 1e-12);
    let policy = Policy::builder().clock(clock.clone()).throttle(&throttle).build().unwrap();
    let mut ran = false;
    let e = mulligan::retry(&policy, || -> Result<(), &str> {
        ran = true;
        Ok(())
    })
    .unwrap_err();
    assert_eq!(e.code(), Code::Throttled);
    assert_eq!(e.stop_reason(), Some(StopReason::Throttled));
    assert!(!ran);
}

/// A bulkhead of 2 with a queue: 8 threads, never more than 2 inside.
#[test]
fn a_bulkhead_keeps_exactly_n_in_flight_under_8_threads() {
    let bulkhead = Bulkhead::new("rust-bulkhead", 2, 16, None).unwrap();
    let policy = Arc::new(Policy::builder().bulkhead(&bulkhead, false).build().unwrap());
    let inside = Arc::new(AtomicU32::new(0));
    let peak = Arc::new(AtomicU32::new(0));
    let threads: Vec<_> = (0..8)
        .map(|_| {
            let (policy, inside, peak) = (policy.clone(), inside.clone(), peak.clone());
            std::thread::spawn(move || {
                for _ in 0..20 {
                    mulligan::retry(&policy, || -> Result<(), &str> {
                        let n = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        peak.fetch_max(n, Ordering::SeqCst);
                        std::thread::sleep(Duration::from_micros(100));
                        inside.fetch_sub(1, Ordering::SeqCst);
                        Ok(())
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(peak.load(Ordering::SeqCst), 2);
    assert_eq!((bulkhead.in_flight(), bulkhead.queued()), (0, 0));
}

#[test]
fn a_full_bulkhead_and_a_rate_limiter_refuse() {
    let bulkhead = Bulkhead::new("rust-full", 1, 0, None).unwrap();
    let policy = Policy::builder().bulkhead(&bulkhead, false).build().unwrap();
    assert!(bulkhead.try_acquire());
    let e = mulligan::retry(&policy, || -> Result<(), &str> { Ok(()) }).unwrap_err();
    assert_eq!((e.code(), e.stop_reason()), (Code::BulkheadFull, Some(StopReason::BulkheadFull)));
    bulkhead.release();

    // 1 call per second, burst 1, no waiting: the 2nd call is refused, its
    // slot at most 1 s away.
    let o = RateLimiterOptions { rate: 1.0, burst: 1.0, max_wait: Some(Duration::ZERO), penalize_retry_after: false };
    let limiter = RateLimiter::new("rust-limited", &o).unwrap();
    let policy = Policy::builder().rate_limiter(&limiter, false).build().unwrap();
    mulligan::retry(&policy, || -> Result<(), &str> { Ok(()) }).unwrap();
    let e = mulligan::retry(&policy, || -> Result<(), &str> { Ok(()) }).unwrap_err();
    assert_eq!(e.code(), Code::RateLimited);
    let retry_in = e.retry_in().unwrap();
    assert!(retry_in > Duration::ZERO && retry_in <= Duration::from_secs(1), "{retry_in:?}");
}

/// 1 call per second, burst 1: the second call waits for its slot, exactly
/// 1 s on the fake clock, in `retry` (the clock's sleep) and in
/// `retry_async` (its own sleep), then runs.
#[test]
fn a_rate_limiter_wait_is_exact_sync_and_async() {
    let clock = FakeClock::new();
    let o = RateLimiterOptions { rate: 1.0, burst: 1.0, max_wait: None, penalize_retry_after: false };
    let limiter = RateLimiter::new("rust-wait", &o).unwrap();
    let policy = Policy::builder().clock(clock.clone()).rate_limiter(&limiter, false).build().unwrap();
    let t0 = clock.now_ms();
    mulligan::retry(&policy, || -> Result<(), &str> { Ok(()) }).unwrap();
    assert_eq!(clock.now_ms() - t0, 0.0);
    mulligan::retry(&policy, || -> Result<(), &str> { Ok(()) }).unwrap();
    assert_eq!(clock.now_ms() - t0, 1000.0);
    // The async wait goes through retry_async's sleep (recorded here), not
    // a blocking sleep of the policy's clock.
    let waits = std::sync::Mutex::new(Vec::new());
    let sleeper = |d: Duration| {
        waits.lock().unwrap().push(d);
        clock.advance(d);
        std::future::ready(())
    };
    let r = futures::executor::block_on(mulligan::retry_async(&policy, sleeper, || async { Ok::<_, &str>(7) }));
    assert_eq!(r.unwrap(), 7);
    assert_eq!(clock.now_ms() - t0, 2000.0);
    assert_eq!(*waits.lock().unwrap(), vec![Duration::from_secs(1)]);
}
