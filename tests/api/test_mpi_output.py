"""Open MPI's output tags read into ranks: what the launcher's log keeps, and who asked for tags."""

from __future__ import annotations

from mpijob.api.mpi_output import LauncherOutput, asks_for_tags


def test_tags_are_removed_and_each_ranks_line_rejoined() -> None:
    out = LauncherOutput(keep_tags=False)
    # rank 0's line arrives in two pieces, with rank 1's whole line between them
    assert out.feed("[1,0]<stdout>:pi ~= 3.1[1,1]<stdout>:rank 1 done") == [(1, "rank 1 done")]
    assert out.feed("[1,0]<stdout>:41") == [(0, "pi ~= 3.141")]
    assert out.feed("mpirun: all done") == [(None, "mpirun: all done")]
    assert out.feed("[1,2]<stdout>:no newline at exit[1,3]<stderr>:err") == [(3, "err")]
    assert out.flush() == [(2, "no newline at exit")]  # not lost


def test_tags_the_user_asked_for_are_kept() -> None:
    out = LauncherOutput(keep_tags=True)
    assert out.feed("[1,0]<stdout>:a[1,1]<stdout>:b") == [(1, "[1,1]<stdout>:b")]
    assert out.feed("[1,0]<stdout>:c") == [(0, "[1,0]<stdout>:ac")]


def test_who_asked_for_tags() -> None:
    assert asks_for_tags(["mpirun", "--tag-output", "python", "x.py"], {})
    assert asks_for_tags(["mpirun", "-tag-output", "hostname"], {})
    assert asks_for_tags(["bash", "-c", "mpirun --output tag hostname"], {})  # Open MPI 5, in a shell string
    assert asks_for_tags(["mpirun", "--output=tag,timestamp", "hostname"], {})
    assert asks_for_tags(["mpirun", "hostname"], {"OMPI_MCA_orte_tag_output": "1"})
    assert not asks_for_tags(["mpirun", "hostname"], {"OMPI_MCA_orte_tag_output": "0"})
    assert not asks_for_tags(["mpirun", "python", "--no-tag-output-here.py"], {})
    assert not asks_for_tags(["mpirun", "--output-filename", "/tmp/out", "hostname"], {})
