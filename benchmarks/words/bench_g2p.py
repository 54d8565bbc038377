"""Benchmark G2P for unknown words: our CMUdict-trained tagger against offline PyPI G2P systems.

The test words are 2000 CMUdict words drawn as ``random.Random(0).sample(sorted(words), 2000)``
from the dictionary's words of letters and apostrophes only (the held-out set of the "align
from words" research; ``--heldout FILE`` reads a ``{word: [[phones], ...]}`` JSON instead).
Our model (:mod:`aligner.words.g2p`, trained by :mod:`aligner.words.g2p_train`) is trained on CMUdict minus these words; the PyPI systems
were built from CMUdict-derived data or hand-written rules and may well have seen them.

Metrics, per system, on the held-out words (references: all of the word's CMUdict
pronunciations):

* WER: the first prediction matches none of the references (stress ignored; for systems that
  predict stress, also with stress); for ours also the share of words that none of the first
  n pronunciations of its n-best list matches (:func:`n_best_misses`);
* PER: edit distance to the closest reference / that reference's length (summed over words);
* words/s of prediction (one word at a time, after warm-up; espeak: one batch call) and the
  setup time (import + model load; ours in a fresh interpreter, numba cache warm).

Candidates: gruut (CRF, IPA), espeak-ng via phonemizer (IPA), g2p_en (numpy GRU, ARPAbet; with
the workaround for its NLTK downloads), g2p2 (IPA). IPA is mapped to ARPAbet by approximate
tables (below), which costs the IPA systems some errors of their own. Each runs in this
interpreter if importable, or in another one given as ``--python NAME=/path/to/python`` (run
with this repository on PYTHONPATH; that process imports no ``aligner`` code). Usage::

    python -m benchmarks.words.bench_g2p [--model DIR] [--train] [--max-train N] [--epochs E]
        [--trainer perceptron] [--python gruut=/venv/bin/python ...] [--json OUT]

``--train`` trains a model (about 15 minutes on the full dictionary on one core) and saves it
to ``--model`` (default /work/scratch/g2p-model); otherwise the model there is loaded.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_MODEL = Path("/work/scratch/g2p-model")
CANDIDATES = ("gruut", "espeak", "g2p_en", "g2p2")

#: which systems may have seen the held-out words in training (see the module docstring)
SEEN = {
    "ours": "no (held out of training)",
    "gruut": "yes: its G2P training alignments hold 1975 of the 2000 words (lexicon = CMUdict)",
    "espeak": "unknown: hand-written rules plus an exception dictionary",
    "g2p_en": "likely: trained on CMUdict, split unknown",
    "g2p2": "unknown",
}

# ---------------------------------------------------------------------------------------------
# IPA -> ARPAbet (approximate; stress and length marks dropped)
# ---------------------------------------------------------------------------------------------

_IPA_SYMBOL = {
    "ə": "AH", "ʌ": "AH", "ɚ": "ER", "ɝ": "ER", "i": "IY", "ɪ": "IH", "ɛ": "EH", "æ": "AE", "ɑ": "AA",
    "ɔ": "AO", "ʊ": "UH", "u": "UW", "oʊ": "OW", "eɪ": "EY", "aɪ": "AY", "aʊ": "AW", "ɔɪ": "OY",
    "n": "N", "l": "L", "s": "S", "t": "T", "ɹ": "R", "k": "K", "d": "D", "m": "M", "z": "Z",
    "b": "B", "p": "P", "ɡ": "G", "f": "F", "ŋ": "NG", "v": "V", "h": "HH", "ʃ": "SH", "w": "W",
    "d͡ʒ": "JH", "j": "Y", "t͡ʃ": "CH", "θ": "TH", "ð": "DH", "ʒ": "ZH",
}

_IPA_STRING = {
    "aɪə": ["AY", "ER"], "aɪɚ": ["AY", "ER"], "aʊɚ": ["AW", "ER"],
    "oʊ": ["OW"], "əʊ": ["OW"], "eɪ": ["EY"], "aɪ": ["AY"], "ɑɪ": ["AY"], "aʊ": ["AW"], "ɔɪ": ["OY"],
    "iə": ["IY", "AH"], "ɪɹ": ["IH", "R"], "ɛɹ": ["EH", "R"], "ʊɹ": ["UH", "R"], "ɔɹ": ["AO", "R"],
    "ɑɹ": ["AA", "R"], "ɚɹ": ["ER"], "ɜɹ": ["ER"],
    "t͡ʃ": ["CH"], "d͡ʒ": ["JH"], "tʃ": ["CH"], "dʒ": ["JH"], "n̩": ["AH", "N"], "l̩": ["AH", "L"],
    "m̩": ["AH", "M"],
    "i": ["IY"], "ɪ": ["IH"], "ᵻ": ["IH"], "ɨ": ["IH"], "e": ["EY"], "ɛ": ["EH"], "æ": ["AE"], "a": ["AE"],
    "ɑ": ["AA"], "ɒ": ["AA"], "ɔ": ["AO"], "o": ["OW"], "ʊ": ["UH"], "u": ["UW"], "ʌ": ["AH"], "ə": ["AH"],
    "ɐ": ["AH"], "ɚ": ["ER"], "ɝ": ["ER"], "ɜ": ["ER"],
    "p": ["P"], "b": ["B"], "t": ["T"], "d": ["D"], "k": ["K"], "ɡ": ["G"], "g": ["G"], "f": ["F"],
    "v": ["V"], "θ": ["TH"], "ð": ["DH"], "s": ["S"], "z": ["Z"], "ʃ": ["SH"], "ʒ": ["ZH"], "h": ["HH"],
    "m": ["M"], "n": ["N"], "ŋ": ["NG"], "l": ["L"], "ɹ": ["R"], "r": ["R"], "w": ["W"], "j": ["Y"],
    "ɾ": ["T"], "ʔ": ["T"], "x": ["K"], "ç": ["HH"],
}
_IPA_KEYS = sorted(((k.replace("\u0361", ""), v) for k, v in _IPA_STRING.items()), key=lambda kv: -len(kv[0]))


def ipa_symbols_to_arpabet(symbols) -> list:
    """gruut's IPA phone list -> ARPAbet (unknown symbols kept as ``?x``)."""
    out = []
    for p in symbols:
        p = p.replace("ˈ", "").replace("ˌ", "")
        out.append(_IPA_SYMBOL.get(p, "?" + p))
    return out


def ipa_string_to_arpabet(s: str) -> list:
    """An IPA string (espeak, g2p2) -> ARPAbet by greedy longest match (unknown: ``?x``)."""
    s = re.sub("[ˈˌː\u200d\u0361 .-]", "", s)
    out, i = [], 0
    while i < len(s):
        for key, phones in _IPA_KEYS:
            if s.startswith(key, i):
                out += phones
                i += len(key)
                break
        else:
            out.append("?" + s[i])
            i += 1
    return out


# ---------------------------------------------------------------------------------------------
# candidates (run in whichever interpreter has them; nothing here imports aligner)
# ---------------------------------------------------------------------------------------------


def _setup_gruut():
    import gruut_lang_en
    from gruut.g2p import GraphemesToPhonemes

    g = GraphemesToPhonemes(os.path.join(os.path.dirname(gruut_lang_en.__file__), "g2p", "model.crf"))
    return lambda w: ipa_symbols_to_arpabet(g(w)), "gruut CRF (gruut-lang-en g2p/model.crf), IPA"


def _setup_g2p_en():
    import inspect

    import nltk

    nltk.download = lambda *a, **k: False  # g2p_en downloads NLTK data at import; offline it cannot
    import numpy
    from g2p_en import g2p as g2p_module

    g = g2p_module.G2p.__new__(g2p_module.G2p)  # skip __init__: it loads NLTK's cmudict (not available)
    src = inspect.getsource(g2p_module.G2p.__init__).splitlines()
    body = "\n".join(line[8:] for line in src[1:] if "cmudict" not in line and "super()" not in line)
    exec(body, {"np": numpy, "construct_homograph_dictionary": g2p_module.construct_homograph_dictionary},
         {"self": g})
    return lambda w: list(g.predict(w)), "g2p_en neural model (G2p.predict, numpy GRU), ARPAbet"


def _setup_g2p2():
    import g2p2

    g2p2.phonemize("a", language="en")
    return lambda w: ipa_string_to_arpabet(g2p2.phonemize(w, language="en")), "g2p2 (en), IPA"


def run_candidate(name: str, words: list) -> dict:
    """Predictions of one PyPI system in this interpreter: ``{system, setup_s, seconds, predictions}``."""
    t = time.perf_counter()
    if name == "espeak":
        from phonemizer.backend import EspeakBackend

        backend = EspeakBackend("en-us", with_stress=False)
        setup = time.perf_counter() - t
        t = time.perf_counter()
        out = backend.phonemize(words, strip=True, njobs=1)  # one batch call, as one would use it
        seconds = time.perf_counter() - t
        preds = [ipa_string_to_arpabet(o) for o in out]
        system = "espeak-ng via phonemizer (batch), IPA"
    else:
        predict, system = {"gruut": _setup_gruut, "g2p_en": _setup_g2p_en, "g2p2": _setup_g2p2}[name]()
        setup = time.perf_counter() - t
        predict(words[0])
        t = time.perf_counter()
        preds = [predict(w) for w in words]
        seconds = time.perf_counter() - t
    return {"system": system, "setup_s": setup, "seconds": seconds, "predictions": dict(zip(words, preds))}


def _importable(name: str) -> bool:
    import importlib.util

    module = {"gruut": "gruut", "espeak": "phonemizer", "g2p_en": "g2p_en", "g2p2": "g2p2"}[name]
    return importlib.util.find_spec(module) is not None


def candidate_results(name: str, words: list, python: str | None) -> dict | None:
    """Run a candidate here if importable, else in ``python``; None if neither can."""
    if python is None:
        return run_candidate(name, words) if _importable(name) else None
    with tempfile.TemporaryDirectory() as tmp:
        words_file, out_file = Path(tmp) / "words.json", Path(tmp) / "out.json"
        words_file.write_text(json.dumps(words))
        env = dict(os.environ, PYTHONPATH=str(REPO))
        proc = subprocess.run([python, "-m", "benchmarks.words.bench_g2p", "--candidate", name,
                               "--words-file", str(words_file), "--out", str(out_file)],
                              cwd=REPO, env=env, capture_output=True, text=True)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["?"])[-1]
            return {"error": f"{python}: {tail}"}
        return json.loads(out_file.read_text())


# ---------------------------------------------------------------------------------------------
# our model
# ---------------------------------------------------------------------------------------------

_LOAD_CHILD = r"""
import json, sys, time
t0 = time.perf_counter()
from aligner.words.g2p import G2PModel
t1 = time.perf_counter()
m = G2PModel.load(sys.argv[1])
t2 = time.perf_counter()
m.predict("hello")
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "load_s": t2 - t1, "first_predict_s": t3 - t2}))
"""


def load_times(model_dir: Path, repeats: int = 3) -> dict:
    """Median import / load / first-prediction times of our model in fresh interpreters."""
    runs = []
    for _ in range(repeats):
        out = subprocess.run([sys.executable, "-c", _LOAD_CHILD, str(model_dir)], capture_output=True,
                             text=True, check=True)
        runs.append(json.loads(out.stdout))
    return {k: sorted(r[k] for r in runs)[len(runs) // 2] for k in runs[0]}


def heldout_words(path: str | None) -> list:
    if path:
        return list(json.loads(Path(path).read_text()))
    from aligner.words.dictionary import load_cmudict

    words = [w for w in load_cmudict() if re.fullmatch(r"[a-z']+", w)]
    return random.Random(0).sample(sorted(words), 2000)


def model_size(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.iterdir() if f.is_file())


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", type=Path, default=DEFAULT_MODEL,
                        help="model directory (loaded, or written with --train)")
    parser.add_argument("--train", action="store_true", help="train a model first and save it to --model")
    parser.add_argument("--trainer", default="perceptron")
    parser.add_argument("--epochs", type=int, default=8)
    parser.add_argument("--eta0", type=float, default=1.0)
    parser.add_argument("--max-train", type=int, default=None, help="cap on training words (random subset)")
    parser.add_argument("--bits", type=int, default=18)
    parser.add_argument("--heldout", default=None, help="held-out words JSON (default: regenerate the seed-0 sample)")
    parser.add_argument("--python", action="append", default=[], metavar="NAME=PYTHON",
                        help=f"run candidate NAME ({', '.join(CANDIDATES)}) in another interpreter")
    parser.add_argument("--no-candidates", action="store_true")
    parser.add_argument("--json", default=None, help="also write the results here")
    # internal: candidate mode (run in another interpreter)
    parser.add_argument("--candidate", choices=CANDIDATES, help=argparse.SUPPRESS)
    parser.add_argument("--words-file", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.candidate:
        words = json.loads(Path(args.words_file).read_text())
        Path(args.out).write_text(json.dumps(run_candidate(args.candidate, words)))
        return

    from aligner.words.dictionary import load_cmudict
    from aligner.words.g2p import G2PModel, score_predictions

    words = heldout_words(args.heldout)
    cmu = load_cmudict()
    refs = {w: cmu.pronunciations(w) for w in words}
    missing = [w for w, r in refs.items() if not r]
    if missing:
        sys.exit(f"held-out words missing from CMUdict: {missing[:5]}")

    if args.train:
        from aligner.words.g2p_train import train_g2p, training_entries

        t = time.perf_counter()
        entries = training_entries(cmu, exclude=words)
        model, _ = train_g2p(entries, trainer=args.trainer,
                             trainer_params={"epochs": args.epochs, "eta0": args.eta0, "average": True,
                                             "patience": 2},
                             bits=args.bits, max_train=args.max_train, log=lambda m: print(m, flush=True))
        model.training["total_seconds"] = round(time.perf_counter() - t, 1)
        model.save(args.model)
        print(f"trained in {time.perf_counter() - t:.0f} s; saved to {args.model}")
    model = G2PModel.load(args.model)  # must have been trained without the held-out words

    rows = []
    model.predict(words[0])
    t = time.perf_counter()
    ours = {w: model.predict(w) for w in words}
    seconds = time.perf_counter() - t
    times = load_times(args.model)
    tr = model.training
    rows.append({"name": "ours", "system": f"aligner.words.g2p ({tr.get('trainer', '?')}, "
                                           f"{tr.get('n_train', '?')} training words)",
                 "stressless": score_predictions(ours, refs), "stress": score_predictions(ours, refs, stress=True),
                 "words_per_s": len(words) / seconds,
                 "setup_s": times["import_s"] + times["load_s"] + times["first_predict_s"],
                 "setup_detail": times, "size_bytes": model_size(args.model), "seen": SEEN["ours"]})
    rows[0]["n_best"] = n_best_misses(model, refs)

    pythons = dict(p.split("=", 1) for p in args.python)
    for name in () if args.no_candidates else CANDIDATES:
        res = candidate_results(name, words, pythons.get(name))
        if res is None:
            print(f"{name}: not installed here (pass --python {name}=/path/to/python)")
            continue
        if "error" in res:
            print(f"{name}: failed: {res['error']}")
            continue
        preds = {w: tuple(p) for w, p in res["predictions"].items()}
        has_stress = any(p[-1:].isdigit() for ps in preds.values() for p in ps)  # g2p_en: ARPAbet with stress
        rows.append({"name": name, "system": res["system"], "stressless": score_predictions(preds, refs),
                     "stress": score_predictions(preds, refs, stress=True) if has_stress else None,
                     "words_per_s": len(words) / res["seconds"], "setup_s": res["setup_s"],
                     "seen": SEEN[name]})

    print(f"\n{len(words)} held-out CMUdict words; WER/PER without stress (with stress where predicted)")
    print(f"{'system':<10} {'WER':>7} {'PER':>7} {'WER+str':>8} {'PER+str':>8} {'words/s':>9} {'setup s':>8}"
          "  saw test words?")
    for r in rows:
        s, st = r["stressless"], r["stress"]
        with_stress = f"{st['wer']:8.1%} {st['per']:8.1%}" if st else f"{'-':>8} {'-':>8}"
        print(f"{r['name']:<10} {s['wer']:7.1%} {s['per']:7.1%} {with_stress} "
              f"{r['words_per_s']:9.0f} {r['setup_s']:8.2f}  {r['seen']}")
    print(f"\nours: {rows[0]['system']}; model {rows[0]['size_bytes'] / 1e6:.1f} MB at {args.model}; "
          f"setup = import {times['import_s']:.2f} s + load {times['load_s']:.2f} s + first prediction "
          f"{times['first_predict_s']:.2f} s (fresh interpreter, numba cache warm)")
    misses = rows[0]["n_best"]
    print("ours, n-best (what the word decoder is offered for an unknown word): no reference among the first "
          + ", ".join(f"{n}: {misses[n]:.1%}" for n in sorted(misses)))
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")


def n_best_misses(model, refs: dict, most: int = 4) -> dict:
    """``{n: share of words none of whose first n pronunciations (stress ignored) is a reference}``
    for n = 1..``most``, from :meth:`G2PModel.predict_n_best`."""
    from aligner.words.g2p import strip_stress

    missed = {n: 0 for n in range(1, most + 1)}
    for word, references in refs.items():
        wanted = {strip_stress(r) for r in references}
        ranked = [strip_stress(p) for p, _ in model.predict_n_best(word, most)]
        first = next((k for k, p in enumerate(ranked) if p in wanted), most)
        for n in missed:
            missed[n] += first >= n
    return {n: m / len(refs) for n, m in missed.items()}


if __name__ == "__main__":
    main()
