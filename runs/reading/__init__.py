"""What each page shows, read from the database in a fixed number of queries per page.

One module per page family, named for its pages in `runs/urls.py`:

- `overview`: every skill with its latest results (also the API's skill list);
- `skill`: a skill's trend charts and iteration table (also `bench/stats_bench.py`);
- `iteration`: the iteration page's matrix and assertion lists, and a matrix cell's runs;
- `benchmark`: an iteration's benchmark.json (also the API and `manage.py benchmark`);
- `compare`: two iterations, or two conditions, side by side (also runevals' report);
- `eval`: an eval's runs by condition (the first few of each), and two runs diffed side by side;
- `history`: one eval across every iteration of its skill (also the API), and the eval
  page's summary;
- `transcript`: a run's transcript as the run page and its fragments show it.

What several pages share:

- `summaries`: an iteration's headline (conditions, delta, verdict) and its matrix cells;
- `rows`: the grouped queries behind the summaries, each beside the named tuple of its row;
- `samples`: an iteration's runs and assertion results as rows for `runs.stats`.

Views (`runs.views`) look up what a URL names and hand these to templates; nothing here
knows about HTTP.
"""
