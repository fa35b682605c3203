//! edit, multi_edit and write through the real binary: a table of fixtures checked byte
//! for byte, every level, every error (with the file untouched), every encoding and
//! line-ending style.

mod common;

use common::{Fixture, text};
use serde_json::{Value, json};

/// GB18030 bytes of `s`.
fn gb(s: &str) -> Vec<u8> {
    encoding_rs::GB18030.encode(s).0.into_owned()
}

fn utf16(s: &str, little: bool) -> Vec<u8> {
    let mut out = if little {
        vec![0xFF, 0xFE]
    } else {
        vec![0xFE, 0xFF]
    };
    for u in s.encode_utf16() {
        out.extend_from_slice(&if little {
            u.to_le_bytes()
        } else {
            u.to_be_bytes()
        });
    }
    out
}

struct Case {
    name: &'static str,
    before: Vec<u8>,
    search: &'static str,
    replace: &'static str,
    after: Vec<u8>,
    level: &'static str,
    repairs: &'static [&'static str],
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "exact, LF",
            before: b"a\nold\nb\n".to_vec(),
            search: "old",
            replace: "new",
            after: b"a\nnew\nb\n".to_vec(),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "exact, CRLF keeps CRLF on every line, including new ones",
            before: b"a\r\nold\r\nb\r\n".to_vec(),
            search: "old\n",
            replace: "new\nnewer\n",
            after: b"a\r\nnew\r\nnewer\r\nb\r\n".to_vec(),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "exact, search written with CRLF on a CRLF file",
            before: b"x\r\ny\r\nz\r\n".to_vec(),
            search: "x\r\ny",
            replace: "X\r\nY",
            after: b"X\r\nY\r\nz\r\n".to_vec(),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "exact, old Mac CR endings",
            before: b"one\rtwo\rthree\r".to_vec(),
            search: "two",
            replace: "2",
            after: b"one\r2\rthree\r".to_vec(),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "mixed endings: untouched lines keep theirs",
            before: b"l1\r\nl2\nl3\r\nl4\nl5\r\n".to_vec(),
            search: "l3",
            replace: "L3",
            after: b"l1\r\nl2\nL3\r\nl4\nl5\r\n".to_vec(),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "mixed endings: inserted lines take the ending of the line they replace",
            before: b"l1\r\nl2\nl3\r\nl4\n".to_vec(),
            search: "l2\n",
            replace: "l2\nadded\n",
            after: b"l1\r\nl2\nadded\nl3\r\nl4\n".to_vec(),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "missing final newline stays missing",
            before: b"first\r\nlast".to_vec(),
            search: "first",
            replace: "FIRST",
            after: b"FIRST\r\nlast".to_vec(),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "UTF-8 BOM is kept",
            before: b"\xEF\xBB\xBFkey = 1\r\n".to_vec(),
            search: "key = 1",
            replace: "key = 2",
            after: b"\xEF\xBB\xBFkey = 2\r\n".to_vec(),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "UTF-16LE with BOM stays UTF-16LE",
            before: utf16("名前 = 1\r\nx\r\n", true),
            search: "名前 = 1",
            replace: "名前 = 2",
            after: utf16("名前 = 2\r\nx\r\n", true),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "UTF-16BE with BOM stays UTF-16BE",
            before: utf16("a\nb\n", false),
            search: "b",
            replace: "β",
            after: utf16("a\nβ\n", false),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "GB18030 stays GB18030",
            before: gb("// 注释\r\nlet 名 = 1;\r\n"),
            search: "let 名 = 1;",
            replace: "let 名 = 2; // 改",
            after: gb("// 注释\r\nlet 名 = 2; // 改\r\n"),
            level: "exact",
            repairs: &[],
        },
        Case {
            name: "trailing blanks in the file",
            before: b"fn a() {  \n    x();\t\n}\n".to_vec(),
            search: "fn a() {\n    x();\n}",
            replace: "fn a() {\n    y();\n}",
            after: b"fn a() {  \n    y();\n}\n".to_vec(),
            level: "whitespace_relaxed",
            repairs: &["whitespace_normalized"],
        },
        Case {
            name: "search without the block's indentation, realigned",
            before: b"impl A {\n    fn f() {\n        one();\n    }\n}\n".to_vec(),
            search: "fn f() {\n    one();\n}",
            replace: "fn f() {\n    one();\n    two();\n}",
            after: b"impl A {\n    fn f() {\n        one();\n        two();\n    }\n}\n".to_vec(),
            level: "whitespace_relaxed",
            repairs: &["whitespace_normalized", "indentation_realigned"],
        },
        Case {
            name: "literal escapes unwrapped",
            before: b"if x:\n\treturn \"y\"\n".to_vec(),
            search: "if x:\\n\\treturn \\\"y\\\"",
            replace: "if x:\\n\\treturn \\\"z\\\"",
            after: b"if x:\n\treturn \"z\"\n".to_vec(),
            level: "escape_unwrapped",
            repairs: &["json_escape_unwrapped"],
        },
        Case {
            name: "curly quotes, dash and NBSP folded; untouched line keeps them",
            before: "# “Title” — draft\nvalue\u{a0}= 'old'\n"
                .as_bytes()
                .to_vec(),
            search: "# \"Title\" - draft\nvalue = 'old'",
            replace: "# \"Title\" - draft\nvalue = 'new'",
            after: "# “Title” — draft\nvalue = 'new'\n".as_bytes().to_vec(),
            level: "unicode_normalized",
            repairs: &["unicode_normalized"],
        },
    ]
}

fn edit_args(file: &str, search: &str, replace: &str) -> String {
    json!({"file_path": file, "search": search, "replace": replace}).to_string()
}

#[test]
fn fixture_table_byte_for_byte() {
    let f = Fixture::new();
    for (i, case) in cases().into_iter().enumerate() {
        let file = format!("case{i}.txt");
        let path = f.write(&file, &case.before);
        let env = f.ok("edit", &edit_args(&file, case.search, case.replace));
        let after = std::fs::read(&path).unwrap();
        assert_eq!(
            after,
            case.after,
            "{}: got {:?}",
            case.name,
            String::from_utf8_lossy(&after)
        );
        assert_eq!(
            env["data"]["steps"][0]["level"], case.level,
            "{}",
            case.name
        );
        let kinds: Vec<&str> = env["repairs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["kind"].as_str().unwrap())
            .collect();
        assert_eq!(kinds, case.repairs, "{}", case.name);
        assert!(text(&env).contains("--- a/"), "{}: shows a diff", case.name);
    }
}

#[test]
fn the_result_shows_a_unified_diff_and_counts() {
    let f = Fixture::new();
    f.write("a.py", "def f():\n    return 1\n");
    let env = f.ok("edit", &edit_args("a.py", "return 1", "return 2"));
    assert_eq!(
        text(&env),
        "Edited a.py: 1 replacement (exact match) at line 2.\n\
         --- a/a.py\n+++ b/a.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n"
    );
    assert_eq!(env["data"]["lines_added"], 1);
    assert_eq!(env["data"]["encoding"], "utf-8");
}

#[test]
fn replace_all_and_not_unique() {
    let f = Fixture::new();
    let path = f.write("v.txt", "v = 1\nw\nv = 1\n");
    let env = f.err(
        "edit",
        &edit_args("v.txt", "v = 1", "v = 2"),
        "search_not_unique",
    );
    assert!(
        text(&env).contains("occurs 2 times in v.txt (lines 1, 3)"),
        "{}",
        text(&env)
    );
    assert!(text(&env).contains("replace_all"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "v = 1\nw\nv = 1\n");
    let env = f.ok(
        "edit",
        r#"{"file_path": "v.txt", "search": "v = 1", "replace": "v = 2", "replace_all": true}"#,
    );
    assert_eq!(env["data"]["replacements"], 2);
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "v = 2\nw\nv = 2\n");
}

#[test]
fn ambiguous_fuzzy_matches_are_never_applied() {
    let f = Fixture::new();
    let body = "    if x:\n        go()\n\n  if x:\n      go()\n";
    let path = f.write("amb.py", body);
    let env = f.err(
        "edit",
        &edit_args("amb.py", "if x:\ngo()", "if y:\ngo()"),
        "search_not_unique",
    );
    assert!(
        text(&env).contains("candidates at lines 1, 4"),
        "{}",
        text(&env)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), body);
}

#[test]
fn not_found_diagnoses_the_divergence_and_changes_nothing() {
    let f = Fixture::new();
    let body = "fn total(a: u32, b: u32) -> u32 {\n    let sum = a + b;\n    sum * 2\n}\n";
    let path = f.write("t.rs", body);
    let env = f.err(
        "edit",
        &edit_args(
            "t.rs",
            "fn total(a: u32, b: u32) -> u32 {\n    let sum = a - b;\n    sum * 2\n}",
            "x",
        ),
        "search_not_found",
    );
    let t = text(&env);
    assert!(t.contains("closest match starts at line 1; the first 1 lines agree; line 2 differs: file has `    let sum = a + b;`, you gave `    let sum = a - b;`"), "{t}");
    assert!(
        t.contains(r#"read_file {"file_path": "t.rs", "offset": 1"#),
        "{t}"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), body);

    let long: String = (0..45).map(|i| format!("missing line {i}\n")).collect();
    let env = f.err("edit", &edit_args("t.rs", &long, "x"), "search_not_found");
    assert!(
        text(&env).contains("split it into smaller edits, or use multi_edit"),
        "{}",
        text(&env)
    );
}

#[test]
fn bad_input_is_a_clear_error_and_the_file_is_untouched() {
    let f = Fixture::new().with_profile("[edit]\nmax_file_bytes = 100\n");
    let path = f.write("f.txt", "content\n");
    f.err("edit", &edit_args("f.txt", "", "x"), "invalid_input");
    f.err(
        "edit",
        &edit_args("f.txt", "content", "content"),
        "invalid_input",
    );
    f.err("edit", &edit_args("missing.txt", "a", "b"), "not_found");
    std::fs::create_dir(f.ws.join("dir")).unwrap();
    f.err("edit", &edit_args("dir", "a", "b"), "is_directory");
    f.write("bin.dat", b"abc\0def");
    f.err("edit", &edit_args("bin.dat", "abc", "x"), "binary_file");
    f.write("latin1.txt", b"caf\xe9\n");
    f.err("edit", &edit_args("latin1.txt", "caf", "x"), "undecodable");
    std::fs::write(f.outside.join("o.txt"), "outside\n").unwrap();
    f.err(
        "edit",
        &edit_args("../outside/o.txt", "outside", "x"),
        "path_denied",
    );
    std::os::unix::fs::symlink(&f.outside, f.ws.join("out")).unwrap();
    f.err(
        "edit",
        &edit_args("out/o.txt", "outside", "x"),
        "path_denied",
    );
    f.err(
        "write",
        &json!({"file_path": "out/new.txt", "content": "x"}).to_string(),
        "path_denied",
    );
    f.write("big.txt", "x".repeat(200));
    f.err("edit", &edit_args("big.txt", "x", "y"), "too_large");
    f.err(
        "write",
        &json!({"file_path": "huge.txt", "content": "y".repeat(101)}).to_string(),
        "too_large",
    );
    assert!(!f.ws.join("huge.txt").exists());
    assert!(!f.outside.join("new.txt").exists());
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "content\n");
    assert_eq!(
        std::fs::read_to_string(f.outside.join("o.txt")).unwrap(),
        "outside\n"
    );
}

#[test]
fn multi_edit_applies_in_order_or_not_at_all() {
    let f = Fixture::new();
    let path = f.write("m.txt", "alpha\r\nbeta\r\ngamma\r\n");
    let env = f.ok(
        "multi_edit",
        r#"{"file_path": "m.txt", "edits": [
            {"search": "alpha", "replace": "ALPHA"},
            {"search": "ALPHA\nbeta", "replace": "ALPHA\nBETA\nextra"},
            {"search": "  gamma  ", "replace": "GAMMA"}
        ]}"#,
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        b"ALPHA\r\nBETA\r\nextra\r\nGAMMA\r\n"
    );
    assert_eq!(env["data"]["replacements"], 3);
    assert!(text(&env).contains("3 edits"), "{}", text(&env));
    assert_eq!(env["repairs"][0]["field"], "/edits/2/search");

    let before = std::fs::read(&path).unwrap();
    let env = f.err(
        "multi_edit",
        r#"{"file_path": "m.txt", "edits": [
            {"search": "ALPHA", "replace": "one"},
            {"search": "no such text", "replace": "two"}
        ]}"#,
        "search_not_found",
    );
    assert!(
        text(&env).starts_with("edits[1] (step 2 of 2) failed, so no edit was applied"),
        "{}",
        text(&env)
    );
    assert_eq!(env["data"]["step"], 1);
    assert_eq!(std::fs::read(&path).unwrap(), before, "disk untouched");
}

#[test]
fn write_creates_files_with_parents_and_the_right_endings() {
    let f = Fixture::new();
    let w = |path: &str, content: &str| {
        f.ok(
            "write",
            &json!({"file_path": path, "content": content}).to_string(),
        )
    };
    let env = w("deep/new/dir/a.txt", "one\ntwo\n");
    assert!(
        text(&env).starts_with("Created deep/new/dir/a.txt (2 lines"),
        "{}",
        text(&env)
    );
    assert_eq!(
        std::fs::read(f.ws.join("deep/new/dir/a.txt")).unwrap(),
        b"one\ntwo\n"
    );
    w("run.bat", "@echo off\r\necho hi\n");
    assert_eq!(
        std::fs::read(f.ws.join("run.bat")).unwrap(),
        b"@echo off\r\necho hi\r\n"
    );
    w("RUN.CMD", "a\nb");
    assert_eq!(std::fs::read(f.ws.join("RUN.CMD")).unwrap(), b"a\r\nb");
    w("s.ps1", "Write-Host hi\r\n");
    assert_eq!(
        std::fs::read(f.ws.join("s.ps1")).unwrap(),
        b"Write-Host hi\n"
    );
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(f.ws.join("s.ps1")).unwrap().permissions(),
    );
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let umask = status
        .lines()
        .find_map(|l| l.strip_prefix("Umask:"))
        .map(|v| u32::from_str_radix(v.trim(), 8).unwrap())
        .unwrap();
    assert_eq!(mode & 0o777, 0o666 & !umask, "new files follow the umask");
}

#[test]
fn write_over_an_unread_file_is_stale_in_a_cli_session() {
    let f = Fixture::new();
    let path = f.write("keep.txt", "precious\n");
    let env = f.err(
        "write",
        &json!({"file_path": "keep.txt", "content": "gone"}).to_string(),
        "stale_file",
    );
    assert!(
        text(&env).contains("read it first with read_file"),
        "{}",
        text(&env)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "precious\n");
}

#[test]
fn write_overwrite_keeps_encoding_bom_and_endings_when_relaxed() {
    let f = Fixture::new().with_profile("[edit]\nwrite_requires_read = false\n");
    let path = f.write("gb.txt", gb("第一行\r\n第二行\r\n"));
    let env = f.ok(
        "write",
        &json!({"file_path": "gb.txt", "content": "第一行\n新的\n第二行\n"}).to_string(),
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        gb("第一行\r\n新的\r\n第二行\r\n")
    );
    assert_eq!(env["data"]["encoding"], "gb18030");
    let path = f.write("bom.txt", b"\xEF\xBB\xBFa\r\n");
    f.ok(
        "write",
        &json!({"file_path": "bom.txt", "content": "b\nc\n"}).to_string(),
    );
    assert_eq!(std::fs::read(&path).unwrap(), b"\xEF\xBB\xBFb\r\nc\r\n");
    let env = f.ok(
        "write",
        &json!({"file_path": "bom.txt", "content": "b\nc\n"}).to_string(),
    );
    assert!(text(&env).contains("nothing was written"));
}

/// Found by the multi_edit fuzz target: a GB18030 file edited so that its bytes are
/// valid UTF-8 would be read back as UTF-8, other text than was written (and the next
/// edit would mix the encodings): refused, and nothing written.
#[test]
fn a_gb18030_change_that_would_read_back_as_utf8_is_refused() {
    let f = Fixture::new().with_profile("[edit]\nwrite_requires_read = false\n");
    // 膧 is C4 80 in GB18030, also valid UTF-8 (Ā); 中 (D6 D0) is not valid UTF-8.
    let before = gb("中\n膧\n");
    let path = f.write("gb.txt", &before);
    let env = f.err("edit", &edit_args("gb.txt", "中\n", ""), "invalid_input");
    assert!(text(&env).contains("GB18030"), "{env}");
    assert_eq!(std::fs::read(&path).unwrap(), before);
    f.err(
        "write",
        &json!({"file_path": "gb.txt", "content": "膧\n"}).to_string(),
        "invalid_input",
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // U+E5E5 has no GB18030 bytes (it would be written as `&#58853;`).
    f.err(
        "edit",
        &edit_args("gb.txt", "膧", "\u{e5e5}膧"),
        "invalid_input",
    );
    assert_eq!(std::fs::read(&path).unwrap(), before);
    // A change that keeps the bytes invalid as UTF-8 is made.
    f.ok("edit", &edit_args("gb.txt", "膧", "膧膧"));
    assert_eq!(std::fs::read(&path).unwrap(), gb("中\n膧膧\n"));
}

#[test]
fn edit_keeps_the_file_mode() {
    let f = Fixture::new();
    let path = f.write("run.sh", "#!/bin/sh\necho old\n");
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    f.ok("edit", &edit_args("run.sh", "old", "new"));
    let mode =
        std::os::unix::fs::PermissionsExt::mode(&std::fs::metadata(&path).unwrap().permissions());
    assert_eq!(mode & 0o7777, 0o755);
    let leftovers: Vec<Value> = std::fs::read_dir(&f.ws)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().contains("whalebox-tmp"))
        .map(|e| json!(e.file_name().to_string_lossy()))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn edit_through_a_symlink_inside_the_workspace_edits_the_target() {
    let f = Fixture::new();
    let target = f.write("real/config.toml", "x = 1\n");
    std::os::unix::fs::symlink("real/config.toml", f.ws.join("link.toml")).unwrap();
    f.ok("edit", &edit_args("link.toml", "x = 1", "x = 2"));
    assert_eq!(std::fs::read_to_string(&target).unwrap(), "x = 2\n");
    assert!(
        std::fs::symlink_metadata(f.ws.join("link.toml"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
