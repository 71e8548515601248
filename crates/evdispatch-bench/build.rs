//! Builds the C peers of `bench poller` (csrc/): a small harness of ours
//! against libevent's and libev's APIs, each compiled only when its
//! development files are found. A found peer sets a cfg (`evd_libevent`,
//! `evd_libev`); a missing one sets an environment variable with the reason,
//! which the bench prints beside the apt-get command that installs it.
//!
//! The script runs again when libraries are installed or removed (see
//! [`watch_installed_libraries`]), so the peers appear after
//! `bash .ci/install-peers` without `cargo clean`.
//!
//! `EVDISPATCH_NO_C_PEERS=1` at build time leaves both out (to check the
//! "unavailable" path).

use std::path::PathBuf;
use std::process::Command;

fn main() {
    println!("cargo::rustc-check-cfg=cfg(evd_libevent)");
    println!("cargo::rustc-check-cfg=cfg(evd_libev)");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=csrc/libevent_row.c");
    println!("cargo:rerun-if-changed=csrc/libev_row.c");
    println!("cargo:rerun-if-env-changed=EVDISPATCH_NO_C_PEERS");
    println!("cargo:rerun-if-env-changed=PKG_CONFIG_PATH");
    watch_installed_libraries();

    if std::env::var_os("EVDISPATCH_NO_C_PEERS").is_some() {
        let why = "left out at build time (EVDISPATCH_NO_C_PEERS was set)";
        println!("cargo:rustc-env=EVD_LIBEVENT_MISSING={why}");
        println!("cargo:rustc-env=EVD_LIBEV_MISSING={why}");
        return;
    }
    match libevent() {
        Ok(()) => println!("cargo:rustc-cfg=evd_libevent"),
        Err(why) => println!("cargo:rustc-env=EVD_LIBEVENT_MISSING={why}"),
    }
    match libev() {
        Ok(()) => println!("cargo:rustc-cfg=evd_libev"),
        Err(why) => println!("cargo:rustc-env=EVD_LIBEV_MISSING={why}"),
    }
}

/// libevent ships pkg-config files; `libevent_core` is all the harness uses.
fn libevent() -> Result<(), String> {
    let lib = pkg_config::Config::new()
        .cargo_metadata(false)
        .probe("libevent_core")
        .or_else(|_| {
            pkg_config::Config::new()
                .cargo_metadata(false)
                .probe("libevent")
        })
        .map_err(|e| {
            format!(
                "pkg-config found no libevent: {}",
                first_line(&e.to_string())
            )
        })?;
    cc::Build::new()
        .file("csrc/libevent_row.c")
        .includes(&lib.include_paths)
        .warnings(true)
        .try_compile("evd_libevent_row")
        .map_err(|e| format!("compiling the libevent harness failed: {e}"))?;
    // After the harness, so the static archive precedes the library it needs.
    link(&lib);
    Ok(())
}

/// libev: Debian's libev-dev has no pkg-config file, so fall back to the
/// compiler's own search paths for `ev.h` and `libev.so`.
fn libev() -> Result<(), String> {
    if let Ok(lib) = pkg_config::Config::new()
        .cargo_metadata(false)
        .probe("libev")
    {
        cc::Build::new()
            .file("csrc/libev_row.c")
            .includes(&lib.include_paths)
            .warnings(false)
            .try_compile("evd_libev_row")
            .map_err(|e| format!("compiling the libev harness failed: {e}"))?;
        link(&lib);
        return Ok(());
    }
    let build = cc::Build::new();
    let compiler = build
        .try_get_compiler()
        .map_err(|e| format!("no C compiler: {e}"))?;
    let out = Command::new(compiler.path())
        .arg("-print-file-name=libev.so")
        .output()
        .map_err(|e| format!("running the C compiler failed: {e}"))?;
    let found = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    if !found.is_absolute() || !found.exists() {
        return Err("libev.so is not in the compiler's library path".into());
    }
    cc::Build::new()
        .file("csrc/libev_row.c")
        // ev.h's own code trips -Wall; the harness is ten lines.
        .warnings(false)
        .try_compile("evd_libev_row")
        .map_err(|_| "ev.h not found (or the harness did not compile)".to_string())?;
    if let Some(dir) = found.parent() {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    println!("cargo:rustc-link-lib=ev");
    Ok(())
}

fn link(lib: &pkg_config::Library) {
    for dir in &lib.link_paths {
        println!("cargo:rustc-link-search=native={}", dir.display());
    }
    for name in &lib.libs {
        println!("cargo:rustc-link-lib={name}");
    }
}

/// Ask Cargo to run this script again when the files it probes may have
/// appeared or gone: the pkg-config directories that exist (a directory is
/// watched with everything in it; a path that does not exist would make
/// Cargo rerun the script on every build), and dpkg's package database,
/// which changes with every Debian package installed or removed (libev-dev
/// has no pkg-config file: its `ev.h` and `libev.so` land in the compiler's
/// default paths, too large to watch).
fn watch_installed_libraries() {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PKG_CONFIG_PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    if let Ok(out) = Command::new("pkg-config")
        .args(["--variable", "pc_path", "pkg-config"])
        .output()
    {
        dirs.extend(std::env::split_paths(
            String::from_utf8_lossy(&out.stdout).trim(),
        ));
    }
    for d in dirs.iter().filter(|d| d.is_dir()) {
        println!("cargo:rerun-if-changed={}", d.display());
    }
    let dpkg = std::path::Path::new("/var/lib/dpkg/status");
    if dpkg.exists() {
        println!("cargo:rerun-if-changed={}", dpkg.display());
    }
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}
