"""Every source file of the tree at most 400 lines, every function at most 120: past that a file holds more
than one job, or a function more than one step, and the next reader pays for it. Lists what is over and
exits 1; `--largest N` also lists the N longest files and functions.

    python3 tools/code_size.py [--largest N]        (ctest: code_size)

Sources are the files git tracks (C, C++, CUDA, Python, shell). C-family functions are found by braces:
a body whose opening brace follows a parameter list (a function, a constructor with its initializers, a
gtest TEST, PYBIND11_MODULE), counted from the line its name is on to its closing brace, lambdas inside
included; Python's from its `def` to its last line.
"""
import argparse
import ast
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_FILE_LINES = 400
MAX_FUNCTION_LINES = 120
C_FAMILY = (".c", ".cc", ".h", ".cu", ".cuh")
SOURCES = C_FAMILY + (".py", ".sh")
# What may stand between a parameter list's ")" and the body's "{".
QUALIFIERS = re.compile(r"\)\s*(?:const|noexcept|override|final|mutable|volatile|&|&&|\s|->\s*[\w:<>,*& ]+)*$")
NOT_FUNCTIONS = re.compile(r"(?:^|[^\w])(?:if|for|while|switch|catch|return|sizeof|decltype)\s*\($")


def sources():
    listed = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [ROOT / name for name in listed.split("\n") if name.endswith(SOURCES) and (ROOT / name).is_file()]


def blank_literals_and_comments(text):
    """The text with comments, strings and character literals blanked (lines kept), so that braces and
    parentheses in them do not count."""
    pattern = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|R"\((?:.|\n)*?\)"', re.S)
    return pattern.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def opens_a_function(head):
    """Whether the text before a "{" (since the last ";", "{" or "}") is a function's signature."""
    head = head.strip()
    if not head or re.match(r"(?:namespace|class|struct|union|enum|extern)\b", head) or head.endswith(("=", "]")):
        return False
    # A constructor's initializer list: the signature ends at the ")" before " : ".
    head = re.sub(r"\)\s*:\s*[\w:]+\s*[({].*$", ")", head, flags=re.S) if re.search(r"\)\s*:\s*[\w:]", head) else head
    if not QUALIFIERS.search(head):
        return False
    depth, at = 0, len(head)
    for at in range(len(head) - 1, -1, -1):  # the "(" that opens the last parameter list
        depth += {")": 1, "(": -1}.get(head[at], 0)
        if depth == 0 and head[at] == "(":
            break
    before = head[:at].rstrip()
    return bool(re.search(r"[\w>~\]]$", before)) and not NOT_FUNCTIONS.search(before + "(") and \
        not re.search(r"\[[^\]]*\]\s*$", before)  # a lambda's capture list


def c_functions(path):
    """(first line, last line, name) of each function in a C-family file."""
    text = blank_literals_and_comments(path.read_text(errors="replace"))
    text = re.sub(r"^[ \t]*#[^\n]*", lambda m: " " * len(m.group(0)), text, flags=re.M)  # preprocessor lines
    found, stack, head_start = [], [], 0
    for i, ch in enumerate(text):
        if ch in ";{}":
            if ch == "{":
                head = text[head_start:i]
                in_function = any(kind == "function" for kind, _, _ in stack)
                if not in_function and opens_a_function(head):
                    start = head_start + len(head) - len(head.lstrip())
                    name = re.sub(r"\s+", " ", head.strip())[:70]
                    stack.append(("function", text.count("\n", 0, start) + 1, name))
                else:
                    stack.append(("block", 0, ""))
            elif ch == "}" and stack:
                kind, first, name = stack.pop()
                if kind == "function":
                    found.append((first, text.count("\n", 0, i) + 1, name))
            head_start = i + 1
    return found


def python_functions(path):
    try:
        tree = ast.parse(path.read_text())
    except SyntaxError:
        return []
    return [(node.lineno, node.end_lineno, node.name) for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--largest", type=int, default=0, help="also list the N longest files and functions")
    args = parser.parse_args()
    files, functions = [], []
    for path in sources():
        name = str(path.relative_to(ROOT))
        files.append((path.read_text(errors="replace").count("\n"), name))
        found = c_functions(path) if path.suffix in C_FAMILY else python_functions(path) if path.suffix == ".py" else []
        functions += [(last - first + 1, "%s:%d" % (name, first), what) for first, last, what in found]
    over = [f for f in files if f[0] > MAX_FILE_LINES] + [f[:2] for f in functions if f[0] > MAX_FUNCTION_LINES]
    for lines, where in sorted(over, reverse=True):
        print("over: %s, %d lines (files at most %d, functions at most %d)" % (where, lines, MAX_FILE_LINES,
                                                                               MAX_FUNCTION_LINES))
    if args.largest:
        for title, rows in (("files", files), ("functions", functions)):
            print("the longest %s:" % title)
            for row in sorted(rows, reverse=True)[:args.largest]:
                print("  %5d  %s" % row[:2] + ("  %s" % row[2] if len(row) > 2 else ""))
    print("%d files, %d functions; %d over the limits" % (len(files), len(functions), len(over)))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
