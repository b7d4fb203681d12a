"""Dashboard pages, HTTP only: one module per page family of `runs/urls.py`.

Every view's state is in its URL, so any address can be shared. The costly regions of each
page are `{% cache %}` blocks in its template, keyed on the dashboard's generation
(runs.generation: new on every import, review and admin change; every template has it
from runs.context_processors) and on the page's state, the query string. So a view looks
up what its URL names and hands the template its data (`runs.reading`) lazily
(`SimpleLazyObject`): the statistics are computed only when a cached region is missing.
What varies per visitor (the header, the Share form, review forms) stays outside those
regions.

`imports` is the upload form, outside the dashboard's namespace (evalsite/urls.py).
"""
