//! The cluster run in its short form (`benches/cluster.py --short`, 30 s of load): three odqs
//! instances behind HAProxy over a PostgreSQL primary and a streaming replica, each in a network
//! namespace the script makes, the query mix on both datasets while an instance is killed and
//! started again, the replica stopped and started, and the primary's connections cut. Every
//! answer is compared with the expected one; the script fails on a wrong answer or an instance
//! that never serves again. Needs root, `ip`, HAProxy and PostgreSQL's binaries (`tests/tier2.sh`
//! installs HAProxy); a test of tier 2.

use std::path::PathBuf;
use std::process::Command;

tier2! {
    #[test]
    fn a_cluster_under_faults_gives_no_wrong_answer() {
        cluster_under_faults()
    }
}

fn cluster_under_faults() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let report = dir.path().join("cluster-short.md");
    let output = Command::new("python3")
        .arg(root.join("benches/cluster.py"))
        .args(["--bin", env!("CARGO_BIN_EXE_odqs"), "--short", "--report"])
        .arg(&report)
        .output()
        .expect("python3 runs benches/cluster.py");
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success(),
        "benches/cluster.py --short failed ({}); it needs root, `ip`, haproxy and PostgreSQL's binaries (bash tests/tier2.sh installs them):\n{said}",
        output.status
    );
    let text = std::fs::read_to_string(&report).expect("the report is written");
    let whole = text
        .lines()
        .find(|line| line.starts_with("| **whole run** |"))
        .unwrap_or_else(|| panic!("no whole-run row in the report:\n{text}"));
    // | **whole run** | from–to | answers | req/s | p50 | p99 | errors by kind | wrong | reads |
    let cells: Vec<&str> = whole.split('|').map(str::trim).collect();
    let answers: u64 = cells[3].parse().unwrap();
    assert!(answers > 100, "only {answers} answers in 30 s:\n{text}");
    assert_eq!(cells[8], "0", "wrong answers:\n{text}");
}
