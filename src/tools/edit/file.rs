//! The two ends of a read-modify-write: loading a file for editing (regular, within the
//! size limit, decodable) and storing the new bytes only where the file still holds
//! what was read.

use std::io::Read;

use nix::fcntl::OFlag;

use crate::core::{Code, ToolError};
use crate::guard::Allowed;
use crate::mutation::{CommitError, Expect, Fingerprint, Freshness, commit};
use crate::text::{DecodeError, Detected, Document};
use crate::tools::Env;
use crate::tools::common::{human_size, io_error};

/// A file loaded for editing: its resolved path, its bytes as read, and the document.
pub(super) struct Loaded {
    pub(super) allowed: Allowed,
    pub(super) doc: Document,
    /// The file's bytes when they are not simply `doc.text` (see [`Document::decode_owned`]).
    original: Option<Vec<u8>>,
    /// The file's fingerprint, if it held still while it was read.
    fingerprint: Option<Fingerprint>,
}

impl Loaded {
    /// The bytes as read from disk.
    pub(super) fn bytes(&self) -> &[u8] {
        self.original.as_deref().unwrap_or(self.doc.text.as_bytes())
    }

    pub(super) fn freshness(&self, env: &Env) -> Freshness {
        env.ledger
            .freshness(&self.allowed.abs, self.fingerprint, self.bytes())
    }
}

fn decode_error(shown: &str, size: u64, e: DecodeError) -> ToolError {
    match e {
        DecodeError::Binary => ToolError::new(
            Code::BinaryFile,
            format!(
                "{shown} is a binary file ({}); it is never edited as text",
                human_size(size)
            ),
            "edit text files only; binary files need purpose-built tools",
        ),
        DecodeError::Undecodable { offset } => ToolError::new(
            Code::Undecodable,
            format!(
                "{shown} is not valid UTF-8 (first bad byte at offset {offset}), UTF-16 with a BOM, \
                 or GB18030; it is not rewritten, since that would change bytes you did not edit"
            ),
            "convert the file to UTF-8 first (e.g. with iconv), then edit it",
        ),
    }
}

pub(super) fn too_large(shown: &str, size: u64, max: u64) -> ToolError {
    ToolError::new(
        Code::TooLarge,
        format!(
            "{shown} would be {} ({size} bytes), over the {} limit (`[edit] max_file_bytes`)",
            human_size(size),
            human_size(max)
        ),
        "edit a smaller file, or raise `max_file_bytes` in the profile's [edit] section",
    )
}

/// Read and decode an existing file for a read-modify-write, after checking it is a
/// regular file within the size limit.
pub(super) fn load(env: &Env, allowed: Allowed) -> Result<Loaded, ToolError> {
    let shown = allowed.shown.clone();
    // Opened beneath its root without following a link: what was checked is what is read.
    let mut file = match allowed.open(OFlag::O_RDONLY | OFlag::O_NONBLOCK) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut err = io_error(env, &allowed, e);
            err.next_step = format!(
                "{}; to create the file use write {{\"file_path\": \"{shown}\", \"content\": …}}",
                err.next_step
            );
            return Err(err);
        }
        Err(e) => return Err(io_error(env, &allowed, e)),
    };
    let meta = file.metadata().map_err(|e| io_error(env, &allowed, e))?;
    if meta.is_dir() {
        return Err(ToolError::new(
            Code::IsDirectory,
            format!("{shown} is a directory, not a file"),
            "give the path of a file inside it",
        ));
    }
    if !meta.is_file() {
        return Err(ToolError::invalid_input(
            format!("{shown} is not a regular file"),
            "only regular files can be edited",
        ));
    }
    let max = env.profile.edit.max_file_bytes;
    if meta.len() > max {
        return Err(too_large(&shown, meta.len(), max));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)
        .map_err(|e| io_error(env, &allowed, e))?;
    let fingerprint = file
        .metadata()
        .ok()
        .map(|after| Fingerprint::of(&after))
        .filter(|after| *after == Fingerprint::of(&meta));
    let size = bytes.len() as u64;
    let (doc, original) =
        Document::decode_owned(bytes).map_err(|e| decode_error(&allowed.shown, size, e))?;
    Ok(Loaded {
        allowed,
        doc,
        original,
        fingerprint,
    })
}

/// Commit `new_bytes` where `expect` holds, and remember them as seen (their hash is
/// computed in the background).
/// New bytes for a GB18030 file must read back as the text written (`text`, LF
/// endings; None: not GB18030): bytes that are also valid UTF-8 would be read as UTF-8,
/// which decoding tries first, and the next edit would write UTF-8 into the file; and a
/// character GB18030 cannot encode (U+E5E5) would be written as `&#58853;`. Refused,
/// nothing written. (Both found by the edit fuzz targets.)
pub(super) fn reads_back(
    shown: &str,
    new_bytes: &[u8],
    text: Option<&str>,
) -> Result<(), ToolError> {
    let Some(text) = text else {
        return Ok(());
    };
    if Document::decode(new_bytes).is_ok_and(|back| back.text == text) {
        return Ok(());
    }
    Err(ToolError::invalid_input(
        format!(
            "{shown} is GB18030, and after this change its bytes would not read back as what \
             you wrote (they would also be valid UTF-8, or the text has a character GB18030 \
             cannot encode, such as U+E5E5); nothing was written"
        ),
        "convert the file to UTF-8 first (for example `iconv -f GB18030 -t UTF-8`), then make the change",
    ))
}

/// The text to check with [`reads_back`]: only a GB18030 file's.
pub(super) fn gb18030_text(doc: &Document, text: &str) -> Option<String> {
    (doc.detected == Detected::GB18030).then(|| text.to_string())
}

pub(super) fn store(
    env: &Env,
    allowed: &Allowed,
    expect: Expect<'_>,
    new_bytes: Vec<u8>,
) -> Result<(), ToolError> {
    // A create makes the directories on the way (never through a link).
    let create = matches!(expect, Expect::Absent);
    let committed = allowed
        .parent(create)
        .map_err(CommitError::Io)
        .and_then(|(dir, name)| commit(&dir, name, expect, &new_bytes));
    if let Err(CommitError::Unconfirmed(_)) = &committed {
        // The file holds the new bytes: the session must know it, whatever is answered.
        remember_written(env, allowed, new_bytes.clone());
    }
    committed.map_err(|e| match e {
        CommitError::Unconfirmed(e) => ToolError::io(
            &allowed.shown,
            &e,
            "the change IS in the file, but the disk did not confirm it, so it may not survive a crash; do not make it again",
        ),
        CommitError::Conflict => ToolError::new(
            Code::WriteConflict,
            format!(
                "{} changed on disk while the change was being made (another program wrote it); nothing was written",
                allowed.shown
            ),
            "read the file again and redo the change on its current content",
        ),
        CommitError::Io(e) => io_error(env, allowed, e),
    })?;
    remember_written(env, allowed, new_bytes);
    Ok(())
}

fn remember_written(env: &Env, allowed: &Allowed, new_bytes: Vec<u8>) {
    let fingerprint = allowed
        .open(OFlag::O_PATH)
        .and_then(|f| f.metadata())
        .ok()
        .map(|m| Fingerprint::of(&m));
    env.ledger
        .record_written(&allowed.abs, new_bytes, fingerprint);
}
