"""MkDocs hooks for kolo's documentation site (mkdocs.yml: `hooks:`).

1. The C++ API reference: `api/cpp.md` is generated at build time from the public headers
   (include/kolo/*.h), each declaration with the comment written above it. No Doxygen: the headers'
   comments are the reference, and this renders them as they are.
2. Links from docs/ to files of the repository outside docs/ (`../benchmarks/README.md`,
   `../examples/pytorch/digits_kolo.py`, ...) are written GitHub-relative, so they work where docs/ is
   read on GitHub. MkDocs cannot check them, so this does: a target missing from the checkout fails
   the build under `--strict` (a warning), as a broken link between pages does. In the site they point
   at `repo_url`'s copy where mkdocs.yml sets one, else at the file in this checkout (the site is built
   inside it, build-docs/site). A link's #anchor into a Markdown file is checked against its headings.
"""
import html
import logging
import os
import re

from mkdocs.structure.files import File

log = logging.getLogger("mkdocs.hooks.kolo")

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
HEADERS = ["kolo.h", "types.h", "tensor.h", "status.h", "c_api.h", "export.h"]
SCHEME = "kolo-source:"

# ---- 1. The C++ reference ---------------------------------------------------------------------

SKIP = re.compile(r"^\s*(#pragma once|#include|#ifndef KOLO_C_API_H_|#define KOLO_C_API_H_|#ifdef __cplusplus|"
                  r"#endif|extern \"C\" \{|namespace kolo \{|\}\s*// namespace|\}\s*$)")
SECTION = re.compile(r"^//\s*-{2,}\s*(.*?)\s*-*\s*$")


def _comment_text(lines):
    """Comment lines (without their markers) as Markdown: prose joined, indented lines kept as code."""
    out, code = [], []
    for line in lines:
        if line.startswith("  ") and line.strip():
            code.append(line[2:])
            continue
        if code:
            out += ["", "```cpp"] + code + ["```", ""]
            code = []
        out.append(_escape(line.strip()))
    if code:
        out += ["", "```cpp"] + code + ["```", ""]
    return "\n".join(out).strip() + "\n"


def _escape(text):
    """Comment prose as Markdown text: `code` spans kept, everything else taken literally."""
    parts = re.split(r"(`[^`]+`)", text)
    return "".join(p if p.startswith("`") and p.endswith("`") and len(p) > 1
                   else re.sub(r"([\\*_\[\]#])", r"\\\1", html.escape(p, quote=False)) for p in parts)


def _strip_comment(line):
    s = line.strip()
    for marker in ("//", "/*", "*/", "*"):
        if s.startswith(marker):
            s = s[len(marker):]
            break
    if s.endswith("*/"):
        s = s[:-2]
    return s[1:] if s.startswith(" ") else s


def render_header(name, text):
    lines = text.splitlines()
    md = [f"## `kolo/{name}`", ""]
    i = 0
    # The file's opening comment: what the header is.
    intro = []
    if lines and lines[0].lstrip().startswith("/*"):
        while i < len(lines):
            intro.append(_strip_comment(lines[i]))
            i += 1
            if lines[i - 1].rstrip().endswith("*/"):
                break
    else:
        while i < len(lines) and lines[i].lstrip().startswith("//"):
            intro.append(_strip_comment(lines[i]))
            i += 1
    if intro:
        md.append(_comment_text(intro))
    depth = 0
    comment, code = [], []

    def flush():
        nonlocal comment, code
        while code and not code[-1].strip():
            code.pop()
        if code:
            md.extend(["```cpp"] + code + ["```", ""])
        if comment:
            md.append(_comment_text(comment))
        comment, code = [], []

    in_block_comment = False
    for line in lines[i:]:
        s = line.strip()
        if depth == 0 and not in_block_comment:
            if SKIP.match(line):
                continue
            m = SECTION.match(s)
            if m:
                flush()
                md.extend([f"### {m.group(1)}", ""])
                continue
            if s.startswith("//") or s.startswith("/*"):
                if code:
                    flush()
                comment.append(_strip_comment(line))
                in_block_comment = s.startswith("/*") and not s.endswith("*/")
                continue
            if not s:
                if code:
                    flush()
                elif comment:
                    flush()
                continue
        elif in_block_comment:
            comment.append(_strip_comment(line))
            in_block_comment = not s.endswith("*/")
            continue
        code.append(line)
        depth += line.count("{") - line.count("}")
        depth = max(depth, 0)
    flush()
    return "\n".join(md)


def cpp_reference():
    md = ["# C++ and C API reference", "",
          "Generated at build time from the public headers in "
          "[`include/kolo`](../../include/kolo/kolo.h): every declaration with the comment written above it "
          "(`tools/docs/hooks.py`). [C++](../frameworks/cpp.md) shows how the API is used.", ""]
    for name in HEADERS:
        with open(os.path.join(ROOT, "include", "kolo", name), encoding="utf-8") as f:
            md.append(render_header(name, f.read()))
    return "\n".join(md) + "\n"


def on_files(files, config):
    files.append(File.generated(config, "api/cpp.md", content=cpp_reference()))
    return files


# ---- 2. Links to the repository outside docs/ -------------------------------------------------

LINK = re.compile(r"(\]\()([^)\s]+)(\))")


_anchors = {}


def anchors_of(path):
    """The ids MkDocs' toc gives the headings of a Markdown file (fenced code left out), cached."""
    if path not in _anchors:
        from markdown.extensions.toc import slugify
        with open(path, encoding="utf-8") as f:
            text = re.sub(r"```.*?```", "", f.read(), flags=re.S)
        headings = re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, flags=re.M)
        _anchors[path] = {slugify(re.sub(r"[`*]|\[([^]]*)\]\([^)]*\)", r"\1", h), "-") for h in headings}
    return _anchors[path]


def on_page_markdown(markdown, page, config, files):
    docs_dir = config["docs_dir"]
    page_dir = os.path.dirname(os.path.join(docs_dir, page.file.src_path))

    def rewrite(m):
        target = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return m.group(0)
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(page_dir, path))
        if full.startswith(os.path.normpath(docs_dir) + os.sep) or not full.startswith(ROOT + os.sep):
            return m.group(0)  # a page of the site (MkDocs checks it), or nowhere in the repository
        rel = os.path.relpath(full, ROOT)
        if not os.path.exists(full):
            log.warning("%s links to '%s', which is not in the repository", page.file.src_path, target)
        elif anchor and full.endswith(".md") and anchor not in anchors_of(full):
            log.warning("%s links to '%s', whose file has no heading '#%s'", page.file.src_path, target, anchor)
        return m.group(1) + SCHEME + rel + ("#" + anchor if anchor else "") + m.group(3)

    # Leave code blocks alone.
    parts = re.split(r"(```.*?```)", markdown, flags=re.S)
    return "".join(p if p.startswith("```") else LINK.sub(rewrite, p) for p in parts)


def on_page_content(html_text, page, config, files):
    repo_url = config.get("repo_url")
    edit = (config.get("extra", {}) or {}).get("kolo_source_branch", "main")
    out_dir = os.path.dirname(os.path.join(config["site_dir"], page.file.dest_path))

    def href(m):
        rel = m.group(1)
        path, _, anchor = rel.partition("#")
        if repo_url:
            url = repo_url.rstrip("/") + "/blob/" + edit + "/" + path
        else:
            url = os.path.relpath(os.path.join(ROOT, path), out_dir)
        return 'href="' + url + ("#" + anchor if anchor else "") + '"'

    return re.sub(r'href="' + SCHEME + r'([^"]*)"', href, html_text)
