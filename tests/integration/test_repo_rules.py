"""Rules about the repository itself, checked on the tracked files (git ls-files):

- it stands alone: no file points at the team's design notes outside the
  repository (the design and contract are docs/architecture.md,
  docs/contract.md and topics/);
- the README source maps name every source file: the top README every file
  of libshared and scripts/, each service README every .c file of its src/;
- services do no I/O of their own: no file under services/ includes a
  hiredis, paho or curl header or vigil/redis_raw.h, and no public libshared
  header but redis_raw.h includes one (so a vigil/*.h cannot smuggle one in);
- no code frees a Redis reply with hiredis's freeReplyObject: every
  connection makes its replies with libshared's own functions
  (libshared/src/redis_reply.c), which only vigil_redis_reply_free frees.

Run: /usr/bin/python3 -m pytest -q tests/integration/test_repo_rules.py
"""
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(os.environ.get("VIGIL_SOURCE_DIR") or Path(__file__).resolve().parents[2])


def tracked():
    """Tracked files (and new ones not yet committed), without vendored npm modules."""
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.splitlines() if p and not p.startswith("tests/node_modules/")
            and (ROOT / p).is_file()]


# Built by concatenation so this file does not match itself.
OUTSIDE_NOTES = [n + ".md" for n in ("CON" + "TRACT", "PIT" + "FALLS", "ARCHI" + "TECTURE")]
OUTSIDE_NOTES += [".." + "/shared", "shared/" + "design"]


def test_no_file_points_outside_the_repository():
    hits = []
    for rel in tracked():
        try:
            text = (ROOT / rel).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for n, line in enumerate(text.splitlines(), 1):
            if any(note in line for note in OUTSIDE_NOTES):
                hits.append(f"{rel}:{n}: {line.strip()}")
    assert not hits, "files point at notes outside the repository:\n" + "\n".join(hits)


def test_the_negative_case_is_caught(tmp_path):
    # The pattern list must catch what it is meant to catch.
    line = "see .." + "/shared/" + "design/" + "PIT" + "FALLS.md"
    assert any(note in line for note in OUTSIDE_NOTES)


def readme_block(path, *headings):
    """The README section under the first of headings it has."""
    text = path.read_text(encoding="utf-8")
    found = [(text.find(h), h) for h in headings if text.find(h) >= 0]
    assert found, f"{path} has none of {headings}"
    start, heading = min(found)
    nxt = text.find("\n## ", start + len(heading))
    return text[start:] if nxt < 0 else text[start:nxt]


def test_top_readme_source_map_names_every_libshared_and_script_file():
    block = readme_block(ROOT / "README.md", "### Source layout")
    missing = []
    for rel in tracked():
        parts = rel.split("/")
        if parts[0] == "libshared" and len(parts) >= 3 and parts[1] in ("src", "pure"):
            name = parts[-1]
        elif parts[0] == "scripts":
            name = parts[-1]
        else:
            continue
        if not re.search(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])", block):
            missing.append(rel)
    assert not missing, "README source layout does not name: " + ", ".join(missing)


def services():
    return sorted(p.name for p in (ROOT / "services").iterdir()
                  if (p / "CMakeLists.txt").is_file())


@pytest.mark.parametrize("svc", services())
def test_service_readme_source_map_names_every_file(svc):
    block = readme_block(ROOT / "services" / svc / "README.md", "## Source layout", "## Source map")
    missing = []
    prefix = f"services/{svc}/src/"
    for rel in tracked():
        if not rel.startswith(prefix):
            continue
        name = rel.rsplit("/", 1)[-1]
        if not name.endswith(".c"):
            continue  # a header is the interface of the .c files named
        if not re.search(r"(?<![\w.-])" + re.escape(name) + r"(?![\w-])", block):
            missing.append(rel)
    assert not missing, f"{svc} README source layout does not name: " + ", ".join(missing)


# hiredis, paho (MQTTAsync.h, MQTTClient.h, ...), curl, and libshared's one
# header that exposes hiredis replies (vigil/redis_raw.h, for libshared's
# modules and the CLI).
IO_HEADER = re.compile(r'^\s*#\s*include\s*[<"](hiredis/|MQTT|curl/|vigil/redis_raw\.h)[^>"]*[>"]', re.M)


def io_includes(text):
    return [m.group(0).strip() for m in IO_HEADER.finditer(text)]


def test_no_service_includes_an_io_library_header():
    hits = []
    for rel in tracked():
        if rel.startswith("services/") and rel.endswith((".c", ".h")):
            for inc in io_includes((ROOT / rel).read_text(encoding="utf-8")):
                hits.append(f"{rel}: {inc}")
    assert not hits, "services include I/O headers (use libshared):\n" + "\n".join(hits)


def test_no_service_claims_to_be_libshared():
    # vigil/redis.h shows hiredis replies to libshared's own modules, compiled
    # with VIGIL_LIBSHARED_INTERNAL; a service defining it would see them.
    hits = [rel for rel in tracked()
            if rel.startswith("services/") and rel.endswith((".c", ".h", ".txt", ".cmake"))
            and "VIGIL_LIBSHARED_INTERNAL" in (ROOT / rel).read_text(encoding="utf-8")]
    assert not hits, "services define libshared's internal switch: " + ", ".join(hits)


def test_public_libshared_headers_expose_no_io_library():
    # A service includes vigil/*.h: if one of them pulled in hiredis, paho or
    # curl, the service would see the library's types after all. The one
    # exception is vigil/redis_raw.h, which no service may include (above).
    hits = []
    for rel in tracked():
        if (rel.startswith("libshared/include/") and rel.endswith(".h")
                and not rel.endswith("/redis_raw.h")):
            for inc in io_includes((ROOT / rel).read_text(encoding="utf-8")):
                hits.append(f"{rel}: {inc}")
    assert not hits, "public libshared headers include I/O headers:\n" + "\n".join(hits)


# A call, not a mention in a comment: "freeReplyObject" followed by "(".
FREE_REPLY_CALL = re.compile(r"\bfreeReplyObject\s*\(")


def test_no_code_frees_a_reply_with_hiredis():
    # hiredis's free would free() a reply's string inside the reply's own
    # allocation, or a shared "+OK": a crash, on whichever path does it.
    hits = []
    for rel in tracked():
        if rel.endswith((".c", ".h")):
            text = (ROOT / rel).read_text(encoding="utf-8", errors="replace")
            hits += [f"{rel}:{text.count(chr(10), 0, m.start()) + 1}"
                     for m in FREE_REPLY_CALL.finditer(text)]
    assert not hits, "hiredis's freeReplyObject (use vigil_redis_reply_free):\n" + "\n".join(hits)
    assert FREE_REPLY_CALL.search("  freeReplyObject (rep);")
    assert not FREE_REPLY_CALL.search("never hiredis's freeReplyObject.")


def test_the_io_header_pattern_catches_each_library():
    for inc in ("#include <hiredis/hiredis.h>", '#include "MQTTAsync.h"',
                "#include <MQTTAsync.h>", "#  include <curl/curl.h>",
                "#include <vigil/redis_raw.h>"):
        assert io_includes(inc), inc
    assert not io_includes('#include "vigil/redis.h"')
