"""The Letta server process, run by the server's own Python (`plugins/letta/.venv`), under a socket audit.

memorybench and Letta's server cannot share one environment (letta 0.11.7's lock would move the
core's openai 3.x to 2.x, nltk 3.9 to 3.10, protobuf 6 to 5 and its fastapi), so the
plugin starts `letta.server.rest_api.app` in a process of its own, with the server venv's
interpreter running this file (it imports nothing of memorybench):

    plugins/letta/.venv/bin/python mb_letta/_server.py --port P --allow 127.0.0.1:E --audit FILE

Before Letta is imported, a `sys.addaudithook` hook sees every `socket.connect` (and every
DNS lookup, `socket.getaddrinfo`) the process makes: a connection to an address that is not
127.0.0.1 at one of the allowed ports (the recording endpoint's; the server's own) is
refused (`PermissionError`, so Letta fails loudly instead of fetching something) and written
to the audit file, one JSON line each, with the allowed ones. The plugin's tests read that
file: no connection but to memorybench's endpoint.

The environment it runs in is made by the plugin (`mb_letta._process.server_env`): Letta's
home (`HOME`: Letta 0.11.7 keeps its SQLite database at `~/.letta/sqlite.db`) inside the pack, telemetry and tracing
off, no provider key. This file only checks that (`--letta-dir` is where the caller put it).

One table is made before Letta starts (`prepare_store`): `archives_agents`, from Letta's own
definition with its SQLite default fixed (Letta 0.11.7 declares `server_default="now()"`, a string
SQLite stores as text, so no agent could get an archival store). Nothing of Letta's code is changed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import socket
import sqlite3
import sys
import threading
import time

LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")
#: letta 0.11.7's SQLite DDL for `archives_agents.created_at` (from `server_default="now()"`, a string: SQLite
#: stores the text `now()` and Letta cannot read the row back) and what the store gets instead: the default
#: Letta's own alembic migration gives that column on SQLite (74e860718e0d, "add archival memory sharing":
#: `server_default=sa.text("datetime('now')")`)
BAD_DEFAULT = "DEFAULT 'now()'"
GOOD_DEFAULT = "DEFAULT (datetime('now'))"
#: the statement made, kept in the store folder (the pack) beside Letta's database
SCHEMA_FILE = "schema_archives_agents.sql"


def install_audit(allowed_ports: set[int], path: str) -> None:
    lock = threading.Lock()

    def write(row: dict) -> None:
        with lock, open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")

    def hook(event: str, args: tuple) -> None:
        if event == "socket.connect":
            sock, address = args[0], args[1]
            if not isinstance(address, tuple):  # a unix socket (none expected): refused like any other
                host, port = str(address), None
            else:
                host, port = str(address[0]), int(address[1])
            ok = (
                getattr(sock, "family", None) in (socket.AF_INET, socket.AF_INET6)
                and host in LOCAL_HOSTS
                and port in allowed_ports
            )
            write(
                {
                    "event": "connect",
                    "host": host,
                    "port": port,
                    "allowed": ok,
                    "thread": threading.current_thread().name,
                    "t": time.time(),
                }
            )
            if not ok:
                raise PermissionError(f"memorybench socket audit: the Letta server may not connect to {host}:{port}")
        elif event == "socket.getaddrinfo":
            host = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
            ok = host in LOCAL_HOSTS or host in ("", "None", "0.0.0.0")
            if not ok:
                write({"event": "getaddrinfo", "host": host, "port": args[1], "allowed": False, "t": time.time()})
                raise PermissionError(f"memorybench socket audit: the Letta server may not look up {host}")

    sys.addaudithook(hook)


def prepare_store(letta_dir: str) -> None:
    """Create Letta's `archives_agents` table before Letta does, with its SQLite default fixed.

    Letta's code is not changed: its ORM declares `archives_agents.created_at` with
    `server_default="now()"`, which SQLAlchemy renders on SQLite as the literal `DEFAULT 'now()'`,
    so every row holds the text `now()` and the agent's first archival insert answers
    `400 Invalid isoformat string: 'now()'`. The table is made here from Letta's own table
    definition (`CreateTable(ArchivesAgents.__table__)` compiled for SQLite), with that one clause
    replaced by `DEFAULT (datetime('now'))`, the default Letta's own alembic migration gives the
    column on SQLite (revision 74e860718e0d; the server's `create_all` path does not run migrations);
    Letta's own `Base.metadata.create_all` then finds it and makes the other tables. The
    statement is written to `SCHEMA_FILE` in the store folder.
    """
    from sqlalchemy.dialects import sqlite
    from sqlalchemy.schema import CreateTable

    from letta.orm.archives_agents import ArchivesAgents

    ddl = str(CreateTable(ArchivesAgents.__table__).compile(dialect=sqlite.dialect())).strip()
    if ddl.count(BAD_DEFAULT) != 1 or not ddl.startswith("CREATE TABLE archives_agents"):
        sys.exit(f"memorybench: Letta's archives_agents table is not the one this plugin knows ({BAD_DEFAULT} once); got: {ddl}")
    fixed = ddl.replace(BAD_DEFAULT, GOOD_DEFAULT).replace("CREATE TABLE", "CREATE TABLE IF NOT EXISTS", 1)
    home = os.path.join(letta_dir, ".letta")
    os.makedirs(home, exist_ok=True)
    with contextlib.closing(sqlite3.connect(os.path.join(home, "sqlite.db"))) as db:
        db.execute(fixed)
        db.commit()
        made = db.execute("SELECT sql FROM sqlite_master WHERE type='table' AND name='archives_agents'").fetchone()[0]
    if BAD_DEFAULT in made:
        sys.exit(f"memorybench: {home}/sqlite.db already has archives_agents with {BAD_DEFAULT}; start from an empty store")
    record = os.path.join(letta_dir, SCHEMA_FILE)
    if os.path.exists(record):  # a resumed run's server over the committed store: the table is there
        return
    with open(record, "w", encoding="utf-8") as f:
        f.write(f"-- made by memorybench before Letta started; Letta's own DDL had: {BAD_DEFAULT}\n{fixed};\n")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--allow", action="append", default=[], help="127.0.0.1:PORT the server may connect to")
    parser.add_argument("--audit", required=True)
    parser.add_argument("--letta-dir", required=True)
    args = parser.parse_args()
    if os.path.abspath(os.environ.get("HOME", "")) != os.path.abspath(args.letta_dir):
        sys.exit("memorybench: HOME is not the store folder the plugin named; start the server through memory=letta")
    ports = {int(a.rsplit(":", 1)[1]) for a in args.allow} | {args.port}
    install_audit(ports, args.audit)
    prepare_store(args.letta_dir)
    import uvicorn

    uvicorn.run(
        "letta.server.rest_api.app:app",
        host="127.0.0.1",
        port=args.port,
        workers=1,
        reload=False,
        access_log=False,
        log_level=os.environ.get("MB_LETTA_LOG_LEVEL", "warning"),
    )


if __name__ == "__main__":
    main()
