"""``python -m aligner``: the ``aligner`` command line (:mod:`aligner.cli`), for environments
without the console script on the PATH."""

from aligner.cli import main

main()
