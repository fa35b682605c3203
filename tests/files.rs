//! read_file, list_dir and load_skill through the real binary.

mod common;

use common::{Fixture, text};

#[test]
fn read_file_shows_numbered_lines_and_reports_the_file() {
    let f = Fixture::new();
    f.write("src/lib.rs", "fn a() {}\nfn b() {}\n");
    let env = f.ok("read_file", r#"{"file_path": "src/lib.rs"}"#);
    assert_eq!(text(&env), "     1\tfn a() {}\n     2\tfn b() {}\n");
    assert_eq!(env["data"]["encoding"], "utf-8");
    assert_eq!(env["data"]["total_lines"], 2);
    assert_eq!(env["data"]["line_endings"], "lf");
    assert_eq!(env["data"]["next_offset"], serde_json::Value::Null);
}

#[test]
fn read_file_pages_with_offset_and_limit_and_says_where_to_continue() {
    let f = Fixture::new();
    let body: String = (1..=50).map(|i| format!("line {i}\n")).collect();
    f.write("long.txt", body);
    let env = f.ok(
        "read_file",
        r#"{"file_path": "long.txt", "offset": 10, "limit": 5}"#,
    );
    let t = text(&env);
    assert!(t.starts_with("    10\tline 10\n"), "{t}");
    assert!(t.contains("    14\tline 14\n"));
    assert!(!t.contains("line 15\n"));
    assert!(t.contains("continue with offset=15"), "{t}");
    assert_eq!(env["data"]["total_lines"], 50);
    assert_eq!(env["data"]["next_offset"], 15);
}

#[test]
fn read_file_offset_past_the_end_is_invalid_input_naming_the_length() {
    let f = Fixture::new();
    f.write("short.txt", "a\nb\n");
    let env = f.err(
        "read_file",
        r#"{"file_path": "short.txt", "offset": 9}"#,
        "invalid_input",
    );
    assert!(text(&env).contains("has 2 lines"), "{}", text(&env));
}

#[test]
fn read_file_cuts_very_long_lines_with_a_marker() {
    let f = Fixture::new();
    f.write("min.js", format!("{}\nshort\n", "x".repeat(5000)));
    let env = f.ok("read_file", r#"{"file_path": "min.js"}"#);
    assert!(
        text(&env).contains("… [line cut: 3000 more chars]"),
        "{}",
        &text(&env)[..100]
    );
    assert_eq!(env["data"]["lines_cut"], 1);
}

#[test]
fn read_file_stops_before_the_output_cap_and_continues_by_offset() {
    let f = Fixture::new().with_profile("[output]\nmax_chars = 1000\n");
    let body: String = (1..=500)
        .map(|i| format!("a fairly long line number {i}\n"))
        .collect();
    f.write("big.txt", body);
    let env = f.ok("read_file", r#"{"file_path": "big.txt"}"#);
    let t = text(&env);
    assert!(t.chars().count() <= 1000);
    assert!(
        !t.contains("chars truncated"),
        "paged, not cut in the middle: {t}"
    );
    let next = env["data"]["next_offset"].as_u64().unwrap();
    assert!(t.contains(&format!("continue with offset={next}")));
    let env2 = f.ok(
        "read_file",
        &format!(r#"{{"file_path": "big.txt", "offset": {next}}}"#),
    );
    assert!(text(&env2).starts_with(&format!("{next:>6}\ta fairly long line number {next}\n")));
}

#[test]
fn read_file_decodes_bom_utf16_gb18030_and_crlf() {
    let f = Fixture::new();
    f.write("bom.txt", b"\xEF\xBB\xBFhello\r\nworld\r\n");
    let env = f.ok("read_file", r#"{"file_path": "bom.txt"}"#);
    assert_eq!(text(&env), "     1\thello\n     2\tworld\n");
    assert_eq!(env["data"]["encoding"], "utf-8-bom");
    assert_eq!(env["data"]["bom"], true);
    assert_eq!(env["data"]["line_endings"], "crlf");

    let mut utf16 = vec![0xFE, 0xFF];
    for u in "größe\n".encode_utf16() {
        utf16.extend_from_slice(&u.to_be_bytes());
    }
    f.write("be.txt", utf16);
    let env = f.ok("read_file", r#"{"file_path": "be.txt"}"#);
    assert_eq!(text(&env), "     1\tgröße\n");
    assert_eq!(env["data"]["encoding"], "utf-16be-bom");

    // "中文注释：编码测试" in GB18030.
    let gb = b"\xd6\xd0\xce\xc4\xd7\xa2\xca\xcd\xa3\xba\xb1\xe0\xc2\xeb\xb2\xe2\xca\xd4\n";
    f.write("gbk.txt", gb);
    let env = f.ok("read_file", r#"{"file_path": "gbk.txt"}"#);
    assert_eq!(text(&env), "     1\t中文注释：编码测试\n");
    assert_eq!(env["data"]["encoding"], "gb18030");
}

#[test]
fn read_file_refuses_binary_undecodable_directories_and_missing_files() {
    let f = Fixture::new();
    f.write("img.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR");
    let env = f.err("read_file", r#"{"file_path": "img.png"}"#, "binary_file");
    assert!(text(&env).contains("16 bytes"), "{}", text(&env));
    assert!(
        !text(&env).contains("IHDR"),
        "binary bytes are never dumped"
    );

    f.write("latin1.txt", b"caf\xe9 cr\xe8me\n");
    let env = f.err("read_file", r#"{"file_path": "latin1.txt"}"#, "undecodable");
    assert_eq!(env["data"]["offset"], 3);

    f.write("src/main.rs", "fn main() {}\n");
    let env = f.err("read_file", r#"{"file_path": "src"}"#, "is_directory");
    assert!(text(&env).contains("list_dir"));

    let env = f.err("read_file", r#"{"file_path": "src/mian.rs"}"#, "not_found");
    assert!(
        text(&env).contains("did you mean src/main.rs?"),
        "{}",
        text(&env)
    );
}

#[test]
fn read_file_of_an_empty_file_says_so() {
    let f = Fixture::new();
    f.write("empty.txt", "");
    let env = f.ok("read_file", r#"{"file_path": "empty.txt"}"#);
    assert!(text(&env).contains("is empty"));
    assert_eq!(env["data"]["total_lines"], 0);
}

#[test]
fn list_dir_shows_a_tree_respecting_gitignore_and_hidden() {
    let f = Fixture::new();
    f.write(".gitignore", "target/\n*.log\n");
    f.write("src/main.rs", "fn main() {}\n");
    f.write("src/util/mod.rs", "\n");
    f.write("target/debug/junk", "x");
    f.write("debug.log", "x");
    f.write(".env", "SECRET=1");
    f.write("README.md", "# hi\n");
    let env = f.ok("list_dir", "{}");
    let t = text(&env);
    assert!(t.contains("  README.md  (5 B)"), "{t}");
    assert!(
        t.contains("  src/\n    main.rs  (13 B)\n    util/ (1 entries, not listed)"),
        "{t}"
    );
    assert!(!t.contains("target"), "{t}");
    assert!(!t.contains("debug.log"), "{t}");
    assert!(!t.contains(".env"), "{t}");

    let env = f.ok(
        "list_dir",
        r#"{"include_hidden": true, "include_ignored": true, "depth": 1}"#,
    );
    let t = text(&env);
    assert!(
        t.contains(".env") && t.contains("debug.log") && t.contains("target/"),
        "{t}"
    );
    assert!(!t.contains(".git/"), "the .git store is never listed: {t}");
}

#[test]
fn list_dir_caps_entries_and_the_envelope_caps_text_with_a_marker() {
    let f = Fixture::new().with_profile("[output]\nmax_chars = 600\n");
    for i in 0..1100 {
        f.write(&format!("many/f{i:04}.txt"), "");
    }
    let env = f.ok("list_dir", r#"{"path": "many"}"#);
    let t = text(&env);
    assert!(t.chars().count() <= 600, "{}", t.chars().count());
    assert!(t.contains("chars truncated …"), "{t}");
    assert!(
        t.contains("stopped at 1000 entries"),
        "the tail is kept: {t}"
    );
    assert_eq!(env["data"]["complete"], false);
    assert!(env["data"]["truncated_chars"].as_u64().unwrap() > 0);
}

#[test]
fn list_dir_on_a_file_points_to_read_file() {
    let f = Fixture::new();
    f.write("a.txt", "a");
    let env = f.err("list_dir", r#"{"path": "a.txt"}"#, "invalid_input");
    assert!(text(&env).contains("read_file"));
}

fn write_skill(f: &Fixture, dir: &str, front: &str, body: &str) {
    f.write(
        &format!(".agents/skills/{dir}/SKILL.md"),
        format!("---\n{front}\n---\n{body}"),
    );
}

#[test]
fn load_skill_lists_skills_in_its_description_and_loads_the_body() {
    let f = Fixture::new();
    write_skill(
        &f,
        "pdf",
        "name: pdf-tools\ndescription: >\n  Fill and merge PDF forms.\n  Use for any PDF task.\nlicense: MIT",
        "# PDF\nRun scripts/fill.py.\n",
    );
    f.write(".agents/skills/pdf/scripts/fill.py", "print('fill')\n");
    write_skill(&f, "broken", "name: [unclosed", "body");

    let out = f
        .command(&["tools", "--json", "--workspace", f.ws.to_str().unwrap()])
        .output()
        .unwrap();
    let specs: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let load = specs
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "load_skill")
        .unwrap();
    let description = load["description"].as_str().unwrap();
    assert!(
        description.contains("- pdf-tools: Fill and merge PDF forms. Use for any PDF task."),
        "{description}"
    );

    let env = f.ok("load_skill", r#"{"name": "pdf-tools"}"#);
    let t = text(&env);
    assert!(t.starts_with("# Skill: pdf-tools\n"), "{t}");
    assert!(t.contains("Folder: .agents/skills/pdf"), "{t}");
    assert!(t.contains("Files: scripts/fill.py"), "{t}");
    assert!(t.ends_with("# PDF\nRun scripts/fill.py.\n"), "{t}");

    // The folder is readable afterwards.
    f.ok(
        "read_file",
        r#"{"file_path": ".agents/skills/pdf/scripts/fill.py"}"#,
    );

    let env = f.err("load_skill", r#"{"name": "pdf"}"#, "not_found");
    assert!(
        text(&env).contains("did you mean `pdf-tools`?"),
        "{}",
        text(&env)
    );
}

#[test]
fn skills_outside_the_workspace_are_readable_but_nothing_else_there_is() {
    let f = Fixture::new();
    let skills = f.root.join("shared-skills");
    std::fs::create_dir_all(skills.join("deploy")).unwrap();
    std::fs::write(
        skills.join("deploy/SKILL.md"),
        "---\nname: deploy\ndescription: Ship it.\n---\nSee checklist.md\n",
    )
    .unwrap();
    std::fs::write(skills.join("deploy/checklist.md"), "1. test\n").unwrap();
    std::fs::write(f.root.join("not-a-skill.txt"), "private\n").unwrap();
    let profile = format!("[skills]\ndirs = [{}]\n", common::json_path(&skills));
    let f = f.with_profile(&profile);
    let env = f.ok("load_skill", r#"{"name": "deploy"}"#);
    assert!(text(&env).contains("Files: checklist.md"));
    let checklist = skills.join("deploy/checklist.md");
    f.ok(
        "read_file",
        &format!(r#"{{"file_path": {}}}"#, common::json_path(&checklist)),
    );
    let private = f.root.join("not-a-skill.txt");
    f.err(
        "read_file",
        &format!(r#"{{"file_path": {}}}"#, common::json_path(&private)),
        "path_denied",
    );
}

#[test]
fn an_oversized_skill_is_listed_but_loading_it_is_too_large() {
    let f = Fixture::new();
    let body = "filler line for a very long skill\n".repeat(40_000);
    write_skill(
        &f,
        "huge",
        "name: huge\ndescription: Too big to load whole.",
        &body,
    );
    let env = f.err("load_skill", r#"{"name": "huge"}"#, "too_large");
    assert!(text(&env).contains("read_file"), "{}", text(&env));
}
