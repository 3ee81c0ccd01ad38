//! The shared vectors (tests/vectors/*.json), run through the Rust binding:
//! the same results as the C++, C and Python suites.
use mulligan::{Backoff, Breaker, BreakerState, CallResult, Clock, FakeClock, Failure, Jitter, Policy, StopReason, Window};
use serde_json::Value;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn vectors(name: &str) -> Value {
    let path = format!("{}/../../../tests/vectors/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn secs(v: &Value) -> Duration {
    Duration::from_secs_f64(v.as_f64().unwrap())
}

/// A fake clock that also records every wait.
#[derive(Clone)]
struct Recording {
    fake: FakeClock,
    waits: Arc<Mutex<Vec<Duration>>>,
}

impl Recording {
    fn new() -> Recording {
        Recording { fake: FakeClock::new(), waits: Arc::default() }
    }
    fn take(&self) -> Vec<Duration> {
        std::mem::take(&mut self.waits.lock().unwrap())
    }
}

impl Clock for Recording {
    fn now_ms(&self) -> f64 {
        self.fake.now_ms()
    }
    fn sleep(&self, d: Duration) {
        self.waits.lock().unwrap().push(d);
        self.fake.advance(d);
    }
    fn engine_clock(&self) -> *const mulligan_sys::mulligan_clock {
        self.fake.engine_clock()
    }
}

fn backoff(name: &str) -> Backoff {
    match name {
        "constant" => Backoff::Constant,
        "linear" => Backoff::Linear,
        "exponential" => Backoff::Exponential,
        "decorrelated" => Backoff::Decorrelated,
        other => panic!("unknown backoff {other}"),
    }
}

fn jitter(name: &str) -> Jitter {
    match name {
        "none" => Jitter::None,
        "full" => Jitter::Full,
        "equal" => Jitter::Equal,
        "proportional" => Jitter::Proportional,
        other => panic!("unknown jitter {other}"),
    }
}

#[test]
fn backoff_vectors() {
    let v = vectors("backoff.json");
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 5);
    for c in cases {
        let clock = Recording::new();
        let count = c["count"].as_u64().unwrap() as usize;
        let policy = Policy::builder()
            .backoff(backoff(c["backoff"].as_str().unwrap()))
            .jitter(jitter(c["jitter"].as_str().unwrap()))
            .base_delay(Duration::from_nanos(c["base_ns"].as_u64().unwrap()))
            .max_delay(Duration::from_nanos(c["max_delay_ns"].as_u64().unwrap()))
            .multiplier(c["multiplier"].as_f64().unwrap())
            .jitter_fraction(c["jitter_fraction"].as_f64().unwrap())
            .seed(c["seed"].as_u64().unwrap())
            .max_attempts(count as u32 + 1)
            .clock(clock.clone())
            .build()
            .unwrap();
        let r: Result<(), _> = mulligan::retry(&policy, || Err("down"));
        let e = r.unwrap_err();
        assert_eq!(e.code(), mulligan::Code::RetriesExhausted);
        assert_eq!(e.last_error(), Some(&"down"));
        let got: Vec<u64> = clock.take().iter().map(|d| d.as_nanos() as u64).collect();
        let want: Vec<u64> = c["expected_ns"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        assert_eq!(got, want, "backoff vector {}", c["name"]);
    }
}

#[test]
fn retry_after_vectors() {
    let v = vectors("retry_after.json");
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 20);
    for c in cases {
        let value = c["value"].as_str().unwrap();
        let now = UNIX_EPOCH + Duration::from_secs(c["now_unix"].as_u64().unwrap());
        let got = mulligan::parse_retry_after(value, now);
        if c.get("saturated").and_then(Value::as_bool).unwrap_or(false) {
            assert_eq!(got, Some(mulligan::DURATION_MAX), "{value:?}");
        } else if let Some(s) = c["expected_seconds"].as_u64() {
            assert_eq!(got, Some(Duration::from_secs(s)), "{value:?}");
        } else {
            assert_eq!(got, None, "{value:?} must be invalid");
        }
    }
    let _ = SystemTime::now();
}

fn state(name: &str) -> BreakerState {
    match name {
        "closed" => BreakerState::Closed,
        "open" => BreakerState::Open,
        "half_open" => BreakerState::HalfOpen,
        "forced_open" => BreakerState::ForcedOpen,
        "disabled" => BreakerState::Disabled,
        "metrics_only" => BreakerState::MetricsOnly,
        other => panic!("unknown state {other}"),
    }
}

fn breaker_of(o: &Value, clock: &FakeClock) -> Breaker {
    let mut b = Breaker::builder().name("vector").clock(clock.clone());
    let get = |k: &str| o.get(k).filter(|v| !v.is_null());
    if let Some(v) = get("failure_threshold") { b = b.failure_threshold(v.as_u64().unwrap() as u32) }
    if let Some(v) = get("reset_timeout") { b = b.reset_timeout(secs(v)) }
    if let Some(v) = get("reset_timeout_multiplier") { b = b.reset_timeout_multiplier(v.as_f64().unwrap()) }
    if let Some(v) = get("max_reset_timeout") { b = b.max_reset_timeout(secs(v)) }
    if let Some(v) = get("half_open_max_calls") { b = b.half_open_max_calls(v.as_u64().unwrap() as u32) }
    if let Some(v) = get("permit_timeout") { b = b.permit_timeout(secs(v)) }
    if let Some(v) = get("failure_rate_threshold") { b = b.failure_rate_threshold(v.as_f64().unwrap()) }
    if let Some(v) = get("minimum_calls") { b = b.minimum_calls(v.as_u64().unwrap() as u32) }
    if let Some(v) = get("slow_call_duration") { b = b.slow_call_duration(secs(v)) }
    if let Some(v) = get("slow_call_rate_threshold") { b = b.slow_call_rate_threshold(v.as_f64().unwrap()) }
    match get("window").and_then(Value::as_str) {
        Some("count") => b = b.window(Window::Count(get("window_size").map_or(0, |v| v.as_u64().unwrap() as u32))),
        Some("time") => {
            b = b.window(Window::Time(
                secs(get("window_duration").unwrap()),
                get("window_buckets").map_or(0, |v| v.as_u64().unwrap() as u32),
            ))
        }
        Some("none") | None => {}
        Some(other) => panic!("unknown window {other}"),
    }
    b.build().unwrap()
}

#[test]
fn breaker_vectors() {
    let v = vectors("breaker.json");
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for c in cases {
        let clock = FakeClock::new();
        let b = breaker_of(&c["options"], &clock);
        let mut permits = HashMap::new();
        let mut now = 0.0;
        for (i, s) in c["steps"].as_array().unwrap().iter().enumerate() {
            let at = s["at"].as_f64().unwrap();
            if at > now {
                clock.advance(Duration::from_secs_f64(at - now));
                now = at;
            }
            let ctx = format!("{} step {i}", c["name"]);
            let ex = &s["expect"];
            let mut acquired = None;
            match s["op"].as_str().unwrap() {
                "acquire" => {
                    let (p, st, retry_in) = b.try_acquire();
                    acquired = Some((p.is_some(), st, retry_in));
                    if let Some(p) = p {
                        permits.insert(s["permit"].as_str().unwrap().to_string(), p);
                    }
                }
                "record" => {
                    let p = permits.remove(s["permit"].as_str().unwrap());
                    let result = match s["result"].as_str().unwrap() {
                        "success" => CallResult::Success,
                        "failure" => CallResult::Failure,
                        _ => CallResult::Ignored,
                    };
                    let duration = s.get("duration").map_or(Duration::ZERO, secs);
                    // A refused permit's record changes nothing (as in C).
                    if let Some(p) = p {
                        p.record(result, Some(duration));
                    }
                }
                "force_open" => b.force_open().unwrap(),
                "disable" => b.disable().unwrap(),
                "metrics_only" => b.metrics_only().unwrap(),
                "reset" => b.reset().unwrap(),
                "check" => {}
                other => panic!("unknown op {other}"),
            }
            if let Some(a) = ex.get("admitted") {
                assert_eq!(acquired.unwrap().0, a.as_bool().unwrap(), "{ctx}: admitted");
            }
            if let Some(st) = ex.get("state") {
                assert_eq!(b.state(), state(st.as_str().unwrap()), "{ctx}: state");
                if let Some((_, s2, _)) = acquired {
                    assert_eq!(s2, state(st.as_str().unwrap()), "{ctx}: permit state");
                }
            }
            if let Some(r) = ex.get("retry_in") {
                let got = match acquired {
                    Some((_, _, d)) => Some(d).filter(|d| *d != mulligan::DURATION_MAX),
                    None => b.time_until_probe(),
                };
                match r.as_f64() {
                    None => assert_eq!(got, None, "{ctx}: retry_in never"),
                    Some(want) => {
                        let got = got.unwrap().as_secs_f64();
                        assert!((got - want).abs() < 1e-6, "{ctx}: retry_in {got} != {want}");
                    }
                }
            }
            let counts = b.counts();
            for (key, got) in [
                ("consecutive_failures", counts.consecutive_failures as u64),
                ("successes", counts.successes),
                ("failures", counts.failures),
                ("ignored", counts.ignored),
                ("rejected", counts.rejected),
            ] {
                if let Some(want) = ex.get(key) {
                    assert_eq!(got, want.as_u64().unwrap(), "{ctx}: {key}");
                }
            }
        }
        // Permits still held are dropped here (recorded as ignored).
        drop(permits);
    }
}

#[derive(Debug, PartialEq)]
enum Attempt {
    Retryable(Option<Duration>),
    Terminal,
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Door {
    Sync,
    Async,
}

fn stop_name(r: StopReason) -> &'static str {
    match r {
        StopReason::Succeeded => "succeeded",
        StopReason::Terminal => "terminal",
        StopReason::AttemptsExhausted => "attempts_exhausted",
        StopReason::Deadline => "deadline",
        StopReason::RetryAfterTooLong => "retry_after_too_long",
        StopReason::NotReplaySafe => "not_replay_safe",
        StopReason::CircuitOpen => "circuit_open",
        _ => "other",
    }
}

fn run_pipeline_case(index: usize, c: &Value, door: Door, http: bool, named: bool) {
    let name = format!("rust-pipeline.json#{index}/{door:?}/{}/{}", if http { "http" } else { "kinds" }, named);
    let clock = Recording::new();
    let p = &c["policy"];
    let breaker = c.get("breaker").map(|o| breaker_of(o, &clock.fake));
    let mut b = Policy::builder().jitter(Jitter::None).clock(clock.clone());
    if named {
        b = b.name(&name);
    }
    if let Some(v) = p.get("max_attempts") { b = b.max_attempts(v.as_u64().unwrap() as u32) }
    if let Some(v) = p.get("backoff") { b = b.backoff(backoff(v.as_str().unwrap())) }
    if let Some(v) = p.get("base_delay") { b = b.base_delay(secs(v)) }
    if let Some(v) = p.get("multiplier") { b = b.multiplier(v.as_f64().unwrap()) }
    if let Some(v) = p.get("max_delay") { b = b.max_delay(secs(v)) }
    if let Some(v) = p.get("deadline") { b = b.deadline(secs(v)) }
    if let Some(v) = p.get("retry_after_max") { b = b.retry_after_max(secs(v)) }
    if let Some(br) = &breaker { b = b.breaker(br) }
    let policy = b.build().unwrap();
    for (ci, call) in c["calls"].as_array().unwrap().iter().enumerate() {
        let ctx = format!("{} ({name}) call {ci}", c["name"]);
        if let Some(a) = call.get("advance") {
            clock.fake.advance(secs(a));
        }
        let script: Vec<Result<u32, Attempt>> = call["script"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let (kind, ra) = match s {
                    Value::String(k) => (k.as_str(), None),
                    Value::Object(o) => (
                        o["outcome"].as_str().unwrap(),
                        o.get("retry_after").map(|v| Duration::from_secs(v.as_u64().unwrap())),
                    ),
                    other => panic!("bad script entry {other}"),
                };
                match kind {
                    "success" => Ok(200),
                    "retryable" => Err(Attempt::Retryable(ra)),
                    "terminal" => Err(Attempt::Terminal),
                    k => panic!("unknown outcome {k}"),
                }
            })
            .collect();
        let used = std::cell::Cell::new(0usize);
        let next = || {
            let i = used.get();
            used.set(i + 1);
            assert!(i < script.len(), "{ctx}: more attempts than the script holds");
            match &script[i] {
                Ok(v) => Ok(*v),
                Err(Attempt::Retryable(ra)) => Err(Attempt::Retryable(*ra)),
                Err(Attempt::Terminal) => Err(Attempt::Terminal),
            }
        };
        let classify = |e: &Attempt| match (e, http) {
            (Attempt::Retryable(None), false) => Failure::Retryable,
            (Attempt::Retryable(Some(d)), false) => Failure::RetryAfter(*d),
            (Attempt::Terminal, false) => Failure::Terminal,
            (Attempt::Retryable(ra), true) => Failure::Http { status: 503, retry_after: *ra },
            (Attempt::Terminal, true) => Failure::Http { status: 404, retry_after: None },
        };
        let result = match door {
            Door::Sync => mulligan::retry_classified(&policy, classify, next),
            Door::Async => {
                let sleep = |d: Duration| {
                    clock.sleep(d);
                    std::future::ready(())
                };
                futures::executor::block_on(mulligan::retry_async_classified(&policy, sleep, classify, || {
                    std::future::ready(next())
                }))
            }
        };
        let ex = &call["expect"];
        let (stop, refused) = match &result {
            Ok(v) => {
                assert_eq!(*v, 200);
                ("succeeded", false)
            }
            Err(e) => {
                let refused = e.code() == mulligan::Code::CircuitOpen;
                if refused {
                    assert!(e.message().contains("is open; next probe in"), "{ctx}: {}", e.message());
                }
                (stop_name(e.stop_reason().unwrap()), refused)
            }
        };
        assert_eq!(used.get() as u64, ex["attempts"].as_u64().unwrap(), "{ctx}: attempts");
        if let Err(e) = &result {
            assert_eq!(e.attempts() as u64, ex["attempts"].as_u64().unwrap(), "{ctx}: error attempts");
            if e.attempts() > 0 {
                assert!(e.last_error().is_some(), "{ctx}: the last error is kept");
            }
        }
        assert_eq!(stop, ex["stop_reason"].as_str().unwrap(), "{ctx}: stop reason");
        assert_eq!(refused, ex["refused"].as_bool().unwrap(), "{ctx}: refused");
        let waits: Vec<f64> = clock.take().iter().map(Duration::as_secs_f64).collect();
        let want: Vec<f64> = ex["delays"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert_eq!(waits.len(), want.len(), "{ctx}: waits {waits:?} != {want:?}");
        for (g, w) in waits.iter().zip(&want) {
            assert!((g - w).abs() < 1e-9, "{ctx}: waits {waits:?} != {want:?}");
        }
        if let (Some(st), Some(b)) = (ex.get("breaker_state").and_then(Value::as_str), &breaker) {
            assert_eq!(b.state(), state(st), "{ctx}: breaker state");
        }
    }
    if named {
        let m = mulligan::metrics::get(&name).unwrap();
        let em = &c["expect_metrics"];
        for (key, got) in [
            ("calls", m.calls),
            ("attempts", m.attempts),
            ("retries", m.retries),
            ("successes", m.successes),
            ("failures", m.failures),
        ] {
            if let Some(want) = em.get(key) {
                assert_eq!(got, want.as_u64().unwrap(), "{} ({name}): metrics {key}", c["name"]);
            }
        }
        assert_eq!(m.in_flight, 0);
        assert_eq!(m.waiting_to_retry, 0);
    }
}

#[test]
fn pipeline_vectors() {
    let v = vectors("pipeline.json");
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 9);
    for (i, c) in cases.iter().enumerate() {
        for door in [Door::Sync, Door::Async] {
            for http in [false, true] {
                // named: every call through the engine, metrics checked;
                // unnamed: the hot path (no C call until a failure).
                for named in [true, false] {
                    run_pipeline_case(i, c, door, http, named);
                }
            }
        }
    }
}

/// deadline.json: outcomes reported at `at` seconds after the first attempt
/// started, through `retry_classified` on a fake clock (the waits advance
/// it; an attempt advances it the rest of the way to its `at`).
#[test]
fn deadline_vectors() {
    use mulligan::ErrorKind;
    let v = vectors("deadline.json");
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for c in cases {
        for door in [Door::Sync, Door::Async] {
            let ctx = format!("{} ({door:?})", c["name"]);
            let clock = Recording::new();
            let p = &c["policy"];
            let mut b = Policy::builder().clock(clock.clone());
            if let Some(v) = p.get("max_attempts") { b = b.max_attempts(v.as_u64().unwrap() as u32) }
            if let Some(v) = p.get("backoff") { b = b.backoff(backoff(v.as_str().unwrap())) }
            if let Some(v) = p.get("base_delay") { b = b.base_delay(secs(v)) }
            if let Some(v) = p.get("multiplier") { b = b.multiplier(v.as_f64().unwrap()) }
            if let Some(v) = p.get("max_delay") { b = b.max_delay(secs(v)) }
            if let Some(v) = p.get("jitter") { b = b.jitter(jitter(v.as_str().unwrap())) }
            if let Some(v) = p.get("deadline") { b = b.deadline(secs(v)) }
            if let Some(v) = p.get("retry_after_max") { b = b.retry_after_max(secs(v)) }
            if let Some(v) = p.get("retry_after_clamp") { b = b.retry_after_clamp(v.as_bool().unwrap()) }
            if let Some(v) = c.get("replay_safe") { b = b.replay_safe(v.as_bool().unwrap()) }
            let policy = b.build().unwrap();
            let steps = c["steps"].as_array().unwrap().clone();
            let start = clock.now_ms();
            let used = std::cell::Cell::new(0usize);
            let next = || -> Result<(), Failure> {
                let i = used.get();
                used.set(i + 1);
                if i == steps.len() {
                    // the script ended on a retry decision: end the call
                    return Err(Failure::Terminal);
                }
                let s = &steps[i];
                let at_ms = start + s["at"].as_f64().unwrap() * 1000.0;
                let now = clock.now_ms();
                assert!(at_ms + 1e-6 >= now, "{ctx}: step {i} at {at_ms} before now {now}");
                if at_ms > now {
                    clock.fake.advance(Duration::from_secs_f64((at_ms - now) / 1000.0));
                }
                let o = &s["outcome"];
                let retry_after = o.get("retry_after").map(secs);
                if let Some(kind) = o.get("error").and_then(Value::as_str) {
                    return Err(match kind {
                        "retryable" => retry_after.map_or(Failure::Retryable, Failure::RetryAfter),
                        "terminal" => Failure::Terminal,
                        "connection_refused" => Failure::Error(ErrorKind::ConnectionRefused),
                        "connection_reset" => Failure::Error(ErrorKind::ConnectionReset),
                        "tls_error" => Failure::Error(ErrorKind::Tls),
                        "timeout" => Failure::Error(ErrorKind::Timeout),
                        other => panic!("{ctx}: unknown error {other}"),
                    });
                }
                match o.get("http_status").and_then(Value::as_u64) {
                    Some(st) if !(200..300).contains(&st) => Err(Failure::Http { status: st as u16, retry_after }),
                    _ => Ok(()),
                }
            };
            let result = match door {
                Door::Sync => mulligan::retry_classified(&policy, |f: &Failure| *f, next),
                Door::Async => futures::executor::block_on(mulligan::retry_async_classified(
                    &policy,
                    |d: Duration| {
                        clock.sleep(d);
                        std::future::ready(())
                    },
                    |f: &Failure| *f,
                    || std::future::ready(next()),
                )),
            };
            // every step is one attempt (one more to end a script that ends
            // on a retry); every retry step's delay was waited
            let last = &steps.last().unwrap()["expect"];
            let open_end = last["action"] == "retry";
            assert_eq!(used.get(), steps.len() + open_end as usize, "{ctx}: attempts");
            let waits = clock.take();
            let retries: Vec<&Value> = steps.iter().filter(|s| s["expect"]["action"] == "retry").collect();
            assert_eq!(waits.len(), retries.len(), "{ctx}: waits {waits:?}");
            for (w, s) in waits.iter().zip(&retries) {
                if let Some(d) = s["expect"].get("delay").and_then(Value::as_f64) {
                    assert!((w.as_secs_f64() - d).abs() < 1e-9, "{ctx}: wait {w:?} != {d}");
                }
            }
            let reason = match &result {
                Ok(()) => "succeeded",
                Err(e) => stop_name(e.stop_reason().unwrap()),
            };
            if let (false, Some(want)) = (open_end, last.get("reason").and_then(Value::as_str)) {
                assert_eq!(reason, want, "{ctx}: stop reason");
            }
        }
    }
}

fn wait_of(w: &Value) -> mulligan::Wait {
    use mulligan::Wait;
    let ns = |k: &str| w.get(k).map(|v| Duration::from_nanos(v.as_u64().unwrap()));
    let terms = || -> Vec<Wait> { w["terms"].as_array().unwrap().iter().map(wait_of).collect() };
    match w["kind"].as_str().unwrap() {
        "constant" => Wait::constant(ns("delay_ns").or(ns("start_ns")).unwrap()),
        "linear" => Wait::linear(ns("start_ns").unwrap(), ns("increment_ns").unwrap(), ns("max_ns")),
        "exponential" => Wait::exponential(ns("base_ns").unwrap(), w["multiplier"].as_f64().unwrap(), ns("max_ns")),
        "uniform" => Wait::uniform(ns("low_ns").unwrap(), ns("high_ns").unwrap()),
        "jitter" => Wait::jitter(ns("max_ns").unwrap()),
        "sum" => Wait::sum(&terms().iter().collect::<Vec<_>>()),
        "chain" => Wait::chain(&terms().iter().collect::<Vec<_>>()),
        other => panic!("unknown wait {other}"),
    }
    .unwrap()
}

#[test]
fn waits_vectors() {
    let v = vectors("waits.json");
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 5);
    for c in cases {
        let clock = Recording::new();
        let count = c["count"].as_u64().unwrap() as usize;
        let policy = Policy::builder()
            .wait(&wait_of(&c["wait"]))
            .min_delay(Duration::from_nanos(c["min_delay_ns"].as_u64().unwrap()))
            .max_delay(Duration::from_nanos(c["max_delay_ns"].as_u64().unwrap()))
            .seed(c["seed"].as_u64().unwrap())
            .max_attempts(count as u32 + 1)
            .clock(clock.clone())
            .build()
            .unwrap();
        let _ = mulligan::retry(&policy, || Err::<(), _>("down"));
        let got: Vec<u64> = clock.take().iter().map(|d| d.as_nanos() as u64).collect();
        let want: Vec<u64> = c["expected_ns"].as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        assert_eq!(got, want, "waits vector {}", c["name"]);
    }
}
