"""Where the package's own data lives: schemas and prompts ship inside the package and are
found with importlib.resources, so a non-editable install (a wheel) works as well as the
editable checkout."""

from importlib.resources import files
from pathlib import Path

# Package data lives in a plain folder of the installed package (never a zip): a Path.
SCHEMA_DIR = Path(str(files("mcptrials") / "schemas"))
PROMPT_DIR = Path(str(files("mcptrials") / "prompts"))
# The source checkout (demo/ sources for `mcptrials demo-bundle`); only meaningful editable.
ROOT = Path(__file__).resolve().parents[3]
