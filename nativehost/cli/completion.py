"""``browy completion bash|zsh|fish``: a shell completion script made from browy's own parser.

:func:`command_tree` walks the argparse tree once — each command path (``config set``), its
subcommands with their help, its options (which take a value, their choices, whether the value
is a file), and the words its first positional argument may be (argparse ``choices``, or
:attr:`nativehost.cli.context.BrowyParser.complete_words`: the settings' names for ``config
get|set|unset``). Each shell's script is that table as data plus one small function that walks
the words typed so far the way argparse would (an option that takes a value eats the next word),
so the scripts never drift from the parser. No dependency: shtab covers bash and zsh but not fish,
and argcomplete runs Python on every Tab.

Install: ``browy completion bash > ~/.local/share/bash-completion/completions/browy``; zsh: ``browy
completion zsh > "${fpath[1]}/_browy"``; fish: ``browy completion fish >
~/.config/fish/completions/browy.fish``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from nativehost.cli.context import BrowyParser

__all__ = ["SHELLS", "Node", "Option", "command_tree", "completion_script", "configure_completion"]

SHELLS = ("bash", "zsh", "fish")
_FILE_METAVARS = {"DIR", "FILE", "PATH"}


@dataclass(slots=True)
class Option:
    flags: list[str]
    help: str
    takes_value: bool
    choices: list[str] = field(default_factory=list)
    files: bool = False


@dataclass(slots=True)
class Node:
    """One command path (``()`` is ``browy`` itself)."""

    path: tuple[str, ...]
    commands: list[tuple[str, str]] = field(default_factory=list)  # (name, help)
    options: list[Option] = field(default_factory=list)
    words: list[str] = field(default_factory=list)  # for the first positional argument

    @property
    def key(self) -> str:
        return " ".join(self.path)


def _help(text: str | None) -> str:
    return " ".join((text or "").split())


def command_tree(parser: argparse.ArgumentParser) -> list[Node]:
    """Every command path of *parser*, depth first."""
    nodes: list[Node] = []

    def visit(p: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        node = Node(path)
        nodes.append(node)
        positionals = 0
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {a.dest: _help(a.help) for a in action._choices_actions}
                for name, child in action.choices.items():
                    node.commands.append((name, helps.get(name, "")))
                    visit(child, (*path, name))
            elif action.option_strings:
                if action.help == argparse.SUPPRESS:
                    continue
                takes = action.nargs != 0
                choices = [str(c) for c in action.choices] if action.choices else []
                files = (
                    takes
                    and not choices
                    and (action.type is Path or str(action.metavar) in _FILE_METAVARS)
                )
                node.options.append(
                    Option(list(action.option_strings), _help(action.help), takes, choices, files)
                )
            else:  # a positional argument: only the first one gets words
                positionals += 1
                if positionals > 1:
                    continue
                if action.choices:
                    node.words = [str(c) for c in action.choices]
                elif isinstance(p, BrowyParser) and p.complete_words is not None:
                    node.words = p.complete_words()

    visit(parser, ())
    return nodes


def _data(nodes: list[Node], *, described: bool) -> list[tuple[str, list[str]]]:
    """(key, lines): ``PATH|c`` subcommands, ``PATH|o`` options, ``PATH|v`` options taking a
    value, ``PATH|p`` words of the first positional, ``PATH|=FLAG`` a value's choices
    (``@files``: complete files). *described*: ``name:help`` lines for c and o (zsh)."""
    rows: list[tuple[str, list[str]]] = []
    for n in nodes:
        if n.commands:
            rows.append((f"{n.key}|c", [f"{c}:{h}" if described else c for c, h in n.commands]))
        flags = [(f, o) for o in n.options for f in o.flags]
        rows.append((f"{n.key}|o", [f"{f}:{o.help}" if described else f for f, o in flags]))
        valued = [f for f, o in flags if o.takes_value]
        if valued:
            rows.append((f"{n.key}|v", valued))
        if n.words:
            rows.append((f"{n.key}|p", n.words))
        for f, o in flags:
            if o.takes_value and (o.choices or o.files):
                rows.append((f"{n.key}|={f}", o.choices or ["@files"]))
    return rows


def _sh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _case_function(name: str, rows: list[tuple[str, list[str]]]) -> list[str]:
    out = [f"{name}() {{", '    case "$1" in']
    for key, lines in rows:
        out.append(f"        {_sh_quote(key)}) printf '%s\\n' {' '.join(map(_sh_quote, lines))} ;;")
    out += ["    esac", "}"]
    return out


_WALK = """\
    local word expect="" npos=0 i
    for ((i = {first}; i < {cursor}; i++)); do
        word="${{{words}[i]}}"
        if [[ -n $expect ]]; then expect=""; continue; fi
        if [[ $word == -* ]]; then
            if [[ $word != *=* ]] && _browy_has "$at|v" "$word"; then expect=$word; fi
            continue
        fi
        if _browy_has "$at|c" "$word"; then at="${{at:+$at }}$word"; npos=0; else ((npos++)); fi
    done"""


def _bash(nodes: list[Node]) -> str:
    lines = [
        "# bash completion for browy, made from its parser: browy completion bash",
        *_case_function("_browy_words", _data(nodes, described=False)),
        "_browy_has() {",
        '    local w; while IFS= read -r w; do [[ $w == "$2" ]] && return 0; done \\',
        '        < <(_browy_words "$1"); return 1',
        "}",
        "_browy() {",
        '    local cur="${COMP_WORDS[COMP_CWORD]}" at=""',
        _WALK.format(first=1, cursor="COMP_CWORD", words="COMP_WORDS"),
        "    local IFS=$'\\n' items",
        "    if [[ -n $expect ]]; then",
        '        items=$(_browy_words "$at|=$expect")',
        '        if [[ $items == @files ]]; then COMPREPLY=($(compgen -f -- "$cur")); return; fi',
        "    elif [[ $cur == -* ]]; then",
        '        items=$(_browy_words "$at|o")',
        "    else",
        '        items=$(_browy_words "$at|c")',
        '        if [[ -z $items ]] && ((npos == 0)); then items=$(_browy_words "$at|p"); fi',
        "    fi",
        '    COMPREPLY=($(compgen -W "$items" -- "$cur"))',
        "}",
        "complete -F _browy browy",
    ]
    return "\n".join(lines) + "\n"


def _zsh(nodes: list[Node]) -> str:
    lines = [
        "#compdef browy",
        "# zsh completion for browy, made from its parser: browy completion zsh",
        *_case_function("_browy_words", _data(nodes, described=True)),
        "_browy_has() {",
        "    local w",
        '    for w in "${(@f)$(_browy_words "$1")}"; do [[ ${w%%:*} == "$2" ]] && return 0; done',
        "    return 1",
        "}",
        "_browy() {",
        '    local cur="${words[CURRENT]}" at=""',
        _WALK.format(first=2, cursor="CURRENT", words="words"),
        "    local -a items",
        "    if [[ -n $expect ]]; then",
        '        items=("${(@f)$(_browy_words "$at|=$expect")}")',
        "        if [[ ${items[1]} == @files ]]; then _files; return; fi",
        "        compadd -a items; return",
        "    fi",
        "    if [[ $cur == -* ]]; then",
        '        items=("${(@f)$(_browy_words "$at|o")}")',
        "        _describe -t options option items; return",
        "    fi",
        '    items=("${(@f)$(_browy_words "$at|c")}")',
        "    if [[ -n ${items[1]} ]]; then _describe -t commands command items; return; fi",
        "    if ((npos == 0)); then",
        '        items=("${(@f)$(_browy_words "$at|p")}")',
        "        [[ -n ${items[1]} ]] && compadd -a items",
        "    fi",
        "}",
        "compdef _browy browy",
        '[[ "${funcstack[1]}" == _browy ]] && _browy "$@"  # autoloaded from $fpath',
    ]
    return "\n".join(lines) + "\n"


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _fish(nodes: list[Node]) -> str:
    lines = [
        "# fish completion for browy, made from its parser: browy completion fish",
        "function __browy_words",
        "    switch $argv[1]",
    ]
    for key, words in _data(nodes, described=False):
        if key.endswith(("|c", "|v")):
            lines.append(f"        case {_fish_quote(key)}")
            lines.append(f"            printf '%s\\n' {' '.join(map(_fish_quote, words))}")
    lines += [
        "    end",
        "end",
        "# The command path typed so far (options and their values skipped), and how many",
        "# positional words follow it.",
        "function __browy_state",
        "    set -l at ''",
        "    set -l expect ''",
        "    set -l npos 0",
        "    for w in (commandline -opc)[2..-1]",
        '        if test -n "$expect"',
        "            set expect ''",
        "        else if string match -q -- '-*' $w",
        '            set -l valued (__browy_words "$at|v")',
        "            if not string match -q -- '*=*' $w; and contains -- $w $valued",
        "                set expect $w",
        "            end",
        '        else if contains -- $w (__browy_words "$at|c")',
        '            set at (string trim -- "$at $w")',
        "            set npos 0",
        "        else",
        "            set npos (math $npos + 1)",
        "        end",
        "    end",
        "    printf '%s\\n' $at $npos",
        "end",
        "function __browy_at",
        "    set -l state (__browy_state)",
        '    test "$state[1]" = "$argv[1]"; and begin; test (count $argv) -lt 2',
        '        or test "$state[2]" = "$argv[2]"; end',
        "end",
        "complete -c browy -f",
    ]
    for n in nodes:
        at = _fish_quote(f"__browy_at {_fish_quote(n.key)}")
        for name, text in n.commands:
            lines.append(f"complete -c browy -n {at} -a {_fish_quote(name)} -d {_fish_quote(text)}")
        for o in n.options:
            spec = []
            for f in o.flags:
                spec.append(f"-l {f[2:]}" if f.startswith("--") else f"-s {f[1:]}")
            if o.takes_value:
                spec.append("-r -F" if o.files else "-x")
                if o.choices:
                    spec.append(f"-a {_fish_quote(' '.join(o.choices))}")
            lines.append(f"complete -c browy -n {at} {' '.join(spec)} -d {_fish_quote(o.help)}")
        if n.words and not n.commands:
            first = _fish_quote(f"__browy_at {_fish_quote(n.key)} 0")
            lines.append(f"complete -c browy -n {first} -a {_fish_quote(' '.join(n.words))}")
    return "\n".join(lines) + "\n"


def completion_script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script of *shell* (one of :data:`SHELLS`) for *parser*."""
    nodes = command_tree(parser)
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](nodes)


def configure_completion(p: argparse.ArgumentParser) -> None:
    p.add_argument("shell", metavar="SHELL", choices=SHELLS, help=" | ".join(SHELLS))
