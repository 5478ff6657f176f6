"""The README stays a first hour and the reference in docs/ stays true to the code.

No services: the pages are read as text, the `policyforge` parser is built as the entry point
builds it, and the Makefile and the budget table are read from the code. Each test fails with the
list of what is wrong, by file and line where there is one.
"""

from __future__ import annotations

import argparse
import importlib
import re
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
TOC = DOCS / "README.md"
PAGES = sorted(DOCS.glob("*.md"))
ALL_PAGES = [README, *PAGES]

MAX_README_LINES = 250
MAX_LINE = 100
# Lines another test reads verbatim from the README, one command per line, so they cannot wrap
# (tests/workers/test_readme_start.py).
VERBATIM_PREFIXES = ("temporal workflow start --type SessionWorkflow",)
# Top-level folders whose paths and `python -m` modules the pages may name.
REPO_DIRS = ("workflows", "activities", "workers", "policyforge", "tests", "deploy", "scripts")

DATE = re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")
# "(measured 2026-11-29, 2-core CPU machine)": a date and what it was measured on.
MEASURED = re.compile(r"\(measured\b([^)]*)\)")
MEASURED_FORM = re.compile(r"^ 20\d\d-[01]\d-[0-3]\d, \S.*$")
# Figures that can only come from a measurement: a speed, an approximate time or size, a speed-up,
# a per-step time, a count of tests.
FIGURE = re.compile(
    r"\d[\d,.]*k? ?steps/s"
    r"|\babout \d[\d.,½-]*\s*(?:s|ms|us|µs|min|minutes?|seconds?|hours?|MB|GB|m/s|x)\b"
    r"|\b\d[\d.]*x faster"
    r"|\b\d[\d.-]* ?(?:us|µs) per\b"
    r"|\b\d[\d,]* tests\b"
)


@dataclass
class Snippet:
    """A piece of code a page shows: an inline code span, or one logical line of a code block."""

    path: Path
    line: int
    text: str
    in_block: bool
    heading: str  # the heading the snippet is under


@dataclass
class Paragraph:
    """Prose between blank lines (a table counts with the paragraph before it)."""

    path: Path
    line: int
    text: str


def rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def fenced(lines: list[str]) -> list[bool]:
    """Per line: inside a fenced code block (the fences included)."""
    inside, marks = False, []
    for line in lines:
        if line.lstrip().startswith("```"):
            marks.append(True)
            inside = not inside
        else:
            marks.append(inside)
    return marks


def snippets(path: Path) -> Iterator[Snippet]:
    lines = path.read_text(encoding="utf-8").split("\n")
    code = fenced(lines)
    heading = ""
    i = 0
    while i < len(lines):
        if code[i]:
            start, text = i, lines[i]
            # A shell line continued with a backslash is one command.
            while text.endswith("\\") and i + 1 < len(lines) and code[i + 1]:
                i += 1
                text = text[:-1] + " " + lines[i].strip()
            if not lines[start].lstrip().startswith("```"):
                yield Snippet(path, start + 1, text, True, heading)
            i += 1
            continue
        if lines[i].startswith("#"):
            heading = lines[i]
        i += 1
    for para in paragraphs(path, tables=False):
        for span in re.findall(r"`([^`]+)`", para.text):
            yield Snippet(path, para.line, span, False, heading_at(lines, para.line))


def heading_at(lines: list[str], line: int) -> str:
    code = fenced(lines)
    for i in range(line - 1, -1, -1):
        if lines[i].startswith("#") and not code[i]:
            return lines[i]
    return ""


def paragraphs(path: Path, tables: bool = True) -> Iterator[Paragraph]:
    """Prose blocks outside code blocks; with `tables`, a table joins the block before it."""
    lines = path.read_text(encoding="utf-8").split("\n")
    code = fenced(lines)
    blocks: list[Paragraph] = []
    current: list[str] = []
    start = 0
    for i, line in enumerate(lines + [""]):
        if i < len(lines) and not code[i] and line.strip():
            if not current:
                start = i + 1
            current.append(line.strip())
            continue
        if current:
            block = Paragraph(path, start, " ".join(current))
            if tables and block.text.startswith("|") and blocks:
                blocks[-1].text += " " + block.text
            else:
                blocks.append(block)
            current = []
    return iter(blocks)


def report(problems: list[str]) -> None:
    assert not problems, "\n" + "\n".join(problems)


# --- (a) the README is short ---------------------------------------------------------------


def test_readme_fits_on_a_few_screens():
    count = len(README.read_text(encoding="utf-8").splitlines())
    assert count <= MAX_README_LINES, (
        f"README.md has {count} lines, at most {MAX_README_LINES}: move reference to docs/"
    )


def test_no_line_is_over_100_characters():
    problems = []
    for path in ALL_PAGES:
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if len(line) > MAX_LINE and not line.startswith(VERBATIM_PREFIXES):
                problems.append(f"{rel(path)}:{n}: {len(line)} characters")
    report(problems)


# --- (b) the table of contents and every link ------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", heading.lstrip("#").strip()).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    lines = path.read_text(encoding="utf-8").split("\n")
    code = fenced(lines)
    seen: dict[str, int] = {}
    found = set()
    for line, in_code in zip(lines, code, strict=True):
        if in_code or not re.match(r"^#{1,6} ", line):
            continue
        base = slug(line)
        n = seen.get(base, 0)
        seen[base] = n + 1
        found.add(base if n == 0 else f"{base}-{n}")
    return found


def links(path: Path) -> Iterator[tuple[int, str]]:
    for para in paragraphs(path, tables=False):
        text = re.sub(r"`[^`]*`", "", para.text)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            yield para.line, target


def test_table_of_contents_links_every_page():
    linked = {(TOC.parent / target.split("#")[0]).resolve() for _, target in links(TOC) if target}
    missing = [rel(p) for p in PAGES if p != TOC and p.resolve() not in linked]
    assert not missing, f"docs/README.md (the table of contents) does not link: {missing}"


def test_readme_links_every_docs_page():
    linked = {(ROOT / target.split("#")[0]).resolve() for _, target in links(README)}
    missing = [rel(p) for p in PAGES if p.resolve() not in linked]
    assert not missing, f"README.md's 'Where to go next' does not link: {missing}"


def test_every_link_resolves():
    problems = []
    for path in ALL_PAGES:
        for line, target in links(path):
            if re.match(r"^[a-z]+:", target):  # http(s), mailto: not checked here
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / file_part).resolve() if file_part else path
            if not dest.exists():
                problems.append(f"{rel(path)}:{line}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                problems.append(f"{rel(path)}:{line}: {target}: no heading #{anchor} there")
    report(problems)


# --- (c) every command, option, make target, module and path named exists --------------------


def cli_parser() -> argparse.ArgumentParser:
    """The parser the `policyforge` entry point builds (pyproject's [project.scripts])."""
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    module = importlib.import_module(scripts["policyforge"].split(":")[0])
    parser: argparse.ArgumentParser = module._parser()
    return parser


def commands(parser: argparse.ArgumentParser) -> dict[str, set[str]]:
    """Each command's option strings (the global ones under '')."""
    found = {"": set(parser._option_string_actions)}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = set(sub._option_string_actions)
    return found


def strip_comment(text: str) -> str:
    return re.split(r"\s#", text, maxsplit=1)[0]


COMMAND = re.compile(r"(?:^|(?<=[\s/(\[]))policyforge[ \t]+([a-z][\w-]*)(.*)")
OPTION = re.compile(r"(?<![\w-])--[a-zA-Z][\w-]*")


def test_every_policyforge_command_and_option_exists():
    known = commands(cli_parser())
    every_option = set().union(*known.values())
    problems = []
    for path in ALL_PAGES:
        for snip in snippets(path):
            text = strip_comment(snip.text) if snip.in_block else snip.text
            where = f"{rel(path)}:{snip.line}"
            named = False
            for match in COMMAND.finditer(text):
                before = text[: match.start()].split()
                if before and before[-1] in ("from", "import"):
                    continue
                named = True
                command, rest = match.group(1), re.split(r";|&&|\s\|\s", match.group(2))[0]
                if command not in known:
                    problems.append(f"{where}: `policyforge {command}`: no such command")
                    continue
                for option in OPTION.findall(rest):
                    if option not in known[command] | known[""]:
                        problems.append(f"{where}: `policyforge {command}` has no {option}")
            if named or snip.in_block or not snip.text.startswith("--"):
                continue
            # An option on its own: of the command whose section it is in, else of any command.
            section = COMMAND.search(snip.heading.replace("`", ""))
            allowed = known.get(section.group(1), set()) | known[""] if section else every_option
            for option in OPTION.findall(snip.text):
                if option not in allowed:
                    owner = f"`policyforge {section.group(1)}`" if section else "any command"
                    problems.append(f"{where}: {option}: not an option of {owner}")
    report(problems)


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text()
    return set(re.findall(r"^([A-Za-z][\w-]*)\s*:(?!=)", text, re.MULTILINE))


def test_every_make_target_exists():
    targets = make_targets()
    problems = []
    for path in ALL_PAGES:
        for snip in snippets(path):
            text = strip_comment(snip.text) if snip.in_block else snip.text
            for target in re.findall(r"(?:^|(?<=\s))make\s+([a-z][\w-]*)", text):
                if target not in targets:
                    problems.append(f"{rel(path)}:{snip.line}: `make {target}`: no such target")
    report(problems)


def test_every_python_module_and_repo_path_exists():
    problems = []
    for path in ALL_PAGES:
        for snip in snippets(path):
            where = f"{rel(path)}:{snip.line}"
            for module in re.findall(r"python -m ([\w.]+)", snip.text):
                if module.split(".")[0] not in REPO_DIRS:
                    continue
                base = ROOT / module.replace(".", "/")
                if not (base.with_suffix(".py").exists() or (base / "__main__.py").exists()):
                    problems.append(f"{where}: `python -m {module}`: no such module")
            token = snip.text.strip()
            if (
                not snip.in_block
                and re.fullmatch(r"[\w./-]+", token)
                and token.split("/")[0] in REPO_DIRS
                and "/" in token
                and not (ROOT / token).exists()
            ):
                problems.append(f"{where}: `{token}`: no such file or folder")
    report(problems)


# --- the budget table is the code's ----------------------------------------------------------


def test_budget_table_matches_the_code():
    from workflows.contracts.budgets import describe

    page = (DOCS / "budgets.md").read_text(encoding="utf-8").splitlines()
    report(
        [
            f"docs/budgets.md: no line {line!r}"
            for line in describe().splitlines()
            if line not in page
        ]
    )


# --- (d) every measured figure carries its date ----------------------------------------------


def test_measured_figures_say_when_and_on_what():
    problems = []
    for path in ALL_PAGES:
        for para in paragraphs(path):
            where = f"{rel(path)}:{para.line}"
            for said in MEASURED.findall(para.text):
                if not MEASURED_FORM.match(said):
                    problems.append(
                        f"{where}: '(measured{said})': write '(measured YYYY-MM-DD, machine)'"
                    )
            if DATE.search(para.text):
                continue
            for figure in FIGURE.finditer(para.text):
                problems.append(f"{where}: '{figure.group(0)}' is a measured figure with no date")
    report(problems)
