//! A web page as Markdown of its main content: parsed once (html5ever), links and images
//! made absolute against the page's final URL, the main content picked (`<main>` or
//! `role="main"`, else the `<article>` with the most text, else `<body>` without its
//! site header), and converted by htmd with script, style, navigation, footers, asides,
//! forms and embedded objects left out.

use std::rc::Rc;

use htmd::HtmlToMarkdown;
use htmd::options::{BulletListMarker, Options};
use markup5ever_rcdom::{Handle, NodeData};
use url::Url;

/// Elements whose content is never the page's text.
const SKIPPED: &[&str] = &[
    "script", "style", "noscript", "nav", "footer", "aside", "form", "svg", "iframe", "template",
    "button", "select", "input", "textarea", "dialog", "canvas", "object", "embed", "audio",
    "video", "map",
];

pub struct Page {
    pub title: Option<String>,
    pub markdown: String,
}

fn converter() -> HtmlToMarkdown {
    HtmlToMarkdown::builder()
        .options(Options {
            bullet_list_marker: BulletListMarker::Dash,
            ul_bullet_spacing: 1,
            ol_number_spacing: 1,
            ..Options::default()
        })
        .skip_tags(SKIPPED.to_vec())
        .build()
}

/// The page's DOM (html5ever's, as htmd builds it).
pub(crate) fn parse(html: &str) -> Option<Handle> {
    converter().html_to_tree(html).ok()
}

pub fn to_markdown(html: &str, base: &Url) -> Page {
    let converter = converter();
    let Ok(doc) = converter.html_to_tree(html) else {
        return Page {
            title: None,
            markdown: String::new(),
        };
    };
    let title = first(&doc, &|n| tag(n) == Some("title"))
        .or_else(|| first(&doc, &|n| tag(n) == Some("h1")))
        .map(|n| squash(&text_of(&n)))
        .filter(|t| !t.is_empty());
    absolutize(&doc, base);
    let root = main_content(&doc);
    let mut markdown = converter.tree_to_markdown(&root);
    tidy(&mut markdown);
    Page { title, markdown }
}

pub(crate) fn tag(node: &Handle) -> Option<&str> {
    match &node.data {
        NodeData::Element { name, .. } => Some(&name.local),
        _ => None,
    }
}

pub(crate) fn attr(node: &Handle, wanted: &str) -> Option<String> {
    match &node.data {
        NodeData::Element { attrs, .. } => attrs
            .borrow()
            .iter()
            .find(|a| &*a.name.local == wanted)
            .map(|a| a.value.to_string()),
        _ => None,
    }
}

/// The first node (depth first) that `wanted` accepts.
pub(crate) fn first(node: &Handle, wanted: &dyn Fn(&Handle) -> bool) -> Option<Handle> {
    if wanted(node) {
        return Some(Rc::clone(node));
    }
    node.children
        .borrow()
        .iter()
        .find_map(|child| first(child, wanted))
}

pub(crate) fn all(node: &Handle, wanted: &dyn Fn(&Handle) -> bool, out: &mut Vec<Handle>) {
    if wanted(node) {
        out.push(Rc::clone(node));
    }
    for child in node.children.borrow().iter() {
        all(child, wanted, out);
    }
}

pub(crate) fn text_of(node: &Handle) -> String {
    let mut text = String::new();
    collect_text(node, &mut text);
    text
}

fn collect_text(node: &Handle, out: &mut String) {
    match &node.data {
        NodeData::Text { contents } => out.push_str(&contents.borrow()),
        NodeData::Element { name, .. } if SKIPPED.contains(&&*name.local) => {}
        _ => {
            for child in node.children.borrow().iter() {
                collect_text(child, out);
            }
        }
    }
}

pub(crate) fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `href` and `src` as absolute URLs; `javascript:` links lose their target.
fn absolutize(node: &Handle, base: &Url) {
    if let NodeData::Element { name, attrs, .. } = &node.data {
        let key = match &*name.local {
            "a" | "area" => Some("href"),
            "img" => Some("src"),
            _ => None,
        };
        if let Some(key) = key {
            let mut attrs = attrs.borrow_mut();
            attrs.retain(|a| {
                !(&*a.name.local == key
                    && a.value
                        .trim_start()
                        .to_ascii_lowercase()
                        .starts_with("javascript:"))
            });
            for a in attrs.iter_mut() {
                if &*a.name.local == key
                    && let Ok(abs) = base.join(a.value.trim())
                {
                    a.value = abs.as_str().into();
                }
            }
        }
    }
    for child in node.children.borrow().iter() {
        absolutize(child, base);
    }
}

/// `<main>` (or `role="main"`), else the article with the most text, else the body
/// without its top-level header, else the whole document.
fn main_content(doc: &Handle) -> Handle {
    if let Some(main) = first(doc, &|n| {
        tag(n) == Some("main") || attr(n, "role").as_deref() == Some("main")
    }) {
        return main;
    }
    let mut articles = Vec::new();
    all(doc, &|n| tag(n) == Some("article"), &mut articles);
    if let Some(best) = articles
        .into_iter()
        .max_by_key(|a| text_of(a).split_whitespace().count())
    {
        return best;
    }
    match first(doc, &|n| tag(n) == Some("body")) {
        Some(body) => {
            drop_site_headers(&body);
            body
        }
        None => Rc::clone(doc),
    }
}

/// A body's `<header>` elements are the site's banner, not the page's text.
fn drop_site_headers(node: &Handle) {
    node.children
        .borrow_mut()
        .retain(|child| tag(child) != Some("header"));
    for child in node.children.borrow().iter() {
        if tag(child) != Some("article") {
            drop_site_headers(child);
        }
    }
}

/// At most one blank line in a row, no trailing spaces but Markdown's hard breaks.
fn tidy(md: &mut String) {
    let mut out = String::with_capacity(md.len());
    let mut blank = 0;
    for line in md.lines() {
        if line.trim().is_empty() {
            blank += 1;
            if blank > 1 {
                continue;
            }
            out.push('\n');
            continue;
        }
        blank = 0;
        out.push_str(line);
        out.push('\n');
    }
    *md = out.trim().to_string();
    md.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn main_content_with_absolute_links() {
        let html = r#"<html><head><title> Demo  page </title><style>p{}</style></head>
            <body><header><a href="/">Site</a></header><nav><a href="/x">Nav</a></nav>
            <main><h1>Hello</h1><p>Read <a href="docs/intro.html">the intro</a>.</p>
            <pre><code class="language-rust">fn main() {}</code></pre>
            <ul><li>one</li><li>two</li></ul>
            <table><tr><th>a</th><th>b</th></tr><tr><td>1</td><td>2</td></tr></table>
            <script>alert(1)</script></main><footer>© footer</footer></body></html>"#;
        let page = to_markdown(html, &Url::parse("https://example.org/guide/").unwrap());
        assert_eq!(page.title.as_deref(), Some("Demo page"));
        let md = page.markdown;
        assert!(md.starts_with("# Hello\n"), "{md}");
        assert!(
            md.contains("[the intro](https://example.org/guide/docs/intro.html)"),
            "{md}"
        );
        assert!(
            md.contains("```rust\nfn main() {}\n```") || md.contains("```\nfn main() {}\n```"),
            "{md}"
        );
        assert!(md.contains("- one\n- two"), "{md}");
        assert!(md.contains("| a | b |"), "{md}");
        for gone in ["alert", "footer", "Nav", "Site", "p{}"] {
            assert!(!md.contains(gone), "{gone} in {md}");
        }
    }

    #[test]
    fn body_without_main_drops_the_site_header() {
        let html = "<body><header>Banner</header><div><p>Text</p></div></body>";
        let page = to_markdown(html, &Url::parse("http://h/").unwrap());
        assert_eq!(page.markdown, "Text\n");
        assert_eq!(page.title, None);
    }
}
