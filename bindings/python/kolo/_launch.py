"""`kolorun` when kolo is pip-installed: runs the launcher binary shipped inside the package."""
import os
import sys
from pathlib import Path


def main():
    binary = Path(__file__).resolve().parent / "bin" / "kolorun"
    os.execv(str(binary), [str(binary)] + sys.argv[1:])


if __name__ == "__main__":
    main()
