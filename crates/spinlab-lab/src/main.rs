//! `spinlab`: see `spinlab --help`.

fn main() {
    std::process::exit(spinlab_lab::cli::main());
}
