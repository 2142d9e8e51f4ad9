"""`make system` (scripts/system-packages.sh), run against stand-in `id`, `sudo` and `apt-get`: it
installs what is missing when it can, and otherwise stops with one line naming the command to run.

The stand-ins sit alone on PATH, so the real Chromium is not found and counts as missing; the fonts
and certificates are looked for at their absolute paths (present here, or they are missing too)."""
import subprocess
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "system-packages.sh"
BASH = "/bin/bash"


def stand_ins(folder: Path, uid: int, sudo: bool = False, apt: bool = True) -> Path:
    """A PATH folder with `id` printing uid, an `apt-get` that logs its arguments and, if asked, a
    `sudo` that lets `-n` through."""
    folder.mkdir()
    scripts = {"id": f"echo {uid}"}
    if apt:
        scripts["apt-get"] = f'echo "apt-get $*" >> {folder}/log'
    if sudo:
        scripts["sudo"] = '[ "$1" = -n ] && shift; "$@"'
    for name, body in scripts.items():
        path = folder / name
        path.write_text(f"#!{BASH}\n{body}\n")
        path.chmod(0o755)
    return folder


def run_script(bin_folder: Path, cwd: Path, **env) -> subprocess.CompletedProcess:
    environment = {"PATH": str(bin_folder), "PY": "/bin/true", **env}  # PY: python3-venv counts as present
    return subprocess.run([BASH, str(SCRIPT)], cwd=cwd, env=environment, capture_output=True, text=True, timeout=60)


def test_without_root_or_sudo_it_stops_with_the_command_to_run(tmp_path):
    result = run_script(stand_ins(tmp_path / "bin", uid=1000), tmp_path)
    assert result.returncode == 1
    (line,) = result.stderr.strip().splitlines()
    assert "sudo sh -c 'apt-get update && apt-get install -y --no-install-recommends chromium" in line
    assert not (tmp_path / "bin" / "log").exists()


@pytest.mark.parametrize("uid, sudo", [(0, False), (1000, True)])
def test_root_or_passwordless_sudo_installs_what_is_missing(tmp_path, uid, sudo):
    result = run_script(stand_ins(tmp_path / "bin", uid=uid, sudo=sudo), tmp_path)
    assert result.returncode == 0, result.stderr
    update, install = (tmp_path / "bin" / "log").read_text().splitlines()
    assert update.startswith("apt-get update")
    assert install.startswith("apt-get install -y") and "chromium" in install.split()


def test_it_returns_at_once_when_everything_is_there(tmp_path):
    bin_folder = stand_ins(tmp_path / "bin", uid=1000)
    (bin_folder / "chromium").write_text(f"#!{BASH}\n")
    (bin_folder / "chromium").chmod(0o755)
    if not all(Path(p).exists() for p in ("/usr/share/fonts/truetype/dejavu", "/usr/share/fonts/truetype/liberation",
                                           "/etc/ssl/certs/ca-certificates.crt")):
        pytest.skip("this machine lacks the fonts or certificates, so there would be something to install")
    result = run_script(bin_folder, tmp_path)
    assert result.returncode == 0 and result.stdout == result.stderr == ""
    assert not (bin_folder / "log").exists()  # not even apt-get update


def test_without_apt_get_it_names_the_packages_and_goes_on(tmp_path):
    result = run_script(stand_ins(tmp_path / "bin", uid=0, apt=False), tmp_path)
    assert result.returncode == 0
    (line,) = result.stderr.strip().splitlines()
    assert "chromium" in line and "skipped" in line


def test_skip_variable_goes_on_without_installing(tmp_path):
    result = run_script(stand_ins(tmp_path / "bin", uid=1000), tmp_path, WORKBENCH_SKIP_SYSTEM="1")
    assert result.returncode == 0 and "WORKBENCH_SKIP_SYSTEM" in result.stderr
    assert not (tmp_path / "bin" / "log").exists()


def test_make_test_and_make_app_run_it_first():
    makefile = (SCRIPT.parent.parent / "Makefile").read_text()
    assert "scripts/system-packages.sh" in makefile
    assert "$(VENV)/.installed: pyproject.toml | system" in makefile
    for target in ("test", "app"):
        line = next(l for l in makefile.splitlines() if l.startswith(f"{target}:"))
        assert "$(VENV)/.installed" in line
    ci = (SCRIPT.parent.parent / ".ci" / "run").read_text()
    assert "apt-get install -y --no-install" not in ci and "make test" in ci
