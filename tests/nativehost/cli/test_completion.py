"""``browy completion bash|zsh|fish``: scripts made from the parser, run in the real shells (each
test is skipped where its shell is not installed)."""

from __future__ import annotations

import io
import shutil
import subprocess
from pathlib import Path

import pytest

from nativehost.cli.completion import command_tree
from nativehost.cli.main import COMMANDS, build_parser, main
from nativehost.config_help import setting_keys


def script(shell: str) -> str:
    out = io.StringIO()
    assert main(["completion", shell], stdout=out) == 0
    return out.getvalue()


def needs(shell: str) -> str:
    path = shutil.which(shell)
    if path is None:
        pytest.skip(f"{shell} is not installed")
    return path


def run_shell(shell: str, text: str, tmp_path: Path) -> str:
    program = tmp_path / f"check.{shell}"
    program.write_text(text)
    result = subprocess.run(
        [needs(shell), str(program)], capture_output=True, text=True, timeout=30, check=True
    )
    return result.stdout


# -- the tree -------------------------------------------------------------------------------------


def test_the_tree_has_every_command_and_what_each_option_takes() -> None:
    nodes = {n.key: n for n in command_tree(build_parser())}
    assert [name for name, _ in nodes[""].commands] == list(COMMANDS)
    assert nodes["config set"].words == setting_keys()
    assert nodes["config set-key"].words == ["openai", "anthropic"]
    assert nodes["completion"].words == ["bash", "zsh", "fish"]
    browser = next(o for o in nodes["install-host"].options if "--browser" in o.flags)
    assert browser.takes_value and "vivaldi" in browser.choices
    out = next(o for o in nodes["demo"].options if "--out" in o.flags)
    assert out.files
    json_flag = next(o for o in nodes["run"].options if "--json" in o.flags)
    assert not json_flag.takes_value


def test_an_unknown_shell_exits_2() -> None:
    err = io.StringIO()
    assert main(["completion", "tcsh"], stderr=err) == 2
    assert "invalid choice: 'tcsh'" in err.getvalue()


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_command_is_in_every_script(shell: str) -> None:
    text = script(shell)
    for name in COMMANDS:
        assert f"'{name}" + (":" if shell == "zsh" else "'") in text, name


# -- bash -----------------------------------------------------------------------------------------

BASH_CASES = {
    "browy con": "config",
    "browy config s": "show set set-key",
    "browy config set model.re": "model.request_timeout",
    "browy config set model.request_timeout ''": "",  # the VALUE: nothing to offer
    "browy install-host --browser ch": "chrome chromium",
    "browy install-host --browser chrome --sys": "--system",
    "browy daemon status --j": "--json",
    "browy --browser-less ''": " ".join(COMMANDS),  # an unknown option is skipped
    "browy config set-key ''": "openai anthropic",
    "browy completion f": "fish",
}


def test_bash_completes_commands_keys_options_and_choices(tmp_path: Path) -> None:
    lines = [script("bash")]
    lines.append(
        't() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); '
        '_browy; echo "${COMPREPLY[*]}"; }'
    )
    lines += [f"t {case}" for case in BASH_CASES]
    got = run_shell("bash", "\n".join(lines) + "\n", tmp_path).splitlines()
    assert dict(zip(BASH_CASES, got, strict=True)) == BASH_CASES


def test_bash_completes_a_file_for_a_path_option(tmp_path: Path) -> None:
    (tmp_path / "shots-here").mkdir()
    text = (
        script("bash")
        + f"cd {tmp_path}\n"
        + 'COMP_WORDS=(browy demo --out shots); COMP_CWORD=3; _browy; echo "${COMPREPLY[*]}"\n'
    )
    assert run_shell("bash", text, tmp_path).strip() == "shots-here"


# -- zsh (compadd and _describe are zsh's own inside a completion: stand-ins print instead) -------


def test_zsh_walks_the_words_like_the_parser(tmp_path: Path) -> None:
    needs("zsh")
    stand_ins = (
        "compdef() { : }\n"
        "_describe() { print -l -- ${(P)4} | cut -d: -f1 }\n"
        "compadd() { [[ $1 == -a ]] && print -l -- ${(P)2} }\n"
        "_files() { print FILES }\n"
    )
    cases = {
        "browy config s": "show get set set-key unset path",
        "browy install-host --browser ch": "chrome chromium edge brave vivaldi",
        "browy demo --out /tm": "FILES",
        "browy config set-key ''": "openai anthropic",
        "browy config set model.model ''": "",
        "browy daemon status --j": "-h --help --json",
    }
    body = [
        stand_ins,
        script("zsh"),
        't() { words=("$@"); CURRENT=${#words}; print -r -- ${(j: :)${(f)"$(_browy)"}} }',
    ]
    body += [f"t {case}" for case in cases]
    got = run_shell("zsh", "\n".join(body) + "\n", tmp_path).splitlines()
    assert dict(zip(cases, [g.strip() for g in got], strict=True)) == cases


def test_the_zsh_script_is_valid_zsh(tmp_path: Path) -> None:
    path = tmp_path / "_browy"
    path.write_text(script("zsh"))
    subprocess.run([needs("zsh"), "-n", str(path)], check=True, timeout=30)


# -- fish (its own `complete -C` answers for a command line) --------------------------------------


def test_fish_completes_commands_keys_options_and_choices(tmp_path: Path) -> None:
    needs("fish")
    path = tmp_path / "browy.fish"
    path.write_text(script("fish"))
    cases = {
        "browy con": ["config"],
        "browy config s": ["set", "set-key", "show"],
        "browy config set model.re": ["model.request_timeout"],
        "browy config set model.model x": [],
        "browy install-host --browser ch": ["chrome", "chromium"],
        "browy run --j": ["--json"],
    }
    for line, expected in cases.items():
        result = subprocess.run(
            [needs("fish"), "-c", f"source {path}; complete -C '{line}'"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        names = sorted(row.split("\t")[0] for row in result.stdout.splitlines() if row)
        assert names == expected, line
