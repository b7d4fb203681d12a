"""Until the dashboard exists the admin is the UI: every model's pages must load."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import TestCase
from django.urls import reverse

from grading.models import AssertionResult, Grading, Review
from runs.models import EvalCase, Iteration, Run, Skill

MODELS = [Skill, EvalCase, Iteration, Run, Grading, AssertionResult, Review]


class AdminWithSampleTests(TestCase):
    @classmethod
    def setUpTestData(cls) -> None:
        call_command("quickstart", "--no-serve", verbosity=0)
        cls.admin = get_user_model().objects.get(username="admin")

    def setUp(self) -> None:
        self.client.force_login(self.admin)

    def test_each_model_lists_and_opens_in_the_admin(self) -> None:
        for model in MODELS:
            meta = model._meta
            with self.subTest(model=meta.model_name):
                listing = self.client.get(
                    reverse(f"admin:{meta.app_label}_{meta.model_name}_changelist")
                )
                self.assertEqual(listing.status_code, 200)
                detail = self.client.get(
                    reverse(
                        f"admin:{meta.app_label}_{meta.model_name}_change",
                        args=[model.objects.first().pk],
                    )
                )
                self.assertEqual(detail.status_code, 200)

    def test_the_admin_escapes_what_agents_wrote(self) -> None:
        run = Run.objects.filter(final_message__contains="<script>alert(1)</script>").first()

        page = self.client.get(reverse("admin:runs_run_change", args=[run.pk]))

        self.assertNotIn(b"<script>alert(1)</script>", page.content)
        self.assertIn(b"&lt;script&gt;alert(1)&lt;/script&gt;", page.content)
