"""Who may read what: scope ids as every store and item agree on them (`ids`), the reader's
scopes (`directory`), and the rule that a scope's name cannot forge a label (`names`, with the
Unicode tables it reads in `looks`, `joiners`, `confusables` and `unicode_data`).

Imports only the package's basics (`_errors`, `_text`, `_tokens`, `_uuids`); everything else
imports it.
"""
