#!/usr/bin/env python3
"""Runs every command block of README.md and docs/*.md as written and checks
the output the docs show.  Usage: doc_blocks.py SOURCE_ROOT BUILD_ROOT [FILE...]

What runs:
- a fenced block opened with ```sh, ```bash or ```console is a shell block:
  bash runs its text as one script with `set -e -o pipefail`, so every
  command in it must succeed; ```python is a Python block: python3 runs it
  with the source tree's package (PYTHONPATH=python, PARALLAX_LIBRARY the
  build's libparallax), which is what `pip install .` puts in a venv;
- blocks run in document order, each in a fresh shell, in one scratch copy of
  the repository root per document (every top-level entry linked, build/ the
  tested build, ../shared linked when it exists), so a block may use the
  files an earlier block of the same document wrote;
- the environment is the caller's minus every OMPI_* variable (the test
  harness sets Open MPI's run-as-root and oversubscribe ones): a command that
  needs them (mpirun as root) sets them itself, as a user would;
- a marker on the last non-blank line before the opening fence changes that:
  <!-- doctest: skip (REASON) -->   not run; counted as skipped with REASON
  <!-- doctest: needs PATH -->       skipped unless PATH (from the repository
                                     root) exists, e.g. ../shared/data/X.json
- the expected output: when the next fenced block after a command block is
  opened with ```text, each of its non-blank lines must appear in the
  command's output (stdout and stderr), in that order, other lines allowed in
  between.  Runs of spaces compare as one space, and `...` in a shown line
  matches any text within a line (numbers that vary from run to run: times,
  measured rates); everything else must match exactly.

Prints one line per block ("ok", "FAIL" or "skip", FILE:LINE, the seconds it
took or the reason) and a closing count; exits 1 when a block failed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SHELL_LANGS = ("sh", "bash", "console")
MARKER = re.compile(r"^<!--\s*doctest:\s*(skip|needs)\s*(.*?)\s*-->$")
BLOCK_TIMEOUT_S = 300


def parse_blocks(path):
    """The fenced blocks of a Markdown file: dicts with lang, line (of the
    opening fence), text and marker (the doctest comment before it, or None)."""
    blocks, lines = [], open(path, encoding="utf-8").read().split("\n")
    i, last_nonblank = 0, ""
    while i < len(lines):
        stripped = lines[i].strip()
        if stripped.startswith("```"):
            lang, start, body = stripped[3:].strip(), i + 1, []
            i += 1
            while i < len(lines) and not lines[i].strip().startswith("```"):
                body.append(lines[i])
                i += 1
            m = MARKER.match(last_nonblank)
            blocks.append({"lang": lang, "line": start, "text": "\n".join(body) + "\n",
                           "marker": (m.group(1), m.group(2)) if m else None})
            last_nonblank = ""
        elif stripped:
            last_nonblank = stripped
        i += 1
    return blocks


def line_pattern(shown):
    """A shown output line as a regular expression: `...` is any text,
    runs of spaces are one or more spaces, the rest literal."""
    parts = [re.escape(" ".join(p.split())).replace(r"\ ", " +") for p in shown.split("...")]
    return re.compile("^ *" + ".*?".join(parts) + " *$")


def check_output(expected, output):
    """None when every non-blank expected line appears in output in order,
    else the first line that does not."""
    got = [" ".join(l.split()) for l in output.split("\n")]
    pos = 0
    for shown in (l for l in expected.split("\n") if l.strip()):
        pat = line_pattern(shown.strip())
        while pos < len(got) and not pat.match(got[pos]):
            pos += 1
        if pos == len(got):
            return shown.strip()
        pos += 1
    return None


def scratch_root(tmp, source, build):
    """tmp/repo: every top-level entry of the source linked, build/ -> the
    tested build; tmp/shared -> the source's ../shared when it exists."""
    repo = os.path.join(tmp, "repo")
    os.mkdir(repo)
    for name in os.listdir(source):
        if name in ("build", ".git"):
            continue
        os.symlink(os.path.join(source, name), os.path.join(repo, name))
    os.symlink(build, os.path.join(repo, "build"))
    shared = os.path.join(os.path.dirname(source), "shared")
    if os.path.isdir(shared):
        os.symlink(shared, os.path.join(tmp, "shared"))
    return repo


def block_env(source, build):
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMPI_")}
    env["PYTHONPATH"] = os.path.join(source, "python")
    env["PARALLAX_LIBRARY"] = os.path.join(build, "planner", "libparallax.so")
    return env


def run_block(block, cwd, env):
    """(ok, seconds, message)."""
    if block["lang"] == "python":
        argv = [sys.executable, "-c", block["text"]]
    else:
        argv = ["bash", "-e", "-o", "pipefail", "-c", block["text"]]
    t0 = time.monotonic()
    try:
        p = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, timeout=BLOCK_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        return False, time.monotonic() - t0, f"did not finish in {BLOCK_TIMEOUT_S} s", \
            (e.output or b"").decode(errors="replace")
    out = p.stdout.decode(errors="replace")
    dt = time.monotonic() - t0
    if p.returncode != 0:
        return False, dt, f"exit status {p.returncode}", out
    if block.get("expected") is not None:
        missing = check_output(block["expected"], out)
        if missing is not None:
            return False, dt, f"shown output line not printed: {missing!r}", out
    return True, dt, "", out


def run_document(path, rel, source, build, counts):
    blocks = parse_blocks(path)
    for k, b in enumerate(blocks):
        nxt = blocks[k + 1] if k + 1 < len(blocks) else None
        b["expected"] = nxt["text"] if nxt and nxt["lang"] == "text" else None
    commands = [b for b in blocks if b["lang"] in SHELL_LANGS + ("python",)]
    if not commands:
        return
    tmp = tempfile.mkdtemp(prefix="px-doctest-")
    try:
        cwd = scratch_root(tmp, source, build)
        env = block_env(source, build)
        for b in commands:
            where = f"{rel}:{b['line']}"
            kind, arg = b["marker"] or (None, "")
            if kind == "skip":
                print(f"skip {where} {arg}")
                counts["skipped"] += 1
                continue
            if kind == "needs" and not os.path.exists(os.path.join(cwd, arg)):
                print(f"skip {where} (needs {arg}, absent)")
                counts["skipped"] += 1
                continue
            ok, dt, why, out = run_block(b, cwd, env)
            if ok:
                print(f"ok   {where} ({dt:.1f} s)")
                counts["ok"] += 1
            else:
                print(f"FAIL {where} ({dt:.1f} s): {why}")
                print("     | " + "\n     | ".join(out.rstrip().split("\n")[-25:]))
                counts["failed"] += 1
            sys.stdout.flush()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv):
    if len(argv) < 3:
        print("usage: doc_blocks.py SOURCE_ROOT BUILD_ROOT [FILE...]", file=sys.stderr)
        return 2
    source, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    files = argv[3:] or ["README.md"] + sorted(
        os.path.join("docs", f) for f in os.listdir(os.path.join(source, "docs"))
        if f.endswith(".md"))
    counts = {"ok": 0, "failed": 0, "skipped": 0}
    t0 = time.monotonic()
    for rel in files:
        run_document(os.path.join(source, rel), rel, source, build, counts)
    print(f"# docs: {counts['ok']} ok, {counts['failed']} failed, {counts['skipped']} skipped "
          f"in {time.monotonic() - t0:.1f} s")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
