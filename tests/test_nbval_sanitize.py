"""The nbval masks hide what changes from run to run and keep what a notebook means."""
from __future__ import annotations

import re
from pathlib import Path

import pytest
from nbval.plugin import get_sanitize_patterns

SANITIZE_FILE = Path(__file__).with_name("nbval_sanitize.cfg")


def sanitize(text: str) -> str:
    # the same reading and order as nbval's IPyNbFile.sanitize
    for regex, replace in get_sanitize_patterns(SANITIZE_FILE.read_text()):
        text = re.sub(regex, replace, text)
    return text


def test_every_rule_is_read_and_compiles():
    patterns = get_sanitize_patterns(SANITIZE_FILE.read_text())
    sections = re.findall(r"^\[(\w+)\]$", SANITIZE_FILE.read_text(), flags=re.MULTILINE)
    assert len(patterns) == len(sections) >= 10
    for regex, _ in patterns:
        re.compile(regex)


@pytest.mark.parametrize(
    "first, second",
    [
        # a tqdm bar redrawn a different number of times, with other counts and speeds
        (
            "train:  10%|█         | 1/10 [00:00<00:01,  9.10it/s]\rtrain: 100%|██████████| 10/10 [00:01<00:00, 9.80it/s, loss=0.12]\n",
            "train: 100%|██████████| 2000/2000 [01:10<00:00, 28.4it/s, loss=0.03]\n",
        ),
        ("37it [00:02, 15.1it/s]\n", "12it [00:00, 40.0it/s]\n"),
        ("CPU times: user 1.2 s, sys: 30 ms, total: 1.3 s\nWall time: 1.4 s", "CPU times: user 9 s, sys: 1 s, total: 10 s\nWall time: 12 s"),
        ("<Model at 0x7f3a2c1b9d90>", "<Model at 0x7f00aa11bb22>"),
        ("stored in /tmp/pytest-of-root/pytest-3/test_x0/data/runs/addition", "stored in /tmp/tmpab12cd/data/runs/addition"),
        ("run 3fa9c0d2e1b7 completed", "run 00aa11bb22cc completed"),
        ("trained in 12.5 s (812 steps/s)", "trained in 3.1 s (3276 steps/s)"),
        ("started 2024-05-01T10:11:12.123Z", "started 2025-12-02 15:13:45"),
        ('<div id="0b1e3c2a-8f7d-4c6b-9a5e-112233445566">', '<div id="ffffffff-0000-4000-8000-abcdefabcdef">'),
        ("peak memory 123.4 MB", "peak memory 98 MB"),
    ],
)
def test_changing_details_are_masked(first, second):
    assert sanitize(first) == sanitize(second)


@pytest.mark.parametrize(
    "first, second",
    [
        ("exact match at 30 digits: 0.95", "exact match at 30 digits: 0.12"),
        ("loss 0.031 after 2000 steps", "loss 0.031 after 4000 steps"),
        ("model.pos=coupling", "model.pos=learned"),
        ("12 + 34 = 46", "12 + 34 = 47"),
        ("heads: 2, layers: 1", "heads: 4, layers: 1"),
    ],
)
def test_content_is_kept(first, second):
    assert sanitize(first) != sanitize(second)
