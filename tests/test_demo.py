"""The shipped demo runs show what they are there to show (workbench/demo.py), so the first pictures a
newcomer sees never contradict the README or the pages."""
import pytest

from workbench.demo import CHECKS, check_demos, demos, shipped_demo_runs


def test_every_demo_is_shipped_with_its_label_and_what_to_look_for():
    runs = shipped_demo_runs()
    assert set(runs) == {demo.name for demo in demos()}, "rebuild with `workbench demo build`"
    for demo in demos():
        status = runs[demo.name].status()
        assert status["label"] == f"demo: {demo.name}"
        assert status["demo_page"] == demo.page and status["demo_look_for"] == demo.look_for
        assert runs[demo.name].config().to_dict() == demo.config.to_dict()


@pytest.mark.parametrize("check", CHECKS, ids=[check.what for check in CHECKS])
def test_each_demo_shows_its_phenomenon(check):
    [(_, holds, numbers)] = [(c, h, n) for c, h, n in check_demos() if c is check]
    assert holds, f"{check.what}: {numbers}"


def test_demo_check_cli(capsys):
    from workbench.cli import main

    assert main(["demo", "check"]) == 0
    out = capsys.readouterr().out
    assert out.count("holds:") == len(CHECKS) and "FAILS" not in out
