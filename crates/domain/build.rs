//! Lists the control library's files (`library/` at the repository root) as `include_str!`s, so
//! that a template added there is compiled in without a list kept by hand.

use std::fmt::Write as _;
use std::path::Path;

fn main() -> std::io::Result<()> {
    // Read when the script runs, not when it is compiled: a build script compiled in another
    // checkout sharing the target directory is reused as it is, and would read that checkout's
    // library (or none, once it is gone).
    let manifest = std::env::var("CARGO_MANIFEST_DIR").map_err(std::io::Error::other)?;
    let root = Path::new(&manifest).join("../../library");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    for kind in ["controls", "tasks", "policies"] {
        let dir = root.join(kind);
        println!("cargo::rerun-if-changed={}", dir.display());
        // A library that cannot be read fails the build: a service without its library would
        // adopt frameworks with nothing in them.
        for entry in std::fs::read_dir(&dir)? {
            let entry = entry?;
            let path = entry.path();
            if path.extension().is_some_and(|ext| ext == "json" || ext == "md") {
                files.push((format!("{kind}/{}", entry.file_name().to_string_lossy()), path));
            }
        }
    }
    files.sort();
    let mut code = String::from("/// `(path under library/, text)` of every template file.\n");
    code.push_str("pub(crate) const LIBRARY_FILES: &[(&str, &str)] = &[\n");
    for (name, path) in &files {
        let _ = writeln!(code, "    ({name:?}, include_str!({:?})),", path.display().to_string());
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").unwrap_or_default()).join("library_files.rs");
    std::fs::write(out, code)
}
