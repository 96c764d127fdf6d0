"""Open MPI's output tags read into ranks: what the launcher's log keeps, and who asked for tags."""

from __future__ import annotations

from pathlib import Path

from mpijob.api.trainer.mpi_output import LauncherOutput, asks_for_tags
from mpijob.store.logfile import LogWriter


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


# -- what reaches the log however the reads cut the stream ----------------------------------------------------

# Open MPI's tagged output as a launcher writes it: rank 0's line cut in three chunks around other ranks',
# a long line of rank 1 in chunks of 4 KiB, bytes that are not UTF-8, mpirun's own line, rank 3 without a
# final newline
def stream(big: bytes) -> tuple[bytes, list[bytes]]:
    """The launcher's tagged output, and the lines the log must store of it (sorted)."""
    cut = b"".join(b"[1,1]<stdout>:" + big[i:i + 4096] for i in range(0, len(big), 4096))
    out = (b"[1,0]<stdout>:step 1 lo[1,1]<stdout>:" + cut + b"[1,2]<stderr>:warn \xff\xfe\n"
           b"[1,0]<stdout>:ss=0.[1,1]<stdout>:\n[1,0]<stdout>:5\nmpirun: a note\n[1,3]<stdout>:no newline at exit")
    return out, sorted([b"0 step 1 loss=0.5", b"1 " + big, b"2 warn \xff\xfe", b"- mpirun: a note",
                        b"3 no newline at exit"])


def _stored(tmp_path: Path, reads: list[bytes]) -> list[bytes]:
    """What LogWriter stores of `reads` (`<rank> <text>` per line, the stamp dropped)."""
    path = tmp_path / "log"
    path.unlink(missing_ok=True)
    writer = LogWriter(path, LauncherOutput(keep_tags=False))
    for chunk in reads:
        writer.write(chunk)
    writer.close()
    return sorted(ln.split(b" ", 1)[1] for ln in path.read_bytes().split(b"\n")[:-1])


def test_a_tag_or_a_line_cut_between_two_reads_is_stored_whole(tmp_path: Path) -> None:
    small, want = stream(b"y" * 5000)  # its line in two chunks
    border = small.index(b"[1,1]<stdout>:", small.index(b"y"))  # where the long line's second chunk starts
    # every place a read can end, the long line's middles aside: inside a tag, a line, a UTF-8 sequence
    cuts = [*range(1, small.index(b"y") + 3), *range(border - 3, border + 17), *range(small.index(b"[1,2]"), len(small))]
    for cut in cuts:
        assert _stored(tmp_path, [small[:cut], small[cut:]]) == want, f"cut at {cut}: {small[cut - 20:cut + 20]!r}"


def test_a_1_mib_line_in_256_chunks_and_small_reads_is_stored_once_and_whole(tmp_path: Path) -> None:
    big, want = stream(b"y" * (1 << 20))
    assert _stored(tmp_path, [big]) == want
    assert _stored(tmp_path, [big[i:i + 4096] for i in range(0, len(big), 4096)]) == want


def test_a_rank_killed_mid_line_keeps_its_partial_line() -> None:
    out = LauncherOutput(keep_tags=False)
    assert out.feed(b"[1,1]<stdout>:epoch 3 lo[1,0]<stdout>:rank 0 still here") == [b"0 rank 0 still here"]
    assert out.flush() == [b"1 epoch 3 lo"]  # the stream ended (rank 1 killed): its partial line is kept
    assert out.flush() == []  # once


def test_hydra_tags_on_every_chunk_are_read_like_open_mpis() -> None:
    out = LauncherOutput(keep_tags=False, hydra=True)
    # Hydra tags each chunk it forwards: rank 3's line in two chunks, rank 0's between them
    assert out.feed(b"[1,3]<stdout>:x[3] = 1, y[1,0]<stdout>:rank 0 done") == [b"0 rank 0 done"]
    assert out.feed(b"[1,3]<stdout>:[2] = 5") == [b"3 x[3] = 1, y[2] = 5"]  # a program's own brackets stay
