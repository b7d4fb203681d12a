"""The project package.

The Celery app is not loaded here, as Django's Celery guide suggests, but with the tasks that
bind to it (`grading/campaigns/celery_app.py`) and by `celery -A evalsite`, which finds
`evalsite.celery` itself: every other command starts 0.2 s sooner.
"""
