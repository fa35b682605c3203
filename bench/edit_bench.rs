//! Edit benchmark (run by bench/edit.sh): exact, relaxed and 100-step multi_edit calls
//! through the real registry on 1, 10 and 100 MB files and on mixed-ending files, each
//! against the floor of reading the same file and rewriting it atomically (temp file,
//! fsync, rename, fsync of the directory), measured alternately in the same run, with a
//! pause before each measurement (an agent's think time) so background work settles.
//! Prints medians and ratios, and the 100-step multi_edit against one exact edit of the
//! same file. Not a test.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use whalebox::core::{CallContext, Registry};
use whalebox::profile::Profile;

fn floor(path: &Path) -> Duration {
    let started = Instant::now();
    let bytes = std::fs::read(path).unwrap();
    let dir = path.parent().unwrap();
    let tmp = dir.join(".floor.tmp");
    let mut f = File::create(&tmp).unwrap();
    f.write_all(&bytes).unwrap();
    f.sync_all().unwrap();
    std::fs::rename(&tmp, path).unwrap();
    File::open(dir).unwrap().sync_all().unwrap();
    started.elapsed()
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// A code-like file of about `bytes` bytes with the markers the cases edit.
fn generate(path: &Path, bytes: usize, mixed: bool) -> usize {
    let mut out = String::with_capacity(bytes + 4096);
    let mut i = 0usize;
    let mut marker = false;
    let steps = 100;
    let step_every = (bytes / 90 / steps).max(1);
    while out.len() < bytes {
        let ending = if mixed && i.is_multiple_of(3) {
            "\r\n"
        } else {
            "\n"
        };
        if i == 10 {
            out.push_str(&format!(
                "fn relaxed() {{   {ending}    relaxed_target_A();{ending}}}{ending}"
            ));
        }
        if i.is_multiple_of(step_every) && i / step_every < steps {
            out.push_str(&format!("    let v = step_{}_A;{ending}", i / step_every));
        }
        if out.len() > bytes / 2 && !marker {
            out.push_str(&format!("    // MARKER_A{ending}"));
            marker = true;
        }
        out.push_str(&format!(
            "    let value_{i} = compute(input_{i}, {}) + offset; // line {i}{ending}",
            i % 97
        ));
        i += 1;
    }
    std::fs::write(path, &out).unwrap();
    i
}

struct Bench {
    registry: Registry,
    runtime: tokio::runtime::Runtime,
}

impl Bench {
    fn call(&self, tool: &str, args: Value) -> Duration {
        let started = Instant::now();
        let env = self
            .runtime
            .block_on(self.registry.dispatch(tool, args, CallContext::default()));
        let took = started.elapsed();
        assert!(env.ok, "{tool} failed: {}", env.text);
        took
    }
}

/// Run `op(round)` and the floor alternately; medians of both. The floor rewrites a
/// copy of the file, so it does not disturb what the session knows of the original.
fn measure(
    runs: usize,
    path: &Path,
    mut op: impl FnMut(usize) -> Duration,
) -> (Duration, Duration) {
    let copy = path.with_extension("floor");
    std::fs::copy(path, &copy).unwrap();
    let (mut ops, mut floors) = (Vec::new(), Vec::new());
    // Between calls an agent thinks for seconds; let background work (the ledger's
    // hash of what was written, the kernel's writeback) settle so each measurement
    // starts from the same quiet state.
    let settle = Duration::from_millis(
        std::env::var("BENCH_SETTLE_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(300),
    );
    for round in 0..runs {
        std::thread::sleep(settle);
        floors.push(floor(&copy));
        std::thread::sleep(settle);
        ops.push(op(round));
    }
    std::fs::remove_file(&copy).unwrap();
    (median(floors), median(ops))
}

fn flip(round: usize) -> (&'static str, &'static str) {
    if round.is_multiple_of(2) {
        ("A", "B")
    } else {
        ("B", "A")
    }
}

fn main() {
    if std::env::var("BENCH_TRACE").is_ok() {
        tracing_subscriber::fmt()
            .with_env_filter("whalebox=debug")
            .with_writer(std::io::stderr)
            .init();
    }
    let dir = PathBuf::from(
        std::env::var("BENCH_DIR").unwrap_or_else(|_| "/tmp/whalebox-bench/edit".into()),
    );
    std::fs::create_dir_all(&dir).unwrap();
    let profile_text = format!(
        "workspace = {:?}\ntools = [\"edit\"]\n[edit]\nmax_file_bytes = 4294967296\n",
        dir.display().to_string()
    );
    let profile = Profile::parse(&profile_text, None, &dir, None).unwrap();
    let (registry, _env) = whalebox::tools::build(profile).unwrap();
    let bench = Bench {
        registry,
        runtime: tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()
            .unwrap(),
    };
    let runs: usize = std::env::var("BENCH_RUNS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(7);

    println!(
        "{:34} {:>10} {:>10} {:>7}  target",
        "case", "floor", "whalebox", "ratio"
    );
    let report = |name: String, (floor, op): (Duration, Duration), target: &str| {
        println!(
            "{name:34} {:>8.1}ms {:>8.1}ms {:>6.2}x  {target}",
            floor.as_secs_f64() * 1e3,
            op.as_secs_f64() * 1e3,
            op.as_secs_f64() / floor.as_secs_f64()
        );
    };

    let mut mixed_per_line = Vec::new();
    let cases: &[(&str, usize, bool)] = &[
        ("1 MB", 1 << 20, false),
        ("10 MB", 10 << 20, false),
        ("100 MB", 100 << 20, false),
        ("mixed endings, 100k lines", 100_000 * 64, true),
        ("mixed endings, 1M lines", 1_000_000 * 64, true),
    ];
    // BENCH_MAX_BYTES skips the larger cases (for profiling a quick run).
    let max_bytes: usize = std::env::var("BENCH_MAX_BYTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(usize::MAX);
    let only = std::env::var("BENCH_ONLY").unwrap_or_default();
    for &(label, bytes, mixed) in cases
        .iter()
        .filter(|c| c.1 <= max_bytes && c.0.contains(&only))
    {
        let name = format!("f{}.rs", bytes);
        let path = dir.join(&name);
        let lines = generate(&path, bytes, mixed);
        let runs = if bytes >= 50 << 20 { runs.min(5) } else { runs };
        let exact = measure(runs, &path, |r| {
            let (from, to) = flip(r);
            bench.call(
                "edit",
                json!({"file_path": name, "search": format!("// MARKER_{from}"), "replace": format!("// MARKER_{to}")}),
            )
        });
        report(format!("{label}: exact edit"), exact, "<= 1.5x");
        if mixed || std::env::var("BENCH_EXACT_ONLY").is_ok() {
            mixed_per_line.push((lines, exact.1.as_secs_f64() / lines as f64));
            continue;
        }
        let relaxed = measure(runs, &path, |r| {
            let (from, to) = flip(r);
            bench.call(
                "edit",
                json!({"file_path": name,
                       "search": format!("fn relaxed() {{\nrelaxed_target_{from}();\n}}"),
                       "replace": format!("fn relaxed() {{\nrelaxed_target_{to}();\n}}")}),
            )
        });
        report(format!("{label}: relaxed edit"), relaxed, "<= 3x");
        let multi = measure(runs, &path, |r| {
            let (from, to) = flip(r);
            let edits: Vec<Value> = (0..100)
                .map(|i| json!({"search": format!("step_{i}_{from};"), "replace": format!("step_{i}_{to};")}))
                .collect();
            bench.call("multi_edit", json!({"file_path": name, "edits": edits}))
        });
        report(format!("{label}: 100-step multi_edit"), multi, "-");
        // The figure: a 100-step multi_edit against one edit of the same file.
        println!(
            "{:34} {:>10} {:>8.1}ms {:>6.2}x  <= 2x of one edit (goal 1.3x)",
            format!("{label}: multi_edit / one edit"),
            "",
            multi.1.as_secs_f64() * 1e3,
            multi.1.as_secs_f64() / exact.1.as_secs_f64()
        );
    }
    if let [(small_lines, small), (big_lines, big)] = mixed_per_line.as_slice() {
        let growth = big / small;
        let n_log_n = ((*big_lines as f64).ln()) / ((*small_lines as f64).ln());
        println!(
            "\nmixed-ending edit time per line: {:.1}ns at {small_lines} lines, {:.1}ns at {big_lines} lines \
             ({growth:.2}x per line; O(n log n) would allow {n_log_n:.2}x)",
            small * 1e9,
            big * 1e9
        );
    }
}
