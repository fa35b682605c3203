//! Policy decisions per second, in-process, on a 200-rule policy (bench/boundary.sh).

use std::time::Instant;

use whalebox::policy::{Policy, words};

fn main() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("version = 1\ndefault = \"ask\"\nallow_read_only = true\n");
    for i in 0..200 {
        let decision = ["allow", "ask", "deny"][i % 3];
        text.push_str(&format!(
            "\n[[rule]]\npattern = [\"tool{i}\", [\"build\", \"test\", \"run\"]]\ndecision = \"{decision}\"\njustification = \"rule {i}\"\nmatch = [\"tool{i} test\"]\n"
        ));
    }
    let path = dir.path().join("p.toml");
    std::fs::write(&path, text).unwrap();
    let policy = Policy::load(&path).unwrap();
    let commands: Vec<Vec<String>> = [
        "tool7 build --release",
        "tool199 run x",
        "git status",
        "env nice tool50 test",
        "ls -la src",
        "unknown-program --flag",
        "timeout 5 tool3 run",
        "cat README.md",
    ]
    .iter()
    .map(|c| words(c))
    .collect();
    let n = 400_000;
    let start = Instant::now();
    let mut denied = 0usize;
    for i in 0..n {
        let c = &commands[i % commands.len()];
        if policy.evaluate(&c[0], c).decision == whalebox::policy::Decision::Deny {
            denied += 1;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "policy: {} decisions on a 200-rule policy in {secs:.3} s = {:.0} decisions/s (target > 100000); {denied} denied",
        n,
        n as f64 / secs
    );
}
