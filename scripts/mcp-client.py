#!/usr/bin/env python3
"""A real MCP client (the official Python SDK) against `aea mcp`.

Run by scripts/mcp-e2e in its venv. Starts `AEA mcp` in REPO over stdio,
lists the tools, checks every schema against its JSON Schema metaschema,
calls check and show (the SDK validates structured results against the
output schemas it was given: a result that does not fit raises) and a
call that must fail. Prints one
`PASS name` / `FAIL name (why)` line per check; exits 1 on any FAIL.

Usage: mcp-client.py AEA REPO
"""

import asyncio
import json
import os
import sys

import jsonschema
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

EXPECTED = {"check", "show", "thread", "send", "reply", "process", "status", "sent", "whoami"}
failed = 0


def result(name, ok, why=""):
    global failed
    if ok:
        print(f"mcp-e2e: PASS {name}")
    else:
        failed += 1
        print(f"mcp-e2e: FAIL {name} ({why})")


async def main(aea, repo):
    params = StdioServerParameters(command=aea, args=["mcp"], cwd=repo, env=dict(os.environ))
    async with stdio_client(params) as streams:
        async with ClientSession(*streams) as session:
            init = await session.initialize()
            result("initialize", init.server_info.name == "aea", f"serverInfo {init.server_info}")
            print(f"mcp-e2e: negotiated protocol {init.protocol_version}")

            listed = await session.list_tools()
            names = {t.name for t in listed.tools}
            result("tools/list names", names == EXPECTED, f"got {sorted(names)}")
            result("no approve/reject/review", not names & {"approve", "reject", "review"}, str(names))
            for tool in listed.tools:
                for kind in ("input_schema", "output_schema"):
                    schema = getattr(tool, kind)
                    if schema is None:
                        result(f"{tool.name} {kind}", False, "missing")
                        continue
                    try:
                        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
                        cls.check_schema(schema)
                        result(f"{tool.name} {kind} is a valid JSON Schema", True)
                    except jsonschema.SchemaError as e:
                        result(f"{tool.name} {kind} is a valid JSON Schema", False, e.message)

            check = await session.call_tool("check", {})
            structured = check.structured_content
            result("tools/call check", not check.is_error and structured and structured["unprocessed"] == 1,
                   json.dumps(structured))
            ref = structured["messages"][0]["ref"]

            show = await session.call_tool("show", {"ref": ref})
            structured = show.structured_content
            text = show.content[0].text
            result("tools/call show structured", structured and structured["ref"] == ref, json.dumps(structured))
            result("tools/call show framed as untrusted",
                   "BEGIN UNTRUSTED MESSAGE" in text and "meet at noon" in text, text[:200])

            bad = await session.call_tool("show", {"ref": "--all"})
            structured = bad.structured_content
            result("tools/call show of an unknown ref is an error with aea's exit class",
                   bad.is_error and structured["error"]["code"] == 3, json.dumps(structured))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
    sys.exit(1 if failed else 0)
