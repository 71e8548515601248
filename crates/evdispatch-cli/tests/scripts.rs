//! Every maintained script in `scripts/` answers `--help` and `-h` with its
//! usage and exits 0, without doing anything else.

use std::path::Path;
use std::process::Command;

fn interpreter(script: &Path) -> Option<&'static str> {
    match script.extension().and_then(|e| e.to_str()) {
        Some("sh") => Some("bash"),
        Some("py") => Some("python3"),
        _ => None,
    }
}

#[test]
fn every_script_answers_help() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts");
    let mut scripts: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    scripts.sort();
    assert!(!scripts.is_empty(), "no scripts in {}", dir.display());
    for script in scripts {
        let name = script.file_name().unwrap().to_string_lossy().into_owned();
        let interp = interpreter(&script)
            .unwrap_or_else(|| panic!("{name}: scripts/ holds .sh and .py files only"));
        let mut usages = Vec::new();
        for flag in ["--help", "-h"] {
            let out = match Command::new(interp).arg(&script).arg(flag).output() {
                Ok(out) => out,
                Err(e) => {
                    eprintln!("skipping {name}: cannot run {interp}: {e}");
                    break;
                }
            };
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "{name} {flag}: {}\n{stdout}{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            assert!(
                stdout.trim().lines().count() >= 2,
                "{name} {flag}: no usage: {stdout:?}"
            );
            usages.push(stdout);
        }
        if usages.len() == 2 {
            assert_eq!(usages[0], usages[1], "{name}: -h and --help differ");
        }
    }
}

/// The import-circle checker CI runs finds the circles of its fixtures
/// (siblings, folders, a parent's own file and its child, a root holding a
/// type) and passes the shapes without one.
#[test]
fn the_import_circle_checker_finds_its_fixtures_circles() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/import-circles.py");
    let out = match Command::new("python3")
        .arg(&script)
        .arg("--self-test")
        .output()
    {
        Ok(out) => out,
        Err(e) => {
            eprintln!("skipped: cannot run python3: {e}");
            return;
        }
    };
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
