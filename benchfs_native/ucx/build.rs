//! Generates the raw `ucp_*` / `ucs_*` declarations from the system UCX
//! headers found through `ucx.pc`, and emits its link flags.

use std::env;
use std::path::PathBuf;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=src/sys/wrapper.h");

    let ucx = pkg_config::Config::new()
        .atleast_version("1.10")
        .probe("ucx")
        .expect("UCX development files not found through pkg-config (Debian: libucx-dev)");

    let mut builder = bindgen::Builder::default()
        .header("src/sys/wrapper.h")
        .allowlist_function("ucp_.*")
        .allowlist_function("ucs_.*")
        .allowlist_type("ucp_.*")
        .allowlist_type("ucs_.*")
        .allowlist_var("UCP_.*")
        .allowlist_var("UCS_.*")
        .default_enum_style(bindgen::EnumVariation::Consts)
        .prepend_enum_name(false)
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()));
    for dir in &ucx.include_paths {
        builder = builder.clang_arg(format!("-I{}", dir.display()));
    }
    let bindings = builder
        .generate()
        .expect("bindgen failed on the UCX headers");

    let out = PathBuf::from(env::var("OUT_DIR").expect("OUT_DIR is set by cargo"));
    bindings
        .write_to_file(out.join("ucx_bindings.rs"))
        .expect("writing the UCX bindings");
    println!("cargo:rustc-env=BENCHFS_UCX_VERSION={}", ucx.version);
}
