"""`mpijob platform render`: offline, to stdout or `-o DIR`, and bad options refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import yaml
from mpijob.api import platform
from mpijob.cli.exitcodes import Exit
from mpijob.cli.main import app
from typer.testing import CliRunner


def run(*args: str, home: Path) -> tuple[int, str, str]:
    # no server, no kubeconfig: the command must not need either
    r = CliRunner().invoke(app, ["platform", "render", *args], env={"MPIJOB_HOME": str(home), "KUBECONFIG": None})
    return r.exit_code, r.stdout, r.stderr


def test_stdout_is_one_multi_document_yaml_of_the_whole_bundle(tmp_path: Path) -> None:
    code, out, err = run("--team", "ml", "--team", "vision:cv", "--gpu-type", "a100", "--net-bind-service",
                         home=tmp_path)
    assert code == 0, err
    docs = list(yaml.safe_load_all(out))
    expected = platform.render(platform.build(teams=["ml", "vision:cv"], gpu_types=["a100"], net_bind_service=True))
    assert docs == expected
    assert [d["metadata"]["name"] for d in docs if d["kind"] == "ClusterQueue"] == ["ml", "vision"]
    (scc,) = [d for d in docs if d["kind"] == "SecurityContextConstraints"]
    assert scc["allowedCapabilities"] == ["NET_BIND_SERVICE"]
    assert not (tmp_path / "kubeconfig").exists()  # no local cluster was started


def test_output_dir_gets_one_file_per_group_and_says_what_it_wrote(tmp_path: Path) -> None:
    target = tmp_path / "bundle" / "nested"
    code, out, err = run("-o", str(target), "--quota", "team-a=cpu:16,memory:64Gi", home=tmp_path)
    assert code == 0, err
    assert sorted(p.name for p in target.iterdir()) == list(platform.FILES)
    groups = platform.groups(platform.build(quotas=["team-a=cpu:16,memory:64Gi"]))
    for name, objects in groups.items():
        assert list(yaml.safe_load_all((target / name).read_text())) == objects
        assert f"wrote {target / name} ({len(objects)} objects" in out
    (cq,) = [o for o in groups["20-kueue.yaml"] if o["kind"] == "ClusterQueue"]
    assert cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0] == {"name": "cpu", "nominalQuota": "16"}
    assert f"kubectl apply -f {target}" in out


def test_bad_options_exit_3_naming_option_value_and_fix_and_write_nothing(tmp_path: Path) -> None:
    target = tmp_path / "out"
    cases = [
        (["--quota", "nobody=cpu:4"], "--quota 'nobody=cpu:4' team 'nobody' is not one of the teams"),
        (["--gpu-type", "A100"], "--gpu-type 'A100'"),
        (["--ssh-port", "22"], "--ssh-port 22 sshd runs as a non-root user"),
        (["--image", "LAM=lam:7"], "--image 'LAM=lam:7' must be IMPLEMENTATION=IMAGE"),
        (["--team", "a_b"], "--team 'a_b'"),
    ]
    for args, said in cases:
        code, out, err = run(*args, "-o", str(target), home=tmp_path)
        assert code == Exit.INVALID, (args, err)
        assert said in err and "; " in err, err  # the problem, then the fix
        assert out == "" and not target.exists()


def test_output_dir_that_is_a_file_is_refused(tmp_path: Path) -> None:
    file = tmp_path / "bundle.yaml"
    file.write_text("keep me\n")
    code, _, err = run("-o", str(file), home=tmp_path)
    assert code == Exit.INVALID and "--output-dir" in err and "is a file" in err
    assert file.read_text() == "keep me\n"
