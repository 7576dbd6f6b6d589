"""The README's editable install leaves a package that a user's type checker can see.

The install is redone into a throwaway environment (no network: no
dependencies, no build isolation), a two-file user project is checked with
``mypy --strict`` against that environment, and mypy must both accept the
correct use of rxvoice and reject a wrong one (so it really read rxvoice's
types rather than giving up on the import).
"""

from __future__ import annotations

import os
import subprocess
import sys
import venv
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

GOOD = """\
from rxvoice import LLMContext, pipeline
from rxvoice.aggregators import Pair
from rxvoice.testing import ScriptedLLM

context = LLMContext(messages=[{"role": "system", "content": "Be brief."}])
pair = Pair(context)
voice = pipeline(pair.user(), ScriptedLLM(["Hello!"]), pair.assistant())
count: int = len(context.messages)
"""

BAD = """\
from rxvoice import LLMContext

wrong: int = LLMContext()
"""


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "MYPYPATH")}
    env.update(PIP_NO_INPUT="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    return env


def test_mypy_strict_in_a_user_project_sees_the_editable_install(tmp_path: Path) -> None:
    """`pip install -e .` then `mypy --strict` in another folder: rxvoice's types are found and used."""
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--no-build-isolation",
         "--ignore-installed",  # never touch the running environment's own install
         "--prefix", str(env_dir), "-e", str(REPO)],
        capture_output=True, text=True, env=_clean_env(), timeout=300,
    )
    assert install.returncode == 0, install.stderr
    # The environment running this test still has its own rxvoice (pip must not have uninstalled it).
    still = subprocess.run([sys.executable, "-c", "import rxvoice"], cwd=tmp_path, capture_output=True, text=True,
                           env=_clean_env(), timeout=60)
    assert still.returncode == 0, still.stderr
    site = next(env_dir.glob("lib/python3*/site-packages"))
    hooks = sorted(p.name for p in site.glob("__editable__*finder.py"))
    assert hooks == [], f"the editable install uses an import hook, which type checkers cannot follow: {hooks}"

    project = tmp_path / "project"
    project.mkdir()
    (project / "app.py").write_text(GOOD)
    (project / "bad.py").write_text(BAD)
    python = env_dir / "bin" / "python"
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--python-executable", str(python),
         "--cache-dir", str(tmp_path / "mypy-cache"), "app.py", "bad.py"],
        cwd=project, capture_output=True, text=True, env=_clean_env(), timeout=600,
    )
    report = checked.stdout + checked.stderr
    assert "Cannot find implementation or library stub" not in report, report
    assert "missing library stubs or py.typed" not in report, report
    errors = [line for line in checked.stdout.splitlines() if ": error:" in line]
    assert len(errors) == 1 and errors[0].startswith("bad.py:3:"), report
    assert '"LLMContext"' in errors[0] and "[assignment]" in errors[0], report
