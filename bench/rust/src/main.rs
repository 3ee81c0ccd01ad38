//! Plain timing harness (no criterion: one run, ratios): mulligan's Rust
//! binding against the backoff and backon crates on the three paths of
//! issue 17: retry success, two failures then success with zero wait, and
//! the breaker guard (neither peer has a breaker: mulligan's guard is timed
//! alone, and a retry through a breaker-guarded policy beside it).
//!
//!   eval "$(scripts/install_capi.sh)"; cd bench/rust && cargo run --release
use backon::BlockingRetryable;
use std::hint::black_box;
use std::time::{Duration, Instant};

fn time_ns(mut f: impl FnMut()) -> f64 {
    for _ in 0..10_000 {
        f();
    }
    let mut runs = Vec::new();
    for _ in 0..7 {
        let n = 200_000;
        let t = Instant::now();
        for _ in 0..n {
            f();
        }
        runs.push(t.elapsed().as_nanos() as f64 / n as f64);
    }
    runs.sort_by(|a, b| a.partial_cmp(b).unwrap());
    runs[runs.len() / 2]
}

fn flaky(n: &mut u32) -> Result<u32, &'static str> {
    *n += 1;
    if *n % 3 == 0 { Ok(*n) } else { Err("flaky") }
}

fn main() {
    let policy = mulligan::Policy::builder().max_attempts(3).build().unwrap();
    let zero = mulligan::Policy::builder()
        .max_attempts(3)
        .backoff(mulligan::Backoff::Constant)
        .base_delay(Duration::ZERO)
        .jitter(mulligan::Jitter::None)
        .build()
        .unwrap();
    let breaker = mulligan::Breaker::builder().build().unwrap();
    let guarded = mulligan::Policy::builder().max_attempts(3).breaker(&breaker).build().unwrap();

    let mut rows: Vec<(&str, &str, f64)> = Vec::new();

    // 1. retry success
    rows.push(("retry success", "mulligan", time_ns(|| {
        black_box(mulligan::retry(&policy, || Ok::<_, &str>(black_box(1))).unwrap());
    })));
    rows.push(("retry success", "backoff", time_ns(|| {
        let b = backoff::ExponentialBackoff::default();
        black_box(backoff::retry(b, || Ok::<_, backoff::Error<&str>>(black_box(1))).unwrap());
    })));
    rows.push(("retry success", "backon", time_ns(|| {
        let b = backon::ExponentialBuilder::default().with_max_times(2);
        black_box((|| Ok::<_, &str>(black_box(1))).retry(b).sleep(std::thread::sleep).call().unwrap());
    })));

    // 2. two failures then success, zero wait
    let mut n = 0;
    rows.push(("2 failures + success, 0 wait", "mulligan", time_ns(|| {
        black_box(mulligan::retry(&zero, || flaky(&mut n)).unwrap());
    })));
    let mut n = 0;
    rows.push(("2 failures + success, 0 wait", "backoff", time_ns(|| {
        let b = backoff::backoff::Constant::new(Duration::ZERO);
        black_box(backoff::retry(b, || flaky(&mut n).map_err(backoff::Error::transient)).unwrap());
    })));
    let mut n = 0;
    rows.push(("2 failures + success, 0 wait", "backon", time_ns(|| {
        let b = backon::ConstantBuilder::default().with_delay(Duration::ZERO).with_max_times(2);
        black_box((|| flaky(&mut n)).retry(b).sleep(std::thread::sleep).call().unwrap());
    })));

    // 3. breaker guard
    rows.push(("breaker guard (acquire+record)", "mulligan", time_ns(|| {
        black_box(breaker.call(|| Ok::<_, &str>(black_box(1))).unwrap());
    })));
    rows.push(("retry success through a breaker", "mulligan", time_ns(|| {
        black_box(mulligan::retry(&guarded, || Ok::<_, &str>(black_box(1))).unwrap());
    })));

    // Where the failure path's time goes (the C calls it makes), with --probe.
    if std::env::args().any(|a| a == "--probe") {
        let p = mulligan::Clock::now_ms(&mulligan::SystemClock);
        let _ = p;
        println!("clock read (mulligan_clock_now_ms): {:.1} ns", time_ns(|| {
            black_box(mulligan::Clock::now_ms(&mulligan::SystemClock));
        }));
        println!("Instant::now: {:.1} ns", time_ns(|| {
            black_box(Instant::now());
        }));
        let noname = mulligan::Policy::builder().max_attempts(3).report_metrics(false)
            .backoff(mulligan::Backoff::Constant).base_delay(Duration::ZERO).jitter(mulligan::Jitter::None).build().unwrap();
        let mut n = 0;
        println!("2 failures + success, metrics off: {:.1} ns", time_ns(|| {
            black_box(mulligan::retry(&noname, || flaky(&mut n)).unwrap());
        }));
    }

    println!("| path | library | ns/op | vs fastest peer |");
    println!("| --- | --- | ---: | ---: |");
    for (path, lib, ns) in &rows {
        let peers: Vec<f64> = rows.iter().filter(|r| r.0 == *path && r.1 != "mulligan").map(|r| r.2).collect();
        let ratio = peers.iter().cloned().fold(f64::INFINITY, f64::min);
        let rel = if ratio.is_finite() { format!("{:.2}x", ns / ratio) } else { "no peer".into() };
        println!("| {path} | {lib} | {ns:.1} | {rel} |");
    }
}
