"""What the trestle checks share: reading an OSCAL document on standard input with one of
compliance-trestle's models, and a model value's plain text."""

import sys
import tempfile
from pathlib import Path


def read(model, name):
    """The document on standard input, validated by `model` (trestle's `oscal_read` unwraps the
    `{"<name>": {...}}` envelope and checks every field)."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / f"{name}.json"
        path.write_bytes(sys.stdin.buffer.read())
        return model.oscal_read(path)


def plain(value):
    """A model's token or enum as the text it holds."""
    value = getattr(value, "root", getattr(value, "__root__", value))
    return getattr(value, "value", value)
