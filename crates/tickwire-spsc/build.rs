//! Declares the `loom` cfg so `--cfg loom` builds (the model-checking run in `.ci/spsc.sh`) do
//! not trip the `unexpected_cfgs` lint, while the crate keeps `[lints] workspace = true`.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(loom)");
}
