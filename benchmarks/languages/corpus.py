"""The data of the language benchmarks, and the folds over it.

* ``../shared/data/voxangeles-train``: 40 languages of audited phone alignments, one folder per
  language (never committed);
* ``../shared/data/timit-sample`` read as IPA (:func:`write_timit_ipa`): each stop with its closure
  one phone, as VoxAngeles (and Montreal Forced Aligner) write stops;
* the leave-languages-out folds (:func:`language_folds`): the 40 languages shuffled with a fixed
  seed and dealt into 5 folds of 8, fixed before any model was trained.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

SHARED = Path(__file__).resolve().parents[3] / "shared" / "data"
VOXANGELES = SHARED / "voxangeles-train"
TIMIT = SHARED / "timit-sample"
#: the seed that deals the languages into folds (fixed before any result)
FOLD_SEED = 45
N_FOLDS = 5
#: the group (language) name of the TIMIT recordings in a combined corpus
TIMIT_GROUP = "timit"


def languages(root: Path = VOXANGELES) -> list:
    """The language folders of ``root``, sorted."""
    return sorted(p.name for p in Path(root).iterdir() if p.is_dir())


def language_folds(root: Path = VOXANGELES, n_folds: int = N_FOLDS, seed: int = FOLD_SEED) -> list:
    """``n_folds`` sorted lists of languages: the sorted languages shuffled by ``seed``, dealt in turn."""
    names = languages(root)
    order = [names[i] for i in np.random.default_rng(seed).permutation(len(names))]
    return [sorted(order[i::n_folds]) for i in range(n_folds)]


_SILENT = {"h#", "pau", "epi"}
_CLOSURES = {"bcl": "b", "dcl": "d", "gcl": "ɡ", "pcl": "p", "tcl": "t", "kcl": "k"}


def timit_ipa_intervals(starts, ends, labels) -> list:
    """TIMIT-61 intervals (samples) as IPA phones in seconds: a closure and the release after it
    one stop (``bcl b`` -> ``b``), a closure without its release the stop itself, ``jh``/``ch``
    after ``dcl``/``tcl`` the affricate; ``q`` the glottal stop ``ʔ``; pauses and utterance edges
    empty (silence), consecutive silences one."""
    from phonecodes import phonecodes

    out = []
    i = 0
    while i < len(labels):
        lab, a, b = labels[i], starts[i], ends[i]
        if lab in _CLOSURES:
            nxt = labels[i + 1] if i + 1 < len(labels) else None
            if nxt is not None and (nxt == lab[0] or (lab in ("dcl", "tcl") and nxt in ("jh", "ch"))):
                b = ends[i + 1]
                ipa = phonecodes.convert(nxt, "timit", "ipa")
                i += 1
            else:
                ipa = _CLOSURES[lab]
        elif lab in _SILENT:
            ipa = ""
        elif lab == "q":
            ipa = "ʔ"
        else:
            ipa = phonecodes.convert(lab, "timit", "ipa")
        ipa = ipa.replace("g", "ɡ")
        if out and ipa == "" and out[-1][2] == "":
            out[-1] = (out[-1][0], b / 16000, "")
        else:
            out.append((a / 16000, b / 16000, ipa))
        i += 1
    return out


def write_timit_ipa(out: Path, data: Path = TIMIT) -> Path:
    """The TIMIT sample as IPA TextGrids under ``out/<speaker folder>/`` (audio linked), once."""
    from aligner.io.corpus import find_utterances
    from aligner.io.textgrids import Interval, write_textgrid
    from aligner.io.transcripts import read_phn

    out = Path(out)
    for utt in find_utterances(data):
        target = out / Path(utt.name).with_suffix(".TextGrid")
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        starts, ends, labels = read_phn(utt.transcript)
        write_textgrid(target, [("phones", [Interval(*iv) for iv in timit_ipa_intervals(starts, ends, labels)])],
                       ends[-1] / 16000)
        link = target.with_suffix(utt.audio.suffix)
        if not link.exists():
            os.symlink(utt.audio.resolve(), link)
    return out


def combined_corpus(out: Path, langs, timit_ipa: Path | None = None) -> Path:
    """A folder of links: ``out/<language>`` to each VoxAngeles language of ``langs`` and, with
    ``timit_ipa``, ``out/timit`` to the TIMIT sample in IPA (one group of 12 speakers)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for lang in langs:
        link = out / lang
        if not link.exists():
            os.symlink((VOXANGELES / lang).resolve(), link)
    if timit_ipa is not None and not (out / TIMIT_GROUP).exists():
        os.symlink(Path(timit_ipa).resolve(), out / TIMIT_GROUP)
    return out


def reference(textgrid: Path) -> tuple:
    """``(start times (K,) s, symbols)`` of a hand-aligned TextGrid's phones, empty intervals as ``sil``."""
    from aligner.io.transcripts import read_reference_phones

    starts, _, labels = read_reference_phones(textgrid)
    return np.asarray(starts, float), [lab.strip() or "sil" for lab in labels]


def language_files(lang: str, root: Path = VOXANGELES) -> list:
    """``[(wav, TextGrid)]`` of one language, sorted."""
    return [(w, w.with_suffix(".TextGrid")) for w in sorted((Path(root) / lang).glob("*.wav"))
            if w.with_suffix(".TextGrid").is_file()]


def main(argv=None):
    """``python -m benchmarks.languages.corpus OUT``: the training corpus of the shipped universal
    model: ``OUT/<language>`` linked to each of the 40 languages, ``OUT/timit`` the TIMIT sample in
    IPA (written under ``OUT-timit-ipa``); then ``aligner train --universal OUT models/universal``."""
    import argparse

    p = argparse.ArgumentParser(description=main.__doc__.split("\n\n")[0])
    p.add_argument("out", type=Path)
    args = p.parse_args(argv)
    timit = write_timit_ipa(args.out.with_name(args.out.name + "-timit-ipa"))
    print(combined_corpus(args.out, languages(), timit))


if __name__ == "__main__":
    main()
