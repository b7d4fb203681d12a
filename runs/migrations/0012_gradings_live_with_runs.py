"""Gradings, assertion results, grading history and reviews live with the runs."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


MODELS = ["grading", "assertionresult", "gradinghistory", "review"]


def _relabel(apps, source, target):
    ContentType = apps.get_model("contenttypes", "ContentType")
    taken = ContentType.objects.filter(app_label=target, model__in=MODELS)
    moving = set(MODELS) - set(taken.values_list("model", flat=True))
    ContentType.objects.filter(app_label=source, model__in=moving).update(app_label=target)


def content_types_follow(apps, schema_editor):
    """Admin history and permissions name the models by app: keep them attached."""
    _relabel(apps, "grading", "runs")


def content_types_return(apps, schema_editor):
    _relabel(apps, "runs", "grading")


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0011_structured_validity_warnings'),
        ('grading', '0004_gradings_live_with_runs'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    # The tables exist (grading/migrations, kept under their names by Meta.db_table): only
    # Django's record of the models moves here.
    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='Grading',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('format', models.CharField(choices=[('eval-magic', 'eval-magic grading.json'), ('skill-creator', 'skill-creator grading.json'), ('benchmark', 'skill-creator benchmark.json run entry'), ('evalsite', 'graded by evalsite after import')], max_length=32)),
                        ('passed', models.PositiveIntegerField()),
                        ('failed', models.PositiveIntegerField()),
                        ('total', models.PositiveIntegerField()),
                        ('pass_rate', models.FloatField()),
                        ('summary_computed', models.BooleanField(default=False)),
                        ('meta_passed', models.PositiveIntegerField(blank=True, null=True)),
                        ('meta_failed', models.PositiveIntegerField(blank=True, null=True)),
                        ('meta_total', models.PositiveIntegerField(blank=True, null=True)),
                        ('skill_invoked', models.BooleanField(blank=True, null=True)),
                        ('has_meta_summary', models.BooleanField(default=False)),
                        ('extra', models.JSONField(default=dict)),
                        ('original_summary', models.JSONField(blank=True, null=True)),
                        ('regraded', models.JSONField(blank=True, null=True)),
                        ('run', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='grading', to='runs.run')),
                    ],
                    options={
                        'db_table': 'grading_grading',
                    },
                ),
                migrations.CreateModel(
                    name='AssertionResult',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('assertion_id', models.CharField(max_length=300)),
                        ('is_meta', models.BooleanField(default=False)),
                        ('position', models.PositiveIntegerField(default=0)),
                        ('passed', models.BooleanField()),
                        ('evidence', models.TextField(blank=True)),
                        ('confidence', models.FloatField(blank=True, null=True)),
                        ('grader', models.CharField(blank=True, max_length=32)),
                        ('text', models.TextField(blank=True)),
                        ('override_passed', models.BooleanField(blank=True, null=True)),
                        ('judge_model', models.CharField(blank=True, db_default='', default='', max_length=200)),
                        ('grading', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='results', to='runs.grading')),
                    ],
                    options={
                        'db_table': 'grading_assertionresult',
                        'ordering': ['grading_id', 'is_meta', 'position'],
                    },
                ),
                migrations.CreateModel(
                    name='GradingHistory',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('replaced_at', models.DateTimeField()),
                        ('replaced_by', models.JSONField(default=dict)),
                        ('format', models.CharField(choices=[('eval-magic', 'eval-magic grading.json'), ('skill-creator', 'skill-creator grading.json'), ('benchmark', 'skill-creator benchmark.json run entry'), ('evalsite', 'graded by evalsite after import')], max_length=32)),
                        ('pass_rate', models.FloatField()),
                        ('snapshot', models.JSONField()),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='grading_history', to='runs.run')),
                    ],
                    options={
                        'verbose_name_plural': 'grading history',
                        'db_table': 'grading_gradinghistory',
                        'ordering': ['run_id', 'replaced_at', 'id'],
                    },
                ),
                migrations.CreateModel(
                    name='Review',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('kind', models.CharField(choices=[('note', 'note'), ('override', 'override')], default='note', max_length=16)),
                        ('source', models.CharField(choices=[('web', 'evalsite'), ('feedback.json', 'skill-creator feedback.json')], default='web', max_length=32)),
                        ('assertion_id', models.CharField(blank=True, max_length=300)),
                        ('original_passed', models.BooleanField(blank=True, null=True)),
                        ('overridden_passed', models.BooleanField(blank=True, null=True)),
                        ('text', models.TextField()),
                        ('created_at', models.DateTimeField()),
                        ('assertion_result', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='overrides', to='runs.assertionresult')),
                        ('author', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, to=settings.AUTH_USER_MODEL)),
                        ('run', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='reviews', to='runs.run')),
                    ],
                    options={
                        'db_table': 'grading_review',
                        'ordering': ['run_id', 'created_at'],
                    },
                ),
                migrations.AddIndex(
                    model_name='grading',
                    index=models.Index(fields=['skill_invoked'], name='grading_gra_skill_i_ab1f5a_idx'),
                ),
                migrations.AddIndex(
                    model_name='assertionresult',
                    index=models.Index(fields=['assertion_id'], name='grading_ass_asserti_90d693_idx'),
                ),
                migrations.AddConstraint(
                    model_name='assertionresult',
                    constraint=models.UniqueConstraint(fields=('grading', 'is_meta', 'assertion_id'), name='result_unique_assertion'),
                ),
                migrations.AddConstraint(
                    model_name='review',
                    constraint=models.CheckConstraint(condition=models.Q(('kind', 'note'), models.Q(models.Q(('assertion_id', ''), _negated=True), ('overridden_passed__isnull', False)), _connector='OR'), name='review_override_has_target'),
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_types_follow, content_types_return),
    ]
