"""The processes below a process, read from /proc's parent links: what the tests that stop the
daemon or a command check is gone."""
import os


def descendants(pid, live_only=False):
    """Pids of every process below `pid`; with `live_only`, zombies are left out (they hold
    nothing and their parent reaps them)."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            fields = stat[stat.rindex(")") + 2:].split()
            if live_only and fields[0] == "Z":
                continue
            children.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, ValueError):
            continue
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out
