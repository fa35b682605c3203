//! `whalebox call request_user_input` on a terminal: the questions go to /dev/tty with
//! their options numbered, and the answers come back in the envelope.

mod common;

use std::io::{Read, Write};

use common::Fixture;
use serde_json::json;

#[test]
fn questions_on_the_terminal_are_answered_by_number_or_in_words() {
    use portable_pty::{CommandBuilder, PtySize, native_pty_system};
    let f = Fixture::new();
    let pair = native_pty_system()
        .openpty(PtySize {
            rows: 24,
            cols: 200,
            pixel_width: 0,
            pixel_height: 0,
        })
        .unwrap();
    let args = json!({"questions": [
        {"id": "db", "question": "Which database?", "options": [{"label": "sqlite"}, {"label": "postgres"}]},
        {"id": "features", "question": "Which features?", "multi_select": true,
         "options": [{"label": "auth"}, {"label": "search"}, {"label": "export"}]},
        {"id": "name", "question": "Project name?"}
    ]});
    let mut cmd = CommandBuilder::new(common::bin());
    cmd.args(["call", "request_user_input", "--args", &args.to_string()]);
    cmd.cwd(&f.ws);
    cmd.env("HOME", &f.home);
    let mut child = pair.slave.spawn_command(cmd).unwrap();
    drop(pair.slave);
    let mut reader = pair.master.try_clone_reader().unwrap();
    let mut writer = pair.master.take_writer().unwrap();
    let mut seen = String::new();
    // Properties come in the form's order (db, db_other, features, …; "other" fields are
    // asked with their question).
    for (marker, reply) in [
        ("2) postgres", "2\r"),
        ("3) export", "1, 3\r"),
        ("Project name?", "demo\r"),
    ] {
        common::read_until(&mut reader, &mut seen, marker);
        assert!(seen.contains(marker), "{seen}");
        writer.write_all(reply.as_bytes()).unwrap();
        writer.flush().unwrap();
        // Wait for the echo, so the next marker is looked for after it.
        common::read_until(&mut reader, &mut seen, reply.trim_end());
    }
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    seen.push_str(&rest);
    let status = child.wait().unwrap();
    assert!(status.success(), "{seen}");
    let start = seen.find("{\"ok\"").expect("the envelope is printed");
    let envelope: serde_json::Value = serde_json::Deserializer::from_str(&seen[start..])
        .into_iter()
        .next()
        .unwrap()
        .unwrap();
    assert_eq!(
        envelope["data"]["answers"],
        json!({"db": "postgres", "features": ["auth", "export"], "name": "demo"}),
        "{seen}"
    );
}
