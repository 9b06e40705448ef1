"""Read rendered reports back the way a browser or a Markdown renderer would, so tests can
assert on structure (sections, tables, tags, links) instead of bytes."""

from __future__ import annotations

from dataclasses import dataclass
from html.parser import HTMLParser

from markdown_it import MarkdownIt
from markdown_it.token import Token

MARKDOWN = MarkdownIt("commonmark").enable("table")


@dataclass
class MarkdownTable:
    header: list[str]
    rows: list[list[str]]


def _inline_text(token: Token) -> str:
    return "".join(
        child.content if child.type in ("text", "code_inline") else " "
        for child in token.children or []
        if child.type in ("text", "code_inline", "softbreak")
    )


def markdown_tokens(text: str) -> list[Token]:
    return MARKDOWN.parse(text)


def markdown_headings(text: str, level: int) -> list[str]:
    tokens = markdown_tokens(text)
    return [
        _inline_text(tokens[index + 1])
        for index, token in enumerate(tokens)
        if token.type == "heading_open" and token.tag == f"h{level}"
    ]


def markdown_first_paragraph(text: str) -> Token:
    """The inline token of the first paragraph: where a report's headline is."""
    tokens = markdown_tokens(text)
    opened = next(i for i, t in enumerate(tokens) if t.type == "paragraph_open")
    return tokens[opened + 1]


def markdown_tables(text: str) -> list[MarkdownTable]:
    tables: list[MarkdownTable] = []
    row: list[str] = []
    for index, token in enumerate(tokens := markdown_tokens(text)):
        if token.type == "table_open":
            tables.append(MarkdownTable(header=[], rows=[]))
        elif token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            row.append(_inline_text(tokens[index + 1]))
        elif token.type == "tr_close":
            if tables[-1].header:
                tables[-1].rows.append(row)
            else:
                tables[-1].header = row
    return tables


def markdown_table(text: str, first_header: str) -> MarkdownTable:
    for table in markdown_tables(text):
        if table.header and table.header[0] == first_header:
            return table
    raise AssertionError(f"no table whose first column is {first_header!r}")


def markdown_inline_kinds(text: str) -> set[str]:
    """Every inline token type the renderer produced (``image``, ``html_inline``, ...)."""
    kinds = set()
    for token in markdown_tokens(text):
        kinds.update(child.type for child in token.children or [])
    return kinds


def markdown_html(text: str) -> list[str]:
    """Every piece of raw HTML the renderer would pass through, block or inline."""
    pieces = []
    for token in markdown_tokens(text):
        if token.type == "html_block":
            pieces.append(token.content.strip())
        pieces.extend(c.content for c in token.children or [] if c.type == "html_inline")
    return pieces


class HtmlPage(HTMLParser):
    """Tags with their attributes, element ids in order, and the text a reader sees."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.ids: list[str] = []
        self.text: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = dict(attrs)
        self.tags.append((tag, attributes))
        if attributes.get("id"):
            self.ids.append(str(attributes["id"]))
        if tag in ("style", "title"):
            self._skip += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in ("style", "title") and self._skip:
            self._skip -= 1

    def handle_data(self, data: str) -> None:
        if not self._skip:
            self.text.append(data)

    @property
    def tag_names(self) -> set[str]:
        return {tag for tag, _ in self.tags}

    @property
    def visible_text(self) -> str:
        return "".join(self.text)

    def links(self) -> list[str]:
        return [str(attrs["href"]) for _, attrs in self.tags if "href" in attrs]


def parse_html(text: str) -> HtmlPage:
    page = HtmlPage()
    page.feed(text)
    page.close()
    return page


PAGE_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "h2", "h3", "h4", "p",
    "span", "strong", "section", "table", "thead", "tbody", "tr", "th", "td", "a", "dl", "dt",
    "dd", "ol", "ul", "li", "figure", "figcaption", "pre", "code", "wbr", "svg", "g", "line",
    "circle", "rect", "text",
}  # fmt: skip


def assert_inert_page(page: HtmlPage) -> None:
    """Only the report's own tags; no script, no handler, no URL that leaves the page."""
    assert page.tag_names <= PAGE_TAGS, page.tag_names - PAGE_TAGS
    for tag, attrs in page.tags:
        assert not [name for name in attrs if name.startswith("on")], (tag, attrs)
        assert "src" not in attrs and "style" not in attrs, (tag, attrs)
        href = attrs.get("href")
        assert href is None or href.startswith("#"), (tag, attrs)
    assert all(href[1:] in page.ids for href in page.links()), "a link to a missing anchor"
