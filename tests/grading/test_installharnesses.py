"""`manage.py installharnesses`: the pinned CLIs, installed or said to be missing."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from grading.evaluating import agent_clis, registry


def test_check_names_each_cli_installed_or_not(settings, tmp_path):
    settings.EVALSITE_HARNESS_DIR = tmp_path
    out = io.StringIO()
    call_command("installharnesses", "--check", stdout=out)
    for cli in agent_clis.CLIS.values():
        assert f"{cli.harness}: not installed ({cli.spec})" in out.getvalue()
    assert "installharnesses codex" in agent_clis.missing("codex")


def test_an_unknown_name_is_refused_in_one_line(settings, tmp_path):
    settings.EVALSITE_HARNESS_DIR = tmp_path
    with pytest.raises(CommandError, match="unknown harness 'vscode'") as raised:
        call_command("installharnesses", "vscode")
    assert raised.value.returncode == 1


def test_without_npm_it_exits_2_saying_so(settings, tmp_path, monkeypatch):
    settings.EVALSITE_HARNESS_DIR = tmp_path
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CommandError, match="npm is not installed") as raised:
        call_command("installharnesses", "codex")
    assert raised.value.returncode == 2


def test_the_install_command_pins_exact_releases(settings, tmp_path):
    settings.EVALSITE_HARNESS_DIR = tmp_path
    command = agent_clis.install_command(["codex", "gemini"])
    assert command[1:4] == ["install", "--prefix", str(tmp_path)]
    assert command[-2:] == ["@openai/codex@0.171.0", "@google/gemini-cli@0.61.0"]


def test_an_unknown_harness_is_a_problem_not_a_crash():
    assert (
        registry.problem("nope")
        == "unknown harness 'nope' (known: " + ", ".join(registry.names()) + ")"
    )
    assert registry.problem("messages") is None
