#!/usr/bin/env python
"""Aligning over a pronunciation graph vs the linear DP given the true phone sequence.

On the shared TIMIT sample (``.phn`` hand labels, ``.wrd`` words), with the shipped model's
classifier, duration statistics and weights, every utterance is decoded

* by the linear DP (:class:`~aligner.alignment.decoding.task.AlignmentTask`) on its true phone
  sequence (pauses between words where the reference has them), the baseline; and
* by the graph DP (:class:`~aligner.alignment.decoding.graph_task.GraphAlignmentTask`) over three
  graphs in which the true sequence is one path among distractors:

  ``pauses``    the true pronunciation of every word; a pause optional before the first word,
                between every two words and after the last (the reference pauses removed);
  ``variants``  the reference pauses fixed; each word has its true pronunciation plus two
                distractors: one phone deleted (words of >= 2 phones) and a schwa (``ax``)
                inserted at a random place;
  ``both``      optional pauses and the variants.

Reported per graph and per normalisation option (the constant divisor with per-phone bonus
b, the path's own K by Dinkelbach's iteration): how often the decoder picks the true path
(whole utterance), the true pause choice per gap, the true pronunciation per word; and
boundary accuracy (% of reference phone starts, the first excepted, within 20 ms; a reference
phone missing from the decoded path counts as a miss) and of word starts, next to the linear
DP's on the same references. Times are frame boundaries (``t * 10 + 7.5`` ms), no refiner,
for both decoders.

Reference handling: a phone belongs to the word whose ``.wrd`` span holds its midpoint;
runs of ``h#``/``pau``/``epi`` outside words become one pause (``h#`` statistics at the edges,
``pau`` between words), any other phone outside words (``q``, a closure) joins the next word.
The shipped model was trained on all 12 speakers of the sample, so these figures are
in-sample for both decoders alike.

Speed: decode time per audio second on the ``both`` graph with the variants on every fourth
word only (optional pauses at every gap), against the linear DP and against the whole
alignment (MFCC + classifier, then ``AlignmentModel.align_scored``: linear DP + refiner):
``alignment_time_increase_pct`` = (graph input + graph decode - linear decode) / that.

    python -m benchmarks.words.bench_graph_decoder [--data DIR] [--limit N] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[2]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "timit-sample"
PAUSE_LABELS = ("h#", "pau", "epi")


@dataclass
class Utt:
    name: str
    frames: np.ndarray
    scores: np.ndarray
    seconds: float
    prep_seconds: float  # MFCC + classifier
    words: list  # per word: list of (label, start_s)
    pauses: dict  # gap -> start_s of the pause (gap 0 .. W)


def read_utterance(utt, model) -> Utt | None:
    from aligner.features.mfcc import mfcc_features
    from aligner.frames import SAMPLE_RATE
    from aligner.io.audio import load_audio
    from aligner.io.transcripts import read_phn

    wrd = utt.audio.with_suffix(".wrd")
    if not wrd.is_file():
        return None
    spans = []
    for line in wrd.read_text().splitlines():
        tok = line.split()
        if len(tok) == 3:
            spans.append((int(tok[0]), int(tok[1])))
    starts, ends, labels = read_phn(utt.transcript)
    samples = load_audio(utt.audio)
    t0 = time.perf_counter()
    frames = mfcc_features(samples, SAMPLE_RATE)
    scores = model.classifier.scores(frames)
    prep = time.perf_counter() - t0
    W = len(spans)
    words = [[] for _ in range(W)]
    pauses: dict = {}
    pending = []  # non-pause phones outside words, for the next word
    for s, e, lab in zip(starts, ends, labels):
        mid = 0.5 * (s + e)
        wi = next((i for i, (a, b) in enumerate(spans) if a <= mid < b), None)
        t = s / SAMPLE_RATE
        if wi is not None:
            words[wi].extend(pending)
            pending = []
            words[wi].append((lab, t))
            continue
        gap = sum(1 for a, b in spans if b <= mid)  # words entirely before the phone
        if lab in PAUSE_LABELS:
            pauses.setdefault(gap, t)
        else:
            pending.append((lab, t))
    if pending:
        words[-1].extend(pending)
    if any(not w for w in words):
        return None
    return Utt(utt.name, frames, scores, len(samples) / SAMPLE_RATE, prep, words, pauses)


def segment(symbols, model, phone_set):
    from aligner.alignment.decoding.graph import Segment

    classes = phone_set.class_indices(symbols)
    mean, std, mx = model.durations.for_phones(classes, symbols)
    return Segment.make(classes, mean, std, mx, symbols)


def distractors(symbols, rng):
    """Deletion of one phone (>= 2 phones) and insertion of a schwa, as new symbol lists."""
    out = []
    if len(symbols) >= 2:
        i = int(rng.integers(len(symbols)))
        out.append(symbols[:i] + symbols[i + 1:])
    i = int(rng.integers(len(symbols) + 1))
    out.append(symbols[:i] + ["ax"] + symbols[i:])
    return out


def build(u: Utt, model, phone_set, kind: str, rng, variant_every: int = 1):
    """(graph, true node path, reference start times (s) of the true path, word start times)."""
    from aligner.alignment.decoding.graph import build_word_graph

    W = len(u.words)
    pau = segment(["pau"], model, phone_set)
    hsh = segment(["h#"], model, phone_set)
    slots = []
    for i, w in enumerate(u.words):
        sym = [lab for lab, _ in w]
        alts = [sym]
        if kind in ("variants", "both") and i % variant_every == 0:
            alts += [d for d in distractors(sym, rng) if d != sym]
        slots.append([segment(a, model, phone_set) for a in alts])
    if kind == "pauses" or kind == "both":
        modes = dict(between="optional", leading="optional", trailing="optional")
    else:
        modes = dict(between=["required" if g in u.pauses else "none" for g in range(1, W)],
                     leading="required" if 0 in u.pauses else "none",
                     trailing="required" if W in u.pauses else "none")
    g = build_word_graph(slots, pau, leading_pause=hsh, trailing_pause=hsh, **modes)
    path = g.path_of([0] * W, [gp in u.pauses for gp in range(W + 1)])
    ref_s = []
    for gp in range(W + 1):
        if gp in u.pauses:
            ref_s.append(u.pauses[gp])
        if gp < W:
            ref_s.extend(t for _, t in u.words[gp])
    return g, path, np.array(ref_s), np.array([w[0][1] for w in u.words])


def linear_input(u: Utt, g, path, model):
    from aligner.alignment.decoding.task import make_alignment_input

    return make_alignment_input(u.scores, u.frames, g.classes[path], g.dur_mean[path], g.dur_std[path],
                                g.max_frames[path], model.min_frames, name=u.name)


def within(err_ms, tol=20.0):
    return float(100.0 * np.mean(np.asarray(err_ms) <= tol + 1e-6)) if len(err_ms) else float("nan")


def score_path(g, true_path, ref_s, ref_ws, y) -> dict:
    """Errors of decoded path y against the reference (see the module docstring)."""
    from aligner.frames import boundary_time

    hyp = {int(n): float(boundary_time(s)) for n, s in zip(y.nodes, y.starts)}
    phone_err = []
    for n, t in zip(true_path[1:], ref_s[1:]):
        phone_err.append(abs(hyp[int(n)] - t) * 1000 if int(n) in hyp else np.inf)
    ws = y.word_starts()
    word_err = [abs(float(boundary_time(s)) - t) * 1000 for s, t in zip(ws, ref_ws) if t > 0]
    W = g.n_words
    true_p = set(int(gp) for gp in g.pause_slot[true_path] if gp >= 0)
    hyp_p = set(int(gp) for gp in g.pause_slot[y.nodes] if gp >= 0)
    optional = [gp for gp in range(W + 1) if g._pause_optional(gp) and np.any(g.pause_slot == gp)]
    t_alt = {int(g.word[n]): int(g.alt[n]) for n in true_path if g.word[n] >= 0}
    h_alt = {int(g.word[n]): int(g.alt[n]) for n in y.nodes if g.word[n] >= 0}
    multi = [i for i in range(W) if np.any((g.word == i) & (g.alt > 0))]
    return dict(
        exact=bool(np.array_equal(y.nodes, true_path)),
        pause_ok=sum((gp in true_p) == (gp in hyp_p) for gp in optional), n_gaps=len(optional),
        pause_ins=len([gp for gp in optional if gp in hyp_p and gp not in true_p]),
        pause_del=len([gp for gp in optional if gp in true_p and gp not in hyp_p]),
        n_true_pauses=len([gp for gp in optional if gp in true_p]),
        alt_ok=sum(t_alt[i] == h_alt[i] for i in multi), n_multi=len(multi),
        phone_err=phone_err, word_err=word_err, n_phones=len(y), n_true=len(true_path))


def summarise(rows: list) -> dict:
    n = len(rows)
    gaps = sum(r["n_gaps"] for r in rows)
    multi = sum(r["n_multi"] for r in rows)
    pe = np.concatenate([r["phone_err"] for r in rows])
    we = np.concatenate([r["word_err"] for r in rows])
    return dict(
        exact_path_pct=100.0 * sum(r["exact"] for r in rows) / n,
        pause_choice_pct=100.0 * sum(r["pause_ok"] for r in rows) / gaps if gaps else float("nan"),
        pause_insertions=sum(r["pause_ins"] for r in rows), pause_deletions=sum(r["pause_del"] for r in rows),
        n_optional_gaps=gaps, n_true_pauses=sum(r["n_true_pauses"] for r in rows),
        variant_choice_pct=100.0 * sum(r["alt_ok"] for r in rows) / multi if multi else float("nan"),
        phones_within_20ms=within(pe), words_within_20ms=within(we),
        phone_count_diff=float(np.mean([r["n_phones"] - r["n_true"] for r in rows])),
    )


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--limit", type=int, default=None, help="first N utterances only")
    ap.add_argument("--bonus", type=float, nargs="*", default=[0.0, 1.0, 2.0, 3.0],
                    help="per-phone bonuses b of the constant divisor to measure")
    ap.add_argument("--pause-bonus", type=float, nargs="*", default=[-1.0, 0.0, 1.0],
                    help="pause bonuses measured with the best b")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--speed-only", action="store_true", help="skip the accuracy tables")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    if not args.data.is_dir():
        sys.exit(f"error: {args.data}: corpus not found")

    from aligner.alignment.decoding.graph_task import GraphAlignmentTask, make_graph_input
    from aligner.alignment.model import AlignmentModel
    from aligner.alignment.decoding.task import AlignmentTask
    from aligner.frames import boundary_time
    from aligner.io.bundles import default_model_dir
    from aligner.io.corpus import find_utterances
    from aligner.phones.sets import get_phone_set

    model = AlignmentModel.load(default_model_dir("alignment"))
    w = model.weights
    phone_set = get_phone_set("timit61")
    utts = [u for u in (read_utterance(x, model) for x in find_utterances(args.data)) if u is not None]
    if args.limit:
        utts = utts[:args.limit]
    lin = AlignmentTask()

    configs = [(f"const b={b:g}", dict(divisor="min_phones", phone_bonus=b)) for b in args.bonus]
    configs.append(("path K (Dinkelbach)", dict(divisor="path")))
    results: dict = {"n_utterances": len(utts), "audio_seconds": round(sum(u.seconds for u in utts), 1)}

    kinds = () if args.speed_only else ("pauses", "variants", "both")
    for kind in kinds:
        rng = np.random.default_rng(args.seed)
        built = []
        for u in utts:
            g, path, ref_s, ref_ws = build(u, model, phone_set, kind, rng)
            xg = make_graph_input(u.scores, u.frames, g, model.min_frames, name=u.name)
            built.append((u, g, path, ref_s, ref_ws, xg))
        # the linear baseline (same references; the true path)
        base_rows = []
        for u, g, path, ref_s, ref_ws, xg in built:
            x = linear_input(u, g, path, model)
            y = lin.decode(x, w)
            from aligner.alignment.decoding.graph_task import make_path
            base_rows.append(score_path(g, path, ref_s, ref_ws, make_path(g, path, y)))
        table = {"linear DP, true sequence": summarise(base_rows)}

        def run(cfg):
            task = GraphAlignmentTask(**cfg)
            return summarise([score_path(g, path, ref_s, ref_ws, task.decode(xg, w))
                              for u, g, path, ref_s, ref_ws, xg in built])

        for label, cfg in configs:
            table[label] = run(cfg)
        # pause bias, with the constant divisor's best b (by phone accuracy)
        best_b = max(args.bonus, key=lambda b: table[f"const b={b:g}"]["phones_within_20ms"])
        if kind != "variants":
            for bp in args.pause_bonus:
                if bp != 0.0:
                    table[f"const b={best_b:g}, pause {bp:+g}"] = run(
                        dict(divisor="min_phones", phone_bonus=best_b, pause_bonus=bp))
        results[kind] = table

    # -- speed -------------------------------------------------------------------------
    rng = np.random.default_rng(args.seed)
    task = GraphAlignmentTask()
    task_path = GraphAlignmentTask(divisor="path")
    t_lin = t_graph = t_path = t_prep = t_build = t_scored = audio = 0.0
    n_nodes = n_true = 0
    for u in utts:
        g, path, _, _ = build(u, model, phone_set, "both", rng, variant_every=4)
        x = linear_input(u, g, path, model)
        lin.decode(x, w), task.decode(make_graph_input(u.scores, u.frames, g, model.min_frames), w)  # warm
        t0 = time.perf_counter()
        xg = make_graph_input(u.scores, u.frames, g, model.min_frames, name=u.name)
        t1 = time.perf_counter()
        for _ in range(3):
            task.decode(xg, w)
        t2 = time.perf_counter()
        x = linear_input(u, g, path, model)
        for _ in range(3):
            lin.decode(x, w)
        t3 = time.perf_counter()
        task_path.decode(xg, w)
        t4 = time.perf_counter()
        model.align_scored(u.frames, u.scores, [g.labels[n] for n in path], phone_set, u.seconds)
        t_scored += time.perf_counter() - t4
        t_path += t4 - t3
        t_build += t1 - t0
        t_graph += (t2 - t1) / 3
        t_lin += (t3 - t2) / 3
        t_prep += u.prep_seconds
        audio += u.seconds
        n_nodes += g.n_nodes
        n_true += len(path)
    speed = {
        "graph_nodes_per_true_phone": round(n_nodes / n_true, 2),
        "linear_decode_ms_per_audio_s": round(1000 * t_lin / audio, 2),
        "graph_decode_ms_per_audio_s": round(1000 * t_graph / audio, 2),
        "graph_input_build_ms_per_audio_s": round(1000 * t_build / audio, 2),
        "graph_decode_path_divisor_ms_per_audio_s": round(1000 * t_path / audio, 2),
        "mfcc_classifier_ms_per_audio_s": round(1000 * t_prep / audio, 2),
        "align_scored_ms_per_audio_s": round(1000 * t_scored / audio, 2),
    }
    base = t_prep + t_scored  # AlignmentModel.align: MFCC + classifier + linear DP + refiner
    speed["alignment_time_increase_pct"] = round(100 * (t_graph + t_build - t_lin) / base, 1)
    results["speed"] = speed

    if args.json:
        print(json.dumps(results, indent=1))
        return
    print(f"{len(utts)} utterances, {results['audio_seconds']} s of audio; shipped model, w = {np.round(w, 3).tolist()}")
    cols = ["exact_path_pct", "pause_choice_pct", "pause_insertions", "pause_deletions", "variant_choice_pct",
            "phones_within_20ms", "words_within_20ms", "phone_count_diff"]
    heads = ["path%", "pause%", "ins", "del", "variant%", "ph<=20", "wd<=20", "dK"]
    for kind in kinds:
        t = next(iter(results[kind].values()))
        print(f"\n== graph: {kind} ({t['n_optional_gaps']} optional pause slots, {t['n_true_pauses']} with a "
              f"reference pause)")
        print(f"{'decoder':34s}" + "".join(f"{h:>9s}" for h in heads))
        for label, r in results[kind].items():
            vals = [r[c] for c in cols]
            print(f"{label:34s}" + "".join(f"{v:9.1f}" if isinstance(v, float) else f"{v:9d}" for v in vals))
    print("\n== speed (graph 'both', variants on every 4th word, optional pauses everywhere)")
    for k, v in speed.items():
        print(f"  {k}: {v}")
    _ = boundary_time


if __name__ == "__main__":
    main()
