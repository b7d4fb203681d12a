"""The account page's and the Share button's forms."""

from __future__ import annotations

from django import forms


class ShareForm(forms.Form):
    """The Share button's form, in every shareable page's header."""

    #: Bounded, but above any address of valid names (a run's, percent-encoded, is < 7,000).
    path = forms.CharField(max_length=16_000, widget=forms.HiddenInput)
    expires = forms.TypedChoiceField(
        choices=[
            ("", "never expires"),
            ("1", "expires in 1 day"),
            ("7", "expires in 7 days"),
            ("30", "expires in 30 days"),
        ],
        initial="7",
        required=False,
        coerce=int,
        empty_value=None,
    )


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, strip=True)
    expires = forms.TypedChoiceField(
        choices=[("", "never"), ("30", "in 30 days"), ("90", "in 90 days"), ("365", "in 1 year")],
        initial="90",
        required=False,
        coerce=int,
        empty_value=None,
    )
