"""What every dashboard template may read: the generation its cached regions are keyed on."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils.functional import SimpleLazyObject

from .models import Generation


def generation(request: HttpRequest) -> dict[str, object]:
    """`generation`: the dashboard's `Generation`, read when a template first uses it.

    Lazy, so a page without a `{% cache %}` region (a form, the admin, an error) asks
    nothing; a page with one reads it once, before any of its regions.
    """
    return {"generation": SimpleLazyObject(Generation.objects.current)}
