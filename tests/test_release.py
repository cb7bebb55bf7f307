"""Releases: one version (course_utils.__version__) that pyproject.toml, CITATION.cff and CHANGELOG.md follow,
the licenses, and launch links that point at a release (python -m course_utils links --ref vX.Y.Z)."""
from __future__ import annotations

import io
import re
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from urllib.parse import parse_qs, urlparse

import pytest

import course_utils
from course_utils.__main__ import main
from course_utils.classroom import links
from nbtools import ROOT, notebook_paths

yaml = pytest.importorskip("yaml")   # PyYAML comes with JupyterLab (jupyter_events)

CFF_REQUIRED = {"cff-version", "message", "title", "authors"}


def run(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as e:   # argparse's --version and usage errors
            code = e.code
    return code, out.getvalue(), err.getvalue()


def citation() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))


def newest_changelog_entry() -> tuple[str, str]:
    """(version, date) of the newest released entry: the first '## [X.Y.Z] - date' heading."""
    match = re.search(r"^## \[(\d+\.\d+\.\d+)\] - (\d{4}-\d\d-\d\d)$", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert match, "CHANGELOG.md has no released entry"
    return match.group(1), match.group(2)


# --- one version ---------------------------------------------------------------------------------------------

def test_the_version_is_set_once_and_pyproject_reads_it():
    text = (ROOT / "pyproject.toml").read_text()
    assert re.fullmatch(r"\d+\.\d+\.\d+", course_utils.__version__)
    assert not re.search(r"^version\s*=", text.split("[tool.", 1)[0], re.M), "no second copy in [project]"
    assert re.search(r'^dynamic = \["version"\]', text, re.M)
    assert 'version = {attr = "course_utils.__version__"}' in text


def test_citation_changelog_and_package_agree_on_the_version():
    version, date = newest_changelog_entry()
    cff = citation()
    assert course_utils.__version__ == version == str(cff["version"])
    assert str(cff["date-released"]) == date


def test_the_changelog_keeps_an_unreleased_heading_above_the_releases():
    text = (ROOT / "CHANGELOG.md").read_text()
    headings = re.findall(r"^## (.+)$", text, re.M)
    assert headings[0] == "[Unreleased]" and headings[-1].startswith("[0.1.0] - ")
    versions = [re.match(r"\[(\d+)\.(\d+)\.(\d+)\]", h).groups() for h in headings[1:]]
    assert [tuple(map(int, v)) for v in versions] == sorted((tuple(map(int, v)) for v in versions), reverse=True)


def test_version_on_the_command_line():
    code, out, _ = run("--version")
    assert code == 0 and out == f'course_utils {course_utils.__version__} ("Where does my tensor live?")\n'
    proc = subprocess.run([sys.executable, "-m", "course_utils", "--version"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stdout.strip() == out.strip()


# --- licenses and citation -------------------------------------------------------------------------------------

def test_citation_is_valid_cff_1_2_0():
    cff = citation()
    assert CFF_REQUIRED <= set(cff) and cff["cff-version"] == "1.2.0" and cff["type"] == "software"
    assert cff["authors"] == [{"name": "The 'Where does my tensor live?' course authors"}]
    assert cff["license"] == ["MIT", "CC-BY-4.0"]
    repo, _ = links.course_address()
    assert cff["repository-code"] == repo
    assert re.fullmatch(r"\d{4}-\d\d-\d\d", str(cff["date-released"]))


def test_both_licenses_exist_and_are_named_where_people_look():
    mit = (ROOT / "LICENSE").read_text()
    assert mit.startswith("MIT License\n\nCopyright (c) 2026 The 'Where does my tensor live?' course authors\n")
    content = (ROOT / "LICENSE-CONTENT.md").read_text()
    assert "Creative Commons Attribution 4.0 International Public License" in content
    assert "Section 8 – Interpretation." in content and "What it covers:" in content
    readme = (ROOT / "README.md").read_text()
    license_section = readme.split("\n## License\n", 1)[1]
    assert "[LICENSE](LICENSE)" in license_section and "[LICENSE-CONTENT.md](LICENSE-CONTENT.md)" in license_section
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert 'license = "MIT AND CC-BY-4.0"' in pyproject
    assert 'license-files = ["LICENSE", "LICENSE-CONTENT.md"]' in pyproject


# --- links to a release ---------------------------------------------------------------------------------------

def urls(out: str) -> list[str]:
    return [line.split()[-1] for line in out.splitlines() if line.startswith("  ")]


def test_colab_and_binder_links_match_the_notebooks_badges():
    repo, branch = links.course_address()
    for path in notebook_paths():
        first_cell = path.read_text(encoding="utf-8")
        assert links.colab_link(repo, branch, path.name) in first_cell
        assert links.binder_link(repo, branch, path.name) in first_cell


def test_links_for_a_release_tag():
    tag = f"v{course_utils.__version__}"
    code, out, err = run("links", "--colab", "--binder", "--ref", tag)
    assert code == 0 and err == ""
    repo, _ = links.course_address()
    slug = repo.split("github.com/", 1)[1]
    names = [p.name for p in notebook_paths()]
    assert urls(out) == [u for name in names for u in (
        f"https://colab.research.google.com/github/{slug}/blob/{tag}/notebooks/{name}",
        f"https://mybinder.org/v2/gh/{slug}/{tag}?urlpath=lab/tree/notebooks/{name}")]
    assert "  Colab:" in out and "  Binder:" in out


def test_links_for_another_release_say_the_installed_package_is_not_that_release():
    code, out, err = run("links", "--colab", "--ref", "v0.1.0")
    assert code == 0 and "/blob/v0.1.0/" in out
    assert f"the course_utils installed here is {course_utils.__version__}" in err and "git checkout v0.1.0" in err


def test_one_kind_prints_bare_links_and_the_default_ref_is_the_branch():
    code, out, _ = run("links", "--colab")
    _, branch = links.course_address()
    assert code == 0 and len(urls(out)) == len(notebook_paths())
    assert all(f"/blob/{branch}/notebooks/" in u for u in urls(out)) and "Colab:" not in out


def test_nbgitpuller_links_use_the_ref_and_say_a_hub_follows_a_branch():
    tag = f"v{course_utils.__version__}"
    code, out, err = run("links", "--hub", "https://hub.example.edu", "--ref", tag)
    assert code == 0 and len(urls(out)) == len(notebook_paths())
    assert all(parse_qs(urlparse(u).query)["branch"] == [tag] for u in urls(out))
    assert "a tag does not have" in err, "the note goes to stderr, so the links can still be piped"
    code, out, err = run("links", "--hub", "https://hub.example.edu", "--ref", "fall-2026")
    assert code == 0 and err == "" and "branch=fall-2026" in out


def test_all_three_kinds_together_in_order():
    code, out, _ = run("links", "--binder", "--hub", "https://hub.example.edu", "--colab", "--app", "notebook")
    lesson = out.split("\n02 ", 1)[0].splitlines()
    assert code == 0 and [line.split(":", 1)[0].strip() for line in lesson[1:]] == ["JupyterHub", "Colab", "Binder"]
    assert lesson[3].endswith("?urlpath=notebooks/notebooks/01_tensors.ipynb")


def test_branch_still_names_the_ref():
    code, out, _ = run("links", "--colab", "--branch", "v0.1.0")
    assert code == 0 and all("/blob/v0.1.0/" in u for u in urls(out))


@pytest.mark.parametrize("args, message", [
    ((), "Say which links"),
    (("--colab", "--repo", "https://git.example.edu/org/course"), "need a repository on GitHub"),
    (("--binder", "--repo", "https://github.com/org"), "need a repository on GitHub"),
])
def test_bad_options_exit_2(args, message):
    code, out, err = run("links", *args)
    assert code == 2 and out == "" and message in err


def test_refs_with_odd_characters_are_encoded_for_binder():
    assert links.binder_link("https://github.com/org/course.git", "feature/x", "01_tensors.ipynb") == (
        "https://mybinder.org/v2/gh/org/course/feature%2Fx?urlpath=lab/tree/notebooks/01_tensors.ipynb")
    assert links.colab_link("https://github.com/org/course", "feature/x", "01_tensors.ipynb") == (
        "https://colab.research.google.com/github/org/course/blob/feature/x/notebooks/01_tensors.ipynb")
