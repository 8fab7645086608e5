"""What a run leaves in its KB, without ids and timestamps: two runs that reached the same state
compare equal (loop_replay_test.py's kill and resume, deferred_test.py's rounds)."""
import sqlite3


def rows(db, table, drop=()):
    con = sqlite3.connect(db)
    cols = [c[1] for c in con.execute(f"PRAGMA table_info({table})") if c[1] not in drop]
    out = sorted(tuple(round(v, 9) if isinstance(v, float) else v for v in r)
                 for r in con.execute(f"SELECT {', '.join(cols)} FROM {table}"))
    con.close()
    return out


def kb_content(db):
    """Everything the loop writes, without ids and timestamps."""
    return {"attempts": rows(db, "attempts", ("id", "started_at", "finished_at")),
            "opt_stats": rows(db, "opt_stats", ("last_used",)),
            "transitions": rows(db, "transitions"),
            "lessons": rows(db, "lessons", ("id", "created_at")),
            "optimizations": rows(db, "optimizations"),
            "updates": sorted(r[0] for r in sqlite3.connect(db).execute("SELECT cause FROM updates"))}
