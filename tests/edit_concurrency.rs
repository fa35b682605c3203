//! No lost update and no torn file: many threads through one registry, two processes on
//! one file, and a writer killed with SIGKILL mid-write, again and again.

mod common;

use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use common::{Fixture, bin};
use serde_json::{Value, json};
use whalebox::core::CallContext;
use whalebox::profile::Profile;

fn slots(n: usize, filler: usize) -> String {
    let pad = "x".repeat(filler);
    (0..n).map(|i| format!("slot {i}: empty {pad}\n")).collect()
}

#[test]
fn many_threads_through_one_registry_lose_no_update() {
    let f = Fixture::new();
    let path = f.write("shared.txt", slots(64, 2000));
    let profile = Profile::parse("", None, &f.ws, None).unwrap();
    let (registry, _env) = whalebox::tools::build(profile).unwrap();
    let registry = Arc::new(registry);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(8)
        .enable_all()
        .build()
        .unwrap();
    let results: Vec<Value> = runtime.block_on(async {
        let mut handles = Vec::new();
        for i in 0..64 {
            let registry = Arc::clone(&registry);
            handles.push(tokio::spawn(async move {
                let args = json!({
                    "file_path": "shared.txt",
                    "search": format!("slot {i}: empty"),
                    "replace": format!("slot {i}: done by thread {i}"),
                });
                let env = registry
                    .dispatch("edit", args, CallContext::default())
                    .await;
                serde_json::to_value(env).unwrap()
            }));
        }
        let mut out = Vec::new();
        for h in handles {
            out.push(h.await.unwrap());
        }
        out
    });
    for (i, env) in results.iter().enumerate() {
        assert_eq!(env["code"], "ok", "thread {i}: {env:#}");
    }
    let final_text = std::fs::read_to_string(&path).unwrap();
    for i in 0..64 {
        assert!(
            final_text.contains(&format!("slot {i}: done by thread {i} ")),
            "slot {i} lost"
        );
    }
    assert!(!final_text.contains("empty"));
}

#[test]
fn two_processes_editing_one_file_lose_no_update() {
    let f = Fixture::new();
    let path = f.write("shared.txt", slots(40, 50_000));
    let ws = f.ws.clone();
    let home = f.home.clone();
    let run = move |parity: usize| {
        let mut conflicts = 0;
        for i in (parity..40).step_by(2) {
            for attempt in 0.. {
                assert!(
                    attempt < 50,
                    "slot {i}: still conflicting after 50 attempts"
                );
                let args = json!({
                    "file_path": "shared.txt",
                    "search": format!("slot {i}: empty"),
                    "replace": format!("slot {i}: done by process {parity}"),
                })
                .to_string();
                let out = Command::new(bin())
                    .args(["call", "edit", "--args", &args, "--workspace"])
                    .arg(&ws)
                    .env("HOME", &home)
                    .output()
                    .unwrap();
                let env: Value = serde_json::from_slice(&out.stdout).unwrap();
                match env["code"].as_str().unwrap() {
                    "ok" => break,
                    "write_conflict" => conflicts += 1,
                    other => panic!("slot {i}: unexpected {other}: {env:#}"),
                }
            }
        }
        conflicts
    };
    let a = std::thread::spawn({
        let run = run.clone();
        move || run(0)
    });
    let b = std::thread::spawn(move || run(1));
    let conflicts = a.join().unwrap() + b.join().unwrap();
    let final_text = std::fs::read_to_string(&path).unwrap();
    for i in 0..40 {
        let by = i % 2;
        assert!(
            final_text.contains(&format!("slot {i}: done by process {by} ")),
            "slot {i} lost (conflicts seen: {conflicts})"
        );
    }
    eprintln!("two processes: 40 edits, {conflicts} write_conflicts retried");
}

#[test]
fn a_writer_killed_mid_write_leaves_the_old_or_the_new_file() {
    let f = Fixture::new().with_profile("[edit]\nwrite_requires_read = false\n");
    let size = 4 * 1024 * 1024;
    let contents: Vec<String> = (0..2)
        .map(|v| {
            let line = format!("version {v} {}\n", "y".repeat(100));
            line.repeat(size / line.len())
        })
        .collect();
    let args: Vec<std::path::PathBuf> = contents
        .iter()
        .enumerate()
        .map(|(v, c)| {
            let p = f.root.join(format!("args{v}.json"));
            std::fs::write(
                &p,
                json!({"file_path": "big.txt", "content": c}).to_string(),
            )
            .unwrap();
            p
        })
        .collect();
    let path = f.write("big.txt", &contents[0]);
    let profile = f.profile.clone().unwrap();
    let write = |v: usize| {
        let mut cmd = Command::new(bin());
        cmd.args(["call", "write", "--args-file"])
            .arg(&args[v])
            .arg("--profile")
            .arg(&profile)
            .arg("--workspace")
            .arg(&f.ws)
            .env("HOME", &f.home)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        cmd
    };
    // Kill at random moments across a whole write, so some rounds die before the
    // rename and some after.
    let started = std::time::Instant::now();
    assert!(write(1).status().unwrap().success());
    let span_us = (started.elapsed().as_micros() as u64 * 3 / 2).max(1000);
    assert!(write(0).status().unwrap().success());
    let mut current = 0usize;
    let mut seed: u64 = 0x9E37_79B9_7F4A_7C15;
    let (mut old_seen, mut new_seen) = (0, 0);
    let mut round = 0;
    while round < 80 && (round < 30 || old_seen < 3 || new_seen < 3) {
        round += 1;
        let next = 1 - current;
        let mut child = write(next).spawn().unwrap();
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        std::thread::sleep(Duration::from_micros((seed >> 33) % span_us));
        let _ = child.kill();
        let _ = child.wait();
        let now = std::fs::read_to_string(&path).unwrap();
        if now == contents[next] {
            new_seen += 1;
            current = next;
        } else {
            assert!(
                now == contents[current],
                "round {round}: the file is neither the old nor the new content"
            );
            old_seen += 1;
        }
    }
    eprintln!("kill -9 rounds: {old_seen} left the old file, {new_seen} the new one");
    assert!(
        old_seen > 0 && new_seen > 0,
        "kills should land both before and after the rename"
    );
    // A later successful write cleans up what killed writers left behind.
    assert!(write(1 - current).status().unwrap().success());
    let leftovers: Vec<String> = std::fs::read_dir(&f.ws)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".whalebox-tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
