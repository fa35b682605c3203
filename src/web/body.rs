//! What a response body is and its text: the media type from `Content-Type` (or a look
//! at the bytes), the charset from the header, a byte-order mark, or an HTML page's
//! `<meta charset>`, decoded with encoding_rs (undecodable bytes become U+FFFD, and the
//! result says so).

use std::sync::LazyLock;

use encoding_rs::{Encoding, UTF_8, WINDOWS_1252};
use regex::bytes::Regex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Html,
    /// Text to show as it is: text/*, JSON, XML, JavaScript, YAML …
    Text,
    Binary,
}

pub struct Decoded {
    pub text: String,
    pub encoding: &'static str,
    pub replaced: bool,
}

/// The media type without parameters, lower case.
pub fn media_type(content_type: Option<&str>) -> Option<String> {
    content_type
        .and_then(|c| c.split(';').next())
        .map(|m| m.trim().to_ascii_lowercase())
        .filter(|m| !m.is_empty())
}

pub fn kind(content_type: Option<&str>, body: &[u8]) -> Kind {
    match media_type(content_type).as_deref() {
        Some("text/html" | "application/xhtml+xml") => Kind::Html,
        Some(m)
            if m.starts_with("text/")
                || m.ends_with("+json")
                || m.ends_with("+xml")
                || matches!(
                    m,
                    "application/json"
                        | "application/xml"
                        | "application/javascript"
                        | "application/ecmascript"
                        | "application/x-javascript"
                        | "application/yaml"
                        | "application/x-yaml"
                        | "application/toml"
                        | "application/x-sh"
                        | "application/sql"
                        | "application/graphql"
                        | "application/x-ndjson"
                ) =>
        {
            Kind::Text
        }
        Some(_) => Kind::Binary,
        None => sniff(body),
    }
}

/// No Content-Type: HTML if it starts like HTML, binary if it has NUL bytes or is not
/// mostly text, else text.
fn sniff(body: &[u8]) -> Kind {
    let head = &body[..body.len().min(1024)];
    let lower = String::from_utf8_lossy(head)
        .trim_start()
        .to_ascii_lowercase();
    if lower.starts_with("<!doctype html") || lower.starts_with("<html") {
        return Kind::Html;
    }
    if head.contains(&0) {
        return Kind::Binary;
    }
    Kind::Text
}

static META_CHARSET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)<meta[^>]+charset\s*=\s*["']?\s*([a-z0-9_\-:.]+)"#)
        .expect("the meta charset pattern compiles")
});

fn charset_param(content_type: Option<&str>) -> Option<&'static Encoding> {
    let ct = content_type?;
    ct.split(';').skip(1).find_map(|p| {
        let (k, v) = p.split_once('=')?;
        (k.trim().eq_ignore_ascii_case("charset"))
            .then(|| Encoding::for_label(v.trim().trim_matches('"').as_bytes()))
            .flatten()
    })
}

/// [`decode`], taking the body: UTF-8 without a BOM (most of the web) becomes the text
/// without a copy, so a large body is held once, not twice.
pub fn decode_owned(body: Vec<u8>, content_type: Option<&str>, kind: Kind) -> Decoded {
    let declared_utf8 = charset_param(content_type).is_none_or(|e| e == UTF_8);
    if declared_utf8
        && !body.starts_with(b"\xef\xbb\xbf")
        && !body.starts_with(b"\xfe\xff")
        && !body.starts_with(b"\xff\xfe")
    {
        let html_declares_other = kind == Kind::Html
            && charset_param(content_type).is_none()
            && META_CHARSET
                .captures(&body[..body.len().min(1024)])
                .and_then(|c| Encoding::for_label(&c[1]))
                .is_some_and(|e| e != UTF_8);
        if !html_declares_other {
            match String::from_utf8(body) {
                Ok(text) => {
                    return Decoded {
                        text,
                        encoding: UTF_8.name(),
                        replaced: false,
                    };
                }
                Err(e) => return decode(e.as_bytes(), content_type, kind),
            }
        }
    }
    decode(&body, content_type, kind)
}

pub fn decode(body: &[u8], content_type: Option<&str>, kind: Kind) -> Decoded {
    let declared = charset_param(content_type).or_else(|| {
        if kind != Kind::Html {
            return None;
        }
        let head = &body[..body.len().min(1024)];
        META_CHARSET
            .captures(head)
            .and_then(|c| Encoding::for_label(&c[1]))
    });
    let encoding = match declared {
        Some(e) => e,
        // Undeclared: UTF-8 when it is, else the web's legacy default.
        None if std::str::from_utf8(body).is_ok() => UTF_8,
        None if kind == Kind::Html => WINDOWS_1252,
        None => UTF_8,
    };
    // A byte-order mark wins over any declaration (as in browsers).
    let (text, used, replaced) = encoding.decode(body);
    Decoded {
        text: text.into_owned(),
        encoding: used.name(),
        replaced,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn charsets_from_header_meta_and_bom() {
        let latin1 = b"<html><head><meta charset=\"iso-8859-1\"></head><body>caf\xe9</body></html>";
        let d = decode(latin1, Some("text/html"), Kind::Html);
        assert!(d.text.contains("café") && d.encoding == "windows-1252" && !d.replaced);
        let sjis = encoding_rs::SHIFT_JIS.encode("日本語").0;
        let d = decode(&sjis, Some("text/plain; charset=Shift_JIS"), Kind::Text);
        assert_eq!(d.text, "日本語");
        let d = decode(
            b"\xef\xbb\xbfok",
            Some("text/plain; charset=latin1"),
            Kind::Text,
        );
        assert_eq!((d.text.as_str(), d.encoding), ("ok", "UTF-8"));
        let d = decode(
            b"bad \xff byte",
            Some("text/plain; charset=utf-8"),
            Kind::Text,
        );
        assert!(d.replaced);
        assert_eq!(
            kind(Some("application/json; charset=utf-8"), b"{}"),
            Kind::Text
        );
        assert_eq!(kind(Some("image/png"), b"\x89PNG"), Kind::Binary);
        assert_eq!(kind(None, b"<!DOCTYPE html><p>x"), Kind::Html);
        assert_eq!(kind(None, b"a\0b"), Kind::Binary);
        let page = [
            b"<meta charset=shift_jis><p>".as_slice(),
            &encoding_rs::SHIFT_JIS.encode("日本").0,
        ]
        .concat();
        assert!(
            decode_owned(page, Some("text/html"), Kind::Html)
                .text
                .contains("日本")
        );
        let d = decode_owned(
            "plain é".as_bytes().to_vec(),
            Some("text/plain"),
            Kind::Text,
        );
        assert_eq!((d.text.as_str(), d.encoding), ("plain é", "UTF-8"));
        assert!(decode_owned(b"bad \xff".to_vec(), None, Kind::Text).replaced);
    }
}
