"""Model bundles: a directory of ``.npz`` arrays and JSON, described by ``manifest.json``.

Nothing in a bundle executes code when loaded: arrays are read with
``np.load(allow_pickle=False)``, everything else is JSON. The manifest records the bundle's
kind and format version, the library versions that wrote it, a summary of its training
data, and the SHA-256 of every file, so a truncated or modified file is caught at load
time with a :class:`~aligner.errors.ModelError` that names it.

Layout::

    MODEL_DIR/
      manifest.json      {"kind", "format_version", "files": {name: sha256}, "training", "versions", ...}
      <name>.npz         arrays (no object arrays)
      <name>.json        parameters
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import platform
import re
import time
import zipfile
from importlib import resources
from pathlib import Path

import numpy as np

from aligner import __version__
from aligner.errors import ModelError
from aligner.io.atomic import atomic_write_bytes, atomic_write_text

MANIFEST = "manifest.json"
FORMAT_VERSION = 1
ALIGNMENT_KIND = "alignment"
VOWEL_KIND = "vowels"
G2P_KIND = "g2p"
#: the universal aligner of any IPA phones (:mod:`aligner.alignment.universal`)
UNIVERSAL_KIND = "universal-alignment"
#: default bundle directory name per kind, inside the shipped ``models/`` folder
DEFAULT_NAMES = {ALIGNMENT_KIND: "timit-alignment", VOWEL_KIND: "timit-vowels", G2P_KIND: "g2p-cmudict",
                 UNIVERSAL_KIND: "universal"}
#: the shipped vowel model (front end ``frames``) that re-measures the vowels of an alignment
FUSION_MODEL_NAME = "timit-vowels-fusion"


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


_NPY_MAGIC = b"\x93NUMPY"
_NPY_DESCR = re.compile(r"""['"]descr['"]\s*:\s*['"]([^'"]+)['"]""")
_NPY_ORDER = re.compile(r"""['"]fortran_order['"]\s*:\s*(True|False)""")
_NPY_SHAPE = re.compile(r"""['"]shape['"]\s*:\s*\(([0-9,\s]*)\)""")


def _npy_array(raw: bytes) -> np.ndarray:
    """The array of one ``.npy`` member's bytes, never unpickling anything: a plain dtype's
    header read by three patterns (``np.lib.format``'s reader, which parses the header with
    ``ast.literal_eval``, costs about 0.3 ms per array; a bundle holds over a hundred, most of
    them 0-d settings), anything else by ``np.lib.format.read_array(allow_pickle=False)``. The
    array is writable and owns a copy of the data, as ``np.load``'s."""
    if raw[:6] == _NPY_MAGIC and raw[6] in (1, 2, 3):
        size_bytes = 2 if raw[6] == 1 else 4
        start = 8 + size_bytes
        header_len = int.from_bytes(raw[8:start], "little")
        header = raw[start:start + header_len].decode("latin1")
        descr, order, shape = _NPY_DESCR.search(header), _NPY_ORDER.search(header), _NPY_SHAPE.search(header)
        if descr and order and shape and "[" not in header:
            dtype = np.dtype(descr.group(1))
            if not dtype.hasobject:
                dims = tuple(int(v) for v in shape.group(1).replace(",", " ").split())
                count = int(np.prod(dims, dtype=np.int64)) if dims else 1
                offset = start + header_len
                data = bytearray(raw[offset:offset + count * dtype.itemsize])
                if len(data) != count * dtype.itemsize:
                    raise ValueError(f"array data truncated ({len(data)} of {count * dtype.itemsize} bytes)")
                return np.frombuffer(data, dtype=dtype).reshape(dims, order="F" if order.group(1) == "True" else "C")
    return np.lib.format.read_array(io.BytesIO(raw), allow_pickle=False)


def read_npz(raw: bytes) -> dict:
    """``{name: array}`` of an ``.npz`` file's bytes (``np.savez``'s layout), as
    ``np.load(allow_pickle=False)`` reads it: no object arrays, nothing executed."""
    out = {}
    with zipfile.ZipFile(io.BytesIO(raw)) as archive:
        for member in archive.namelist():
            name = member[:-4] if member.endswith(".npy") else member
            out[name] = _npy_array(archive.read(member))
    return out


def library_versions() -> dict:
    """Versions of the libraries whose numerics a model depends on."""
    import librosa
    import numba
    import sklearn

    return {"aligner": __version__, "python": platform.python_version(), "numpy": np.__version__,
            "numba": numba.__version__, "librosa": librosa.__version__, "scikit-learn": sklearn.__version__}


def whole_number(value, name: str, lo: int, hi: int) -> int:
    """A model parameter ``value`` as an int within ``lo .. hi``, else ValueError naming it and
    the value (loaders turn it into a one-line :class:`ModelError` naming the model)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != int(value):
        raise ValueError(f"{name} must be a whole number, got {value!r}")
    if not lo <= int(value) <= hi:
        raise ValueError(f"{name} = {int(value)} is outside {lo}..{hi}")
    return int(value)


def _write_arrays(directory: Path, stem: str, named: dict) -> Path:
    """Write ``directory/stem.npz`` (atomically, durably) from ``{name: ndarray}``; refuses
    object arrays (they would need pickle to load)."""
    for key, value in named.items():
        if np.asarray(value).dtype == object:
            raise ValueError(f"{stem}.npz: array {key!r} has dtype object, which needs pickle")
    buffer = io.BytesIO()
    np.savez(buffer, **{k: np.asarray(v) for k, v in named.items()})
    path = directory / f"{stem}.npz"
    atomic_write_bytes(path, buffer.getvalue(), durable=True)
    return path


def save_bundle(directory, kind: str, arrays: dict, params: dict, training: dict) -> Path:
    """Write a bundle: ``arrays`` maps file stem -> {name: ndarray}, ``params`` stem -> JSON-able dict.

    Each file is written atomically and durably (fsynced: a model is worth keeping through a power
    cut) and the manifest last, so an interrupted save leaves a
    bundle that fails to load with a clear error rather than one that loads wrong.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    files = {}
    for stem, named in arrays.items():
        path = _write_arrays(directory, stem, named)
        files[path.name] = _sha256(path)
    for stem, obj in params.items():
        path = directory / f"{stem}.json"
        atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=True) + "\n", durable=True)
        files[path.name] = _sha256(path)
    manifest = {
        "kind": kind,
        "format_version": FORMAT_VERSION,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "versions": library_versions(),
        "training": training,
        "files": files,
    }
    atomic_write_text(directory / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n",
                      durable=True)
    return directory


def add_to_bundle(directory, kind: str, arrays: dict, training_note: dict) -> Path:
    """Add (or replace) array files of an existing bundle of ``kind`` without rewriting the
    others: ``arrays`` maps file stem -> {name: ndarray}; ``training_note`` is merged into the
    manifest's ``training`` record. Files are written atomically, the manifest last."""
    directory = Path(directory)
    _, _, manifest = load_bundle(directory, kind)  # verifies what is there
    for stem, named in arrays.items():
        path = _write_arrays(directory, stem, named)
        manifest["files"][path.name] = _sha256(path)
    manifest["training"] = {**manifest.get("training", {}), **training_note}
    atomic_write_text(directory / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True) + "\n",
                      durable=True)
    return directory


def bundle_kind(directory) -> str:
    """The kind a bundle's manifest names (``alignment``, ``universal-alignment``, ...), read
    without loading it; :class:`ModelError` naming the directory when it is no model bundle."""
    directory = Path(directory)
    manifest_path = directory / MANIFEST
    if not directory.is_dir():
        raise ModelError(f"{directory}: model directory not found")
    if not manifest_path.is_file():
        raise ModelError(f"{manifest_path}: missing; {directory} is not a model directory")
    try:
        kind = json.loads(manifest_path.read_text(encoding="utf-8"))["kind"]
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{manifest_path}: corrupted manifest ({exc})") from None
    if not isinstance(kind, str):
        raise ModelError(f"{manifest_path}: corrupted manifest (kind {kind!r})")
    return kind


def load_bundle(directory, kind: str) -> tuple:
    """Read and verify a bundle of ``kind``. Returns ``(arrays, params, manifest)``.

    Raises :class:`ModelError` naming the file for: a missing directory or manifest, an
    unreadable manifest, a bundle of another kind or a newer format, a missing file, a
    checksum mismatch (truncated or modified), or a file that does not parse.
    """
    directory = Path(directory)
    if not directory.is_dir():
        raise ModelError(f"{directory}: model directory not found")
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        raise ModelError(f"{manifest_path}: missing; {directory} is not a model directory")
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
        files = manifest["files"]
        bundle_kind = manifest["kind"]
        version = int(manifest["format_version"])
    except (ValueError, KeyError, TypeError) as exc:
        raise ModelError(f"{manifest_path}: corrupted manifest ({exc})") from None
    if bundle_kind != kind:
        raise ModelError(f"{directory}: a {bundle_kind!r} model, not a {kind!r} model")
    if version > FORMAT_VERSION:
        raise ModelError(f"{directory}: model format {version} is newer than this aligner reads "
                         f"({FORMAT_VERSION}); upgrade aligner")
    arrays, params = {}, {}
    for name, digest in sorted(files.items()):
        path = directory / name
        if Path(name).name != name:
            raise ModelError(f"{manifest_path}: file name {name!r} leaves the model directory")
        if not path.is_file():
            raise ModelError(f"{path}: missing from the model directory")
        raw = path.read_bytes()  # read once: checked, then parsed
        if hashlib.sha256(raw).hexdigest() != digest:
            raise ModelError(f"{path}: corrupted or modified (checksum does not match the manifest)")
        stem, suffix = path.stem, path.suffix
        try:
            if suffix == ".npz":
                arrays[stem] = read_npz(raw)
            elif suffix == ".json":
                params[stem] = json.loads(raw.decode("utf-8"))
            else:
                raise ModelError(f"{path}: unexpected file type in a model directory")
        except ModelError:
            raise
        except Exception as exc:  # numpy/zipfile/json errors on a damaged file
            raise ModelError(f"{path}: cannot be read ({type(exc).__name__}: {exc})") from None
    return arrays, params, manifest


def default_model_dir(kind: str = ALIGNMENT_KIND, name: str | None = None) -> Path:
    """The shipped model of ``kind`` (``name``: another shipped bundle of it, e.g.
    :data:`FUSION_MODEL_NAME`): ``$ALIGNER_MODELS/<name>`` if set, else the packaged ``models/``."""
    name = DEFAULT_NAMES[kind] if name is None else name
    env = os.environ.get("ALIGNER_MODELS")
    candidates = [Path(env) / name] if env else []
    try:
        candidates.append(Path(str(resources.files("aligner._models"))) / name)
    except (ModuleNotFoundError, TypeError):
        pass
    candidates.append(Path(__file__).resolve().parent.parent / "models" / name)  # a source checkout
    for c in candidates:
        if (c / MANIFEST).is_file():
            return c
    raise ModelError(f"no shipped {kind} model found (looked in: {', '.join(map(str, candidates))}); "
                     f"pass --model DIR")
