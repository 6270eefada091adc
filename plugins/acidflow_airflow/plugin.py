"""The AirflowPlugin: the backlog page's FastAPI app at /acidflow and its external view in the UI nav."""

from __future__ import annotations

from typing import Any, ClassVar

from airflow.plugins_manager import AirflowPlugin

from acidflow_airflow.web import create_app

__all__ = ["AcidflowPlugin"]


class AcidflowPlugin(AirflowPlugin):
    """Registers the backlog page (FastAPI app + external view)."""

    name = "acidflow"
    fastapi_apps: ClassVar[list[Any]] = [
        {"app": create_app(), "url_prefix": "/acidflow", "name": "acidflow backlog"}
    ]
    external_views: ClassVar[list[Any]] = [
        {
            "name": "Hive ACID backlog",
            "href": "/acidflow/",
            "destination": "nav",
            "category": "browse",
            "url_route": "acidflow-backlog",
        }
    ]
