//! The resilient HTTP client on libcurl (`mulligan_http.h`): retries per a
//! [`Policy`](crate::Policy)'s retry options, honours Retry-After, trims each
//! attempt to the deadline and applies the method rules (GET, HEAD, OPTIONS,
//! TRACE, PUT, DELETE retried; POST and PATCH only with an idempotency key or
//! when nothing was sent). Every decision is the engine's; waits are the C
//! client's real sleeps (this client blocks: call it from a blocking thread
//! in async code). A policy's breaker and clock do not apply here.
use super::*;
use crate::hedge::c_int;

/// An HTTP client (`mulligan_http_client`). `Send + Sync`: the header says
/// requests may be made from many threads at once on one client.
pub struct Client {
    raw: NonNull<sys::mulligan_http_client>,
}

// SAFETY: mulligan_http.h: "mulligan_http_request() may be called from many
// threads at once on one client".
unsafe impl Send for Client {}
unsafe impl Sync for Client {}

impl Drop for Client {
    fn drop(&mut self) {
        // SAFETY: requests borrow the client, so none is running.
        unsafe { sys::mulligan_http_client_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("http::Client")
    }
}

/// The last attempt's response plus what the retry loop did
/// (`mulligan_http_response`; immutable, `Send + Sync`).
pub struct Response {
    raw: NonNull<sys::mulligan_http_response>,
}

// SAFETY: mulligan_http.h: "immutable; safe to read from many threads".
unsafe impl Send for Response {}
unsafe impl Sync for Response {}

impl Drop for Response {
    fn drop(&mut self) {
        // SAFETY: owned response.
        unsafe { sys::mulligan_http_response_destroy(self.raw.as_ptr()) }
    }
}

impl fmt::Debug for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Response").field("status", &self.status()).field("attempts", &self.attempts()).finish()
    }
}

fn cstring(what: &str, s: &str) -> Result<CString, Error> {
    CString::new(s).map_err(|_| Error {
        code: Code::InvalidArgument,
        message: format!("{what} must not contain a NUL byte"),
        stop_reason: None,
        attempts: 0,
        retry_in: None,
        last: None,
    })
}

impl Client {
    /// A client retrying per `policy`'s retry options (copied): attempt
    /// timeout 30 s unless the policy sets one, connect timeout 10 s, TLS
    /// verification on.
    pub fn new(policy: &Policy) -> Result<Client, Error> {
        let mut out = ptr::null_mut();
        // SAFETY: valid policy, copied.
        check(unsafe { sys::mulligan_http_client_create(&mut out, policy.retry_policy.as_ptr()) })?;
        Ok(Client { raw: NonNull::new(out).unwrap() })
    }

    /// A client that hedges its replay-safe requests (GET, HEAD, OPTIONS,
    /// TRACE, PUT, DELETE, or any with an idempotency key: the same key on
    /// every copy; a POST without one is sent once), per `hedging` (copy
    /// k+1 starts `delay` after copy k, or at once after a retryable
    /// failure; with `delay_quantile` the delay is that quantile of recent
    /// winners' latencies): the copies run on one libcurl multi handle in the
    /// calling thread, the first response the client accepts wins and the
    /// other transfers are aborted (counted cancelled). Hedging replaces
    /// retrying for the requests it covers (gRPC A6): `max_attempts` counts
    /// copies. A bad field is [`Code::InvalidArgument`] naming it
    /// (`mulligan_http_options_set_hedging`, `_set_hedging_quantile`).
    /// (Added in 0.6.)
    pub fn hedged(policy: &Policy, hedging: &HedgingOptions) -> Result<Client, Error> {
        // Every field is checked as HedgingPolicy::new checks it (the C
        // setters below take the quantile fields only with a quantile), so
        // one HedgingOptions is valid for both front doors or for neither.
        HedgingPolicy::new(*hedging)?;
        let mut opts = ptr::null_mut();
        // SAFETY: valid out pointer.
        check(unsafe { sys::mulligan_http_options_create(&mut opts) })?;
        struct Options(*mut sys::mulligan_http_options);
        impl Drop for Options {
            fn drop(&mut self) {
                // SAFETY: created above; copied by create_v2.
                unsafe { sys::mulligan_http_options_destroy(self.0) }
            }
        }
        let opts = Options(opts);
        let delay_ms = i64::try_from(hedging.delay.as_millis()).unwrap_or(i64::MAX);
        // SAFETY: valid options handle.
        check(unsafe { sys::mulligan_http_options_set_hedging(opts.0, c_int(hedging.max_attempts), delay_ms) })?;
        if hedging.delay_quantile != 0.0 {
            // SAFETY: valid options handle.
            check(unsafe {
                sys::mulligan_http_options_set_hedging_quantile(
                    opts.0,
                    hedging.delay_quantile,
                    c_int(hedging.quantile_window),
                    c_int(hedging.quantile_min_samples),
                )
            })?;
        }
        let mut out = ptr::null_mut();
        // SAFETY: valid policy and options, both copied.
        check(unsafe { sys::mulligan_http_client_create_v2(&mut out, policy.retry_policy.as_ptr(), opts.0) })?;
        Ok(Client { raw: NonNull::new(out).unwrap() })
    }

    /// GET `url`.
    pub fn get(&self, url: &str) -> Result<Response, Error<Response>> {
        self.request("GET", url, &[], &[], None)
    }

    /// Sends a request and blocks until the retry loop stops.
    ///
    /// `Ok` for any response that arrived, whatever its status (a 503 after
    /// the retries gave up is `Ok` with status 503 and
    /// [`Response::stop_reason`] AttemptsExhausted). `Err` when the last
    /// attempt got no response ([`Code::Transport`], [`Code::Timeout`],
    /// [`Code::DeadlineExceeded`]: the status-0 response is kept as
    /// [`Error::last_error`]) or for a bad argument ([`Code::InvalidArgument`]).
    pub fn request(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        idempotency_key: Option<&str>,
    ) -> Result<Response, Error<Response>> {
        let method = cstring("method", method).map_err(Error::cast)?;
        let url = cstring("url", url).map_err(Error::cast)?;
        let lines: Vec<CString> = headers
            .iter()
            .map(|(n, v)| cstring("a header", &format!("{n}: {v}")))
            .collect::<Result<_, _>>()
            .map_err(Error::cast)?;
        let ptrs: Vec<*const core::ffi::c_char> = lines.iter().map(|c| c.as_ptr()).collect();
        let key = idempotency_key.map(|k| cstring("idempotency_key", k)).transpose().map_err(Error::cast)?;
        let mut out = ptr::null_mut();
        // SAFETY: every pointer is valid for the call; the library copies them.
        let rc = unsafe {
            sys::mulligan_http_request(
                self.raw.as_ptr(),
                method.as_ptr(),
                url.as_ptr(),
                if ptrs.is_empty() { ptr::null() } else { ptrs.as_ptr() },
                ptrs.len(),
                if body.is_empty() { ptr::null() } else { body.as_ptr().cast() },
                body.len(),
                key.as_ref().map_or(ptr::null(), |k| k.as_ptr()),
                &mut out,
            )
        };
        let resp = NonNull::new(out).map(|raw| Response { raw });
        if rc == 0 {
            return resp.ok_or_else(|| Error::from_status(sys::MULLIGAN_E_INTERNAL as i32));
        }
        let mut e: Error<Response> = Error::from_status(rc);
        if let Some(r) = resp {
            e.attempts = r.attempts();
            e.stop_reason = Some(r.stop_reason());
            e.last = Some(r);
        }
        Err(e)
    }
}

impl Response {
    /// The final HTTP status (the last attempt's); 0 when it got no response.
    pub fn status(&self) -> u16 {
        // SAFETY: valid response.
        unsafe { sys::mulligan_http_response_status(self.raw.as_ptr()) }.clamp(0, 999) as u16
    }
    /// The last response's body.
    pub fn body(&self) -> &[u8] {
        let mut len = 0;
        // SAFETY: valid response; the bytes live as long as it.
        let p = unsafe { sys::mulligan_http_response_body(self.raw.as_ptr(), &mut len) };
        if p.is_null() || len == 0 {
            &[]
        } else {
            unsafe { std::slice::from_raw_parts(p.cast(), len) }
        }
    }
    /// A response header by name (case-insensitive), if present.
    pub fn header(&self, name: &str) -> Option<String> {
        let c = CString::new(name).ok()?;
        // SAFETY: valid response and name; the text is copied at once.
        let p = unsafe { sys::mulligan_http_response_header(self.raw.as_ptr(), c.as_ptr()) };
        (!p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
    }
    /// Every response header (name, value), in received order.
    pub fn headers(&self) -> Vec<(String, String)> {
        // SAFETY: valid response.
        let n = unsafe { sys::mulligan_http_response_header_count(self.raw.as_ptr()) };
        (0..n)
            .filter_map(|i| {
                let (mut name, mut value) = (ptr::null(), ptr::null());
                // SAFETY: valid response, index in range.
                let rc = unsafe { sys::mulligan_http_response_header_at(self.raw.as_ptr(), i, &mut name, &mut value) };
                (rc == 0 && !name.is_null() && !value.is_null()).then(|| unsafe {
                    (CStr::from_ptr(name).to_string_lossy().into_owned(), CStr::from_ptr(value).to_string_lossy().into_owned())
                })
            })
            .collect()
    }
    /// Attempts made.
    pub fn attempts(&self) -> u32 {
        // SAFETY: valid response.
        unsafe { sys::mulligan_http_response_attempts(self.raw.as_ptr()) }.max(0) as u32
    }
    /// Why the retry loop stopped.
    pub fn stop_reason(&self) -> StopReason {
        // SAFETY: valid response.
        StopReason::from_raw(unsafe { sys::mulligan_http_response_stop_reason(self.raw.as_ptr()) })
    }
    /// From the start of the first attempt to the end of the last.
    pub fn elapsed(&self) -> Duration {
        // SAFETY: valid response.
        from_ms(unsafe { sys::mulligan_http_response_elapsed_ms(self.raw.as_ptr()) })
    }
}
