"""A pass-through FUSE file system that fails one step of a write on purpose.

    python faultfs.py BACKING MOUNTPOINT CONTROL_DIR

Every call that changes something (create, write, truncate, chmod, chown, fsync,
fsyncdir, rename, link, unlink, mkdir, rmdir, symlink, utimens) is a step. While
CONTROL_DIR/plan.json says {"step": N, "fault": F}, steps are counted from the moment
the plan appeared, each one logged to CONTROL_DIR/log as "N OP PATH", and step N gets
fault F instead of being carried out:

- "EIO", "ENOSPC", "EDQUOT": the call fails with that errno (what a failing device, a
  full disk or a used-up quota answer);
- "KILL": the calling process is sent SIGKILL while its call waits here, then the call
  fails; the step never happens, as when a process dies at that instant.

Without a plan, or with {"step": 0}, it is a plain pass-through and counts nothing.
The kernel is asked not to cache names or attributes, so what the tests change through
the backing directory is seen at once. Run by tests/faults/test_faults.py.
"""

import errno
import json
import os
import signal
import sys

from fuse import FUSE, FuseOSError, Operations, fuse_get_context

FAULTS = {"EIO": errno.EIO, "ENOSPC": errno.ENOSPC, "EDQUOT": errno.EDQUOT}


class FaultFS(Operations):
    def __init__(self, backing: str, control: str):
        self.backing = backing
        self.plan_path = os.path.join(control, "plan.json")
        self.log_path = os.path.join(control, "log")
        self.plan_text = None
        self.plan = {"step": 0}
        self.count = 0

    # -- the fault plan -------------------------------------------------------------

    def _refresh(self):
        try:
            with open(self.plan_path) as f:
                text = f.read()
        except FileNotFoundError:
            text = ""
        if text != self.plan_text:
            self.plan_text = text
            self.plan = json.loads(text) if text.strip() else {"step": 0}
            self.count = 0

    def _step(self, op: str, path: str):
        """Count one changing call; raise its fault when it is the planned one."""
        self._refresh()
        if not self.plan.get("step"):
            return
        self.count += 1
        planned = self.count == self.plan["step"]
        with open(self.log_path, "a") as log:
            log.write(f"{self.count} {op} {path}{' FAULT' if planned else ''}\n")
        if not planned:
            return
        fault = self.plan["fault"]
        if fault == "KILL":
            _, _, tid = fuse_get_context()
            try:
                os.kill(tid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            raise FuseOSError(errno.EIO)
        raise FuseOSError(FAULTS[fault])

    def _full(self, path: str) -> str:
        return os.path.join(self.backing, path.lstrip("/"))

    # -- reading ------------------------------------------------------------------

    def access(self, path, mode):
        if not os.access(self._full(path), mode):
            raise FuseOSError(errno.EACCES)

    def getattr(self, path, fh=None):
        st = os.fstat(fh) if fh is not None else os.lstat(self._full(path))
        keys = (
            "st_atime", "st_ctime", "st_gid", "st_mode", "st_mtime", "st_nlink", "st_size",
            "st_uid", "st_ino", "st_blocks",
        )
        attrs = {k: getattr(st, k) for k in keys}
        # Nanoseconds, so a file rewritten within a second still looks changed.
        attrs["st_mtime"] = st.st_mtime_ns / 1e9
        attrs["st_ctime"] = st.st_ctime_ns / 1e9
        return attrs

    def readdir(self, path, fh):
        return [".", ".."] + os.listdir(self._full(path))

    def readlink(self, path):
        return os.readlink(self._full(path))

    def statfs(self, path):
        st = os.statvfs(self._full(path))
        keys = (
            "f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files",
            "f_flag", "f_frsize", "f_namemax",
        )
        return {k: getattr(st, k) for k in keys}

    def open(self, path, flags):
        return os.open(self._full(path), flags)

    def opendir(self, path):
        return 0

    def read(self, path, size, offset, fh):
        return os.pread(fh, size, offset)

    def flush(self, path, fh):
        return 0

    def release(self, path, fh):
        os.close(fh)
        return 0

    def releasedir(self, path, fh):
        return 0

    # -- changing: each call is a step ----------------------------------------------

    def create(self, path, mode, fi=None):
        self._step("create", path)
        return os.open(self._full(path), os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)

    def write(self, path, data, offset, fh):
        self._step("write", path)
        return os.pwrite(fh, data, offset)

    def truncate(self, path, length, fh=None):
        self._step("truncate", path)
        if fh is not None:
            os.ftruncate(fh, length)
        else:
            os.truncate(self._full(path), length)

    def chmod(self, path, mode):
        self._step("chmod", path)
        os.chmod(self._full(path), mode)

    def chown(self, path, uid, gid):
        self._step("chown", path)
        os.lchown(self._full(path), uid, gid)

    def utimens(self, path, times=None):
        self._step("utimens", path)
        os.utime(self._full(path), times, follow_symlinks=False)

    def fsync(self, path, datasync, fh):
        self._step("fsync", path)
        os.fsync(fh)

    def fsyncdir(self, path, datasync, fh):
        self._step("fsyncdir", path)
        fd = os.open(self._full(path), os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename(self, old, new):
        self._step("rename", f"{old} -> {new}")
        os.rename(self._full(old), self._full(new))

    def link(self, target, name):
        self._step("link", f"{name} -> {target}")
        os.link(self._full(name), self._full(target))

    def symlink(self, target, name):
        self._step("symlink", target)
        os.symlink(name, self._full(target))

    def unlink(self, path):
        self._step("unlink", path)
        os.unlink(self._full(path))

    def mkdir(self, path, mode):
        self._step("mkdir", path)
        os.mkdir(self._full(path), mode)

    def rmdir(self, path):
        self._step("rmdir", path)
        os.rmdir(self._full(path))


def main():
    backing, mountpoint, control = sys.argv[1:4]
    FUSE(
        FaultFS(os.path.abspath(backing), os.path.abspath(control)),
        mountpoint,
        foreground=True,
        # One request at a time: the steps are counted in the order they happen.
        nothreads=True,
        allow_other=True,
        default_permissions=True,
        attr_timeout=0,
        entry_timeout=0,
        negative_timeout=0,
        # Unlinking a file that is still open removes it, as a kernel file system does
        # (libfuse would otherwise rename it to .fuse_hidden*, a step of its own).
        hard_remove=True,
    )


if __name__ == "__main__":
    main()
