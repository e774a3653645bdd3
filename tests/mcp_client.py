"""An agent's session with `galapagos mcp`, through the official MCP Python SDK
(the `mcp` package from PyPI), driven by tests/mcp.rs.

argv: GALAPAGOS BROKEN_CARD APPLY_TO TASK (the whole session), or
remote GALAPAGOS SSH_TARGET APPLY_TO (a run on a server: watched and taken
home through ssh://). Prints one JSON object: what each call answered and
the timings; the Rust test asserts on it.
"""

import asyncio
import json
import os
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def text_of(result):
    return "\n".join(c.text for c in result.content if getattr(c, "type", "") == "text")


def answer(result):
    """A tool's answer as JSON (its text), or its error text."""
    text = text_of(result)
    if result.is_error:
        return {"error": text}
    return json.loads(text)


def server(exe):
    passed = ("XDG_DATA_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "GALAPAGOS_SSH_CONFIG", "GALAPAGOS_REMOTE")
    env = {k: os.environ[k] for k in passed if k in os.environ}
    return StdioServerParameters(command=exe, args=["mcp"], env=env)


async def remote(exe, target, apply_to):
    """A finished run on a server, through ssh://."""
    out = {}
    async with stdio_client(server(exe)) as (read, write):
        async with ClientSession(read, write) as s:
            await s.initialize()

            async def call(name, **arguments):
                return answer(await s.call_tool(name, arguments))

            out["status"] = await call("run_status", run=target)
            out["best"] = await call("get_genome", run=target)
            out["compare"] = await call("compare_runs", runs=[target])
            out["apply"] = await call("apply_genome", run=target, to=apply_to)
            out["steer"] = await call("steer_run", run=target, notes="late")
            out["bad_target"] = await call("run_status", run="ssh://nohost")
    return out


async def session(exe, broken, apply_to, task):
    out = {"status_latencies_ms": []}
    params = server(exe)
    started = time.monotonic()
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as s:
            init = await s.initialize()
            out["server"] = init.server_info.name
            out["tools"] = sorted(t.name for t in (await s.list_tools()).tools)

            async def call(name, **arguments):
                r = await s.call_tool(name, arguments)
                return answer(r)

            cards = await call("list_cards")
            out["cards"] = [c.get("name") for c in cards["cards"]]
            tasks = await call("list_tasks")
            out["tasks"] = [t.get("name") for t in tasks["tasks"]]
            out["broken"] = await call("validate_card", card=broken)
            out["valid"] = await call("validate_card", card="best_of_n")
            out["unknown_card"] = await call("start_run", card="no_such_card", task=task, iterations=10)
            out["too_small"] = await call("start_run", card="best_of_n", task=task, iterations=2)
            out["bad_argument"] = await call("start_run", card="best_of_n", task=task, iterations="many")
            out["unknown_tool"] = await call("start_a_run", card="best_of_n")

            # the built-in card, written by the agent with the sandbox off: refused
            card = (await s.read_resource("galapagos://card/best_of_n")).contents[0].text
            unsandboxed = card.replace("  timeout_secs: 60.0\n", "  timeout_secs: 60.0\n  sandbox: none\n", 1)
            assert unsandboxed != card
            out["lowered"] = await call("start_run", card=unsandboxed, task=task, iterations=10)

            start = await call("start_run", card="best_of_n", task=task, iterations=60, seed=7)
            out["start"] = start
            run = start["run"]
            # notes, and a pause that holds the run until the status shows it
            out["steer"] = await call("steer_run", run=run, notes="Try larger steps.", pause=True)

            async def status():
                t0 = time.monotonic()
                r = await call("run_status", run=run)
                out["status_latencies_ms"].append((time.monotonic() - t0) * 1000)
                return r

            out["paused_status"] = await status()
            out["resume"] = await call("steer_run", run=run, resume=True)
            deadline = time.monotonic() + 600
            polls = 0
            while True:
                st = await status()
                polls += 1
                if st.get("error") or st["done"] or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            out["final_status"] = st
            out["polls"] = polls
            out["best"] = await call("get_genome", run=run)
            out["genome_0"] = await call("get_genome", run=run, id=0)
            out["no_genome"] = await call("get_genome", run=run, id=100000)
            out["compare"] = await call("compare_runs", runs=[run])
            out["apply"] = await call("apply_genome", run=run, to=apply_to)
            out["steer_ended"] = await call("steer_run", run=run, notes="too late")
            out["runs"] = await call("list_runs")
            resources = await s.list_resources()
            out["resources"] = [str(r.uri) for r in resources.resources]
            skill = await s.read_resource("galapagos://skill")
            out["skill"] = skill.contents[0].text
            run_uri = "galapagos://run/" + run.lstrip("/")
            summary = await s.read_resource(run_uri)
            out["run_resource"] = json.loads(summary.contents[0].text)
    out["session_secs"] = time.monotonic() - started
    return out


def main():
    if sys.argv[1] == "remote":
        exe, target, apply_to = sys.argv[2:5]
        print(json.dumps(asyncio.run(remote(exe, target, apply_to))))
        return
    exe, broken, apply_to, task = sys.argv[1:5]
    print(json.dumps(asyncio.run(session(exe, broken, apply_to, task))))


if __name__ == "__main__":
    main()
