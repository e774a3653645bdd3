"""Per-candidate isolation for the Galapagos evaluation worker (Linux).

The whole worker already runs in a bubblewrap sandbox (read-only file
system, no network unless the card allows it, no capabilities). Inside it,
every candidate gets namespaces of its own, set up while its process waits
in standby, before any candidate exists:

  worker  `enter_user_namespace`, before it imports evaluator.py: a user
          namespace of its own (the kernel makes one only for a process
          with a single thread, and imports start threads: numpy's BLAS
          starts its pool as it is imported); then, after the import,
          `zygote_pid_namespace`: a new pid namespace, whose pid 1 is the
          zygote it forks next (so the zygote may make pid namespaces, and
          come back to its own).
  zygote  forks each standby child into a new pid namespace, as its pid 1
          (`new_pid_namespace`, fork, `back_to_pid_namespace`). When the
          child ends (the run kills its process group when the candidate is
          done, or at the timeout), the kernel kills every process left in
          its namespace (double-forked, setsid'd, whatever): nothing a
          candidate starts outlives it. Being pid 1, the candidate's process
          ignores the signals it sends itself unless it handles them (a
          SIGKILL it sends itself does nothing; abort() still ends it).
  child   the run's lane peer and the candidate's process: `enter_namespaces`
          (a user, mount and IPC namespace), `private_mounts` (a fresh
          scratch dir: its HOME, TMPDIR and /dev/shm; the lane socket's dir
          hidden), the worker's limits, then `drop_privileges` (no
          capabilities, no new privileges, not dumpable, a Landlock domain of
          its own where the kernel has one: no TCP unless the card allows
          the network, no signals to or abstract sockets shared with
          processes outside it), then it serves the lane.

Only the standard library is used (ctypes for the system calls Python has
no wrapper for).
"""

import ctypes
import errno
import os

from galapagos_eval import allow_moving_files, moving_files

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWUSER = 0x10000000
CLONE_NEWPID = 0x20000000

MS_RDONLY = 0x1
MS_NOSUID = 0x2
MS_NODEV = 0x4
MS_BIND = 0x1000
MS_REC = 0x4000
MS_PRIVATE = 1 << 18

PR_SET_PDEATHSIG = 1
PR_SET_DUMPABLE = 4
PR_CAPBSET_DROP = 24
PR_SET_NO_NEW_PRIVS = 38
PR_CAP_AMBIENT = 47
PR_CAP_AMBIENT_CLEAR_ALL = 4

# Landlock (same numbers on every architecture).
SYS_LANDLOCK_CREATE_RULESET = 444
SYS_LANDLOCK_RESTRICT_SELF = 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_ACCESS_FS_MAKE_CHAR = 1 << 6
LANDLOCK_ACCESS_FS_MAKE_BLOCK = 1 << 11
LANDLOCK_ACCESS_NET_BIND_TCP = 1 << 0
LANDLOCK_ACCESS_NET_CONNECT_TCP = 1 << 1
LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET = 1 << 0
LANDLOCK_SCOPE_SIGNAL = 1 << 1

LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.syscall.restype = ctypes.c_long
LIBC.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_char_p]

SETUP_HINT = (
    "the system does not allow unprivileged user namespaces inside bubblewrap (on Ubuntu 23.10 and "
    "later AppArmor restricts them: see the README's Security model); set the evaluator's "
    "`sandbox: none` to run candidates without a sandbox"
)


class SetupError(Exception):
    """The candidate cannot be isolated; the message says why and what to do."""


def _check(result, what):
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return result


def _write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _own_user_namespace(flags):
    """unshare(CLONE_NEWUSER | flags), mapping this process's uid and gid to
    themselves in the new user namespace."""
    uid, gid = os.getuid(), os.getgid()
    _check(LIBC.unshare(CLONE_NEWUSER | flags), "unshare")
    _write("/proc/self/setgroups", "deny")
    _write("/proc/self/uid_map", f"{uid} {uid} 1")
    _write("/proc/self/gid_map", f"{gid} {gid} 1")


def enter_user_namespace():
    """In the worker, before it imports evaluator.py (while it has one
    thread): a user namespace of its own."""
    try:
        _own_user_namespace(0)
    except OSError as exc:
        raise SetupError(f"cannot isolate candidates inside the sandbox ({exc}); {SETUP_HINT}") from None


def zygote_pid_namespace():
    """In the worker, after the import, before it forks the zygote: a new pid
    namespace for its next child (the zygote, its pid 1). Unlike a user
    namespace, this is allowed with threads running."""
    try:
        _check(LIBC.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")
    except OSError as exc:
        raise SetupError(f"cannot isolate candidates inside the sandbox ({exc}); {SETUP_HINT}") from None


def new_pid_namespace():
    """In the zygote: its next child is pid 1 of a new pid namespace."""
    _check(LIBC.unshare(CLONE_NEWPID), "unshare(CLONE_NEWPID)")


def back_to_pid_namespace(fd):
    """In the zygote, after a fork: its children go to its own pid namespace
    again (so that the next `new_pid_namespace` is allowed)."""
    _check(LIBC.setns(fd, CLONE_NEWPID), "setns(CLONE_NEWPID)")


def enter_namespaces():
    """In the child: new user, mount and IPC namespaces, mapping this
    process's uid and gid to themselves. (No network namespace of its own:
    the sandbox's has no network unless the card allows it, and Landlock
    refuses candidates TCP; a network namespace per candidate costs more to
    make and unmake than the rest of its isolation.)"""
    try:
        _own_user_namespace(CLONE_NEWNS | CLONE_NEWIPC)
    except OSError as exc:
        raise SetupError(
            f"cannot give the candidate namespaces of its own inside the sandbox ({exc}); {SETUP_HINT}"
        ) from None


def _mount(source, target, fstype, flags, data=None):
    _check(
        LIBC.mount(
            source.encode() if source else None,
            target.encode(),
            fstype.encode() if fstype else None,
            flags,
            data.encode() if data else None,
        ),
        f"mount {target}",
    )


def private_mounts(root, write_quota_mib, hide):
    """In the child: a fresh tmpfs on `root` (at most `write_quota_mib` MiB when given; the
    only place the candidate can write, and nobody else sees) holding its
    HOME (`home`) and TMPDIR (`tmp`), with `shm` bound on /dev/shm; `hide`
    (the lane socket's dir) and /dev/pts covered by empty read-only mounts."""
    try:
        _mount(None, "/", None, MS_REC | MS_PRIVATE)
        size = f"size={int(write_quota_mib)}m," if write_quota_mib else ""
        _mount("tmpfs", root, "tmpfs", MS_NOSUID | MS_NODEV, size + "mode=0755")
        for name in ("home", "tmp"):
            os.mkdir(os.path.join(root, name), 0o700)
        shm = os.path.join(root, "shm")
        os.mkdir(shm, 0o1777)
        if os.path.isdir("/dev/shm"):
            _mount(shm, "/dev/shm", None, MS_BIND)
        for path in [*hide, "/dev/pts"]:
            if os.path.isdir(path):
                _mount("tmpfs", path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV, "size=4k,mode=0555")
    except OSError as exc:
        raise SetupError(f"cannot give the candidate a private scratch dir ({exc})") from None


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def drop_privileges(network):
    """No capabilities (so it cannot unmount its private /tmp or
    remount anything), no new privileges, not dumpable (other candidates
    cannot read its memory through /proc), and a Landlock domain of its own
    where the kernel has Landlock (no signals to, ptrace of or abstract
    sockets shared with processes outside it; no TCP unless `network`)."""
    for cap in range(64):
        if LIBC.prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
            if ctypes.get_errno() == errno.EINVAL:
                break
    LIBC.prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
    header = _CapHeader(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3
    data = (_CapData * 2)()
    _check(LIBC.capset(ctypes.byref(header), data), "capset")
    _check(LIBC.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    _check(LIBC.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0), "dumpable")
    _landlock(network)


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


def landlock_abi():
    """The kernel's Landlock ABI version (0 when it has none)."""
    abi = LIBC.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                       ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(0, abi)


def _landlock(network):
    abi = landlock_abi()
    if abi < 1:
        return
    attr = _RulesetAttr(LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_BLOCK | moving_files(abi), 0, 0)
    size = 8
    if abi >= 4:
        size = 16
        if not network:
            attr.net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP
    if abi >= 6:
        size = 24
        attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL
    fd = LIBC.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(size),
                      ctypes.c_uint32(0))
    if fd < 0:
        return
    try:
        allow_moving_files(LIBC, fd, abi)
        _check(LIBC.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(fd), ctypes.c_uint32(0)),
               "landlock_restrict_self")
    finally:
        os.close(fd)
