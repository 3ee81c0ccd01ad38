//! The README's Rust quick start: a flaky closure retried, a terminal error,
//! a breaker, Retry-After. Run: cargo run --example quickstart
use mulligan::{Backoff, Breaker, Code, Failure, Jitter, Policy};
use std::time::{Duration, SystemTime};

#[derive(Debug)]
enum AppError {
    Busy,
    NotFound,
}

impl std::fmt::Display for AppError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}
impl std::error::Error for AppError {}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Built and validated once; share it (Send + Sync).
    let policy = Policy::builder()
        .max_attempts(4)
        .backoff(Backoff::Exponential)
        .base_delay(Duration::from_millis(20))
        .jitter(Jitter::Full)
        .deadline(Duration::from_secs(2))
        .build()?;

    // Every Err is retryable by default; the engine decides each wait.
    let mut calls = 0;
    let value = mulligan::retry(&policy, || {
        calls += 1;
        if calls < 3 { Err(AppError::Busy) } else { Ok(calls * 10) }
    })?;
    println!("flaky call succeeded with {value} after {calls} attempts");

    // A classifier says which errors retrying cannot fix; the engine stops at once.
    let err = mulligan::retry_classified(
        &policy,
        |e: &AppError| match e {
            AppError::Busy => Failure::Retryable,
            AppError::NotFound => Failure::Terminal,
        },
        || -> Result<(), AppError> { Err(AppError::NotFound) },
    )
    .unwrap_err();
    println!("terminal: {:?} after {} attempt(s), your error kept: {:?}", err.code(), err.attempts(), err.last_error());

    // A breaker guarding the policy: an open breaker refuses at once (CircuitOpen, never retried).
    let breaker = Breaker::builder().name("db").failure_threshold(2).reset_timeout(Duration::from_secs(30)).build()?;
    let guarded = Policy::builder().max_attempts(1).breaker(&breaker).build()?;
    for _ in 0..2 {
        let _ = mulligan::retry(&guarded, || Err::<(), _>(AppError::Busy));
    }
    let refused = mulligan::retry(&guarded, || Ok::<_, AppError>(())).unwrap_err();
    assert_eq!(refused.code(), Code::CircuitOpen);
    println!("refused: {refused} (retry in {:?})", refused.retry_in());

    // Retry-After, parsed by the engine at a given now.
    println!("Retry-After: 120 -> {:?}", mulligan::parse_retry_after("120", SystemTime::now()));
    Ok(())
}
