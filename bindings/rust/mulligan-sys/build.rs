//! Finds libmulligan with pkg-config (mulligan.pc, installed by
//! scripts/install_capi.sh: `eval "$(scripts/install_capi.sh)"` sets
//! PKG_CONFIG_PATH) and links it.
//!
//! Running: cargo passes a build script's link arguments only to the crate's
//! own targets, so an rpath cannot be set for a dependent's binaries from
//! here. The library and include directories are passed on to dependents as
//! DEP_MULLIGAN_LIBDIR and DEP_MULLIGAN_INCLUDE: the `mulligan` crate's build
//! script turns the first into an rpath for its own tests and examples. A
//! program of yours runs with LD_LIBRARY_PATH set (the `eval` above sets it)
//! or with `-C link-arg=-Wl,-rpath,<libdir>` in its RUSTFLAGS.

fn main() {
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    let lib = pkg_config::Config::new()
        .atleast_version("0.3")
        .probe("mulligan")
        .unwrap_or_else(|e| {
            panic!(
                "mulligan-sys: libmulligan not found with pkg-config ({e}).\n\
                 Build and install it first: eval \"$(scripts/install_capi.sh)\" \
                 from the repository root (it sets PKG_CONFIG_PATH)."
            )
        });
    if let Some(dir) = lib.link_paths.first() {
        println!("cargo:libdir={}", dir.display());
    }
    if let Some(inc) = lib.include_paths.first() {
        println!("cargo:include={}", inc.display());
    }
}
