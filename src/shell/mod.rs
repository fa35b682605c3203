//! Shell sessions: commands run by the profile's shell under a supervisor, with pipes
//! or a PTY, output kept in bounded buffers, tasks that outlive one call, and
//! diagnoses of what a running or failed command is doing.

pub mod buffer;
pub use whalebox_policy::classify;
pub mod diagnose;
pub mod limits;
pub mod spawn;
pub mod supervisor;
pub mod task;
pub mod terminal;
pub mod zygote;

pub use spawn::Mode;
pub use task::{Exit, Task, TaskTable};

/// Plain text of terminal output: escape sequences removed, `\r\n` as `\n`, a bare
/// `\r` (progress bars redrawing a line) keeps only what was drawn last on the line.
pub fn strip_terminal(bytes: &[u8]) -> String {
    struct Plain {
        out: String,
        line_start: usize,
        pending_cr: bool,
    }
    impl vte::Perform for Plain {
        fn print(&mut self, c: char) {
            if self.pending_cr {
                self.out.truncate(self.line_start);
                self.pending_cr = false;
            }
            self.out.push(c);
        }
        fn execute(&mut self, byte: u8) {
            match byte {
                b'\n' => {
                    self.pending_cr = false;
                    self.out.push('\n');
                    self.line_start = self.out.len();
                }
                b'\r' => self.pending_cr = true,
                b'\t' => self.print('\t'),
                0x08 => {
                    self.out.pop();
                }
                _ => {}
            }
        }
    }
    let mut plain = Plain {
        out: String::with_capacity(bytes.len()),
        line_start: 0,
        pending_cr: false,
    };
    let mut parser = vte::Parser::new();
    parser.advance(&mut plain, bytes);
    plain.out
}

/// Cap `text` to `max` characters, keeping the head and the tail at line boundaries
/// where possible, with a marker saying how much was left out.
pub fn cap_output(text: &str, max: usize) -> (String, bool) {
    if text.chars().count() <= max {
        return (text.to_string(), false);
    }
    let head_chars = max / 3;
    let tail_chars = max - head_chars;
    let head_end = text
        .char_indices()
        .nth(head_chars)
        .map(|(i, _)| i)
        .unwrap_or(text.len());
    let head_end = text[..head_end]
        .rfind('\n')
        .map(|i| i + 1)
        .unwrap_or(head_end);
    let tail_start = text
        .char_indices()
        .rev()
        .nth(tail_chars)
        .map(|(i, _)| i)
        .unwrap_or(0)
        .max(head_end);
    let tail_start = text[tail_start..]
        .find('\n')
        .map(|i| tail_start + i + 1)
        .filter(|&i| i < text.len())
        .unwrap_or(tail_start);
    let cut = &text[head_end..tail_start];
    let marker = format!(
        "… {} bytes / {} lines truncated …\n",
        cut.len(),
        bytecount::count(cut.as_bytes(), b'\n')
    );
    (
        format!("{}{marker}{}", &text[..head_end], &text[tail_start..]),
        true,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_output_becomes_plain_text() {
        let raw = b"\x1b[31mred\x1b[0m plain\r\n50%\r100%\r\nend\x1b]0;title\x07";
        assert_eq!(strip_terminal(raw), "red plain\n100%\nend");
    }

    #[test]
    fn capping_keeps_both_ends_and_says_what_went() {
        let text: String = (0..1000).map(|i| format!("line {i}\n")).collect();
        let (capped, cut) = cap_output(&text, 500);
        assert!(cut);
        assert!(capped.starts_with("line 0\n"));
        assert!(capped.ends_with("line 999\n"));
        assert!(capped.contains("lines truncated"));
        assert!(capped.chars().count() < 600);
        assert_eq!(cap_output("short", 500), ("short".to_string(), false));
    }
}
