"""Readers of other tools' files: git, decision records, rule files and chat histories.

Each reader turns one format into plain records (:mod:`storage.sources.records`); it never
writes to the files it reads, and what it cannot read is counted in a :class:`SkipLog` with a
reason instead of raising. Turning records into memories is :mod:`predictive.extract`'s job.
"""
