"""Files and models a config names, checked before any work starts.

A config section lists what it names in a ``named_files()`` method: one
:class:`NamedFile` per file (its field, its path, the function that checks it).
The plan-time pass (pipeline.preflight) walks the enabled sections of a run's
config, runs every check (in parallel: some are S3 requests) and reports each
problem as one line naming the field.  Adding a named file to a section is one
line in its ``named_files()``.

A check opens what it needs cheaply: a tokenizer is loaded (a tokenizer.json is
megabytes), a fastText model has its headers and dictionary read, never its
matrices (a quality model can be gigabytes), a list file its first bytes, an
eval set every record (stages/decontam/evalsets.py).

The fields that hold paths are typed :data:`ConfigPath` (pipeline/paths.py makes
them absolute when a config file is loaded; :func:`public_path` is how what a run
publishes shows them).
"""

from __future__ import annotations

import os
import posixpath
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, BinaryIO

#: Opens a local path or s3:// URI for reading (the plan-time pass gives one with the run's S3 settings).
Opener = Callable[[str], BinaryIO]

#: First int32 of every fastText model file (.bin and .ftz), then its version (11 or 12).
FASTTEXT_MAGIC = 793712314
FASTTEXT_VERSIONS = (11, 12)
_HEAD = 1 << 16


class NamedFileError(ValueError):
    """What is wrong with a named file and how to fix it; ``field`` overrides the field it is reported under."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class NamedFile:
    """A file a config section names: ``field`` (relative to the section), ``path``, and its check."""

    field: str
    path: str
    check: Callable[[str, Opener], None]


def relative_hint(path: str) -> str:
    """For a message about a missing file: where a relative path was looked for (the working directory)."""
    if "://" in path or os.path.isabs(os.path.expanduser(path)):
        return ""
    return f" (a relative path is read from the working directory, {os.getcwd()})"


def _head(path: str, open_file: Opener, what: str, size: int | None = _HEAD) -> bytes:
    """The first ``size`` bytes of the file (None: all of it), or a NamedFileError saying what is wrong."""
    try:
        with open_file(path) as f:
            return f.read(size) if size is not None else f.read()
    except FileNotFoundError:
        raise NamedFileError(
            f"no {what} at {path!r} (check the path; it must exist where the run starts){relative_hint(path)}"
        ) from None
    except IsADirectoryError:
        raise NamedFileError(f"{path!r} is a folder, not a {what} file (give the file's path)") from None
    except OSError as e:
        raise NamedFileError(f"{what} {path!r} cannot be read: {e}") from None


def _local(path: str, what: str) -> None:
    if "://" in path:
        raise NamedFileError(f"{path!r}: a {what} is read from a local path on every worker (copy it there)")


def fasttext_model(path: str, open_file: Opener, label: str | None = None) -> None:
    """A supervised fastText model: a local file whose header has the fastText magic and a known version, exactly as
    long as its headers say (a cut or padded file is refused before fastText's loader meets it), with ``label``
    among its labels if given.  Its headers and dictionary are read, never its matrices (classifiers/quality.py:
    ~2 ms for the sample models, ~30 ms for a 115 MB one of 600k words where fastText takes 320 ms and 131 MB to
    load it: benchmarks/results/plan_checks.md)."""
    from classifiers.quality import MissingLabel, QualityModelError, check_model_file

    _local(path, "fastText model")
    head = _head(path, open_file, "fastText model")
    magic, version = struct.unpack("<ii", head[:8]) if len(head) >= 8 else (None, None)
    if magic != FASTTEXT_MAGIC:
        raise NamedFileError(
            f"{path!r} is not a fastText model (.bin or .ftz): it does not start with fastText's magic number"
        )
    if version not in FASTTEXT_VERSIONS:
        raise NamedFileError(f"{path!r} is a fastText model of version {version}, which fastText 0.9 cannot load")
    try:
        check_model_file(path, structure=True, label=label)
    except MissingLabel as e:
        raise NamedFileError(f"{e} (fix label, or name another model)", "label") from None
    except QualityModelError as e:
        raise NamedFileError(str(e)) from None


def fasttext_classifier(label: str) -> Callable[[str, Opener], None]:
    """A supervised fastText model holding ``label`` (:func:`fasttext_model`)."""
    return lambda path, open_file: fasttext_model(path, open_file, label)


def list_file(path: str, open_file: Opener) -> None:
    """A list of entries, one a line (plain, .gz or a tar archive): readable, and text where it is not a tar."""
    import zlib

    _local(path, "list file")
    head = _head(path, open_file, "list file")
    if path.endswith(".gz"):
        try:
            head = zlib.decompressobj(31).decompress(head, 4096)
        except zlib.error:
            raise NamedFileError(f"{path!r} is named .gz but is not gzip data (rename it or recompress it)") from None
    if len(head) > 262 and head[257:262] == b"ustar":  # a tar archive: its members are read by name
        return
    try:
        head[:4096].decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < min(len(head), 4096) - 3:
            raise NamedFileError(f"{path!r} is not a text list (one entry a line, UTF-8) nor a tar archive") from None


def tokenizer_file(specials: dict[str, str | None]) -> Callable[[str, Opener], None]:
    """A tokenizer file of a kind stages.tokenizers loads (a Hugging Face tokenizer.json, a SentencePiece
    .model), holding each special token ``specials`` names (field -> token string, ``auto`` = the
    model's own, None = not used)."""

    def check(path: str, open_file: Opener) -> None:
        from stages.tokenizers import FROM_MODEL, TokenizerFileError, load

        try:
            tokenizer = load(_head(path, open_file, "tokenizer", None), name=path)
        except TokenizerFileError as e:
            raise NamedFileError(str(e).replace(f"{path}: ", f"{path!r}: ", 1)) from None
        defaults = tokenizer.defaults
        own = [t.token for t in (defaults.bos, defaults.eos, defaults.pad) if t is not None]
        hint = f"its own special tokens include {', '.join(map(repr, own))}" if own else "it names no special tokens"
        for field, token in specials.items():
            if token is not None and token != FROM_MODEL and tokenizer.token_to_id(token) is None:
                raise NamedFileError(
                    f"token {token!r} is not in the vocabulary of {path!r} ({hint}; or set it to auto or null)", field
                )
            if field.endswith(".eos") and token == FROM_MODEL and tokenizer.defaults.eos is None:
                raise NamedFileError(
                    f"auto: {path!r} names no EOS token of its own ({hint}): give the token that "
                    "ends a document, or null for none",
                    field,
                )

    return check


def spacy_pipeline(name: str, open_file: Opener) -> None:
    """An installed spaCy pipeline: an importable package, or a folder holding a saved pipeline's config.cfg."""
    import importlib.util
    import os

    if os.path.isdir(name):
        if not os.path.isfile(os.path.join(name, "config.cfg")):
            raise NamedFileError(f"folder {name!r} is not a saved spaCy pipeline (no config.cfg in it)")
        return
    try:
        found = importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise NamedFileError(
            f"spaCy pipeline {name!r} cannot be imported (pip install it, or give the folder of a saved pipeline)"
        )


@dataclass(frozen=True)
class PathField:
    """Marks a config field, or the items of a list or mapping field, as paths: local ones (relative ones are read
    from the working directory) or ``s3://`` URIs.  pipeline/paths.py finds the marked fields: it makes them
    absolute on the driver before anything ships to a worker, and shows them relative again in what a run publishes.
    ``or_name``: the value may instead be a name (an installed spaCy package), which is left as it is."""

    or_name: bool = False


#: A config field holding a path (see :class:`PathField`); adding a path field to a section is giving it this type.
ConfigPath = Annotated[str, PathField()]
#: ... or an installed package's name (a spaCy pipeline).
ConfigPathOrName = Annotated[str, PathField(or_name=True)]


def public_path(value: str, working_dir: str | None) -> str:
    """How a published file shows a path: inside ``working_dir`` relative to it (as a config writes it), any other
    local path by its name; a URI (``s3://``) or a relative path as it is."""
    if "://" in value or not value.startswith(("/", "~")):
        return value
    path = os.path.normpath(os.path.expanduser(value))
    if working_dir:
        inside = os.path.relpath(path, working_dir)
        if inside == ".":
            return "."
        if not inside.startswith(".."):
            return inside
    return posixpath.basename(path.rstrip("/")) or path


def public_text(text: str, working_dir: str | None) -> str:
    """A message as published: the working directory's absolute prefix taken out of it."""
    if not working_dir or working_dir == "/":
        return text
    prefix = working_dir.rstrip("/") + "/"
    return text.replace(prefix, "")
