//! Whether a program of the suite is here, and installing its packages when it is not:
//! through apt-get, as root or through `sudo -n`, as scripts/test does.

use super::suite::Entry;
use std::path::PathBuf;

/// The first of `entry`'s executables not found in `PATH`.
pub(super) fn absent_binary(entry: &Entry) -> Option<&'static str> {
    entry.binaries.iter().copied().find(|b| find_in_path(b).is_none())
}

/// Where `PATH` has `name`, if anywhere.
pub fn find_in_path(name: &str) -> Option<PathBuf> {
    if name.contains('/') {
        return Some(PathBuf::from(name)).filter(|p| p.is_file());
    }
    std::env::split_paths(&std::env::var_os("PATH")?).map(|dir| dir.join(name)).find(|p| p.is_file())
}

/// Installs the packages of the entries whose executables are missing, through apt-get (as
/// root, or through `sudo -n`, as scripts/test does); why not, when it could not.
pub(super) fn install(entries: &[&Entry], quiet: bool) -> Option<String> {
    let mut packages: Vec<&str> = Vec::new();
    for entry in entries.iter().filter(|e| absent_binary(e).is_some()) {
        for p in entry.packages {
            if !packages.contains(p) {
                packages.push(p);
            }
        }
    }
    if packages.is_empty() {
        return None;
    }
    if find_in_path("apt-get").is_none() {
        return Some(format!("no apt-get to install {} with", packages.join(" ")));
    }
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc::geteuid() } == 0;
    if !root && find_in_path("sudo").is_none() {
        return Some(format!("installing {} needs root or sudo", packages.join(" ")));
    }
    if !quiet {
        eprintln!("installing {}", packages.join(" "));
    }
    let apt = |args: &[&str]| -> Result<(), String> {
        let mut cmd = if root { std::process::Command::new("apt-get") } else { std::process::Command::new("sudo") };
        if !root {
            cmd.args(["-n", "apt-get"]);
        }
        let status = cmd
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .status()
            .map_err(|e| format!("cannot run apt-get: {e}"))?;
        if status.success() {
            Ok(())
        } else {
            Err(format!("`apt-get {}` failed ({status})", args.join(" ")))
        }
    };
    let mut install_args = vec!["install", "-y", "-qq"];
    install_args.extend(packages.iter().copied());
    // The package lists may be stale or absent (a fresh container): update once and retry.
    apt(&install_args).or_else(|_| apt(&["update", "-qq"]).and_then(|()| apt(&install_args))).err()
}
