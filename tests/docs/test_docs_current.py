"""docs/cli.md and docs/sdk.md are generated from the code (tools/gen_docs.py) and must be current:
a change to a command, an option or an SDK docstring without regenerating fails here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from support import load_tool

REPO = Path(__file__).resolve().parents[2]
FIX = "run .venv/bin/python tools/gen_docs.py"


def _load_generator() -> ModuleType:
    return load_tool("gen_docs")


gen = _load_generator()


@pytest.fixture(scope="module")
def rendered() -> dict[Path, str]:
    return gen.render_all()


def test_committed_docs_equal_a_fresh_rendering(rendered: dict[Path, str]) -> None:
    for path, text in rendered.items():
        name = path.relative_to(REPO)
        assert path.is_file(), f"{name} is missing: {FIX}"
        assert path.read_text(encoding="utf-8") == text, f"{name} is stale: {FIX}"


def test_rendering_ignores_the_terminal_width_and_the_environment(
        rendered: dict[Path, str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("COLUMNS", "40")
    monkeypatch.setenv("TERMINAL_WIDTH", "40")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    monkeypatch.setenv("MPIJOB_HOME", str(tmp_path / "mpijob"))
    assert gen.render_all() == rendered


def test_cli_reference_covers_every_command_and_option(rendered: dict[Path, str]) -> None:
    import typer.main
    from mpijob.cli.main import app

    text = rendered[gen.DOCS / "cli.md"]
    root = typer.main.get_command(app)
    ctx = gen._context(root, "mpijob", None)
    stack = [(["mpijob"], root, ctx)]
    seen = 0
    while stack:
        path, cmd, c = stack.pop()
        assert f"`{' '.join(path)}`" in text, path
        assert cmd.get_usage(c).strip() in text, path
        for param in cmd.get_params(c):
            record = param.get_help_record(c)
            if record is not None:
                assert f"| `{record[0]}` |" in text, (path, record)
        for name, sub in gen._subcommands(cmd, c):
            stack.append(([*path, name], sub, gen._context(sub, name, c)))
        seen += 1
    assert seen >= 10  # the tree was really walked: kubeconfig, create, get, ..., server start/stop
    assert "-o, --output" in text and "mpijob server start" in text
    assert "8 server unavailable" in text  # the exit-code contract of `mpijob --help`


def test_sdk_reference_documents_the_public_classes(rendered: dict[Path, str]) -> None:
    text = rendered[gen.DOCS / "sdk.md"]
    sections = gen._sdk_sections()
    assert sections, "mpijob.sdk exists in this repository"
    for _module, objects in sections:
        for name, obj in objects:
            assert f"`{name}`" in text, name
            doc = gen._clean(obj.__doc__)
            if doc:
                assert doc in text, name
    assert "class TrainJob(" in text and "num_nodes: int" in text  # signatures, annotations unquoted
    assert " at 0x" not in text


def test_sdk_reference_without_an_sdk_package_says_so(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "mpijob.sdk", None)  # importing it now raises ModuleNotFoundError
    text = gen.render_sdk()
    assert "does not exist in this version" in text and text.startswith(gen.HEADER)


def test_check_reports_stale_files_and_writing_fixes_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(gen, "DOCS", tmp_path / "docs")
    assert gen.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "cli.md is stale: " + FIX in err and "sdk.md is stale" in err

    assert gen.main([]) == 0
    assert (tmp_path / "docs" / "cli.md").read_text(encoding="utf-8").startswith(gen.HEADER)
    assert gen.main(["--check"]) == 0

    (tmp_path / "docs" / "sdk.md").write_text("edited by hand\n", encoding="utf-8")
    assert gen.main(["--check"]) == 1
    err = capsys.readouterr().err
    assert "sdk.md is stale" in err and "cli.md" not in err
    assert gen.main(["--bogus"]) == 2


def test_generator_is_one_command_and_agrees_with_the_committed_files() -> None:
    result = subprocess.run([sys.executable, str(REPO / "tools" / "gen_docs.py"), "--check"],
                            check=False, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr or FIX
