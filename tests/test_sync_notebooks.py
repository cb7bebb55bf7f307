"""scripts/sync_notebooks.py: badges and Colab cell come from one address; re-running is safe."""
from __future__ import annotations

import importlib.util
import json

from nbtools import ROOT, load, notebook_paths, source

spec = importlib.util.spec_from_file_location("sync_notebooks", ROOT / "scripts" / "sync_notebooks.py")
sync_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sync_notebooks)


def test_every_notebook_uses_the_configured_address():
    repo, branch = sync_notebooks.settings()
    slug = repo.split("github.com/")[1]
    for path in notebook_paths():
        nb = load(path)
        first, colab = source(nb["cells"][0]), source(nb["cells"][1])
        assert f"colab.research.google.com/github/{slug}/blob/{branch}/notebooks/{path.name}" in first
        assert f"mybinder.org/v2/gh/{slug}/{branch}?urlpath=lab/tree/notebooks/{path.name}" in first
        assert f'git+{repo}@{branch}' in colab and '"google.colab" in sys.modules' in colab
        assert "torch" not in colab.split("%pip", 1)[1] and "ipywidgets" not in colab.split("%pip", 1)[1]


def test_sync_is_idempotent_and_repairs_a_stale_notebook():
    repo, branch = sync_notebooks.settings()
    nb = load(notebook_paths()[0])
    stale = json.loads(json.dumps(nb))
    stale["cells"][0]["source"] = source(stale["cells"][0]).replace(repo.split("github.com/")[1], "old/repo")
    del stale["cells"][1]                                            # the Colab cell went missing
    stale["metadata"]["widgets"] = {"state": {}}
    last_code = next(c for c in reversed(stale["cells"]) if c["cell_type"] == "code")
    last_code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x"}]
    name = notebook_paths()[0].name
    once = sync_notebooks.dumps(sync_notebooks.sync(stale, name, repo, branch))
    twice = sync_notebooks.dumps(sync_notebooks.sync(json.loads(once), name, repo, branch))
    assert once == twice == notebook_paths()[0].read_text(encoding="utf-8")
