"""Every `dlpipe ...` command line the Markdown docs show names a command and options the CLI has.

The references are the inline code spans and the lines of fenced code blocks (a trailing `\\`
continues a line) that run `dlpipe` (also as `$ dlpipe`, `.venv/bin/dlpipe`, after `VAR=value`
assignments, after a `|`, `&&`, `;`, `&`, or after a word ending `:`, as an error line's hint
does). Each is checked against the command tree click itself holds, lazy groups loaded
(dlpipe/cli/lazy.py), never a list written here: the command path (group, subcommand;
`wait|show` is two paths), each option of the command it is given to (long, short,
`--x=value`), and no positional words for a command without arguments.

Doc notation is read as such: `[...]` brackets are dropped, `D`, `NAME`, `<uuid>` and `...`
are placeholders (one after a group ends the check: it stands for any subcommand), and a span
stops at what cannot be shell (a `#` comment, a redirection, prose punctuation such as a
trailing `:` or `,`, a parenthesis, an unbalanced quote, non-ASCII text).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import click
import pytest

from dlpipe.cli.main import cli

ROOT = Path(__file__).resolve().parents[2]
# Folders whose Markdown is not the project's: virtualenvs, caches, build output, the
# downloaded DynamoDB Local (.dlpipe/), anything hidden.
SKIPPED_DIRS = {"build", "dist", "node_modules", "__pycache__"}

# --- the command tree, from click ---------------------------------------------------------


@dataclass(frozen=True)
class Node:
    """One command of the tree: its options and how many values each takes, its subcommands."""

    path: str
    options: Mapping[str, int]
    max_args: int | None  # positional words it accepts; None: any number
    subcommands: Mapping[str, Node]
    is_group: bool


def _node(command: click.Command, ctx: click.Context, path: str) -> Node:
    options: dict[str, int] = {}
    max_args: int | None = 0
    for param in command.get_params(ctx):
        if isinstance(param, click.Option):
            values = 0 if param.is_flag or param.count else param.nargs
            for opt in param.opts:
                options[opt] = values
            for opt in param.secondary_opts:
                options[opt] = 0
        elif isinstance(param, click.Argument):
            max_args = None if max_args is None or param.nargs < 0 else max_args + param.nargs
    subcommands: dict[str, Node] = {}
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"{path} lists {name} but has no such command"
            sub_ctx = click.Context(sub, info_name=name, parent=ctx)
            subcommands[name] = _node(sub, sub_ctx, f"{path} {name}")
    return Node(path, options, max_args, subcommands, isinstance(command, click.Group))


@cache
def command_tree() -> Node:
    """`dlpipe` and everything under it; click's Context does not run the group's callback."""
    return _node(cli, click.Context(cli, info_name="dlpipe"), "dlpipe")


# --- Markdown: the code spans and fenced lines ---------------------------------------------


@dataclass(frozen=True)
class Snippet:
    """A piece of code of a Markdown file: an inline span or a (continued) fenced line."""

    line: int
    text: str


_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_SPAN = re.compile(r"(?<!`)(`+)(?!`)((?:(?!\n[ \t]*\n).)+?)(?<!`)\1(?!`)", re.DOTALL)


def snippets(markdown: str) -> list[Snippet]:
    """The inline code spans (outside fences, possibly over lines) and the fenced lines."""
    found: list[Snippet] = []
    prose: list[str] = []  # the file with fenced lines blanked: spans never cross a fence
    fence: str | None = None
    pending: tuple[int, str] | None = None  # a fenced line continued by a trailing backslash
    for number, line in enumerate(markdown.splitlines(), 1):
        prose.append("")
        if fence is None:
            opening = _FENCE.match(line)
            if opening:
                fence = opening.group(1)
            else:
                prose[-1] = line
            continue
        stripped = line.strip()
        if stripped.startswith(fence) and set(stripped) == {fence[0]}:
            fence = None
            continue
        start, text = pending if pending else (number, "")
        text += line.lstrip() if pending else line
        if text.endswith("\\"):
            pending = (start, text[:-1].rstrip() + " ")
            continue
        pending = None
        found.append(Snippet(start, text.strip()))
    joined = "\n".join(prose)
    for span in _SPAN.finditer(joined):
        text = " ".join(span.group(2).split())
        found.append(Snippet(joined.count("\n", 0, span.start()) + 1, text))
    return sorted(found, key=lambda snippet: snippet.line)


# --- shell words of a snippet ----------------------------------------------------------------

_CONTROL = {"|", "||", "&&", ";", "&"}
_ANGLE_PLACEHOLDER = re.compile(r"<[A-Za-z0-9_.:-]+>")
_SHELL_WORD = re.compile(r"[A-Za-z0-9_\-./:=,@%+~*?$|{}!^]+")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_PLACEHOLDER = re.compile(r"(?:[A-Z][A-Z0-9_-]*)?(?:\.\.\.)?")


def without_comment(text: str) -> str:
    """The snippet up to a shell comment (`#` starting a word)."""
    return re.split(r"(?:^|\s)#", text, maxsplit=1)[0].rstrip()


def _word(raw: str, first: bool) -> tuple[str | None, bool]:
    """The word `raw` stands for (None: no shell word) and whether the command ends after it.

    A segment's first word keeps its punctuation: `dlpipe:` starts an error line, not a command.
    """
    word = raw.strip("[]")
    for quote in "'\"":
        if len(word) >= 2 and word[0] == word[-1] == quote and quote not in word[1:-1]:
            word = word[1:-1]
    ends = False
    if not first and word.endswith((":", ",")):  # `dlpipe run --date D: exit 0, ...`: prose
        word, ends = word[:-1], True
    if not _SHELL_WORD.fullmatch(_ANGLE_PLACEHOLDER.sub("X", word)):
        return None, True  # a redirection, a parenthesis, a quote, prose
    return word, ends


def dlpipe_commands(text: str) -> list[list[str]]:
    """The words after `dlpipe` of each dlpipe command in `text` (none: it runs no dlpipe)."""
    text = without_comment(text.replace("\\|", "|").replace("\u2026", "..."))
    segments: list[list[str]] = [[]]
    closed = False  # the rest of this segment is no shell (until the next one starts)
    for raw in text.split():
        if raw in _CONTROL:
            segments.append([])
            closed = False
            continue
        if not closed and raw.strip("[];"):
            word, closed = _word(raw.removesuffix(";"), not segments[-1])
            if word:
                segments[-1].append(word)
        # `x;` ends a command; a word ending `:` may introduce one (`... the day: dlpipe run`).
        if raw.endswith((";", ":")):
            segments.append([])
            closed = False
    commands: list[list[str]] = []
    for words in segments:
        start = 1 if words[:1] == ["$"] else 0
        while start < len(words) and _ASSIGNMENT.match(words[start]):
            start += 1
        if start < len(words) and re.fullmatch(r"(?:\S*/bin/)?dlpipe", words[start]):
            commands.append(words[start + 1 :])
    return commands


# --- the check -------------------------------------------------------------------------------


def is_placeholder(word: str) -> bool:
    """`D`, `NAME`, `FILEID...`, `...`, `<uuid>`: a word the reader fills in."""
    return bool(word) and (
        _PLACEHOLDER.fullmatch(word) is not None or _ANGLE_PLACEHOLDER.fullmatch(word) is not None
    )


def check_words(node: Node, words: list[str]) -> list[str]:
    """What is wrong with `dlpipe <words>` (nothing: an empty list)."""
    problems: list[str] = []
    positional: list[str] = []
    index = 0
    while index < len(words):
        word = words[index]
        index += 1
        if word == "--":
            positional += words[index:]
            break
        if word.startswith("-") and len(word) > 1:
            for option in word.split("|"):  # `--json|--verify`: each of them
                values, option_problems = _check_option(node, option)
                problems += option_problems
                for _ in range(values):  # its value(s), if given: never an option
                    if index < len(words) and not words[index].startswith("--"):
                        index += 1
            continue
        if node.is_group:
            if is_placeholder(word):
                return problems  # `dlpipe jobs CMD`: any of its subcommands
            for name in word.split("|"):  # `dlpipe handoff wait|show`: each path
                sub = node.subcommands.get(name)
                if sub is None:
                    problems.append(f"no such command '{node.path} {name}'")
                else:
                    problems += check_words(sub, words[index:])
            return problems
        positional.append(word)
    extra = [w for w in positional if w not in {"...", "OPTIONS"}]  # click's `[OPTIONS]`
    # After an unknown option, whether the next word was its value is anyone's guess.
    if not problems and node.max_args is not None and len(extra) > node.max_args:
        problems += [f"unexpected argument '{w}' for '{node.path}'" for w in extra[node.max_args :]]
    return problems


def _check_option(node: Node, option: str) -> tuple[int, list[str]]:
    """How many following words `option` takes as values, and what is wrong with it."""
    name, equals, _ = option.partition("=")
    if name == "--help":
        return 0, []
    if name.startswith("--") or len(name) == 2:
        values = node.options.get(name)
        if values is None:
            return 0, [f"no such option {name} for '{node.path}'"]
        if equals and values == 0:
            return 0, [f"option {name} of '{node.path}' takes no value"]
        return (0 if equals else values), []
    for position, letter in enumerate(option[1:], 1):  # `-vq`, `-n4`: short options together
        values = node.options.get(f"-{letter}")
        if values is None:
            return 0, [f"no such option -{letter} for '{node.path}'"]
        if values:
            return (values if position == len(option) - 1 else 0), []
    return 0, []


def check_markdown(markdown: str, name: str) -> list[str]:
    """`name:line: <snippet>: <problem>` for each bad dlpipe reference of the Markdown text."""
    problems: list[str] = []
    for snippet in snippets(markdown):
        for words in dlpipe_commands(snippet.text):
            for problem in check_words(command_tree(), words):
                problems.append(
                    f"{name}:{snippet.line}: {without_comment(snippet.text)}: {problem}"
                )
    return problems


def markdown_files(root: Path) -> list[Path]:
    """The project's Markdown files under `root`."""
    return sorted(
        path
        for path in root.rglob("*.md")
        if not any(
            part.startswith(".") or part in SKIPPED_DIRS or part.endswith(".egg-info")
            for part in path.relative_to(root).parts[:-1]
        )
    )


def check_tree(root: Path) -> list[str]:
    """The bad dlpipe references of every Markdown file under `root`."""
    problems: list[str] = []
    for path in markdown_files(root):
        name = path.relative_to(root).as_posix()
        problems += check_markdown(path.read_text(encoding="utf-8"), name)
    return problems


# --- the docs --------------------------------------------------------------------------------


def test_every_documented_command_and_option_exists() -> None:
    problems = check_tree(ROOT)
    assert not problems, "dlpipe commands in the docs the CLI does not have:\n" + "\n".join(
        problems
    )


def test_the_docs_are_read() -> None:
    """The check above is not vacuous: it sees the docs and the commands they show."""
    names = {path.relative_to(ROOT).as_posix() for path in markdown_files(ROOT)}
    assert {"README.md", "docs/ARCHITECTURE.md", "terraform/README.md"} <= names
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [words for s in snippets(readme) for words in dlpipe_commands(s.text)]
    assert len(commands) >= 50
    assert ["jobs", "requeue", "--stuck", "--older-than", "30m"] in commands


def test_the_tree_is_click_s_own_with_the_lazy_groups_loaded() -> None:
    tree = command_tree()
    ctx = click.Context(cli, info_name="dlpipe")
    assert set(tree.subcommands) == set(cli.list_commands(ctx))
    assert {"requeue", "list", "show", "stuck"} <= set(tree.subcommands["jobs"].subcommands)
    wait = tree.subcommands["handoff"].subcommands["wait"]
    assert wait.path == "dlpipe handoff wait"
    assert wait.options["--timeout"] == 1
    assert wait.options["--verify"] == 0
    assert "--no-stub" in tree.subcommands["local"].subcommands["up"].options


# --- the parser and the checker, on synthetic Markdown ---------------------------------------

BAD = [
    pytest.param(
        "Run `dlpipe run --no-such-flag` daily.",
        ["doc.md:1: dlpipe run --no-such-flag: no such option --no-such-flag for 'dlpipe run'"],
        id="unknown-option",
    ),
    pytest.param(
        "text\n\n```sh\n$ dlpipe nosuch --date D\n```\n",
        ["doc.md:4: $ dlpipe nosuch --date D: no such command 'dlpipe nosuch'"],
        id="unknown-command-fenced",
    ),
    pytest.param(
        "`dlpipe jobs requeue-stuck`",
        ["doc.md:1: dlpipe jobs requeue-stuck: no such command 'dlpipe jobs requeue-stuck'"],
        id="unknown-subcommand",
    ),
    pytest.param(
        "`dlpipe handoff wait|shwo --verify`",
        ["doc.md:1: dlpipe handoff wait|shwo --verify: no such command 'dlpipe handoff shwo'"],
        id="alternative-path",
    ),
    pytest.param(
        "`dlpipe handoff wait|show [--timeout N]`",
        [
            "doc.md:1: dlpipe handoff wait|show [--timeout N]:"
            " no such option --timeout for 'dlpipe handoff show'"
        ],
        id="option-of-one-alternative",
    ),
    pytest.param(
        "`dlpipe run --date D [--rerun] [--force]`",
        [
            "doc.md:1: dlpipe run --date D [--rerun] [--force]: no such option --force for 'dlpipe run'"
        ],
        id="bracketed-option",
    ),
    pytest.param(
        "`dlpipe --date D run`",
        ["doc.md:1: dlpipe --date D run: no such option --date for 'dlpipe'"],
        id="option-before-its-command",
    ),
    pytest.param(
        "`dlpipe run --rerun=yes`",
        ["doc.md:1: dlpipe run --rerun=yes: option --rerun of 'dlpipe run' takes no value"],
        id="flag-with-value",
    ),
    pytest.param(
        "`dlpipe run -x`",
        ["doc.md:1: dlpipe run -x: no such option -x for 'dlpipe run'"],
        id="short-option",
    ),
    pytest.param(
        "`dlpipe status 2026-02-28`",
        [
            "doc.md:1: dlpipe status 2026-02-28:"
            " unexpected argument '2026-02-28' for 'dlpipe status'"
        ],
        id="argument-for-an-option",
    ),
    pytest.param(
        "`dlpipe worker --concurrency 4 8`",
        ["doc.md:1: dlpipe worker --concurrency 4 8: unexpected argument '8' for 'dlpipe worker'"],
        id="one-value-too-many",
    ),
    pytest.param(
        "a\n```\ndlpipe dlq show | dlpipe dlq redrive --all   # move them\n```",
        [
            "doc.md:3: dlpipe dlq show | dlpipe dlq redrive --all:"
            " no such option --all for 'dlpipe dlq redrive'"
        ],
        id="second-command-of-a-pipe",
    ),
    pytest.param(
        "```\nAWS_REGION=x \\\n  .venv/bin/dlpipe tables migrat\n```",
        [
            "doc.md:2: AWS_REGION=x .venv/bin/dlpipe tables migrat:"
            " no such command 'dlpipe tables migrat'"
        ],
        id="continued-line-path-and-assignment",
    ),
    pytest.param(
        "First line, then `dlpipe backfill\n--form D`.",
        ["doc.md:1: dlpipe backfill --form D: no such option --form for 'dlpipe backfill'"],
        id="span-over-two-lines",
    ),
    pytest.param(
        "(`dlpipe: 2 message(s) held: its batch B ended failed; ...: dlpipe run --day D`)",
        [
            "doc.md:1: dlpipe: 2 message(s) held: its batch B ended failed; ...: dlpipe run --day D:"
            " no such option --day for 'dlpipe run'"
        ],
        id="hint-of-an-error-line",
    ),
    pytest.param(
        "`dlpipe status --date D --feeds F --olderthan 1h`",
        [
            "doc.md:1: dlpipe status --date D --feeds F --olderthan 1h:"
            " no such option --feeds for 'dlpipe status'",
            "doc.md:1: dlpipe status --date D --feeds F --olderthan 1h:"
            " no such option --olderthan for 'dlpipe status'",
        ],
        id="every-problem-listed",
    ),
]


@pytest.mark.parametrize(("markdown", "expected"), BAD)
def test_a_bad_reference_is_reported(markdown: str, expected: list[str]) -> None:
    assert check_markdown(markdown, "doc.md") == expected


GOOD = [
    "`dlpipe`",
    "`dlpipe --help` and `dlpipe --version`",
    "`dlpipe jobs --help`, `dlpipe jobs requeue --help`",
    "`dlpipe run --date D --rerun`",
    "`dlpipe run --date=2026-02-28 --feed NAME`",
    "`dlpipe handoff wait|show`",
    "`dlpipe jobs requeue ...` and `dlpipe backfill ...`",
    "`dlpipe jobs requeue FILEID... [--force] [--dry-run]`",
    "`dlpipe jobs stuck --older-than 30m [--status downloading|available]`",
    "`dlpipe jobs list --batch batch-2026-02-28-<uuid>`",
    "`dlpipe jobs CMD`",
    "`dlpipe local up --no-stub`",
    "`dlpipe: 2 message(s) held in the DLQ (nosuch)`",  # an error line, not a command
    "`dlpipe-downloads` and `.dlpipe/keys` and `dlpipe.handoff`",
    "`dlpipe handoff wait --feed F --date D: exit 0, feed F's day nosuch --x`",
    "`dlpipe run --date D (the day it --ran)`",
    "`DLPIPE_LOCALSTACK=1 HOST=127.0.0.1:4566 .venv/bin/dlpipe local provision`",
    "`make run && dlpipe status --json`",
    "```\ndlpipe worker > .dlpipe/worker.log 2>&1 &   # logs\ndlpipe run --date D\n```",
    "```\n. .venv/bin/activate    # `dlpipe nosuch` in a comment\n```",
    "```python\nfrom dlpipe.handoff import wait_for_day\n```",
    "````\n```\n````\n`dlpipe status`",
    "`dlpipe worker --concurrency 4`",
    "`Usage: dlpipe run [OPTIONS]`",
    "`/opt/dlpipe nosuch` and `dlpipe/cli/main.py`",
    "`dlpipe worker --wait-seconds`",  # an option named, its value left out
]


@pytest.mark.parametrize("markdown", GOOD)
def test_a_good_reference_passes(markdown: str) -> None:
    assert check_markdown(markdown, "doc.md") == []


def test_a_copy_of_the_readme_with_a_bad_line_fails_on_that_line(tmp_path: Path) -> None:
    """The whole check, on a copy of the README with two bad references appended."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8").rstrip("\n")
    lines = readme.count("\n") + 1
    before = check_markdown(readme, "docs/README.md")  # the check of the real docs has its own test
    added = "\nRerun with `dlpipe run --no-such-flag`.\n\n```\ndlpipe nosuch\n```\n"
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "README.md").write_text(readme + added, encoding="utf-8")
    (tmp_path / ".venv").mkdir()  # not the project's Markdown
    (tmp_path / ".venv" / "x.md").write_text("`dlpipe nosuch`", encoding="utf-8")
    assert check_tree(tmp_path) == [
        *before,
        f"docs/README.md:{lines + 1}: dlpipe run --no-such-flag:"
        " no such option --no-such-flag for 'dlpipe run'",
        f"docs/README.md:{lines + 4}: dlpipe nosuch: no such command 'dlpipe nosuch'",
    ]
