//! Not a library to use: its build script reads mulligan-sys's committed
//! declarations (`mulligan-sys/src/bindings.rs`), writes a C file that
//! measures the same structs and constants with the installed headers, and
//! compiles it with the `cc` crate; `tests/abi.rs` compares the two sides and
//! checks every exported symbol (`capi/abi/mulligan.symbols`) is declared.
//! A header change that mulligan-sys misses fails `cargo test`.

/// What the C compiler saw in the installed headers, and what Rust sees, in
/// the same order: (what, C value, Rust value).
pub mod layout {
    include!(concat!(env!("OUT_DIR"), "/layout.rs"));
}
