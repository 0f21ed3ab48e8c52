"""The seed's core, a straight line: a `Candidate` (`candidate`, its `lanes` and `evidence`)
is priced (`pricing`) and walked as a prefix cut (`packing`) into the public `RecallResult`
(`result`), rendered from the template (`rendering`, which keeps text contained with
`_markdown`).

Imports `_scopes`, `_markdown` and the package's basics; never `_run`, `_stores` or a framework.
"""
