"""Eval sets, cases, runs and results.

An eval case is ADK's `EvalCase` JSON kept whole (`EvalCase.data`) and
validated with ADK's model; we add only the columns we look things up by.
A run stores each case's result as the case finishes, so a run cut short by a
restart keeps what it did and can resume with the rest.
"""
from __future__ import annotations

from django.db import models
from django.utils import timezone


class EvalSet(models.Model):
    """ADK's EvalSet: its id, names and timestamp; the cases are rows of EvalCase."""

    app_name = models.CharField(max_length=255, blank=True, default="", help_text="The agent it evaluates.")
    eval_set_id = models.CharField(max_length=255)
    name = models.CharField(max_length=255, blank=True, default="")
    description = models.TextField(blank=True, default="")
    creation_timestamp = models.FloatField(default=0.0)
    # ADK test_config.json `criteria`, as imported or last run; empty means ADK's defaults.
    criteria = models.JSONField(default=dict, blank=True)
    # ADK test_config.json `user_simulator_config` (for conversation_scenario cases), as imported
    # or last run; none means ADK's LLM-backed simulator on the run's judge model.
    user_simulator_config = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["app_name", "eval_set_id"]
        constraints = [models.UniqueConstraint(fields=["app_name", "eval_set_id"], name="unique_eval_set_id")]

    def __str__(self) -> str:
        return self.eval_set_id


class EvalCaseQuerySet(models.QuerySet["EvalCase"]):
    def ordered(self) -> EvalCaseQuerySet:
        return self.order_by("position", "pk")


class EvalCase(models.Model):
    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="cases")
    eval_id = models.CharField(max_length=255)
    position = models.PositiveIntegerField(default=0)
    data = models.JSONField(help_text="ADK's EvalCase, whole (model_dump mode=json).")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    objects = EvalCaseQuerySet.as_manager()

    class Meta:
        ordering = ["position", "pk"]
        constraints = [models.UniqueConstraint(fields=["eval_set", "eval_id"], name="unique_eval_case_id")]
        # The set page's keyset order (selectors.CASE_ORDER), so a page of cases is a seek, not a sort.
        indexes = [models.Index(fields=["eval_set", "position", "id"], name="eval_case_order")]

    def __str__(self) -> str:
        return self.eval_id

    @property
    def turn_count(self) -> int:
        return len(self.data.get("conversation") or [])

    @property
    def first_user_text(self) -> str:
        for turn in self.data.get("conversation") or []:
            for part in (turn.get("user_content") or {}).get("parts") or []:
                if part.get("text"):
                    return part["text"]
        return ""


class EvalRun(models.Model):
    QUEUED, RUNNING, COMPLETED, STOPPED, INTERRUPTED, FAILED = (
        "queued", "running", "completed", "stopped", "interrupted", "failed"
    )
    STATUSES = [(s, s) for s in (QUEUED, RUNNING, COMPLETED, STOPPED, INTERRUPTED, FAILED)]
    ACTIVE = (QUEUED, RUNNING)
    RESUMABLE = (STOPPED, INTERRUPTED, FAILED)

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="runs")
    app_name = models.CharField(max_length=255, help_text="The agent run.")
    metrics = models.JSONField(
        default=list, help_text="ADK's EvalMetric dicts (metric_name, threshold, criterion), as the run asked for them."
    )
    judge_model = models.CharField(
        max_length=255, blank=True, default="", help_text="The judge (and user simulator) model of this run; blank: ADK's."
    )
    user_simulator_config = models.JSONField(
        null=True, blank=True, help_text="ADK's EvalConfig.user_simulator_config for conversation_scenario cases."
    )
    eval_ids = models.JSONField(default=list, help_text="The cases run, in order.")
    repeats = models.PositiveIntegerField(default=1)
    source = models.CharField(max_length=16, default="ui")
    status = models.CharField(max_length=16, choices=STATUSES, default=QUEUED)
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    passed = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    agent_seconds = models.FloatField(default=0.0, help_text="Time inside the agent's own runs.")
    elapsed_seconds = models.FloatField(default=0.0)
    error = models.TextField(blank=True, default="")
    stop_requested = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    metric_means = models.JSONField(
        null=True, blank=True, help_text="Mean score per metric over the results, stored as the run ends (empty while it runs)."
    )

    class Meta:
        ordering = ["-pk"]
        indexes = [
            models.Index(fields=["status"], name="eval_run_status"),
            # A set's run history, newest first, a page at a time (PostgreSQL scans it backwards).
            models.Index(fields=["eval_set", "id"], name="eval_run_set_order"),
        ]

    def __str__(self) -> str:
        return f"run {self.pk} of {self.eval_set_id}"

    @property
    def percent(self) -> int:
        return int(100 * self.done / self.total) if self.total else 100

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def can_resume(self) -> bool:
        return self.status in self.RESUMABLE and self.done < self.total

    @property
    def metric_names(self) -> list[str]:
        return [m["metric_name"] for m in self.metrics]


class EvalCaseResult(models.Model):
    PASSED, FAILED, NOT_EVALUATED, ERROR = "passed", "failed", "not_evaluated", "error"
    STATUSES = [(s, s) for s in (PASSED, FAILED, NOT_EVALUATED, ERROR)]

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="results")
    case = models.ForeignKey(EvalCase, on_delete=models.SET_NULL, null=True, blank=True, related_name="results")
    eval_id = models.CharField(max_length=255)
    repeat = models.PositiveIntegerField(default=0)
    position = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=16, choices=STATUSES)
    metrics = models.JSONField(default=list, help_text="Per metric: name, threshold, score, ADK status.")
    case_data = models.JSONField(help_text="The ADK EvalCase as it was run.")
    session = models.ForeignKey(
        "sessions_app.Session", on_delete=models.SET_NULL, null=True, blank=True, related_name="eval_results"
    )
    user_id = models.CharField(max_length=255, blank=True, default="")
    adk_session_id = models.CharField(max_length=255, blank=True, default="", help_text="ADK's id of the session.")
    error = models.TextField(blank=True, default="")
    agent_seconds = models.FloatField(default=0.0)
    seconds = models.FloatField(default=0.0)
    finished_at = models.DateTimeField(default=timezone.now)
    adk_result = models.JSONField(
        null=True, blank=True, help_text="ADK's EvalCaseResult, whole but for session_details (mode=json)."
    )
    judge_samples = models.JSONField(
        default=list, blank=True, help_text="Each judge call: metric, invocation, sample, raw answer, parsed verdicts."
    )

    class Meta:
        ordering = ["position", "repeat", "pk"]
        constraints = [models.UniqueConstraint(fields=["run", "eval_id", "repeat"], name="unique_case_result")]
        indexes = [
            # The run page's results, newest first, a page at a time.
            models.Index(fields=["run", "id"], name="eval_result_run_order"),
            # The run API's results in case order, a page at a time.
            models.Index(fields=["run", "position", "repeat", "id"], name="eval_result_case_order"),
        ]

    def __str__(self) -> str:
        return f"{self.eval_id} #{self.repeat}: {self.status}"


class EvalWorkItem(models.Model):
    """One case (and repeat) of a run, as a unit of work for the task engine.

    A worker leases an item (state running, its id, a heartbeat); an item whose
    heartbeat goes stale belonged to a worker that died, and is queued again.
    """

    QUEUED, RUNNING, DONE, CANCELLED = "queued", "running", "done", "cancelled"
    STATES = [(s, s) for s in (QUEUED, RUNNING, DONE, CANCELLED)]

    run = models.ForeignKey(EvalRun, on_delete=models.CASCADE, related_name="work_items")
    case = models.ForeignKey(EvalCase, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    eval_id = models.CharField(max_length=255)
    repeat = models.PositiveIntegerField(default=0)
    position = models.PositiveIntegerField(default=0)
    state = models.CharField(max_length=16, choices=STATES, default=QUEUED)
    worker = models.CharField(max_length=255, blank=True, default="")
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    task_id = models.CharField(max_length=64, blank=True, default="", help_text="The django-tasks result id last enqueued.")
    last_error = models.TextField(blank=True, default="", help_text="The last infrastructure fault, retried.")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["position", "repeat", "pk"]
        constraints = [models.UniqueConstraint(fields=["run", "eval_id", "repeat"], name="unique_work_item")]
        indexes = [models.Index(fields=["state", "heartbeat_at"], name="eval_work_item_lease")]

    def __str__(self) -> str:
        return f"{self.eval_id} #{self.repeat} of run {self.run_id}: {self.state}"


class EvalInvocationResult(models.Model):
    case_result = models.ForeignKey(EvalCaseResult, on_delete=models.CASCADE, related_name="invocations")
    index = models.PositiveIntegerField()
    invocation_id = models.CharField(max_length=255, blank=True, default="")
    user_text = models.TextField(blank=True, default="")
    actual = models.JSONField(help_text="ADK's Invocation as the agent produced it.")
    actual_tool_calls = models.JSONField(default=list)
    actual_response = models.TextField(blank=True, default="")
    metrics = models.JSONField(default=list)

    class Meta:
        ordering = ["index"]
        constraints = [models.UniqueConstraint(fields=["case_result", "index"], name="unique_invocation_result")]

    def __str__(self) -> str:
        return f"invocation {self.index}"
