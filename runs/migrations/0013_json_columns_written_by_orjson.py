"""The JSON columns' field class became runs.models.fields.JSONField (written with orjson).

The columns are the same (text on SQLite, jsonb on PostgreSQL), so only the migration
state changes: an AlterField would make SQLite copy each table once per field.
"""

import runs.models.fields
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("runs", "0012_gradings_live_with_runs"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="evalcase",
                    name="assertions",
                    field=runs.models.fields.JSONField(default=list),
                ),
                migrations.AlterField(
                    model_name="evalcase",
                    name="definition",
                    field=runs.models.fields.JSONField(),
                ),
                migrations.AlterField(
                    model_name="evalcase",
                    name="tags",
                    field=runs.models.fields.JSONField(default=list),
                ),
                migrations.AlterField(
                    model_name="grading",
                    name="extra",
                    field=runs.models.fields.JSONField(default=dict),
                ),
                migrations.AlterField(
                    model_name="grading",
                    name="original_summary",
                    field=runs.models.fields.JSONField(blank=True, null=True),
                ),
                migrations.AlterField(
                    model_name="grading",
                    name="regraded",
                    field=runs.models.fields.JSONField(blank=True, null=True),
                ),
                migrations.AlterField(
                    model_name="gradinghistory",
                    name="replaced_by",
                    field=runs.models.fields.JSONField(default=dict),
                ),
                migrations.AlterField(
                    model_name="gradinghistory",
                    name="snapshot",
                    field=runs.models.fields.JSONField(),
                ),
                migrations.AlterField(
                    model_name="iteration",
                    name="extra",
                    field=runs.models.fields.JSONField(default=dict),
                ),
                migrations.AlterField(
                    model_name="iteration",
                    name="findings",
                    field=runs.models.fields.JSONField(default=dict),
                ),
                migrations.AlterField(
                    model_name="iteration",
                    name="provenance",
                    field=runs.models.fields.JSONField(default=dict),
                ),
                migrations.AlterField(
                    model_name="iteration",
                    name="recorded_aggregates",
                    field=runs.models.fields.JSONField(blank=True, null=True),
                ),
                migrations.AlterField(
                    model_name="iteration",
                    name="recorded_benchmark",
                    field=runs.models.fields.JSONField(blank=True, null=True),
                ),
                migrations.AlterField(
                    model_name="iteration",
                    name="validity_warnings",
                    field=runs.models.fields.JSONField(default=list),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="artifacts",
                    field=runs.models.fields.JSONField(default=dict),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="conversation",
                    field=runs.models.fields.JSONField(default=list),
                ),
                migrations.AlterField(
                    model_name="run",
                    name="tool_invocations",
                    field=runs.models.fields.JSONField(default=list),
                ),
            ],
            database_operations=[],
        ),
    ]
