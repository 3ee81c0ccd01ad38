//! Puts an rpath to libmulligan (found by mulligan-sys with pkg-config) into
//! this crate's own tests and examples, so `cargo test` runs without
//! LD_LIBRARY_PATH. Programs that depend on this crate need LD_LIBRARY_PATH
//! (or an rpath in their RUSTFLAGS): cargo gives no way to pass one on.
fn main() {
    if let Ok(dir) = std::env::var("DEP_MULLIGAN_LIBDIR") {
        println!("cargo:rustc-link-arg=-Wl,-rpath,{dir}");
    }
}
