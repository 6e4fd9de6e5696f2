"""Where the project's own files live (the package is installed editable from the checkout)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "workflow" / "schemas"
PROMPT_DIR = ROOT / "prompts"
