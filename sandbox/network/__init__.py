"""The network side of the confinement: what the runner binds and reaches.

`listen_unix` and `connect_unix` bind and reach a Unix socket at a path of any
length (the kernel's limit for a socket's address is 107 bytes; a batch or a
test directory deep enough passes it).
"""

from __future__ import annotations

from ._unix import UNIX_PATH_MAX as UNIX_PATH_MAX
from ._unix import connect_unix as connect_unix
from ._unix import listen_unix as listen_unix
