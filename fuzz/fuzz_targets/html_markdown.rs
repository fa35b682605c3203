//! HTML to Markdown (`web::html::to_markdown`: html5ever's DOM, the main content picked,
//! links made absolute, htmd's conversion, tidied), on any bytes a server sends.
//!
//! Oracle: never a panic; bounded work and output: at most 1 s for an input (libFuzzer's
//! -timeout catches a hang) and Markdown at most a fixed multiple of the input (a link
//! made absolute adds the base URL's length); the title is one line.

#![no_main]

use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use url::Url;
use whalebox::web::html::to_markdown;

thread_local! {
    static BASE: Url = Url::parse("https://example.org/docs/page.html").expect("a URL");
}

fuzz_target!(|data: &[u8]| {
    let html = String::from_utf8_lossy(data);
    BASE.with(|base| {
        let started = Instant::now();
        let page = to_markdown(&html, base);
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(1) || data.len() > 100_000,
            "{took:?} for {} bytes",
            data.len()
        );
        let bound = 64 * html.len() + 4096;
        assert!(
            page.markdown.len() <= bound,
            "{} bytes of Markdown from {} of HTML",
            page.markdown.len(),
            html.len()
        );
        if let Some(title) = &page.title {
            assert!(
                !title.contains('\n') && !title.is_empty(),
                "title {title:?}"
            );
        }
    });
});
