"""What a store is asked for a reader: each store's filter for the reader's ids (`filters`) and
the SQL Postgres runs under row-level security (`postgres`). The adapters' store classes use
these; they import only `_scopes` and the basics.
"""
