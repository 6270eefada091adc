"""An Airflow notifier for the tests: appends its rendered ``text`` to the file ``path``."""

from __future__ import annotations

from pathlib import Path

from airflow.sdk import BaseNotifier


class RecordingNotifier(BaseNotifier):
    template_fields = ("text",)

    def __init__(self, text: str, path: str) -> None:
        super().__init__()
        self.text = text
        self.path = path

    def notify(self, context):
        with Path(self.path).open("a") as out:
            out.write(self.text + "\n")
