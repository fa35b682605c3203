#!/usr/bin/env python3
"""Builds the manual and checks its internal links offline (tests/run): `mdbook build docs`,
which must print no ERROR or WARN (mdBook reports a failed `{{#include}}` that way and
still exits 0); every `{{#include FILE:ANCHOR}}` must find its anchor (a missing one
includes nothing, silently), and no `{{#…}}` directive may be left in a page.

In the built book (docs/book/): every relative `href` and `src` of every HTML page must
name a file that exists, and its `#fragment` an `id` (or `<a name>`) in that page.
In README.md and CONTRIBUTING.md: every relative Markdown link must name a file of the
repository, a link into the book's sources (docs/src/X.md#anchor) an anchor of the page
mdbook built from it, and a bare `#anchor` one of the file's own headings.

External links (a scheme, or `//host`) are counted, never fetched: CI has no network.
Exit 1, listing every broken link with the page it is on."""

import html.parser
import pathlib
import re
import subprocess
import sys
import urllib.parse

ROOT = pathlib.Path(__file__).resolve().parents[2]
BOOK = ROOT / "docs" / "book"
SOURCES = ROOT / "docs" / "src"
MARKDOWN = ["README.md", "CONTRIBUTING.md"]


class Page(html.parser.HTMLParser):
    """The ids a page defines, the links it makes, and its `<base href>`."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.ids, self.links, self.base = set(), [], None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        for key in ("id",) + (("name",) if tag == "a" else ()):
            if attrs.get(key):
                self.ids.add(attrs[key])
        if tag == "base" and attrs.get("href"):
            self.base = attrs["href"]
        for key in ("href", "src"):
            if attrs.get(key) is not None and tag != "base":
                self.links.append((tag, attrs[key], self.getpos()[0]))


def external(url):
    return bool(urllib.parse.urlsplit(url).scheme) or url.startswith("//")


def parse(path, cache={}):
    if path not in cache:
        page = Page()
        page.feed(path.read_text(encoding="utf-8"))
        cache[path] = page
    return cache[path]


def check_book(errors):
    pages = sorted(BOOK.rglob("*.html"))
    if not pages:
        errors.append(f"{BOOK}: no HTML pages: run `mdbook build docs` first")
    counted = {"internal": 0, "external": 0}
    for path in pages:
        page = parse(path)
        for tag, url, line in page.links:
            if external(url):
                counted["external"] += 1
                continue
            counted["internal"] += 1
            parts = urllib.parse.urlsplit(url)
            base = path.parent
            if page.base and not external(page.base):
                # 404.html: links are relative to the site's root, where the book is served.
                base = BOOK / page.base.lstrip("/")
            target = path if not parts.path else (base / urllib.parse.unquote(parts.path))
            if parts.path.endswith("/"):
                target = target / "index.html"
            where = f"{path.relative_to(ROOT)}:{line}: <{tag}> {url}"
            target = pathlib.Path(*target.parts).resolve()
            if not target.is_file():
                errors.append(f"{where}: no such file {target.relative_to(ROOT) if target.is_relative_to(ROOT) else target}")
            elif parts.fragment and target.suffix == ".html":
                if urllib.parse.unquote(parts.fragment) not in parse(target).ids:
                    errors.append(f"{where}: no id {parts.fragment!r} in {target.relative_to(ROOT)}")
    return len(pages), counted


def github_slug(heading):
    """The anchor GitHub gives a Markdown heading (lower case, punctuation dropped)."""
    text = re.sub(r"[`*_]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading.strip())
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_SPAN = re.compile(r"(`+).*?\1")


def check_markdown(errors):
    checked = 0
    for name in MARKDOWN:
        path = ROOT / name
        text = path.read_text(encoding="utf-8")
        headings, fence = set(), False
        for line in text.split("\n"):
            if line.startswith("```"):
                fence = not fence
            elif not fence and line.startswith("#"):
                headings.add(github_slug(line.lstrip("#")))
        for lineno, line in enumerate(text.split("\n"), 1):
            # A link shown in a code span is an example, not a link.
            for url in LINK.findall(CODE_SPAN.sub("", line)):
                if external(url):
                    continue
                checked += 1
                where = f"{name}:{lineno}: {url}"
                parts = urllib.parse.urlsplit(url)
                if not parts.path:
                    if parts.fragment not in headings:
                        errors.append(f"{where}: no heading {parts.fragment!r} in {name}")
                    continue
                target = (path.parent / parts.path).resolve()
                if not target.exists():
                    errors.append(f"{where}: no such file")
                    continue
                if parts.fragment and target.is_relative_to(SOURCES) and target.suffix == ".md":
                    built = BOOK / target.relative_to(SOURCES).with_suffix(".html")
                    if not built.is_file():
                        errors.append(f"{where}: {built.relative_to(ROOT)} was not built (not in SUMMARY.md?)")
                    elif parts.fragment not in parse(built).ids:
                        errors.append(f"{where}: no id {parts.fragment!r} in {built.relative_to(ROOT)}")
                elif parts.fragment:
                    errors.append(f"{where}: anchors are only checked into docs/src; link the file alone")
    return checked


def build(errors):
    """`mdbook build docs`, its complaints as errors."""
    try:
        run = subprocess.run(["mdbook", "build", "docs"], cwd=ROOT, capture_output=True, text=True)
    except FileNotFoundError:
        sys.exit("tests/book/check.py: no mdbook on PATH: cargo install --locked mdbook (.ci/run pins it)")
    output = run.stdout + run.stderr
    print(output, end="")
    if run.returncode != 0:
        errors.append(f"mdbook build docs exited {run.returncode}")
    errors.extend(f"mdbook: {line.strip()}" for line in output.splitlines() if re.search(r"\b(ERROR|WARN)\b", line))


INCLUDE = re.compile(r"\{\{#include\s+([^}:\s]+)(?::([A-Za-z_][\w-]*))?\s*\}\}")


def check_includes(errors):
    """Each include's file, and its named anchor, exist."""
    for source in sorted(SOURCES.rglob("*.md")):
        for lineno, line in enumerate(source.read_text(encoding="utf-8").split("\n"), 1):
            for directive in INCLUDE.finditer(line):
                name, anchor = directive.groups()
                where = f"{source.relative_to(ROOT)}:{lineno}: {directive.group(0)}"
                included = source.parent / name
                if not included.is_file():
                    errors.append(f"{where}: no such file")
                elif anchor:
                    text = included.read_text(encoding="utf-8")
                    for mark in (f"ANCHOR: {anchor}", f"ANCHOR_END: {anchor}"):
                        if mark not in text:
                            errors.append(f"{where}: no `{mark}` in {included.resolve().relative_to(ROOT)}")
    for page in sorted(BOOK.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        if "{{#" in text:
            errors.append(f"{page.relative_to(ROOT)}: an mdBook directive was left unresolved")


def main():
    errors = []
    build(errors)
    check_includes(errors)
    pages, counted = check_book(errors)
    markdown = check_markdown(errors)
    for error in errors:
        print(f"check: {error}")
    print(
        f"tests/book/check.py: {pages} pages, {counted['internal']} internal links and anchors checked, "
        f"{counted['external']} external ones not fetched; {markdown} links of {', '.join(MARKDOWN)}; "
        f"{len(errors)} problems"
    )
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
