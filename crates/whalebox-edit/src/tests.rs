use super::*;

fn ok(text: &str, search: &str, replace: &str) -> Applied {
    apply(text, search, replace, false).unwrap_or_else(|e| panic!("{e:?}"))
}

#[test]
fn exact_unique_replaces_once() {
    let a = ok("a\nfoo(1)\nb\n", "foo(1)", "foo(2)");
    assert_eq!(a.text, "a\nfoo(2)\nb\n");
    assert_eq!((a.level, a.replacements, a.line), (Level::Exact, 1, 2));
}

#[test]
fn exact_several_needs_replace_all_and_names_every_line() {
    let text = "x = 1\ny\nx = 1\nz\nx = 1\n";
    assert_eq!(
        apply(text, "x = 1", "x = 2", false).unwrap_err(),
        Failure::NotUnique {
            level: Level::Exact,
            lines: vec![1, 3, 5]
        }
    );
    let a = apply(text, "x = 1", "x = 2", true).unwrap();
    assert_eq!(a.replacements, 3);
    assert_eq!(a.text, "x = 2\ny\nx = 2\nz\nx = 2\n");
}

#[test]
fn trailing_blanks_in_the_file_do_not_block_a_match() {
    let text = "fn a() {   \n    one();\t\n}\n";
    let a = ok(text, "fn a() {\n    one();\n}", "fn a() {\n    two();\n}");
    assert_eq!(a.level, Level::WhitespaceRelaxed);
    // The unchanged first and last lines keep their own bytes (trailing blanks).
    assert_eq!(a.text, "fn a() {   \n    two();\n}\n");
    assert_eq!(a.tags, vec![Tag::WhitespaceNormalized]);
}

#[test]
fn a_search_without_indentation_is_realigned() {
    let text = "impl X {\n    fn a() {\n        one();\n    }\n}\n";
    let a = ok(
        text,
        "fn a() {\n    one();\n}",
        "fn a() {\n    one();\n    two();\n}",
    );
    assert_eq!(
        a.text,
        "impl X {\n    fn a() {\n        one();\n        two();\n    }\n}\n"
    );
    assert_eq!(
        a.tags,
        vec![Tag::WhitespaceNormalized, Tag::IndentationRealigned]
    );
}

#[test]
fn a_search_begun_at_the_first_non_blank_keeps_the_first_lines_indentation() {
    let text = "fn main() {\n    println!(\"hi\");   \n}\n";
    let a = ok(text, "println!(\"hi\");\n}", "println!(\"hello\");\n}");
    assert_eq!(a.text, "fn main() {\n    println!(\"hello\");\n}\n");
    assert!(a.tags.contains(&Tag::IndentationRealigned));
}

#[test]
fn inconsistent_indentation_is_not_guessed() {
    let text = "a\n  b\n    c\n";
    let found = ok(text, "  a\nb\n    c", "  a\nB\n    c");
    assert_eq!(found.text, "a\nB\n    c\n");
    assert!(!found.tags.contains(&Tag::IndentationRealigned));
}

#[test]
fn an_over_indented_search_is_realigned_the_other_way() {
    let text = "def f():\n    return 1\n";
    let a = ok(
        text,
        "        def f():\n            return 1",
        "        def f():\n            return 2",
    );
    assert_eq!(a.text, "def f():\n    return 2\n");
    assert!(a.tags.contains(&Tag::IndentationRealigned));
}

#[test]
fn relaxed_ambiguity_is_an_error_naming_candidates() {
    let text = "  a\n  b\nx\n  a\n  b\n";
    assert_eq!(
        apply(text, "a\nb", "c", false).unwrap_err(),
        Failure::NotUnique {
            level: Level::WhitespaceRelaxed,
            lines: vec![1, 4]
        }
    );
}

#[test]
fn literal_escapes_are_unwrapped() {
    let text = "line one\n\tline two\n";
    let a = ok(text, "line one\\n\\tline two", "line one\\n\\tline 2");
    assert_eq!(a.text, "line one\n\tline 2\n");
    assert_eq!(a.level, Level::EscapeUnwrapped);
    assert_eq!(a.tags, vec![Tag::JsonEscapeUnwrapped]);
}

#[test]
fn escapes_in_code_are_matched_exactly_first() {
    let text = "printf(\"a\\n\");\n";
    let a = ok(text, "printf(\"a\\n\");", "printf(\"b\\n\");");
    assert_eq!(a.level, Level::Exact);
    assert_eq!(a.text, "printf(\"b\\n\");\n");
}

#[test]
fn curly_quotes_dashes_and_nbsp_are_folded_and_untouched_lines_keep_them() {
    let text = "// it’s “quoted” — ok\nlet\u{a0}x = 1;\n";
    let a = ok(
        text,
        "// it's \"quoted\" - ok\nlet x = 1;",
        "// it's \"quoted\" - ok\nlet x = 2;",
    );
    assert_eq!(a.level, Level::UnicodeNormalized);
    assert_eq!(a.text, "// it’s “quoted” — ok\nlet x = 2;\n");
    assert_eq!(a.tags, vec![Tag::UnicodeNormalized]);
}

#[test]
fn unicode_substring_match_inside_a_line() {
    let text = "say(“hi”) // greet\n";
    let a = ok(text, "say(\"hi\")", "say(\"bye\")");
    assert_eq!(a.text, "say(\"bye\") // greet\n");
}

#[test]
fn not_found_names_the_divergence() {
    let text = "fn a() {\n    let x = 1;\n    let y = 2;\n    x + y\n}\n";
    let e = apply(
        text,
        "fn a() {\n    let x = 1;\n    let y = 3;\n    x + y\n}",
        "z",
        false,
    )
    .unwrap_err();
    let Failure::NotFound { message, line, .. } = e else {
        panic!("{e:?}")
    };
    assert!(
        message.contains("closest match starts at line 1"),
        "{message}"
    );
    assert!(message.contains("the first 2 lines agree"), "{message}");
    assert!(
        message.contains("line 3 differs: file has `    let y = 2;`, you gave `    let y = 3;`"),
        "{message}"
    );
    assert_eq!(line, Some(1));
}

#[test]
fn bad_requests_are_invalid() {
    assert!(matches!(
        apply("a", "", "b", false),
        Err(Failure::Invalid { .. })
    ));
    assert!(matches!(
        apply("a", "a", "a", false),
        Err(Failure::Invalid { .. })
    ));
}

#[test]
fn deleting_a_whole_line_with_its_newline() {
    let a = ok("keep\n  drop  \nkeep2\n", "drop\n", "");
    assert_eq!(a.text, "keep\nkeep2\n");
}

#[test]
fn the_missing_final_newline_stays_missing_in_relaxed_edits() {
    let a = ok("a\nlast  ", "last\n", "LAST\n");
    assert_eq!(a.text, "a\nLAST");
}

#[test]
fn a_tab_file_edited_with_four_spaces_gets_tabs() {
    let text = "def f():\n\tif x:\n\t\ta()\n\treturn 1\n";
    let a = ok(
        text,
        "    if x:\n        a()",
        "    if x:\n        a()\n        b()\n    c()",
    );
    assert_eq!(
        a.text,
        "def f():\n\tif x:\n\t\ta()\n\t\tb()\n\tc()\n\treturn 1\n"
    );
    assert!(a.tags.contains(&Tag::IndentationRealigned));
}

#[test]
fn a_deeper_new_line_takes_the_files_two_space_unit() {
    let text = "fn f() {\n  if x {\n    a();\n  }\n}\n";
    let a = ok(
        text,
        "if x {\n    a();\n}",
        "if x {\n    a();\n    if y {\n        b();\n    }\n}",
    );
    assert_eq!(
        a.text,
        "fn f() {\n  if x {\n    a();\n    if y {\n      b();\n    }\n  }\n}\n"
    );
}

#[test]
fn a_line_inserted_after_a_corrected_line_gets_the_same_correction() {
    // The model wrote `a()` two columns short; `c()`, at the same depth, is
    // corrected the same way, so the block stays aligned.
    let text = "def f():\n    if x:\n        a()\n    b()\n";
    let a = ok(
        text,
        "    if x:\n      a()\n    b()",
        "    if x:\n      a()\n      c()\n    b()",
    );
    assert_eq!(
        a.text,
        "def f():\n    if x:\n        a()\n        c()\n    b()\n"
    );
    assert!(a.tags.contains(&Tag::IndentationRealigned));
}

#[test]
fn blank_lines_in_the_block_are_kept_and_do_not_teach_a_depth() {
    let text = "\tx = 1\n\n\ty = 2\n";
    let a = ok(
        text,
        "    x = 1\n\n    y = 2",
        "    x = 1\n\n    z = 3\n    y = 2",
    );
    assert_eq!(a.text, "\tx = 1\n\n\tz = 3\n\ty = 2\n");
}

#[test]
fn a_line_inserted_under_a_collapsed_python_block_lands_inside_it() {
    // The model wrote `if x:` and `return 1` at one depth; the file has them at 4
    // and 8. `log(x)`, between them, belongs to the block its follower is in.
    let text = "def f(x):\n    if x:\n        return 1\n    return 0\n";
    let a = ok(
        text,
        "    if x:\n    return 1",
        "    if x:\n    log(x)\n    return 1",
    );
    assert_eq!(a.level, Level::WhitespaceRelaxed);
    assert_eq!(
        a.text,
        "def f(x):\n    if x:\n        log(x)\n        return 1\n    return 0\n"
    );
    assert!(a.tags.contains(&Tag::IndentationRealigned));
}

#[test]
fn a_changed_line_of_a_collapsed_python_block_keeps_its_lines_depth() {
    let text = "def f(x):\n    if x:\n        return 1\n    return 0\n";
    let a = ok(
        text,
        "    if x:\n    return 1",
        "    if x:\n    log(x)\n    return 2",
    );
    assert_eq!(
        a.text,
        "def f(x):\n    if x:\n        log(x)\n        return 2\n    return 0\n"
    );
}

#[test]
fn a_line_inserted_after_a_collapsed_brace_block_takes_its_neighbours_depth() {
    // The case: `if (x) {` and `foo();` both at 8 in the model, at 8 and 12
    // in the file; `bar();`, added after `foo();`, goes where `foo();` is.
    let text = "function g(x) {\n    for (;;) {\n        if (x) {\n            foo();\n        }\n    }\n}\n";
    let a = ok(
        text,
        "        if (x) {\n        foo();",
        "        if (x) {\n        foo();\n        bar();",
    );
    assert_eq!(
        a.text,
        "function g(x) {\n    for (;;) {\n        if (x) {\n            foo();\n            bar();\n        }\n    }\n}\n"
    );
    assert!(a.tags.contains(&Tag::IndentationRealigned));
}

#[test]
fn lines_added_to_a_collapsed_brace_block_keep_their_relative_depths() {
    let text = "function g(x) {\n    for (;;) {\n        if (x) {\n            foo();\n        }\n    }\n}\n";
    let a = ok(
        text,
        "        if (x) {\n        foo();\n        }",
        "        if (x) {\n        foo(1);\n        if (y) {\n            bar();\n        }\n        }",
    );
    assert_eq!(
        a.text,
        "function g(x) {\n    for (;;) {\n        if (x) {\n            foo(1);\n            if (y) {\n                bar();\n            }\n        }\n    }\n}\n"
    );
}

#[test]
fn a_collapsed_tab_block_is_realigned_in_tabs() {
    let text = "func f() {\n\tif x {\n\t\ta()\n\t}\n}\n";
    let a = ok(text, "    if x {\n    a()", "    if x {\n    b()\n    a()");
    assert_eq!(a.text, "func f() {\n\tif x {\n\t\tb()\n\t\ta()\n\t}\n}\n");
}

#[test]
fn a_block_written_without_any_indentation_is_realigned_line_by_line() {
    // Every search line at column 0, the file's at 0 and 4: the changed line takes
    // the indentation of the line it replaces.
    let text = "fn relaxed() {   \n    relaxed_target_A();\n}\n";
    let a = ok(
        text,
        "fn relaxed() {\nrelaxed_target_A();\n}",
        "fn relaxed() {\nrelaxed_target_B();\n}",
    );
    assert_eq!(a.text, "fn relaxed() {   \n    relaxed_target_B();\n}\n");
    assert!(a.tags.contains(&Tag::IndentationRealigned));
}

#[test]
fn a_collapsed_block_with_depths_out_of_order_is_not_guessed() {
    // `a` and `b` at one depth (the file has 0 and 2) and `c` shallower than both
    // (the file has it deeper): not a re-indentation.
    let text = "a\n  b\n    c\n";
    let a = ok(text, "  a\n  b\nc", "  a\n  B\nc");
    assert_eq!(a.text, "a\n  B\n    c\n");
    assert!(!a.tags.contains(&Tag::IndentationRealigned));
}

#[test]
fn a_line_shallower_than_every_known_depth_loses_levels_in_the_files_unit() {
    let text = "\t\tdef g():\n\t\t\treturn 1\n";
    let a = ok(
        text,
        "        def g():\n            return 1",
        "        def g():\n            return 1\n    h = g",
    );
    assert_eq!(a.text, "\t\tdef g():\n\t\t\treturn 1\n\th = g\n");
}
