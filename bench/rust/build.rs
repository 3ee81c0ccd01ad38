//! An rpath to libmulligan for the benchmark binary (see mulligan-sys/build.rs).
fn main() {
    let pc = std::process::Command::new("pkg-config").args(["--variable=libdir", "mulligan"]).output();
    if let Ok(out) = pc {
        let dir = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if !dir.is_empty() {
            println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
        }
    }
}
