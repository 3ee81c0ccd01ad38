//! Composable waits (`mulligan_wait.h`; tenacity's wait_* family): a wait
//! expression replaces a policy's backoff and jitter
//! ([`PolicyBuilder::wait`](crate::PolicyBuilder::wait)); max_delay and
//! min_delay still clamp it. The engine computes every delay.
use super::*;

/// An immutable wait expression (`mulligan_wait`; `Send + Sync`: the header
/// says it may be read from many threads). Copied into whatever uses it.
pub struct Wait {
    raw: NonNull<sys::mulligan_wait>,
}

// SAFETY: mulligan_wait.h: "immutable; may be read from many threads".
unsafe impl Send for Wait {}
unsafe impl Sync for Wait {}

impl Drop for Wait {
    fn drop(&mut self) {
        // SAFETY: owned wait.
        unsafe { sys::mulligan_wait_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Wait")
    }
}

fn made(rc: i32, out: *mut sys::mulligan_wait) -> Result<Wait, Error> {
    check(rc)?;
    NonNull::new(out).map(|raw| Wait { raw }).ok_or_else(|| Error::from_status(sys::MULLIGAN_E_INTERNAL as i32))
}

fn cap(max: Option<Duration>) -> f64 {
    max.map_or(sys::MULLIGAN_WAIT_NO_MAX, ms)
}

impl Wait {
    pub(crate) fn raw(&self) -> *const sys::mulligan_wait {
        self.raw.as_ptr()
    }
    /// `delay` before every retry.
    pub fn constant(delay: Duration) -> Result<Wait, Error> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out pointer.
        made(unsafe { sys::mulligan_wait_constant(&mut out, ms(delay)) }, out)
    }
    /// start + increment * n, capped at `max` (None: no cap of its own).
    pub fn linear(start: Duration, increment: Duration, max: Option<Duration>) -> Result<Wait, Error> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out pointer.
        made(unsafe { sys::mulligan_wait_linear(&mut out, ms(start), ms(increment), cap(max)) }, out)
    }
    /// base * multiplier^n, capped at `max` (None: no cap of its own).
    pub fn exponential(base: Duration, multiplier: f64, max: Option<Duration>) -> Result<Wait, Error> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out pointer.
        made(unsafe { sys::mulligan_wait_exponential(&mut out, ms(base), multiplier, cap(max)) }, out)
    }
    /// uniform(low, high) from the policy's seeded generator.
    pub fn uniform(low: Duration, high: Duration) -> Result<Wait, Error> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out pointer.
        made(unsafe { sys::mulligan_wait_uniform(&mut out, ms(low), ms(high)) }, out)
    }
    /// uniform(0, max): add it to another wait with [`Wait::sum`].
    pub fn jitter(max: Duration) -> Result<Wait, Error> {
        let mut out = ptr::null_mut();
        // SAFETY: valid out pointer.
        made(unsafe { sys::mulligan_wait_jitter(&mut out, ms(max)) }, out)
    }
    /// The sum of `waits` (copied).
    pub fn sum(waits: &[&Wait]) -> Result<Wait, Error> {
        let ptrs: Vec<*const sys::mulligan_wait> = waits.iter().map(|w| w.raw()).collect();
        let mut out = ptr::null_mut();
        // SAFETY: valid pointers for the call; copied.
        made(unsafe { sys::mulligan_wait_sum(&mut out, ptrs.as_ptr(), ptrs.len()) }, out)
    }
    /// One wait per retry in turn, the last repeated (copied).
    pub fn chain(waits: &[&Wait]) -> Result<Wait, Error> {
        let ptrs: Vec<*const sys::mulligan_wait> = waits.iter().map(|w| w.raw()).collect();
        let mut out = ptr::null_mut();
        // SAFETY: valid pointers for the call; copied.
        made(unsafe { sys::mulligan_wait_chain(&mut out, ptrs.as_ptr(), ptrs.len()) }, out)
    }
}
