//! The committed FFI declarations of mulligan-sys against the installed C
//! headers and the exported-symbol list: a header change that the Rust side
//! misses fails here.
use std::collections::BTreeSet;

#[test]
fn struct_sizes_alignments_and_offsets_match_the_headers() {
    let bad: Vec<_> = mulligan_abi_check::layout::sizes()
        .into_iter()
        .filter(|(_, c, r)| c != r)
        .collect();
    assert!(bad.is_empty(), "layout differs (what, C, Rust): {bad:?}");
}

#[test]
fn constants_match_the_headers() {
    let bad: Vec<_> = mulligan_abi_check::layout::consts()
        .into_iter()
        .filter(|(_, c, r)| c != r)
        .collect();
    assert!(bad.is_empty(), "constants differ (name, C, Rust): {bad:?}");
}

#[test]
fn every_exported_symbol_is_declared_and_nothing_else() {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../..");
    let symbols = std::fs::read_to_string(format!("{root}/capi/abi/mulligan.symbols")).unwrap();
    let exported: BTreeSet<&str> = symbols
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let bindings = include_str!("../../mulligan-sys/src/bindings.rs");
    let declared: BTreeSet<&str> = bindings
        .lines()
        .filter_map(|l| l.trim().strip_prefix("pub fn "))
        .map(|l| l.split('(').next().unwrap())
        .collect();
    let missing: Vec<_> = exported.difference(&declared).collect();
    let extra: Vec<_> = declared.difference(&exported).collect();
    assert!(missing.is_empty(), "exported but not declared in mulligan-sys: {missing:?}");
    assert!(extra.is_empty(), "declared in mulligan-sys but not exported: {extra:?}");
    assert!(exported.len() > 150);
}

#[test]
fn the_loaded_library_is_the_one_declared() {
    let n = unsafe { mulligan_sys::mulligan_version_number() };
    assert_eq!(n as i64, mulligan_sys::MULLIGAN_VERSION_NUMBER as i64);
}

/// The strongest check, when bindgen-cli is on PATH: regenerating the
/// declarations from the installed headers gives the committed file byte for
/// byte. (The layout test above cannot see a trailing field hidden in
/// padding; this one can.) Skipped, with a note, without bindgen.
#[test]
fn regenerating_gives_the_committed_bindings() {
    if std::process::Command::new("bindgen").arg("--version").output().is_err() {
        eprintln!("bindgen not on PATH: regeneration check skipped (cargo install bindgen-cli)");
        return;
    }
    let sys = concat!(env!("CARGO_MANIFEST_DIR"), "/../mulligan-sys");
    let out = std::env::temp_dir().join(format!("mulligan-bindings-{}.rs", std::process::id()));
    let status = std::process::Command::new("bash")
        .arg(format!("{sys}/generate.sh"))
        .env("MULLIGAN_BINDINGS_OUT", &out)
        .status()
        .unwrap();
    assert!(status.success(), "generate.sh failed");
    let fresh = std::fs::read_to_string(&out).unwrap();
    let _ = std::fs::remove_file(&out);
    let committed = include_str!("../../mulligan-sys/src/bindings.rs");
    assert!(fresh == committed, "mulligan-sys/src/bindings.rs is stale: run mulligan-sys/generate.sh");
}
