"""OutputSkips: which outputs a task's replay leaves out after its production handler dropped them."""

from __future__ import annotations

from streams.output_skips import OutputSkips


def test_each_entry_leaves_out_one_occurrence_of_that_exact_output() -> None:
    skips = OutputSkips()
    assert not skips
    skips.add("out", b"k", b"big")
    skips.add("out", b"k", b"big")
    assert len(skips) == 2
    assert not skips.take("other", b"k", b"big")  # topic, key and value must all match
    assert not skips.take("out", b"k2", b"big")
    assert not skips.take("out", b"k", b"bi")
    assert not skips.take("out", None, b"kbig")  # parts are length-prefixed: no run-together collisions
    assert skips.take("out", b"k", b"big") and skips.take("out", b"k", b"big")
    assert not skips.take("out", b"k", b"big") and not skips


def test_a_replay_that_fails_again_gives_its_entries_back_and_a_commit_uses_them_up() -> None:
    skips = OutputSkips()
    skips.add("out", b"k", b"big")
    assert skips.take("out", b"k", b"big")
    skips.rolled_back()  # the replay failed on another refused output: it starts over from the same commit
    assert len(skips) == 1 and skips.take("out", b"k", b"big")
    skips.committed()
    skips.rolled_back()  # a later failure rolls back to the newer commit: the output is not met again
    assert not skips and not skips.take("out", b"k", b"big")
    skips.add("out", None, None)
    assert skips.take("out", None, None)


def test_replays_that_meet_none_of_their_outputs_to_leave_out_are_counted_until_one_does() -> None:
    skips = OutputSkips()
    skips.rolled_back()  # the first failure: nothing was to be left out yet
    assert skips.futile_replays == 0
    skips.add("out", b"k", b"big-1")
    skips.rolled_back()  # the replay met a different output and failed on it
    skips.add("out", b"k", b"big-2")
    skips.rolled_back()
    assert skips.futile_replays == 2
    assert skips.take("out", b"k", b"big-1")
    skips.rolled_back()  # this replay met one of them: it reproduces its outputs
    assert skips.futile_replays == 0
    skips.rolled_back()
    assert skips.futile_replays == 1
    skips.committed()
    assert skips.futile_replays == 0
