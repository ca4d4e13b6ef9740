//! A Python virtual environment for the tests that drive third-party Python tools (an OpenAPI
//! validator, schemathesis, a client generator): made once under `target/py-venv` with the
//! versions pinned in `tests/api/helpers/py/requirements.txt`, pip's downloads cached in
//! `target/py-cache`, and reused as long as that file is unchanged. Needs `python3` with its `venv`
//! module (Debian: `python3-venv`, which `tests/tier2.sh` installs when it is missing).

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Mutex;

/// The pinned packages; the venv records the text it was made from.
const REQUIREMENTS: &str = include_str!("requirements.txt");

/// A ready virtual environment.
pub struct Venv {
    pub dir: PathBuf,
}

impl Venv {
    /// A program the venv installed (`python`, `schemathesis`, …).
    pub fn bin(&self, name: &str) -> PathBuf {
        self.dir.join("bin").join(name)
    }

    /// A command running `name` from the venv, in the package's root directory, with the venv
    /// first on `PATH` (tools that call each other find the pinned ones).
    pub fn command(&self, name: &str) -> Command {
        let mut command = Command::new(self.bin(name));
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![self.dir.join("bin")];
        paths.extend(std::env::split_paths(&path));
        command
            .current_dir(package_dir())
            .env("PATH", std::env::join_paths(paths).unwrap())
            .env("PYTHONDONTWRITEBYTECODE", "1");
        command
    }
}

/// The package's root (where `Cargo.toml` is).
pub fn package_dir() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Cargo's target directory.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .map(|p| {
            if p.is_absolute() {
                p
            } else {
                package_dir().join(p)
            }
        })
        .unwrap_or_else(|| package_dir().join("target"))
}

/// The venv, made or brought up to date first. Tests in one process wait on a mutex, test
/// processes on a lock file, so the venv is built once.
pub fn venv() -> Venv {
    static BUILDING: Mutex<()> = Mutex::new(());
    let _in_process = BUILDING.lock().unwrap_or_else(|e| e.into_inner());
    let target = target_dir();
    std::fs::create_dir_all(&target).unwrap();
    let lock = std::fs::File::create(target.join("py-venv.lock")).unwrap();
    lock.lock().unwrap();
    let venv = Venv {
        dir: target.join("py-venv"),
    };
    let stamp = venv.dir.join("odqs-requirements.txt");
    let current = std::fs::read_to_string(&stamp).is_ok_and(|s| s == REQUIREMENTS);
    if current && venv.bin("python").exists() {
        return venv;
    }
    let made = Command::new("python3")
        .args(["-m", "venv", "--clear"])
        .arg(&venv.dir)
        .output()
        .unwrap_or_else(|e| panic!("python3 is required for this test and cannot run: {e}"));
    check(
        "python3 -m venv (Debian: apt-get install python3-venv)",
        &made,
    );
    let installed = venv
        .command("pip")
        .args([
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--quiet",
            "--requirement",
        ])
        .arg(package_dir().join("tests/api/helpers/py/requirements.txt"))
        .env("PIP_CACHE_DIR", target.join("py-cache"))
        .output()
        .expect("run pip");
    check(
        "pip install -r tests/api/helpers/py/requirements.txt",
        &installed,
    );
    std::fs::write(&stamp, REQUIREMENTS).unwrap();
    venv
}

/// Panics with the command's output unless it succeeded.
pub fn check(what: &str, output: &Output) {
    assert!(
        output.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
}
