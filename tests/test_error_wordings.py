"""Every error message the notebooks quote is in docs/errors.md, and cu.explain_error gives its family.

The quotes are read from the notebooks when the tests run, so a wording a lesson starts to teach is
checked at once: markdown code (inline spans and fenced blocks) that starts with an exception's name
(``RuntimeError: ...``), and the messages that ``raises-exception`` cells declare. A quote may be cut
short (``...`` or ``…``) and may carry a version label in parentheses (``(PyTorch 2.8 and newer)``).
"""
from __future__ import annotations

import re

import pytest

from course_utils.errors import FAMILIES, explain_error
from nbtools import ROOT, load, notebook_paths, raises, source

ERROR_NAME = re.compile(r"^(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception): ")
FENCE = re.compile(r"^ {0,3}```[^\n]*\n(.*?)^ {0,3}```", re.MULTILINE | re.DOTALL)
SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.DOTALL)
ELISION = re.compile(r"…|\.\.\.")
#: a parenthesised note about versions, builds or devices that a lesson may add to a quote
LABEL = re.compile(r"\s*\((?=[^()]*(?:PyTorch|torch|\bversions?\b|\bnewer\b|\bolder\b|\b\d+\.\d+\b))[^()]*\)")


def _flat(text: str) -> str:
    return " ".join(text.split())


def quotes_in(nb: dict) -> list[str]:
    """The error messages a notebook quotes, without the exception's name."""
    found: list[str] = []
    for cell in nb.get("cells", []):
        if cell.get("cell_type") == "markdown":
            text = source(cell)
            for block in FENCE.findall(text):
                found += _messages_in_block(block)
            for _, span in SPAN.findall(FENCE.sub("", text)):
                if ERROR_NAME.match(_flat(span)):
                    found.append(ERROR_NAME.sub("", _flat(span)))
        declared = raises(cell) if "raises-exception" in cell.get("metadata", {}).get("tags", []) else None
        if declared:
            messages = declared.get("message", [])
            found += [m for m in ([messages] if isinstance(messages, str) else messages) if m.strip()]
    return list(dict.fromkeys(found))


def _messages_in_block(block: str) -> list[str]:
    """Each message in a code block: a line that starts with an exception's name, and the lines after it."""
    messages: list[list[str]] = []
    for line in block.splitlines():
        if ERROR_NAME.match(line.strip()):
            messages.append([ERROR_NAME.sub("", line.strip())])
        elif messages and line.strip() and not line.lstrip().startswith("#"):
            messages[-1].append(line.strip())
    return ["\n".join(m) for m in messages]


def _pieces(quote: str) -> list[str]:
    return [p for p in (_flat(piece) for piece in ELISION.split(quote)) if len(p) >= 4]


def _contains(text: str, pieces: list[str]) -> bool:
    """Whether ``text`` holds every piece, in order."""
    at = 0
    for piece in pieces:
        at = text.find(piece, at)
        if at < 0:
            return False
        at += len(piece)
    return bool(pieces)


def catalogue_match(quote: str, texts: list[tuple[str, str]]) -> str | None:
    """The key of the first ``(key, text)`` whose text holds the quote (elisions and version labels allowed)."""
    for candidate in (quote, LABEL.sub("", quote)):
        pieces = _pieces(candidate)
        for key, text in texts:
            if _contains(_flat(text), pieces):
                return key
    return None


CATALOGUE = [(f.key, w.text) for f in FAMILIES for w in f.wordings]
DOCS = _flat((ROOT / "docs" / "errors.md").read_text(encoding="utf-8").replace("\\|", "|"))
QUOTES = [(path.stem, quote) for path in notebook_paths() for quote in quotes_in(load(path))]


@pytest.mark.parametrize("notebook, quote", QUOTES, ids=[f"{nb}:{q[:50]}" for nb, q in QUOTES])
def test_every_quoted_message_is_listed_and_explained(notebook, quote):
    key = catalogue_match(quote, CATALOGUE)
    assert key, f"{notebook} quotes a message that course_utils/errors/catalogue.py does not list: {quote!r}"
    assert catalogue_match(quote, [(key, DOCS)]), f"docs/errors.md is missing {quote!r}: run scripts/error_index.py"
    e = explain_error(quote)
    assert e.known and e.key == key, (quote, e.key)
    assert e.fix and e.lesson


def test_the_notebooks_quote_messages():
    """The collector finds quotes in the real notebooks (an empty list would make the test above pass vacuously)."""
    assert len(QUOTES) >= 20
    assert len({nb for nb, _ in QUOTES}) >= 5


def md(text: str) -> dict:
    return {"cell_type": "markdown", "metadata": {}, "source": text}


def test_the_collector_reads_spans_blocks_and_declared_messages():
    nb = {"cells": [
        md("On a GPU: `RuntimeError: Expected all tensors to be on the same device, but found at least two\n"
           "devices, cuda:0 and cpu!` and ``torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 MiB``;"
           " not code: `x.to(device)`, `RuntimeError`."),
        md("```\nRuntimeError: CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously "
           "reported at some other API call, so the stacktrace below might be incorrect.\n```"),
        {"cell_type": "code", "metadata": {"tags": ["raises-exception"], "course": {"raises": {
            "error": "RuntimeError", "message": ["is not on the expected device", ""]}}}, "source": "", "outputs": []},
        {"cell_type": "code", "metadata": {"course": {"raises": {"error": "E", "message": "untagged: ignored"}}},
         "source": "", "outputs": []},
    ]}
    assert quotes_in(nb) == [
        "Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!",
        "CUDA out of memory. Tried to allocate 2 MiB",
        "CUDA error: invalid device ordinal\nCUDA kernel errors might be asynchronously reported at some other API "
        "call, so the stacktrace below might be incorrect.",
        "is not on the expected device",
    ]


@pytest.mark.parametrize("quote, key", [
    ("Expected all tensors to be on the same device, but got mat1 is on cpu, different from other tensors on cuda:0 "
     "(when checking argument in method wrapper_CUDA_addmm) (PyTorch 2.8 and newer)", "devices"),
    ("Weights only load failed...", "weights-only"),
    ("MPS backend out of memory (MPS allocated: …, other allocations: …). Tried to allocate … on private pool.",
     "mps-oom"),
    ("frobnicated the tensor", None),                                     # not in the catalogue: reported
    ("Expected all tensors to be on the same device (PyTorch 9.9), but found nothing", None),
])
def test_matching_allows_elisions_and_version_labels_and_nothing_else(quote, key):
    assert catalogue_match(quote, CATALOGUE) == key


@pytest.mark.parametrize("quote, key", [
    ("Expected query, key, and value to have the same device type, but got query.device: cuda:0 key.device: cpu and "
     "value.device: cpu instead.", "op-devices"),
    ("torch.searchsorted(): sorter and boundary tensors should have same device type, but got sorter tensor device "
     "type cpu and input value tensor device type cuda:0", "op-devices"),
    ("X1 and X2 must have the same device type. X1: cuda X2: cpu", "op-devices"),
    ("Trying to pass too many CPU scalars to non-CPU kernel!", "cpu-scalars"),
    ("pin_memory=True requires a CUDA or other accelerator backend; no pinned memory allocator is available on this "
     "system.", "no-accelerator"),
    ("Cannot access accelerator device when none is available.", "no-accelerator"),
    ("'pin_memory' argument is set as true but no accelerator is found, then device pinned memory won't be used.",
     "no-accelerator"),
    ("Expected all tensors to be on the same device, but found at least two devices, cuda:1 and cuda:0!", "devices"),
])
def test_gpu_wordings_of_round_3_are_listed_documented_and_explained(quote, key):
    assert catalogue_match(quote, CATALOGUE) == key
    assert catalogue_match(quote, [(key, DOCS)]) == key, "run scripts/error_index.py"
    e = explain_error("RuntimeError: " + quote)
    assert e.known and e.key == key and e.fix and e.lesson
    versions = [w.versions for f in FAMILIES if f.key == key for w in f.wordings if _flat(w.text) == _flat(quote)]
    assert versions and re.search(r"\b2\.\d+\b", versions[0]), "each wording says which versions print it"
