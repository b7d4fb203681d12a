"""Search over what the runs hold: prompts, final messages, assertion evidence, reviewer notes
and conversation text, in the database's own full-text search.

SQLite: an FTS5 table over `SearchDocument`, kept in step by triggers (migration 0001).
PostgreSQL: `SearchDocument.vector` (django.contrib.postgres.search) with a GIN index.

The entry points: `index.index_iteration` / `index.index_runs` (the import workflow, review and
regrade call them in their transactions), `query.parse_query` (what a person typed, as terms
that are never passed raw to the database) and `searching.search` (the views and the API).
"""
