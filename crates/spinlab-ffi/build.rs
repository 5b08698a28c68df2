//! Writes `spinlab.pc` next to the libraries it describes (target/<profile>/, where cargo puts
//! libspinlab.so and libspinlab.a), so that the build tree can be used as it is:
//! `PKG_CONFIG_PATH=target/release pkg-config --cflags --libs spinlab`. docs/c.md shows how to
//! render `spinlab.pc.in` for an installed copy instead.

use std::path::{Path, PathBuf};

/// What a Rust static library needs from the system on Linux with glibc (the list
/// `rustc --print native-static-libs` prints); `tests/c_api.rs` links a program with it.
const NATIVE_STATIC_LIBS: &str = "-lgcc_s -lutil -lrt -lpthread -lm -ldl -lc";

fn main() {
    println!("cargo:rerun-if-changed=spinlab.pc.in");
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    // OUT_DIR is <target>/[<triple>/]<profile>/build/spinlab-ffi-<hash>/out.
    let Some(profile_dir) = out_dir.ancestors().nth(3) else {
        panic!("unexpected OUT_DIR {}", out_dir.display());
    };
    let workspace = manifest_dir.join("../..");
    let workspace = workspace.canonicalize().unwrap_or(workspace);
    let template = std::fs::read_to_string(manifest_dir.join("spinlab.pc.in")).expect("spinlab.pc.in is readable");
    let pc = template
        .replace("@prefix@", &path_text(&workspace))
        .replace("@libdir@", &path_text(profile_dir))
        .replace("@includedir@", &path_text(&workspace.join("include")))
        .replace("@version@", env!("CARGO_PKG_VERSION"))
        .replace("@native_static_libs@", NATIVE_STATIC_LIBS);
    let target = profile_dir.join("spinlab.pc");
    std::fs::write(&target, pc).unwrap_or_else(|e| panic!("writing {}: {e}", target.display()));
}

/// A path as pkg-config reads it: spaces must be escaped.
fn path_text(path: &Path) -> String {
    path.display().to_string().replace(' ', "\\ ")
}
