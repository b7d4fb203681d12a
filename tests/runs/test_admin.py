"""Until the dashboard exists the admin is the UI: every model's pages must load."""

from __future__ import annotations

from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.test import TestCase
from django.urls import reverse

from runs.models import AssertionResult, EvalCase, Grading, Iteration, Review, Run, Skill

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

    def test_graded_results_gradings_and_reviews_are_read_only(self) -> None:
        result = AssertionResult.objects.filter(is_meta=False).select_related("grading").first()
        grading = result.grading
        counts = (grading.passed, grading.failed, grading.pass_rate)
        for obj in (result, grading, Review.objects.first()):
            meta = obj._meta
            with self.subTest(model=meta.model_name):
                change = reverse(f"admin:{meta.app_label}_{meta.model_name}_change", args=[obj.pk])
                page = self.client.get(change)
                self.assertEqual(page.status_code, 200)
                self.assertNotIn(b'name="_save"', page.content)  # shown, not a form
                self.assertEqual(self.client.post(change, {"passed": "on"}).status_code, 403)
                add = reverse(f"admin:{meta.app_label}_{meta.model_name}_add")
                self.assertEqual(self.client.get(add).status_code, 403)
                delete = reverse(f"admin:{meta.app_label}_{meta.model_name}_delete", args=[obj.pk])
                self.assertEqual(self.client.post(delete, {"post": "yes"}).status_code, 403)

        result.refresh_from_db()
        grading.refresh_from_db()
        self.assertEqual((grading.passed, grading.failed, grading.pass_rate), counts)

    def test_a_run_is_deleted_with_its_grading_results_and_reviews(self) -> None:
        review = Review.objects.select_related("run").first()
        run = review.run

        page = self.client.post(reverse("admin:runs_run_delete", args=[run.pk]), {"post": "yes"})

        self.assertEqual(page.status_code, 302)
        self.assertFalse(Run.objects.filter(pk=run.pk).exists())
        self.assertFalse(Grading.objects.filter(run_id=run.pk).exists())
        self.assertFalse(Review.objects.filter(pk=review.pk).exists())
