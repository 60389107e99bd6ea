"""Every `acl` subcommand's --help is usable: it exits 0, its description opens with one
short sentence on a line of its own, and it ends with examples. Parse only: nothing is
built or trained (tests/test_cli_commands.py checks the flags and the configs listed)."""

from __future__ import annotations

import pytest

from experiments import cli, commands

NAMES = [command.name for command in commands.COMMANDS]
FIRST_LINE_LIMIT = 80
"""The longest first line of a description: `acl COMMAND --help` opens with it."""


def help_of(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit) as exited:
        commands.main([*argv, "--help"])
    assert exited.value.code == 0, f"acl {' '.join(argv)} --help exited {exited.value.code}"
    return capsys.readouterr().out


def test_acl_help_opens_with_a_short_line_and_has_examples(capsys):
    out = help_of([], capsys)
    first = commands.top_parser().description.splitlines()[0]
    assert len(first) <= FIRST_LINE_LIMIT, first
    assert "examples:" in out and "\n  acl run " in out
    assert str(cli.ROOT) not in out


@pytest.mark.parametrize("name", NAMES)
def test_every_command_help_opens_with_one_short_sentence_and_has_examples(name, capsys):
    out = help_of([name], capsys)
    description = commands.load(name).parser().description.strip().splitlines()
    first = description[0]
    assert len(first) <= FIRST_LINE_LIMIT, (
        f"acl {name} --help: the description's first line has {len(first)} characters "
        f"(at most {FIRST_LINE_LIMIT}): {first!r}"
    )
    # A sentence of its own, not the first line of a wrapped paragraph.
    assert first.endswith((".", "?")), f"acl {name}: {first!r} is not a whole sentence"
    assert len(description) == 1 or not description[1].strip(), (
        f"acl {name}: the first line runs on into {description[1]!r}; leave a blank line"
    )
    assert first in out
    examples = out[out.index("\nexamples:\n") :].splitlines()[2:]
    assert any(line.startswith(f"  acl {name}") for line in examples), out
    # Defaults under the repository are shown relative to it, never as a machine path.
    assert str(cli.ROOT) not in out
