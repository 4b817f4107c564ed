"""`report --html FILE [--days N]`: one self-contained page, a grid of occurrences coloured by
outcome (SPEC §14) - on a week of real history, through the CLI, and drawn by a real browser."""

from __future__ import annotations

import html.parser
import os
import re
import stat
import struct
import subprocess
import sys
import tracemalloc
import zlib
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

import pytest

from specdojo_routine.app import report, report_page
from specdojo_routine.core import event_parts, routine_events
from specdojo_routine.store.config import resolve_project
from specdojo_routine.store.ledger import journal
from tests import viewhelper
from tests.conftest import REPO, Project, copy_source
from tests.ledgergen import write_ledger
from tests.weekhistory import AFTER, Week, write_project

CHROMIUM = "/usr/bin/chromium"


class _Tags(html.parser.HTMLParser):
    """Every element, checked for balance (void elements excepted)."""

    VOID: ClassVar[frozenset[str]] = frozenset({"meta", "br", "link", "img", "input", "hr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.open: list[str] = []
        self.cells: list[dict[str, str | None]] = []
        self.rows: list[str] = []
        self.doctype = ""
        self.mismatched: list[str] = []

    def handle_decl(self, decl: str) -> None:
        self.doctype = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        if "data-outcome" in found:
            self.cells.append(found)
        if tag == "tr" and found.get("data-routine"):
            self.rows.append(str(found["data-routine"]))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open.pop() != tag:
            self.mismatched.append(tag)


def _parse(text: str) -> _Tags:
    tags = _Tags()
    tags.feed(text)
    tags.close()
    return tags


def test_the_week_report_is_one_valid_self_contained_page(week: Week, tmp_path: Path) -> None:
    """Written where asked (exit 0, one line), balanced HTML with a row per routine and one
    cell per occurrence, coloured by outcome, hover details in the title; no URL, no
    script, no external asset; the next runs and the Job Runs with evidence paths."""
    target = tmp_path / "week.html"
    done = week.cli("report", "--html", str(target), "--days", "10", "--now", AFTER)
    assert (0, f"wrote {target}: 4 routine(s), 32 occurrence(s) in 10 day(s)\n", "") == (
        done.returncode, done.stdout, done.stderr)
    text = target.read_text(encoding="utf-8")
    tags = _parse(text)
    assert ("DOCTYPE html", [], []) == (tags.doctype, tags.open, tags.mismatched)
    assert ["rtn-cleanup", "rtn-nightly-export", "rtn-sync", "rtn-weekly-report"] == tags.rows
    grid = {rid: re.findall(r'data-outcome="(\w+)"', body) for rid, body in re.findall(
        r'<tr data-routine="([^"]+)"(.*?)</tr>', text, re.S)}
    assert {"rtn-cleanup": ["failure"] * 8, "rtn-nightly-export": ["failure"] * 8,
            "rtn-sync": ["success"] * 15, "rtn-weekly-report": ["success"]} == grid
    weekly = next(c for c in tags.cells if "JBR-report-" in str(c.get("title")))
    assert ("cell o-success late", True, True) == (
        weekly["class"], "scheduled: 2026-08-07 08:00 UTC (2026-08-07 17:00 JST)"
        in str(weekly["title"]), "late by: 4h 0m" in str(weekly["title"]))
    failed = next(c for c in tags.cells if "JBR-export-" in str(c.get("title")))
    assert all(part in str(failed["title"]) for part in (
        "result: failure", "reason: action 1 (job): command exited with code 3",
        "attempt: att-", "job runs: JBR-export-"))
    lowered = text.lower()
    assert [] == [bad for bad in ("http:", "https:", "//", "<script", "<link", "src=",
                                  "@import", "url(") if bad in lowered.replace("<!doctype", "")]
    assert all(part in text for part in (
        "<td>in 11h</td>", "2026-08-14 17:00 JST",  # the next runs, in UTC and local time
        "execution/exec/evidence/JBR-export-",  # a Job Run's evidence path
        "execution/exec/evidence/routines/att-",  # a delegated call's own
    ))
    assert report.check_target(target) is None  # written in place, a file


def test_untrusted_text_is_escaped(week_copy: Week, tmp_path: Path) -> None:
    """A runner that died mid-attempt is an `interrupted` cell; once resolved, the note (the
    attempt's reason) and a routine name with markup are shown as text: no element of theirs
    reaches the page."""
    rid = "rtn-sync"
    path = week_copy.root / "routines" / "rtn-cleanup.yaml"
    path.write_text(path.read_text() + 'name: "<img src=x onerror=alert(1)>"\n')
    common = {"routine_id": rid, "attempt_id": "att-dead-runner"}
    journal.Ledger(week_copy.ledger).append_many([  # a runner that died mid-action
        routine_events.AttemptStarted(
            **common, transition="T-06", trigger="due", scheduled_for="2026-08-09T20:00:00.000Z",
            last_run="2026-08-09T20:00:00Z", passed_over_since=None,
            owner=event_parts.Owner(pid=999_999, host="elsewhere"), schedule="interval"),
        routine_events.ActionStarted(**common, index=1, kind="specdojo")])
    target = tmp_path / "r.html"
    before = week_copy.cli("report", "--html", str(target), "--now", AFTER)
    open_cells = [c for c in _parse(target.read_text(encoding="utf-8")).cells
                  if "att-dead-runner" in str(c.get("title"))]
    assert (0, ["interrupted"]) == (before.returncode, [c["data-outcome"] for c in open_cells])
    hostile = "<script>alert('x')</script> & \"done\""
    resolved = week_copy.cli("resolve", rid, "--result", "failure", "--note", hostile,
                             "--by", "carol")
    assert 0 == resolved.returncode, resolved.stderr
    done = week_copy.cli("report", "--html", str(target), "--now", AFTER)
    text = target.read_text(encoding="utf-8")
    tags = _parse(text)
    dead = [c for c in tags.cells if "att-dead-runner" in str(c.get("title"))]
    assert (0, 1, "failure", [], []) == (
        done.returncode, len(dead), dead[0]["data-outcome"], tags.open, tags.mismatched)
    # the note, as the browser reads it, worded as status and history word an override
    assert f"result: failure\nreason: resolved by carol: {hostile}\n" in str(dead[0]["title"])
    assert ("<script" not in text and "<img" not in text
            and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;done&quot;" in text
            and "&lt;img src=x onerror=alert(1)&gt;" in text)


def test_the_environments_secret_values_never_reach_the_page(project: Project,
                                                            tmp_path: Path) -> None:
    """A secret value of the environment written into a definition (a routine's name, an
    argument) is `[REDACTED]` on the page, as on the console - also where the page escapes
    it (`&` in the value) - and the page stays balanced HTML."""
    plain, marked = "hunter2secret", "pa&ss<w0rd>"
    project.routine("rtn-sec", f"name: Sec {plain} {marked}\ninterval: 1h\n"
                               f"action: {{kind: specdojo, args: [index, {plain}]}}\n")
    env = project.env(MY_PASSWORD=plain, OTHER_TOKEN=marked)
    assert 0 == project.cli("run", "--due", env=env).returncode
    target = tmp_path / "r.html"
    done = project.cli("report", "--html", str(target), env=env)
    text = target.read_text(encoding="utf-8")
    tags = _parse(text)
    assert (0, [], []) == (done.returncode, tags.open, tags.mismatched)
    assert '<div class="name">Sec [REDACTED] [REDACTED]</div>' in text
    assert [] == [s for s in (plain, marked, "pa&amp;ss&lt;w0rd&gt;") if s in text]


def test_a_secret_that_is_an_everyday_word_leaves_the_pages_markup_alone(
    project: Project, tmp_path: Path,
) -> None:
    """Secrets whose values are the words the page draws by (`success`, `legend`): the data
    that quotes them is redacted, the class names, `data-outcome`, the CSS rules and the
    state badge are not, so the cells keep their colours."""
    project.routine("rtn-w", "name: nightly success check\ninterval: 1h\n"
                             "action: {kind: specdojo, args: [index]}\n")
    env = project.env(MY_SECRET="success", MY_TOKEN="legend")
    assert 0 == project.cli("run", "--due", env=env).returncode
    target = tmp_path / "r.html"
    assert 0 == project.cli("report", "--html", str(target), env=env).returncode
    text = target.read_text(encoding="utf-8")
    assert '<div class="name">nightly [REDACTED] check</div>' in text
    assert ('class="cell o-success" data-outcome="success"' in text
            and ".o-success{background:#2e7d32}" in text and '<ul class="legend">' in text
            and ".legend{display:flex" in text and '#2e7d32">success</span>' in text), text
    cells = [c for c in _parse(text).cells if c.get("data-outcome") == "success"]
    assert 1 == len(cells) and "result: [REDACTED]" in str(cells[0]["title"])


def test_a_missing_directory_is_refused_and_a_link_is_replaced(week: Week,
                                                              tmp_path: Path) -> None:
    """FILE in a missing directory: one line, exit 2, nothing created; FILE a symlink: the link
    is replaced by the report, the file it pointed to is untouched; --days out of range: 2."""
    missing = tmp_path / "nowhere" / "r.html"
    refused = week.cli("report", "--html", str(missing), "--now", AFTER)
    assert (2, "", 1, False) == (refused.returncode, refused.stdout,
                                 len(refused.stderr.splitlines()), missing.parent.exists())
    assert refused.stderr.startswith(f"error: {missing}: the directory ")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    link = tmp_path / "link.html"
    link.symlink_to(victim)
    done = week.cli("report", "--html", str(link), "--days", "2", "--now", AFTER)
    assert (0, "keep me\n", False) == (done.returncode, victim.read_text(), link.is_symlink())
    assert link.read_text().startswith("<!DOCTYPE html>")
    assert [] == [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    too_many = week.cli("report", "--html", str(tmp_path / "x.html"), "--days", "400")
    assert (2, False) == (too_many.returncode, (tmp_path / "x.html").exists())


def test_a_fifo_named_as_the_report_is_refused_not_replaced(project: Project,
                                                          tmp_path: Path) -> None:
    """FILE a FIFO (or a device, as /dev/null would be): one line, exit 2, and the node is
    still there - the report is moved into place, which put a regular file where it was."""
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    done = project.cli("report", "--html", str(fifo), timeout=60)
    assert (2, [f"error: {fifo} is not a regular file (a FIFO); name a file to write the "
                "report to"], True) == (done.returncode, done.stderr.splitlines(),
                                        stat.S_ISFIFO(fifo.lstat().st_mode))


def test_an_outcome_without_a_colour_is_drawn_neutral_and_named_in_the_legend() -> None:
    """A kind of occurrence this module does not know (a newer event) gets the neutral colour
    and its own legend entry, so it shows without a code change."""
    from datetime import UTC, datetime

    at = datetime(2026, 8, 9, 12, 0, tzinfo=UTC)
    cells = report._event_cells({"type": "occurrence_frozen", "routine_id": "rtn-a",
                                 "scheduled_for": "2026-08-09T12:00:00.000Z",
                                 "reason": "frozen by <ops>"}, None)
    row = report_page.Row(routine_id="rtn-a", name=None, schedule="every 1h", state="frozen",
                          unhealthy=False, timezone="UTC", cells=tuple(cells))
    text = report_page.page(report_page.Report(project_id="p", now=at, days=(at.date(),),
                                               rows=(row,), upcoming=(), evidence=(),
                                               problems=()))
    assert ('class="cell o-other" data-outcome="frozen"' in text,
            '<span class="cell o-other"></span>frozen</li>' in text,
            "frozen by &lt;ops&gt;" in text) == (True, True, True)


# --- in a real browser ---------------------------------------------------------------------------


def _chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}", "--window-size=1200,800",
         *args], capture_output=True, text=True, timeout=120,
        env={**os.environ, "HOME": str(tmp_path)})


def _pixels(png: bytes) -> set[tuple[int, int, int]]:
    """The distinct RGB colours of an 8-bit RGB or RGBA, non-interlaced PNG (stdlib only)."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, []
    while pos < len(png):
        (size,) = struct.unpack(">I", png[pos:pos + 4])
        chunks.append((png[pos + 4:pos + 8], png[pos + 8:pos + 8 + size]))
        pos += size + 12
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (8, 0) == (depth, interlace) and colour in (2, 6)
    bpp = 3 if colour == 2 else 4
    raw = zlib.decompress(b"".join(data for kind, data in chunks if kind == b"IDAT"))
    stride = width * bpp
    previous = bytearray(stride)
    found: set[tuple[int, int, int]] = set()
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], bytearray(raw[start + 1:start + 1 + stride])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, previous, strict=True))
        elif kind == 3:
            for i in range(stride):
                left = line[i - bpp] if i >= bpp else 0
                line[i] = (line[i] + (left + previous[i]) // 2) & 255
        elif kind == 4:
            for i in range(stride):
                a = line[i - bpp] if i >= bpp else 0
                b, c = previous[i], previous[i - bpp] if i >= bpp else 0
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        found.update(zip(line[0::bpp], line[1::bpp], line[2::bpp], strict=True))
        previous = line
    return found


def _rgb(colour: str) -> tuple[int, int, int]:
    return int(colour[1:3], 16), int(colour[3:5], 16), int(colour[5:7], 16)


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                    reason=f"no headless browser: {CHROMIUM} is not installed (apt-get install "
                           "chromium); the page is not drawn")
def test_a_real_browser_draws_the_grid(week: Week, tmp_path: Path) -> None:
    """Headless Chromium renders the page: the cells are in its DOM with their titles, and its
    screenshot shows more than one of the legend's colours (the grid is drawn)."""
    target = tmp_path / "week.html"
    assert 0 == week.cli("report", "--html", str(target), "--days", "10", "--now",
                         AFTER).returncode
    shot = tmp_path / "shot.png"
    drawn = _chromium(tmp_path, f"--screenshot={shot}", target.as_uri())
    assert shot.is_file(), drawn.stderr
    dom = _chromium(tmp_path, "--dump-dom", target.as_uri())
    tags = _parse(dom.stdout)
    titled = [c for c in tags.cells if "scheduled: 2026-08-" in str(c.get("title"))]
    assert (32, ["rtn-cleanup", "rtn-nightly-export", "rtn-sync", "rtn-weekly-report"]) == (
        len(titled), tags.rows), dom.stderr
    colours = _pixels(shot.read_bytes())
    shown = {name for name, colour, _ in report_page.OUTCOMES if _rgb(colour) in colours}
    assert {"success", "failure"} <= shown, shown


@pytest.mark.skipif(not os.access(CHROMIUM, os.X_OK),
                    reason=f"no headless browser: {CHROMIUM} is not installed")
def test_a_long_name_without_spaces_wraps_inside_the_window(
    project: Project, tmp_path: Path,
) -> None:
    """A routine name of 3000 characters and no space wraps in its cell: in Chromium at
    1200 px the page is no wider than the window, so the state and every day stay on screen
    (a probe script, added to a copy of the page only, measures the layout)."""
    project.routine("rtn-long", f"name: {'x' * 3000}\ninterval: 1h\n"
                                "action: {kind: specdojo, args: [index]}\n")
    assert 0 == project.cli("run", "--due").returncode
    target = tmp_path / "r.html"
    assert 0 == project.cli("report", "--html", str(target)).returncode
    probe = tmp_path / "probe.html"
    probe.write_text(target.read_text(encoding="utf-8").replace("</body>", (
        "<script>document.body.setAttribute('data-fits', String("
        "document.documentElement.scrollWidth <= window.innerWidth))</script></body>")),
        encoding="utf-8")
    dom = _chromium(tmp_path, "--dump-dom", probe.as_uri())
    assert 'data-fits="true"' in dom.stdout, (dom.stderr, dom.stdout[:300])


def test_coalesced_occurrences_are_drawn_and_a_held_lock_does_not_block(tmp_path: Path) -> None:
    """On the demo, four days without a run: `rtn-nightly` runs the newest occurrence and its
    three passed-over ones are `coalesced` cells naming the attempt; the report is written
    while another process holds the routine lock (it takes none a run waits for)."""
    root = tmp_path / "demo"
    copy_source(REPO / "fixtures" / "demo", root)
    for at in ("2026-08-03T03:00:00Z", "2026-08-07T03:00:00Z"):
        assert 0 == viewhelper.cli(root, "run", "--due", "--now", at).returncode
    holder = subprocess.Popen(
        [sys.executable, str(REPO / "tests" / "lockhelper.py"), "routine-hold",
         str(root / "routines" / ".locks")], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        text=True)
    try:
        assert "held" == holder.stdout.readline().strip()  # type: ignore[union-attr]
        done = viewhelper.cli(root, "report", "--html", str(root / "r.html"), "--days", "7",
                              "--now", "2026-08-07T04:00:00Z")
    finally:
        holder.stdin.close()  # type: ignore[union-attr]
        holder.wait(timeout=30)
    assert 0 == done.returncode, done.stderr
    text = (root / "r.html").read_text(encoding="utf-8")
    nightly = re.search(r'<tr data-routine="rtn-nightly">(.*?)</tr>', text, re.S)
    assert nightly is not None
    cells = [c for c in _parse(nightly.group(1)).cells]
    assert ["skipped", "coalesced", "coalesced", "coalesced", "skipped"] == [
        c["data-outcome"] for c in cells]
    assert all("ran as one with 2026-08-07T02:30:00.000Z: att-" in str(c["title"])
               for c in cells[1:4])


def test_a_crowded_day_draws_its_failures_and_counts_the_rest() -> None:
    """Past the cells a day can hold, the non-successes are drawn first and the others are
    one `+N` whose title counts them by outcome."""
    from datetime import UTC, datetime, timedelta

    start = datetime(2026, 8, 9, tzinfo=UTC)
    cells = [report_page.Cell(scheduled_for=start + timedelta(minutes=5 * n),
                              outcome="failure" if n in (3, 100) else "success")
             for n in range(report_page.MAX_PER_DAY + 100)]
    text = report_page._day_cells(cells)
    drawn = re.findall(r'data-outcome="(\w+)"', text)
    assert (report_page.MAX_PER_DAY - 1, 2, "101 more: 101 success") == (
        len(drawn), drawn.count("failure"), re.findall(r'class="more" title="([^"]+)"',
                                                       text)[0])


def test_an_occurrence_tried_twice_is_one_cell_with_its_last_outcome() -> None:
    """A held occurrence that a release ran, then retried, is one cell: the last attempt's
    outcome, the others named in its details."""
    from datetime import UTC, datetime

    at = datetime(2026, 8, 9, 2, 0, tzinfo=UTC)
    tried = [report_page.Cell(scheduled_for=at, outcome=outcome, from_attempt=True,
                              details=(("attempt", attempt),))
             for outcome, attempt in (("failure", "att-1"), ("success", "att-2"))]
    held = report_page.Cell(scheduled_for=at, outcome="held")
    row = report._row("rtn-a", None, "cron", "success", False, [*tried, held],
                      datetime(2026, 8, 1, tzinfo=UTC), datetime(2026, 8, 10, tzinfo=UTC))
    assert [("success", (("attempt", "att-2"), ("before", "failure (att-1); held")))] == [
        (c.outcome, c.details) for c in row.cells]


def test_missed_held_and_paused_occurrences_have_their_own_colours_over_14_days(
    tmp_path: Path,
) -> None:
    """Without `--days` the page covers 14 days; an occurrence past its starting deadline, one
    held after a failure and one of a paused routine are cells of their own outcome, each
    drawn in its own colour that the legend names (SPEC §14)."""
    from tests.conftest import Project

    project = Project(tmp_path / "proj")
    project.routine("rtn-late", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        policy: {starting_deadline: 1m}
        action: {kind: specdojo, args: [late]}
        """)
    project.routine("rtn-hold", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        policy: {on_failure: hold}
        action: {kind: specdojo, args: [hold]}
        """)
    project.routine("rtn-rest", """\
        trigger: {cron: "0 * * * *", timezone: UTC}
        action: {kind: specdojo, args: [rest]}
        """)
    project.exit_codes({"hold": 1})
    project.cli("run", "--due", "--now", "2026-05-01T10:00:10Z")
    assert 0 == project.cli("pause", "rtn-rest", "--note", "maintenance").returncode
    project.cli("run", "--due", "--now", "2026-05-01T11:05:00Z")
    target = tmp_path / "page.html"
    done = project.cli("report", "--html", str(target), "--now", "2026-05-01T12:00:00Z")
    assert 0 == done.returncode, done.stderr
    assert done.stdout.endswith(" in 14 day(s)\n"), done.stdout
    text = target.read_text(encoding="utf-8")
    assert 14 == text.count('<th class="day')  # one column a day
    grid = {rid: re.findall(r'data-outcome="(\w+)"', body) for rid, body in re.findall(
        r'<tr data-routine="([^"]+)"(.*?)</tr>', text, re.S)}
    assert {"rtn-hold": ["failure", "held"], "rtn-late": ["success", "missed"],
            "rtn-rest": ["success", "paused"]} == grid
    spec = ("success", "failure", "skipped", "missed", "held", "paused", "interrupted",
            "coalesced")
    colours = {name: re.search(rf"\.o-{name}\{{background:(#[0-9a-f]{{6}})", text)
               for name in spec}
    assert all(colours.values()), colours
    assert len(spec) == len({found.group(1) for found in colours.values() if found})
    for name in spec:  # each in the legend, drawn in its own class
        assert f'<span class="cell o-{name}"></span>{name}</li>' in text
    upcoming = {rid: note for rid, note in re.findall(
        r'<tr><td class="id">([^<]+)</td>.*?<td>([^<]*)</td></tr>',
        text.split('<table class="next">')[1].split("</table>")[0])}
    assert {"rtn-hold": "held: recorded as held, not run, until `release rtn-hold`",
            "rtn-late": "",
            "rtn-rest": "paused: recorded as paused, not run, until `resume rtn-rest`"} == \
        upcoming  # as the agenda of `next` notes them


def test_the_window_is_folded_as_it_is_read_not_held_line_by_line(tmp_path: Path) -> None:
    """A busy window (every event of a 10,000-event ledger falls in it) costs the report the
    attempts it draws, not every line and event of the window kept at once (which took about
    2 KB an event, 2 GB for a million)."""
    week = write_project(tmp_path / "proj")
    events = 10_000
    write_ledger(week.ledger, events, ["rtn-sync", "rtn-cleanup"])
    paths = resolve_project(week.root)
    tracemalloc.start()
    try:
        shown = report.collect(paths, now=datetime(2026, 8, 10, tzinfo=UTC))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert {"rtn-sync", "rtn-cleanup"} <= {r.routine_id for r in shown.rows if r.cells}
    assert peak / events < 1200
