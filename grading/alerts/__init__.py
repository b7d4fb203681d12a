"""Alerts: when a runevals campaign regresses, fails or is stopped by its budget, evalsite says
so to the skill's webhooks and e-mail addresses (set by staff on /skills/<skill>/alerts/) and
the site's (EVALSITE_ALERT_WEBHOOKS, EVALSITE_ALERT_EMAILS).

messages.py builds what is said, delivery.py sends it (retried, recorded as a Delivery,
never raising), events.py is what the campaign workflow and the workers call.
"""
