//! Lists the control library's files (`library/` at the repository root) as `include_str!`s, so
//! that a template added there is compiled in without a list kept by hand.

use std::fmt::Write as _;
use std::path::Path;

fn main() -> std::io::Result<()> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../library");
    println!("cargo::rerun-if-changed={}", root.display());
    let mut files = Vec::new();
    for kind in ["controls", "tasks", "policies"] {
        let dir = root.join(kind);
        println!("cargo::rerun-if-changed={}", dir.display());
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
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
