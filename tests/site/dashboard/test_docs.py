"""The manual: every relative link in README.md and docs/*.md reaches a file of the
repository and every ``#anchor`` a heading of its target (GitHub's anchors; nothing
is fetched), the README stays short, and /docs/ serves every page with the
reader's URLs in its examples and nothing else of theirs."""
import re
from datetime import timedelta
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Membership
from cronradar.dashboard import docs
from monitors.models import Monitor
from tests.conftest import new_project
from tests.live import ROOT

MARKDOWN = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
UNUSUAL = "https://radar-7f3.corp.test:8443/cron&co"  # a port, a path, a character to escape


def tokens(path: Path):
    return docs.markdown().parse(path.read_text(encoding="utf-8"))  # no env: links as written


def heading_ids(path: Path) -> set[str]:
    return {str(t.attrGet("id")) for t in tokens(path) if t.type == "heading_open"}


def links(path: Path) -> list[tuple[str, int]]:
    """(href or image src, line) of every link and image, code blocks left out."""
    found = []
    for block in tokens(path):
        for t in block.children or ():
            if t.type in ("link_open", "image"):
                found.append((str(t.attrGet("href" if t.type == "link_open" else "src")),
                              block.map[0] + 1))
    return found


def test_every_relative_link_reaches_a_file_and_every_anchor_a_heading():
    problems, files, anchors, sources = [], 0, 0, 0
    for path in MARKDOWN:
        for href, line in links(path):
            parts = urlsplit(href)
            if parts.scheme or parts.netloc:
                continue  # another site: not fetched
            where = f"{path.relative_to(ROOT)}:{line}: {href}"
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if not target.is_relative_to(ROOT) or not target.exists():
                problems.append(f"{where}: no such file")
                continue
            files += 1
            sources += not target.is_relative_to(ROOT / "docs") and target != ROOT / "README.md"
            if parts.fragment:
                anchors += 1
                if target.suffix != ".md":
                    problems.append(f"{where}: an anchor into a file that is not Markdown")
                elif parts.fragment not in heading_ids(target):
                    problems.append(f"{where}: no heading #{parts.fragment} in "
                                    f"{target.relative_to(ROOT)}")
    assert problems == []
    # it looked at real links: the README's and index's lists, pages' cross-links,
    # and the files outside docs/ that production.md links to (bench/, docker/)
    assert files > 80 and anchors > 20 and sources >= 4


def test_the_link_check_knows_a_broken_link(tmp_path):
    """The helpers the link test uses see a link and tell a missing heading."""
    page = tmp_path / "page.md"
    page.write_text("# Real heading\n\nSee [there](other.md#gone) and `[not](a.md)`.\n\n"
                    "```\n[neither](b.md)\n```\n")
    assert links(page) == [("other.md#gone", 3)]
    assert heading_ids(page) == {"real-heading"}


@pytest.mark.parametrize("heading, anchor", [
    ("`cronradar exec`: the job wrapper", "cronradar-exec-the-job-wrapper"),
    ("Organisations, people and keys", "organisations-people-and-keys"),
    ("Scale: the five targets of the \"Scale\" issue, where they stand (2026-11-30)",
     "scale-the-five-targets-of-the-scale-issue-where-they-stand-2026-11-30"),
    ("evaluator_tick.py: a tick costs O(monitors due)",
     "evaluator_tickpy-a-tick-costs-omonitors-due"),
    ("A → B", "a--b"),
    ("→ next", "-next"),
    ("Über Größe", "über-größe"),
])
def test_heading_ids_are_githubs_anchors(heading, anchor):
    assert docs.github_slug(heading) == anchor
    assert f'<h2 id="{anchor}">' in docs.markdown().render(f"## {heading}\n")


def test_repeated_headings_are_numbered_as_github_numbers_them():
    html = docs.markdown().render("# Run\n\n## Run\n\n### Run\n")
    assert re.findall(r'id="([^"]+)"', html) == ["run", "run-1", "run-2"]


def test_the_readme_is_short_and_keeps_the_two_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= 300
    assert "scripts/serve            # set up and start the service" in readme
    assert "scripts/test             # set up and run the test suite" in readme


def test_the_index_lists_every_page():
    listed = {unquote(urlsplit(href).path) for href, _ in links(ROOT / "docs" / "index.md")
              if not urlsplit(href).path.startswith("..")}
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"index.md"}
    assert pages <= listed and len(pages) >= 13


def test_rendered_links_land_on_served_pages_and_headings():
    pages = {name: docs.render(name).html for name in docs.sources()}
    seen = 0
    for name, html in pages.items():
        for href in re.findall(r'href="(/docs/[^"]*)"', html):
            path, _, anchor = href.partition("#")
            target = "index" if path == "/docs/" else path.removeprefix("/docs/").strip("/")
            assert target in pages, f"{name}: {href}"
            if anchor:
                seen += 1
                assert f'id="{anchor}"' in pages[target], f"{name}: {href}"
    assert seen > 20
    # a link to a source file keeps its text and loses its link
    production = pages["production"]
    assert "<code>docker/compose.yaml</code>" in production
    assert 'href="../docker' not in production and "compose.yaml\"" not in production
    assert '<img src="/docs/screenshots/monitors.png" alt="The monitors list"' in pages["dashboard"]


def test_substitution_puts_the_ping_url_first_and_never_twice():
    html = ('<code>https://cronradar.example.com/ping/UUID/start</code> '
            '<a href="https://cronradar.example.com/cli/x">https://cronradar.example.com</a>')
    out = docs.substitute(html, "https://cronradar.example.com/sub",
                          "https://cronradar.example.com/sub/ping/abc")
    assert out == ('<code>https://cronradar.example.com/sub/ping/abc/start</code> '
                   '<a href="https://cronradar.example.com/sub/cli/x">'
                   'https://cronradar.example.com/sub</a>')
    assert docs.substitute(html, "http://a.test/<b>") == (
        '<code>http://a.test/&lt;b&gt;/ping/UUID/start</code> '
        '<a href="http://a.test/&lt;b&gt;/cli/x">http://a.test/&lt;b&gt;</a>')


def test_a_page_name_is_only_looked_up():
    for name in ["../settings", "..", "index.md", "Index", "screenshots", "../README"]:
        with pytest.raises(docs.NoSuchPage):
            docs.render(name)


# --- /docs/ in the dashboard ----------------------------------------------------------

def member_client(project, role="member") -> Client:
    user = get_user_model().objects.create_user(role, f"{role}@example.com", "pw")
    Membership.objects.create(organisation=project.organisation, user=user, role=role)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.django_db
def test_every_page_is_served_without_signing_in(client):
    names = sorted(docs.sources())
    assert {"index", "pinging", "schedules", "how-it-works", "readme"} <= set(names)
    for name in names:
        resp = client.get(docs.page_url(name))
        assert resp.status_code == 200, name
        title = docs.render(name).title
        assert f"<title>{title} · CronRadar</title>" in resp.content.decode(), name
    def page(path):  # each answer's script nonce is its own
        return re.sub(rb' nonce="[^"]+"', b"", client.get(path).content)

    assert page("/docs/") == page("/docs/index/")


@pytest.mark.django_db
def test_the_examples_carry_the_readers_base_url(client, settings):
    settings.CRONRADAR_BASE_URL = UNUSUAL
    page = client.get("/docs/pinging/").content.decode()
    assert "cronradar.example.com" not in page
    assert ('"https://radar-7f3.corp.test:8443/cron&amp;co/ping/UUID/start?rid=$RID"'
            in page.replace("&quot;", '"'))
    assert "curl -fsSo /usr/local/bin/cronradar https://radar-7f3.corp.test:8443/cron&amp;co" \
           "/cli/cronradar_exec.py" in page
    assert "cron&co" not in page  # only ever escaped


@pytest.mark.django_db
def test_a_member_sees_a_ping_url_of_their_own(project, make_monitor, settings):
    settings.CRONRADAR_BASE_URL = UNUSUAL
    elsewhere = new_project("globex")
    theirs = Monitor.objects.create(project=elsewhere, name="other", slug="other",
                                    kind="interval", period=timedelta(seconds=60),
                                    grace=timedelta(seconds=60))  # a lower id, another tenant's
    first, second = make_monitor(name="backup"), make_monitor(name="report")
    client = member_client(project)
    page = client.get("/docs/pinging/").content.decode()
    own = first.ping_url.replace("&", "&amp;")
    assert f"{own}/start?rid=$RID" in page.replace("&quot;", '"')
    assert f"cronradar exec --url {own} -- /usr/local/bin/backup.sh --full" in page
    assert "/ping/UUID" not in page and "cronradar.example.com" not in page
    assert str(second.uuid) not in page and str(theirs.uuid) not in page
    # the base URL alone is still the base URL
    assert "CRONRADAR_URL=https://radar-7f3.corp.test:8443/cron&amp;co cronradar exec" in page
    assert 'href="/docs/" aria-current="page">Docs</a>' in page  # the navigation's link


@pytest.mark.django_db
def test_a_viewer_and_a_stranger_see_the_example_ping_url(project, make_monitor, settings):
    settings.CRONRADAR_BASE_URL = UNUSUAL
    m = make_monitor(name="backup")
    for client in [member_client(project, "viewer"), Client()]:
        page = client.get("/docs/pinging/").content.decode()
        assert str(m.uuid) not in page  # a ping changes the monitor: not for viewers
        assert "https://radar-7f3.corp.test:8443/cron&amp;co/ping/UUID/start" in page


@pytest.mark.django_db
def test_html_in_a_monitor_name_never_reaches_a_page(project, make_monitor):
    m = make_monitor(name='<img src=x onerror="alert(1)">', slug="evil")
    page = member_client(project).get("/docs/pinging/").content.decode()
    assert str(m.uuid) in page  # the monitor was the one chosen: its URL is there
    assert "onerror" not in page and "<img src=x" not in page and "&lt;img" not in page


@pytest.mark.django_db
@pytest.mark.parametrize("url", [
    "/docs/no-such-page/", "/docs/Index/", "/docs/readme.md/", "/docs/..%2Fsettings/",
    "/docs/..%2F..%2Fcronradar%2Fsettings/", "/docs/%2E%2E/", "/docs/../README.md",
    "/docs/screenshots/nope.png", "/docs/screenshots/..%2F..%2FREADME.png"])
def test_unknown_pages_and_traversal_are_404(client, url):
    resp = client.get(url)
    assert resp.status_code == 404
    assert b"SECRET_KEY" not in resp.content and b"There is nothing here" in resp.content


@pytest.mark.django_db
def test_the_screenshots_are_served(client):
    resp = client.get("/docs/screenshots/monitors.png")
    assert resp.status_code == 200 and resp["Content-Type"] == "image/png"
    assert b"".join(resp.streaming_content).startswith(b"\x89PNG\r\n\x1a\n")


@pytest.mark.django_db
def test_the_docs_link_is_in_every_header(project, client):
    link = re.compile(r'<li><a href="/docs/" *>Docs</a></li>')
    assert link.search(client.get("/login/").content.decode())
    assert link.search(member_client(project).get("/").content.decode())
