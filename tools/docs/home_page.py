"""MkDocs hook: the site's home page is the README (mkdocs.yml: `hooks:`), so that the two cannot disagree.

index.md is generated at build time from README.md: links into docs/ lose their `docs/` prefix, and links to
the rest of the repository gain `../` (hooks.py then checks and rewrites those as for any page).
"""
import os
import re

from mkdocs.structure.files import File

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
LINK = re.compile(r"(\]\()([^)\s]+)(\))")


def home_page(readme):
    def rewrite(m):
        target = m.group(2)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            return m.group(0)
        target = target[len("docs/"):] if target.startswith("docs/") else "../" + target
        return m.group(1) + target + m.group(3)

    parts = re.split(r"(```.*?```)", readme, flags=re.S)  # code blocks as they are
    return "".join(p if p.startswith("```") else LINK.sub(rewrite, p) for p in parts)


def on_files(files, config):
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        files.append(File.generated(config, "index.md", content=home_page(f.read())))
    return files
