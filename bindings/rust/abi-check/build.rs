//! Generates the C side of the ABI check from mulligan-sys's bindings.rs:
//! for every struct with named fields, sizeof, _Alignof and offsetof of each
//! field; for every integer constant, its value in C. See src/lib.rs.
use std::fmt::Write as _;
use std::path::PathBuf;

fn main() {
    let manifest = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap());
    let bindings = manifest.join("../mulligan-sys/src/bindings.rs");
    println!("cargo:rerun-if-changed={}", bindings.display());
    let text = std::fs::read_to_string(&bindings).expect("read mulligan-sys/src/bindings.rs");
    let include = std::env::var("DEP_MULLIGAN_INCLUDE").expect("mulligan-sys passes DEP_MULLIGAN_INCLUDE");
    println!("cargo:rustc-link-arg=-Wl,-rpath,{}", std::env::var("DEP_MULLIGAN_LIBDIR").unwrap());

    // (label, C expression, Rust expression)
    let mut sizes: Vec<(String, String, String)> = Vec::new();
    let mut consts: Vec<(String, String, String)> = Vec::new();
    let mut current: Option<String> = None;
    let mut pending: Vec<(String, String, String)> = Vec::new();
    let mut opaque = false;
    for line in text.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("pub struct ") {
            if let Some(name) = rest.strip_suffix(" {") {
                current = Some(name.to_string());
                pending.clear();
                opaque = false;
                pending.push((format!("sizeof({name})"), format!("sizeof({name})"),
                            format!("::core::mem::size_of::<mulligan_sys::{name}>()")));
                pending.push((format!("alignof({name})"), format!("_Alignof({name})"),
                            format!("::core::mem::align_of::<mulligan_sys::{name}>()")));
            }
            continue;
        }
        if t == "}" {
            if current.take().is_some() && !opaque {
                sizes.append(&mut pending);
            }
            continue;
        }
        if current.is_some() && t.starts_with("_unused") {
            opaque = true;
            continue;
        }
        if let (Some(s), Some(rest)) = (current.as_ref(), t.strip_prefix("pub ")) {
            if let Some((field, _)) = rest.split_once(':') {
                opaque |= field.starts_with('_');
                pending.push((format!("offsetof({s}, {field})"), format!("offsetof({s}, {field})"),
                            format!("::core::mem::offset_of!(mulligan_sys::{s}, {field})")));
            }
            continue;
        }
        if let Some(rest) = t.strip_prefix("pub const ") {
            let (name, rest) = rest.split_once(':').unwrap();
            let (ty, _) = rest.split_once('=').unwrap();
            let ty = ty.trim();
            if ty.starts_with('f') || ty.starts_with("&") {
                continue; // floats compared by the crate's own tests; strings skipped
            }
            consts.push((name.to_string(), format!("(long long)({name})"),
                         format!("mulligan_sys::{name} as i64")));
        }
    }
    assert!(sizes.len() > 20 && consts.len() > 20, "bindings.rs parsed to almost nothing");

    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    let mut c = String::from("#define MULLIGAN_DISABLE_DEPRECATION_WARNINGS 1\n#include <stddef.h>\n#include <mulligan.h>\n");
    writeln!(c, "const size_t mulligan_abi_check_sizes[] = {{").unwrap();
    for (_, e, _) in &sizes { writeln!(c, "  {e},").unwrap(); }
    writeln!(c, "}};\nconst long long mulligan_abi_check_consts[] = {{").unwrap();
    for (_, e, _) in &consts { writeln!(c, "  {e},").unwrap(); }
    writeln!(c, "}};").unwrap();
    std::fs::write(out.join("layout.c"), c).unwrap();
    cc::Build::new().file(out.join("layout.c")).include(&include).std("c11").compile("mulligan_abi_check");

    let mut r = String::new();
    writeln!(r, "extern \"C\" {{ static mulligan_abi_check_sizes: [usize; {}]; static mulligan_abi_check_consts: [i64; {}]; }}", sizes.len(), consts.len()).unwrap();
    writeln!(r, "/// (what, C, Rust) for sizes, alignments and offsets, in bytes.").unwrap();
    writeln!(r, "pub fn sizes() -> Vec<(&'static str, usize, usize)> {{ let c = unsafe {{ &*::core::ptr::addr_of!(mulligan_abi_check_sizes) }}; vec![").unwrap();
    for (i, (l, _, e)) in sizes.iter().enumerate() { writeln!(r, "  ({l:?}, c[{i}], {e}),").unwrap(); }
    writeln!(r, "] }}\n/// (name, C, Rust) for integer constants.").unwrap();
    writeln!(r, "pub fn consts() -> Vec<(&'static str, i64, i64)> {{ let c = unsafe {{ &*::core::ptr::addr_of!(mulligan_abi_check_consts) }}; vec![").unwrap();
    for (i, (l, _, e)) in consts.iter().enumerate() { writeln!(r, "  ({l:?}, c[{i}], {e}),").unwrap(); }
    writeln!(r, "] }}").unwrap();
    std::fs::write(out.join("layout.rs"), r).unwrap();
}
