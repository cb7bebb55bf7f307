"""The course's website (scripts/build_site.py, Jupyter Book 1) as a reader sees it in Chromium: every lesson page
opens from disk with its executed outputs (device maps, plots with their alt text, explained errors, quizzes as
text), and axe-core finds no serious or critical WCAG 2.2 AA barrier in its article, in light and dark.

The site is built once per session (a few minutes: every lesson runs), or read from ``$COURSE_SITE_HTML``, a
folder holding a build already made. Skipped where the site's requirements (requirements-site.txt) are missing.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import a11y
from nbtools import ROOT, load, notebook_paths, source

pytestmark = pytest.mark.browser

LESSONS = notebook_paths()
#: The lesson's article: the course's content, without the theme's navigation and buttons.
ARTICLE = "main article"
#: A device map (cu.show_devices, and the one an explained error draws).
DEVICE_MAP = f"{ARTICLE} .cell_output .course-device-map"
#: A plot from cu.show_figure: an image with its text alternative.
FIGURE = f"{ARTICLE} .cell_output figure img[src^='data:image/png']"
#: The explanation the course's extension puts under a device error's traceback.
EXPLAINED = f"{ARTICLE} .cell_output .course-error-help"
TRACEBACK = f"{ARTICLE} .cell_output .output.traceback"
HUB = "https://hub.example.edu"


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The built site's folder: $COURSE_SITE_HTML, or a fresh build (with a JupyterHub launch button)."""
    given = os.environ.get("COURSE_SITE_HTML")
    if given:
        if not (Path(given) / "index.html").exists():
            pytest.fail(f"COURSE_SITE_HTML={given} holds no index.html: build the site first", pytrace=False)
        return Path(given).resolve()
    pytest.importorskip("jupyter_book", reason="the website's requirements are not installed: "
                                               "pip install -r requirements-site.txt")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "build_site.py"), "--hub", HUB],
                          capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, f"the site's build failed:\n{done.stdout[-6000:]}\n{done.stderr[-6000:]}"
    return ROOT / "site" / "_build" / "html"


def lesson_page(site: Path, lesson: Path) -> str:
    return (site / "notebooks" / f"{lesson.stem}.html").as_uri()


def code_of(lesson: Path) -> list[dict]:
    return [c for c in load(lesson)["cells"] if c["cell_type"] == "code"]


def test_the_notebooks_are_not_changed_by_the_build(site):
    """The build executes copies: the lessons in notebooks/ stay without outputs."""
    for lesson in LESSONS:
        assert all(not c.get("outputs") and c.get("execution_count") is None for c in code_of(lesson)), lesson.name


def test_the_home_page_has_the_syllabus_and_links_to_every_lesson(site, page):
    page.goto((site / "index.html").as_uri())
    assert page.locator(f"{ARTICLE} h2", has_text="Syllabus").count() == 1
    for lesson in LESSONS:
        assert page.locator(f"{ARTICLE} a[href*='notebooks/{lesson.stem}.html']").count() >= 1, lesson.name
    footer = page.locator(".extra_footer").inner_text()
    assert "MIT License" in footer and "CC BY 4.0" in footer, footer


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_a_lesson_page_shows_its_outputs(site, page, lesson):
    """What a learner sees after running the lesson: the outputs its code cells ask for."""
    cells = [source(c) for c in code_of(lesson)]
    page.goto(lesson_page(site, lesson))
    assert page.locator(f"{ARTICLE} h1").count() == 1
    assert page.locator(f"{ARTICLE} .cell_output").count() > 0, "no outputs: the lesson was not executed"
    if any("show_devices(" in c for c in cells):
        assert page.locator(DEVICE_MAP).count() >= 1, "no device map"
        assert page.locator(f"{DEVICE_MAP} svg[role='img'] title").count() >= 1
    figures = sum(c.count("show_figure(") for c in cells)
    if figures:
        alts = page.locator(FIGURE).evaluate_all("imgs => imgs.map(i => i.alt)")
        assert len(alts) >= figures and all(len(a.strip()) > 20 for a in alts), alts
    # a cell tagged raises-exception may not raise on every machine (lesson 07's pin_memory on the simulated GPU)
    raising = sum("raises-exception" in c.get("metadata", {}).get("tags", []) for c in code_of(lesson))
    tracebacks = page.locator(TRACEBACK).count()
    assert tracebacks <= raising, "a traceback in a cell that is not tagged raises-exception"
    if tracebacks:
        assert page.locator(EXPLAINED).count() >= 1, "no explained error"
        assert "Fix:" in page.locator(EXPLAINED).first.inner_text()


@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_a_lessons_quizzes_read_as_text(site, page, lesson):
    """Without a kernel a quiz shows its question and lettered options, not an empty widget, its Markdown
    rendered (code as code, no backticks)."""
    quizzes = [q for c in code_of(lesson) for q in re.findall(r"""cu\.quiz\(["']([^"']+)["']""", source(c))]
    page.goto(lesson_page(site, lesson))
    assert page.locator("script[type='application/vnd.jupyter.widget-view+json']").count() == 0
    for quiz in quizzes:
        shown = page.locator(f"{ARTICLE} .cell_output .course-quiz", has_text=f"({quiz})")
        assert shown.count() == 1, f"quiz {quiz} is not on the page as text"
        assert shown.locator("ol[type='a'] > li").count() >= 2, shown.inner_html()
        assert "`" not in shown.text_content(), f"raw Markdown in quiz {quiz}: {shown.text_content()}"


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("lesson", LESSONS, ids=lambda p: p.stem)
def test_a_lesson_page_has_no_serious_barrier(site, page, lesson, scheme):
    page.emulate_media(color_scheme=scheme)
    page.goto(lesson_page(site, lesson))
    assert page.locator("html").get_attribute("data-theme") == scheme
    found = a11y.blocking(a11y.audit(page, {"include": [[ARTICLE]]}))
    assert found == [], "\n".join(map(str, found))


def test_the_launch_buttons_open_the_lesson_on_colab_binder_and_a_hub(site, page):
    from course_utils.classroom.links import course_address

    repo, branch = course_address(ROOT / "pyproject.toml")
    owner_repo = repo.removeprefix("https://github.com/")
    lesson = LESSONS[0]
    page.goto(lesson_page(site, lesson))
    hrefs = page.locator("a[href]").evaluate_all("links => links.map(a => a.href)")
    path = f"notebooks/{lesson.name}"
    assert f"https://colab.research.google.com/github/{owner_repo}/blob/{branch}/{path}" in hrefs, hrefs
    assert any(h.startswith(f"https://mybinder.org/v2/gh/{owner_repo}/{branch}") and lesson.name in h
               for h in hrefs), hrefs
    hub = [h for h in hrefs if "git-pull" in h]
    if not os.environ.get("COURSE_SITE_HTML") or hub:
        assert hub and hub[0].startswith(HUB) and lesson.name in hub[0], hrefs


def test_the_licenses_have_pages_linked_from_every_footer(site, page):
    for lesson in LESSONS:
        page.goto(lesson_page(site, lesson))
        for link in page.locator(".extra_footer a[href$='.html']").evaluate_all("links => links.map(a => a.href)"):
            assert Path(link.removeprefix("file://")).exists(), (lesson.name, link)
    page.goto((site / "license-code.html").as_uri())
    assert "MIT License" in page.locator(ARTICLE).inner_text()
    page.goto((site / "LICENSE-CONTENT.html").as_uri())
    assert "Attribution 4.0 International" in page.locator(ARTICLE).inner_text()


def _pages(site: Path) -> list[Path]:
    """Every page of the site (not the theme's templates under ``_static``)."""
    return sorted(p for p in site.rglob("*.html") if "_static" not in p.relative_to(site).parts)


def test_every_internal_link_resolves(site):
    """Each link to a page of the site (a lesson's "Learn more" in a cell's output included) reaches a file, and its
    anchor an id on that page."""
    from urllib.parse import unquote

    ids = {page: set(re.findall(r"""\bid=["']([^"']+)["']""", page.read_text(encoding="utf-8")))
           for page in _pages(site)}
    broken = []
    for page in ids:
        for href in re.findall(r"""href=["']([^"']*)["']""", page.read_text(encoding="utf-8")):
            if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:|//", href):
                continue   # another site
            target, _, anchor = href.partition("#")
            path = (page.parent / unquote(target.partition("?")[0])).resolve() if target else page
            if not path.exists() or (anchor and path in ids and unquote(anchor) not in ids[path]):
                broken.append(f"{page.relative_to(site)}: {href}")
    assert broken == [], broken


def test_no_page_scrolls_sideways_at_320_px(site, page):
    """WCAG 2.2 AA reflow (1.4.10): at 320 CSS pixels wide, wide outputs, code and tables scroll in their own boxes."""
    page.set_viewport_size({"width": 320, "height": 640})
    wide = []
    for path in _pages(site):
        page.goto(path.as_uri())
        width = page.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]")
        if width[0] > width[1] + 1:
            wide.append(f"{path.relative_to(site)}: {width[0]} px for {width[1]}")
    assert wide == [], wide


def test_pages_carry_no_widget_state_and_link_only_addresses(site):
    """The widgets' state an executed notebook holds is not sent to readers (the site draws no widget), and a file
    name that looks like an address (``MPSFallback.mm``) stays text."""
    for path in _pages(site):
        text = path.read_text(encoding="utf-8")
        assert "widget-state+json" not in text, path
        assert not re.search(r"<a [^>]*>[\w/]+\.mm</a>", text), path   # an Objective-C++ file of PyTorch's


def test_the_build_fails_on_an_error_in_a_cell_not_tagged_raises_exception(tmp_path):
    """With the site's own settings, a cell tagged ``raises-exception`` may raise; any other error fails the build."""
    pytest.importorskip("jupyter_book", reason="the website's requirements are not installed: "
                                               "pip install -r requirements-site.txt")
    import importlib.util

    import nbformat
    import yaml

    spec = importlib.util.spec_from_file_location("build_site", ROOT / "scripts" / "build_site.py")
    build_site = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(build_site)
    book = tmp_path / "book"
    build_site.shutil.copytree(ROOT / "site", book, ignore=build_site.shutil.ignore_patterns("_build", "*.md"))
    (book / "_toc.yml").write_text("format: jb-book\nroot: index\nchapters:\n  - file: lesson\n")
    (book / "index.md").write_text("# Home\n")
    config = yaml.safe_load((book / "_config.yml").read_text())
    config["repository"]["url"] = "https://github.com/example/course"
    (book / "_config.yml").write_text(yaml.safe_dump(config))
    on_purpose = nbformat.v4.new_code_cell("1 / 0", metadata={"tags": ["raises-exception"]})
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell("# A lesson"), on_purpose],
                                  metadata={"kernelspec": {"name": "python3", "display_name": "Python 3"}})
    nbformat.write(nb, book / "lesson.ipynb")
    assert build_site.build(book, tmp_path / "ok") == 0
    assert "ZeroDivisionError" in (tmp_path / "ok" / "_build" / "html" / "lesson.html").read_text()
    nb.cells.append(nbformat.v4.new_code_cell("undefined_name"))
    nbformat.write(nb, book / "lesson.ipynb")
    assert build_site.build(book, tmp_path / "broken") != 0
