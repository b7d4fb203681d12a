"""The JSON columns' field class became runs.models.fields.JSONField (written with orjson).

The columns are the same (text on SQLite, jsonb on PostgreSQL), so only the migration
state changes: an AlterField would make SQLite copy each table once per field.
"""

import runs.models.fields
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("campaigns", "0002_campaign_activity_from_runs"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="campaign",
                    name="options",
                    field=runs.models.fields.JSONField(default=dict),
                ),
                migrations.AlterField(
                    model_name="queuediteration",
                    name="plan",
                    field=runs.models.fields.JSONField(),
                ),
                migrations.AlterField(
                    model_name="queuediteration",
                    name="report",
                    field=runs.models.fields.JSONField(blank=True, null=True),
                ),
            ],
            database_operations=[],
        ),
    ]
