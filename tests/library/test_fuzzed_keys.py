"""Wrong acceptances found by fuzzing this round's keys (#29.10): each is refused with its key path and its rule."""

from __future__ import annotations

import pytest
from helpers import maintained_cluster, minimal_values, problems

from ray_tpu_gke import admission
from ray_tpu_gke.spec.config import parse_stack_config

WINDOW = {"startTime": "2026-01-03T02:00:00Z", "endTime": "2026-01-03T07:30:00Z", "recurrence": "FREQ=WEEKLY;BYDAY=SA,SU"}


def schedule_values(schedule: str) -> dict:
    return minimal_values(monitoring={"sliceHealth": {"schedule": schedule, "alertAfterMinutes": 1440}})


# --- CronJob schedules as robfig/cron v3 (kube-apiserver's CronJob validation) reads them ----------------------------

@pytest.mark.parametrize("schedule, message", [
    ("0 0 * * 7", "7 is above the day of week's maximum 6"),  # robfig/cron v3 spec.go dow bounds 0-6
    ("5-3 * * * *", "the range starts at 5, after its end 3"),
    ("\u0665 * * * *", "is not a minute number (ASCII digits 0-9)"),  # Arabic-Indic five: Python's \d, not Go's Atoi
    ("*/0 * * * *", "a step is at least 1"),
    ("0 0 30 2 *", "never runs"),
    ("CRON_TZ=UTC 0 * * * *", "cannot name TZ= or CRON_TZ="),
    ("@every 5m", "@every is not taken here"),
    # robfig/cron v3 parser.go Parse: a schedule starting with @ is a descriptor matched whole; one starting with
    # white space is split into fields, and "@hourly" alone is one field
    ("@hourly ", "with no white space around it"),
    ("\t@daily", "with no white space around it"),
    # strings.Fields splits on Go's unicode.IsSpace, which U+001C-U+001F are not (Python's str.split takes them)
    ("0\x1c*\x1c*\x1c*\x1c*", "exactly five fields"),
    ("0 *\x1f* * * *", "is not a hour number"),
])
def test_schedules_kubernetes_refuses_are_refused_with_the_key_path(schedule, message):
    found = problems(schedule_values(schedule))
    assert any(p.startswith("ray-tpu-gke:monitoring.sliceHealth") and message in p for p in found), found


@pytest.mark.parametrize("schedule, gap", [
    ("*/5 * * * *", 5), ("*/61 * * * *", 60), ("0 */6 * * *", 360), ("@hourly", 60), ("@daily", 1440),
    ("0 0 * * sun", 7 * 1440), ("0 12 * * MON-FRI", 3 * 1440), ("0,30 9-17 * * *", 15 * 60 + 30),  # 17:30 to 9:00
    ("? * * * *", 1), ("5/20 * * * *", 20),  # :05, :25, :45 each hour
])
def test_schedules_robfig_cron_takes_parse_with_their_longest_gap(schedule, gap):
    assert admission.longest_gap_minutes(admission.parse_cron(schedule)) == gap


def test_day_of_month_and_day_of_week_both_restricted_run_on_either():
    # robfig/cron spec.go dayMatches: with neither day field a star, a day matching either runs.
    spec = admission.parse_cron("0 0 1 * MON")
    import datetime

    assert spec.runs_on(datetime.date(2026, 12, 1))  # the 1st, a Tuesday
    assert spec.runs_on(datetime.date(2026, 12, 7))  # a Monday
    assert not spec.runs_on(datetime.date(2026, 12, 2))
    star_step = admission.parse_cron("0 0 */2 * MON")  # a stepped star is no star: still either
    assert star_step.runs_on(datetime.date(2026, 12, 7))


# --- maintenance --------------------------------------------------------------------------------------------------

def test_exclusions_without_a_window_are_refused():
    exclusion = {"name": "training", "startTime": "2026-12-01T00:00:00Z", "untilEndOfSupport": True}
    found = problems(minimal_values(cluster=maintained_cluster(exclusions=[exclusion])))
    assert any(p.startswith("ray-tpu-gke:cluster.maintenance") and "exclusions need a window" in p for p in found)


def test_a_weekend_window_is_counted_over_the_worst_32_days():
    # Saturday and Sunday of 5.5 h: 32 days from a Monday hold 8 such days, 44 h, under GKE's 48 h.
    found = problems(minimal_values(cluster=maintained_cluster(window=WINDOW)))
    assert any("5:30:00 on 8 days gives 1 day, 20:00:00 in 32 days; GKE needs at least 48 hours" in p for p in found)
    six_hours = {**WINDOW, "endTime": "2026-01-03T08:00:00Z"}  # 8 x 6 h = 48 h
    parse_stack_config(minimal_values(cluster=maintained_cluster(window=six_hours)), "test")


# --- machine types and Ray worker sizes -------------------------------------------------------------------------------

def test_a_machine_type_with_a_leading_zero_is_refused():
    values = minimal_values(cpuPools=[{"name": "prep", "machineType": "n2-standard-08"}])
    (problem,) = problems(values)
    assert problem.startswith('ray-tpu-gke:cpuPools[0].machineType: "n2-standard-08" is invalid')


def test_a_cpu_pool_that_leaves_the_ray_worker_no_cpu_is_refused():
    values = minimal_values(cpuPools=[{"name": "prep", "machineType": "e2-standard-2"}])
    (problem,) = problems(values)
    assert problem.startswith('ray-tpu-gke:cpuPools[0].machineType: "e2-standard-2" leaves no whole vCPU for a Ray '
                              "worker")
    values["ray-tpu-gke:cpuPools"][0]["machineType"] = "e2-standard-4"
    parse_stack_config(values, "test")
