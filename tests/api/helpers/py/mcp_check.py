"""Drives odqs's MCP endpoint with the official MCP Python SDK (tests/api/mcp.rs).

Usage: mcp_check.py URL TOKEN CALLS_JSON

Connects over streamable HTTP with `Authorization: Bearer TOKEN`, initializes, lists the
tools and calls each `{"name", "arguments"}` of CALLS_JSON in order, then lists the resources
(each dataset's skill.md) and reads each. Prints one JSON object:
the server's info, protocol version and instructions, the tools, and each call's result as the
wire writes it. The Rust test compares them with the REST answers; this script asserts nothing
about odqs itself.
"""

import asyncio
import json
import sys

import httpx2
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client


def wire(model):
    return model.model_dump(by_alias=True, mode="json", exclude_none=True)


async def main(url, token, calls):
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            tools = await client.list_tools()
            results = []
            for call in calls:
                result = await client.call_tool(call["name"], call["arguments"])
                results.append(wire(result))
            resources = await client.list_resources()
            guides = {}
            for resource in resources.resources:
                read = await client.read_resource(resource.uri)
                guides[str(resource.uri)] = wire(read)
            info = client.server_info
            return {
                "resources": [wire(r) for r in resources.resources],
                "guides": guides,
                "server_info": wire(info) if info is not None else None,
                "protocol_version": client.protocol_version,
                "tools": [wire(tool) for tool in tools.tools],
                "results": results,
            }


if __name__ == "__main__":
    url, token, calls_path = sys.argv[1:4]
    with open(calls_path) as f:
        calls = json.load(f)
    print(json.dumps(asyncio.run(main(url, token, calls))))
