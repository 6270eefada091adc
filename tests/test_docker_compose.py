"""docker-compose.yaml stays valid without a Docker engine: parsed, every path and image checked."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yaml").read_text())
SERVICES = COMPOSE["services"]
# name[:tag] with an explicit, pinned tag (no "latest"): Docker's reference grammar, simplified.
IMAGE = re.compile(
    r"^(?:[a-z0-9]+(?:[._-][a-z0-9]+)*/)*[a-z0-9]+(?:[._-][a-z0-9]+)*:(?P<tag>[\w][\w.-]{0,127})$"
)


def _volumes():
    for name, service in SERVICES.items():
        for volume in service.get("volumes", []):
            yield name, volume


def test_compose_has_the_platform_services():
    assert set(SERVICES) >= {
        "postgres",
        "zookeeper",
        "spark-master",
        "spark-worker",
        "airflow-init",
        "airflow-apiserver",
        "airflow-scheduler",
        "airflow-dag-processor",
        "airflow-triggerer",
        "airflow-worker",
    }
    commands = {
        name: service.get("command") for name, service in SERVICES.items() if name.startswith("airflow-")
    }
    assert commands["airflow-apiserver"] == "api-server"
    assert commands["airflow-scheduler"] == "scheduler"
    assert commands["airflow-dag-processor"] == "dag-processor"
    assert commands["airflow-triggerer"] == "triggerer"


@pytest.mark.parametrize("name", sorted(SERVICES))
def test_compose_image_is_pinned(name):
    image = SERVICES[name]["image"]
    match = IMAGE.match(image)
    assert match, image
    assert match.group("tag") != "latest"


def test_compose_images_match_the_installed_versions():
    airflow = SERVICES["airflow-scheduler"]["image"]
    assert airflow.startswith(f"apache/airflow:{version('apache-airflow')}-python3.11"), airflow
    for name in ("spark-master", "spark-worker"):
        assert SERVICES[name]["image"].startswith(f"apache/spark:{version('pyspark')}"), SERVICES[name][
            "image"
        ]


def test_compose_bind_mounts_exist_and_mount_dags_plugins_spark_jobs():
    sources = set()
    for name, volume in _volumes():
        source, target = volume.split(":")[:2]
        assert target.startswith("/"), (name, volume)
        if source.startswith("."):
            assert (ROOT / source).exists(), f"{name} mounts missing path {source}"
            sources.add(source)
        else:
            assert source in COMPOSE["volumes"], f"{name} mounts undeclared volume {source}"
    assert {"./dags", "./plugins", "./spark_jobs"} <= sources


def test_compose_env_names_existing_files_inside_the_mounts():
    env = SERVICES["airflow-scheduler"]["environment"]
    mounts = {
        target: source
        for _, v in _volumes()
        for source, target in [v.split(":")[:2]]
        if source.startswith(".")
    }

    def host_path(container_path):
        for target, source in sorted(mounts.items(), key=lambda item: -len(item[0])):
            if container_path == target or container_path.startswith(target + "/"):
                return ROOT / source / container_path[len(target) :].lstrip("/")
        return None

    for key in ("ACIDFLOW_SPARK_APPLICATION", "ACIDFLOW_CONFIG"):
        path = host_path(env[key])
        assert path is not None, (key, env[key])
        assert path.is_file(), (key, env[key])
    assert env["AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION"] == "False"


def test_compose_config_file_loads():
    from acidflow_airflow.config import load_config

    config = load_config(ROOT / "acidflow.yaml.example", environ={})
    assert config.pool == "acidflow_compaction"
    assert config.levels.critical_deltas == 50
    assert config.delta_num_threshold == 10
