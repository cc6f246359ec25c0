"""Indexes that serve the keyset orders of the eval pages and API lists (#27): a set's cases, its
run history, a run's results newest first and in case order."""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('eval_app', '0004_eval_set_user_simulator_config'),
        ('sessions_app', '0012_session_adk_id'),
    ]

    operations = [
        migrations.AddIndex(
            model_name='evalcase',
            index=models.Index(fields=['eval_set', 'position', 'id'], name='eval_case_order'),
        ),
        migrations.AddIndex(
            model_name='evalcaseresult',
            index=models.Index(fields=['run', 'id'], name='eval_result_run_order'),
        ),
        migrations.AddIndex(
            model_name='evalcaseresult',
            index=models.Index(fields=['run', 'position', 'repeat', 'id'], name='eval_result_case_order'),
        ),
        migrations.AddIndex(
            model_name='evalrun',
            index=models.Index(fields=['eval_set', 'id'], name='eval_run_set_order'),
        ),
    ]
