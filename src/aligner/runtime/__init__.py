"""How the work runs: BLAS threads (:mod:`~aligner.runtime.blas`), the local pool of worker
processes (:mod:`~aligner.runtime.batch`) and Dask clusters (:mod:`~aligner.runtime.distributed`).

Nothing here knows of speech: the pipelines (:mod:`aligner.alignment.corpus`,
:mod:`aligner.vowels.pipeline`) hand these modules their jobs and worker set-up.
"""
