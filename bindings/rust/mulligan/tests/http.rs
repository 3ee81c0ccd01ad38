//! The libcurl client against a real nginx (tests/nginx, the config the C
//! and Python suites use), started on a free loopback port; skipped when
//! nginx or python3 is missing. And a connection refused, which needs none.
use mulligan::{http::Client, Backoff, Code, HedgingOptions, Jitter, Policy, StopReason};
use std::io::Write;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

struct Nginx {
    child: Child,
    base: String,
    _dir: std::path::PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        drop(self.child.stdin.take()); // end of stdin stops the launcher
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self._dir);
    }
}

fn nginx() -> Option<Nginx> {
    let launcher = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../tests/nginx/nginx_server.py");
    let dir = std::env::temp_dir().join(format!("mulligan-rust-nginx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).ok()?;
    let port_file = dir.join("port");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let mut child = Command::new(python)
        .arg(launcher)
        .args(["serve", "--port-file"])
        .arg(&port_file)
        .arg("--workdir")
        .arg(dir.join("work"))
        .stdin(Stdio::piped())
        .spawn()
        .ok()?;
    for _ in 0..300 {
        if let Ok(text) = std::fs::read_to_string(&port_file) {
            if let Ok(port) = text.trim().parse::<u16>() {
                let _ = child.stdin.as_mut().unwrap().flush();
                return Some(Nginx { child, base: format!("http://127.0.0.1:{port}"), _dir: dir });
            }
        }
        if let Ok(Some(_)) = child.try_wait() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(child.stdin.take());
    let _ = child.wait();
    None
}

fn quick_policy() -> Policy {
    Policy::builder()
        .max_attempts(3)
        .backoff(Backoff::Constant)
        .base_delay(Duration::from_millis(1))
        .jitter(Jitter::None)
        .build()
        .unwrap()
}

#[test]
fn http_against_nginx() {
    let Some(server) = nginx() else {
        eprintln!("SKIP: nginx could not start");
        return;
    };
    let client = Client::new(&quick_policy()).unwrap();
    let ok = client.get(&format!("{}/ok", server.base)).unwrap();
    assert_eq!(ok.status(), 200);
    assert_eq!(ok.body(), b"ok\n");
    assert_eq!(ok.attempts(), 1);
    assert_eq!(ok.stop_reason(), StopReason::Succeeded);
    assert!(ok.headers().iter().any(|(n, _)| n.eq_ignore_ascii_case("content-type")));
    // always 503: retried, then the last response is returned with its status
    let down = client.get(&format!("{}/down", server.base)).unwrap();
    assert_eq!(down.status(), 503);
    assert_eq!(down.attempts(), 3);
    assert_eq!(down.stop_reason(), StopReason::AttemptsExhausted);
    // a POST without a key is not replayed once sent
    let post = client.request("POST", &format!("{}/down", server.base), &[], b"x", None).unwrap();
    assert_eq!(post.attempts(), 1);
    // with a key it is
    let keyed = client
        .request("POST", &format!("{}/down", server.base), &[("X-Test", "1")], b"x", Some("key-1"))
        .unwrap();
    assert_eq!(keyed.attempts(), 3);

    // Hedged (0.6): nginx's /hedge answers this id's first request after
    // 1 s and the next at once, so the copy sent 50 ms later wins.
    let hedging = HedgingOptions { max_attempts: 3, delay: Duration::from_millis(50), ..Default::default() };
    let hedged = Client::hedged(&quick_policy(), &hedging).unwrap();
    let id = format!("rust{}", std::process::id());
    let won = hedged.get(&format!("{}/hedge?id={id}&slow=0&ms=1000", server.base)).unwrap();
    assert_eq!(won.status(), 200);
    assert_eq!(won.body(), format!("hedge 1 of {id}\n").as_bytes());
    assert_eq!(won.attempts(), 2);
    let bad = Client::hedged(&quick_policy(), &HedgingOptions { max_attempts: 1, ..Default::default() });
    let e = bad.expect_err("max_attempts 1 is refused");
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.message().contains("max_attempts"), "{}", e.message());
    // The same options are valid here exactly when HedgingPolicy::new takes
    // them: a window of 0 is refused with a fixed delay too.
    let window = HedgingOptions { quantile_window: 0, ..Default::default() };
    let e = Client::hedged(&quick_policy(), &window).expect_err("quantile_window 0 is refused");
    assert!(e.message().contains("quantile_window must be in [1, 100000], got 0"), "{}", e.message());
}

#[test]
fn connection_refused_is_a_transport_error_after_the_retries() {
    // a port nothing listens on: bind, read the port, close
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let client = Client::new(&quick_policy()).unwrap();
    let e = client.get(&format!("http://127.0.0.1:{port}/")).unwrap_err();
    assert_eq!(e.code(), Code::Transport);
    assert_eq!(e.attempts(), 3);
    assert_eq!(e.last_error().unwrap().status(), 0);
    let e = client.get("not a url").unwrap_err();
    assert!(matches!(e.code(), Code::InvalidArgument | Code::Transport), "{:?}", e.code());
    let e = client.get("http://a\0b").unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
}
