//! include/spinlab.h is generated from this crate by cbindgen and committed, so that C users
//! need no Rust tools to read it. This test generates it again and fails if the committed copy
//! differs; `SPINLAB_BLESS=1 cargo test -p spinlab-ffi --test header` writes the fresh one.

use std::path::{Path, PathBuf};

fn crate_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn committed_header() -> PathBuf {
    crate_dir().join("../../include/spinlab.h")
}

fn generate() -> String {
    let mut config = cbindgen::Config::from_file(crate_dir().join("cbindgen.toml")).expect("cbindgen.toml parses");
    let trailer = crate_dir().join("header-trailer.h");
    config.trailer = Some(std::fs::read_to_string(&trailer).unwrap_or_else(|e| panic!("{}: {e}", trailer.display())));
    let bindings = cbindgen::Builder::new()
        .with_crate(crate_dir())
        .with_config(config)
        .generate()
        .unwrap_or_else(|e| panic!("cbindgen failed: {e}"));
    let mut header = Vec::new();
    bindings.write(&mut header);
    String::from_utf8(header).expect("cbindgen writes UTF-8")
}

#[test]
fn the_committed_header_is_the_generated_one() {
    let fresh = generate();
    let path = committed_header();
    if std::env::var_os("SPINLAB_BLESS").is_some() {
        std::fs::write(&path, &fresh).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        return;
    }
    let committed = std::fs::read_to_string(&path).unwrap_or_default();
    if committed != fresh {
        let first_difference = committed
            .lines()
            .zip(fresh.lines())
            .enumerate()
            .find(|(_, (old, new))| old != new)
            .map(|(n, (old, new))| format!("line {}:\n  committed: {old}\n  generated: {new}", n + 1))
            .unwrap_or_else(|| "one is a prefix of the other".to_string());
        panic!(
            "{} is stale ({first_difference}).\nRegenerate it with `SPINLAB_BLESS=1 cargo test -p spinlab-ffi --test header` and commit it.",
            path.display()
        );
    }
}

#[test]
fn the_header_declares_every_exported_function() {
    // A function that cbindgen skipped (say, for a type it cannot translate) would be in the
    // library but not in the header.
    let header = generate();
    let sources = ["src/mutex.rs", "src/cond.rs", "src/barrier.rs", "src/rwlock.rs", "src/names.rs", "src/status.rs"];
    for source in sources {
        let text = std::fs::read_to_string(crate_dir().join(source)).unwrap();
        let mut exported = text.split("#[no_mangle]").skip(1).peekable();
        assert!(exported.peek().is_some(), "{source} exports nothing?");
        for item in exported {
            let name = item.split("fn ").nth(1).and_then(|rest| rest.split('(').next()).unwrap();
            let declared = [" ", "*"].iter().any(|before| header.contains(&format!("{before}{name}(")));
            assert!(declared, "{name} (from {source}) is not declared in the header");
        }
    }
}
