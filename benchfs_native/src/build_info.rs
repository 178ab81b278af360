//! Provenance of this build, filled in by `build.rs`.

/// Version, cargo profile, git revision and compiler of this build.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildInfo {
    /// The crate version (`Cargo.toml`).
    pub version: &'static str,
    /// Cargo profile: `debug` or `release`.
    pub profile: &'static str,
    /// `git rev-parse --short HEAD`, with `-dirty` for a modified work tree,
    /// or `unknown` when built outside git or before the first commit.
    pub git_revision: &'static str,
    /// `rustc --version` of the compiler that built this.
    pub rustc: &'static str,
    /// The engine's source directory at build time: where `benchfs bench rpc`
    /// finds (or builds) the UCX examples of an installed package.
    pub source_dir: &'static str,
}

/// The build this library was compiled as.
pub const BUILD_INFO: BuildInfo = BuildInfo {
    version: env!("CARGO_PKG_VERSION"),
    profile: env!("BENCHFS_PROFILE"),
    git_revision: env!("BENCHFS_GIT_REVISION"),
    rustc: env!("BENCHFS_RUSTC_VERSION"),
    source_dir: env!("CARGO_MANIFEST_DIR"),
};

/// The build this library was compiled as.
pub fn build_info() -> BuildInfo {
    BUILD_INFO
}
