"""docs/architecture.md's table of process-wide variables names every file of src/ that has one, and no other: a
scan of the sources for thread-locals, static variables (in a function or a class) and variables at namespace
scope that are not constants (issue 54: the list called complete had missed three). The runtime's own file, where
the one Runtime lives, is the exception the page states above the table."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
RUNTIME = "src/api/runtime.cc"  # the one Runtime: "outside it" is what the table lists



def constant(code):
    """A constant: constexpr, or const applied to the variable itself (`const int k`, `const char* const k`), not
    to what a pointer points at (`const Labels* current`, which changes)."""
    declaration = re.split(r"[={]", code, maxsplit=1)[0]
    if re.search(r"\bconstexpr\b", declaration):
        return True
    if not re.search(r"\bconst\b", declaration):
        return False
    return "*" not in declaration or bool(re.search(r"\*\s*const\s+\w+\s*(\[.*)?$", declaration.strip()))

# An indented `static` (or `static thread_local`) variable: a name followed by `=`, `{`, `[` or `;` with no `(` before
# it (that would be a function).
STATIC_VARIABLE = re.compile(r"^\s+static\s+(?:thread_local\s+)?[^=;(){}]*?\b\w+\s*(?:=|\{|\[|;)")
# A declaration at column 0 (namespace scope): a type, a name, an optional initializer; not a function, a type's
# declaration, an alias or an extern.
NAMESPACE_VARIABLE = re.compile(r"^(?:inline\s+)?(?:thread_local\s+)?(?:static\s+)?[A-Za-z_][\w:<>, *&]*?[\s*&]\*?(\w+)"
                                r"\s*(?:\{.*\}|=.*|\[.*\])?;\s*(?://.*)?$")
NOT_A_VARIABLE = re.compile(r"^(class|struct|enum|union|friend|using|typedef|namespace|return|extern|template|#)\b")


def state_in(text):
    """The lines of a source file that declare process-wide state."""
    found = []
    for line in text.splitlines():
        code = line.split("//")[0].rstrip()
        if not code or constant(code) or code.lstrip().startswith(("*", "/")):
            continue
        if "thread_local" in code or STATIC_VARIABLE.match(code):
            found.append(line.strip())
        elif NAMESPACE_VARIABLE.match(code) and not NOT_A_VARIABLE.match(code):
            found.append(line.strip())
    return found


def scanned():
    out = {}
    for path in sorted((ROOT / "src").rglob("*")):
        if path.suffix in (".cc", ".h", ".cu", ".cuh"):
            lines = state_in(path.read_text())
            if lines:
                out[str(path.relative_to(ROOT))] = lines
    return out


def table_files():
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text[text.index("A few variables stay process-wide"):]
    section = section[:section.index("\n## ")]
    files = set()
    for row in section.splitlines():
        if row.startswith("| `"):
            files |= set(re.findall(r"`([^`]+)`", row.split("|")[1]))
    return files


def test_the_table_of_process_wide_variables_names_every_file_that_has_one():
    found = scanned()
    assert RUNTIME in found  # the scan still sees the runtime's static
    del found[RUNTIME]
    listed = table_files()
    assert sorted(set(found) - listed) == [], "in src/ but not in the table: %s" % {f: found[f] for f in set(found) - listed}
    assert sorted(listed - set(found)) == [], "in the table but no process-wide variable found there"


def test_the_scan_tells_variables_from_constants_functions_and_types():
    text = """
namespace {
std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
constexpr int kMost = 3;
const char* const kName = "x";
Status helper(int x);
struct Holder;
using Alias = int;
}  // namespace
inline thread_local bool t_in_cycle = false;
thread_local const RankLabels* current_labels = nullptr;
int Foo::count() const {
  static std::mutex mu;
  static Registry* r = new Registry();  // never destroyed
  static const int kLimit = 4;
  static Foo* instance();
  return static_cast<int>(x);
}
"""
    assert state_in(text) == [
        "std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};",
        "inline thread_local bool t_in_cycle = false;",
        "thread_local const RankLabels* current_labels = nullptr;",
        "static std::mutex mu;",
        "static Registry* r = new Registry();  // never destroyed",
    ]
