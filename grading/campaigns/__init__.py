"""runevals campaigns fanned out over Celery (`runevals --queue`), and their progress page."""
