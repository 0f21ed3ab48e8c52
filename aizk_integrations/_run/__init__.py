"""The one run every adapter makes of the core: settings validated once (`settings`), items
read and authorized before anything else (`reading`), walked (`run`), fed page by page by
scoped retrieval (`paging`) and told to the logs (`report`).

Imports `_core`, `_scopes` and the basics; the adapters import it.
"""
