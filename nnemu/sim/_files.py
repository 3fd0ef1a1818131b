"""The emulated device's file system, as far as NNAPI uses it: compilation cache files.

Apps pass file handles (the HIDL ``hidl_handle`` of an open fd) to drivers, which
write their compiled model into them and read it back later.  Contents are Python
values, not bytes: the emulator only needs to know what was written and whether it
was tampered with.
"""

from __future__ import annotations

import attrs


@attrs.define
class FileSystem:
    """Paths to contents; a path that was opened but never written holds None."""

    files: dict[str, object] = attrs.field(factory=dict)
    """Contents by path."""

    def open(self, path: str) -> FileHandle:
        """Open ``path`` read-write, creating it empty if absent (what the runtime does)."""
        self.files.setdefault(path, None)
        return FileHandle(path, self)


@attrs.frozen(eq=False)
class FileHandle:
    """An open file, as handed across HIDL."""

    path: str
    """The file's path."""
    fs: FileSystem = attrs.field(repr=False)
    """Where it lives."""

    def read(self) -> object:
        """The file's contents (None when empty)."""
        return self.fs.files.get(self.path)

    def write(self, value: object) -> None:
        """Replace the file's contents."""
        self.fs.files[self.path] = value
