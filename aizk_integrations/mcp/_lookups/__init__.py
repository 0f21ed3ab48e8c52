"""How each supported store reads one revision's items, in stored order, by their metadata: with
the store's own query where it has one (Chroma's `get(where=...)`, Qdrant's `scroll` with a
payload filter, SQL under row-level security on Postgres), and with an index of our own, built
once and rebuilt whenever the store changes, over the in-process stores that keep plain dicts
(`in_process`). Each lookup finds every spelling of the ids the packer accepts; what it returns
is authorized once, by `_revisions.revision_text`.
"""
