"""A project template overriding a packaged one, for the tests of what a template change renders."""

from __future__ import annotations

from pathlib import Path


def override_template(project: Path, name: str, first_line: str) -> Path:
    """The project's ``templates/<name>``: the packaged template with ``first_line`` at the start of
    its body (the project's templates folder made if missing)."""
    from sparkreport.render.markdown import PACKAGE_TEMPLATES

    text = (PACKAGE_TEMPLATES / name).read_text(encoding="utf-8")
    path = project / "templates" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text.replace("{% block body %}\n", f"{{% block body %}}\n{first_line}\n", 1), encoding="utf-8")
    return path
