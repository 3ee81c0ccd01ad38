//! Raw declarations of the mulligan C ABI (`capi/include/mulligan.h` and its
//! parts), for the safe `mulligan` crate. Every item mirrors the C header of
//! the same name: read the header for units (durations are milliseconds as
//! `f64`), ownership, thread-safety and errors (every fallible function
//! returns a `mulligan_status` code; `mulligan_last_error()` gives the
//! thread-local text).
//!
//! `src/bindings.rs` was generated once with bindgen (`./generate.sh`) and is
//! committed; the `mulligan-abi-check` crate's tests compare it with the
//! installed headers (struct sizes, alignments, field offsets, constants)
//! and with `capi/abi/mulligan.symbols`, so a header change that this crate
//! misses fails `cargo test`. The library is found with pkg-config (see
//! build.rs).
#![no_std]
#![allow(non_camel_case_types, non_snake_case, non_upper_case_globals, missing_docs)]
#![allow(clippy::all)]

include!("bindings.rs");
