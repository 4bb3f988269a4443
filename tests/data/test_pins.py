"""Pinned files: verified by sha256 before use; a missing or altered file is refused."""

from __future__ import annotations

import shutil

import pytest

from memorybench.benchmarks.locomo.pins import LOCOMO10
from memorybench.benchmarks.locomo.pins import PEER_PINS as LOCOMO_PEERS
from memorybench.data import pins
from memorybench.errors import UserError


def test_shared_pins_verify(locomo_path):
    assert pins.pin_path(LOCOMO10) == locomo_path.resolve()
    assert (pins.nltk_data_dir() / "tokenizers" / "punkt_tab" / "english").is_dir()
    assert pins.pin_path(pins.MEM0_ACCURACY_PROMPT).read_text("utf-8").startswith("\n")


def test_missing_pin_says_to_fetch(tmp_path):
    with pytest.raises(UserError, match="missing; run `memorybench fetch`"):
        pins.pin_path(LOCOMO10, tmp_path)


def test_altered_pin_is_refused_with_both_hashes(tmp_path, locomo_path):
    target = tmp_path / LOCOMO10.relpath
    target.parent.mkdir(parents=True)
    data = bytearray(locomo_path.read_bytes())
    data[100] ^= 1
    target.write_bytes(bytes(data))
    with pytest.raises(UserError) as info:
        pins.pin_path(LOCOMO10, tmp_path)
    message = str(info.value)
    assert LOCOMO10.sha256 in message and pins.sha256_bytes(bytes(data)) in message


def test_fetch_verifies_what_is_present_without_network(tmp_path, locomo_path):
    shutil.copytree(locomo_path.parents[1], tmp_path / "pins")
    seen: list[str] = []
    root = pins.fetch_pins(tmp_path / "pins", log=seen.append)
    assert root == (tmp_path / "pins").resolve()
    assert len(seen) == len(pins.ALL_PINS) and all(line.startswith("ok") for line in seen)


def test_fetch_refuses_a_download_with_the_wrong_hash(tmp_path, monkeypatch):
    monkeypatch.setattr(pins, "_download", lambda url: b"not the release")
    monkeypatch.setattr(pins, "ALL_PINS", ())
    with pytest.raises(UserError, match="expected 79fa87e9"):
        pins.fetch_pins(tmp_path, extra=(LOCOMO10,))
    assert not (tmp_path / LOCOMO10.relpath).exists()


def test_accuracy_prompt_is_extracted_from_the_literal():
    source = b'x = 1\nACCURACY_PROMPT = """\nJudge {question}\n"""\n'
    assert pins._extract_accuracy_prompt(source) == b"\nJudge {question}\n"


def test_fetch_from_a_folder_leaves_the_user_cache_complete(tmp_path, locomo_path, monkeypatch, capsys):
    """`MEMORYBENCH_PINS=DIR memorybench fetch` copies the verified files (NLTK's punkt_tab too)
    into the user cache, so later commands work without the variable (issue 30, item 1)."""
    from memorybench.cli import main

    shutil.copytree(locomo_path.parents[1], tmp_path / "pins")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv(pins.PINS_ENV, str(tmp_path / "pins"))
    monkeypatch.setattr(pins, "_verified", set())
    assert main(["fetch"]) == 0
    assert "copied" in capsys.readouterr().out
    monkeypatch.delenv(pins.PINS_ENV)
    assert pins.pins_dir() == tmp_path / "cache" / "memorybench" / "pins"
    from memorybench.benchmark import LOCOMO

    for pin in (*pins.ALL_PINS, *LOCOMO.own_pins()):  # the audit's files come as LoCoMo's own
        assert pins.pin_path(pin).is_relative_to(tmp_path / "cache")
    assert (pins.nltk_data_dir() / "tokenizers" / "punkt_tab" / "english" / "sent_starters.txt").is_file()
    assert main(["fetch"]) == 0  # the cache itself: verified in place, nothing copied
    assert "copied" not in capsys.readouterr().out


def test_peer_pins_match_the_shared_pins_folder():
    """The sha256 pinned in code are those of the files PINS.md lists (issue 30, item 4): every
    benchmark's peers (LoCoMo's Memobase, Zep, Honcho; BEAM's Cognee runs)."""
    from memorybench.benchmark import benchmarks

    peers = [p for b in benchmarks().values() for p in b.own_peer_pins()]
    assert {p.relpath for p in LOCOMO_PEERS} <= {p.relpath for p in peers}
    for pin in peers:
        path = pins.pins_dir() / pin.relpath
        assert pins.sha256_bytes(path.read_bytes()) == pin.sha256, pin.relpath
        assert pin.url.startswith(f"https://raw.githubusercontent.com/{pin.repository}/{pin.commit}/")


def test_fetch_peers_downloads_each_release_at_its_commit_and_checks_its_hash(tmp_path, monkeypatch, capsys):
    """`memorybench fetch --peers`: each peer file from its repository at its commit, refused on a
    wrong hash; the network replaced by the shared pins folder's copies."""
    from memorybench.benchmark import benchmarks
    from memorybench.cli import main

    shared = pins.pins_dir()
    by_url = {pin.url: (shared / pin.relpath).read_bytes() for pin in LOCOMO_PEERS}
    # the benchmarks' own pins (LoCoMo-Plus's files) come with every fetch: whole files, as the peers
    own = {p for b in benchmarks().values() for p in b.own_pins()}
    # and their datasets fetched with the pins (a folder's files: BEAM's 128K tier)
    own |= {
        m
        for b in benchmarks().values()
        for d in b.datasets
        if d.fetched_with_pins
        for m in (d.pinned().members if d.folder else (d.pinned(),))
    } - {LOCOMO10}  # that one is there already
    # a literal pin (LoCoMo's question prompts) is taken out of its source file: gpt_utils.py, downloaded once
    by_url.update({pin.url: (shared / ("locomo/gpt_utils.py" if pin.literal else pin.relpath)).read_bytes() for pin in own})
    # and every other benchmark's peers, with --peers only: Cognee's BEAM runs, its summary and code
    theirs = {p for b in benchmarks().values() for p in b.own_peer_pins()} - set(LOCOMO_PEERS)
    assert len(theirs) >= 4 and all(p.relpath.startswith("peers/cognee-beam/") for p in theirs)
    by_url.update({pin.url: (shared / pin.relpath).read_bytes() for pin in theirs})
    fetched: list[str] = []

    def download(url: str) -> bytes:
        fetched.append(url)
        return by_url[url]

    monkeypatch.setattr(pins, "_download", download)
    monkeypatch.setattr(pins, "ALL_PINS", (LOCOMO10,))
    (tmp_path / "pins" / LOCOMO10.relpath).parent.mkdir(parents=True)
    (tmp_path / "pins" / LOCOMO10.relpath).write_bytes((shared / LOCOMO10.relpath).read_bytes())  # there already
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert main(["fetch", "--peers", "--pins", str(tmp_path / "pins")]) == 0
    assert sorted(fetched) == sorted(by_url)
    assert (
        "https://raw.githubusercontent.com/snap-research/LoCoMo/48aa2206a62ef0f1f98271d5358af666ca234379/"
        "results/honcho/locomo10_qa_stats%20honcho_base.json"
    ) in fetched
    for pin in (*LOCOMO_PEERS, *theirs):
        assert (tmp_path / "pins" / pin.relpath).read_bytes() == by_url[pin.url]
        assert (tmp_path / "cache" / "memorybench" / "pins" / pin.relpath).is_file()
    assert "the peers' released results in" in capsys.readouterr().out
    monkeypatch.setattr(pins, "_download", lambda url: b"[]")
    monkeypatch.setattr(pins, "ALL_PINS", ())
    (tmp_path / "other").mkdir()
    with pytest.raises(UserError, match="has sha256 .* expected 171489e7"):
        pins.fetch_pins(tmp_path / "other", extra=LOCOMO_PEERS)
    assert not list((tmp_path / "other").rglob("*.json"))


def test_plain_fetch_leaves_the_peers_alone(tmp_path, monkeypatch):
    monkeypatch.setattr(pins, "ALL_PINS", ())
    monkeypatch.setattr(pins, "_download", lambda url: pytest.fail(f"downloaded {url}"))
    pins.fetch_pins(tmp_path)
    assert not (tmp_path / "peers").exists()
