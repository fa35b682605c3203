//! The session's cache of fetched, converted pages, so `start_index` pages through a
//! document without fetching it again. Entries live `cache_ttl_s`; the whole cache holds
//! at most [`MAX_BYTES`] of text, the oldest entries leaving first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Text held by the cache at most.
pub const MAX_BYTES: usize = 128 * 1024 * 1024;

/// A converted document and what the result says about it.
#[derive(Debug)]
pub struct Doc {
    pub text: String,
    /// Char offsets of every 4096th char, so a page far into a large document is found
    /// without walking it from the start.
    marks: Vec<usize>,
    pub meta: Value,
}

impl Doc {
    pub fn new(text: String, meta: Value) -> Doc {
        let marks = text.char_indices().step_by(4096).map(|(i, _)| i).collect();
        Doc { text, marks, meta }
    }

    pub fn total_chars(&self) -> usize {
        match self.marks.last() {
            Some(&last) => (self.marks.len() - 1) * 4096 + self.text[last..].chars().count(),
            None => 0,
        }
    }

    /// The byte offset of char `n` (the end when past it).
    fn byte_at(&self, n: usize) -> usize {
        let Some(&mark) = self.marks.get(n / 4096) else {
            return self.text.len();
        };
        self.text[mark..]
            .char_indices()
            .nth(n % 4096)
            .map(|(i, _)| mark + i)
            .unwrap_or(self.text.len())
    }

    /// Chars `start..start + len`.
    pub fn slice(&self, start: usize, len: usize) -> &str {
        let a = self.byte_at(start);
        let b = self.byte_at(start.saturating_add(len));
        &self.text[a..b]
    }
}

struct Entry {
    doc: Arc<Doc>,
    at: Instant,
}

#[derive(Default)]
pub struct Cache {
    entries: Mutex<HashMap<String, Entry>>,
}

impl std::fmt::Debug for Cache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Cache")
    }
}

impl Cache {
    pub fn get(&self, key: &str, ttl: Duration) -> Option<Arc<Doc>> {
        let mut entries = self.entries.lock().ok()?;
        match entries.get(key) {
            Some(e) if e.at.elapsed() < ttl => Some(Arc::clone(&e.doc)),
            Some(_) => {
                entries.remove(key);
                None
            }
            None => None,
        }
    }

    pub fn put(&self, key: String, doc: Doc, ttl: Duration) -> Arc<Doc> {
        let doc = Arc::new(doc);
        let Ok(mut entries) = self.entries.lock() else {
            return doc;
        };
        entries.retain(|_, e| e.at.elapsed() < ttl);
        let mut held: usize = entries.values().map(|e| e.doc.text.len()).sum();
        while held + doc.text.len() > MAX_BYTES {
            let Some(oldest) = entries
                .iter()
                .min_by_key(|(_, e)| e.at)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            if let Some(e) = entries.remove(&oldest) {
                held -= e.doc.text.len();
            }
        }
        if doc.text.len() <= MAX_BYTES {
            entries.insert(
                key,
                Entry {
                    doc: Arc::clone(&doc),
                    at: Instant::now(),
                },
            );
        }
        doc
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_by_chars_across_marks() {
        let text: String = (0..10_000)
            .map(|i| if i % 3 == 0 { 'é' } else { 'a' })
            .collect();
        let doc = Doc::new(text.clone(), Value::Null);
        assert_eq!(doc.total_chars(), 10_000);
        let want: String = text.chars().skip(4090).take(20).collect();
        assert_eq!(doc.slice(4090, 20), want);
        assert_eq!(doc.slice(9_990, 100).chars().count(), 10);
        assert_eq!(doc.slice(20_000, 5), "");
        assert_eq!(Doc::new(String::new(), Value::Null).total_chars(), 0);
    }
}
