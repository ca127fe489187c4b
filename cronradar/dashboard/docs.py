"""The manual at ``/docs/``: the Markdown pages of ``docs/`` rendered server-side.

Pages: every ``docs/<name>.md`` whose ``name`` is lowercase ASCII letters, digits
and hyphens is served at ``/docs/<name>/`` (``index`` at ``/docs/``), and the
repository's ``README.md`` at ``/docs/readme/``. The name in the URL is only ever
looked up among those files (never joined to a path), so any other name, ``..``
included, is a 404. The pages are the manual: no sign-in needed.

Rendering (:func:`render`, cached per file and modification time) is CommonMark
with GitHub's tables (markdown-it-py), raw HTML in the Markdown shown as text.
Headings get ``id`` attributes equal to the anchors GitHub makes for the same
heading (:func:`github_slug`, numbered ``-1``, ``-2`` … when repeated), so one set
of ``page.md#anchor`` links works on GitHub and here. Relative links are rewritten
by :func:`web_href`: ``other.md#a`` → ``/docs/other/#a``, ``index.md`` →
``/docs/``, ``../README.md`` → ``/docs/readme/``, ``screenshots/x.png`` →
``/docs/screenshots/x.png``; a link to anything else in the repository (a source
file) keeps its text and loses its link; absolute URLs and ``#anchor`` links stay.

The reader's URLs (:func:`substitute`, after rendering, on every request): the
examples are written with :data:`EXAMPLE_BASE_URL` and :data:`EXAMPLE_PING_URL`.
In the rendered HTML the HTML-escaped example ping URL becomes the HTML-escaped
``ping_url`` of the reader's first monitor (lowest id) in their current project,
when they are signed in and may see ping URLs there (member or above: a ping
changes the monitor), and the HTML-escaped example base URL becomes the
HTML-escaped ``CRONRADAR_BASE_URL``. Nothing else is put into a page: no monitor
names or other text a person typed.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.http import FileResponse, Http404
from django.shortcuts import render as render_template
from django.urls import reverse
from django.utils.html import escape
from django.utils.safestring import mark_safe
from markdown_it import MarkdownIt
from markdown_it.rules_core import StateCore
from markdown_it.token import Token
from mdit_py_plugins.anchors import anchors_plugin

from accounts import tenancy
from accounts.models import Membership
from cronradar.dashboard.common import current_project, person_zone
from monitors.models import Monitor

ROOT = Path(settings.BASE_DIR).resolve()
DOCS = ROOT / "docs"
SCREENSHOTS = DOCS / "screenshots"
README = ROOT / "README.md"
README_PAGE = "readme"  # the README's page name (docs/ has no page of that name)
EXAMPLE_BASE_URL = "https://cronradar.example.com"
EXAMPLE_PING_URL = f"{EXAMPLE_BASE_URL}/ping/UUID"
NAME = re.compile(r"[a-z0-9][a-z0-9-]*")


class NoSuchPage(LookupError):
    """No page of that name (the view answers 404)."""


@dataclass(frozen=True)
class Page:
    """A rendered page: ``name`` (its URL name), ``title`` (its first heading as plain
    text, else the name) and ``html`` (the body, before :func:`substitute`)."""

    name: str
    title: str
    html: str


def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading whose text (without Markdown: inline code's
    content, a link's text) is ``text``: lowercased, every character that is not a
    letter, mark, digit, connector (``_``), hyphen or space removed, then each space
    made a hyphen. ``"`cronradar exec`: the job wrapper"`` →
    ``"cronradar-exec-the-job-wrapper"``. Repeats are numbered by the renderer."""
    kept = (c for c in text.strip().lower()
            if c in "- " or unicodedata.category(c)[0] in "LMN" or unicodedata.category(c) == "Pc")
    return "".join(kept).replace(" ", "-")


def markdown() -> MarkdownIt:
    """The parser every page is rendered with (CommonMark, tables, no raw HTML,
    GitHub's heading ids on every level, links rewritten by :func:`web_href` for the
    file named by ``env["source"]``, a :class:`~pathlib.Path`)."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table")
    anchors_plugin(md, min_level=1, max_level=6, slug_func=github_slug)
    md.core.ruler.push("cronradar_links", _rewrite_links)
    return md


def sources() -> dict[str, Path]:
    """Page name → Markdown file: ``docs/<name>.md`` for each name :data:`NAME`
    allows, and :data:`README_PAGE` → ``README.md``."""
    found = {p.stem: p for p in sorted(DOCS.glob("*.md"))
             if NAME.fullmatch(p.stem) and p.is_file()}
    found.setdefault(README_PAGE, README)
    return found


def page_url(name: str) -> str:
    """The dashboard URL of page ``name``: ``/docs/`` for ``index``, else
    ``/docs/<name>/``."""
    if name == "index":
        return reverse("dashboard:docs")
    return reverse("dashboard:docs_page", args=[name])


def web_href(href: str, source: Path) -> str | None:
    """Where a link ``href`` written in the Markdown file ``source`` points in the
    dashboard: unchanged when absolute (a scheme, a host or a leading ``/``) or only
    an ``#anchor``; a page's URL (:func:`page_url`) with the anchor kept for a link
    to a page's file; ``/docs/screenshots/<file>.png`` for a screenshot; None (no
    link: the text stays) for anything else, as a source file of the repository."""
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith("/") or not parts.path:
        return href
    anchor = f"#{parts.fragment}" if parts.fragment else ""
    target = (source.parent / unquote(parts.path)).resolve()
    for name, path in sources().items():
        if target == path.resolve():
            return page_url(name) + anchor
    if (target.parent == SCREENSHOTS.resolve() and target.suffix == ".png"
            and NAME.fullmatch(target.stem) and target.is_file()):
        return reverse("dashboard:docs_screenshot", args=[target.stem])
    return None


def _rewrite_links(state: StateCore) -> None:
    """Core rule: each link's ``href`` and image's ``src`` through :func:`web_href`;
    a link that goes nowhere keeps its text, an image that does its alt text."""
    source = state.env.get("source")
    if source is None:
        return
    for block in state.tokens:
        if block.type != "inline" or not block.children:
            continue
        children: list[Token] = []
        dropping = False  # inside a link dropped (links do not nest in CommonMark)
        for token in block.children:
            if token.type == "link_open":
                href = web_href(str(token.attrGet("href") or ""), source)
                if href is None:
                    dropping = True
                    continue
                token.attrSet("href", href)
            elif token.type == "link_close" and dropping:
                dropping = False
                continue
            elif token.type == "image":
                src = web_href(str(token.attrGet("src") or ""), source)
                if src is None:
                    children.append(Token("text", "", 0, content=token.content))
                    continue
                token.attrSet("src", src)
            children.append(token)
        block.children = children


def render(name: str) -> Page:
    """Page ``name`` rendered (see the module docstring). Raises :class:`NoSuchPage`
    for a name that is not one of :func:`sources`."""
    path = sources().get(name)
    if path is None:
        raise NoSuchPage(name)
    try:
        modified = path.stat().st_mtime_ns
    except FileNotFoundError as e:  # removed since it was listed
        raise NoSuchPage(name) from e
    return _render(name, str(path), modified)


@functools.lru_cache(maxsize=64)
def _render(name: str, path: str, modified: int) -> Page:
    source = Path(path)
    text = source.read_text(encoding="utf-8")
    md = markdown()
    env = {"source": source}
    tokens = md.parse(text, env)
    title = next((_plain(tokens[i + 1]) for i, t in enumerate(tokens)
                  if t.type == "heading_open"), name)
    return Page(name=name, title=title, html=md.renderer.render(tokens, md.options, env))


def _plain(inline: Token) -> str:
    return "".join(c.content for c in inline.children or () if c.type in ("text", "code_inline"))


def substitute(html: str, base_url: str, ping_url: str | None = None) -> str:
    """``html`` (a rendered page) with the reader's URLs: each HTML-escaped
    :data:`EXAMPLE_PING_URL` replaced by the HTML-escaped ``ping_url`` (when given),
    then each HTML-escaped :data:`EXAMPLE_BASE_URL` left by the HTML-escaped
    ``base_url``. One pass over the text, the ping URL tried first at each
    position, so a replacement is never replaced again."""
    swaps = {}
    if ping_url:
        swaps[str(escape(EXAMPLE_PING_URL))] = str(escape(ping_url))
    swaps[str(escape(EXAMPLE_BASE_URL))] = str(escape(base_url))
    pattern = re.compile("|".join(re.escape(example) for example in swaps))
    return pattern.sub(lambda m: swaps[m.group(0)], html)


def reader_ping_url(request) -> str | None:
    """The ping URL the examples show a signed-in reader: their first monitor's
    (lowest id, not deleted) in their current project, when they may see ping URLs
    there (member or above); else None. Sets ``request.project`` and
    ``request.role`` for the navigation."""
    if not request.user.is_authenticated:
        return None
    request.project = current_project(request)
    if request.project is None:
        return None
    request.role = tenancy.caller(request).role(request.project)
    if not tenancy.at_least(request.role, Membership.Role.MEMBER):
        return None
    monitor = (Monitor.objects.filter(project=request.project, deleted_at__isnull=True)
               .order_by("pk").first())
    return monitor.ping_url if monitor else None


def docs_page(request, name: str = "index"):
    """``GET /docs/`` and ``/docs/<name>/``: the page, with the reader's URLs; 404
    for an unknown name."""
    try:
        page = render(name)
    except NoSuchPage:
        raise Http404 from None
    ping_url = reader_ping_url(request)
    if request.user.is_authenticated:
        request.zone = person_zone(request)
    return render_template(request, "dashboard/docs.html", {
        "page": page, "index_url": page_url("index"), "nav": "docs",
        # the page is rendered from docs/ and the URLs put in are escaped
        "body": mark_safe(substitute(page.html, settings.CRONRADAR_BASE_URL, ping_url))})


def screenshot(request, name: str):
    """``GET /docs/screenshots/<name>.png``: a screenshot the pages show; 404 for a
    name that is not a file there."""
    if not NAME.fullmatch(name):
        raise Http404
    path = SCREENSHOTS / f"{name}.png"
    if not path.is_file():
        raise Http404
    return FileResponse(path.open("rb"), content_type="image/png")
