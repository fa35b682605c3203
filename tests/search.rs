//! grep and search_files through the real binary.

mod common;

use common::{Fixture, text};

fn project() -> Fixture {
    let f = Fixture::new();
    f.write(".gitignore", "target/\n");
    f.write(
        "src/main.rs",
        "fn main() {\n    let answer = compute();\n    println!(\"{answer}\");\n}\n",
    );
    f.write("src/lib.rs", "pub fn compute() -> u32 {\n    42\n}\n");
    f.write("src/web/app.ts", "export const compute = () => 42;\n");
    f.write(
        "tests/it.rs",
        "#[test]\nfn computes() { assert_eq!(compute(), 42); }\n",
    );
    f.write("target/debug/out.rs", "fn compute() {}\n");
    f.write(".hidden/secret.rs", "fn compute() {}\n");
    f.write("blob.bin", b"compute\0\0\0binary");
    f
}

#[test]
fn grep_prints_path_line_text_sorted_and_skips_ignored_hidden_and_binary() {
    let f = project();
    let env = f.ok("grep", r#"{"pattern": "compute\\("}"#);
    assert_eq!(
        text(&env),
        "src/lib.rs:1:pub fn compute() -> u32 {\n\
         src/main.rs:2:    let answer = compute();\n\
         tests/it.rs:2:fn computes() { assert_eq!(compute(), 42); }\n"
    );
    assert_eq!(env["data"]["matches"], 3);
    assert_eq!(env["data"]["files_with_matches"], 3);
}

#[test]
fn grep_include_case_and_context() {
    let f = project();
    let env = f.ok(
        "grep",
        r#"{"pattern": "COMPUTE", "case_insensitive": true, "include": "*.ts"}"#,
    );
    assert_eq!(
        text(&env),
        "src/web/app.ts:1:export const compute = () => 42;\n"
    );

    let env = f.ok(
        "grep",
        r#"{"pattern": "42", "path": "src", "include": "*.rs", "context": 1}"#,
    );
    assert_eq!(
        text(&env),
        "src/lib.rs-1-pub fn compute() -> u32 {\nsrc/lib.rs:2:    42\nsrc/lib.rs-3-}\n"
    );
}

#[test]
fn grep_output_modes() {
    let f = project();
    let env = f.ok(
        "grep",
        r#"{"pattern": "compute", "output_mode": "files_with_matches"}"#,
    );
    assert_eq!(
        text(&env),
        "src/lib.rs\nsrc/main.rs\nsrc/web/app.ts\ntests/it.rs\n"
    );
    let env = f.ok("grep", r#"{"pattern": "4", "output_mode": "count"}"#);
    assert_eq!(
        text(&env),
        "src/lib.rs:1\nsrc/web/app.ts:1\ntests/it.rs:1\n"
    );
}

#[test]
fn grep_multiline_and_the_hint_when_a_pattern_needs_it() {
    let f = project();
    let env = f.ok(
        "grep",
        r#"{"pattern": "u32 \\{\\n\\s+42", "multiline": true}"#,
    );
    assert_eq!(
        text(&env),
        "src/lib.rs:1:pub fn compute() -> u32 {\nsrc/lib.rs:2:    42\n"
    );
    let env = f.err("grep", r#"{"pattern": "u32 \\{\\n"}"#, "invalid_input");
    assert!(text(&env).contains("multiline: true"), "{}", text(&env));
}

#[test]
fn grep_invalid_regex_shows_the_regex_error() {
    let f = project();
    let env = f.err("grep", r#"{"pattern": "compute("}"#, "invalid_input");
    let t = text(&env);
    assert!(t.contains("invalid regex \"compute(\""), "{t}");
    assert!(t.contains("unclosed group"), "{t}");
    assert!(t.contains("fixed_strings"), "{t}");
    let env = f.ok("grep", r#"{"pattern": "compute(", "fixed_strings": true}"#);
    assert_eq!(env["data"]["matches"], 3);
}

#[test]
fn grep_caps_results_and_says_how_many_there_were() {
    let f = Fixture::new();
    let body: String = (0..300).map(|i| format!("match {i}\n")).collect();
    f.write("many.txt", body);
    let env = f.ok("grep", r#"{"pattern": "match", "max_results": 10}"#);
    let t = text(&env);
    assert_eq!(t.lines().filter(|l| l.starts_with("many.txt:")).count(), 10);
    assert!(t.contains("showed 10 of 300 matching lines"), "{t}");
    assert_eq!(env["data"]["truncated"], true);
}

#[test]
fn grep_with_no_matches_says_what_was_skipped() {
    let f = project();
    let env = f.ok("grep", r#"{"pattern": "no_such_symbol_xyz"}"#);
    assert!(text(&env).starts_with("No matches"), "{}", text(&env));
    assert!(text(&env).contains(".gitignore"));
}

#[test]
fn grep_on_a_single_file_and_outside_the_fences() {
    let f = project();
    let env = f.ok("grep", r#"{"pattern": "42", "path": "src/lib.rs"}"#);
    assert_eq!(text(&env), "src/lib.rs:2:    42\n");
    f.err(
        "grep",
        r#"{"pattern": "root", "path": "/etc"}"#,
        "path_denied",
    );
    f.err("grep", r#"{"pattern": "x", "path": "nope"}"#, "not_found");
}

#[test]
fn search_files_globs_paths_sorted_and_gitignore_aware() {
    let f = project();
    let env = f.ok("search_files", r#"{"pattern": "**/*.rs"}"#);
    assert_eq!(text(&env), "src/lib.rs\nsrc/main.rs\ntests/it.rs\n");
    let env = f.ok("search_files", r#"{"pattern": "*.ts"}"#);
    assert_eq!(
        text(&env),
        "src/web/app.ts\n",
        "a name glob matches at any depth"
    );
    let env = f.ok("search_files", r#"{"pattern": "src/*"}"#);
    assert_eq!(text(&env), "src/lib.rs\nsrc/main.rs\nsrc/web/\n");
    let env = f.ok(
        "search_files",
        r#"{"pattern": "*.{rs,ts}", "path": "src/web"}"#,
    );
    assert_eq!(text(&env), "src/web/app.ts\n");
}

#[test]
fn search_files_caps_and_explains_empty_results() {
    let f = project();
    let env = f.ok("search_files", r#"{"pattern": "**/*", "max_results": 2}"#);
    assert!(text(&env).contains("showed 2 of"), "{}", text(&env));
    let env = f.ok("search_files", r#"{"pattern": "*.java"}"#);
    assert!(text(&env).starts_with("No paths match"));
}

#[test]
fn search_files_with_include_gets_the_specific_hint() {
    let f = project();
    let env = f.err(
        "search_files",
        r#"{"pattern": "**/*", "include": "*.rs"}"#,
        "invalid_input",
    );
    let t = text(&env);
    assert!(t.contains("search_files has no `include`"), "{t}");
    assert!(t.contains("use grep with `include`"), "{t}");
}

#[test]
fn search_files_absolute_pattern_under_the_root_is_made_relative() {
    let f = project();
    let pattern = format!("{}/src/**/*.ts", f.ws.display());
    let env = f.ok(
        "search_files",
        &serde_json::json!({"pattern": pattern}).to_string(),
    );
    assert_eq!(text(&env), "src/web/app.ts\n");
    f.err(
        "search_files",
        r#"{"pattern": "/etc/*.conf"}"#,
        "invalid_input",
    );
    f.err(
        "search_files",
        r#"{"pattern": "src/[z-a]"}"#,
        "invalid_input",
    );
}
