"""Open MPI's output tags read into ranks: what the launcher's log keeps, and who asked for tags."""

from __future__ import annotations

from mpijob.api.mpi_output import LauncherOutput, asks_for_tags


def test_tags_are_removed_and_each_ranks_line_rejoined() -> None:
    out = LauncherOutput(keep_tags=False)
    # each line as the log stores it: `<rank> <text>`, `-` for a line no rank wrote
    assert out.feed(b"[1,12]<stdout>:step 1 loss=0.5") == [b"12 step 1 loss=0.5"]
    # rank 0's line arrives in two pieces, with rank 1's whole line between them
    assert out.feed(b"[1,0]<stdout>:pi ~= 3.1[1,1]<stdout>:rank 1 done") == [b"1 rank 1 done"]
    assert out.feed(b"[1,2]<stdout>:rank 2 meanwhile") == [b"2 rank 2 meanwhile"]
    assert out.feed(b"[1,0]<stdout>:41") == [b"0 pi ~= 3.141"]
    assert out.feed(b"mpirun: all done") == [b"- mpirun: all done"]
    assert out.feed(b"mpirun: then [1,4]<stdout>:rank 4") == [b"- mpirun: then ", b"4 rank 4"]
    assert out.feed(b"[1,2]<stdout>:no newline at exit[1,3]<stderr>:err") == [b"3 err"]
    assert out.flush() == [b"2 no newline at exit"]  # not lost


def test_tags_the_user_asked_for_are_kept() -> None:
    out = LauncherOutput(keep_tags=True)
    assert out.feed(b"[1,5]<stderr>:whole") == [b"5 [1,5]<stderr>:whole"]
    assert out.feed(b"[1,0]<stdout>:a[1,1]<stdout>:b") == [b"1 [1,1]<stdout>:b"]
    assert out.feed(b"[1,0]<stdout>:c") == [b"0 [1,0]<stdout>:ac"]


def test_who_asked_for_tags() -> None:
    assert asks_for_tags(["mpirun", "--tag-output", "python", "x.py"], {})
    assert asks_for_tags(["mpirun", "-tag-output", "hostname"], {})
    assert asks_for_tags(["bash", "-c", "mpirun --output tag hostname"], {})  # Open MPI 5, in a shell string
    assert asks_for_tags(["mpirun", "--output=tag,timestamp", "hostname"], {})
    assert asks_for_tags(["mpirun", "hostname"], {"OMPI_MCA_orte_tag_output": "1"})
    assert not asks_for_tags(["mpirun", "hostname"], {"OMPI_MCA_orte_tag_output": "0"})
    assert not asks_for_tags(["mpirun", "python", "--no-tag-output-here.py"], {})
    assert not asks_for_tags(["mpirun", "--output-filename", "/tmp/out", "hostname"], {})
