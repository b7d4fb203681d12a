"""Gradings, assertion results, grading history and reviews move to the runs app."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('grading', '0003_regrade_history'),
    ]

    # The models now live in runs (runs/migrations/0012): only Django's record of them
    # moves; their tables stay as they are, with their rows.
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(
                    model_name='review',
                    name='assertion_result',
                ),
                migrations.RemoveField(
                    model_name='grading',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='gradinghistory',
                    name='run',
                ),
                migrations.RemoveField(
                    model_name='review',
                    name='author',
                ),
                migrations.RemoveField(
                    model_name='review',
                    name='run',
                ),
                migrations.DeleteModel(
                    name='AssertionResult',
                ),
                migrations.DeleteModel(
                    name='Grading',
                ),
                migrations.DeleteModel(
                    name='GradingHistory',
                ),
                migrations.DeleteModel(
                    name='Review',
                ),
            ],
            database_operations=[],
        )
    ]
