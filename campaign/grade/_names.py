"""Which corpus document a path names: lexical, relative to the workspace (``opened``).

A session's workspace is a copy of the corpus, so a workspace-relative path is a
corpus-relative one. `document_named` turns a path as a call holds it (a Read argument, a
Grep path, a Bash word) into the corpus-relative path it names, or None:

* a relative path is taken from the workspace's root (the session's working directory; a
  ``cd`` inside a command is not followed), and normalised lexically
  (`posixpath.normpath`): ``./docs/a.md``, ``docs//a.md`` and ``docs/x/../a.md`` name
  ``docs/a.md``; a path that climbs out (``../x``) names nothing;
* an absolute path names a document when it lies under the batch's workspace path (the one
  every session saw, config.yaml's ``workspace_path``), by the rest of it; none else does
  (a batch of config format 1 records no such path, so there no absolute path names one);
* nothing is expanded or looked up: ``~``, ``$VAR``, globs and symlinks stay as written.
"""

from __future__ import annotations

import posixpath


def document_named(path: str, workspace_path: str | None) -> str | None:
    """The corpus-relative path ``path`` names (module docstring), or None when it names no
    path inside the workspace; ``workspace_path`` is where the sessions saw the workspace
    (None: unknown, so an absolute path names nothing)."""
    if not path:
        return None
    if path.startswith("/"):
        if workspace_path is None:
            return None
        root = posixpath.normpath(workspace_path)
        absolute = posixpath.normpath(path)
        if root == "/" or not absolute.startswith(root + "/"):
            return None
        path = absolute[len(root) + 1:]
    normal = posixpath.normpath(path)
    if normal == "." or normal == ".." or normal.startswith(("../", "/")):
        return None
    return normal
