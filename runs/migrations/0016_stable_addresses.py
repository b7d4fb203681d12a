"""Stable addresses: every existing number is kept as it is; the display order (`position`)
is filled from the current order (numbers followed generation time until now), the ledger
with the number each existing iteration and trigger iteration holds, and `label_context` for
iterations that share a label."""

from pathlib import PurePosixPath

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models


def fill(apps, schema_editor):
    Iteration = apps.get_model("runs", "Iteration")
    TriggerIteration = apps.get_model("runs", "TriggerIteration")
    IssuedNumber = apps.get_model("runs", "IssuedNumber")
    by_skill = {}
    for iteration in Iteration.objects.order_by("skill_id", "number").only(
        "pk", "skill_id", "number", "label", "source_key", "source_path", "generated_at",
        "imported_at",
    ):
        by_skill.setdefault(iteration.skill_id, []).append(iteration)
    ledger = []
    for iterations in by_skill.values():
        contexts = _label_contexts(iterations)
        for position, iteration in enumerate(iterations, start=1):
            iteration.position = position
            iteration.label_context = contexts.get(iteration.pk, "")
            ledger.append(_issued(IssuedNumber, iteration, "iteration"))
        Iteration.objects.bulk_update(iterations, ["position", "label_context"], batch_size=500)
    for trigger in TriggerIteration.objects.only("pk", "skill_id", "number", "label", "source_key"):
        ledger.append(_issued(IssuedNumber, trigger, "trigger"))
    IssuedNumber.objects.bulk_create(ledger, batch_size=500)


def _issued(IssuedNumber, row, kind):
    return IssuedNumber(
        skill_id=row.skill_id,
        kind=kind,
        number=row.number,
        source_key=row.source_key,
        label=row.label[:300],
        issued_at=getattr(row, "imported_at", None) or django.utils.timezone.now(),
    )


def _label_contexts(iterations):
    # As runs.importing.writer.label_contexts does it today (a migration keeps its own copy).
    by_label = {}
    for iteration in iterations:
        by_label.setdefault(iteration.label, []).append(iteration)
    contexts = {}
    for twins in by_label.values():
        if len(twins) < 2:
            continue
        # Each source's folders, nearest first: the name at the first level where no twin's
        # folder has the same (`ws-b` of ws-b/<skill>/iteration-3, beside ws-a/<skill>/…).
        chains = [
            PurePosixPath(it.source_path.replace("\\", "/")).parent.parts[::-1][:4]
            for it in twins
        ]
        for iteration, chain in zip(twins, chains, strict=True):
            others = [other for other in chains if other is not chain]
            apart = next(
                (
                    name
                    for depth, name in enumerate(chain)
                    if all(len(other) <= depth or other[depth] != name for other in others)
                ),
                "",
            )
            if apart and apart != "/":
                contexts[iteration.pk] = apart[:100]
            elif iteration.generated_at is not None:
                contexts[iteration.pk] = f"{iteration.generated_at:%Y-%m-%d %H:%M}"
            else:
                contexts[iteration.pk] = f"imported {iteration.imported_at:%Y-%m-%d %H:%M}"
    return contexts


class Migration(migrations.Migration):

    dependencies = [
        ('runs', '0015_trigger_evals'),
    ]

    operations = [
        migrations.CreateModel(
            name='IssuedNumber',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('iteration', 'iteration'), ('trigger', 'trigger iteration')], max_length=16)),
                ('number', models.PositiveIntegerField()),
                ('source_key', models.CharField(max_length=600)),
                ('label', models.CharField(blank=True, max_length=300)),
                ('issued_at', models.DateTimeField(default=django.utils.timezone.now)),
            ],
            options={
                'ordering': ['skill_id', 'kind', 'number'],
            },
        ),
        migrations.AlterModelOptions(
            name='iteration',
            options={'ordering': ['skill_id', 'position', 'number']},
        ),
        migrations.AddField(
            model_name='iteration',
            name='label_context',
            field=models.CharField(blank=True, max_length=200),
        ),
        migrations.AddField(
            model_name='iteration',
            name='position',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddIndex(
            model_name='iteration',
            index=models.Index(fields=['skill', 'position'], name='runs_iterat_skill_i_8f46dd_idx'),
        ),
        migrations.AddField(
            model_name='issuednumber',
            name='skill',
            field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='issued_numbers', to='runs.skill'),
        ),
        migrations.AddIndex(
            model_name='issuednumber',
            index=models.Index(fields=['skill', 'kind', 'source_key'], name='runs_issued_skill_i_14db50_idx'),
        ),
        migrations.AddConstraint(
            model_name='issuednumber',
            constraint=models.UniqueConstraint(fields=('skill', 'kind', 'number'), name='issued_number_unique'),
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
