#!/usr/bin/env python
"""Elicitation sessions: a universal model on long recordings of many words, and on words with long silent edges.

A fieldworker records a word list in one take, or cuts each word with seconds of room tone around it.
Built from the VoxAngeles recordings (their hand-audited phone times shifted, nothing re-labelled):

* **sessions**: each language's recordings joined end to end, in order (repeated until the session
  lasts ``--minutes``), one IPA transcript with the pause between two words written once (``sil``,
  the empty intervals of the references: one word's trailing silence and the next one's leading
  silence make one pause of about half a second); with ``--pauses``, also sessions with that many
  seconds of room tone more between two words (a speaker who waits between the words of a list);
* **padded edges**: each recording with ``--pads`` seconds of its own leading silence (tiled,
  every other copy reversed) added at both ends; with ``--edge zeros``, digital silence instead,
  which reading a recording replaces by its room tone (:mod:`aligner.io.room_tone`;
  ``--no-room-tone``: aligned as zeros).

Every boundary but the first is scored, next to the same recordings aligned alone as they are; the
speed is audio seconds per second of one process (start-up excluded). ``--words``: the sessions are
also aligned from words, as ``aligner align --phone-set ipa`` aligns a word list with an IPA
pronouncing dictionary (each run of phones between two silences one word of the dictionary, the
pauses left for the decoder to find), and both edges of every word are scored, from words and from
the phones.
The shipped model was trained on all 40 languages: pass a fold model (``eval_languages_cv`` saves
them under ``OUT/universal``) and its held-out languages (``--fold``) for held-out figures.

    python -m benchmarks.languages.eval_long_sessions [--model DIR --fold K] [--minutes 2] [--pads 1 3]
        [--edge zeros [--no-room-tone]] [--pauses 1 2] [--words]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from aligner.errors import AlignerError
from benchmarks.languages.corpus import language_files, language_folds, languages, reference


def _aligned_starts(model, samples: np.ndarray, symbols: list, name: str) -> np.ndarray:
    """Start times (s) of ``symbols`` aligned by ``model`` (the edge silences the aligner adds left out)."""
    from aligner.alignment.pipeline import align_ipa_phones, with_edge_silences

    intervals, _, _ = align_ipa_phones(model, samples, symbols, "ipa", name=name, sr=16000, review=False)
    _, _, added = with_edge_silences(symbols, symbols)
    return np.array([iv.start_s for iv, extra in zip(intervals, added) if not extra])


def word_runs(symbols: list, starts: np.ndarray, duration_s: float) -> tuple:
    """``(words, spans)``: each run of phones between two silences of ``symbols`` as one word
    (its phones), and its ``(start, end)`` seconds by ``starts`` (K,), the last ending at ``duration_s``."""
    words, spans = [], []
    for k, symbol in enumerate(symbols):
        if symbol == "sil":
            if spans and spans[-1][1] is None:
                spans[-1][1] = float(starts[k])
            continue
        if k == 0 or symbols[k - 1] == "sil":
            words.append([])
            spans.append([float(starts[k]), None])
        words[-1].append(symbol)
    if spans and spans[-1][1] is None:
        spans[-1][1] = duration_s
    return words, np.array(spans, float).reshape(-1, 2)


def align_words_session(model, samples: np.ndarray, words: list, name: str) -> np.ndarray:
    """``(W, 2)`` start and end (s) of ``words`` (each a list of IPA phones) aligned from words:
    each distinct phone sequence a word of an IPA pronouncing dictionary, the pauses found by the decoder."""
    from aligner import api
    from aligner.words.dictionary import PronouncingDictionary

    token_of: dict = {}
    for phones in words:
        token_of.setdefault(" ".join(phones), f"w{len(token_of)}")
    dictionary = PronouncingDictionary({token: [phones] for phones, token in token_of.items()}, name=name)
    text = " ".join(token_of[" ".join(phones)] for phones in words)
    result = api.align_words(samples, text, model, dictionary=dictionary, sr=16000, phone_set="ipa", name=name)
    return np.array([(w.start_s, w.end_s) for w in dict(result.tiers)["words"] if w.label], float).reshape(-1, 2)


def session(recordings: list, seconds: float, pause: float = 0.0) -> tuple:
    """``(samples, symbols, reference starts (s))`` of ``recordings`` [(samples, starts, symbols)]
    joined in order, repeated until ``seconds`` long; two silences in a row become one. ``pause``:
    seconds of each recording's own leading silence (:func:`room_tone`) put before it (but the
    first), a longer pause between two words."""
    parts, symbols, starts, offset, i = [], [], [], 0, 0
    while offset < seconds * 16000:
        samples, ref, labels = recordings[i % len(recordings)]
        i += 1
        if parts and pause > 0:
            if symbols[-1] != "sil":  # the pause starts where the last word ends
                symbols.append("sil")
                starts.append(offset / 16000)
            parts.append(room_tone(samples, ref, labels, int(round(pause * 16000))))
            offset += len(parts[-1])
        for label, t in zip(labels, ref):
            if symbols and label == "sil" and symbols[-1] == "sil":
                continue
            symbols.append(label)
            starts.append(offset / 16000 + t)
        parts.append(samples)
        offset += len(samples)
    return np.concatenate(parts), symbols, np.array(starts)


def room_tone(samples: np.ndarray, ref: np.ndarray, labels: list, n: int) -> np.ndarray:
    """``n`` samples of a recording's own leading silence (its first 50 ms when the reference starts
    with a phone), tiled, every other copy reversed."""
    lead = samples[:max(int(ref[1] * 16000) - 160, 800)] if labels[0] == "sil" and len(ref) > 1 else samples[:800]
    return np.resize(np.concatenate([lead, lead[::-1]]), n).astype(np.float32)


def padded(samples: np.ndarray, ref: np.ndarray, labels: list, seconds: float, zeros: bool = False) -> tuple:
    """``(samples, symbols, reference starts)`` with ``seconds`` of the recording's own leading
    silence (its first 50 ms when the reference starts with a phone) tiled onto both ends, or of
    digital silence (``zeros``)."""
    n = int(round(seconds * 16000))
    if n == 0:
        return samples, labels, ref
    edge = np.zeros(n, np.float32) if zeros else room_tone(samples, ref, labels, n)
    if labels[0] == "sil":
        starts = np.concatenate([[0.0], ref[1:] + seconds])
        symbols = list(labels)
    else:
        starts, symbols = np.concatenate([[0.0], ref + seconds]), ["sil"] + list(labels)
    if symbols[-1] != "sil":
        symbols = symbols + ["sil"]
        starts = np.append(starts, (n + len(samples)) / 16000)
    return np.concatenate([edge, samples, edge]), symbols, starts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", default=None, help="universal model directory [the shipped one]")
    p.add_argument("--fold", default=None, help="language folds to use, comma-separated [every 5th language]")
    p.add_argument("--minutes", type=float, default=2.0, help="length of each session")
    p.add_argument("--pauses", type=float, nargs="*", default=[],
                   help="also sessions with this many seconds of room tone between their words")
    p.add_argument("--pads", type=float, nargs="*", default=[1.0, 3.0], help="seconds of silence added at each end")
    p.add_argument("--pad-files", type=int, default=10, help="recordings per language padded")
    p.add_argument("--edge", choices=("room", "zeros"), default="room",
                   help="what is added: the recording's own leading silence, or digital silence")
    p.add_argument("--words", action="store_true",
                   help="also align the sessions from words (an IPA dictionary of their phone runs) and score word edges")
    p.add_argument("--no-room-tone", action="store_true",
                   help="align digital silence as it is (not read as the recording's room tone)")
    args = p.parse_args(argv)

    if args.no_room_tone:  # no recording has this many windows of sound: nothing is replaced
        import aligner.io.room_tone

        aligner.io.room_tone.MIN_HEARD_WINDOWS = 1 << 62

    from aligner.alignment.evaluation.phones import score_alignments
    from aligner.alignment.pipeline import load_model
    from aligner.io.audio import load_audio

    if args.fold is None:
        langs = languages()[::5]
    else:
        folds = language_folds()
        langs = sorted(lang for k in args.fold.split(",") for lang in folds[int(k)])
    model = load_model(args.model, universal=True)
    print(f"universal model {args.model or '(shipped)'}; languages {', '.join(langs)}")

    def scored(title, jobs):
        """Print the row of ``jobs`` aligned from their phones; each job's aligned starts (None: failed)."""
        pairs, failed, aligned, t0 = [], [], [], time.perf_counter()
        for name, samples, symbols, ref in jobs:
            try:
                aligned.append(_aligned_starts(model, samples, symbols, name))
                pairs.append((ref, aligned[-1]))
            except Exception as exc:  # noqa: BLE001 - counted and shown
                aligned.append(None)
                failed.append(f"{name}: {exc}")
        seconds = time.perf_counter() - t0
        audio = sum(len(samples) for _, samples, _, _ in jobs) / 16000
        s = score_alignments(pairs) if pairs else None
        within = f"{s.within_ms[20]:6.2f} % {s.mean_ms:7.1f} ms {s.n_boundaries:6d}" if s else "     -"
        print(f"{title:36s} {within} {audio / seconds:6.0f}x  {len(failed)} failed"
              f"{': ' + failed[0][:120] if failed else ''}", flush=True)
        return aligned

    def scored_words(title, jobs, aligned):
        """Print the word-edge row of ``jobs`` from words, next to ``aligned`` (:func:`scored`'s) from phones."""
        from_words, from_phones, failed = [], [], []
        for (name, samples, symbols, ref), starts in zip(jobs, aligned):
            duration = len(samples) / 16000
            words, spans = word_runs(symbols, ref, duration)
            try:
                if starts is None:
                    raise AlignerError("not aligned from its phones")
                ours = align_words_session(model, samples, words, name)
                phones = word_runs(symbols, starts, duration)[1]
            except Exception as exc:  # noqa: BLE001 - counted and shown
                failed.append(f"{name}: {exc}")
                continue
            if ours.shape != spans.shape:
                failed.append(f"{name}: {len(ours)} words aligned for {len(spans)}")
                continue
            from_words.append(np.abs(ours - spans).ravel() * 1000)
            from_phones.append(np.abs(phones - spans).ravel() * 1000)
        row = ""
        for label, errors in (("from words", from_words), ("from phones", from_phones)):
            e = np.concatenate(errors) if errors else np.zeros(0)
            row += f" {label} {100 * np.mean(e <= 20):6.2f} % {e.mean():7.1f} ms;" if len(e) else f" {label} -;"
        n = sum(len(e) for e in from_words)
        print(f"{title:36s}{row} {n} word edges, {len(failed)} failed{': ' + failed[0][:120] if failed else ''}",
              flush=True)

    data = {lang: [(load_audio(w), *reference(g)) for w, g in language_files(lang)] for lang in langs}
    print(f"{'':36s} {'within 20 ms':>8s} {'mean':>10s} {'bounds':>6s} {'speed':>7s} (one process)")
    scored("alone", [(lang, y, sym, ref) for lang in langs for y, ref, sym in data[lang]])
    sessions = []  # (title, jobs, aligned starts) of each pause
    for pause in [0.0] + list(args.pauses):
        jobs = [(lang, *session(data[lang], 60 * args.minutes, pause)) for lang in langs]
        title = f"sessions, {pause:g} s more between words" if pause else f"sessions of {args.minutes:g} min"
        sessions.append((pause, jobs, scored(title, jobs)))
    if args.words:
        for pause, jobs, aligned in sessions:
            scored_words(f"word edges, sessions{f', {pause:g} s more' if pause else ''}", jobs, aligned)
    for pad in args.pads:
        scored(f"alone, {pad:g} s of silence at each end",
               [(lang, *padded(y, ref, sym, pad, args.edge == "zeros")) for lang in langs for y, ref, sym in data[lang][:args.pad_files]])
    scored("alone, the same recordings", [(lang, y, sym, ref) for lang in langs
                                          for y, ref, sym in data[lang][:args.pad_files]])


if __name__ == "__main__":
    main()
