//! The README's Rust hedging example: a slow first replica loses to the
//! hedge started 20 ms later, sync (a thread per copy) and async (futures
//! polled together, a thread-backed timer as the sleep). Run: cargo run --example hedge
use mulligan::{HedgingOptions, HedgingPolicy, Policy};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

/// A timer future for the example, woken by a thread (a runtime's
/// `tokio::time::sleep` does the same job).
struct ThreadSleep(Arc<Mutex<(bool, Option<Waker>)>>);

fn sleep(d: Duration) -> ThreadSleep {
    let state = Arc::new(Mutex::new((false, None::<Waker>)));
    let s = state.clone();
    std::thread::spawn(move || {
        std::thread::sleep(d);
        let mut g = s.lock().unwrap();
        g.0 = true;
        if let Some(w) = g.1.take() {
            w.wake();
        }
    });
    ThreadSleep(state)
}

impl Future for ThreadSleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut g = self.0.lock().unwrap();
        if g.0 {
            return Poll::Ready(());
        }
        g.1 = Some(cx.waker().clone());
        Poll::Pending
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let policy = Policy::builder().name("example-hedge").build()?;
    let hedging =
        HedgingPolicy::new(HedgingOptions { max_attempts: 3, delay: Duration::from_millis(20), ..Default::default() })?;

    // Copy 1 is a slow replica (1 s unless cancelled); copy 2 starts at 20 ms and wins.
    let v = mulligan::hedge(&policy, &hedging, |copy, cancel| {
        if copy == 1 && !cancel.wait_timeout(Duration::from_secs(1)) {
            return Ok::<_, std::io::Error>(format!("copy {copy} (slow)"));
        }
        Ok(format!("copy {copy}"))
    })?;
    println!("sync winner: {v}");

    let v = futures::executor::block_on(mulligan::hedge_async(&policy, &hedging, sleep, |copy| async move {
        if copy == 1 {
            sleep(Duration::from_secs(1)).await; // dropped when copy 2 wins
        }
        Ok::<_, std::io::Error>(format!("copy {copy}"))
    }))?;
    println!("async winner: {v}");

    let m = mulligan::metrics::get("example-hedge")?;
    println!("calls {} attempts {} hedges {} won {} cancelled copies {}", m.calls, m.attempts, m.hedges, m.hedges_won, m.hedge_cancelled);
    Ok(())
}
